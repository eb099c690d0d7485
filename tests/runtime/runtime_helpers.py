"""Helpers for tfc_runtime tests: job environments, free ports, jobs with hard deadlines."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

# Variables the runtime reads: a test job starts without any of them unless it sets them.
JOB_VARS = (
    "TF_CONFIG",
    "CLUSTER_SPEC",
    "TF_USE_LEGACY_KERAS",
    "TFC_REMOTE",
    "TF_KERAS_RUNNING_REMOTELY",
    "TFC_JOB_DIR",
    "AIP_MODEL_DIR",
    "AIP_CHECKPOINT_DIR",
    "AIP_TENSORBOARD_LOG_DIR",
    "CLOUD_ML_JOB_ID",
    "TFC_RESUME",
)


def clear_job_vars(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Remove every job variable from this process's environment (restored after the test).

    (No conftest.py here: a second ``conftest`` module breaks ``from conftest import``
    elsewhere in tests/.)
    """
    for name in JOB_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def job_env(**extra: str) -> dict[str, str]:
    """Environment for a ``python -m tfc_runtime`` subprocess: no inherited job variables."""
    env = {k: v for k, v in os.environ.items() if k not in JOB_VARS}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.update(extra)
    return env


def free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1 (bound to port 0, then released)."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


@dataclass
class Finished:
    """One finished task: exit status and its combined output."""

    returncode: int
    stdout: str
    stderr: str


def run_runtime(
    args: Sequence[str], cwd: Path, env: dict[str, str], timeout: float = 60
) -> Finished:
    """Run ``python -m tfc_runtime ARGS``; SIGKILL it (subprocess.run does) past ``timeout``."""
    done = subprocess.run(
        [sys.executable, "-m", "tfc_runtime", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Finished(done.returncode, done.stdout, done.stderr)


def run_together(
    jobs: Sequence[tuple[Sequence[str], dict[str, str]]], cwd: Path, deadline: float
) -> list[Finished]:
    """Start every job at once; all must end within ``deadline`` s, else all are SIGKILLed.

    Output goes to files (two chatty TensorFlow processes could fill a pipe and stall).
    """
    procs: list[tuple[subprocess.Popen[bytes], Path, Path]] = []
    try:
        for i, (args, env) in enumerate(jobs):
            out, err = cwd / f"task{i}.out", cwd / f"task{i}.err"
            with out.open("wb") as fo, err.open("wb") as fe:
                cmd = [sys.executable, "-m", "tfc_runtime", *args]
                procs.append(
                    (subprocess.Popen(cmd, cwd=cwd, env=env, stdout=fo, stderr=fe), out, err)
                )
        end = time.monotonic() + deadline
        for proc, _, _ in procs:
            proc.wait(timeout=max(0.1, end - time.monotonic()))
    finally:
        for proc, _, _ in procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)  # TensorFlow ignores SIGTERM
                proc.wait()
    return [
        Finished(p.returncode, o.read_text(errors="replace"), e.read_text(errors="replace"))
        for p, o, e in procs
    ]
