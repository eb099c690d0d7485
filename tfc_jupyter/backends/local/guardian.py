"""The guardian of one local job: every process of the job ends when its supervisor dies.

``python guardian.py JOB_ID SUPERVISOR_PID``, run by its path (the standard library only,
nothing of the package; psutil where there is no ``/proc``), is started by the supervisor
(:mod:`.supervisor`) as its child, in a session of its own, with a pipe from the supervisor as
its standard input. The supervisor
writes ``groups PID ...`` each time it starts the replicas (their process groups) and ``done``
once it has ended the job itself. The end of that input without ``done`` means the supervisor
is gone, however it died (SIGKILL, out of memory, a crash): the kernel closes the pipe with it.

The replicas die with the supervisor already (PR_SET_PDEATHSIG); what *they* started does not.
The guardian then kills, with SIGKILL:

* each replica's process group (children that stayed in it);
* every process it last saw below the supervisor (a child in a session of its own or with an
  emptied environment, orphaned and held by the supervisor as their subreaper: Linux looks in
  ``/proc`` every ``SNAPSHOT_S``), if still the same process;
* every process of this user whose environment carries ``TFC_JOB_ID=JOB_ID`` (every replica
  has it and whatever it starts inherits it), until a pass finds none;

and exits. Elsewhere than Linux only the process groups and (with psutil) the environments
are reached.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Callable

SNAPSHOT_S = 1.0  # how often the supervisor's descendants are looked at (Linux)
SWEEP_PASSES = 20  # environment sweeps at most, until one finds nothing
SWEEP_PAUSE_S = 0.05
PROC = "/proc"


def _start_time(pid: int) -> str | None:
    """Process ``pid``'s start time in clock ticks since boot (``/proc/PID/stat``), None when
    it is gone or is a zombie."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux ``/proc/PID/task/TID/children``)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"{PROC}/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        path = f"{PROC}/{pid}/task/{tid}/children"
        with contextlib.suppress(OSError, ValueError), open(path, "rb") as fh:
            out.extend(int(x) for x in fh.read().split())
    return out


def _children_by_scan() -> dict[int, list[int]]:
    """Every process's children, from each ``/proc/PID/stat`` (kernels without
    ``/proc/PID/task/TID/children``)."""
    tree: dict[int, list[int]] = {}
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"{PROC}/{name}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(ppid, []).append(int(name))
    return tree


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid`` (Linux), by pid, with its start time; ``{}`` elsewhere."""
    if not os.path.isdir(f"{PROC}/self"):
        return {}
    children: Callable[[int], list[int]] = _children
    if not os.path.exists(f"{PROC}/self/task/{os.getpid()}/children"):
        tree = _children_by_scan()
        children = lambda p: tree.get(p, [])  # noqa: E731
    found: dict[int, str] = {}
    todo = children(pid)
    while todo:
        child = todo.pop()
        if child in found:
            continue
        start = _start_time(child)
        if start is not None:
            found[child] = start
            todo.extend(children(child))
    return found


def _proc_job_processes(job_id: str) -> list[int]:
    """This user's live processes whose environment carries ``TFC_JOB_ID=job_id`` (Linux)."""
    wanted = f"TFC_JOB_ID={job_id}".encode()
    uid, me = os.getuid(), os.getpid()
    found = []
    for name in os.listdir(PROC):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if os.stat(f"{PROC}/{name}").st_uid != uid:
                continue
            with open(f"{PROC}/{name}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if wanted in env and _start_time(int(name)) is not None:
            found.append(int(name))
    return found


def _psutil_job_processes(job_id: str) -> list[int]:
    """As :func:`_proc_job_processes`, through psutil (systems without ``/proc``)."""
    try:
        import psutil
    except ImportError:
        return []
    uid, me, found = os.getuid(), os.getpid(), []
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.pid == me or proc.info["uids"] is None or proc.info["uids"].real != uid:
                continue
            if proc.environ().get("TFC_JOB_ID") == job_id:
                found.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


def job_processes(job_id: str) -> list[int]:
    """This user's processes (not this one) that carry the job's id in their environment."""
    if os.path.isdir(f"{PROC}/self"):
        return _proc_job_processes(job_id)
    return _psutil_job_processes(job_id)


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def sweep(job_id: str, groups: set[int], seen: dict[int, str]) -> int:
    """Kill every process of the job (see the module docstring); how many were signalled."""
    killed = 0
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
            killed += 1
    for pid, start in seen.items():
        if _start_time(pid) == start:
            _kill(pid)
            killed += 1
    for _ in range(SWEEP_PASSES):  # a process forking meanwhile is caught by the next pass
        found = job_processes(job_id)
        if not found:
            break
        for pid in found:
            _kill(pid)
        killed += len(found)
        time.sleep(SWEEP_PAUSE_S)
    return killed


def guard(job_id: str, supervisor: int, fd: int = 0) -> int:
    """Read the supervisor's lines on ``fd`` until ``done`` (exit 0, nothing killed) or the
    end of the input or the supervisor gone (sweep, exit 0)."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    groups: set[int] = set()
    seen: dict[int, str] = {}
    pending = b""
    while True:
        ready, _, _ = select.select([fd], [], [], SNAPSHOT_S)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                word, _, arg = line.decode(errors="replace").strip().partition(" ")
                if word == "done":
                    return 0
                if word == "groups":  # the replicas' groups now (a restart replaces them)
                    groups = {int(x) for x in arg.split() if x.isdigit()}
            if not chunk:
                break  # the supervisor is gone: the pipe closed with it
        if os.getppid() != supervisor:
            break  # gone, and something else held the pipe open
        seen = descendants(supervisor)
        seen.pop(os.getpid(), None)
    killed = sweep(job_id, groups, seen)
    print(
        f"[tfc_jupyter] the job's supervisor died: its guardian ended the job's processes "
        f"({killed} signalled)",
        file=sys.stderr,
        flush=True,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point (the supervisor starts it; users never need to)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or not args[1].isdigit():
        print("usage: python guardian.py JOB_ID SUPERVISOR_PID", file=sys.stderr)
        return 2
    return guard(args[0], int(args[1]))


if __name__ == "__main__":
    sys.exit(main())
