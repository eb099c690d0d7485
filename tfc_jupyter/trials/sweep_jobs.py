"""A sweep read back from its jobs, for the JupyterLab sweep tab (``GET /sweeps/ID``).

A sweep this machine drives (:mod:`tfc_jupyter.trials.trials`) leaves each trial as a job labelled
``tfc-sweep`` (the sweep's id) and ``tfc-trial`` (its number), whose spec holds the values
(its arguments, ``--lr=0.0031``, read as the runtime reads them) and whose results hold the
metric. The sweep's folder (``HOME/sweeps/ID/sweep.json``) says which metric ranks them and
which way. Reading a sweep never touches its study or its lock (the importances read a copy
of its journal: :mod:`.importance`).
A sweep on Vertex AI is one tuning job labelled ``tfc-sweep`` with its own id; its trials are
the service's, kept by its watcher in the job folder and read from there through the border.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tfc_runtime.params import decode, take

from .. import registry
from ..errors import BackendError, JobNotFound
from ..job.spec import Decisions
from ..returns.border import Refused
from ..returns.outcome import results_of
from ..returns.plot import INK
from ..store.records import JobRecord, JobState, JobStore
from ..sweep.spec import DEFAULT_METRIC, SweepSpec, default_goal, parse_param
from .driver import DRIVER_FILE, DRIVER_LOG, driver_error
from .importance import importance
from .trial_table import Sweep, Trial, sweep_svg
from .trials import SWEEP_FILE, SWEEP_LABEL, SWEEPS, TRIAL_LABEL, curve, sweep_label
from .tuned import load_trials, spec_of

_STATES = {
    JobState.SUCCEEDED: "succeeded",
    JobState.FAILED: "failed",
    JobState.CANCELLING: "stopped",
    JobState.CANCELLED: "stopped",
}


def label(record: JobRecord, key: str) -> str | None:
    """A label of the record's spec (an object, or pairs in older records), or None."""
    labels = (record.spec or {}).get("labels")
    if isinstance(labels, dict):
        value = labels.get(key)
    elif isinstance(labels, list):
        value = next((p[1] for p in labels if isinstance(p, list) and p[:1] == [key]), None)
    else:
        value = None
    return value if isinstance(value, str) else None


def _folders(store: JobStore, sweep_id: str) -> list[Path]:
    """The sweep folders of this store whose id is ``sweep_id``."""
    folder = Path(store.path).parent / SWEEPS
    found = sorted(folder.glob("*")) if folder.is_dir() else []
    return [candidate for candidate in found if sweep_label(candidate.name) == sweep_id]


