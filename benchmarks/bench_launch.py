"""Launch at the speed of Python (issue 27): each "Done when" figure next to its floor, whole
processes, side by side in one run (each round runs every command once, in turn).

* ``tfc-jupyter run`` of a one-line notebook (``print("FIRST")``, local backend): wall time of
  the whole command, and when its ``[chief] FIRST`` line came; floor: ``python -c 'print(1)'``.
* a one-cell TensorFlow job (``import tensorflow as tf; print(...)``), with default flags and
  with ``--workers 1``: wall time; floor: ``python -c 'import tensorflow'`` (both whole
  processes). Beside it, when the job's line came against when the same cell prints it under
  ``python -c``: how long the job takes to start, apart from how fast it ends (a job's replica
  exits faster than a plain ``python`` with TensorFlow: ``tfc_runtime`` freezes TensorFlow's
  objects out of the garbage collector's last passes).
* the first ``%%tfc_run`` in a fresh kernel: a real IPython kernel started with
  jupyter_client, as JupyterLab starts one, and ``%load_ext tfc_jupyter`` run in it (not
  timed); then the clock runs from the client's execute request to the moment the "Launched"
  line reaches the client on the kernel's iopub channel (what a notebook's user sees). The
  notebook is found as the kernel of a Jupyter server finds it (``JPY_SESSION_NAME``), so it is
  read from disk as in Jupyter. Beside it, the same in a fresh process with IPython's
  ``InteractiveShell`` (no kernel, no messaging), from the cell's start to "Launched".
* ``tfc-jupyter plan`` of the package route (``--backend vertex --route package``: a wheel on a
  prebuilt image, no Docker; no network: the plan only names the upload).

The commands run with bytecode caches, as an installed package has them: ``PYTHONDONTWRITEBYTECODE``
is dropped from the children's environment and one warm-up round writes the caches.
``--no-bytecode`` measures a worst case instead: no cache at all, the standard library's
included (``PYTHONPYCACHEPREFIX`` an empty folder: every process compiles all it imports).
Every child has a deadline (``--deadline``). Figures are medians of ``--runs`` rounds.

    .venv/bin/python benchmarks/bench_launch.py [--runs 7] [--no-tf] [--no-bytecode]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
CLI = str(Path(PYTHON).with_name("tfc-jupyter"))

TF_LINE = "import tensorflow as tf; print('FIRST', tf.__version__)"  # the job's cell, python -c

MAGIC_CHILD = r"""
import io, json, sys, time
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "tfc_jupyter")
marks = {}

class Clock(io.TextIOBase):
    def write(self, text):
        now = time.perf_counter()
        for key in ("Launched", "FIRST"):
            if key in text and key not in marks:
                marks[key] = now
        return sys.__stdout__.write(text)

    def flush(self):
        sys.__stdout__.flush()

