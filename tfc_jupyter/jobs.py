"""Launching planned jobs, and following them: job folders, handles, logs.

:func:`launch` is the one function every edge calls to run a Plan. It writes the job folder
(script, source map, spec, requirements; owner-only), records the job, and hands it to the backend.
:class:`Job` is what ``%%tfc_run`` returns: ``id``, ``state``, ``logs()``, ``follow()``,
``wait()``, ``cancel()``, like tfc.run's ``job_id`` but alive.
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import importlib.util
import json
import os
import shutil
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from tfc_runtime.protocol import RUN_CELL_MARK, output_mark

from . import backends, registry
from .backends import Backend
from .config import Settings, current_settings
from .errors import BackendError, JobConflict, SpecError, TfcError
from .events import JOB_ENDED
from .job import catalog
from .job.spec import MAX_LABELS
from .planner.plan import Plan
from .returns import border, notify
from .returns.outcome import restart_count, results_of, summary_line
from .returns.results import ResultFeed, Results, finite_number, loss_name
from .returns.results import parse as parse_result
from .store import logs
from .store.logs import LogTail, Merger
from .store.records import REPORT_KEY, JobRecord, JobState, JobStore, default_home, new_job_id
from .util.files import disk_full, is_disk_full, write_private
from .util.pidfds import nap
from .util.tables import table

SHOWN_BATCH = 1000
"""Lines a follower writes out at once while it reads a backlog (memory stays bounded)."""
POLL_S = 0.2  # how often a follower reads the job's record (its state)
LOG_POLL_S = 0.05  # how often it reads the log files: a print shows within about this
QUICK_POLL_S = 0.01  # the logs, for the first QUICK_S of a follow: a short job's first line
QUICK_S = 2.0  # shows within 10 ms, not up to 50
SHORT_S = 30.0  # until then the record is read every LOG_POLL_S, then every POLL_S. A job's
# end is seen at once: a follower wakes when the job's watcher, which records it, exits (nap).


def poll_delays(started: float, now: float) -> tuple[float, float]:
    """``(record, logs)``: how long a follower that started at ``started`` waits between reads
    of the job's record and of its logs at ``now`` (monotonic seconds): the logs every 10 ms at
    first, when a launch is being watched for its first line, then every :data:`LOG_POLL_S`;
    the record every :data:`LOG_POLL_S`, and after :data:`SHORT_S` every :data:`POLL_S` (the
    watcher's exit wakes the follower at the job's end: :func:`watcher_pids`)."""
    elapsed = now - started
    logs = QUICK_POLL_S if elapsed < QUICK_S else LOG_POLL_S
    return (LOG_POLL_S if elapsed < SHORT_S else POLL_S), logs


def watcher_pids(rec: JobRecord) -> list[int]:
    """The pid of the process that watches the job on this machine and records its end (the
    local supervisor, the docker or Vertex AI watcher): a follower wakes when it exits."""
    pid = rec.handle.get("watcher_pid")
    return [pid] if isinstance(pid, int) and pid > 0 and not rec.state.is_terminal() else []


def store_for(home: str | Path | None = None) -> JobStore:
    """The job-record store under ``home`` (default: the configured home, ``c.TfcConfig.home``
    or ``TFC_JUPYTER_HOME``, else the Jupyter data dir)."""
    if not home:
        home = current_settings().get("home")
    base = Path(home) if home else default_home()
    return JobStore(base / "jobs.sqlite")


def backend_for(name: str, store: JobStore, settings: Settings | None = None) -> Backend:
    """The backend object for a backend name (imported only when used; see
    :mod:`tfc_jupyter.registry`)."""
    return backends.get(name, store, settings)


def job_dir_files(plan: Plan) -> dict[str, str]:
    """What the job folder holds at launch: script, source map, requirements, spec."""
    return {
        "script.py": plan.script.text,
        "script.map.json": plan.source_map_text(),
        "requirements.txt": "".join(f"{r}\n" for r in plan.requirements),
        "job.json": json.dumps(plan.summary(), indent=2, default=str),
    }


def write_job_dir(plan: Plan, job_dir: Path) -> None:
    """The job folder: script, source map, spec, requirements, logs/, status/, errors/."""
    job_dir.mkdir(mode=0o700, parents=True, exist_ok=False)
    for sub in ("logs", "status", "errors"):
        (job_dir / sub).mkdir(mode=0o700)
    for name, text in job_dir_files(plan).items():
        write_private(job_dir / name, text)


def sweep_refusal(plan: Plan, *, driven: bool = False) -> SpecError | None:
    """Why ``plan`` cannot launch as one job (None: it can): a sweep whose backend does not run
    it as a job of its own is trials that a process of this machine drives, not one job (one
    job would run the notebook's own values, once). ``driven``: the caller starts a driver for
    it (the jobs API: :mod:`tfc_jupyter.trials.driver`), so only a sweep that nothing here can
    drive is refused (Optuna missing). The jobs API and the panel say it before Launch."""
    if plan.sweep is None or registry.traits(plan.spec.backend).tunes:
        return None
    if driven:
        if importlib.util.find_spec("optuna") is not None:
            return None
        return SpecError(
            "a sweep here needs Optuna, which is not installed where the server runs",
            "pip install 'tfc_jupyter[sweep]' (or optuna) in the server's environment",
            field="sweep",
        )
    return SpecError(
        f"a sweep on {registry.traits(plan.spec.backend).label} runs as trials that the "
        "%%tfc_run cell or tfc-jupyter run drives, not as one job launched from here",
        "run the cell with its --sweep flags (or tfc-jupyter run), or use --backend vertex, "
        "which runs a sweep as a job of its own",
        field="sweep",
    )


def _sweep_labelled(plan: Plan, job_id: str) -> Plan:
    """A sweep its backend runs as one job (a tuning job) carries its own id as its sweep's
    label (:data:`registry.SWEEP_LABEL`): the sidebar lists it as a sweep, and ``GET
    /sweeps/ID`` serves its trials. Any other plan is as it was."""
    labels = plan.spec.labels
    if plan.sweep is None or not registry.traits(plan.spec.backend).tunes:
        return plan
    if len(labels) >= MAX_LABELS or registry.SWEEP_LABEL in dict(labels):
        return plan  # no room left for ours, or the user named it: theirs stands
    spec = plan.spec.evolve(labels=(*labels, (registry.SWEEP_LABEL, job_id[-63:])))
    return dataclasses.replace(plan, spec=spec)


def launch(plan: Plan, *, store: JobStore | None = None) -> Job:
    """Run a planned job on its backend; returns at once with a :class:`Job`.

    Raises:
        TfcError: the backend refuses the job (missing requirements, TPU on a CPU machine ...).
    """
    refusal = sweep_refusal(plan)
    if refusal is not None:
        raise refusal
    store = store or store_for()
    backend = backend_for(plan.spec.backend.value, store, plan.settings)
    if plan.refused is not None:  # the verdict the plan already holds (Client.plan)
        raise plan.refused
    if not plan.checked:
        backend.check(plan.spec)
    job_id = new_job_id(plan.spec.name)
    plan = _sweep_labelled(plan, job_id)
    job_dir = store.path.parent / "jobs" / job_id
    try:
        store.path.parent.joinpath("jobs").mkdir(mode=0o700, exist_ok=True)
        write_job_dir(plan, job_dir)
        if plan.selection.received is not None:  # names from the kernel (notebook/carry.py)
            shutil.move(str(plan.selection.received), job_dir / "received")
        # the kernel's own copy of its run cell, outside the job folder (tfc_jupyter.returns.border)
        border.keep(store.path.parent, job_id, plan.script.text, plan.source_map_text())
    except FileExistsError:  # another job's folder: never touch it
        raise BackendError(f"the job folder {job_dir} exists already", "launch again") from None
    except OSError as exc:  # a full disk ...: no half-written folder stays behind
        shutil.rmtree(job_dir, ignore_errors=True)
        raise _folder_error(exc, job_dir, plan) from None
    try:  # a folder is never left without its record
        record = store.create(
            JobRecord(
                id=job_id,
                name=plan.spec.name,
                backend=plan.spec.backend.value,
                state=JobState.QUEUED,
                spec=plan.spec.to_dict(),
                handle={},
                job_dir=str(job_dir),
                log_dir=str(job_dir / "logs"),
                notebook=str(plan.selection.notebook) if plan.selection.notebook else None,
                cell_id=plan.selection.cell_id,
                owner_pid=os.getpid(),
            )
        )
    except TfcError:  # the job store is full, locked ...
        shutil.rmtree(job_dir, ignore_errors=True)
        raise
    try:
        backend.submit(record, plan)
        return Job(job_id, store)
    except KeyboardInterrupt:  # Ctrl-C during the launch: what started is stopped, and said
        with contextlib.suppress(Exception):
            Job(job_id, store).cancel()
        raise
    except Exception as exc:
        store.transition(job_id, JobState.FAILED, error=f"launch failed: {exc}")
        if isinstance(exc, OSError):  # the job folder (launch file, logs) on a full disk ...
            raise _folder_error(exc, job_dir, plan) from None
        raise


def _folder_error(exc: OSError, job_dir: Path, plan: Plan) -> TfcError:
    """An OSError writing the job folder, as one line naming the fix (a full disk: where, how
    much is free and about how much the folder needs)."""
    if is_disk_full(exc):
        need = sum(len(t.encode()) for t in job_dir_files(plan).values()) + _LOG_ROOM
        return BackendError(
            f"cannot write the job folder: {disk_full(job_dir, need)}",
            "free some disk space there, or set TFC_JUPYTER_HOME to a folder on another disk",
        )
    reason = exc.strerror or str(exc)
    return BackendError(
        f"cannot write the job folder {job_dir}: {reason}",
        "check that you can write it, or set TFC_JUPYTER_HOME to another folder",
    )


_LOG_ROOM = 1 << 20  # logs and status files a short job writes at start


def draws_colour(stream: Any) -> bool:
    """Whether ``stream`` shows terminal colour codes as colours: a terminal, or a notebook
    cell (Jupyter draws them). Elsewhere (a pipe, a file) they are stripped."""
    if type(stream).__module__.startswith(("ipykernel", "tfc_jupyter.returns.cell")):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # closed
        return False


class Job:
    """A handle on one job: state, logs, wait, cancel. Cheap to create; reads the records."""

    def __init__(
        self, job_id: str, store: JobStore | None = None, settings: Settings | None = None
    ) -> None:
        self.store = store or store_for()
        self.settings = settings
        self.id = self.store.get(job_id).id
        self._backend: Backend | None = None

    def backend(self, name: str) -> Backend:
        """The job's backend, made once (a follower asks for it at every poll)."""
        if self._backend is None:
            self._backend = backend_for(name, self.store, self.settings)
        return self._backend

    def record(self) -> JobRecord:
        """The current record (refreshed by the backend, e.g. a dead supervisor noticed)."""
        rec = self.store.get(self.id)
        if not rec.state.is_terminal():
            rec = self.backend(rec.backend).refresh(rec)
        return rec

    @property
    def state(self) -> JobState:
        """The job's state now."""
        return self.record().state

    def logs(self, replica: str | None = None) -> str:
        """Everything the replicas printed so far, prefixed by replica."""
        return "\n".join(self.log_lines(replica))

    def log_lines(self, replica: str | None = None) -> Iterator[str]:
        """:meth:`logs` line by line, read a chunk at a time (a log of any size)."""
        tail = LogTail(Path(self.store.get(self.id).log_dir))
        for r, line in tail.lines(final=True):
            if replica in (None, r):
                yield f"[{r}] {line}"

    def log_note(self) -> str | None:
        """Why the job's log files may not hold its latest lines (no watcher follows it, its
        logs cannot be read now, or were not read to the end), or None."""
        from .backends import watched  # the backends' common part

        return watched.log_note(self.store.get(self.id))

    def results(self) -> Results:
        """What the job reported so far: Keras epochs, saved models, TensorBoard folders."""
        return results_of(self.store.get(self.id))

    @property
    def metrics(self) -> list[dict[str, Any]]:
        """The chief's loss and metrics for each Keras epoch so far, one dict per epoch:
        ``{"fit": 0, "epoch": 1, "loss": 0.31, "accuracy": 0.9, "val_loss": ...}`` (``fit``
        counts the code's ``fit`` calls). A custom training loop's epochs have ``fit`` -1 and
        its Keras metrics' values at each reset (``{"fit": -1, "epoch": 1, "train_loss": ...}``).
        ``pandas.DataFrame(job.metrics)`` tabulates them. Empty for code that keeps no Keras
        metrics."""
        return [
            {"fit": e["fit"], "epoch": e["epoch"], **e["metrics"]} for e in self.results().epochs
        ]

    @property
    def model_dir(self) -> str | None:
        """Where the job saved its model: the path of its last ``model.save``, ``model.export``
        or ``tf.saved_model.save``, else the job's ``AIP_MODEL_DIR`` (``--base-output-dir``),
        else the job folder's ``model/`` when the code wrote there, else the model its
        ``%%tfc_run`` cell trained (saved when the cell ended), else None."""
        return model_dir(self.store.get(self.id), self.results())

    def load_model(self) -> Any:
        """The model the job saved, loaded in this process: a ``.keras`` or ``.h5`` file with
        the Keras the job saved it with, a SavedModel folder with ``tf.saved_model.load``; one
        saved under ``gs://`` (Vertex AI) is downloaded into the job folder first.

        Raises:
            TfcError: the job saved no model, or it is not where this machine can read it.
        """
        from .returns.results import load_saved

        rec, results = self.store.get(self.id), self.results()
        return load_saved(rec, results, model_dir(rec, results), self.settings)

    def plot(self) -> str | None:
        """The loss and metrics curves as an SVG image (None before the first epoch ends)."""
        from .returns.plot import svg

        return svg(self.results(), done=self.record().state.is_terminal())

    def follow(
        self,
        *,
        out: TextIO | None = None,
        timeout: float | None = None,
        skip_existing: bool = False,
        on_line: Callable[[str, str], None] | None = None,
        on_result: Callable[[dict[str, Any]], None] | None = None,
        verbose: bool = False,
        from_run_cell: bool = False,
    ) -> JobRecord:
        """Print replica lines as they are written until the job ends (or ``timeout``).

        What the user's code printed is shown; TensorFlow's C++ start-up chatter and the
        runtime's status lines are not (``verbose`` shows them), and a line every replica
        printed alike is shown once, with the replicas named. ``on_line`` instead receives
        every ``(replica, line)`` as written; ``on_result`` receives each result the runtime
        reports (a Keras epoch, a saved model; see :mod:`tfc_jupyter.returns.results`). The log
        files keep every line. A job no watcher follows any more ("not followed (status unknown)")
        is followed again: its backend starts a watcher for it. ``from_run_cell`` (the
        ``%%tfc_run`` cell in the kernel) shows each replica's lines from its run cell's start
        on, as Jupyter shows a cell (the cells above showed theirs where they ran); all of them
        when the run cell never started (a failure in the cells above); a one-replica job's
        lines without its name (``[chief]``), as the cell's own prints.
        """
        rec = self.store.get(self.id)
        again = (
            None
            if rec.state.is_terminal()
            else getattr(self.backend(rec.backend), "follow_again", None)
        )
        if again is not None:
            rec = again(rec)
        shower = _Shower(
            rec,
            out or sys.stdout,
            lambda: self.store.get(self.id).report_key,
            verbose=verbose,
            on_line=on_line,
            on_result=on_result,
            from_run_cell=from_run_cell,
        )
        if skip_existing:
            shower.skip_existing()
        deadline = None if timeout is None else time.monotonic() + timeout
        started = time.monotonic()
        next_state = 0.0
        gone: set[int] = set()  # watcher processes seen ending
        while True:
            first = next(iter(shower.tail.replicas()), "")  # the chief: its bar drawn as it moves
            if time.monotonic() >= next_state:  # the record less often than the (cheap) logs
                rec = self.record()
                done = rec.state.is_terminal()
                next_state = time.monotonic() + poll_delays(started, time.monotonic())[0]
                watcher = [pid for pid in watcher_pids(rec) if pid not in gone]
            now = time.monotonic()
            shower.show(first, done, now)
            if done or (deadline is not None and time.monotonic() > deadline):
                shower.end(now)
                return rec
            if nap(poll_delays(started, time.monotonic())[1], watcher):
                gone.update(watcher)  # woken once: a watcher left unreaped is not waited on
                next_state = 0.0  # the watcher ended: the job's end is recorded; read it now

    def wait(self, timeout: float | None = None) -> JobRecord:
        """Block until the job ends (or ``timeout`` seconds), printing nothing. In a kernel
        with the extension loaded, a job that ended well sets its run cell's names there (see
        :data:`tfc_jupyter.events.JOB_ENDED`), once."""
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        gone: set[int] = set()  # watcher processes seen ending
        while True:
            rec = self.record()
            if rec.state.is_terminal():
                for hook in list(JOB_ENDED):
                    hook(self, rec)
                return rec
            if deadline is not None and time.monotonic() > deadline:
                return rec
            watcher = [pid for pid in watcher_pids(rec) if pid not in gone]
            if nap(poll_delays(started, time.monotonic())[0], watcher):
                gone.update(watcher)  # woken once: a watcher left unreaped is not waited on

    def cancel(self) -> JobRecord:
        """Stop every process of the job."""
        rec = self.record()
        if rec.state.is_terminal():
            raise JobConflict(
                f"job {self.id} already {rec.state.value}",
                "nothing to cancel; %tfc_jobs lists running jobs",
            )
        return self.backend(rec.backend).cancel(rec)

    def summary_line(self) -> str:
        """``<id>: succeeded in 12.3 s`` or the failure with its notebook cell; a metric that
        became NaN or infinite is said (``; loss is NaN from epoch 3``)."""
        return summary_line(self.record())

    def __repr__(self) -> str:
        rec = self.record()
        return f"<Job {rec.id} {rec.backend} {rec.state.value} {rec.elapsed:.1f}s>"

    def _ipython_display_(self) -> None:
        """In a notebook, an output that follows the job to its end (a ``--no-wait`` handle
        does not stay "pending"); elsewhere its state now."""
        from IPython import get_ipython
        from IPython.display import display

        from .returns.cell import Following, in_notebook

        if in_notebook(get_ipython()) and not self.record().state.is_terminal():
            Following(self)
        else:
            display({"text/plain": repr(self), "text/html": self._repr_html_()}, raw=True)

    def _repr_html_(self) -> str:
        rec = self.record()
        color = {"succeeded": "#1a7f37", "failed": "#cf222e", "cancelled": "#6e7781"}.get(
            rec.state.value, "#0969da"
        )
        links = "".join(
            f" &middot; <a href='{html.escape(u)}' target='_blank'>{label}</a>"
            for label, u in (
                ("Vertex console", rec.console_url),
                ("TensorBoard", rec.tensorboard_url),
            )
            if u
        )
        said = rec.error if rec.state is not JobState.SUCCEEDED else None
        if rec.state is JobState.CANCELLED and said == "cancelled":
            said = None  # a cancel you asked for is no error, and says no more
        tone = "#cf222e" if rec.state is JobState.FAILED else "#6e7781"
        error = f"<div style='color:{tone}'>{html.escape(said)}</div>" if said else ""
        return (
            f"<div><code>{html.escape(rec.id)}</code> on <b>{rec.backend}</b>: "
            f"<b style='color:{color}'>{rec.state.value}</b> "
            f"({rec.elapsed:.1f} s){links}{error}</div>"
        )


HELD_LINES = 200
"""Lines of a replica's cells above the run cell kept to show if its run cell never starts
(the latest ones: the context of a failure there)."""
_STARTED: deque[str] = deque(maxlen=0)  # a replica whose run cell started: nothing held


class _Shower:
    """What :meth:`Job.follow` has read of a job's logs and reports, and shows: the lines the
    user's code printed (merged across replicas), a progress bar drawn live, and each report
    once the chief's lines printed before it are shown."""

    def __init__(
        self,
        rec: JobRecord,
        stream: TextIO,
        report_key: Callable[[], str | None],
        *,
        verbose: bool,
        on_line: Callable[[str, str], None] | None,
        on_result: Callable[[dict[str, Any]], None] | None,
        from_run_cell: bool = False,
    ) -> None:
        self.stream = stream
        self.ansi = draws_colour(stream)
        self.tail = LogTail(Path(rec.log_dir))
        self.feed = ResultFeed(rec.log_dir)
        self.in_logs = registry.traits(rec.backend).reports_in_logs  # else a look-alike is a line
        self.merger = Merger(replica_count(rec) if not verbose else 1)
        self.verbose, self.on_line, self.on_result = verbose, on_line, on_result
        self._report_key = report_key
        self._keys: list[str | None] = []
        self.rewind, self.bar = "", ""  # a progress bar drawn live (its line not ended yet)
        self.pending: list[dict[str, Any]] = []  # reports waiting for lines printed before them
        self.marked = 0  # the last output mark line the chief wrote (a pipe: docker)
        # The run cell in the kernel: each replica's lines before its run cell starts (the cells
        # above, which showed theirs where they ran) are held, and shown only if it never starts.
        self.held: dict[str, deque[str]] | None = {} if from_run_cell else None
        # A one-replica job's run cell shows its lines as Jupyter shows a cell's, without the
        # replica's name (a multi-replica job's lines say which replica printed them).
        self.bare = from_run_cell and replica_count(rec) == 1

    def report_key(self) -> str | None:
        """The job's report key, read once a report line comes (the launch keeps it)."""
        if not self._keys:
            self._keys.append(self._report_key())
        return self._keys[0]

    def skip_existing(self) -> None:
        """Read past what the job wrote so far, showing none of it."""
        for replica, line in self.tail.lines():  # a chunk at a time, never held whole
            if self.held is not None and line.rstrip() == RUN_CELL_MARK:
                self.held[replica] = _STARTED  # its run cell started before this follow
        self.feed.read()

    def write(self, lines: list[tuple[list[str], str]]) -> None:
        """Write shown lines, each over a live bar still on screen."""
        for names, said in lines:
            self.stream.write(f"{self.rewind}{said if self.bare else logs.said(names, said)}\n")
            self.rewind, self.bar = "", ""

    def show(self, first: str, done: bool, now: float) -> None:
        """Show what the replicas wrote since the last call (``first``: the chief), the reports
        now due, and the chief's line being written."""
        if self.on_result is not None:
            self.pending += self.feed.read()
            _placed(self.pending, self.marked, 0)  # their mark lines were read: due now
        shown = self._read_lines(first, done, now)
        self.write(shown + self.merger.ready(now, final=done))
        if self.pending:
            self.stream.flush()
            at = self.tail.offsets.get(first, 0)
            self.pending = _release(self.pending, at, done, self.on_result)
        if self.ansi and not self.on_line and not done:
            self._draw_bar(first)
        self.stream.flush()

    def end(self, now: float) -> None:
        """Write the lines the merger still holds: the follow ends. The lines held of a
        replica whose run cell never started come first: they are the context of its end."""
        for replica, lines in (self.held or {}).items():
            for line in lines:
                self.write(self._merged(replica, line, now))
        self.held = None
        self.write(self.merger.ready(now, final=True))
        self.stream.flush()

    def _merged(self, replica: str, line: str, now: float) -> list[tuple[list[str], str]]:
        """A raw log line as shown (none: a hidden one), through the merger of alike lines:
        the lines now ready to write."""
        text = logs.shown(line, verbose=self.verbose)
        if text is None:
            return []
        safe = logs.colours_only(text) if self.ansi else logs.printable(text)
        return self.merger.add(replica, safe, now)

    def _holds(self, replica: str, line: str) -> bool:
        """Whether ``line`` is held (printed by the cells above the run cell, or the mark that
        ends them): see :data:`~tfc_runtime.protocol.RUN_CELL_MARK`."""
        if self.held is None or self.held.get(replica) is _STARTED:
            return False
        if line.rstrip() == RUN_CELL_MARK:
            self.held[replica] = _STARTED
            return True
        self.held.setdefault(replica, deque(maxlen=HELD_LINES)).append(line)
        return True

    def _read_lines(self, first: str, done: bool, now: float) -> list[tuple[list[str], str]]:
        """Read the replicas' new lines, a chunk at a time: hand each on (``on_line``, a report
        line to ``on_result``), release the reports printed after the chief's lines read so
        far; return the lines to show that are not written yet."""
        shown: list[tuple[list[str], str]] = []
        chief_at = self.tail.offsets.get(first, 0)  # where the chief's new lines start
        for replica, line in self.tail.lines(final=done):  # a chunk at a time, never whole
            if replica == first and (mark := output_mark(line)) is not None:
                self.marked = max(self.marked, mark)
                _placed(self.pending, self.marked, chief_at)
            if self.pending and replica == first and _due(self.pending, chief_at):
                self.write(shown)  # what was printed before the report, first
                shown = []
                self.stream.flush()
                self.pending = _release(self.pending, chief_at, False, self.on_result)
            if self.pending and replica == first:  # positions matter only while reports wait
                chief_at += len(line.encode("utf-8", "replace")) + 1
            if (
                self.on_result is not None
                and self.in_logs
                and replica == first
                and (found := parse_result(line, self.report_key())) is not None
            ):
                self.on_result(found)
            if self.on_line:
                self.on_line(replica, line)
            elif self._holds(replica, line):
                continue
            else:
                shown += self._merged(replica, line, now)
                if len(shown) >= SHOWN_BATCH:  # a backlog of any size in bounded memory
                    self.write(shown)
                    shown = []
        return shown

    def _draw_bar(self, first: str) -> None:
        """The chief's line being written (a progress bar), redrawn as Jupyter shows it."""
        if self.held is not None and self.held.get(first) is not _STARTED:
            return  # the cells above the run cell: their bar showed where they ran
        live = logs.shown(self.tail.partial(first), verbose=self.verbose) if first else None
        live = logs.colours_only(live) if live else live
        if live and live != self.bar:
            self.stream.write(f"\r{'' if self.bare else f'[{first}] '}{live}")
            self.rewind, self.bar = "\r", live


def _due(pending: list[dict[str, Any]], chief_at: int) -> bool:
    """Whether the first waiting report was made before the chief's line at ``chief_at``."""
    return not _waits(pending[0], chief_at)


def _waits(event: dict[str, Any], chief_at: int) -> bool:
    """Whether a report waits for lines the chief printed before it: its ``log_offset`` is
    past ``chief_at``, or its output mark line (``log_mark``) is not read yet."""
    at = event.get("log_offset")
    if isinstance(at, int):
        return at > chief_at
    return isinstance(event.get("log_mark"), int)


def _placed(pending: list[dict[str, Any]], marked: int, chief_at: int) -> None:
    """The reports whose output mark line has been read (``log_mark`` up to ``marked``) are
    placed where that line is (``chief_at``)."""
    for event in pending:
        mark = event.get("log_mark")
        if isinstance(mark, int) and mark <= marked and "log_offset" not in event:
            event["log_offset"] = chief_at


def _release(
    pending: list[dict[str, Any]],
    chief_at: int,
    done: bool,
    on_result: Callable[[dict[str, Any]], None] | None,
) -> list[dict[str, Any]]:
    """Hand on the reports whose chief log position (``log_offset``: what the chief had printed
    when it made them, where its output goes to a file) has been read, in order; the rest wait
    (all go once the job has ended). A cell's figure comes after the lines printed before it."""
    for i, event in enumerate(pending):
        if not done and _waits(event, chief_at):
            return pending[i:]
        if on_result is not None:
            on_result(event)
    return []


def model_dir(rec: JobRecord, results: Results) -> str | None:
    """Where a job saved its model (see :attr:`Job.model_dir`), from its record and results."""
    if results.model_dir:
        return results.model_dir
    base = (rec.spec or {}).get("base_output_dir")
    if base:
        return f"{str(base).rstrip('/')}/model/"
    kept = Path(rec.job_dir) / "model" if rec.job_dir else None  # tfc_runtime.model_dir()
    if kept is not None and kept.is_dir() and any(kept.iterdir()):
        return str(kept)
    from .returns.returned import cell_model

    left = cell_model(rec.job_dir)  # the model the run cell trained, saved when it ended
    return left[0] if left else None


def delete(store: JobStore, job_id: str, *, files: bool = False) -> JobRecord:
    """Remove an ended job's record (an id or unique prefix); with ``files``, its folder too,
    when that folder is this store's own (``<home>/jobs/<id>``). Returns the removed record.

    Raises:
        JobNotFound: no such job. JobConflict: it has not ended (cancel it first).
    """
    record = store.get(job_id)
    if not record.state.is_terminal():
        raise JobConflict(
            f"job {record.id} is {record.state.value}: only an ended job is deleted",
            f"cancel it first (%tfc_cancel {record.id})",
        )
    store.delete(record.id)
    own = (store.path.parent / "jobs").resolve()
    folder = Path(record.job_dir).resolve() if record.job_dir else None
    if files and folder is not None and folder.parent == own and folder.name == record.id:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(own.parent / border.KEPT / record.id, ignore_errors=True)
    return record


def job_dict(record: JobRecord) -> dict[str, Any]:
    """A job record as the API returns it, with elapsed time and cost estimate added.

    ``cost_per_hour`` is the Vertex AI list price of the job's machines (None when one has no
    listed price); ``cost_estimate`` is what the job has cost so far: that rate times the elapsed
    time on Vertex AI (None without a rate), 0 on this machine.
    ``last_metrics`` is the last Keras epoch's loss and metrics (None before one ends);
    ``metric_flags`` says which became NaN or infinite, and where (``loss is NaN from epoch 3``);
    ``restarts`` how many times its replicas were restarted after one died.
    """
    data = record.to_dict()
    spec = _spec(record.spec)
    if spec is not None:
        rate, replicas = spec.cost_per_hour(), spec.replica_count
    else:  # an older or foreign record: add up what it holds
        worker = record.spec.get("worker") or {}
        count = int(record.spec.get("worker_count") or 0)
        chief = record.spec.get("chief") or {}
        rate, replicas = (
            catalog.total_price(
                (finite_number(chief.get("price_per_hour")), 1),
                (finite_number(worker.get("price_per_hour", chief.get("price_per_hour"))), count),
            ),
            1 + count,
        )
    billed = registry.traits(record.backend).billed
    results = results_of(record) if record.log_dir else None
    data.update(
        elapsed=round(record.elapsed, 3),
        terminal=record.state.is_terminal(),
        replica_count=replicas,
        replicas=logs.replicas(Path(record.log_dir)) if record.log_dir else [],
        cost_per_hour=rate,
        cost_estimate=(
            (None if rate is None else round(rate * record.elapsed / 3600, 4)) if billed else 0.0
        ),
        billed=billed,
        last_metrics=results.last if results else None,
        metric_flags=results.flags if results else [],
        restarts=restart_count(record),
        returned_gone=False,  # the jobs API knows its kernels: JobService.job_json
    )
    if REPORT_KEY in data["handle"]:  # what signs the job's reports stays on this machine
        data["handle"] = {k: v for k, v in data["handle"].items() if k != REPORT_KEY}
    told = data["spec"].get("notify")
    if told:  # where a job's end goes may hold a password: masked
        data["spec"] = {**data["spec"], "notify": [notify.shown(str(u)) for u in told]}
    if record.error:  # a browser shows what a job wrote, never its escape sequences
        data["error"] = logs.printable(record.error)
    return data


def _spec(data: Mapping[str, Any]) -> Any:
    """The record's JobSpec, or None when it cannot be rebuilt."""
    from .job.spec import JobSpec

    try:
        return JobSpec.from_dict(data)
    except Exception:
        return None


def replica_count(record: JobRecord) -> int:
    """How many replicas print (from the record's spec; 1 when it cannot say)."""
    spec = record.spec or {}
    try:
        count = 1 + int(spec.get("worker_count") or 0) + int(spec.get("ps_count") or 0)
        return count + (1 if spec.get("evaluator") else 0)
    except (TypeError, ValueError):
        return 1


def refreshed(
    records: list[JobRecord], store: JobStore, settings: Settings | None = None
) -> list[JobRecord]:
    """The records, each unfinished job on this machine checked for life first (cheap: a pid
    check): a job whose supervisor died shows as failed, with why, and its replicas are
    stopped. Vertex AI jobs are shown as recorded (their watcher refreshes them)."""
    out = []
    made: dict[str, Backend] = {}  # one backend per name, the settings read once
    for rec in records:
        if not rec.state.is_terminal() and registry.traits(rec.backend).on_this_machine:
            with contextlib.suppress(TfcError):
                if rec.backend not in made:
                    settings = settings or current_settings()
                    made[rec.backend] = backend_for(rec.backend, store, settings)
                rec = made[rec.backend].refresh(rec)
        out.append(rec)
    return out


def iter_jobs(store: JobStore | None = None, limit: int | None = 50) -> Iterator[JobRecord]:
    """Job records, newest first."""
    yield from (store or store_for()).list(limit=limit)


def jobs_table(records: list[JobRecord]) -> str:
    """An aligned text table of jobs (``%tfc_jobs``, ``tfc-jupyter jobs``)."""
    rows = [("id", "backend", "state", "elapsed", "created", "loss", "error")]
    for rec in records:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(rec.created_at))
        error = logs.printable(rec.error or "")[:60] if rec.state is not JobState.SUCCEEDED else ""
        last = results_of(rec).last if rec.log_dir else None
        name = loss_name(list(last)) if last else None
        loss = f"{last[name]:.4g}" if last and name else ""
        rows.append(
            (rec.id, rec.backend, rec.state.value, f"{rec.elapsed:.0f}s", created, loss, error)
        )
    return table(rows)
