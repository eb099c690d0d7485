"""A local job's supervisor, started before its job exists: ``tfc-jupyter run`` starts one first
thing, so that the supervisor's interpreter and imports (about 70 ms) run while the command
imports, reads the notebook and plans, not after.

The spare is ``python -m tfc_jupyter.backends.spare``, detached (its own session) as a
supervisor is. It imports :mod:`.local.supervisor` and waits for one line on its stdin: a job
folder, whose ``launch.json`` is written. It then takes that folder's ``logs/supervisor.log`` as
its output, moves into the folder and runs the supervisor there, exactly as ``python -m
tfc_jupyter.backends.local.supervisor JOB_DIR`` would. An empty line or the end of its stdin (the
command ended) ends it, having started nothing; a command that does not use it (a failed plan,
another backend) stops and reaps it (:func:`discard`).

The local backend hands a job to the spare with :func:`claim`, or starts a supervisor as before
when there is none (the magics, the REST API, a second job). Standard library only: the command
imports this module before anything else of the product.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

_DROP_ENV = ("JPY_", "PYDEVD_", "VSCODE_", "KERNEL_")  # as the local backend drops them
WATCHER_LOG = "supervisor.log"  # as .watched names it

_spare: subprocess.Popen[bytes] | None = None


def _pythonpath() -> str:
    """PYTHONPATH that lets the spare import this package and the runtime (see
    ``watched.package_pythonpath``; ``RUNTIME_PARENT`` of the local backend)."""
    root = Path(__file__).resolve().parents[2]
    parts = [str(root), str(root / "runtime"), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


def start() -> None:
    """Start the spare supervisor of this process's next local job (once; quietly nothing
    when it cannot start: the backend then starts a supervisor as usual)."""
    global _spare
    if _spare is not None:
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_ENV)}
    env["PYTHONPATH"] = _pythonpath()
    try:
        _spare = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    except OSError:
        _spare = None


def claim(job_dir: Path) -> int | None:
    """Hand ``job_dir`` (its ``launch.json`` written) to the spare; its pid, or None when there
    is no spare, or it has ended (the caller starts a supervisor itself)."""
    global _spare
    proc, _spare = _spare, None
    if proc is None or proc.stdin is None or proc.poll() is not None:
        return None
    try:
        proc.stdin.write(f"{job_dir}\n".encode())
        proc.stdin.close()
    except (OSError, ValueError):
        return None
    return proc.pid


def discard() -> None:
    """End the spare unused (the job runs elsewhere, or was not launched), and reap it: a
    command that launched nothing leaves no process behind. It was handed no job, so it has
    started nothing and is stopped at once."""
    global _spare
    proc, _spare = _spare, None
    if proc is None:
        return
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def _take_over(job_dir: Path) -> None:
    """In the spare: become the job's supervisor process as ``start_watcher`` starts one (its
    output in ``logs/supervisor.log``, no input, the job folder as working directory)."""
    fd = os.open(job_dir / "logs" / WATCHER_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    for target in (1, 2):
        os.dup2(fd, target)
    os.dup2(null, 0)
    os.close(fd)
    os.close(null)
    os.chdir(job_dir)


def main() -> int:
    """The spare: wait for a job folder on stdin, then supervise that job."""
    from .local import supervisor  # the supervisor's imports, done while we wait

    line = sys.stdin.buffer.readline().decode(errors="replace").strip()
    if not line:
        return 0
    job_dir = Path(line)
    _take_over(job_dir)
    return supervisor.main([str(job_dir)])


if __name__ == "__main__":
    sys.exit(main())
