"""A sweep its backend runs as one job of its own: Vertex AI's HyperparameterTuningJob.

The plan launches as one job (its trials are the service's: Vizier chooses their values and
runs each as a custom job); the job's watcher keeps the trials as Vertex AI reports them in the
job folder (``trials.json``), and :func:`follow_tuning` turns them into the :class:`Sweep` the
cell, the CLI and ``run()`` show, as trials on this machine are. The sweep's folder remembers the
job, so running the same cell again follows it instead of launching a second one.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfc_runtime.params import Value

from ..errors import TfcError
from ..registry import TRIALS_FILE
from ..store.records import JobState
from ..sweep.spec import Param, SweepSpec, sweep_spec
from .trial_table import Sweep, Trial

if TYPE_CHECKING:
    from ..client import Client, Job
    from ..planner.plan import Plan

JOB_FILE = "tuning_job.json"
"""In the sweep's folder: the job that runs it."""
_STATES = {"REQUESTED": "running", "ACTIVE": "running", "STOPPING": "running",
           "SUCCEEDED": "succeeded", "INFEASIBLE": "failed"}  # fmt: skip
"""Vertex AI's trial states in the sweep table's words."""


def _value(param: Param | None, raw: Any) -> Value:
    """A trial's value as Vertex AI reports it (a number or text), read as the sweep wrote it:
    ``64.0`` of an int range is 64, ``"relu"`` of a list is the list's item."""
    if param is None:
        return raw if isinstance(raw, (int, float, str, bool)) else str(raw)
    if param.kind == "int" and isinstance(raw, (int, float)):
        return int(raw)
    if param.kind == "choice":
        for choice in param.choices:
            if str(choice) == str(raw):
                return choice
            numeric = isinstance(choice, (int, float)) and not isinstance(choice, bool)
            if numeric and isinstance(raw, (int, float)) and float(choice) == float(raw):
                return choice
    return float(raw) if isinstance(raw, (int, float)) else str(raw)


def _stamp(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def _metric_of(measurement: Any, metric: str) -> float | None:
    for entry in (measurement or {}).get("metrics", []) if isinstance(measurement, dict) else []:
        if entry.get("metricId") == metric and isinstance(entry.get("value"), (int, float)):
            return float(entry["value"])
    return None


def vertex_trial(data: dict[str, Any], spec: SweepSpec) -> Trial:
    """One of Vertex AI's trials (its JSON) as a row of the sweep's table."""
    params = {p.name: p for p in spec.params}
    values = {
        str(p.get("parameterId")): _value(params.get(str(p.get("parameterId"))), p.get("value"))
        for p in data.get("parameters", [])
        if isinstance(p, dict)
    }
    trial = Trial(int(str(data.get("id") or 0)), values, _STATES.get(str(data.get("state")), ""))
    trial.state = trial.state or str(data.get("state", "")).lower()
    for measurement in data.get("measurements", []) or []:
        value = _metric_of(measurement, spec.metric)
        if value is not None:
            trial.curve.append((int(str(measurement.get("stepCount") or 0)), value))
    trial.metric = _metric_of(data.get("finalMeasurement"), spec.metric)
    if trial.state == "succeeded" and (trial.metric is None or not math.isfinite(trial.metric)):
        trial.state, trial.note = "failed", f"it reported no {spec.metric}"
    if data.get("infeasibleReason"):
        trial.note = " ".join(str(data["infeasibleReason"]).split())[:300]
    start, end = _stamp(data.get("startTime")), _stamp(data.get("endTime"))
    if start is not None and end is not None:
        trial.seconds = max(0.0, (end - start).total_seconds())
    return trial


def spec_of(job_dir: Path) -> SweepSpec:
    """The sweep a tuning job runs, from its folder's ``job.json`` (the plan's summary)."""
    sweep = json.loads((job_dir / "job.json").read_text(encoding="utf-8"))["sweep"]
    return sweep_spec(
        [f"{p['name']}={p['space']}" for p in sweep["params"]],
        trials=sweep["trials"],
        parallel=sweep["parallel"],
        metric=sweep["metric"],
        goal=sweep["goal"],
        method=sweep["method"],
        prune=sweep["prune"],
    )


def read_trials(job_dir: Path, spec: SweepSpec) -> list[Trial]:
    """The job's trials as its watcher last saw them (none before the first)."""
    try:
        data = json.loads((job_dir / TRIALS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    trials = [vertex_trial(t, spec) for t in data if isinstance(t, dict)]
    return sorted(trials, key=lambda t: t.number)


def _job_to_follow(client: Client, folder: Path, plan: Plan) -> Job | None:
    """The tuning job an earlier run of this sweep launched, if it is worth following (not
    failed or cancelled, and as many trials as asked now)."""
    asked = plan.sweep.spec.trials if plan.sweep else 0
    try:
        job_id = json.loads((folder / JOB_FILE).read_text())["job"]
        job = client.job(job_id)
        record = job.record()
        same = spec_of(Path(record.job_dir)).trials == asked
    except (OSError, ValueError, KeyError, TypeError, TfcError):
        return None  # none yet, or its record or folder gone: a new one is launched
    if not same or record.state in (JobState.FAILED, JobState.CANCELLED):
        return None
    return job


def follow_tuning(
    client: Client,
    plan: Plan,
    folder: Path,
    *,
    on_change: Callable[[Sweep], None] | None = None,
    poll_s: float = 1.0,
    wait: bool = True,
) -> Sweep:
    """Launch the sweep as one job (or follow the one an earlier run launched) and keep its
    trials up to date until it ends (``wait=False``: return once launched). An interrupt
    stops the following, not the job."""
    assert plan.sweep is not None
    spec = plan.sweep.spec
    job = _job_to_follow(client, folder, plan)
    if job is None:
        job = client.submit(plan)
        (folder / JOB_FILE).write_text(json.dumps({"job": job.id}))
    sweep = Sweep(folder, spec, client)
    sweep.job_id = job.id
    said = ""
    while True:
        record = job.record()
        sweep.trials = read_trials(Path(record.job_dir), spec)
        sweep.state, sweep.error = record.state.value, record.error or ""
        now = json.dumps([(t.number, t.state, t.metric, len(t.curve)) for t in sweep.trials])
        if now + sweep.state != said:
            said = now + sweep.state
            if on_change is not None:
                on_change(sweep)
        if record.state.is_terminal() or not wait:
            return sweep
        time.sleep(poll_s)
