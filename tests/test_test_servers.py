"""The test command stops every server it starts, even when pytest itself is killed: a
JupyterLab started by the browser fixtures ends with the test process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

HERE = Path(__file__).resolve().parent

STARTER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from browser import start_lab
    server = start_lab(Path(sys.argv[2]))
    print(server.proc.pid, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.slow
def test_a_killed_test_process_leaves_no_jupyterlab(tmp_path: Path) -> None:
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(HERE), str(tmp_path / "lab")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert starter.stdout is not None
        line = starter.stdout.readline()  # the server answers: its pid
        assert line.strip().isdigit(), starter.stderr.read() if starter.stderr else line
        lab = psutil.Process(int(line))
        assert "jupyterlab" in " ".join(lab.cmdline())
        os.kill(starter.pid, signal.SIGKILL)  # no fixture teardown, no atexit
        starter.wait(timeout=30)
        gone, alive = psutil.wait_procs([lab], timeout=30)
        assert gone and not alive, [p.cmdline() for p in alive]
    finally:
        if starter.poll() is None:
            starter.kill()
        for proc in psutil.process_iter(["cmdline"]):
            if str(tmp_path) in " ".join(proc.info["cmdline"] or ()):
                proc.kill()  # the server, had the test failed
