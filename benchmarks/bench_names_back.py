"""Issue 49: a Keras model's way back into the kernel against ``keras.models.load_model``.

A job folder is filled as a finished job leaves it: the runtime's own writer
(``tfc_runtime.giveback.save_names``, with ``TFC_JOB_DIR`` set as a job has it) saves a run
cell's ``model``, a Keras model of two Dense layers (``--width`` 5980: 71.5 million float32
parameters, a 286 MB ``.keras`` file). Then, in turns, each timed with ``time.perf_counter``:

* ``bring_back``: what the kernel does between the job's end and the next cell
  (``tfc_jupyter.returns.returned.bring_back``: the manifest, the border's private copy of the
  file, its zip check, Keras' safe-mode load of the copy), into a fresh namespace;
* ``load_model``: ``keras.models.load_model`` of the same file in the job folder, safe mode.

Both read a file the page cache holds (a warm-up round of each is discarded), so this is the
cost of the work, not of the disk. Each figure is the best of ``--runs`` (default 7; the median
beside it), the ratio best against best (issue 49's goal: at most 1.2x), in wall-clock time and
in the process's CPU time (all its threads, the kernel's work for it too: the steadier figure on
a busy machine), and the median of each round's ratio (the two taken one after the other, under
about the same load). The machine's load average is printed with them.

    .venv/bin/python benchmarks/bench_names_back.py [--runs 5] [--width 5980]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "runtime")]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
GOAL = 1.2


def write_job(job_dir: Path, width: int) -> Path:
    """Fill ``job_dir`` as a finished job's run cell ``model = ...`` leaves it; the model's file."""
    import keras
    from tfc_runtime import giveback

    model = keras.Sequential(
        [keras.Input((width,)), keras.layers.Dense(width), keras.layers.Dense(width)]
    )
    state = SimpleNamespace(
        run_cell=0, binds=("model",), reads=(), code=(), chief=True, out=None,
        started=time.time(), workdir="",
    )  # fmt: skip
    os.environ["TFC_JOB_DIR"] = str(job_dir)
    try:
        manifest = giveback.save_names(state, {"model": model})  # type: ignore[arg-type]
    finally:
        del os.environ["TFC_JOB_DIR"]
    assert manifest is not None and "model" in manifest.names, manifest
    return job_dir / giveback.CELL / manifest.names["model"]["file"]


def time_bring_back(job_dir: Path) -> tuple[float, float]:
    """Seconds (wall, CPU) for ``bring_back`` to set ``model`` in a fresh namespace."""
    from tfc_jupyter.returns.border import KernelCell
    from tfc_jupyter.returns.returned import bring_back

    cell = KernelCell.from_source("model = build()")
    namespace: dict[str, Any] = {}
    start, cpu = time.perf_counter(), time.process_time()
    got = bring_back(job_dir, namespace, kernel_cell=cell)
    seconds = time.perf_counter() - start, time.process_time() - cpu
    assert got.names == ["model"], got.line() or got.problems
    return seconds


def time_load_model(path: Path) -> tuple[float, float]:
    """Seconds (wall, CPU) for ``keras.models.load_model`` of ``path`` (safe mode)."""
    import keras

    start, cpu = time.perf_counter(), time.process_time()
    keras.models.load_model(str(path), safe_mode=True)
    return time.perf_counter() - start, time.process_time() - cpu


def best(values: list[float]) -> str:
    return f"{min(values):.3f} s (median {statistics.median(values):.3f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--width", type=int, default=5980)
    args = parser.parse_args(argv)
    import keras  # noqa: F401  (imported before any timing)

    with tempfile.TemporaryDirectory(prefix="tfc-bench-names-") as tmp:
        job_dir = Path(tmp) / "jobs" / "bench-names"
        job_dir.mkdir(parents=True)
        path = write_job(job_dir, args.width)
        size = path.stat().st_size
        print(f"{os.cpu_count()} cores; {path.name}: {size / 1e6:.0f} MB", flush=True)
        time_bring_back(job_dir), time_load_model(path)  # warm-up, discarded
        ours: list[tuple[float, float]] = []
        theirs: list[tuple[float, float]] = []
        for _ in range(args.runs):
            ours.append(time_bring_back(job_dir))
            theirs.append(time_load_model(path))
        for i, what in ((0, "wall"), (1, "CPU")):
            print(f"{what}: bring_back (job folder -> the kernel's model): "
                  f"{best([t[i] for t in ours])}")  # fmt: skip
            print(f"{what}: keras.models.load_model (same file):          "
                  f"{best([t[i] for t in theirs])}")  # fmt: skip
        ratio = min(t[0] for t in ours) / min(t[0] for t in theirs)
        cpu = min(t[1] for t in ours) / min(t[1] for t in theirs)
        paired = statistics.median(a[0] / b[0] for a, b in zip(ours, theirs, strict=True))
        met = "met" if ratio <= GOAL else "NOT met"
        print(f"ratio {ratio:.2f}x wall (goal <= {GOAL}x: {met}), {cpu:.2f}x CPU, "
              f"{paired:.2f}x the median of each round's pair; "
              f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
