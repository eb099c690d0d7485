"""Durable job records: what was launched, where, and how it is doing.

Every job the product launches gets a :class:`JobRecord` in a :class:`JobStore`, a small SQLite
database (``<jupyter data dir>/tfc_jupyter/jobs.sqlite`` by default). Records survive kernel and
server restarts, so a job can be re-attached from a new kernel, the server extension and the CLI.

The store is shared by threads and processes (the kernel that launched a job, the monitors that
poll it, the Jupyter server): it opens one SQLite connection per operation, runs WAL mode with a
long busy timeout, and does every read-modify-write in one ``BEGIN IMMEDIATE`` transaction, so
concurrent writers never lose each other's changes. The folder is owner-only (0700), the database
file too (0600).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import re
import shutil
import sqlite3
import stat
import threading
import time
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from ..errors import JobConflict, JobNotFound, TfcError
from ..util.files import disk_full, is_disk_full

__all__ = [
    "JobRecord",
    "JobState",
    "JobStore",
    "JobStoreError",
    "JobStoreFull",
    "default_home",
    "new_job_id",
]


def _log() -> Any:
    """This module's logger (``logging`` is imported when there is something to say: the job's
    supervisor imports this module before it starts the job's first process)."""
    import logging

    return logging.getLogger(__name__)


T = TypeVar("T")

BUSY_TIMEOUT_S = 30.0
"""How long an operation waits for another writer's lock before giving up."""

_SCHEMA_VERSION = 1


class JobStoreError(TfcError):
    """The job-record database cannot be opened, read or written (corrupt, locked, no access)."""

    http_status = 500


class JobStoreFull(JobStoreError):
    """The job-record database cannot be written because its disk is full: what a watcher
    decided stays in the job's folder (``outcome.json``), and readers tell it from there."""


class JobState(str, Enum):
    """The life cycle of a job; the values mirror Vertex AI's job states."""

    QUEUED = "queued"
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        return self.value

    def is_terminal(self) -> bool:
        """True for the states a job never leaves: succeeded, failed, cancelled."""
        return self in _TERMINAL

    @classmethod
    def from_vertex(cls, name: str) -> JobState:
        """Map a Vertex AI ``JobState`` name (``"JOB_STATE_RUNNING"``) to a :class:`JobState`.

        Accepts the name with or without the ``JOB_STATE_`` prefix, in any case, or the
        aiplatform enum member itself. Beyond the one-to-one names: ``UPDATING`` -> RUNNING,
        ``PAUSED`` -> CANCELLED, ``EXPIRED`` and ``PARTIALLY_SUCCEEDED`` -> FAILED,
        ``UNSPECIFIED`` -> QUEUED. An unknown name (a state Vertex adds later) also maps to QUEUED,
        a non-terminal state, so a monitor keeps polling instead of crashing or giving up.
        """
        text = str(getattr(name, "name", name)).rsplit(".", 1)[-1].strip().upper()
        text = text.removeprefix("JOB_STATE_")
        return _VERTEX_STATES.get(text, cls.QUEUED)


_TERMINAL = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})
_VERTEX_STATES = {s.name: s for s in JobState} | {
    "UNSPECIFIED": JobState.QUEUED,
    "UPDATING": JobState.RUNNING,
    "PAUSED": JobState.CANCELLED,
    "EXPIRED": JobState.FAILED,
    "PARTIALLY_SUCCEEDED": JobState.FAILED,
}


REPORT_KEY = "report_key"
"""The handle's entry for the job's report key (:attr:`JobRecord.report_key`)."""


