"""The local backend's cost: launch overhead, and training throughput inside a job.

**(a) Launch overhead.** A notebook whose job script's first line prints ``time.time()`` is
planned and launched as ``%%tfc_run`` does it (read the notebook, select the cells, parse the
flags, ``make_plan``, ``jobs.launch``), for one replica with ``--strategy none`` and with the
default strategy (``auto``: one device gets no strategy, as in Jupyter, so TensorFlow is not
imported before the user's first line either). The time from the call to that first line is set
against, measured the same way in the same run just before each job, a cold ``python -c pass``,
up to the end of its code (the interpreter's exit is not counted):
the difference is what the product adds (planning, the job folder and record, the supervisor,
the runtime). The time from the script's last line to ``Job.wait()`` returning is shown too.

**(b) Throughput.** A small Keras model on synthetic data run as a local job with default flags
against the very same ``script.py`` (taken from the job folder) run directly with ``python
script.py``, alternately: the script builds ``OneDeviceStrategy("/cpu:0")`` itself in both (the
planner leaves a notebook's own strategy alone: a second one around it is refused). Each process
times ``--steps`` steps three times after a warm-up and keeps its best rate.

Every figure is the best of ``--runs`` runs (the median is shown beside it): on a shared machine
other processes only ever add time, so the best run is the steadiest estimate of the cost itself.
Jobs run under a temporary ``TFC_JUPYTER_HOME``, on loopback only; every job and subprocess has a
deadline (a job past it is cancelled).

    .venv/bin/python benchmarks/bench_local_job.py [--runs 3] [--steps 200]
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

JOB_TIMEOUT_S = 150
PROC_TIMEOUT_S = 150

FIRST_LINE_CELL = textwrap.dedent("""\
    import sys, time
    print("BENCH_FIRST", repr(time.time()), "tensorflow" in sys.modules, flush=True)""")
LAST_LINE_CELL = 'print("BENCH_LAST", repr(time.time()), flush=True)'

TRAIN_CELL = textwrap.dedent("""\
    import os
    import time

    import numpy as np
    import tensorflow as tf

    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")  # the notebook's own, in and out
    print("strategy:", type(strategy).__name__, strategy.extended.worker_devices)
    steps = int(os.environ["BENCH_STEPS"])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8192, 64)).astype("float32")
    y = (x @ rng.normal(size=(64, 1))).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(128)
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(64,)),
            tf.keras.layers.Dense(256, activation="relu"),
            tf.keras.layers.Dense(256, activation="relu"),
            tf.keras.layers.Dense(1),
        ])
        model.compile(optimizer="adam", loss="mse")
    model.fit(data, epochs=1, steps_per_epoch=20, verbose=0)  # warm-up: tracing
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0)
        rates.append(steps / (time.perf_counter() - start))
    print("BENCH_STEPS_PER_S", max(rates), flush=True)""")


def write_notebook(path: Path, *cells: str) -> Path:
    """A notebook of code cells with a python3 kernelspec."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(nb, path)
    return path


def plan_and_launch(path: Path, home: Path, flags: str) -> tuple[float, str]:
    """Plan and launch as ``%%tfc_run`` does, wait (bounded); ``(call time, job folder)``."""
    from tfc_jupyter import config
    from tfc_jupyter.job import options
    from tfc_jupyter.jobs import launch, store_for
    from tfc_jupyter.notebook import capture
    from tfc_jupyter.planner.plan import make_plan

    t0 = time.time()
    nb = capture.read_notebook(path)
    selection = capture.select_cells(nb, path=path, how="benchmark")
    ns = options.parse_line(f"{selection.magic_line} {flags}".strip())
    plan = make_plan(selection, ns, config.load_settings(include_server=False))
    job = launch(plan, store=store_for(home))
    record = job.wait(timeout=JOB_TIMEOUT_S)
    if not record.state.is_terminal():
        job.cancel()
        raise RuntimeError(f"job {job.id} still {record.state.value} after {JOB_TIMEOUT_S} s")
    if record.state.value != "succeeded":
        raise RuntimeError(f"job {job.id} {record.state.value}: {record.error}")
    return t0, record.job_dir


def chief_values(job_dir: str, key: str) -> list[str]:
    """The words after ``key`` on the chief's log line that starts with it."""
    for line in (Path(job_dir) / "logs" / "chief.log").read_text().splitlines():
        if line.startswith(key + " "):
            return line.split()[1:]
    raise RuntimeError(f"no {key} line in {job_dir}/logs/chief.log")


