"""The watcher of one Vertex AI job: ``python -m tfc_jupyter.backends.vertex.watcher JOB_DIR``.

Started detached by the Vertex backend (and restarted by it if it dies), so following a job
survives a killed kernel. Until the job ends it:

* polls the CustomJob's state (Vertex AI's REST API: no aiplatform import, which takes seconds
  of CPU per watcher) and mirrors it into the job records;
* reads the job's Cloud Logging entries (``resource.type="ml_job"``, this job's id) through the
  reader it shares with the other watchers of its project (:mod:`.vertex_logs`: one filter for
  all of them, within Cloud Logging's read quota) and appends each replica's lines to
  ``<job_dir>/logs/<replica>.log`` (``workerpool0-0`` -> ``chief``, ``workerpool1-2`` ->
  ``worker-2`` ...; Vertex's own messages go to ``vertex.log``), re-reading a short window to
  catch late entries, deduplicated by insert id, with its cursor saved so a restarted watcher
  does not repeat lines;
* polls every ``poll_s`` seconds, slowing down (up to 6x) while nothing changes;
* when a read of the job's state is refused (a rate limit, a daily quota, 5xx, a permission
  withdrawn), never marks the job failed: the record says "status unknown (reads refused since
  HH:MM), the job may still be running" and the watcher goes on trying, slower; only a job that
  Vertex AI says does not exist is lost track of;
* when the logs cannot be read for longer than the reader's slowest interval (refused reads, a
  permission withdrawn, a daily quota), the record's ``log_note`` says "logs not read since
  HH:MM: <why>" while they are not; reads resume once answered and the note goes;
* never records an end Vertex AI did not report: at its own limit (the job's timeout and a day
  more) or when it cannot start, the record says "not followed (status unknown)", its state kept;
* once it has run :data:`~..watched.SETTLED_POLLS` polls, its start is not a quick one: the
  count of quick starts that stops restarting it (``MAX_WATCHER_STARTS``) begins again;
* when the job ends, waits (bounded) for the last log entries, then records the final state with
  the failing replica's error and notebook cell (from ``tfc_runtime``'s last line).

A sweep's job (a ``HyperparameterTuningJob``) is followed the same way; its trials, as Vertex AI
reports them (values, state, measurements), are kept in ``<job_dir>/trials.json`` as they change,
and each trial's replicas log to ``trial-N.chief.log``, ``trial-N.worker-0.log`` ...
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from tfc_runtime.protocol import POOL_ROLES
from tfc_runtime.protocol import replica_name as protocol_replica_name

from ...errors import BackendError, TfcError
from ...registry import TRIALS_FILE
from ...returns import notify
from ...store.records import JobRecord, JobState, JobStore
from ...util.files import open_private, write_private
from .. import watch_lock
from ..watched import (
    LOG_NOTE,
    QUICK_STARTS,
    SETTLED_POLLS,
    followed_again,
    not_followed,
)
from .api import VertexSettings, require_clients, rest_session, rest_url
from .google.gcloud import call, checked
from .logs import MAX_IDLE, ProjectLogs, ReaderState, parse_stamp

LOOKBACK = timedelta(seconds=10)  # entries may arrive late: re-read this window, deduplicated
_FAILED_AT = re.compile(r"\[tfc_runtime\] job failed at (.+?): (.*)$")
_CANNOT_START = re.compile(r"\[tfc_runtime\] cannot start the job: (.*)$")
_REPLICA_EXIT = re.compile(
    r"replica (workerpool(\d)-(\d+)) exited with a non-zero status of (-?\d+)"
)


def _when(entry: dict[str, Any]) -> datetime:
    """When an entry was written (now, for an entry without a time)."""
    try:
        return parse_stamp(str(entry["timestamp"]))
    except (KeyError, ValueError):
        return datetime.now(timezone.utc)


def replica_name(task_name: str | None) -> str:
    """``workerpool0-0`` -> ``chief``, ``workerpool1-1`` -> ``worker-1``; None -> ``vertex``."""
    m = re.fullmatch(r"(workerpool(\d))-(\d+)", task_name or "")
    if not m:
        return "vertex"
    role = POOL_ROLES.get(m.group(1), f"pool{m.group(2)}")
    return protocol_replica_name(role, int(m.group(3)))


def _text(entry: dict[str, Any]) -> str:
    """A LogEntry's line: its ``textPayload``, or its ``jsonPayload``'s message."""
    payload = entry.get("textPayload")
    if payload is None:
        payload = entry.get("jsonPayload")
        if isinstance(payload, dict):
            payload = payload.get("message", json.dumps(payload))
    return str(payload if payload is not None else "").rstrip("\n")


TRIAL_LABEL = "ml.googleapis.com/trial_id"
"""The label of a tuning trial's log entries."""


