"""A sweep's trials, each a job of its own, chosen by Optuna (issue 37).

:func:`run_sweep` keeps ``--parallel`` trial jobs running until ``--trials`` have run: it asks
Optuna for each trial's values (TPE for ``bayes``, random, or a grid), launches the plan with
them (``--lr=0.0031`` among the script's arguments, as Vertex AI passes a tuning trial's;
:mod:`tfc_runtime.params` puts them on the notebook's lines), and tells Optuna each trial's
metric: the last value the job reported under that name.

Everything a sweep knows is in its folder (``HOME/sweeps/NAME-KEY/``, KEY from the script and
the sweep's flags): Optuna's journal of the trials and their job ids. Running the same cell
again goes on with the same sweep: finished trials are kept, and trials still running (the
driver was interrupted, or the kernel died) are waited for, not run again. One process drives
a sweep at a time (a lock in its folder).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfc_runtime.params import Value, argument

from .. import registry
from ..errors import JobConflict, SpecError, TfcError
from ..jobs import watcher_pids
from ..returns.results import Results, metric_number
from ..store.records import JobState
from ..sweep import methods
from ..util.pidfds import nap
from .trial_table import Sweep, Trial, sweep_svg, trial_line, trial_lines

if TYPE_CHECKING:
    from ..client import Client, Job
    from ..planner.plan import Plan
    from ..sweep.spec import Param, SweepSpec

__all__ = [
    "Sweep",
    "Trial",
    "curve",
    "run_sweep",
    "sweep_folder",
    "sweep_key",
    "sweep_svg",
    "trial_line",
    "trial_lines",
    "trial_plan",
]

SWEEPS = "sweeps"
SWEEP_LABEL, TRIAL_LABEL = registry.SWEEP_LABEL, registry.TRIAL_LABEL
"""The labels of a trial's job: its sweep (:func:`sweep_label`) and its number."""


def sweep_label(sweep_id: str) -> str:
    """A sweep's id as its trials' label holds it (a label value: lowercase, 63 at most)."""
    return sweep_id.lower()[-63:]


JOURNAL = "study.journal"
SWEEP_FILE = "sweep.json"
"""In a sweep's folder: its magic line and what it tries (:func:`sweep_file`)."""
LOCK = "sweep.lock"
POLL_S = 0.5


def sweep_key(plan: Plan) -> str:
    """What makes two runs the same sweep: the script, the job and what the sweep tries
    (not how many trials, nor how many at once: ``--trials 12`` goes on from 6)."""
    if plan.sweep is None:
        raise SpecError("the plan has no sweep", "pass --sweep NAME=SPACE")
    spec = plan.spec.to_dict()
    spec.pop("name", None)
    what = plan.sweep.to_dict()
    for how_much in ("trials", "parallel"):  # more trials, or more at once: the same sweep
        what.pop(how_much)
    text = json.dumps(
        {"script": plan.script.text, "spec": spec, "sweep": what},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def sweep_file(plan: Plan) -> str:
    """The text of a sweep's :data:`SWEEP_FILE`: its line and what it tries."""
    if plan.sweep is None:
        raise SpecError("the plan has no sweep", "pass --sweep NAME=SPACE")
    return json.dumps({"line": plan.options.to_line(), "sweep": plan.sweep.to_dict()}, indent=1)


def sweep_folder(client: Client, plan: Plan) -> Path:
    """``HOME/sweeps/NAME-KEY``: where this plan's sweep keeps its study."""
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in plan.spec.name)[:40]
    return Path(client.store.path).parent / SWEEPS / f"{name}-{sweep_key(plan)}"


def _optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise TfcError(
            "a sweep here needs Optuna, which is not installed",
            "pip install 'tfc_jupyter[sweep]' (or optuna) in this kernel's environment",
        ) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _distribution(optuna: Any, param: Param) -> Any:
    """The Optuna distribution of one parameter."""
    dists = optuna.distributions
    if param.kind == "choice":
        return dists.CategoricalDistribution(list(param.choices))
    low, high = float(param.low or 0), float(param.high or 0)
    if param.kind == "int":
        return dists.IntDistribution(int(low), int(high), step=param.step)
    return dists.FloatDistribution(low, high, log=param.kind == "loguniform")


def _study(optuna: Any, folder: Path, spec: SweepSpec) -> Any:
    """The sweep's study, made or loaded from its journal."""
    journal = optuna.storages.journal
    storage = optuna.storages.JournalStorage(journal.JournalFileBackend(str(folder / JOURNAL)))
    sampler = methods.get(spec.method).sampler(spec)  # the method's own (sweep/methods.py)
    pruner = (
        optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=1)
        if spec.prune
        else optuna.pruners.NopPruner()
    )
    return optuna.create_study(
        study_name="sweep",
        storage=storage,
        sampler=sampler,
        pruner=pruner,
        direction="maximize" if spec.goal == "max" else "minimize",
        load_if_exists=True,
    )


