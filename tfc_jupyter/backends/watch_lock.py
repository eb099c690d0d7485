"""One watcher a job: a lock file in the job folder that its watcher holds while it lives.

A watcher is started again when the one before died (``refresh``); two processes may find it
dead at the same moment and each start one. Two watchers of one job would write each log line
twice, so a watcher that cannot take the lock leaves at once, and "is one watching?" is asked of
the lock, which dies with its holder, before a pid that may be stale. Where there is no
``fcntl`` (Windows) nothing is locked and the pid alone answers.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = "watcher.lock"
_held: list[IO[bytes]] = []  # the lock this process holds, open for its lifetime


def hold(job_dir: Path) -> bool:
    """Take the job's watcher lock for this process's life; False when another holds it."""
    if fcntl is None:
        return True
    fh = open(job_dir / LOCK_FILE, "ab")  # noqa: SIM115 - held until the process ends
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        return False
    os.set_inheritable(fh.fileno(), False)
    _held.append(fh)
    return True


def watched(job_dir: Path) -> bool | None:
    """True while a live watcher holds the job's lock, False when none does, None when this
    platform cannot tell (no ``fcntl``) or the job folder has no lock file yet."""
    path = job_dir / LOCK_FILE
    if fcntl is None or not path.exists():
        return None
    try:
        with open(path, "ab") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            with contextlib.suppress(OSError):
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            return False
    except OSError:
        return None
