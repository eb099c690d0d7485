"""Waiting for a process to end without polling it: Linux pidfds, a plain sleep elsewhere.

The job watchers (local supervisor, docker and Vertex AI watchers) wake as soon as a replica
they started exits, and a follower of a job (``Job.follow``, ``Job.wait``) as soon as the job's
watcher exits, having recorded the job's end. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Iterable


def nap(seconds: float, pids: Iterable[int] = ()) -> bool:
    """Sleep ``seconds``, or less: until one of the processes ``pids`` ends (Linux pidfds; a
    plain sleep elsewhere, or for a process already gone). True when one ended.

    The watchers wake as soon as a replica exits, and a follower as soon as the job's watcher
    (which records the end, then exits) does, instead of at their next poll.
    """
    fds: list[int] = []
    try:
        for pid in pids:
            with contextlib.suppress(OSError, AttributeError):  # gone already; not Linux
                fds.append(os.pidfd_open(pid))
        if not fds:
            time.sleep(seconds)
            return False
        return bool(select.select(fds, [], [], seconds)[0])
    finally:
        for fd in fds:
            os.close(fd)
