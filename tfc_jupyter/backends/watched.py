"""What backends share when a detached process watches each job (local, docker, vertex).

The watcher (local: the supervisor; docker and vertex: a watcher) owns the job's log files and
its record. The kernel only notices when the watcher died without saying how the job ended, and
asks it to stop on cancel; :class:`WatchedBackend` does both, with a backend-specific cleanup.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BackendError
from ..store.records import CANCEL_ASKED, JobRecord, JobState, JobStore, JobStoreError, JobStoreFull
from ..util.files import disk_full, open_private, write_private
from . import watch_lock
from .launch_file import FILE, Launch
from .watch_loop import DISK_FULL_FIX, outcome_record, reserve_outcome

if TYPE_CHECKING:
    from typing import Self

    from ..config import Settings

WATCHER_LOG = "supervisor.log"
NOT_FOLLOWED = "not_followed"
"""The handle's entry of a job no watcher follows any more (when that was said, a
``time.time()``); its state is kept as last known, never an end the service did not report."""
NOT_FOLLOWED_WORDS = "not followed (status unknown)"
"""How the record's ``error`` and ``watch_note`` of such a job begin."""
QUICK_STARTS = "quick_starts"
"""The handle's count of a watcher's starts since one last ran long enough to settle
(:data:`SETTLED_POLLS` polls): a watcher that ran a long time (days of a job, the machine
restarted now and then) resets it; ``watcher_starts`` counts every start."""
SETTLED_POLLS = 30
"""A watcher that has run this many poll intervals (five minutes at Vertex AI's 10 s poll) has
settled: its start is not counted as a quick one."""


def quick_starts(handle: dict[str, Any]) -> int:
    """A watcher's quick starts in a row (:data:`QUICK_STARTS`; records made before the count
    was kept: every start)."""
    return int(handle.get(QUICK_STARTS, handle.get("watcher_starts", 0)) or 0)


LOG_NOTE = "log_note"
"""The handle's entry saying why the job's log files stopped being updated (its log reads
refused ...); removed when they are read again."""


def not_followed(store: JobStore, job_id: str, why: str) -> JobRecord:
    """Record that no watcher follows the job any more, and why: its state stays what it was
    last seen to be (a job is never recorded as ended unless its service said so); ``error`` and
    the handle's ``watch_note`` say "not followed (status unknown)" with the way to follow it
    again. A record that has ended is left as it is."""

    def note(record: JobRecord) -> dict[str, Any]:
        if record.state.is_terminal():
            return {}
        said = f"{NOT_FOLLOWED_WORDS}: {why}; the job may still run"
        said += f" ({record.console_url})" if record.console_url else ""
        said += (
            f"; `tfc-jupyter logs {record.id} --follow` or `%tfc_attach {record.id}` "
            "follows it again"
        )
        return {
            "error": said[:1000],
            "handle": {**record.handle, NOT_FOLLOWED: time.time(), "watch_note": said[:1000]},
        }

    return store.update(job_id, mutate=note)


def followed_again(record: JobRecord) -> dict[str, Any]:
    """The fields that take back what :func:`not_followed` said (for ``update``'s mutate)."""
    handle = {k: v for k, v in record.handle.items() if k != NOT_FOLLOWED}
    if str(handle.get("watch_note", "")).startswith(NOT_FOLLOWED_WORDS):
        del handle["watch_note"]
    fields: dict[str, Any] = {"handle": handle}
    if (record.error or "").startswith(NOT_FOLLOWED_WORDS):
        fields["error"] = None
    return fields


def log_note(record: JobRecord) -> str | None:
    """Why the job's log files may not hold its latest lines, or None: no watcher follows the
    job ("frozen"), its watcher cannot read the logs now (the handle's :data:`LOG_NOTE`), or,
    for a job that ended, the logs were not read to the end."""
    said = record.handle.get(LOG_NOTE)
    if record.state.is_terminal():
        return f"the log may be incomplete: {said}" if said else None
    pid = record.handle.get("watcher_pid")
    if not pid or not record.job_dir:  # no watcher started yet
        return None
    held = watch_lock.watched(Path(record.job_dir))
    if not (held if held is not None else alive(int(pid))):
        when = _last_written(record)
        since = f" since {time.strftime('%H:%M', time.localtime(when))}" if when else ""
        return (
            f"the log is frozen{since}: no watcher follows job {record.id} (its watcher, pid "
            f"{pid}, is not running); `tfc-jupyter logs {record.id} --follow` or "
            f"`%tfc_attach {record.id}` follows it again"
        )
    return f"the log is not being updated: {said}" if said else None