@dataclass
class JobRecord:
    """Everything known about one job; JSON-ready through :meth:`to_dict`.

    ``spec`` is the JobSpec as a JSON-ready dict; ``handle`` is what the backend needs to find
    the job again (pids, container ids, the Vertex resource name ...); ``error`` is a one-line
    message and ``error_location`` where it happened ("cell 7, line 3"); ``owner_pid`` is the
    process that launched or monitors the job. Times are POSIX timestamps (``time.time()``).
    """

    id: str
    name: str
    backend: str
    state: JobState = JobState.QUEUED
    spec: dict[str, Any] = field(default_factory=dict)
    handle: dict[str, Any] = field(default_factory=dict)
    job_dir: str = ""
    log_dir: str = ""
    notebook: str | None = None
    cell_id: str | None = None  # the run cell's nbformat id (JupyterLab sends it), if known
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    started_at: float | None = None
    ended_at: float | None = None
    error: str | None = None
    error_location: str | None = None
    console_url: str | None = None
    tensorboard_url: str | None = None
    owner_pid: int | None = None
    returned: str | None = None  # what the kernel set when the job ended ("Back in the kernel:
    # model, history."), said by the kernel; a page opened later shows it
    returned_kernel: str | None = None  # the kernel that set them, ``ID/PID`` (a page opened
    # after it restarted or shut down says the names are gone from it, and how to bring them back)

    def __post_init__(self) -> None:
        self.state = JobState(self.state)
        _check_shape(self)
        if "supervisor_pid" in self.handle and "watcher_pid" not in self.handle:
            # records of versions before 0.2 named the local and docker watchers' pid so
            self.handle = {**self.handle, "watcher_pid": self.handle["supervisor_pid"]}

    @property
    def report_key(self) -> str | None:
        """The key the job's report lines are signed with, where reports come with its logs
        (Vertex AI: made at launch, kept in :data:`REPORT_KEY` of the handle); None for a job
        whose reports are in its results file, or one launched before reports were signed."""
        key = self.handle.get(REPORT_KEY)
        return key if isinstance(key, str) and key else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy (the state as its string value)."""
        data = dataclasses.asdict(self)
        data["state"] = self.state.value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobRecord:
        """Build a record from :meth:`to_dict` output; unknown keys are ignored.

        Raises:
            ValueError: a required key (id, name, backend) is missing or the state is unknown.
        """
        known = {k: copy.deepcopy(v) for k, v in data.items() if k in _FIELDS}
        missing = [k for k in ("id", "name", "backend") if k not in known]
        if missing:
            raise ValueError(f"job record lacks {', '.join(missing)}")
        return cls(**known)

    @property
    def elapsed(self) -> float:
        """Seconds from start (or creation) to the end (or now)."""
        start = self.started_at if self.started_at is not None else self.created_at
        end = self.ended_at if self.ended_at is not None else time.time()
        return max(0.0, end - start)


_FIELDS = frozenset(f.name for f in dataclasses.fields(JobRecord))
CANCEL_ASKED = frozenset({JobState.CANCELLING, JobState.CANCELLED})
"""States a cancel leaves a job in: a launch that finds one starts nothing more."""
_TEXT = ("id", "name", "backend", "job_dir", "log_dir")
_MAYBE_TEXT = (
    "notebook", "cell_id", "error", "error_location", "console_url", "tensorboard_url", "returned",
    "returned_kernel",
)  # fmt: skip
_TIMES = ("created_at", "updated_at")
_MAYBE_TIMES = ("started_at", "ended_at")
_WHOLE = {"owner_pid": None}
_HANDLE_PIDS = ("watcher_pid", "supervisor_pid")
_SPEC_COUNTS = ("worker_count", "ps_count")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_shape(record: JobRecord) -> None:
    """A record of another shape (written by hand, by another version, half by a crash) is a
    ValueError naming the field, never a traceback later in a listing.

    Raises:
        ValueError: a field of the wrong type.
    """
    wrong = [k for k in _TEXT if not isinstance(getattr(record, k), str)]
    wrong += [
        k
        for k in _MAYBE_TEXT
        if getattr(record, k) is not None and not isinstance(getattr(record, k), str)
    ]
    wrong += [k for k in _TIMES if not _number(getattr(record, k))]
    wrong += [
        k
        for k in _MAYBE_TIMES
        if getattr(record, k) is not None and not _number(getattr(record, k))
    ]
    wrong += [
        k for k in _WHOLE if getattr(record, k) is not None and not _whole(getattr(record, k))
    ]
    wrong += [k for k in ("spec", "handle") if not isinstance(getattr(record, k), dict)]
    if isinstance(record.handle, dict):
        wrong += [
            f"handle.{k}"
            for k in _HANDLE_PIDS
            if k in record.handle
            and not (_whole(record.handle[k]) and record.handle[k] > 0)  # -1: every process
        ]
    if isinstance(record.spec, dict):
        wrong += [
            f"spec.{k}" for k in _SPEC_COUNTS if k in record.spec and not _whole(record.spec[k])
        ]
    if wrong:
        raise ValueError(f"job record fields of the wrong type: {', '.join(wrong)}")


# Job ids: <slug>-<UTC yyyymmdd-hhmmss>-<6 hex>. The hex suffix is random (os.urandom), so the
# short id (the suffix, what %tfc_attach takes and the sidebar shows) tells jobs apart at a glance;
# within one process and one second no two suffixes share their first five characters, so ids made
# together differ in more than their last character (a counter made 823911 and 823912). Two
# processes collide only with a chance of 1 in 2**24 per pair of ids made in the same second.
_id_lock = threading.Lock()
_issued: dict[str, set[int]] = {}  # this second's stamp -> the suffixes' first 5 hex digits


def _forget_issued() -> None:
    _issued.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_issued)


def _slug(name: str, limit: int = 30) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name).strip("-")
    return slug[:limit].rstrip("-") or "job"


def new_job_id(name: str = "job") -> str:
    """A fresh job id such as ``quickstart-20261121-110403-a1b2c3``.

    The name is slugged to ``[a-z0-9-]`` (at most 30 characters, "job" when nothing is left),
    then the UTC time to the second and 6 random hex characters follow. Ids of one name sort by
    creation time, and are safe in paths, URLs, container names and Vertex display names.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time()))
    with _id_lock:
        if stamp not in _issued:
            _issued.clear()
            _issued[stamp] = set()
        taken = _issued[stamp]
        while True:  # at most 2**20 prefixes a second: a free one is found at once
            suffix = int.from_bytes(os.urandom(3), "big")
            if suffix >> 4 not in taken:
                break
        taken.add(suffix >> 4)
    return f"{_slug(name)}-{stamp}-{suffix:06x}"


