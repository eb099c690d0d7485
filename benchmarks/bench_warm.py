"""The warm runtime's worth, side by side in one run (issue 48).

**(a) A small notebook as a job.** Data, a small Keras model and a 3-epoch fit, as a local job
launched the way ``%%tfc_run`` launches it, from a process that keeps a warm runtime (as a
kernel does once its notebook has imported TensorFlow), wall time from the launch to
``Job.wait()`` returning; against the very same cells run in a process that has already imported
TensorFlow (the kernel's own time). The same job with the warm runtime turned off
(``TFC_WARM_IDLE=0``) is shown too. Target: job <= 1.5 x the cells + 0.5 s.

**(b) A 4-trial local sweep at --parallel 1**, run by ``trials.run_sweep`` as the magic runs it
(Optuna, each trial a job) from a process whose warm runtime is ready (a kernel that imported
TensorFlow), against the same four trials' code run in a loop in a process that has imported
TensorFlow (the kernel itself); neither figure includes TensorFlow's import. Trials per hour, and
their ratio. Target: the sweep >= 90% of the loop. The same sweep launched with no warm runtime
ready (it starts one, and the first trial waits for its import) is shown too, and so is the floor
of any sweep that gives each trial a process of its own: the four trials in four bare forks of a
process that imported TensorFlow, each forked while the one before it runs (``FORKS``).

Each figure is the best of ``--runs`` (the median beside it). Jobs run under a temporary
``TFC_JUPYTER_HOME``; every job has a deadline.

    .venv/bin/python benchmarks/bench_warm.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import nbformat

JOB_TIMEOUT_S = 180

CELLS = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    x = np.random.normal(size=(2048, 8)).astype("float32")
    y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
    model = tf.keras.Sequential([
        tf.keras.Input((8,)),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, epochs=3, batch_size=64, verbose=0)
    print("loss", history.history["loss"][-1])
""")
LR = [1e-3, 3e-3, 1e-2, 3e-2]

IN_PROCESS = textwrap.dedent("""\
    import sys, time
    import tensorflow as tf
    cells = sys.stdin.read()
    times = []
    for _ in range(int(sys.argv[1])):
        start = time.perf_counter()
        exec(compile(cells, "cells", "exec"), {})
        times.append(time.perf_counter() - start)
    print("TIMES", *times)
""")

LOOP = textwrap.dedent("""\
    import sys, time
    import tensorflow as tf
    cells = sys.stdin.read()
    start = time.perf_counter()
    for lr in [1e-3, 3e-3, 1e-2, 3e-2]:
        exec(compile(cells.replace("LR_VALUE", repr(lr)), "cells", "exec"), {})
    print("WALL", time.perf_counter() - start)
""")

# The floor of any sweep that gives each trial a process of its own: the same four trials, each in
# a fork of a process that imported TensorFlow (as the warm runtime is), its value handed through a
# pipe to a fork made while the trial before it ran; no files, records or reports at all.
FORKS = textwrap.dedent("""\
    import gc, os, sys, time
    import tensorflow as tf
    cells = sys.stdin.read()
    gc.freeze()  # as the warm runtime does: forks share these pages, collections leave them

    def fork():
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(write)
            lr = os.read(read, 64).decode()
            exec(compile(cells.replace("LR_VALUE", lr), "cells", "exec"), {})
            os._exit(0)
        os.close(read)
        return pid, write

    start = time.perf_counter()
    waiting = fork()
    for lr in [1e-3, 3e-3, 1e-2, 3e-2]:
        pid, write = waiting
        os.write(write, repr(lr).encode())
        os.close(write)
        waiting = fork() if lr != 3e-2 else None
        if os.waitpid(pid, 0)[1]:
            raise SystemExit("a trial failed")
    print("WALL", time.perf_counter() - start)
""")


def trial_cells() -> str:
    """The small notebook with its learning rate as a swept name."""
    return CELLS.replace('model.compile("adam"', "model.compile(tf.keras.optimizers.Adam(lr)")


def _notebook(path: Path, magic: str, cells: str, head: str = "") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    if head:
        nb.cells.append(nbformat.v4.new_code_cell(head))
    nb.cells.append(nbformat.v4.new_code_cell(f"{magic}\n{cells}"))
    nbformat.write(nb, path)
    return path


def in_process(cells: str, runs: int) -> list[float]:
    """The cells' time in a process that imported TensorFlow first (as a kernel has)."""
    out = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(runs)],
        input=cells,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT_S * 2,
        check=True,
    ).stdout
    line = next(line for line in out.splitlines() if line.startswith("TIMES"))
    return [float(t) for t in line.split()[1:]]