def cold(code: str) -> float:
    """Seconds from starting a fresh ``python -c CODE`` to the end of CODE (exit not counted)."""
    start = time.time()
    proc = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport time\nprint(repr(time.time()))"],
        check=True,
        timeout=PROC_TIMEOUT_S,
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    return float(proc.stdout.split()[-1]) - start


def _best(values: list[float], *, high: bool = False) -> str:
    """``best (median m)`` of seconds (lowest best) or rates (``high``)."""
    best = max(values) if high else min(values)
    unit = "" if high else " s"
    return f"{best:.2f}{unit} (median {statistics.median(values):.2f}{unit})"


def launch_overhead(work: Path, home: Path, runs: int) -> None:
    """Part (a): call -> user's first line, against a cold interpreter / TensorFlow import."""
    nb = write_notebook(work / "first_line.ipynb", FIRST_LINE_CELL, "%%tfc_run\n" + LAST_LINE_CELL)
    baselines = {
        "none": ("python -c pass", "pass"),
        "auto": ("python -c pass", "pass"),  # one device: no strategy, TensorFlow not imported
    }
    jobs: dict[str, list[float]] = {"none": [], "auto": []}
    bases: dict[str, list[float]] = {"none": [], "auto": []}
    ends: dict[str, list[float]] = {"none": [], "auto": []}
    tf_loaded: dict[str, str] = {}
    cold("import tensorflow")  # warm the disk cache once
    for _ in range(runs):
        for strategy, (_, code) in baselines.items():
            bases[strategy].append(cold(code))
            t0, job_dir = plan_and_launch(nb, home, f"--strategy {strategy}")
            first, tf_loaded[strategy] = chief_values(job_dir, "BENCH_FIRST")
            last = float(chief_values(job_dir, "BENCH_LAST")[0])
            ends[strategy].append(time.time() - last)  # Job.wait returned just before
            jobs[strategy].append(float(first) - t0)
    print(f"(a) launch -> user's first line, best of {runs}:")
    for strategy, (label, _) in baselines.items():
        job, base = min(jobs[strategy]), min(bases[strategy])
        print(
            f"  --strategy {strategy}: {_best(jobs[strategy])}, TensorFlow imported before it: "
            f"{tf_loaded[strategy]}; cold {label}: {_best(bases[strategy])}"
        )
        print(
            f"    overhead {job - base:.2f} s, ratio {job / base:.2f}x; "
            f"script's last line -> Job.wait() returns {_best(ends[strategy])}"
        )


def throughput(work: Path, home: Path, runs: int) -> None:
    """Part (b): steps/s of the same script in a local job and run directly, alternately."""
    nb = write_notebook(work / "train.ipynb", "%%tfc_run\n" + TRAIN_CELL)
    _, job_dir = plan_and_launch(nb, home, "")  # also gives the script to run directly
    rates: dict[str, list[float]] = {
        "job": [float(chief_values(job_dir, "BENCH_STEPS_PER_S")[0])],
        "direct": [],
    }
    script = Path(job_dir) / "script.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TFC_")}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # as the local backend sets it for the job
    while len(rates["direct"]) < runs:
        proc = subprocess.run(
            [sys.executable, str(script)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=PROC_TIMEOUT_S,
            check=True,
        )
        found = [x.split()[1] for x in proc.stdout.splitlines() if x.startswith("BENCH_STEPS")]
        rates["direct"].append(float(found[0]))
        if len(rates["job"]) < runs:
            _, job_dir = plan_and_launch(nb, home, "")
            rates["job"].append(float(chief_values(job_dir, "BENCH_STEPS_PER_S")[0]))
    job, direct = max(rates["job"]), max(rates["direct"])
    print(f"(b) OneDeviceStrategy /cpu:0, steps/s, best of {runs}:")
    print(
        f"  local job {_best(rates['job'], high=True)}; python script.py "
        f"{_best(rates['direct'], high=True)}; ratio job/direct {job / direct:.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    """Run both parts under a temporary TFC_JUPYTER_HOME."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (best of)")
    parser.add_argument("--steps", type=int, default=200, help="training steps per timing")
    args = parser.parse_args(argv)
    os.environ["BENCH_STEPS"] = str(args.steps)  # read by the job's script
    with tempfile.TemporaryDirectory(prefix="bench-local-job-") as tmp:
        work, home = Path(tmp) / "work", Path(tmp) / "home"
        work.mkdir()
        os.environ["TFC_JUPYTER_HOME"] = str(home)
        print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, TFC_JUPYTER_HOME={home}")
        launch_overhead(work, home, args.runs)
        throughput(work, home, args.runs)
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