def default_home() -> Path:
    """The folder of tfc_jupyter's own data: ``$TFC_JUPYTER_HOME``, else
    ``<jupyter data dir>/tfc_jupyter``."""
    env = os.environ.get("TFC_JUPYTER_HOME", "").strip()
    if env:
        return Path(env).expanduser()
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "tfc_jupyter"


def _ready(conn: sqlite3.Connection) -> bool:
    """The store has its table and version: nothing to write to open it."""
    table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'jobs'"
    ).fetchone()
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    return bool(table) and version == _SCHEMA_VERSION  # (WAL is set with the table, for good)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    state TEXT NOT NULL,
    backend TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_created_at ON jobs (created_at);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state);
CREATE INDEX IF NOT EXISTS jobs_backend ON jobs (backend);
"""

Mutator = Callable[[JobRecord], Mapping[str, Any] | None]


class JobStore:
    """Job records in one SQLite file, safe to share between threads and processes.

    Args:
        path: the database file; default ``default_home() / "jobs.sqlite"``. Its folder is
            created owner-only (0700); at the default location an existing folder is tightened
            to 0700 too. The database file (and its WAL files) is always made 0600.

    Raises:
        JobStoreError: the database cannot be opened or is not a job store (corrupt ...).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_home() / "jobs.sqlite"
        self._secure(tighten_dir=path is None)
        with self._guard():
            try:
                ready = self._read(_ready)
            except JobStoreError:
                ready = False  # a new or broken store: the write below says which
            conn = self._connect()
            try:
                if not ready:  # only a new (or older) store is written to: a read of
                    conn.execute("PRAGMA journal_mode=WAL")  # one stays a read (a full disk)
                    conn.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} COMMIT;")
                    if conn.execute("PRAGMA user_version").fetchone()[0] == 0:
                        conn.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
            finally:
                conn.close()
        self._secure(tighten_dir=False)  # the WAL files now exist

    def __repr__(self) -> str:
        return f"JobStore({str(self.path)!r})"

    # -- public API ---------------------------------------------------------------------------

    def create(self, record: JobRecord) -> JobRecord:
        """Store a new record and return a copy of it.

        Raises:
            JobConflict: a record with that id exists already.
        """
        if not record.id:
            raise ValueError("a job record needs an id; use new_job_id()")
        with self._transaction(write=True) as conn:
            try:
                conn.execute(
                    "INSERT INTO jobs (id, created_at, state, backend, record)"
                    " VALUES (?, ?, ?, ?, ?)",
                    self._row(record),
                )
            except sqlite3.IntegrityError:
                raise JobConflict(
                    f"A job with id {record.id!r} exists already",
                    "make a fresh id with new_job_id()",
                ) from None
        return JobRecord.from_dict(record.to_dict())

    def get(self, job_id: str) -> JobRecord:
        """The record of ``job_id``, or of the one job whose id starts with it (like docker), or
        else ends with it (4 characters or more: the short ids the sidebar shows).

        Raises:
            JobNotFound: no job has that id or prefix.
            JobConflict: the prefix matches several jobs.
        """
        return self._read(lambda conn: self._load(conn, job_id))

    def list(
        self,
        *,
        limit: int | None = 50,
        backend: str | None = None,
        states: Iterable[JobState | str] | None = None,
    ) -> list[JobRecord]:
        """Records, newest first, optionally only of one backend and of some states.

        ``limit=None`` returns all. Rows that cannot be read are skipped with a logged warning.
        """
        where: list[str] = []
        args: list[Any] = []
        if backend is not None:
            where.append("backend = ?")
            args.append(backend)
        if states is not None:
            values = sorted({JobState(s).value for s in states})
            if not values:
                return []
            where.append(f"state IN ({', '.join('?' * len(values))})")
            args.extend(values)
        sql = "SELECT id, record FROM jobs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(max(0, limit))
        rows = self._read(lambda conn: conn.execute(sql, args).fetchall())
        records = []
        for job_id, text in rows:
            try:
                records.append(self._decode(job_id, text))
            except JobStoreError as exc:
                _log().warning("%s", exc)
        return records

    def update(self, job_id: str, *, mutate: Mutator | None = None, **fields: Any) -> JobRecord:
        """Change fields of a record atomically and return the new record.

        ``fields`` are set first; then ``mutate``, if given, is called with the current stored
        record (with ``fields`` applied) inside the same write transaction, and may change it in
        place and/or return a dict of further fields to set. Concurrent read-modify-writes such
        as ``update(id, mutate=lambda r: {"handle": {**r.handle, "n": r.handle["n"] + 1}})``
        therefore never lose an increment, across threads and processes.

        ``updated_at`` becomes now; ``started_at`` is set when the state first becomes RUNNING
        and ``ended_at`` when it first becomes terminal (unless given). Unlike
        :meth:`transition`, ``update`` may move a record out of a terminal state.

        Raises:
            JobNotFound, JobConflict: as :meth:`get` (ids may be unique prefixes).
            TypeError: a field name that :class:`JobRecord` does not have.
        """
        return self._modify(job_id, fields, mutate, guard=False)

    def transition(
        self, job_id: str, state: JobState | str, *, mutate: Mutator | None = None, **fields: Any
    ) -> JobRecord:
        """Move a job to ``state`` (and set ``fields``), like :meth:`update`, unless it has
        ended: a record in a terminal state is returned unchanged, so the first terminal state
        wins and racing monitors are harmless. Compare the returned ``state`` to know."""
        return self._modify(job_id, {**fields, "state": JobState(state)}, mutate, guard=True)

    def delete(self, job_id: str) -> None:
        """Remove a record (an id or unique prefix).

        Raises:
            JobNotFound, JobConflict: as :meth:`get`.
        """
        with self._transaction(write=True) as conn:
            record = self._load(conn, job_id)
            conn.execute("DELETE FROM jobs WHERE id = ?", (record.id,))

    # -- internals ----------------------------------------------------------------------------

    def _modify(
        self, job_id: str, fields: dict[str, Any], mutate: Mutator | None, *, guard: bool
    ) -> JobRecord:
        _check_fields(fields)
        with self._transaction(write=True) as conn:
            record = self._load(conn, job_id)
            if guard and record.state.is_terminal():
                return record
            stored_id = record.id
            _apply(record, fields)
            if mutate is not None:
                _apply(record, mutate(record) or {})
            if record.id != stored_id:
                raise ValueError("a job id cannot change")
            _stamp(record)
            conn.execute(
                "UPDATE jobs SET created_at = ?, state = ?, backend = ?, record = ? WHERE id = ?",
                (*self._row(record)[1:], record.id),
            )
            return JobRecord.from_dict(record.to_dict())

    def _load(self, conn: sqlite3.Connection, job_id: str) -> JobRecord:
        key = job_id.strip()
        row = conn.execute("SELECT id, record FROM jobs WHERE id = ?", (key,)).fetchone()
        if row is None and key:
            # Every id that starts with key sorts in [key, key + U+10FFFF): an indexed range.
            rows = conn.execute(
                "SELECT id, record FROM jobs WHERE id >= ? AND id < ? ORDER BY id LIMIT 6",
                (key, key + "\U0010ffff"),
            ).fetchall()
            if not rows and len(key) >= 4:  # the id's end, as short ids are shown ("25829a")
                escaped = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                rows = conn.execute(
                    "SELECT id, record FROM jobs WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6",
                    (f"%{escaped}",),
                ).fetchall()
                rows = [r for r in rows if r[0].endswith(key)]  # LIKE ignores ASCII case
            if len(rows) > 1:
                shown = ", ".join(r[0] for r in rows[:5]) + (" ..." if len(rows) > 5 else "")
                raise JobConflict(
                    f"Job id {key!r} matches several jobs: {shown}",
                    "give more characters of the job id",
                )
            row = rows[0] if rows else None
        if row is None:
            raise JobNotFound(
                f"No job with id {job_id!r} in {self.path}",
                "run %tfc_jobs to list the job ids",
            )
        return self._decode(row[0], row[1])

    def _decode(self, job_id: str, text: str) -> JobRecord:
        try:
            return JobRecord.from_dict(json.loads(text))
        except (ValueError, TypeError) as exc:
            raise JobStoreError(
                f"The record of job {job_id!r} in {self.path} cannot be read ({exc})",
                f"delete it with JobStore({str(self.path)!r}).delete({job_id!r})",
            ) from exc

    @staticmethod
    def _row(record: JobRecord) -> tuple[str, float, str, str, str]:
        text = json.dumps(record.to_dict(), sort_keys=True, allow_nan=False)
        return record.id, float(record.created_at), record.state.value, record.backend, text

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _read(self, query: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read. On a full disk, where SQLite cannot even grow its shared-memory file to
        read (a "disk I/O error"), read the database file itself, immutable: every write
        checkpoints (see :meth:`_transaction`), so it holds the last committed state."""
        try:
            with self._transaction() as conn:
                return query(conn)
        except JobStoreError as exc:
            cause = exc.__cause__
            if not (
                isinstance(cause, sqlite3.OperationalError) and _low_on_space(self.path.parent)
            ):
                raise
        uri = f"file:{urllib.parse.quote(str(self.path))}?mode=ro&immutable=1"
        with self._guard():
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
            try:
                return query(conn)
            finally:
                conn.close()

    @contextmanager
    def _transaction(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """One connection, one transaction (``BEGIN IMMEDIATE`` when writing), then close."""
        with self._guard():
            conn = self._connect()
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield conn
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
                if write:  # the database file itself holds every committed state (see _read)
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                conn.close()

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Turn sqlite errors into a :class:`JobStoreError` naming the file and the fix."""
        try:
            yield
        except sqlite3.Error as exc:
            text = str(exc)
            if "full" in text or ("I/O" in text and _low_on_space(self.path.parent)):
                raise JobStoreFull(
                    f"The job store cannot be written: {disk_full(self.path, _STORE_ROOM)}",
                    f"free some disk space on the disk of {self.path.parent}, or set "
                    "TFC_JUPYTER_HOME to a folder on another disk",
                ) from exc
            if "locked" in text or "busy" in text:
                hint = "another process holds the job store's lock; retry, or stop that process"
            elif "unable to open" in text or "readonly" in text or "access" in text:
                hint = (
                    f"check that you own {self.path.parent} and can write it (chmod 700), "
                    "or set TFC_JUPYTER_HOME to another folder"
                )
            else:
                hint = (
                    f"move the file aside (mv '{self.path}' '{self.path}.bad'); a new, empty "
                    "job store is made on next use, or set TFC_JUPYTER_HOME to another folder"
                )
            raise JobStoreError(f"The job store {self.path} is unusable: {text}", hint) from exc

    def _secure(self, *, tighten_dir: bool) -> None:
        """Create the folder (0700) and the database file (0600); tighten what is looser."""
        folder = self.path.parent
        if folder.exists():
            _refuse_unsafe(folder)
            if self.path.exists():
                _refuse_unsafe(self.path)
        try:
            if not folder.exists():
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                tighten_dir = True
            if tighten_dir:
                _tighten(folder, 0o700)
            if not self.path.exists():
                # Never open a database file that exists outside SQLite: closing any descriptor
                # of a file drops every POSIX lock this process holds on it, SQLite's included
                # (another thread's connection would lose its lock, and another process could
                # then checkpoint or delete the WAL under it). A new one is made owner-only.
                with contextlib.suppress(FileExistsError):
                    os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
            for suffix in ("", "-wal", "-shm"):
                _tighten(Path(f"{self.path}{suffix}"), 0o600)
        except OSError as exc:
            if is_disk_full(exc):
                raise JobStoreFull(
                    f"The job store cannot be created: {disk_full(self.path, _STORE_ROOM)}",
                    "free some disk space there, or set TFC_JUPYTER_HOME to a folder on "
                    "another disk",
                ) from exc
            raise JobStoreError(
                f"The job store {self.path} cannot be created: {exc}",
                "set TFC_JUPYTER_HOME to a folder you can write",
            ) from exc


_STORE_ROOM = 1 << 20  # SQLite's journal and shared memory for one write


def _low_on_space(folder: Path, least: int = 4 << 20) -> bool:
    """True when the disk of ``folder`` has less than ``least`` bytes free (SQLite says "disk
    I/O error" when its shared-memory file cannot grow on a full disk)."""
    try:
        return shutil.disk_usage(folder).free < least
    except OSError:
        return False


def _refuse_unsafe(path: Path) -> None:
    """Refuse, as ssh does, a job home (or store) that another user owns or can write: they
    could swap the records and make ``cancel`` signal any process of yours."""
    if os.name != "posix":
        return
    try:
        st = os.stat(path)
    except OSError:
        return
    if st.st_uid != os.getuid():
        raise JobStoreError(
            f"{path} belongs to uid {st.st_uid}, not to you (uid {os.getuid()}): another user "
            "could change your job records",
            "set TFC_JUPYTER_HOME to a folder of your own (mkdir -m 700 ~/.tfc_jupyter)",
        )
    if stat.S_IMODE(st.st_mode) & 0o022:
        raise JobStoreError(
            f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):o}): they could "
            "swap your job records",
            f"chmod 700 '{path}'" if stat.S_ISDIR(st.st_mode) else f"chmod 600 '{path}'",
        )


def _tighten(path: Path, mode: int) -> None:
    if os.name != "posix":
        return
    try:
        current = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return
    if current & ~mode:
        try:
            os.chmod(path, current & mode)
        except OSError as exc:  # a filesystem without POSIX modes, or not our file
            _log().warning("cannot restrict %s to mode %o: %s", path, mode, exc)


def _check_fields(fields: Mapping[str, Any]) -> None:
    unknown = sorted(set(fields) - _FIELDS)
    if unknown:
        raise TypeError(f"JobRecord has no field {', '.join(map(repr, unknown))}")


def _apply(record: JobRecord, fields: Mapping[str, Any]) -> None:
    _check_fields(fields)
    if "id" in fields and fields["id"] != record.id:
        raise ValueError("a job id cannot change")
    for name, value in fields.items():
        setattr(record, name, JobState(value) if name == "state" else value)


def _stamp(record: JobRecord) -> None:
    now = time.time()
    record.state = JobState(record.state)  # mutate may have set a plain string in place
    record.updated_at = now
    if record.state is JobState.RUNNING and record.started_at is None:
        record.started_at = now
    if record.state.is_terminal() and record.ended_at is None:
        record.ended_at = now
