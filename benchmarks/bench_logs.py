"""Log latency: from a replica's ``print`` to the line showing in the notebook.

A local job (``--strategy none``, one replica) prints ``--lines`` lines, each carrying the
``time.time()`` of its print: first one line every 37 ms (a training loop's pace, never in step
with any poll), then a burst of as many lines at once. The time each line arrives is taken

* through ``Job.follow(on_line=...)`` (what the panel and ``%tfc_attach`` use), and
* through the magic: ``%%tfc_run`` in an IPython shell, which streams the job into the cell's
  output (``sys.stdout``, time-stamped here as each ``[chief] ...`` line is written);

and, side by side in the same run, through the floor any streaming has: the very same
``script.py`` (from the job folder) run with ``python script.py`` as a child process whose
stdout is a pipe the parent reads line by line.

Latency = arrival - print, per line; median, 95th percentile and maximum over every line of
``--runs`` runs of each. Jobs run under a temporary ``TFC_JUPYTER_HOME``; every job and child has
a deadline.

    .venv/bin/python benchmarks/bench_logs.py [--runs 3] [--lines 60]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import nbformat

JOB_TIMEOUT_S = 120
MARK = "BENCH_LINE"

CELL = textwrap.dedent(f"""\
    import os, time
    n = int(os.environ["BENCH_LINES"])
    for i in range(n):  # a training loop's pace
        print("{MARK}", i, repr(time.time()), flush=True)
        time.sleep(0.037)
    for i in range(n, 2 * n):  # a burst
        print("{MARK}", i, repr(time.time()), flush=True)""")


def write_notebook(path: Path, source: str) -> Path:
    """A one-cell notebook with a python3 kernelspec."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(source)]
    nbformat.write(nb, path)
    return path


def _latency(line: str, arrived: float) -> float | None:
    """Seconds from the print stamped on ``line`` to ``arrived``."""
    words = line.split()
    if MARK not in words:
        return None
    at = words.index(MARK)
    return arrived - float(words[at + 2])


def via_follow(nb: Path, home: Path) -> tuple[list[float], str]:
    """Plan and launch as the magic does, then ``Job.follow``; ``(latencies, job folder)``."""
    from tfc_jupyter import config
    from tfc_jupyter.job import options
    from tfc_jupyter.jobs import launch, store_for
    from tfc_jupyter.notebook import capture
    from tfc_jupyter.planner.plan import make_plan

    selection = capture.select_cells(capture.read_notebook(nb), path=nb, how="benchmark")
    settings = config.load_settings(include_server=False)
    plan = make_plan(selection, options.parse_line(selection.magic_line), settings)
    job = launch(plan, store=store_for(home))
    out: list[float] = []

    def on_line(replica: str, line: str) -> None:
        value = _latency(line, time.time())
        if value is not None:
            out.append(value)

    record = job.follow(on_line=on_line, timeout=JOB_TIMEOUT_S)
    if record.state.value != "succeeded":
        if not record.state.is_terminal():
            job.cancel()
        raise RuntimeError(f"job {job.id} {record.state.value}: {record.error}")
    return out, record.job_dir


class _Stamped(io.TextIOBase):
    """A stdout that notes when each line is written."""

    def __init__(self) -> None:
        self.out: list[float] = []
        self._buffer = ""

    def write(self, text: str) -> int:
        now = time.time()
        self._buffer += text
        *lines, self._buffer = self._buffer.split("\n")
        for line in lines:
            value = _latency(line, now)
            if value is not None:
                self.out.append(value)
        return len(text)


def via_magic(ip: Any, nb: Path) -> list[float]:
    """``%%tfc_run`` in the shell: the cell's streamed output, time-stamped."""
    stamped = _Stamped()
    body = CELL
    saved = sys.stdout
    sys.stdout = stamped  # type: ignore[assignment]
    try:
        ip.run_cell_magic("tfc_run", f"--notebook {nb} --strategy none", body)
    finally:
        sys.stdout = saved
    return stamped.out


def via_pipe(script: Path, cwd: Path) -> list[float]:
    """The same script as a child process; the parent reads its stdout pipe line by line."""
    out: list[float] = []
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + JOB_TIMEOUT_S
    for line in proc.stdout:
        value = _latency(line, time.time())
        if value is not None:
            out.append(value)
        if time.monotonic() > deadline:
            proc.kill()
            break
    proc.wait(timeout=30)
    return out


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"median {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, "
        f"max {ordered[-1] * 1000:.1f} ms ({len(ordered)} lines)"
    )


def main(argv: list[str] | None = None) -> int:
    """Measure the three paths, alternately, and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each path")
    parser.add_argument("--lines", type=int, default=60, help="paced lines (as many in a burst)")
    args = parser.parse_args(argv)
    os.environ["BENCH_LINES"] = str(args.lines)
    from IPython.core.interactiveshell import InteractiveShell

    from tfc_jupyter.jobs import LOG_POLL_S, POLL_S, QUICK_POLL_S, QUICK_S, SHORT_S

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tfc_jupyter")
    results: dict[str, list[float]] = {"follow": [], "magic": [], "pipe": []}
    with tempfile.TemporaryDirectory(prefix="bench-logs-") as tmp:
        work, home = Path(tmp) / "work", Path(tmp) / "home"
        work.mkdir()
        os.environ["TFC_JUPYTER_HOME"] = str(home)
        nb = write_notebook(work / "logs.ipynb", "%%tfc_run --strategy none\n" + CELL)
        print(
            f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; Job.follow reads the "
            f"logs every {QUICK_POLL_S} s for {QUICK_S:g} s, then every {LOG_POLL_S} s; the "
            f"job's record every {LOG_POLL_S} s until {SHORT_S:g} s and every {POLL_S} s after, "
            "and at once when the job's watcher exits"
        )
        for _ in range(args.runs):
            values, job_dir = via_follow(nb, home)
            results["follow"] += values
            results["magic"] += via_magic(ip, nb)
            results["pipe"] += via_pipe(Path(job_dir) / "script.py", work)
    expected = 2 * args.lines * args.runs
    for name, values in results.items():
        if len(values) != expected:
            raise RuntimeError(f"{name}: {len(values)} lines arrived, {expected} printed")
    floor = statistics.median(results["pipe"])
    print(f"print -> line, over {args.runs} runs of {2 * args.lines} lines each:")
    print(f"  Job.follow:              {_ms(results['follow'])}")
    print(f"  %%tfc_run (cell output): {_ms(results['magic'])}")
    print(f"  python script.py | pipe: {_ms(results['pipe'])}")
    for name in ("follow", "magic"):
        median = statistics.median(results[name])
        extra = (median - floor) * 1000
        print(f"  ratio {name}/pipe (medians): {median / floor:.0f}x, +{extra:.0f} ms")
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
