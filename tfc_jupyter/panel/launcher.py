"""Launching from the panel (one job per click, in stages) and watching a job (a polling thread).

:class:`Launcher` runs the stages in a background thread so the kernel stays free: *convert*
(re-read the saved notebook and plan it, :meth:`PanelModel.plan`), *build* and *push* (the image,
followed through :func:`tfc_jupyter.image.reporting` while the docker and Vertex backends make
it; skipped for local jobs, which run in this kernel's environment, and when ``--image`` is
given), *submit* (:meth:`Client.submit`). A click while a launch runs, or within
:data:`DOUBLE_CLICK_S` after one ended, is ignored: a double click never launches twice.

:class:`JobWatch` follows one job from a daemon thread: its record (state, elapsed time, error,
Vertex console and TensorBoard links), the new lines of every replica's log
(:class:`logs.LogTail`), kept in bounded buffers, and, for a job of a sweep (a trial, or a
Vertex AI tuning job), the sweep's trials as the cell's table shows them. It stops when the
job has ended and its last lines are read, or when :meth:`JobWatch.stop` is called (the panel
closed).
"""

from __future__ import annotations

import math
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import jobs, registry
from ..client import Client
from ..errors import TfcError
from ..returns.results import ResultFeed, Results
from ..store.logs import LogTail, Merger, is_noise, said, strip_ansi
from ..store.logs import shown as shown_line
from ..store.records import JobRecord, JobState, JobStore
from ..trials.sweep_jobs import label, read_sweep
from ..trials.trial_table import Sweep, Trial
from ..trials.trials import SWEEP_LABEL, TRIAL_LABEL
from .model import PanelModel

if TYPE_CHECKING:
    from ..planner.plan import Plan

STAGES = ("convert", "build", "push", "submit")
DOUBLE_CLICK_S = 1.0
POLL_S = 0.25
MAX_LINES = 1000
FIRST_TRIAL_S = 120.0
"""How long a launch from the panel waits for a sweep's driver to launch its first trial."""
SWEEP_POLL_S = 1.0
"""How often a watch reads the sweep of the job it follows, at most (each job's record)."""


@dataclass
class Stage:
    """One launch stage: ``pending``, ``running``, ``done``, ``skipped`` or ``failed``."""

    name: str
    status: str = "pending"
    detail: str = ""
    seconds: float | None = None
    fraction: float | None = None  # of a running build or push, when known


def _error_text(exc: BaseException) -> str:
    """One line for the panel: a TfcError's message and fix (in the panel's words), else the
    exception's type and text."""
    if isinstance(exc, TfcError):
        return exc.ui_text()
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


