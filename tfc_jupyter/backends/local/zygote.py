"""The warm runtime's process (a zygote): TensorFlow and the runtime imported once, nothing
executed, forked into a job's supervisor for every local job that imports TensorFlow.

Started by :mod:`.warm` (its owner: the kernel, the Jupyter server, the command) as
``python -c BOOT IDLE_S ROOT FOLDER`` in the environment a replica imports TensorFlow in. It imports
``tensorflow`` and ``tfc_runtime``'s modules (no device is listed, no thread, session or server
started), freezes what it imported out of the garbage collector's sight, writes
``FOLDER/<pid>.json`` (for ``tfc-jupyter jobs`` and ``%tfc_jobs`` to say it is there and what it
holds), says ``ready`` on its stdout, and then reads one line per job on its stdin::

    job {"dir": JOB_DIR, "env": {...the supervisor's environment...}}

and answers ``started PID``: a fork of itself, in a session of its own, that becomes the job's
supervisor (:mod:`.supervisor`), which forks each replica in turn (:mod:`.forked`). The end
of its stdin (its owner ended, however it ended), an empty line, or ``IDLE_S`` seconds without a
job end it; the jobs it started go on. The environment comes through the pipe, never the disk.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import sys
import time
from pathlib import Path

BOOT = (
    "import sys; p = list(sys.path[1:]); sys.path.insert(1, sys.argv[2]); "
    "from tfc_jupyter.backends.local import zygote; sys.exit(zygote.main(p, sys.argv[1:]))"
)
"""The zygote's ``python -c`` program: ``sys.path`` as the interpreter made it (what a replica
starts with), then the product's folder to import this module from."""


def _reap(*_: object) -> None:
    """SIGCHLD: collect the supervisors that ended (they are this process's children)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _imports() -> None:
    """What every job that imports TensorFlow imports anyway, in the order the runtime does."""
    import tfc_runtime.__main__  # noqa: F401  (its modules: crash, results, resume, strategy ...)

    del sys.modules["tfc_runtime.__main__"]  # a replica runs it as __main__, as -m does
    with contextlib.suppress(AttributeError):
        delattr(sys.modules["tfc_runtime"], "__main__")
    import tensorflow  # noqa: F401


def _supervisor_imports() -> None:
    """What a job's supervisor imports (the job records, psutil ...), done once here: each
    supervisor forked starts at once. Not in a replica's ``sys.modules`` (:mod:`.forked`)."""
    with contextlib.suppress(Exception):
        import psutil  # noqa: F401

        from .. import spare  # noqa: F401
        from . import guardian, supervisor  # noqa: F401


def _rss() -> int:
    """This process's resident memory, in bytes (0 where /proc cannot say)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def main(path: list[str], argv: list[str]) -> int:
    """Import, say ready, fork a supervisor per job line, until the owner or the idle time ends."""
    idle_s, folder = float(argv[0]), Path(argv[2])
    withheld = frozenset(n for n in os.environ.pop("TFC_WARM_WITHHELD", "").split(",") if n)
    os.environ.update({"TFC_REMOTE": "1", "TF_KERAS_RUNNING_REMOTELY": "1"})
    before = dict(os.environ)
    try:
        _imports()
    except BaseException as exc:  # (said to the owner, who starts jobs cold)
        _say(f"failed {type(exc).__name__}: {exc}"[:500])
        return 1
    from .forked import Base  # after the reference of sys.modules is taken below: not in it

    modules = frozenset(m for m in sys.modules if not m.startswith("tfc_jupyter"))
    fds = frozenset(int(fd) for fd in os.listdir("/proc/self/fd")) - {0, 1, 2}
    after = dict(os.environ)  # TensorFlow's import sets a few variables (TF2_BEHAVIOR ...)
    added = {k: v for k, v in after.items() if before.get(k) != v}
    base = Base(
        env=before, modules=modules, path=tuple(path), fds=fds, added=added, withheld=withheld
    )
    _supervisor_imports()  # after the reference: a replica drops them, the supervisor keeps them
    gc.freeze()  # forks then share these pages, untouched by collections
    signal.signal(signal.SIGCHLD, _reap)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the owner's terminal is theirs
    me = folder / f"{os.getpid()}.json"
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        me.write_text(json.dumps({"pid": os.getpid(), "owner": os.getppid(), "idle_s": idle_s}))
    _say(json.dumps({"ready": os.getpid(), "rss": _rss(), "modules": len(modules)}))
    try:
        return _serve(base, idle_s)
    finally:
        with contextlib.suppress(OSError):
            me.unlink()


def _serve(base: object, idle_s: float) -> int:
    """The loop: one job line, one fork; ends at EOF, an empty line or the idle time."""
    last = time.monotonic()
    while True:
        left = last + idle_s - time.monotonic() if idle_s > 0 else None
        if left is not None and left <= 0:
            return 0
        ready, _, _ = select.select([sys.stdin], [], [], left)
        if not ready:
            continue
        line = sys.stdin.buffer.readline().decode(errors="replace").strip()
        if not line:
            return 0
        last = time.monotonic()
        kind, _, body = line.partition(" ")
        if kind != "job":
            _say("error unknown request")
            continue
        try:
            job = json.loads(body)
            pid = os.fork()
        except (ValueError, OSError) as exc:
            _say(f"error {exc}")
            continue
        if pid == 0:
            _supervise(base, Path(job["dir"]), dict(job["env"]))
        _say(f"started {pid}")


def _supervise(base: object, job_dir: Path, env: dict[str, str]) -> None:
    """In the fork: become the job's supervisor, as ``python -m ...supervisor JOB_DIR`` would
    be, detached (a session of its own), its output in the job's ``logs/supervisor.log``."""
    from .forked import end_with

    def supervise() -> int:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        os.environ.clear()
        os.environ.update(env)
        from .. import spare

        spare._take_over(job_dir)
        from .supervisor import Supervisor

        return Supervisor(job_dir, base=base).run()  # type: ignore[arg-type]

    end_with(supervise)
