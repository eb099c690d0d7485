"""The job's report key, kept out of the code's reach (issue 39).

Where reports travel with the logs (Vertex AI), a line the code prints could look like one. Each
report line is therefore signed with a key made at launch (:func:`tfc_runtime.protocol.report_line`)
that the launch puts in the replica's environment as :data:`~tfc_runtime.protocol.REPORT_KEY_ENV`.
The code must not read it there: ``os.environ`` is the code's, and ``/proc/self/environ`` keeps
the environment a process started with, whatever is removed later. So ``python -m tfc_runtime``
(or the package route's ``tfc_job.task``) starts itself again, first thing, without the key in
its environment, and hands the key over through a pipe it reads and closes before the code runs.
"""

from __future__ import annotations

import os
import sys

from tfc_runtime.protocol import REPORT_KEY_ENV

_FD_ENV = "TFC_REPORT_KEY_FD"
_ENTRY_POINTS = (["-m", "tfc_runtime"], ["-m", "tfc_job.task"])
_key = ""


def take() -> None:
    """Take the key out of the environment (the first thing the runtime does). Started as a
    module with the key in its environment, the process is replaced by itself without it."""
    global _key
    handed = os.environ.pop(_FD_ENV, None)
    if handed is not None:
        try:
            with os.fdopen(int(handed), "rb") as pipe:
                _key = pipe.read(256).decode("ascii", "replace").strip()
        except (OSError, ValueError):
            _key = ""
        return
    key = os.environ.pop(REPORT_KEY_ENV, "")
    if not key:
        return
    _key = key
    if os.name != "posix" or list(getattr(sys, "orig_argv", [])[1:3]) not in _ENTRY_POINTS:
        return  # called in a process of another kind (a test): the key stays in memory only
    read, write = os.pipe()
    os.write(write, key.encode("ascii", "replace"))
    os.close(write)
    os.set_inheritable(read, True)
    env = {**os.environ, _FD_ENV: str(read)}
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def key() -> str:
    """The job's report key ("" where reports are not signed: the job has a results file)."""
    return _key
