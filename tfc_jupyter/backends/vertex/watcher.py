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

from ... import notify
from ...errors import BackendError, TfcError
from ...files import open_private, write_private
from ...gcloud import call, checked
from ...records import JobState, JobStore
from ...registry import TRIALS_FILE
from .. import watch_lock
from .api import VertexSettings, require_clients, rest_session, rest_url
from .logs import ProjectLogs, parse_stamp

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
        self.log_error: str | None = None
        self.last_read = 0.0  # when the last read that answered for this job started
        self.refused_since: float | None = None  # state reads refused since (time.time())

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
        """Append the entries the project's reader delivered; the number of new lines."""
        if self.log_error:
            return 0
        job = self.conf["vertex_job_id"]
        self.reader.register(job, self.since, hurry=hurry)
        state = self.reader.turn()
        lines: dict[str, list[str]] = {}
        newest = self.since
        for delivery in self.reader.take(job):
            self.last_read = max(self.last_read, delivery.read_at)
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
        if state.stopped and state.next_read > time.time() and not lines:
            self.log_error = state.stopped
            self._append("vertex", [f"[tfc_jupyter] cannot read the job's logs: {state.stopped}"])
            print(f"[watcher] log reads stopped: {state.stopped}", flush=True)
        for replica, new in lines.items():
            self._append(replica, new)
        self.since = max(self.since, newest - LOOKBACK)
        self.seen = {k: v for k, v in self.seen.items() if datetime.fromisoformat(v) >= self.since}
        self._save_cursor()
        return sum(len(v) for v in lines.values())

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
        reads were refused added, at most ``watch_retry_s`` in all."""
        quiet = self.settings.drain_s
        start = time.time()
        settled = start  # the last new line, or the end
        hard = start + max(self.settings.watch_retry_s, 6 * quiet)
        while time.time() < hard:
            if self.pull_logs(hurry=True):
                settled = time.time()
            if self.log_error or self.last_read - settled >= quiet:
                break
            state = self.reader.state()
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
            self.store.update(
                self.job_id, mutate=lambda r: {"handle": {**r.handle, "watch_note": said}}
            )
        if before is None:
            self._append("vertex", [f"[tfc_jupyter] {said}"])
        print(f"[watcher] {said}", flush=True)

    def answered(self) -> None:
        """A read of the job's state was answered: the status is known again."""
        if self.refused_since is None:
            return
        self.refused_since = None
        self.store.update(
            self.job_id,
            mutate=lambda r: {"handle": {k: v for k, v in r.handle.items() if k != "watch_note"}},
        )
        self._append("vertex", ["[tfc_jupyter] reads answered again: the job's status is known"])

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> int:
        """Follow the job to its end; the process's exit code."""
        pid = os.getpid()
        self.store.update(
            self.job_id, mutate=lambda r: {"handle": {**r.handle, "watcher_pid": pid}}
        )
        limit = float(self.conf.get("timeout_s") or 7 * 86400) + 86400
        deadline = time.monotonic() + limit
        interval = self.settings.poll_s
        last: JobState | None = None
        while True:
            try:
                job: dict[str, Any] | None = self.get_job()
            except JobGone as exc:
                self.store.transition(
                    self.job_id, JobState.FAILED, error=f"lost track of the Vertex AI job: {exc}"
                )
                return 1
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
            if time.monotonic() > deadline:
                self.store.transition(
                    self.job_id,
                    JobState.FAILED,
                    error=(
                        f"stopped following the job after {limit / 3600:.0f} h; it may still run: "
                        f"{self.store.get(self.job_id).console_url}"
                    ),
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
        conf = json.loads((job_dir / "vertex.json").read_text())
        JobStore(conf["store"]).transition(
            conf["job_id"], JobState.FAILED, error=f"cannot follow the Vertex AI job: {exc}"
        )
        print(f"[watcher] {exc}", flush=True)
        return 1
    return watcher.run()


if __name__ == "__main__":
    sys.exit(main())