def _last_written(record: JobRecord) -> float | None:
    """When the job's log files were last written (None: no log yet)."""
    times = []
    for path in Path(record.log_dir or record.job_dir).glob("*.log"):
        with contextlib.suppress(OSError):
            times.append(path.stat().st_mtime)
    return max(times) if times else None


def write_launch(job_dir: Path, launch: Launch) -> None:
    """Write the watcher's instructions, ``launch.json``, owner-only (it holds the job's env),
    and the room for how the job ends (:func:`~.watch_loop.reserve_outcome`)."""
    write_private(job_dir / FILE, json.dumps(launch.to_json(), indent=1))
    reserve_outcome(job_dir)


def start_watcher(module: str, job_dir: Path, env: dict[str, str], what: str = "watcher") -> int:
    """Start ``python -m <module> JOB_DIR`` detached (its own session), logging to
    ``logs/supervisor.log``; returns its pid.

    Raises:
        BackendError: the process could not be started.
    """
    log = open_private(job_dir / "logs" / WATCHER_LOG)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, str(job_dir)],
            cwd=str(job_dir),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    except OSError as exc:
        raise BackendError(
            f"could not start the job's {what}: {exc}",
            "check that this Python can run subprocesses",
        ) from None
    finally:
        log.close()
    return proc.pid


def started_at(pid: int) -> float | None:
    """The start time of process ``pid`` in seconds since the epoch, as psutil says it; None
    when it is gone. On Linux read from ``/proc`` as psutil reads it (its start in clock ticks
    after boot, plus the boot time), without importing psutil on every launch."""
    try:
        return _proc_started(pid)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, IndexError):
        pass
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, ValueError):
        return None


def _proc_started(pid: int) -> float:
    """``started_at`` from ``/proc/<pid>/stat`` (its 22nd field, counted after the command's
    closing parenthesis, as psutil counts) and ``/proc/stat``'s ``btime``."""
    if pid <= 0:
        raise ValueError(pid)
    with open(f"/proc/{pid}/stat", "rb") as fh:
        data = fh.read()
    ticks = float(data[data.rindex(b")") + 2 :].split()[19])
    with open("/proc/stat", "rb") as fh:
        boot = next((float(line.split()[1]) for line in fh if line.startswith(b"btime")), None)
    if boot is None:
        raise ValueError("no btime in /proc/stat")
    return ticks / os.sysconf("SC_CLK_TCK") + boot


def same_process(pid: int, started: float | None) -> bool:
    """True when ``pid`` is still the process that started at ``started`` (a recycled pid, or
    a record someone edited, is not signalled). Records without a start time: alive is enough."""
    now = started_at(pid)
    if now is None:
        return False
    return started is None or abs(now - float(started)) < 0.05


def mark_pending(store: JobStore, job_id: str, handle: dict[str, Any]) -> JobRecord:
    """After starting a job's watcher: PENDING, with ``handle`` (the watcher's pid ...).

    The watcher may already have moved the job on (marked it RUNNING with its replicas' pids,
    or even ended it) by the time this runs: then the state and what the watcher wrote in the
    handle are kept, and only the missing keys are added. A plain ``transition(PENDING)`` would
    take a running job back to PENDING and drop its replicas' pids.
    """

    def merge(record: JobRecord) -> dict[str, Any]:
        fields: dict[str, Any] = {"handle": {**handle, **record.handle}}
        if record.state is JobState.QUEUED:
            fields["state"] = JobState.PENDING
        return fields

    return store.update(job_id, mutate=merge)


def launch_interrupted(record: JobRecord) -> bool:
    """True when the process that launched a still QUEUED job is gone (no watcher can come)."""
    owner = record.owner_pid
    return owner is not None and time.time() - record.updated_at > 2 and not alive(owner)


