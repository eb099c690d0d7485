"""How a job ended, in one line, from its record and what it reported: the cell's last line,
``Job.summary_line``, and the message ``--notify`` sends (:mod:`tfc_jupyter.returns.notify`).

It reads records and results only (no backend), so the processes that record a job's end can
say it.
"""

from __future__ import annotations

from pathlib import Path

from .. import registry
from ..store import logs
from ..store.records import JobRecord, JobState
from .results import Results, confined, job_results


def report_roots(record: JobRecord) -> list[str]:
    """The job's own folders, the only places a path in its reports may lead the kernel, the
    CLI or the jobs API to: its job folder, the notebook's folder for a backend whose replicas
    are processes here (they run and write there), and its ``--base-output-dir``."""
    traits = registry.traits(record.backend)
    roots = [record.job_dir] if record.job_dir else []
    if traits.on_this_machine and not traits.runs_image and record.notebook:
        roots.append(str(Path(record.notebook).parent))
    base = (record.spec or {}).get("base_output_dir")
    if isinstance(base, str) and base:
        roots.append(base)
    return roots


def results_of(record: JobRecord) -> Results:
    """What the job reported so far, read where its backend's runtime writes reports; a saved
    model or TensorBoard folder it names outside its own folders (:func:`report_roots`) is
    refused here, on every backend (:func:`tfc_jupyter.returns.results.confined`)."""
    in_logs = registry.traits(record.backend).reports_in_logs
    found = job_results(record.log_dir or "", in_logs=in_logs, key=record.report_key)
    return confined(found, report_roots(record))


def restart_count(record: JobRecord) -> int:
    """How many times the job's replicas were restarted after one died (0 when none were, or
    when its backend does not say)."""
    value = record.handle.get("restarts", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _times(count: int) -> str:
    return "once" if count == 1 else "twice" if count == 2 else f"{count} times"


def summary_line(rec: JobRecord) -> str:
    """``<id>: succeeded in 12.3 s`` or the failure with its notebook cell; a metric that
    became NaN or infinite is said (``; loss is NaN from epoch 3``)."""
    text = f"{rec.id}: {rec.state.value} after {rec.elapsed:.1f} s"
    if rec.error and rec.state is not JobState.SUCCEEDED and rec.error != "cancelled":
        text += f": {logs.printable(rec.error)}"  # a cancel you asked for says no more
    restarts = restart_count(rec)
    if restarts:
        text += f" (restarted {_times(restarts)})"
    flags = results_of(rec).flags if rec.log_dir else []
    if flags:
        text += f"; {', '.join(flags)}"
    return text
