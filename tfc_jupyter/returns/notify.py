"""Saying that a job ended, wherever the user asked: ``--notify URL`` (repeatable) or the
``notify`` setting, any URL apprise sends to (``json://`` and ``form://`` webhooks,
``mailto://``, ``slack://``, ``discord://``, ``ntfy://`` ...).

The process that records a job's end sends it (a local job's supervisor, a docker job's
watcher, a Vertex AI job's watcher), so it goes with no browser and no kernel open; the Jupyter
server sends any it finds unsent (a watcher that died before it could). A job is told once:
the sender claims it in the job's record first. Each send has a deadline, and what happened is
kept in the record (``handle["notified"]``), never raised: a webhook that is down loses no job.

Apprise is imported only to check a URL and to send.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any

from ..errors import TfcError
from ..store.records import JobRecord, JobState, JobStore, JobStoreError
from ..util.masking import (  # noqa: F401  (check, shown, shown_all, unmasked, masked: notify's API)
    _apprise,
    _Hiding,
    check,
    masked,
    shown,
    shown_all,
    unmasked,
)
from .outcome import summary_line

NOTIFIED = "notified"
"""The record's ``handle`` key: ``{"at": time, "ok": bool, "said": what went wrong}``."""
SEND_DEADLINE_S = 20.0
"""How long one job's messages may take, all targets together."""
UNSENT_WINDOW_S = 24 * 3600.0
"""How far back the server looks for ended jobs nobody told about."""


def targets(record: JobRecord) -> tuple[str, ...]:
    """Where the job's end is to be said (its spec's ``notify``)."""
    value = (record.spec or {}).get("notify") or ()
    return tuple(str(u) for u in value if isinstance(u, str) and u.strip())


def message(record: JobRecord) -> tuple[str, str, str]:
    """``(title, body, kind)`` of a job's end; kind is apprise's success, failure or info."""
    line = summary_line(record)
    title = f"TensorFlow job {record.name} {record.state.value}"
    body = [line.replace(f"{record.id}: ", f"{record.name} ({record.id}): ", 1)]
    if record.notebook:
        body.append(f"notebook: {record.notebook}")
    if record.console_url:
        body.append(f"console: {record.console_url}")
    kind = {JobState.SUCCEEDED: "success", JobState.FAILED: "failure"}.get(record.state, "info")
    return title, "\n".join(body), kind


def _due(record: JobRecord) -> bool:
    """The job has ended, has somewhere to be told, and nobody has claimed the telling."""
    return record.state.is_terminal() and bool(targets(record)) and NOTIFIED not in record.handle


def _claim(store: JobStore, job_id: str) -> JobRecord | None:
    """The ended record, claimed for telling (``handle["notified"]`` set in one write); None
    when it has no targets, has not ended, or another process claimed it."""
    if not _due(store.get(job_id)):  # a read first: a job with nowhere to tell costs no write
        return None
    claimed = []

    def claim(rec: JobRecord) -> dict[str, Any]:
        if not _due(rec):  # checked again inside the write: one claimant wins
            return {}
        claimed.append(True)
        return {"handle": {**rec.handle, NOTIFIED: {"at": time.time(), "ok": None}}}

    record = store.update(job_id, mutate=claim)
    return record if claimed else None


def send(store: JobStore, job_id: str, *, deadline_s: float = SEND_DEADLINE_S) -> bool | None:
    """Tell the job's targets that it ended, once. True: every target took it; False: one did
    not (why is kept in the record); None: nothing to send, or sent already. Never raises."""
    try:
        record = _claim(store, job_id)
    except TfcError:  # the store unreadable, the job removed
        return None
    if record is None:
        return None
    said = ""
    try:
        title, body, kind = message(record)
        ok, said = _deliver(targets(record), title, body, kind, deadline_s)
    except Exception as exc:  # a message that cannot be made or sent loses no job
        ok, said = False, f"{type(exc).__name__}: {exc}"
    said = masked(said, targets(record))  # served by the jobs API: no password in it
    result = {"at": time.time(), "ok": ok, **({"said": said[:500]} if said else {})}
    with contextlib.suppress(TfcError):
        store.update(job_id, mutate=lambda rec: {"handle": {**rec.handle, NOTIFIED: result}})
    return ok


def _deliver(
    urls: Sequence[str], title: str, body: str, kind: str, deadline_s: float
) -> tuple[bool, str]:
    """Send to every URL within ``deadline_s`` (apprise's own timeouts inside it)."""
    apprise = _apprise()
    outcome: dict[str, Any] = {}
    hiding = _Hiding(urls)  # made here: it asks apprise for each URL's shown form

    def run() -> None:
        with hiding, apprise.LogCapture(level=apprise.logging.WARNING) as said:
            box = apprise.Apprise()
            for url in urls:
                box.add(url)
            outcome["ok"] = bool(box.notify(body=body, title=title, notify_type=kind))
        outcome["said"] = " ".join(said.getvalue().split())

    sender = threading.Thread(target=run, name="tfc-notify", daemon=True)
    sender.start()
    sender.join(deadline_s)
    if "ok" not in outcome:
        return False, f"not sent within {deadline_s:g} s"
    return outcome["ok"], "" if outcome["ok"] else outcome.get("said") or "not sent"


def send_unsent(store: JobStore, *, window_s: float = UNSENT_WINDOW_S) -> int:
    """Send for every job that ended within ``window_s`` with targets nobody told (its watcher
    died first); how many were sent. The Jupyter server calls it now and then."""
    since = time.time() - window_s
    count = 0
    try:
        records = store.list(limit=200)
    except JobStoreError:
        return 0
    for rec in records:
        if _due(rec) and (rec.ended_at or rec.updated_at) >= since:
            count += send(store, rec.id) is not None
    return count