cell = open(sys.argv[1], encoding="utf-8").read()
sys.stdout = Clock()
started = time.perf_counter()
shell.run_cell(cell)
ended = time.perf_counter()
sys.stdout = sys.__stdout__
print(json.dumps({k: v - started for k, v in marks.items()} | {"cell": ended - started}))
"""


def kernel_launched(cell: str, env: dict[str, str], deadline: float) -> tuple[float, float]:
    """Seconds from the execute request of ``cell`` in a fresh kernel to the "Launched" line on
    iopub, and to the job's ``FIRST`` line; the kernel (``%load_ext tfc_jupyter`` run first, not
    timed) is shut down after. SystemExit past ``deadline`` or on an error in the cell."""
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}  # its start-up chatter
    manager.start_kernel(env=env, cwd=env["BENCH_DIR"], **quiet)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=deadline)

        def run(code: str, marks: dict[str, float] | None) -> None:
            msg_id = client.execute(code)
            started = time.perf_counter()
            end = started + deadline
            while True:
                left = end - time.perf_counter()
                if left <= 0:
                    raise SystemExit(f"the kernel did not finish {code!r} in {deadline} s")
                msg = client.get_iopub_msg(timeout=left)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "error":
                    raise SystemExit(f"{code!r} failed in the kernel: {content['evalue']}")
                if kind == "stream" and marks is not None:
                    now = time.perf_counter() - started
                    for key in ("Launched", "FIRST"):
                        if key in content["text"]:
                            marks.setdefault(key, now)
                if kind == "status" and content["execution_state"] == "idle":
                    return

        run("%load_ext tfc_jupyter", None)
        marks: dict[str, float] = {}
        run(cell, marks)
        if "Launched" not in marks:
            raise SystemExit("%%tfc_run in the kernel printed no 'Launched'")
        return marks["Launched"], marks.get("FIRST", float("nan"))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _notebook(path: Path, source: str) -> Path:
    """A one-cell v4 notebook with ``source``, as Jupyter saves it."""
    cell: dict[str, object] = {
        "cell_type": "code",
        "execution_count": None,
        "id": "c1",
        "metadata": {},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }
    meta = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    nb = {"cells": [cell], "metadata": meta, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return path


def timed(
    argv: list[str], env: dict[str, str], deadline: float, marker: str | None = None
) -> tuple[float, float | None, str]:
    """``(wall seconds, seconds to the first line holding marker, output)`` of one process
    (stdout and stderr together); killed, and a SystemExit, past ``deadline`` seconds."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=env["BENCH_DIR"],
    )
    timer = threading.Timer(deadline, proc.kill)
    timer.start()
    first, lines = None, []
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.decode(errors="replace")
        lines.append(line)
        if first is None and marker is not None and marker in line:
            first = time.perf_counter() - started
    code = proc.wait()
    wall = time.perf_counter() - started
    timer.cancel()
    text = "".join(lines)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited with {code} after {wall:.1f} s:\n{text[-2000:]}")
    return wall, first, text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="rounds (median of these)")
    parser.add_argument("--no-tf", action="store_true", help="leave out the TensorFlow jobs")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="no bytecode caches at all (worst case)"
    )
    parser.add_argument("--deadline", type=float, default=120.0, help="seconds per process")
    args = parser.parse_args(argv)

    sys.path[:0] = [str(ROOT), str(ROOT / "runtime")]
    from tfc_jupyter.image.names import local_tensorflow_version

    tf_version = local_tensorflow_version()
    if tf_version is None and not args.no_tf:
        print("TensorFlow is not installed here: the TensorFlow jobs are left out")
        args.no_tf = True
    minor = ".".join((tf_version or "2.17").split(".")[:2])
    executor = f"us-docker.pkg.dev/vertex-ai/training/tf-cpu.{minor.replace('.', '-')}.py311:latest"
    tmp = Path(tempfile.mkdtemp(prefix="bench-launch-"))
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TFC_", "JPY_"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if args.no_bytecode:
            (tmp / "pycache").mkdir()
            env |= {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp / "pycache")}
        env |= {
            "BENCH_DIR": str(tmp),
            "TFC_JUPYTER_HOME": str(tmp / "home"),
            "TFC_PREBUILT_IMAGES": f"{minor}={executor}",
            "TF_CPP_MIN_LOG_LEVEL": "2",
        }
        notf = _notebook(tmp / "notf.ipynb", 'print("FIRST")')
        first = _notebook(
            tmp / "first.ipynb", 'import tensorflow as tf\nprint("FIRST", tf.__version__)'
        )
        magic = _notebook(tmp / "magic.ipynb", '%%tfc_run\nprint("FIRST")')
        cell = tmp / "cell.txt"
        cell.write_text('%%tfc_run\nprint("FIRST")', encoding="utf-8")
        magic_env = {**env, "JPY_SESSION_NAME": str(magic)}
        package = ["--backend", "vertex", "--route", "package", "--project", "bench-proj"]
        package += ["--build-bucket", "bench-bucket"]

        Figure = tuple[str, Callable[[], float]]
        results: dict[str, list[float]] = {}
        firsts: dict[str, list[float]] = {}
        dl = args.deadline

        def whole(name: str, argv: list[str], marker: str | None = None) -> Figure:
            def run() -> float:
                wall, at, _ = timed(argv, env, dl, marker)
                if marker is not None:
                    if at is None:
                        raise SystemExit(f"{name}: no line with {marker!r}")
                    firsts.setdefault(name, []).append(at)
                return wall

            return name, run

        def magic_launched() -> float:
            _, _, out = timed([PYTHON, "-c", MAGIC_CHILD, str(cell)], magic_env, dl)
            marks = json.loads(out.strip().splitlines()[-1])
            if "Launched" not in marks:
                raise SystemExit(f"%%tfc_run printed no 'Launched':\n{out[-2000:]}")
            firsts.setdefault("magic", []).append(marks.get("FIRST", float("nan")))
            return float(marks["Launched"])

        def magic_kernel() -> float:
            launched, first_line = kernel_launched(cell.read_text(encoding="utf-8"), magic_env, dl)
            firsts.setdefault("magic_kernel", []).append(first_line)
            return launched

        figures: list[Figure] = [
            whole("print", [PYTHON, "-c", "print(1)"]),
            whole("run", [CLI, "run", str(notf)], "[chief] FIRST"),
            ("magic", magic_kernel),
            ("magic_shell", magic_launched),
            whole("plan", [CLI, "plan", str(notf), *package]),
            whole("plan_local", [CLI, "plan", str(notf)]),
        ]
        if not args.no_tf:
            figures += [
                whole("import_tf", [PYTHON, "-c", "import tensorflow"]),
                whole("import_tf_line", [PYTHON, "-c", TF_LINE], "FIRST"),
                whole("tf_run", [CLI, "run", str(first)], "[chief] FIRST"),
                whole("tf_workers", [CLI, "run", str(first), "--workers", "1"], "] FIRST"),
            ]
        for _, run in figures:  # warm-up: bytecode caches, the job store, the OS's file cache
            run()
        results.clear()
        firsts.clear()
        load_before = os.getloadavg()
        for _ in range(args.runs):
            for name, run in figures:
                results.setdefault(name, []).append(run())
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(name: str, table: dict[str, list[float]] | None = None) -> float:
        return statistics.median((table or results)[name])

    caches = "no bytecode caches" if args.no_bytecode else "bytecode cached"
    print(
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}; {os.cpu_count()} cores; Python "
        f"{sys.version.split()[0]}; TensorFlow {tf_version or 'none'}; {caches}; median of "
        f"{args.runs} rounds; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    print("| figure | measured (median; min-max) | floor, same run | target | met |")
    print("|---|---|---|---|---|")
    notes: list[str] = []

    def row(key: str, figure: str, value: str, floor: str, target: str, good: bool) -> None:
        verdict = "yes" if good else "NO"
        print(f"| {figure} | {value} | {floor} | {target} | {verdict} |")
        notes.append(f"  {key}: {figure}: {value.split(' (')[0]}; {target}: {verdict}")

    def spread(name: str) -> str:
        values = results[name]
        return f"{min(values):.3f}-{max(values):.3f}"

    run_s = med("run")
    row(
        "run",
        "`tfc-jupyter run` one-line notebook, wall",
        f"{run_s:.3f} s ({spread('run')}; its line at {med('run', firsts):.3f} s)",
        f"`python -c 'print(1)'` {med('print'):.3f} s",
        "<= 0.3 s",
        run_s <= 0.3,
    )
    if not args.no_tf:
        floor = med("import_tf")
        for key, words, target in (("tf_run", "", 1.1), ("tf_workers", " --workers 1", 1.3)):
            value = med(key)
            row(
                key,
                f"`tfc-jupyter run` one-cell TensorFlow job{words}, wall",
                f"{value:.3f} s = {value / floor:.2f} x ({spread(key)}; its line at "
                f"{med(key, firsts):.3f} s)",
                f"`python -c 'import tensorflow'` {floor:.3f} s; the cell's line under "
                f"`python -c` at {med('import_tf_line', firsts):.3f} s",
                f"<= {target} x",
                value <= target * floor,
            )
    launched = med("magic")
    row(
        "magic",
        'first `%%tfc_run` in a fresh kernel: execute request -> "Launched" at the client',
        f"{launched:.3f} s ({spread('magic')}; the job's line at {med('magic', firsts):.3f} s)",
        f'fresh `InteractiveShell`, cell start -> "Launched": {med("magic_shell"):.3f} s',
        "<= 0.3 s",
        launched <= 0.3,
    )
    plan_s = med("plan")
    row(
        "plan",
        "`tfc-jupyter plan --backend vertex --route package` (no Docker), wall",
        f"{plan_s:.3f} s ({spread('plan')})",
        f"local plan {med('plan_local'):.3f} s",
        "<= 0.5 s",
        plan_s <= 0.5,
    )
    print("closing note, issue 27's figures:")
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
