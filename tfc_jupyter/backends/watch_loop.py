"""The watch loop shared by the processes that run a job's replicas on this machine.

The local backend's supervisor (processes) and the docker backend's watcher (containers) start
their replicas differently, but decide the job's fate the same way: cancel requested, a replica
failed, every replica done, a replica that never joined the cluster, the job's timeout.
:class:`JobWatcher` holds that decision and the final record update; a subclass starts, polls and
stops its replicas. It imports nothing heavy: the standard library and the job records.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from ..errors import TfcError
from ..returns import notify
from ..store.records import CANCEL_ASKED, JobRecord, JobState, JobStore, JobStoreError, JobStoreFull
from ..util.files import disk_full, is_disk_full, mount_of, write_private
from ..util.pidfds import nap
from .launch_file import Launch

Outcome = tuple[JobState, str | None, str | None]  # state, error, notebook location


@dataclass
class ReplicaState:
    """One replica as the watcher sees it."""

    name: str  # chief, worker-0, ps-0, evaluator-0
    env: dict[str, str]
    daemon: bool  # parameter servers: ended when the others are done
    exit_code: int | None = None  # None while it runs; negative: killed by that signal
    ready: bool = False  # it has joined the cluster (tfc_runtime's ready marker)

    @property
    def task(self) -> str:
        """``<task_type>-<index>``, as tfc_runtime names its status and error files."""
        return "chief-0" if self.name == "chief" else self.name


R = TypeVar("R", bound=ReplicaState)


def _tail(path: Path, lines: int = 12) -> list[str]:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 16384))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


_FAULT_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def _read_small(path: Path, limit: int = 65536) -> str:
    """The start of a small text file the job wrote ("" when missing or unreadable)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _fault_location(job_dir: Path, task: str) -> str | None:
    """The notebook cell and line of the innermost script frame in faulthandler's output
    (``errors/<task>.fault``), mapped through the job's source map."""
    text = _read_small(job_dir / "errors" / f"{task}.fault")
    for m in _FAULT_FRAME.finditer(text):  # faulthandler lists the most recent call first
        if not m.group("file").endswith("script.py"):
            continue
        try:
            smap = json.loads(_read_small(job_dir / "script.map.json", 8 << 20) or "{}")
            cell_line = smap["lines"][int(m.group("line")) - 1]
        except (ValueError, KeyError, IndexError, TypeError):
            return f"script line {m.group('line')}"
        return f"cell {cell_line[0]}, line {cell_line[1]}" if cell_line else None
    return None


def describe_failure(job_dir: Path, name: str, task: str, code: int) -> tuple[str, str | None]:
    """``(error, notebook location)`` of a replica that exited with ``code`` (negative: signal).

    From the runtime's ``errors/<task>.json`` (its one-line summary); for a replica killed by a
    signal, from faulthandler's ``errors/<task>.fault`` or the runtime's ``status/<task>.where``,
    with the replica's last lines; else the last line of its log.
    """
    error_file = job_dir / "errors" / f"{task}.json"
    location = None
    detail = ""
    if error_file.is_file():
        try:
            info = json.loads(error_file.read_text())
            if info.get("cell"):  # "place": a script's "train.py, line 3"
                location = info.get("place") or f"cell {info['cell']}, line {info['line']}"
            detail = info.get("summary") or (
                f"{info.get('type', 'Error')}: "
                + (str(info.get("message", "")).strip().splitlines() or [""])[0]
            )
            detail = detail.strip()
        except (OSError, ValueError):
            pass
    if code < 0 and not detail:
        location = _fault_location(job_dir, task)
        if location is None:
            location = _read_small(job_dir / "status" / f"{task}.where", 200).strip() or None
        tail = [ln.strip() for ln in _tail(job_dir / "logs" / f"{name}.log", 3)]
        detail = f"{_signal_name(-code)}; last lines: " + (" | ".join(tail) or "none")
    if not detail:
        tail = _tail(job_dir / "logs" / f"{name}.log", 1)
        detail = tail[-1] if tail else "no output"
        said = _RUNTIME_SAID.match(detail)  # the runtime's line (its error file not written:
        if said:  # a full disk)
            detail = said.group("summary")
            location = None if said.group("place") == "startup" else said.group("place")
    fix = ""
    said_full = is_disk_full(OSError(detail)) or "[Errno 28]" in detail or "[Errno 122]" in detail
    if said_full or _no_room(job_dir):  # (a full disk may have cut the replica's last lines)
        named = _FULL_PATH.search(detail)  # the file the code was writing, else the job folder
        full = Path(named.group(1)) if named else job_dir
        detail = f"{_RUNTIME_HINT.sub('', detail)} ({disk_full(full)})"  # where, and how full
        fix = f". Fix: {disk_full_fix(full, job_dir)}"
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    where = f" at {location}" if location else ""
    return f"{name} {how}{where}: {detail}"[: 600 - len(fix)] + fix, location