def _state(job: dict[str, Any]) -> str:
    return str(job.get("state") or "JOB_STATE_UNSPECIFIED")


class JobGone(BackendError):
    """Vertex AI says the job does not exist (deleted, or another project's)."""


class Watcher:
    """Follows one job folder's Vertex AI job (see the module docstring)."""

    def __init__(self, job_dir: Path) -> None:
        self.job_dir = job_dir
        self.conf = json.loads((job_dir / "vertex.json").read_text())
        self.settings = VertexSettings(**self.conf["settings"])
        self.store = JobStore(self.conf["store"])
        self.job_id: str = self.conf["job_id"]
        self.project: str = self.conf["project"]
        self.region: str = self.conf["region"]
        self.cursor_path = job_dir / "vertex_cursor.json"
        self.logs = job_dir / "logs"
        self.failures: dict[str, tuple[str, str]] = {}  # replica -> (where, what)
        self.since, self.seen = self._load_cursor()
        require_clients()
        self.session = rest_session(self.settings, self.region)
        self.job_url = f"{rest_url(self.settings, self.region)}/v1/{self.conf['resource_name']}"
        self.reader = ProjectLogs(
            Path(self.conf["store"]).parent, self.project, self.region, self.settings
        )
        # Why the logs are not read now (a watcher before it may have said so in the record):
        # cleared by the first read answered after the refusals began.
        self.log_error: str | None = self.store.get(self.job_id).handle.get(LOG_NOTE)
        self.log_refused_since = 0.0
        self.last_read = 0.0  # when the last read that answered for this job started
        self.refused_since: float | None = None  # state reads refused since (time.time())
        self.gone_since: float | None = None  # Vertex AI has said NOT_FOUND since (time.time())

    # -- cursor -----------------------------------------------------------------------------
    def _load_cursor(self) -> tuple[datetime, dict[str, str]]:
        try:
            data = json.loads(self.cursor_path.read_text())
            self.failures = {k: tuple(v) for k, v in data.get("failures", {}).items()}
            return datetime.fromisoformat(data["since"]), dict(data["seen"])
        except (OSError, ValueError, KeyError):
            created = self.conf.get("created")
            start = datetime.fromisoformat(created) if created else datetime.now(timezone.utc)
            return start - LOOKBACK, {}

    def _save_cursor(self) -> None:
        data = {"since": self.since.isoformat(), "seen": self.seen, "failures": self.failures}
        tmp = self.cursor_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(self.cursor_path)

    # -- one poll ---------------------------------------------------------------------------
    def get_job(self) -> dict[str, Any]:
        """The CustomJob now (its JSON); transient errors retried for up to ``retry_total_s``.

        Raises:
            JobGone: Vertex AI says the job does not exist.
            BackendError: the read was refused (rate limit, quota, permission, outage).
        """
        from google.api_core import exceptions as gexc

        def fetch() -> dict[str, Any]:
            try:
                reply = self.session.get(self.job_url, timeout=self.settings.timeout_s)
                return dict(checked(reply).json())
            except gexc.NotFound as exc:
                raise JobGone(
                    f"Vertex AI says job {self.conf['resource_name']} does not exist "
                    f"({exc.message})",
                    "check the project's jobs in the console; the job was deleted or moved",
                ) from None

        return call(
            fetch,
            what="reading the job's state",
            project=self.project,
            region=self.region,
            settings=self.settings,
        )

    def pull_logs(self, *, hurry: bool = False) -> int:
        """Append the entries the project's reader delivered; the number of new lines. While
        the reader's reads are refused the record says so (:meth:`logs_refused`); the first
        read answered after takes it back (:meth:`logs_read_again`)."""
        job = self.conf["vertex_job_id"]
        self.reader.register(job, self.since, hurry=hurry)
        state = self.reader.turn()
        lines: dict[str, list[str]] = {}
        newest = self.since
        answered = 0.0
        for delivery in self.reader.take(job):
            self.last_read = max(self.last_read, delivery.read_at)
            answered = max(answered, delivery.read_at)
            for entry in delivery.entries:
                stamp = _when(entry)
                key = entry.get("insertId") or f"{entry.get('timestamp')}{_text(entry)}"
                if key in self.seen or stamp < self.since:
                    continue
                self.seen[key] = stamp.isoformat()
                newest = max(newest, stamp)
                labels = (entry.get("resource") or {}).get("labels") or {}
                replica = replica_name(labels.get("task_name"))
                trial = str((entry.get("labels") or {}).get(TRIAL_LABEL) or "")
                if trial.isdigit():
                    replica = f"trial-{trial}.{replica}"
                text = _text(entry)
                lines.setdefault(replica, []).extend(text.split("\n"))
                self._note_failure(replica, text)
        for replica, new in lines.items():
            self._append(replica, new)
        if answered and answered >= self.log_refused_since:
            self.logs_read_again()
        elif state.refused_since is not None and not answered:
            self.logs_refused(state)
        self.since = max(self.since, newest - LOOKBACK)
        self.seen = {k: v for k, v in self.seen.items() if datetime.fromisoformat(v) >= self.since}
        self._save_cursor()
        return sum(len(v) for v in lines.values())

    def logs_refused(self, state: ReaderState) -> None:
        """The project's log reads are refused: once they have been for longer than the
        reader's slowest interval (at once for a permission or a daily quota), the record's
        ``log_note`` says since when the logs are not read, and why; said again when why
        changes. Never ends the logs: the reader tries again."""
        refused_since = state.refused_since or time.time()
        slowest = MAX_IDLE * self.reader.base_s
        if not state.stopped and time.time() - refused_since < slowest:
            return  # a short pause, as the reader's own backoff makes
        why = state.stopped or state.why
        if self.log_error is not None and why in self.log_error:
            return
        said_before = self.log_error is not None
        self.log_refused_since = refused_since
        last = self.last_read or state.last_ok or refused_since
        since = time.strftime("%H:%M", time.localtime(last))
        again = time.strftime("%H:%M:%S", time.localtime(state.next_read))
        note = f"logs not read since {since}: {why}; read again from {again} on"[:1000]
        self.log_error = note
        self._handle_note(LOG_NOTE, note)
        if not said_before:
            self._append("vertex", [f"[tfc_jupyter] cannot read the job's logs: {why}"])
        print(f"[watcher] {note}", flush=True)

    def _handle_note(self, key: str, note: str | None) -> None:
        """Set the record's handle ``key`` to ``note`` (None: take it away), in one write."""

        def change(record: JobRecord) -> dict[str, Any]:
            handle = {k: v for k, v in record.handle.items() if k != key}
            return {"handle": handle if note is None else {**handle, key: note}}

        self.store.update(self.job_id, mutate=change)

    def logs_read_again(self) -> None:
        """A read answered after the logs were said not read: the note goes."""
        if self.log_error is None:
            return
        self.log_error = None
        self._handle_note(LOG_NOTE, None)
        self._append("vertex", ["[tfc_jupyter] the job's logs are read again"])
        print("[watcher] log reads answered again", flush=True)

    def _note_failure(self, replica: str, text: str) -> None:
        if m := _FAILED_AT.search(text):
            self.failures[replica] = (m.group(1), m.group(2))
        elif m := _CANNOT_START.search(text):
            self.failures[replica] = ("startup", m.group(1))

    def _append(self, replica: str, lines: list[str]) -> None:
        with open_private(self.logs / f"{replica}.log", "a", encoding="utf-8") as fh:
            fh.write("".join(f"{line}\n" for line in lines))

    def keep_trials(self, job: dict[str, Any]) -> None:
        """A tuning job's trials into ``trials.json`` when they changed (written whole)."""
        trials = job.get("trials")
        if not isinstance(trials, list):
            return
        text = json.dumps(trials, indent=1)
        path = self.job_dir / TRIALS_FILE  # a list of Vertex AI's Trial
        if path.exists() and path.read_text(encoding="utf-8", errors="replace") == text:
            return
        write_private(path, text, atomic=True)

    # -- the end ----------------------------------------------------------------------------
    def failure(self, job: dict[str, Any]) -> tuple[str, str | None]:
        """The one-line error of a failed job and its notebook location."""
        message = " ".join(str((job.get("error") or {}).get("message") or "").split())
        m = _REPLICA_EXIT.search(message)
        replica = replica_name(m.group(1)) if m else None
        if replica is None and self.failures:
            replica = next(iter(self.failures))
        if replica not in self.failures:  # a tuning job's: the last trial's that failed there
            replica = next(
                (k for k in reversed(self.failures) if k.endswith(f".{replica}")), replica
            )
        where, what = self.failures.get(replica or "", ("", ""))
        if m or where:
            how = f"exited with status {m.group(4)}" if m else "failed"
            place = f" at {where}" if where and where != "startup" else ""
            detail = what or message.split(". ")[0]
            location = where if where.startswith("cell ") else None
            said = (replica or "").replace("trial-", "trial ").replace(".", " ")
            return f"{said} {how}{place}: {detail}"[:500], location
        return f"Vertex AI: {message or 'the job failed'}"[:500], None

    def drain(self) -> None:
        """After the job ended: read late entries until reads that started ``drain_s`` after the
        last new line (or the end) brought nothing more (Cloud Logging shows entries some
        seconds after they are written). Bounded: 6 x ``drain_s`` of answered reads, the time
        reads were refused added, at most ``watch_retry_s`` in all; reads stopped past that
        bound (a daily quota) or refused for longer than the reader's longest wait (a
        permission) are not waited for."""
        quiet = self.settings.drain_s
        start = time.time()
        settled = start  # the last new line, or the end
        hard = start + max(self.settings.watch_retry_s, 6 * quiet)
        while time.time() < hard:
            if self.pull_logs(hurry=True):
                settled = time.time()
            if self.last_read - settled >= quiet:
                break
            state = self.reader.state()
            if state.stopped and (
                state.next_read > hard
                or time.time() - (state.refused_since or start) > self.reader.stop_s
            ):
                break
            refused = time.time() - state.refused_since if state.refused_since else 0.0
            if time.time() - start > 6 * quiet + refused:
                break
            time.sleep(min(self.settings.poll_s, 1.0, self.reader.base_s))
        self.reader.unregister(self.conf["vertex_job_id"])

    def finish(self, job: dict[str, Any]) -> None:
        """Record the final state (after the logs)."""
        vertex_state = _state(job)
        state = JobState.from_vertex(vertex_state)
        error, location = None, None
        if state is JobState.FAILED:
            error, location = self.failure(job)
        elif state is JobState.CANCELLED:
            error = "cancelled"
        self.store.transition(
            self.job_id,
            state,
            error=error,
            error_location=location,
            mutate=lambda r: {
                "handle": {
                    **{k: v for k, v in r.handle.items() if k != "watch_note"},
                    "vertex_state": vertex_state,
                }
            },
        )
        notify.send(self.store, self.job_id)  # --notify: said from here, no browser needed

    # -- reads refused ----------------------------------------------------------------------
    def refused(self, error: BackendError) -> None:
        """A read of the job's state was refused: say so (once), never fail the job."""
        if self.refused_since is None:
            self.refused_since = time.time()
        since = time.strftime("%H:%M", time.localtime(self.refused_since))
        note = f"status unknown (reads refused since {since}), the job may still be running"
        said = f"{note}: {error}"[:600]
        before = self.store.get(self.job_id).handle.get("watch_note")
        if said != before:  # the record is written when what it says changes
            self._handle_note("watch_note", said)
        if before is None:
            self._append("vertex", [f"[tfc_jupyter] {said}"])
        print(f"[watcher] {said}", flush=True)

    def gone(self, error: JobGone) -> bool:
        """Vertex AI said the job does not exist: True once it has said so for
        ``gone_after_s`` (the job is lost); until then its status is unknown, and said so (a
        job just made, or a regional hiccup, can read NOT_FOUND for a while)."""
        if self.gone_since is None:
            self.gone_since = time.time()
        if time.time() - self.gone_since >= self.settings.gone_after_s:
            return True
        self.refused(error)
        return False

    def answered(self) -> None:
        """A read of the job's state was answered: the status is known again."""
        self.gone_since = None
        if self.refused_since is None:
            return
        self.refused_since = None
        self._handle_note("watch_note", None)
        self._append("vertex", ["[tfc_jupyter] reads answered again: the job's status is known"])

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> int:
        """Follow the job to its end; the process's exit code."""
        pid = os.getpid()

        def following(record: Any) -> dict[str, Any]:  # "not followed" no longer holds
            fields = followed_again(record)
            return {**fields, "handle": {**fields["handle"], "watcher_pid": pid}}

        self.store.update(self.job_id, mutate=following)
        limit = float(self.conf.get("timeout_s") or 7 * 86400) + 86400
        started = time.monotonic()
        deadline = started + limit
        settle = started + SETTLED_POLLS * self.settings.poll_s
        interval = self.settings.poll_s
        last: JobState | None = None
        while True:
            if settle and time.monotonic() >= settle:  # ran long: its start was no quick one
                settle = 0.0
                self.store.update(
                    self.job_id, mutate=lambda r: {"handle": {**r.handle, QUICK_STARTS: 0}}
                )
            try:
                job: dict[str, Any] | None = self.get_job()
            except JobGone as exc:
                if self.gone(exc):
                    self.store.transition(
                        self.job_id,
                        JobState.FAILED,
                        error=f"lost track of the Vertex AI job: {exc}",
                    )
                    return 1
                job = None
            except BackendError as exc:
                self.refused(exc)
                job = None
            if job is not None:
                self.answered()
                self.keep_trials(job)
            state = JobState.from_vertex(_state(job)) if job is not None else last
            new = self.pull_logs()
            if job is not None and state is not None and state.is_terminal():
                self.drain()
                self.finish(job)
                return 0
            changed = job is not None and state != last
            record = self.store.get(self.job_id)
            current = record.state
            if record.handle.get("watcher_pid") != pid:  # a watcher started beside it, gone
                self.store.update(
                    self.job_id, mutate=lambda r: {"handle": {**r.handle, "watcher_pid": pid}}
                )
            if (
                changed
                and state is not None
                and not (
                    current is JobState.CANCELLING
                    and state in (JobState.QUEUED, JobState.PENDING, JobState.RUNNING)
                )
            ):
                self.store.transition(self.job_id, state)
            last = state
            if time.monotonic() > deadline:  # its state stays as last seen: never an end
                not_followed(  # Vertex AI did not report
                    self.store,
                    self.job_id,
                    f"its watcher stopped following it after {limit / 3600:.0f} h (the job's "
                    "timeout and a day more)",
                )
                return 1
            quiet = not (new or changed)  # poll slower while nothing happens (or reads fail)
            interval = (
                min(interval * 1.5, self.settings.poll_s * 6) if quiet else self.settings.poll_s
            )
            time.sleep(interval)


def main(argv: list[str] | None = None) -> int:
    """Entry point (the Vertex backend starts it; users never need to)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tfc_jupyter.backends.vertex.watcher JOB_DIR", file=sys.stderr)
        return 2
    job_dir = Path(args[0])
    if not watch_lock.hold(job_dir):  # another watcher follows this job: one writer only
        print("[watcher] another watcher follows this job; leaving it to it", flush=True)
        return 0
    try:
        watcher = Watcher(job_dir)
    except TfcError as exc:  # no credentials, no client libraries: the job cannot be followed
        conf = json.loads((job_dir / "vertex.json").read_text())  # (its end is not known)
        not_followed(JobStore(conf["store"]), conf["job_id"], f"cannot follow the job: {exc}")
        print(f"[watcher] {exc}", flush=True)
        return 1
    return watcher.run()


if __name__ == "__main__":
    sys.exit(main())