def alive(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie counts as ended)."""
    import psutil

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def last_line(path: Path, limit: int = 300) -> str:
    """The last non-blank line of a text file, or ``""``."""
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return lines[-1][:limit] if lines else ""


def package_pythonpath(*extra: str) -> str:
    """PYTHONPATH that lets a detached ``python -m tfc_jupyter...`` import this very package."""
    here = Path(__file__).resolve().parents[2]
    parts = [str(here), *extra, os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


def watcher_error(record: JobRecord, what: str) -> str:
    """``"the job's <what> process ended unexpectedly (killed?): <its last log line>"``."""
    last = last_line(Path(record.job_dir) / "logs" / WATCHER_LOG)
    return f"the job's {what} process ended unexpectedly (killed?)" + (f": {last}" if last else "")


def _stop_watcher(
    pid: int, started: float | None, ended: Callable[[], bool], timeout: float
) -> bool:
    """SIGTERM a job's watcher, if it is still the process its record started; wait (bounded)
    for ``ended()``; then SIGKILL it, if still that process. True when ``ended()`` came in time
    (False too when the watcher was already gone: the caller cleans up after it)."""
    if not (alive(pid) and same_process(pid, started)):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ended():
            return True
        time.sleep(0.1)
    if same_process(pid, started):
        os.kill(pid, signal.SIGKILL)
    return False


def _stop_until_gone(record: JobRecord, timeout: float) -> None:
    """Stop the record's watcher as a cancel does, waiting (bounded) until its process is gone."""
    pid = record.handle.get("watcher_pid")
    if pid:
        _stop_watcher(
            int(pid),
            record.handle.get("supervisor_started"),
            lambda: not alive(int(pid)),
            timeout,
        )