def loop_wall(cells: str, script: str = LOOP) -> float:
    """Four trials' code in a loop in one process that has imported TensorFlow (a kernel); with
    ``FORKS``, each trial in a fork of such a process."""
    out = subprocess.run(
        [sys.executable, "-c", script],
        input=cells,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT_S * 2,
        check=True,
    ).stdout
    return float(next(line for line in out.splitlines() if line.startswith("WALL")).split()[1])


def job_wall(client: object, notebook: Path) -> float:
    """Launch to ``Job.wait()`` returning, as ``%%tfc_run`` launches (plan, then submit)."""
    start = time.perf_counter()
    job = client.submit(client.plan_notebook(notebook))  # type: ignore[attr-defined]
    record = job.wait(timeout=JOB_TIMEOUT_S)
    took = time.perf_counter() - start
    if record.state.value != "succeeded":
        raise SystemExit(f"the job {job.id} ended {record.state.value}: {record.error}")
    return took


def sweep_wall(client: object, notebook: Path) -> float:
    """A 4-trial sweep at --parallel 1, from the launch to its last trial's end."""
    start = time.perf_counter()
    from tfc_jupyter.trials.trials import run_sweep

    plan = client.plan_notebook(notebook)  # type: ignore[attr-defined]
    sweep = run_sweep(client, plan)  # type: ignore[arg-type]
    took = time.perf_counter() - start
    done = [t for t in sweep.trials if t.state == "succeeded"]
    if len(done) != 4:
        raise SystemExit(f"the sweep ran {len(done)} trials to their end, not 4")
    return took


def best(values: list[float]) -> str:
    return f"{min(values):.2f} s (median {statistics.median(values):.2f})"


def main(argv: list[str] | None = None) -> int:
    """Run both comparisons and print the table with the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tfc-bench-warm-") as tmp:
        folder = Path(tmp)
        os.environ["TFC_JUPYTER_HOME"] = str(folder / "home")
        os.environ["TFC_WARM_IDLE"] = "600"
        from tfc_jupyter.backends.local.backend import keep_warm
        from tfc_jupyter.client import Client

        client = Client()
        job_nb = _notebook(folder / "small.ipynb", "%%tfc_run", CELLS)

        def sweep_nb(number: int) -> Path:  # a sweep of its own each time (not one resumed)
            return _notebook(
                folder / f"sweep{number}.ipynb",
                '%%tfc_run --sweep "lr=[0.001,0.003,0.01,0.03]" --trials 4 --parallel 1 '
                "--metric loss --goal min",
                trial_cells(),
                head="lr = 1e-3",
            )

        print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
        cells = in_process(CELLS, args.runs)
        keep_warm(Path(os.environ["TFC_JUPYTER_HOME"]))  # as a kernel that imported TensorFlow
        job_wall(client, job_nb)  # the warm runtime's first job (waits for its import)
        warm_jobs = [job_wall(client, job_nb) for _ in range(args.runs)]
        os.environ["TFC_WARM_IDLE"] = "0"
        cold_jobs = [job_wall(client, job_nb) for _ in range(max(1, args.runs - 1))]
        os.environ["TFC_WARM_IDLE"] = "600"
        looped = trial_cells().replace("Adam(lr)", "Adam(LR_VALUE)")
        loops = [loop_wall(looped) for _ in range(args.runs)]
        forks = [loop_wall(looped, FORKS) for _ in range(args.runs)]
        sweeps = [sweep_wall(client, sweep_nb(i)) for i in range(args.runs)]
        from tfc_jupyter.backends.local import warm

        warm.discard()
        first_sweeps = [sweep_wall(client, sweep_nb(args.runs))]
    target = 1.5 * min(cells) + 0.5
    print("\n| figure | value | target |\n|---|---|---|")
    print(f"| the cells in a process that imported TensorFlow | {best(cells)} | |")
    print(f"| the same cells as a local job, warm | {best(warm_jobs)} | <= {target:.2f} s |")
    print(f"| the same job, warm runtime off | {best(cold_jobs)} | |")
    ratio = min(warm_jobs) / min(cells)
    print(f"| job / cells | {ratio:.2f}x (cold: {min(cold_jobs) / min(cells):.2f}x) | |")
    loop_rate, sweep_rate = 4 * 3600 / min(loops), 4 * 3600 / min(sweeps)
    print(f"| 4 trials in a loop, one process | {best(loops)}, {loop_rate:.0f} trials/h | |")
    print(f"| 4-trial local sweep, --parallel 1 | {best(sweeps)}, {sweep_rate:.0f} trials/h | |")
    print(f"| the same sweep, no warm runtime ready at its start | {best(first_sweeps)} | |")
    floor = min(loops) / min(forks)
    print(f"| floor of a process per trial: 4 bare forks | {best(forks)}, {floor:.0%} of loop | |")
    share = sweep_rate / loop_rate
    print(f"| sweep / loop, trials per hour | {share:.0%} | >= 90% |")
    ok = min(warm_jobs) <= target and share >= 0.9
    print("\nwarm runtime targets:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
