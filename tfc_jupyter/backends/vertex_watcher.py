"""The watcher of one Vertex AI job: ``python -m tfc_jupyter.backends.vertex_watcher JOB_DIR``.

Started detached by the Vertex backend (and restarted by it if it dies), so following a job
survives a killed kernel. Until the job ends it:

* polls the CustomJob's state and mirrors it into the job records;
* reads the job's Cloud Logging entries (``resource.type="ml_job"``, this job's id) and appends
  each replica's lines to ``<job_dir>/logs/<replica>.log`` (``workerpool0-0`` -> ``chief``,
  ``workerpool1-2`` -> ``worker-2`` ...; Vertex's own messages go to ``vertex.log``), re-reading
  a short window to catch late entries, deduplicated by insert id, with its cursor saved so a
  restarted watcher does not repeat lines;
* polls every ``poll_s`` seconds, slowing down (up to 6x) while nothing changes; transient API
  errors are retried with backoff for at most ``watch_retry_s`` in a row;
* when the job ends, waits (bounded) for the last log entries, then records the final state with
  the failing replica's error and notebook cell (from ``tfc_runtime``'s last line).
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

from ..errors import BackendError, TfcError
from ..files import open_private
from ..gcloud import call, explain
from ..records import JobState, JobStore
from .vertex_api import VertexSettings, job_client, logging_client

LOOKBACK = timedelta(seconds=10)  # entries may arrive late: re-read this window, deduplicated
_ROLES = {"0": "chief", "1": "worker", "2": "ps", "3": "evaluator"}
_FAILED_AT = re.compile(r"\[tfc_runtime\] job failed at (.+?): (.*)$")
_CANNOT_START = re.compile(r"\[tfc_runtime\] cannot start the job: (.*)$")
_REPLICA_EXIT = re.compile(
    r"replica (workerpool(\d)-(\d+)) exited with a non-zero status of (-?\d+)"
)


def replica_name(task_name: str | None) -> str:
    """``workerpool0-0`` -> ``chief``, ``workerpool1-1`` -> ``worker-1``; None -> ``vertex``."""
    m = re.fullmatch(r"workerpool(\d)-(\d+)", task_name or "")
    if not m:
        return "vertex"
    role = _ROLES.get(m.group(1), f"pool{m.group(1)}")
    return role if role == "chief" else f"{role}-{m.group(2)}"


def _stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _text(entry: Any) -> str:
    payload = entry.payload
    if isinstance(payload, dict):
        payload = payload.get("message", json.dumps(payload))
    return str(payload if payload is not None else "").rstrip("\n")


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
        self.jobs = job_client(self.settings, self.region)
        self.logging: Any = logging_client(self.settings, self.project)
        self.log_error: str | None = None

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
    def get_job(self) -> Any:
        """The CustomJob now; transient errors retried for up to ``watch_retry_s``."""
        name = self.conf["resource_name"]
        return call(
            lambda: self.jobs.get_custom_job(name=name, timeout=self.settings.timeout_s),
            what="reading the job's state",
            project=self.project,
            region=self.region,
            settings=self.settings,
            total_s=self.settings.watch_retry_s,
        )

    def pull_logs(self) -> int:
        """Append new entries to the replica logs; the number of new lines."""
        if self.log_error:
            return 0
        flt = (
            f'resource.type="ml_job" AND resource.labels.job_id="{self.conf["vertex_job_id"]}"'
            f' AND timestamp>="{_stamp(self.since)}"'
        )

        def fetch() -> list[Any]:
            return list(
                self.logging.list_entries(
                    resource_names=[f"projects/{self.project}"],
                    filter_=flt,
                    order_by="timestamp asc",
                    page_size=1000,
                )
            )

        try:
            entries = fetch()
        except Exception as exc:  # the poll loop is the retry; logs never stop the follow
            transient, error = explain(
                exc, project=self.project, region=self.region, what="reading the job's logs"
            )
            if transient:
                print(f"[watcher] logs not read this time: {error}", flush=True)
                return 0
            self.log_error = str(error)
            self._append("vertex", [f"[tfc_jupyter] cannot read the job's logs: {error}"])
            return 0
        lines: dict[str, list[str]] = {}
        newest = self.since
        for entry in entries:
            key = entry.insert_id or f"{entry.timestamp}{_text(entry)}"
            if key in self.seen:
                continue
            stamp = entry.timestamp or datetime.now(timezone.utc)
            self.seen[key] = stamp.isoformat()
            newest = max(newest, stamp)
            replica = replica_name((entry.resource.labels or {}).get("task_name"))
            text = _text(entry)
            lines.setdefault(replica, []).extend(text.split("\n"))
            self._note_failure(replica, text)
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

    # -- the end ----------------------------------------------------------------------------
    def failure(self, job: Any) -> tuple[str, str | None]:
        """The one-line error of a failed job and its notebook location."""
        message = " ".join(str(job.error.message or "").split())
        m = _REPLICA_EXIT.search(message)
        replica = replica_name(m.group(1)) if m else None
        if replica is None and self.failures:
            replica = next(iter(self.failures))
        where, what = self.failures.get(replica or "", ("", ""))
        if m or where:
            how = f"exited with status {m.group(4)}" if m else "failed"
            place = f" at {where}" if where and where != "startup" else ""
            detail = what or message.split(". ")[0]
            location = where if where.startswith("cell ") else None
            return f"{replica} {how}{place}: {detail}"[:500], location
        return f"Vertex AI: {message or 'the job failed'}"[:500], None

    def drain(self) -> None:
        """After the job ended: read late entries until none came for ``drain_s`` seconds
        (Cloud Logging shows entries some seconds after they are written), at most 6 x that."""
        quiet = self.settings.drain_s
        now = time.monotonic()
        deadline, last_new = now + 6 * quiet, now
        while time.monotonic() - last_new < quiet and time.monotonic() < deadline:
            if self.pull_logs():
                last_new = time.monotonic()
            time.sleep(min(self.settings.poll_s, 1.0))

    def finish(self, job: Any) -> None:
        """Record the final state (after the logs)."""
        state = JobState.from_vertex(job.state.name)
        error, location = None, None
        if state is JobState.FAILED:
            error, location = self.failure(job)
        elif state is JobState.CANCELLED:
            error = "cancelled"
        vertex_state = job.state.name
        self.store.transition(
            self.job_id,
            state,
            error=error,
            error_location=location,
            mutate=lambda r: {"handle": {**r.handle, "vertex_state": vertex_state}},
        )

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
                job = self.get_job()
            except BackendError as exc:
                self.store.transition(
                    self.job_id, JobState.FAILED, error=f"lost track of the Vertex AI job: {exc}"
                )
                return 1
            state = JobState.from_vertex(job.state.name)
            new = self.pull_logs()
            if state.is_terminal():
                self.drain()
                self.finish(job)
                return 0
            changed = state != last
            current = self.store.get(self.job_id).state
            if changed and not (
                current is JobState.CANCELLING
                and state in (JobState.QUEUED, JobState.PENDING, JobState.RUNNING)
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
            quiet = not (new or changed)  # poll slower while nothing happens
            interval = (
                min(interval * 1.5, self.settings.poll_s * 6) if quiet else self.settings.poll_s
            )
            time.sleep(interval)


def main(argv: list[str] | None = None) -> int:
    """Entry point (the Vertex backend starts it; users never need to)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tfc_jupyter.backends.vertex_watcher JOB_DIR", file=sys.stderr)
        return 2
    job_dir = Path(args[0])
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