class WatchedBackend:
    """``refresh`` and ``cancel`` for backends whose watcher pid is ``handle["watcher_pid"]``.

    Subclasses set ``watcher`` (its name in messages) and implement :meth:`cleanup`, which
    removes what the job left behind (replica processes, containers) once its watcher is gone.
    """

    watcher = "supervisor"

    def __init__(self, store: JobStore, *, startup_timeout: float | None = None) -> None:
        self.store = store
        if startup_timeout is None:
            from ..config import current_settings

            startup_timeout = current_settings().seconds("startup_timeout")
        self.startup_timeout = startup_timeout

    @classmethod
    def from_settings(cls, store: JobStore, settings: Settings) -> Self:
        """The backend for ``store``, with the settings' start-up time limit."""
        return cls(store, startup_timeout=settings.seconds("startup_timeout"))

    def cleanup(self, record: JobRecord) -> None:
        """Remove every process or container of the job (its watcher is gone)."""
        raise NotImplementedError

    def refresh(self, record: JobRecord) -> JobRecord:
        """Mark a job FAILED when its watcher died without saying how the job ended, or when
        the process launching it died before the watcher started (a kernel killed during an
        image build): such a job would otherwise stay QUEUED for ever. A job whose watcher
        kept how it ended in the job folder (``outcome.json``) is that end, recorded here when
        the watcher could not (a full disk), else told as it is (:meth:`record_end`)."""
        if record.state.is_terminal():
            return record
        ended = outcome_record(record)
        if ended is not None:  # the watcher stopped every process of the job before keeping it
            return self.record_end(ended)
        pid = record.handle.get("watcher_pid")
        if not pid and record.state is JobState.QUEUED and launch_interrupted(record):
            fresh = self.store.get(record.id)
            if fresh.state is JobState.QUEUED and not fresh.handle.get("watcher_pid"):
                return self.store.transition(
                    record.id,
                    JobState.FAILED,
                    error=f"the launch was interrupted: the process that launched the job (pid "
                    f"{record.owner_pid}) ended before the job started; launch it again",
                )
            return fresh
        started = record.handle.get("supervisor_started")
        if time.time() - record.updated_at <= 2:  # too young to call its watcher dead: no
            return record  # process lookups (a follower asks every 10 ms while a job starts)
        gone = pid is not None and (not alive(int(pid)) or not same_process(int(pid), started))
        if gone:
            fresh = self.store.get(record.id)
            if fresh.state.is_terminal():
                return fresh
            self.cleanup(fresh)
            ended = outcome_record(fresh)  # the watcher ended the job, the store was locked then
            if ended is not None:
                return self.record_end(ended)
            return self.record_end(
                dataclasses.replace(
                    fresh,
                    state=JobState.FAILED,
                    error=watcher_error(record, self.watcher),
                    ended_at=time.time(),
                )
            )
        return record

    def record_end(self, ended: JobRecord) -> JobRecord:
        """Record how a job ended (``ended``: its state, error, location and, when its watcher
        kept them, exit codes), unless it has ended already (the first end wins). A store that
        cannot be written (a full disk) leaves ``ended`` as it is: what this reader returns is
        still the truth, never "running"."""
        codes = ended.handle.get("exit_codes")
        try:
            return self.store.transition(
                ended.id,
                ended.state,
                error=ended.error,
                error_location=ended.error_location,
                ended_at=ended.ended_at,  # when its watcher kept it, not when it is recorded
                mutate=lambda rec: (
                    {"handle": {**rec.handle, "exit_codes": codes}} if codes is not None else None
                ),
            )
        except JobStoreError as exc:
            if (
                isinstance(exc, JobStoreFull)
                and ended.state is JobState.FAILED
                and "is full" not in (ended.error or "")
                and ended.job_dir
            ):  # the disk may be why its watcher died, too
                full = disk_full(ended.job_dir)
                ended = dataclasses.replace(
                    ended, error=f"{ended.error}; {full}. Fix: {DISK_FULL_FIX}"
                )
            return ended

    def cancel_asked(self, job_id: str) -> bool:
        """A cancel came while the job was being launched: nothing more may start."""
        return self.store.get(job_id).state in CANCEL_ASKED

    def stop_if_cancelled(self, record: JobRecord, *, timeout: float = 20.0) -> None:
        """After the watcher started (``record``: as :func:`mark_pending` left it): a cancel that
        came before the watcher could be found wins now. Its watcher is stopped as a cancel stops
        it, and the record says the job was cancelled during its launch."""
        if record.state not in CANCEL_ASKED:
            return  # a later cancel finds the watcher's pid in the record
        _stop_until_gone(record, timeout)
        self.cleanup(self.store.get(record.id))
        self.store.transition(record.id, JobState.CANCELLED)
        self.store.update(record.id, error="cancelled during its launch: nothing was left running")

    def _cancel_unrecorded(
        self, record: JobRecord, exc: JobStoreError, timeout: float
    ) -> JobRecord:
        """A cancel the store cannot record (a full disk): stop the watcher and every replica
        all the same; the watcher keeps how the job ended in its folder, where every reader
        finds it (:meth:`refresh`), and records it once it can."""
        pid = record.handle.get("watcher_pid")
        if pid:  # until the watcher has stopped the job and kept its end, or is gone
            _stop_watcher(
                int(pid),
                record.handle.get("supervisor_started"),
                lambda: not alive(int(pid)) or outcome_record(record) is not None,
                timeout,
            )
        self.cleanup(record)
        ended = outcome_record(record)
        if ended is not None:
            return self.record_end(ended)
        with contextlib.suppress(JobStoreError):
            return self.store.transition(record.id, JobState.CANCELLED, error="cancelled")
        return dataclasses.replace(
            record,
            state=JobState.CANCELLED,
            error=f"cancelled: its processes are stopped, but the record could not be written "
            f"yet ({exc.message})",
        )

    def cancel(self, record: JobRecord, *, timeout: float = 20.0) -> JobRecord:
        """Ask the watcher to stop everything (SIGTERM); bounded wait, then force it."""
        if record.state.is_terminal():
            return record
        # The record as the cancel leaves it: a watcher that started meanwhile is in it (one
        # that starts after sees the cancel itself: see stop_if_cancelled).
        try:
            record = self.store.transition(record.id, JobState.CANCELLING)
        except JobStoreError as exc:  # a full disk: the job stops all the same
            return self._cancel_unrecorded(record, exc, timeout)
        if record.state.is_terminal():
            return record
        pid = record.handle.get("watcher_pid")

        def ended() -> bool:  # recorded, or kept in the job folder (a full disk)
            return self.store.get(record.id).state.is_terminal() or (
                outcome_record(record) is not None
            )

        if pid and _stop_watcher(pid, record.handle.get("supervisor_started"), ended, timeout):
            return self.refresh(self.store.get(record.id))  # the watcher ended the job itself
        self.cleanup(self.store.get(record.id))
        kept = outcome_record(record)
        if kept is not None:
            return self.record_end(kept)
        try:
            return self.store.transition(record.id, JobState.CANCELLED, error="cancelled")
        except JobStoreError as exc:  # the disk filled up meanwhile: every process is stopped
            return self._cancel_unrecorded(record, exc, timeout)