NO_ROOM = 256 << 10
"""Bytes free under which the disk of a job folder is full (its logs and records cannot grow)."""


def _no_room(job_dir: Path) -> bool:
    """True when the disk holding ``job_dir`` has less than :data:`NO_ROOM` bytes free."""
    try:
        return shutil.disk_usage(job_dir).free < NO_ROOM
    except OSError:
        return False


DISK_FULL_FIX = "free some disk space there, or set TFC_JUPYTER_HOME to a folder on another disk"


def disk_full_fix(full: Path, job_dir: Path) -> str:
    """The fix for a job that filled the disk of ``full``: :data:`DISK_FULL_FIX` when that
    disk holds the job's folder (under ``TFC_JUPYTER_HOME``), else where the job writes."""
    with contextlib.suppress(OSError, ValueError):
        if mount_of(full) != mount_of(job_dir):
            return "free some disk space there, or have the job write to another disk"
    return DISK_FULL_FIX


_RUNTIME_SAID = re.compile(r"\[tfc_runtime\] job failed at (?P<place>[^:]+): (?P<summary>.+)")
_RUNTIME_HINT = re.compile(  # tfc_runtime.crash's words for a full disk, said more exactly here
    r" \((?:a disk the job writes to|the disk|the disk holding .+?) is full"
    r"(?: \(\d+ MB free\))?: free some space, or write [^()]*\)$"
)
_FULL_PATH = re.compile(r"(?:No space left on device|Disk quota exceeded): '([^']+)'")


def _signal_name(number: int) -> str:
    """``SIGSEGV (a crash in native code)``-style words for a signal number."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    why = {
        "SIGSEGV": "a crash in native code",
        "SIGKILL": "killed from outside: out of memory, or stopped by hand",
        "SIGABRT": "aborted by native code",
        "SIGBUS": "a crash in native code",
        "SIGFPE": "a crash in native code",
    }.get(name)
    return f"{name} ({why})" if why else name


VERTEX_RESTARTS = 5
"""How many times Vertex AI restarts a replica before it fails the job (the local backend
rehearses it). Source: "Understand the Vertex AI serverless training service", Restart workers
during the training job (cloud.google.com/vertex-ai/docs/training/understanding-training-service,
read 2026-11-24): a VM under maintenance restarts its worker on another VM; a worker that exits
non-zero with a non-permanent error is restarted on the same VM, up to 5 times, then the whole
job is retried up to 3 times; a worker stopped by a common (permanent) error ends the job."""
RESTART_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGHUP})
"""Deaths from outside that Vertex AI answers with a restart: killed (out of memory, by hand),
stopped (VM maintenance, Spot preemption). A Python error, a ``sys.exit`` or a crash in native
code ends the job at once: run again, it would end the same way."""


def restartable(code: int | None) -> bool:
    """True for a replica's exit that the job answers by restarting its replicas."""
    return code is not None and code < 0 and -code in RESTART_SIGNALS


def killed_by(code: int) -> str:
    """``SIGKILL (killed from outside: ...)``: the words for a replica's death by a signal."""
    return _signal_name(-code)


FINISH_DEADLINE_S = 600.0
FULL_DISK_DEADLINE_S = 10.0
"""How long a watcher retries recording the job's end on a full disk (a lock is waited out
for :data:`FINISH_DEADLINE_S`): the outcome is kept in the job folder, and every reader tells
it from there (:func:`outcome_record`) and records it once the disk has room."""
QUICK_POLL_S = 0.01  # the watch loop's poll for the first QUICK_S of a job (then poll_s)
QUICK_S = 2.0
OUTCOME_FILE = "outcome.json"
OUTCOME_ROOM = 8192  # bytes kept for it at launch