@contextlib.contextmanager
def _driving(folder: Path) -> Iterator[None]:
    """Hold the sweep's lock: one process drives it at a time."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise JobConflict(
                f"sweep {folder.name} is being run by another process",
                "wait for it, or interrupt that kernel (its trials go on)",
            ) from None
        yield
    finally:
        os.close(fd)


def trial_plan(plan: Plan, number: int, values: dict[str, Value], sweep_id: str) -> Plan:
    """The plan of one trial: the sweep's plan with the values among the script's arguments
    (where the runtime takes them, as on Vertex AI) and the trial in its name and labels."""
    spec = plan.spec
    labels = (*spec.labels, (SWEEP_LABEL, sweep_label(sweep_id)), (TRIAL_LABEL, str(number)))
    trial = spec.evolve(
        name=f"{spec.name}-trial-{number}",
        entry_args=(*spec.entry_args, *(argument(k, v) for k, v in values.items())),
        labels=labels,
    )
    return dataclasses.replace(plan, spec=trial, sweep=None)


def curve(results: Results, metric: str) -> list[tuple[int, float]]:
    """``(epoch, value)`` of ``metric``, as the job reported it (its last fit or loop)."""
    out: list[tuple[int, float]] = []
    for row in results.epochs:
        value = metric_number(row.get("metrics", {}).get(metric))
        if value is not None:
            out.append((int(row.get("epoch") or len(out) + 1), value))
    return out


def _outcome(trial: Trial, results: Results, metric: str, state: JobState, error: str) -> None:
    """Fill a finished trial's state, metric and note from its job."""
    trial.curve = curve(results, metric)
    if state is JobState.SUCCEEDED:
        if not trial.curve:
            reported = ", ".join(results.names) or "no metric"
            trial.state, trial.note = "failed", f"it reported no {metric} ({reported})"
        elif not math.isfinite(trial.curve[-1][1]):
            trial.state, trial.note = "failed", f"{metric} is {trial.curve[-1][1]}"
        else:
            trial.state, trial.metric = "succeeded", trial.curve[-1][1]
    elif state is JobState.CANCELLED:
        trial.state = "pruned" if trial.state == "pruned" else "stopped"
    else:
        trial.state, trial.note = "failed", error


def _job_of(client: Client, job_id: str) -> Job | None:
    try:
        return client.job(job_id)
    except TfcError:
        return None


def run_sweep(
    client: Client,
    plan: Plan,
    *,
    on_change: Callable[[Sweep], None] | None = None,
    poll_s: float = POLL_S,
    wait: bool = True,
) -> Sweep:
    """Run ``plan``'s sweep to its end (or go on with it): ``--parallel`` trial jobs at a time
    until ``--trials`` have run, each told to Optuna. ``on_change`` is called with the sweep
    whenever a trial starts or ends. An interrupt stops the driving, not the trials. Where the
    backend runs the sweep as one job (Vertex AI), ``wait=False`` returns once it is launched
    (this machine's sweeps are driven here, so they always run to their end).

    Raises:
        TfcError: no sweep in the plan, Optuna missing, the sweep driven elsewhere, a launch
            refused (the first trial's, before any runs).
    """
    if plan.sweep is None:
        raise SpecError("the plan has no sweep", "pass --sweep NAME=SPACE")
    spec = plan.sweep.spec
    folder = sweep_folder(client, plan)
    if registry.traits(plan.spec.backend).tunes:  # the backend's own tuning job runs it
        from .tuned import follow_tuning

        with _driving(folder):
            return follow_tuning(
                client, plan, folder, on_change=on_change, poll_s=poll_s, wait=wait
            )
    optuna = _optuna()
    registry.keep_resident()  # trial after trial: the warm runtime starts them
    sweep = Sweep(folder, spec, client)
    with _driving(folder):
        (folder / SWEEP_FILE).write_text(sweep_file(plan))
        study = _study(optuna, folder, spec)
        dists = {p.name: _distribution(optuna, p) for p in spec.params}
        _Driver(client, plan, sweep, study, dists, optuna, on_change, poll_s).run()
    return sweep


