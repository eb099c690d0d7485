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
from ..returns import border
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
    ``64.0`` of an int range is 64, ``"relu"`` of a list is the list's item; anything else
    (an object, a number JSON cannot carry) as text."""
    number = _number(raw)
    if number is not None and not math.isfinite(number):
        number, raw = None, str(raw)
    if param is not None and param.kind == "int" and number is not None:
        return int(number)
    if param is not None and param.kind == "choice":
        for choice in param.choices:
            if str(choice) == str(raw):
                return choice
            numeric = isinstance(choice, (int, float)) and not isinstance(choice, bool)
            if numeric and number is not None and float(choice) == number:
                return choice
    if param is None and isinstance(raw, (bool, int)):
        return raw
    return number if number is not None else str(raw)[:200]


def _stamp(text: Any) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else None  # naive and aware never subtract


def _number(raw: Any) -> float | None:
    """A float from a JSON number (never a bool; NaN and infinities too), else None."""
    if not isinstance(raw, (int, float)) or isinstance(raw, bool):
        return None
    try:
        return float(raw)
    except OverflowError:  # an integer past a float's range
        return None


def _count(raw: Any) -> int | None:
    """A whole number Vertex AI writes as text (``"3"``, an id or a step), else None."""
    text = str(raw) if isinstance(raw, (str, int)) and not isinstance(raw, bool) else ""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def _listed(raw: Any) -> list[dict[str, Any]]:
    """The objects of a JSON list (anything else: none)."""
    return [x for x in raw if isinstance(x, dict)] if isinstance(raw, list) else []


def _metric_of(measurement: Any, metric: str) -> float | None:
    for entry in _listed(measurement.get("metrics")) if isinstance(measurement, dict) else []:
        value = _number(entry.get("value"))
        if entry.get("metricId") == metric and value is not None and math.isfinite(value):
            return value
    return None


def vertex_trial(data: dict[str, Any], spec: SweepSpec) -> Trial | None:
    """One of Vertex AI's trials (its JSON) as a row of the sweep's table; None when it has no
    trial number (what the job folder holds is read, not trusted: every field is checked)."""
    number = _count(data.get("id"))
    if number is None:
        return None
    params = {p.name: p for p in spec.params}
    values = {
        str(p.get("parameterId"))[:100]: _value(
            params.get(str(p.get("parameterId"))), p.get("value")
        )
        for p in _listed(data.get("parameters"))
    }
    raw_state = str(data.get("state", ""))[:40]
    trial = Trial(number, values, _STATES.get(raw_state, "running"))  # STATE_UNSPECIFIED
    for measurement in _listed(data.get("measurements")):
        value = _metric_of(measurement, spec.metric)
        if value is not None:
            trial.curve.append((_count(measurement.get("stepCount")) or 0, value))
    trial.metric = _metric_of(data.get("finalMeasurement"), spec.metric)
    if trial.state == "succeeded" and (trial.metric is None or not math.isfinite(trial.metric)):
        trial.state, trial.note = "failed", f"it reported no {spec.metric}"
    if data.get("infeasibleReason"):
        trial.note = " ".join(str(data["infeasibleReason"])[:2000].split())[:300]
    start, end = _stamp(data.get("startTime")), _stamp(data.get("endTime"))
    if start is not None and end is not None:
        trial.seconds = max(0.0, (end - start).total_seconds())
    return trial


JOB_JSON_BYTES = 4 << 20
"""Bytes of a tuning job's ``job.json`` (the plan's summary) read at most."""
TRIALS_BYTES = 32 << 20
"""Bytes of its :data:`TRIALS_FILE` read at most (10,000 trials, an epoch's measurement each)."""


def spec_of(job_dir: Path) -> SweepSpec:
    """The sweep a tuning job runs, from its folder's ``job.json`` (the plan's summary), read
    through the border (:mod:`tfc_jupyter.returns.border`).

    Raises:
        Refused: it is not there, not a file, over :data:`JOB_JSON_BYTES`, or holds no sweep.
    """
    try:
        sweep = border.read_json(job_dir, "job.json", JOB_JSON_BYTES)["sweep"]
        return sweep_spec(
            [f"{p['name']}={p['space']}" for p in sweep["params"]],
            trials=sweep["trials"],
            parallel=sweep["parallel"],
            metric=sweep["metric"],
            goal=sweep["goal"],
            method=sweep["method"],
            prune=sweep["prune"],
        )
    except border.Refused:
        raise
    except (OSError, KeyError, TypeError, ValueError, TfcError):
        raise border.Refused("job.json: it holds no sweep that a job runs") from None


def load_trials(job_dir: Path, spec: SweepSpec, *, ended: bool = False) -> tuple[list[Trial], str]:
    """The job's trials as its watcher last saw them (none before the first), by number, and
    why some or all were not read ("" when all were): the file is read through the border
    (no link, a regular file, at most :data:`TRIALS_BYTES`), a list of objects, each checked.
    Once the job ``ended``, a trial Vertex AI last saw running was stopped with it."""
    try:
        data = border.read_json(job_dir, TRIALS_FILE, TRIALS_BYTES)
    except FileNotFoundError:
        return [], ""
    except (OSError, border.Refused) as exc:
        return [], str(exc) if isinstance(exc, border.Refused) else f"{TRIALS_FILE}: {exc}"
    if not isinstance(data, list):
        return [], f"{TRIALS_FILE}: not a list of trials"
    trials: dict[int, Trial] = {}
    for item in data:
        trial = vertex_trial(item, spec) if isinstance(item, dict) else None
        if trial is not None:
            trial.state = "stopped" if ended and trial.state == "running" else trial.state
            trials.setdefault(trial.number, trial)
    skipped = len(data) - len(trials)
    why = f"{TRIALS_FILE}: {skipped} of {len(data)} entries not trials" if skipped else ""
    return sorted(trials.values(), key=lambda t: t.number), why


def read_trials(job_dir: Path, spec: SweepSpec) -> list[Trial]:
    """The job's trials as its watcher last saw them (none before the first): :func:`load_trials`
    without the why."""
    return load_trials(job_dir, spec)[0]


def _job_to_follow(client: Client, folder: Path, plan: Plan) -> Job | None:
    """The tuning job an earlier run of this sweep launched, if it is worth following (not
    failed or cancelled, and as many trials as asked now)."""
    asked = plan.sweep.spec.trials if plan.sweep else 0
    try:
        job_id = json.loads((folder / JOB_FILE).read_text())["job"]
        job = client.job(job_id)
        record = job.record()
        same = spec_of(Path(record.job_dir)).trials == asked
    except (OSError, ValueError, KeyError, TypeError, TfcError, border.Refused):
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
        ended = record.state.is_terminal()
        sweep.trials = load_trials(Path(record.job_dir), spec, ended=ended)[0]
        sweep.state, sweep.error = record.state.value, record.error or ""
        now = json.dumps([(t.number, t.state, t.metric, len(t.curve)) for t in sweep.trials])
        if now + sweep.state != said:
            said = now + sweep.state
            if on_change is not None:
                on_change(sweep)
        if record.state.is_terminal() or not wait:
            return sweep
        time.sleep(poll_s)
