"""Cloud Logging reads for the Vertex AI jobs followed from this machine, shared per project.

Cloud Logging allows 60 ``entries.list`` calls a minute per project ("Read requests per minute",
``ReadRequestsPerMinutePerProject``: cloud.google.com/logging/quotas, read 2026-11-26), shared by
everything that reads the project's logs: the console's log viewer, other tools, and every job
followed here. Each job has its own watcher process; reading each job's logs apart, ten jobs
polling every few seconds would pass the limit. So the watchers of one project share one reader,
in ``<home>/vertex_logs/<project>/``:

* each watcher registers its job (``jobs/<vertex id>.json``: the time from which it needs
  entries, and whether it is in a hurry: its job just ended and its last lines are awaited);
* whichever watcher finds the reader's turn free (a lock, never waited for) and the project's
  interval passed reads the entries of every registered job with one filter, page by page, and
  leaves each job's entries in its inbox (``inbox/<vertex id>/``);
* each watcher takes its own inbox.

The interval is ``60 / log_reads`` seconds (20 reads a minute by default: a third of the quota),
growing 1.5x per read that brought nothing, up to 6x, unless a job is in a hurry. A refused read
(429 and 5xx) stops every watcher's reads until the wait Google asked for (``Retry-After``), else
a backoff doubling up to a minute's worth of reads; a daily quota stops them until it resets
(midnight Pacific time), with its own message; other errors (a permission refused, 403) back off
the same way up to ten minutes at the default rate (:data:`STOP_READS` intervals). Reads resume
by themselves once answered: a refusal never ends a job's logs (its watcher says while they
are not read, and why).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...util.files import write_private
from .api import VertexSettings
from .google.gcloud import (
    LOGGING,
    DailyQuotaError,
    authorized_session,
    base_url,
    checked,
    explain,
)
from .google.quota import pacific_midnight

try:
    import fcntl
except ImportError:  # Windows: every watcher reads on its own (still within the interval)
    fcntl = None  # type: ignore[assignment]

MAX_IDLE = 6.0  # the interval grows to this many times its base while reads bring nothing
STALE_S = 600.0  # a registration not renewed for this long belongs to a watcher that died
STOP_READS = 200  # after errors that are not transient (403 ...): retried at most this many
# intervals apart (600 s at the default 20 reads a minute), doubling from two intervals
BATCH = 40  # jobs in one filter, at most (Cloud Logging takes filters up to 20,000 characters)


def stamp(when: datetime) -> str:
    """RFC 3339 with microseconds, in UTC (as Cloud Logging's filters take it)."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_stamp(text: str) -> datetime:
    """Cloud Logging's RFC 3339 timestamps (nanoseconds, ``Z``) -> an aware datetime."""
    m = re.fullmatch(r"([^.Z+]+?)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)?", text.strip())
    if not m:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    offset = m.group(3) if m.group(3) not in (None, "Z") else "+00:00"
    return datetime.fromisoformat(f"{m.group(1)}.{(m.group(2) or '0')[:6].ljust(6, '0')}{offset}")


@dataclass
class ReaderState:
    """The project's reader, as the watchers share it (``state.json``)."""

    next_read: float = 0.0  # time.time() of the next allowed read
    idle: float = 1.0  # the interval's factor (grows while reads bring nothing)
    refusals: int = 0  # refusals in a row
    refused_since: float | None = None  # when reads began to be refused (None: answered)
    why: str = ""  # the last refusal, one line
    stopped: str = ""  # a daily quota or a permanent error: reads stop until next_read
    reads: int = 0  # reads made (for tests and the watcher log)
    last_ok: float = 0.0  # time.time() when the last answered read started


@dataclass
class Delivery:
    """One read's entries for one job."""

    read_at: float  # time.time() when the read started
    entries: list[dict[str, Any]] = field(default_factory=list)


class ProjectLogs:
    """The shared reader of one project's Vertex AI job logs (see the module docstring)."""

    def __init__(self, root: Path, project: str, region: str, settings: VertexSettings) -> None:
        self.folder = root / "vertex_logs" / project
        (self.folder / "jobs").mkdir(parents=True, exist_ok=True, mode=0o700)
        (self.folder / "inbox").mkdir(parents=True, exist_ok=True, mode=0o700)
        self.project, self.region, self.settings = project, region, settings
        self.base_s = 60.0 / max(settings.log_reads, 0.001)
        self.stop_s = STOP_READS * self.base_s  # the longest wait after a refusal (not a day's)
        self._session: Any = None

    # -- registrations and inboxes ----------------------------------------------------------
    def register(self, job: str, since: datetime, *, hurry: bool = False) -> None:
        """Ask for ``job``'s entries from ``since`` on (renewed at each of its watcher's polls)."""
        data = {"since": stamp(since), "hurry": hurry}
        write_private(self.folder / "jobs" / f"{job}.json", json.dumps(data), atomic=True)
        (self.folder / "inbox" / job).mkdir(exist_ok=True, mode=0o700)

    def unregister(self, job: str) -> None:
        """The job's logs are complete: read them no more; drop what its inbox still holds."""
        with contextlib.suppress(OSError):
            (self.folder / "jobs" / f"{job}.json").unlink()
        inbox = self.folder / "inbox" / job
        for path in inbox.glob("*") if inbox.is_dir() else []:
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            inbox.rmdir()

    def take(self, job: str) -> list[Delivery]:
        """The reads delivered to ``job`` since it last took them, oldest first."""
        out: list[Delivery] = []
        inbox = self.folder / "inbox" / job
        for path in sorted(inbox.glob("*.json")) if inbox.is_dir() else []:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                path.unlink()
            except (OSError, ValueError):
                continue
            out.append(Delivery(float(data["read_at"]), list(data.get("entries", []))))
        return out

    def _registered(self) -> dict[str, dict[str, Any]]:
        jobs: dict[str, dict[str, Any]] = {}
        now = time.time()
        for path in (self.folder / "jobs").glob("*.json"):
            try:
                if now - path.stat().st_mtime > STALE_S:
                    self.unregister(path.stem)
                    continue
                jobs[path.stem] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
        return jobs

    # -- the shared state -------------------------------------------------------------------
    def state(self) -> ReaderState:
        """The reader's state as last saved."""
        try:
            return ReaderState(**json.loads((self.folder / "state.json").read_text()))
        except (OSError, ValueError, TypeError):
            return ReaderState()

    def _save(self, state: ReaderState) -> None:
        write_private(self.folder / "state.json", json.dumps(asdict(state)), atomic=True)

    @contextlib.contextmanager
    def _turn(self) -> Iterator[bool]:
        """True when this process holds the reader's turn (never waits for it)."""
        if fcntl is None:
            yield True
            return
        fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- the read ---------------------------------------------------------------------------
    def turn(self) -> ReaderState:
        """Read for every registered job if it is this project's time; the state after."""
        with self._turn() as mine:
            state = self.state()
            if not mine or time.time() < state.next_read:
                return state
            jobs = self._registered()
            if not jobs:
                return state
            started = time.time()
            try:
                found = self._read(jobs)
            except Exception as exc:
                self._refused(state, exc, started)
            else:
                self._deliver(jobs, found, started)
                hurry = any(j.get("hurry") for j in jobs.values())
                idle = 1.0 if (any(found.values()) or hurry) else min(state.idle * 1.5, MAX_IDLE)
                state = ReaderState(
                    next_read=started + self.base_s * idle,
                    idle=idle,
                    reads=state.reads + 1,
                    last_ok=started,
                )
            self._save(state)
            return state

    def _refused(self, state: ReaderState, exc: Exception, started: float) -> None:
        transient, error = explain(
            exc,
            project=self.project,
            region=self.region,
            what="reading the jobs' logs",
            api=LOGGING,
        )
        state.reads += 1
        state.refusals += 1
        state.refused_since = state.refused_since or started
        state.why = str(error)
        if isinstance(error, DailyQuotaError):
            state.stopped = str(error)
            state.next_read = pacific_midnight().timestamp()
        elif not transient:  # a permission refused now may be granted again: tried again, slower
            state.stopped = str(error)
            state.next_read = started + min(self.base_s * 2**state.refusals, self.stop_s)
        else:
            backoff = min(self.base_s * 2**state.refusals, 20 * self.base_s)
            asked = float(getattr(error, "retry_after", None) or 0.0)
            state.stopped = ""
            state.next_read = started + max(backoff, asked)

    def _deliver(
        self, jobs: dict[str, dict[str, Any]], found: dict[str, list[dict[str, Any]]], at: float
    ) -> None:
        for job in jobs:
            inbox = self.folder / "inbox" / job
            if not inbox.is_dir():
                continue
            data = json.dumps({"read_at": at, "entries": found.get(job, [])})
            with contextlib.suppress(OSError):  # its watcher just ended and removed it
                write_private(inbox / f"{time.time_ns():020d}.json", data, atomic=True)

    def _read(self, jobs: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        """One ``entries.list`` per page per batch of jobs; entries by job id."""
        found: dict[str, list[dict[str, Any]]] = {job: [] for job in jobs}
        names = sorted(jobs)
        for i in range(0, len(names), BATCH):
            terms = " OR ".join(
                f'(resource.labels.job_id="{job}" AND timestamp>="{jobs[job]["since"]}")'
                for job in names[i : i + BATCH]
            )
            body: dict[str, Any] = {
                "resourceNames": [f"projects/{self.project}"],
                "filter": f'resource.type="ml_job" AND ({terms})',
                "orderBy": "timestamp asc",
                "pageSize": 1000,
            }
            while True:
                reply = checked(self._post(body))
                page = reply.json()
                for entry in page.get("entries", []):
                    job = str((entry.get("resource") or {}).get("labels", {}).get("job_id", ""))
                    if job in found:
                        found[job].append(entry)
                token = page.get("nextPageToken")
                if not token:
                    break
                body["pageToken"] = token
        return found

    def _post(self, body: dict[str, Any]) -> Any:
        endpoint = self.settings.log_endpoint()
        if self._session is None:
            self._session = authorized_session(endpoint)
        url = f"{base_url(endpoint)}/v2/entries:list"
        return self._session.post(url, json=body, timeout=self.settings.timeout_s)