class _Driver:
    """One run of :func:`run_sweep`: the loop that launches, watches and tells trials."""

    def __init__(
        self,
        client: Client,
        plan: Plan,
        sweep: Sweep,
        study: Any,
        dists: dict[str, Any],
        optuna: Any,
        on_change: Callable[[Sweep], None] | None,
        poll_s: float,
    ) -> None:
        self.client, self.plan, self.sweep, self.study = client, plan, sweep, study
        self.dists, self.optuna, self.on_change, self.poll_s = dists, optuna, on_change, poll_s
        self.spec = sweep.spec
        self.method = methods.get(self.spec.method)
        self.running: dict[int, tuple[Trial, Job, Any]] = {}  # number -> trial, job, optuna's

    def run(self) -> None:
        self._load()
        self._changed()
        max_failed = self.spec.max_failed
        while True:
            changed = self._harvest()
            failed = sum(t.state == "failed" for t in self.sweep.trials)
            counted = sum(t.state != "stopped" for t in self.sweep.trials)
            while (
                len(self.running) < self.spec.parallel
                and counted < self.spec.trials
                and failed < max_failed
                and self.method.left(self.spec, self._ran()) != 0  # a grid covered: done
            ):
                self._launch(self.method.next_values(self.spec, self._ran()))
                counted += 1
                changed = True
            if changed:
                self._changed()
            if not self.running:
                return
            nap(self.poll_s, self._watchers())  # wakes as soon as a trial's watcher exits

    def _watchers(self) -> list[int]:
        """The pids of the processes that record the running trials' ends (their exit wakes
        the driver at once: the next trial starts without waiting for a poll)."""
        pids: list[int] = []
        for _, job, _ in self.running.values():
            with contextlib.suppress(TfcError):
                pids.extend(watcher_pids(job.record()))
        return pids

    def _tell(self, number: int, value: float | None = None, **state: Any) -> None:
        """Tell Optuna how a trial ended. Its grid sampler then stops the study when the grid
        is done, which outside ``optimize`` is an error raised after the trial is recorded:
        the loop stops by its own count."""
        try:
            self.study.tell(number, value, **state)
        except RuntimeError as exc:
            if "Study.stop" not in str(exc):
                raise

    def _changed(self) -> None:
        self.sweep.trials.sort(key=lambda t: t.number)
        if self.on_change is not None:
            self.on_change(self.sweep)

    def _load(self) -> None:
        """The trials of earlier runs: finished ones as they ended, running ones watched."""
        TrialState = self.optuna.trial.TrialState
        for frozen in self.study.get_trials(deepcopy=False):
            job_id = frozen.user_attrs.get("job")
            trial = Trial(frozen.number, dict(frozen.params), "running", job_id)
            trial.note = frozen.user_attrs.get("note", "")
            trial.seconds = frozen.user_attrs.get("seconds")
            if frozen.state is TrialState.RUNNING:
                job = _job_of(self.client, job_id) if job_id else None
                if job is None:  # asked, never launched (the driver stopped in between)
                    self._tell(frozen.number, state=TrialState.FAIL)
                    continue
                # Optuna's handle on a trial asked by an earlier run (its id is the study's)
                self.running[frozen.number] = (
                    trial,
                    job,
                    self.optuna.Trial(self.study, frozen._trial_id),
                )
            elif frozen.state is TrialState.COMPLETE:
                trial.state, trial.metric = "succeeded", frozen.value
            elif frozen.state is TrialState.PRUNED:
                trial.state = "pruned"
            else:
                if not job_id:
                    continue
                trial.state = frozen.user_attrs.get("state", "failed")
            if job_id:
                with contextlib.suppress(TfcError):
                    trial.curve = curve(self.client.job(job_id).results(), self.spec.metric)
            self.sweep.trials.append(trial)

    def _ran(self) -> list[dict[str, Value]]:
        """The values of the trials that ran or run (a stopped trial's are not among them)."""
        return [t.values for t in self.sweep.trials if t.state != "stopped"]

    def _launch(self, fixed: dict[str, Any] | None = None) -> None:
        """Launch the next trial: Optuna's values, or ``fixed`` (the method's own: a grid's)."""
        if fixed is not None:
            self.study.enqueue_trial(fixed, skip_if_exists=False)
        asked = self.study.ask(self.dists)
        values = dict(asked.params)
        trial = Trial(asked.number, values, "running")
        try:
            job = self.client.submit(trial_plan(self.plan, asked.number, values, self.sweep.id))
        except BaseException:
            self._tell(asked.number, state=self.optuna.trial.TrialState.FAIL)
            raise
        asked.set_user_attr("job", job.id)
        trial.job_id = job.id
        self.running[asked.number] = (trial, job, asked)
        self.sweep.trials.append(trial)

    def _harvest(self) -> bool:
        """Tell Optuna of each trial that ended (or that the pruner stops); True if any."""
        TrialState = self.optuna.trial.TrialState
        changed = False
        for number, (trial, job, asked) in list(self.running.items()):
            rec = job.record()
            if not rec.state.is_terminal():
                if self.spec.prune:  # the epochs so far: read only for the pruner
                    self._report(trial, job, asked, job.results())
                continue
            results = job.results()
            _outcome(trial, results, self.spec.metric, rec.state, rec.error or "")
            trial.seconds = rec.elapsed
            attrs = {"seconds": rec.elapsed, "state": trial.state, "note": trial.note}
            for key, value in attrs.items():
                asked.set_user_attr(key, value)
            if trial.state == "succeeded":
                self._tell(number, trial.metric)
            elif trial.state == "pruned":
                self._tell(number, state=TrialState.PRUNED)
            else:
                self._tell(number, state=TrialState.FAIL)
            del self.running[number]
            changed = True
        return changed

    def _report(self, trial: Trial, job: Job, asked: Any, results: Results) -> None:
        """Give the pruner the trial's epochs so far; stop the trial if it says so."""
        told = len(trial.curve)
        trial.curve = curve(results, self.spec.metric)
        if len(trial.curve) == told:
            return
        for epoch, value in trial.curve[told:]:
            asked.report(value, epoch)
        if asked.should_prune():
            trial.state = "pruned"
            trial.note = f"behind the others' median at epoch {trial.curve[-1][0]}"
            with contextlib.suppress(TfcError):
                job.cancel()