def write_outcome(
    job_dir: Path,
    state: JobState,
    error: str | None,
    location: str | None,
    codes: dict[str, int | None],
) -> bool:
    """Keep how the job ended in its folder until the record takes it (owner-only): written
    over the room :func:`reserve_outcome` kept, so it is kept on a full disk too; else atomic.
    True when it was kept."""
    data = {"state": state.value, "error": error, "location": location, "exit_codes": codes}
    text = json.dumps(data).encode()
    with contextlib.suppress(OSError):
        fd = os.open(job_dir / OUTCOME_FILE, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            room = os.fstat(fd).st_size
            if len(text) <= room:
                os.pwrite(fd, text.ljust(room), 0)
                os.fsync(fd)
                return True
        finally:
            os.close(fd)
    try:
        write_private(job_dir / OUTCOME_FILE, text.decode(), atomic=True)
    except OSError:
        return False
    return True


def reserve_outcome(job_dir: Path) -> None:
    """Keep room for the outcome at launch (spaces, read as no outcome yet), so a job that
    ends on a full disk, or is cancelled on one, still says how it ended."""
    with contextlib.suppress(OSError):
        write_private(job_dir / OUTCOME_FILE, " " * OUTCOME_ROOM)


def read_outcome(job_dir: Path) -> dict[str, Any] | None:
    """The outcome a watcher kept in the job folder, None when there is none."""
    try:
        text = (job_dir / OUTCOME_FILE).read_text(encoding="utf-8").strip()
        data = json.loads(text) if text else None  # the room kept at launch: no outcome yet
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("state") else None


def outcome_record(record: JobRecord) -> JobRecord | None:
    """``record`` as the outcome its watcher kept in the job folder says it ended (nothing is
    written), None when there is none. A watcher keeps the outcome once it has stopped every
    process of the job and before it records it: a job whose record cannot be written (a full
    disk) is still listed and followed as it ended, never as running."""
    if not record.job_dir or record.state.is_terminal():
        return None
    kept = read_outcome(Path(record.job_dir))
    if kept is None:
        return None
    try:
        state = JobState(kept["state"])
    except ValueError:
        return None
    if not state.is_terminal():
        return None
    codes = kept.get("exit_codes")
    error, location = kept.get("error"), kept.get("location")
    try:  # when it was kept: the job's end, the same at every read
        ended = os.stat(Path(record.job_dir) / OUTCOME_FILE).st_mtime
    except OSError:
        ended = time.time()
    return dataclasses.replace(
        record,
        state=state,
        error=str(error) if error is not None and state is not JobState.SUCCEEDED else None,
        error_location=str(location) if location is not None else None,
        handle={**record.handle, "exit_codes": codes if isinstance(codes, dict) else {}},
        ended_at=record.ended_at or ended,
        updated_at=max(record.updated_at, ended),
    )


class JobWatcher(Generic[R]):
    """Reads ``launch.json``, watches the replicas, and records how the job ended."""

    poll_s = 0.1
    quick_poll_s = QUICK_POLL_S  # the poll of a job's first QUICK_S seconds
    replicas: list[R]
    launch_type: ClassVar[type[Launch]] = Launch
    """What its ``launch.json`` holds (a subclass reads its own backend's)."""

    def __init__(self, job_dir: Path) -> None:
        self.job_dir = job_dir
        self.launch = self.launch_type.read(job_dir)
        self.job_id: str = self.launch.job_id
        self.store = JobStore(self.launch.store)
        self.cancel_requested = False
        self.max_restarts = self.launch.restarts
        self.restarts = 0

    def _on_term(self, signum: int, frame: Any) -> None:
        self.cancel_requested = True

    def handle_signals(self) -> None:
        """SIGTERM (cancel) and SIGINT end the watch loop, which then stops every replica."""
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)

    def _poll(self) -> None:
        """Update each replica's ``exit_code``."""
        raise NotImplementedError

    def _restart(self, replica: R) -> bool:
        """Start the job's replicas again after ``replica`` was killed (False: this watcher
        does not restart replicas)."""
        return False

    def _cancel_recorded(self) -> bool:
        """The job's record says it is being cancelled. A cancel that came while the job was
        being created stops the replicas itself (this watcher's pid was not recorded yet): a
        replica killed by it is no crash to restart from."""
        try:
            return self.store.get(self.job_id).state in CANCEL_ASKED
        except TfcError:  # the store unreadable: the death is judged as it is
            return False

    def _failure(self, replica: R) -> tuple[str, str | None]:
        """``(error, location)`` for a replica that exited non-zero."""
        return describe_failure(self.job_dir, replica.name, replica.task, replica.exit_code or 0)

    def _live_pids(self) -> list[int]:
        """The process ids of the replicas still running, when this watcher is their parent
        (the watch loop then wakes when one exits): none by default."""
        return []

    def _poll_ready(self) -> None:
        for replica in self.replicas:
            if not replica.ready and (self.job_dir / "status" / f"{replica.task}.ready").exists():
                replica.ready = True

    def watch(self) -> Outcome:
        """Poll until the job's fate is decided."""
        started = joining = time.monotonic()
        startup = self.launch.startup_timeout
        timeout = self.launch.timeout
        while True:
            if self.cancel_requested:
                return JobState.CANCELLED, "cancelled", None
            self._poll()
            self._poll_ready()
            failed = [r for r in self.replicas if r.exit_code not in (None, 0) and not r.daemon]
            killed = [r for r in self.replicas if restartable(r.exit_code)]  # the others' cause
            if killed and self._cancel_recorded():
                return JobState.CANCELLED, "cancelled", None
            if (
                killed
                and self.restarts < self.max_restarts
                and not self.cancel_requested
                and self._restart(killed[0])
            ):
                joining = time.monotonic()
                continue
            if failed:
                error, location = self._failure((killed or failed)[0])
                if self.restarts:
                    error = f"{error} (the job had been restarted {self.restarts} times)"
                return JobState.FAILED, error, location
            if all(r.exit_code == 0 for r in self.replicas if not r.daemon):
                return JobState.SUCCEEDED, None, None
            elapsed = time.monotonic() - started
            waiting = [r.name for r in self.replicas if not r.ready and r.exit_code is None]
            if waiting and time.monotonic() - joining > startup:
                return (
                    JobState.FAILED,
                    f"{', '.join(waiting)} did not join the cluster within {startup:g} s "
                    f"(see logs/{waiting[0]}.log)",
                    None,
                )
            if timeout and elapsed > float(timeout):
                return JobState.FAILED, f"the job ran past its timeout of {timeout} s", None
            # A young job is looked at every 10 ms: a short job's end is recorded at once; and
            # the loop wakes as soon as a replica it started exits.
            quick = min(self.poll_s, self.quick_poll_s) if elapsed < QUICK_S else self.poll_s
            nap(quick, self._live_pids())

    def cancelling(self, state: JobState) -> None:
        """Say CANCELLING while the replicas are being stopped after a cancel."""
        if state is JobState.CANCELLED:
            with contextlib.suppress(JobStoreError):  # a full disk: the replicas stop anyway
                self.store.transition(self.job_id, JobState.CANCELLING)

    def finish(self, outcome: Outcome, deadline_s: float = FINISH_DEADLINE_S) -> None:
        """Record the final state, the error and every replica's exit code.

        The outcome is written to ``outcome.json`` in the job folder first: when the job store
        stays locked (another process holding it), the write is retried until ``deadline_s``,
        and a record that never took it is completed from that file by the next refresh. On a
        full disk it is retried for :data:`FULL_DISK_DEADLINE_S` only, then this watcher ends
        (no notification is sent from here then): every reader already tells the job's end from
        that file (:func:`outcome_record`), and records it once the disk has room.
        """
        state, error, location = outcome
        codes = {r.name: r.exit_code for r in self.replicas}
        kept = write_outcome(self.job_dir, state, error, location, codes)
        started = time.monotonic()
        deadline = started + deadline_s
        delay = 0.5
        while True:
            try:
                self.store.transition(
                    self.job_id,
                    state,
                    error=error if state is not JobState.SUCCEEDED else None,
                    error_location=location,
                    mutate=lambda rec: {"handle": {**rec.handle, "exit_codes": codes}},
                )
                break
            except JobStoreError as exc:
                if kept and isinstance(exc, JobStoreFull):  # readers tell it, and record it
                    deadline = min(deadline, started + FULL_DISK_DEADLINE_S)  # once they can
                    if time.monotonic() + delay > deadline:
                        return  # this watcher ends: its pid's exit wakes every follower
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 10.0)
        with contextlib.suppress(OSError):
            (self.job_dir / OUTCOME_FILE).unlink()
        notify.send(self.store, self.job_id)  # --notify: said from here, no browser needed