class Launcher:
    """Launches the panel's job, one per click, reporting each stage (see the module docstring).

    Args:
        model: the panel's model (its choices and notebook).
        store: the job records.
        on_change: called (from the launch thread) after every stage change.
    """

    def __init__(
        self,
        model: PanelModel,
        store: JobStore,
        *,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.model = model
        self.store = store
        self.on_change = on_change
        self.state = "idle"  # idle, launching, launched, failed
        self.stages = [Stage(name) for name in STAGES]
        self.error: str | None = None
        self.job: jobs.Job | None = None
        self.launched: list[str] = []
        self.log_tail = ""  # a failed image build's last lines
        self.drives_sweep = False
        """The last launch started a sweep's driver: :attr:`job` is its first trial."""
        self._lock = threading.Lock()
        self._ended_at = float("-inf")
        self._thread: threading.Thread | None = None

    @property
    def busy(self) -> bool:
        """True while a launch runs (the Launch button is disabled)."""
        return self.state == "launching"

    def click(self) -> bool:
        """Start one launch; False (and nothing happens) if one runs or has just ended."""
        with self._lock:
            if self.busy or time.monotonic() - self._ended_at < DOUBLE_CLICK_S:
                return False
            self.state, self.error, self.job, self.log_tail = "launching", None, None, ""
            self.stages = [Stage(name) for name in STAGES]
            self._thread = threading.Thread(target=self._run, name="tfc-panel-launch", daemon=True)
            self._thread.start()
        self._changed()
        return True

    def wait(self, timeout: float) -> str:
        """Wait (bounded) for the launch to end; returns the state."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.state

    def stage(self, name: str) -> Stage:
        """The stage called ``name``."""
        return next(s for s in self.stages if s.name == name)

    def _set(self, name: str, status: str, detail: str = "", started: float | None = None) -> None:
        stage = self.stage(name)
        stage.status, stage.detail = status, detail or stage.detail
        if started is not None:
            stage.seconds = round(time.monotonic() - started, 2)
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:  # a view bug must not stop the launch
                traceback.print_exc()

    def _on_build(self, event: Any) -> None:
        """Image progress (``image.Progress``) from the docker and Vertex backends -> stages."""
        build, push = self.stage("build"), self.stage("push")
        fraction = event.step / event.total if event.total else None
        if event.phase in ("context", "build"):
            build.fraction = fraction if event.phase == "build" else None
            self._set("build", "running", event.message)
        elif event.phase == "push":
            if build.status == "running":
                self._set("build", "done")
            push.fraction = fraction
            self._set("push", "running", event.message)
        elif event.phase == "log":
            self.log_tail = event.message
        elif event.phase == "done":
            for stage in (build, push):
                if stage.status in ("pending", "running"):
                    done = stage.status == "running"
                    self._set(stage.name, "done" if done else "skipped", event.message)
        else:  # pulling the user's --image ...
            self._set("submit", "running", event.message)

    def _run(self) -> None:
        from ..image import reporting

        try:
            started = time.monotonic()
            self._set("convert", "running", "reading the saved notebook")
            plan = self.model.plan(fresh=True)
            cells = ", ".join(map(str, plan.script.cells)) or "none"
            self._set("convert", "done", f"cells {cells} of {plan.selection.name}", started)
            spec = plan.spec
            driven = plan.sweep is not None and not registry.traits(spec.backend).tunes
            runs_image = registry.traits(spec.backend).runs_image
            if driven:  # trials this machine drives: each trial's job is launched as one is
                for name in ("build", "push"):
                    self._set(name, "skipped", "each trial's job makes what it needs")
            elif not runs_image or spec.image.image:
                why = (
                    f"{spec.backend.value} jobs run in this kernel's environment"
                    if not runs_image
                    else f"using --image {spec.image.image}"
                )
                self._set("build", "skipped", why)
                self._set("push", "skipped", why)
            started = time.monotonic()
            self._set("submit", "running", f"to the {spec.backend.value} backend")
            self.drives_sweep = driven
            if driven:
                job = self._drive(plan)
            else:
                with reporting(self._on_build):
                    job = Client(self.model.settings, self.store).submit(plan)
            for stage in self.stages[1:3]:  # build, push: whatever the backend did not report
                if stage.status == "running":
                    self._set(stage.name, "done")
                elif stage.status == "pending":
                    self._set(stage.name, "skipped", "not needed")
            self.job = job
            self.launched.append(job.id)
            self._set("submit", "done", job.id, started)
            self.model.remember()
            self.state = "launched"
        except Exception as exc:  # shown in place, never a traceback in the cell
            self.error = _error_text(exc)
            failed = next((s for s in self.stages if s.status == "running"), self.stages[-1])
            for stage in self.stages:
                if stage.status == "running" and stage is not failed:
                    stage.status = "pending"  # never reached
            self._set(failed.name, "failed", self.error)
            self.state = "failed"
        finally:
            with self._lock:
                self._ended_at = time.monotonic()
            self._changed()

    def _drive(self, plan: Plan) -> jobs.Job:
        """Start the driver of the plan's sweep (a process of its own that outlives the kernel,
        as the jobs API starts it) and return its first trial's job once the driver launched it
        (bounded by :data:`FIRST_TRIAL_S`).

        Raises:
            TfcError: the driver could not start, or ended before its first trial.
        """
        from ..trials.driver import driver_ended, driver_error, start_driver

        run = start_driver(Client(self.model.settings, self.store), plan, plan.selection)
        self._set("submit", "running", f"sweep {run.sweep_id}: its first trial is planned")
        deadline = time.monotonic() + FIRST_TRIAL_S
        while time.monotonic() < deadline:
            trials = [r for r in self.store.list(limit=50) if label(r, SWEEP_LABEL) == run.sweep_id]
            if trials:
                return jobs.Job(min(trials, key=lambda r: r.created_at).id, self.store)
            if driver_ended(run.log):
                error, _, fix = (driver_error(run.log) or "it ended").partition(" Fix: ")
                raise TfcError(
                    f"the sweep's driver stopped before its first trial: {error.rstrip('.')}",
                    fix or f"its log is {run.log}",
                )
            time.sleep(0.1)
        raise TfcError(
            f"the sweep's driver launched no trial in {FIRST_TRIAL_S:.0f} s",
            f"its log says what it does: {run.log}",
        )


def _number(trial: Trial) -> int:
    return trial.number


class JobWatch:
    """Follows one job from a daemon thread: record, elapsed time, per-replica log lines.

    Args:
        job: the job to follow.
        on_update: called (from the thread) when something changed, and about once a second
            while the job runs (the elapsed time moves).
        poll_s: seconds between polls.
        max_lines: lines kept per replica (and for the merged view).
    """

    def __init__(
        self,
        job: jobs.Job,
        *,
        on_update: Callable[[JobWatch], None] | None = None,
        poll_s: float = POLL_S,
        max_lines: int = MAX_LINES,
    ) -> None:
        self.job = job
        self.on_update = on_update
        self.poll_s = poll_s
        self.record: JobRecord = job.record()
        self.lines: dict[str, deque[str]] = {}
        self.merged: deque[str] = deque(maxlen=max_lines)
        self.results = Results()  # the chief's Keras epochs, for the plot
        # The "all" view: a line every replica printed alike once, the replicas named.
        self.shown: deque[str] = deque(maxlen=max_lines)
        self._merger = Merger(jobs.replica_count(self.record))
        self.max_lines = max_lines
        self.error: str | None = None
        self.cancel_error: str | None = None
        self.cancelling = False
        self._tail = LogTail(Path(self.record.log_dir))
        self._feed = ResultFeed(self.record.log_dir)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ended = False
        self.sweep_id = label(self.record, SWEEP_LABEL)
        """The sweep the job belongs to (a trial of one, or a tuning job that runs one)."""
        self.sweep: Sweep | None = None
        """That sweep's trials as the cell's table shows them (read at most once a second)."""
        self.sweep_summary = ""
        self._sweep_read = -math.inf
        self.first = job
        """The job this watch started with (it follows the next trials of a sweep it drives)."""
        self.follows_sweep = False
        """Set for a sweep launched here: when its trial ends, the watch follows the next one,
        until the sweep's driver has ended."""

    @property
    def ended(self) -> bool:
        """True once the job is in a terminal state and its last lines are read."""
        return self._ended

    @property
    def running(self) -> bool:
        """True while the polling thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def poll(self) -> bool:
        """One poll: refresh the record, read new lines. Returns True when something changed."""
        before = (self.record.state, self.record.error, len(self.merged))
        self.record = self.job.record()
        done = self.record.state.is_terminal()
        lines = self._tail.read(final=done)
        now = time.monotonic()
        shown: list[tuple[list[str], str]] = []
        for event in self._feed.read():
            self.results.add(event)
        for replica, raw in lines:
            self.results.add_line(raw)
            line = shown_line(raw, verbose=True)  # a bar's latest state, no colour codes
            if line is None:  # a runtime report alone on its line
                continue
            line = strip_ansi(line)
            self.lines.setdefault(replica, deque(maxlen=self.max_lines)).append(line)
            self.merged.append(f"[{replica}] {line}")
            if not is_noise(line):
                shown += self._merger.add(replica, line, now)
        for names, line in shown + self._merger.ready(now, final=done):
            self.shown.append(said(names, line))
        for replica in self._tail.replicas():
            self.lines.setdefault(replica, deque(maxlen=self.max_lines))
        self._ended = done
        changed = bool(lines) or before[:2] != (self.record.state, self.record.error)
        if self.sweep_id and (changed or done or now - self._sweep_read >= SWEEP_POLL_S):
            changed = self._read_sweep(now) or changed
        if done and self.follows_sweep:
            changed = self._next_trial() or changed
        return changed

    def _next_trial(self) -> bool:
        """The followed trial has ended: follow the sweep's next trial, by number (True; one
        that ended meanwhile is read whole, then the next), or keep polling while its driver
        launches one, or end with the sweep."""
        sweep = self.sweep
        trials = sweep.trials if sweep else []
        number = label(self.record, TRIAL_LABEL)
        current = int(number) if number and number.isdigit() else -1
        later = sorted((t for t in trials if t.job_id and t.number > current), key=_number)
        running = [t for t in trials if t.state == "running"]
        if later:
            trial = later[0]
            assert trial.job_id is not None
            self.job = jobs.Job(trial.job_id, self.job.store)
            self.record = self.job.record()
            self._tail = LogTail(Path(self.record.log_dir))
            self._feed = ResultFeed(self.record.log_dir)
            self.results = Results()
            self._merger = Merger(jobs.replica_count(self.record))
            self.merged.append(f"── trial {trial.number}: job {trial.job_id} ──")
            self.shown.append(self.merged[-1])
            self._ended = False
            return True
        from ..trials.driver import DRIVER_LOG, driver_ended

        over = (
            sweep is None
            or bool(sweep.stopped)
            or (not running and len(sweep.trials) >= sweep.spec.trials)
            or driver_ended(sweep.folder / DRIVER_LOG)
        )
        self._ended = over  # between two trials: the driver is launching the next one
        return False

    def _read_sweep(self, now: float) -> bool:
        """Read the job's sweep again (its trial jobs, or a tuning job's trials); True when its
        table changed. A sweep that cannot be read is said in :attr:`sweep_summary`."""
        assert self.sweep_id is not None
        self._sweep_read = now
        before = self.sweep_summary, self.sweep and self.sweep.table_text()
        try:
            self.sweep, _, self.sweep_summary = read_sweep(self.job.store, self.sweep_id)
        except TfcError as exc:
            self.sweep, self.sweep_summary = None, _error_text(exc)
        return before != (self.sweep_summary, self.sweep and self.sweep.table_text())

    def start(self) -> None:
        """Start the polling thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="tfc-panel-watch", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop polling (the panel closed); the job itself goes on."""
        self._stop.set()

    def join(self, timeout: float) -> bool:
        """Wait (bounded) for the thread to end; True if it has."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    def _loop(self) -> None:
        shown = 0.0
        while not self._stop.is_set():
            try:
                changed = self.poll()
            except Exception as exc:  # the store went away, a damaged record ...
                self.error = _error_text(exc)
                self._notify()
                return
            if changed or self._ended or time.monotonic() - shown >= 1.0:
                shown = time.monotonic()
                self._notify()
            if self._ended:
                return
            self._stop.wait(self.poll_s)

    def _notify(self) -> None:
        if self.on_update is not None:
            try:
                self.on_update(self)
            except Exception:
                traceback.print_exc()

    def cancel(self) -> JobRecord | None:
        """Cancel the job (bounded by the backend); errors are kept in ``cancel_error``."""
        self.cancelling = True
        self._notify()
        try:
            record = self.job.cancel()
        except TfcError as exc:
            self.cancel_error = exc.ui_text()
            return None
        finally:
            self.cancelling = False
        self.record = record
        self._notify()
        return record

    def text(self, replica: str | None = None, *, verbose: bool = True) -> str:
        """The kept lines of one replica, or of all of them (prefixed) when None; unless
        ``verbose``, without TensorFlow's start-up chatter and the runtime's status lines, and
        (all of them) a line the replicas printed alike once, as ``[chief, worker-0] ...``."""
        if replica is None:
            kept = list(self.merged if verbose else self.shown)
        else:
            kept = [line for line in self.lines.get(replica, ()) if verbose or not is_noise(line)]
        return "\n".join(kept)

    @property
    def state(self) -> JobState:
        """The job's state at the last poll."""
        return self.record.state