def _saved_spec(folder: Path) -> SweepSpec | None:
    """What the sweep in ``folder`` tries, from its :data:`SWEEP_FILE`; None where unreadable."""
    try:
        saved = json.loads((folder / SWEEP_FILE).read_text())["sweep"]
        params = tuple(parse_param(f"{p['name']}={p['space']}") for p in saved["params"])
        return SweepSpec(
            params=params,
            trials=int(saved["trials"]),
            parallel=int(saved["parallel"]),
            metric=str(saved["metric"]),
            goal=saved["goal"],
            method=saved["method"],
            prune=bool(saved["prune"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _spec(store: JobStore, sweep_id: str, records: list[JobRecord]) -> tuple[SweepSpec, Path]:
    """What the sweep tries, from its folder; else what its trials say (their values' names)."""
    folder = Path(store.path).parent / SWEEPS
    for candidate in _folders(store, sweep_id)[:1]:
        spec = _saved_spec(candidate)
        if spec is not None:
            return spec, candidate
    names = sorted({t.name for r in records for t in decode(_swept(r.spec))})
    metric = str(Decisions.raw(records[0].spec).get("sweep_metric") or DEFAULT_METRIC)
    spec = SweepSpec(
        params=tuple(parse_param(f"{n}=[0]") for n in names),
        trials=len(records),
        metric=metric,
        goal=default_goal(metric) or "min",
    )
    return spec, folder / sweep_id


def _swept(spec: dict[str, Any] | None) -> str:
    """A trial record's swept variables and lines, as its spec kept them (read, not checked)."""
    return str(Decisions.raw(spec).get("swept") or "")


def _trial(record: JobRecord, metric: str) -> Trial:
    spec = record.spec or {}
    targets = decode(_swept(spec))
    try:
        values = take([str(a) for a in spec.get("entry_args") or ()], targets)[0]
    except ValueError:
        values = {}
    number = label(record, TRIAL_LABEL) or "0"
    trial = Trial(
        int(number) if number.isdigit() else 0,
        values,
        _STATES.get(record.state, "running"),
        record.id,
    )
    if record.log_dir:
        trial.curve = curve(results_of(record), metric)
        trial.metric = trial.curve[-1][1] if trial.curve else None
    if record.state.is_terminal():
        trial.seconds = record.elapsed
        trial.note = (record.error or "")[:200] if record.state is JobState.FAILED else ""
    return trial


def read_sweep(store: JobStore, sweep_id: str) -> tuple[Sweep, str, str]:
    """The sweep ``sweep_id`` read back from its jobs: the :class:`Sweep` (its trials as the
    cell's table shows them), its name and its summary line. A sweep its backend runs as one
    job (a tuning job, labelled with its own id) is read from the trials its watcher keeps in
    the job folder (:mod:`tfc_jupyter.trials.tuned`).

    Raises:
        JobNotFound: no job of the store belongs to that sweep.
        BackendError: a tuning job's folder does not say what its sweep tries.
    """
    records = [r for r in store.list(limit=None) if label(r, SWEEP_LABEL) == sweep_id]
    if not records and (driven := _driven(store, sweep_id)) is not None:
        return driven
    if not records:
        raise JobNotFound(
            f"no sweep {sweep_id!r} among the jobs", "the jobs sidebar lists the sweeps there are"
        )
    tuning = next((r for r in records if _tunes(r)), None)
    if tuning is not None:
        return _tuning_sweep(tuning, sweep_id)
    spec, folder = _spec(store, sweep_id, records)
    sweep = Sweep(folder, spec, None)
    sweep.trials = sorted((_trial(r, spec.metric) for r in records), key=lambda t: t.number)
    return sweep, records[0].name.rsplit("-trial-", 1)[0], sweep.summary_line()


def _driven(store: JobStore, sweep_id: str) -> tuple[Sweep, str, str] | None:
    """A sweep the jobs API started whose driver has made no trial yet (it plans the cells
    again and imports Optuna, about a second): no trials, and what its driver is doing, or the
    error it ended with; None where no such sweep was started."""
    for folder in _folders(store, sweep_id):
        spec = _saved_spec(folder)
        if spec is None or not (folder / DRIVER_FILE).is_file():
            continue
        sweep = Sweep(folder, spec, None)
        error = driver_error(folder / DRIVER_LOG)
        said = f"its driver ended: {error}" if error else "starting: its first trial is planned"
        return sweep, folder.name.rsplit("-", 1)[0], f"{sweep.summary_line()}; {said}"
    return None


def sweep_json(store: JobStore, sweep_id: str) -> dict[str, Any]:
    """The sweep ``sweep_id`` as the sweep tab shows it (:func:`read_sweep`): its trials
    (values, state, metric, time, job), the best one, a summary line, the plot (metric by
    trial and by value) and each parameter's importance (:mod:`.importance`: Optuna's on the
    sweep's study where its journal is in its folder, else from the trials).

    Raises:
        JobNotFound, BackendError: as :func:`read_sweep`.
    """
    sweep, name, summary = read_sweep(store, sweep_id)
    found = importance(sweep.folder, sweep.trials, sweep.spec.names)
    for trial in sweep.trials:  # a job its pruner stopped: pruned, not stopped by hand
        if trial.state == "stopped" and trial.number in found["pruned"]:
            trial.state = "pruned"
    return {**_as_json(sweep_id, name, sweep, summary), "importance": found}


def _tunes(record: JobRecord) -> bool:
    """The record is a job that runs a whole sweep (no trial number; a backend that tunes)."""
    return label(record, TRIAL_LABEL) is None and registry.traits(record.backend).tunes


def _tuning_sweep(record: JobRecord, sweep_id: str) -> tuple[Sweep, str, str]:
    """A tuning job's sweep: what it tries from its ``job.json``, its trials from the
    watcher's ``trials.json``, both read through the border (a job folder is untrusted);
    what could not be read is said in the summary line."""
    job_dir = Path(record.job_dir)
    try:
        spec = spec_of(job_dir)
    except Refused as exc:
        raise BackendError(
            f"the sweep of job {record.id} cannot be read: {exc}",
            f"tfc-jupyter logs {record.id} shows the job",
        ) from None
    sweep = Sweep(job_dir, spec, None)
    sweep.id, sweep.job_id = sweep_id, record.id
    sweep.state, sweep.error = record.state.value, record.error or ""
    sweep.trials, why = load_trials(job_dir, spec, ended=record.state.is_terminal())
    summary = sweep.summary_line() + (f"; not read: {why}" if why else "")
    return sweep, record.name, summary


def _as_json(sweep_id: str, name: str, sweep: Sweep, summary: str) -> dict[str, Any]:
    """The sweep tab's JSON of a sweep (``openapi.yaml``'s ``Sweep``)."""
    spec, best = sweep.spec, sweep.best_trial
    return {
        "id": sweep_id,
        "name": name,
        "metric": spec.metric,
        "goal": spec.goal,
        "trials_asked": spec.trials,
        "names": list(spec.names),
        "summary": summary,
        "best": best.number if best else None,
        "trials": [
            {
                "number": t.number,
                "values": t.values,
                "state": t.state,
                "metric": t.metric,
                "seconds": None if t.seconds is None else round(t.seconds, 1),
                "job_id": t.job_id,
                "note": t.note,
            }
            for t in sweep.trials
        ],
        "svg": sweep_svg(sweep, ink=INK),  # an image: no page colour to follow
    }
