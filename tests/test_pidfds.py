"""tfc_jupyter.util.pidfds: a nap that ends when a process does."""

from __future__ import annotations

import subprocess
import sys
import time

from tfc_jupyter.util.pidfds import nap


def test_nap_wakes_when_a_process_it_waits_on_ends() -> None:
    """The supervisor wakes when a replica exits, and a follower when the job's watcher does,
    not at their next poll: ``nap`` returns True as soon as one of its processes ends (a zombie
    not yet reaped counts as ended), and sleeps its whole time, returning False, for a pid that
    is gone already or when it is given none."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    try:
        assert nap(60, [child.pid]) is True  # woken by the exit, not after 60 s
        assert child.poll() == 0
        zombie = subprocess.Popen([sys.executable, "-c", "pass"])
        deadline = time.monotonic() + 30
        while _state(zombie.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert nap(60, [zombie.pid]) is True  # exited, not reaped: at once
        assert zombie.wait(timeout=10) == 0
        assert nap(0.05, [zombie.pid]) is False  # reaped: a plain sleep
        assert nap(0.05) is False
    finally:
        child.kill()
        child.wait(timeout=10)


def _state(pid: int) -> str:
    """The process state letter from ``/proc/PID/stat`` (``Z`` for a zombie)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]
