"""The supervisor of one local job: ``python -m tfc_jupyter.backends.local_supervisor JOB_DIR``.

Started detached (its own session) by the local backend, so the job survives a killed kernel.
It starts every replica (chief, workers, ps, evaluator) as ``python -m tfc_runtime`` with the
``CLUSTER_SPEC`` / ``TF_CONFIG`` Vertex AI would set, on free loopback ports, each in its own
process group and tied to the supervisor's life (PR_SET_PDEATHSIG), and then:

* marks the job RUNNING, SUCCEEDED, FAILED or CANCELLED in the job records;
* fails the job when a replica exits non-zero (stopping the others) or does not join the cluster
  by the start-up deadline, naming the replica, its last lines and the notebook cell of the error;
* on SIGTERM (cancel) stops every replica: SIGTERM, then SIGKILL after a grace period
  (TensorFlow ignores SIGTERM);
* ends parameter servers when the chief is done (they never exit by themselves);
* enforces the job's timeout.

It imports nothing heavy: the standard library, psutil and the job records.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..records import JobState, JobStore
from .watched import open_private

GRACE_S = 3.0
POLL_S = 0.1


@dataclass
class Replica:
    """One process of the job."""

    name: str  # chief, worker-1, ps-0, evaluator-0
    env: dict[str, str]
    daemon: bool  # parameter servers: ended when the chief is done
    proc: subprocess.Popen[bytes] | None = None
    ready: bool = False

    @property
    def task(self) -> str:
        """``<task_type>-<index>``, as tfc_runtime names its status and error files."""
        return "chief-0" if self.name == "chief" else self.name

    @property
    def ready_marker(self) -> str:
        return self.task + ".ready"


def _set_pdeathsig() -> None:
    """In the child: die with SIGKILL when the supervisor dies (Linux)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _tail(path: Path, lines: int = 12) -> list[str]:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 16384))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


def describe_failure(job_dir: Path, name: str, task: str, code: int) -> tuple[str, str | None]:
    """``(error, notebook location)`` of a replica that exited with ``code`` (negative: signal),
    from the runtime's ``errors/<task>.json``, else the last line of its log."""
    error_file = job_dir / "errors" / f"{task}.json"
    location = None
    detail = ""
    if error_file.is_file():
        try:
            info = json.loads(error_file.read_text())
            if info.get("cell"):
                location = f"cell {info['cell']}, line {info['line']}"
            detail = f"{info.get('type', 'Error')}: {info.get('message', '')}".strip()
        except (OSError, ValueError):
            pass
    if not detail:
        tail = _tail(job_dir / "logs" / f"{name}.log", 1)
        detail = tail[-1] if tail else "no output"
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    where = f" at {location}" if location else ""
    return f"{name} {how}{where}: {detail}"[:500], location


class Supervisor:
    """Runs and watches the replicas of one job folder (see the module docstring)."""

    def __init__(self, job_dir: Path) -> None:
        self.job_dir = job_dir
        self.launch = json.loads((job_dir / "launch.json").read_text())
        self.job_id: str = self.launch["job_id"]
        self.store = JobStore(self.launch["store"])
        self.replicas = [
            Replica(r["name"], r["env"], r.get("daemon", False)) for r in self.launch["replicas"]
        ]
        self.cancel_requested = False
        self.logs = job_dir / "logs"
        self.status = job_dir / "status"

    def _on_term(self, signum: int, frame: Any) -> None:
        self.cancel_requested = True

    def _start(self) -> None:
        python = self.launch.get("python") or sys.executable
        argv = [python, "-m", "tfc_runtime", *self.launch["runtime_args"]]
        for replica in self.replicas:
            log = open_private(self.logs / f"{replica.name}.log", buffering=0)
            env = {**self.launch["env"], **replica.env}
            replica.proc = subprocess.Popen(
                argv,
                cwd=self.launch["cwd"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_set_pdeathsig,
            )
            log.close()
        handle = {
            "supervisor_pid": os.getpid(),
            "replicas": {r.name: r.proc.pid for r in self.replicas if r.proc},
        }
        self.store.transition(self.job_id, JobState.RUNNING, handle=handle)

    def _stop_all(self) -> None:
        live = [r.proc for r in self.replicas if r.proc and r.proc.poll() is None]
        for proc in live:
            _kill_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline and any(p.poll() is None for p in live):
            time.sleep(POLL_S)
        for proc in live:
            _kill_group(proc, signal.SIGKILL)
        for proc in live:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        for replica in self.replicas:  # children the replicas left behind in their groups
            if replica.proc:
                _kill_group(replica.proc, signal.SIGKILL)

    def _failure(self, replica: Replica, code: int) -> tuple[str, str | None]:
        return describe_failure(self.job_dir, replica.name, replica.task, code)

    def run(self) -> int:
        """Start the replicas and watch them to the end; returns the supervisor's exit code."""
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        self.logs.mkdir(exist_ok=True)
        self.status.mkdir(exist_ok=True)
        try:
            self._start()
        except Exception as exc:  # a replica could not even start
            self.store.transition(self.job_id, JobState.FAILED, error=f"could not start: {exc}")
            self._stop_all()
            return 1
        started = time.monotonic()
        startup = float(self.launch.get("startup_timeout", 300))
        timeout = self.launch.get("timeout")
        state, error, location = JobState.SUCCEEDED, None, None
        while True:
            if self.cancel_requested:
                state, error = JobState.CANCELLED, "cancelled"
                break
            for replica in self.replicas:
                if not replica.ready and (self.status / replica.ready_marker).exists():
                    replica.ready = True
            failed = [
                (r, r.proc.returncode)
                for r in self.replicas
                if r.proc and r.proc.poll() is not None and r.proc.returncode != 0 and not r.daemon
            ]
            if failed:
                replica, code = failed[0]
                state = JobState.FAILED
                error, location = self._failure(replica, code)
                break
            workers = [r for r in self.replicas if not r.daemon]
            if all(r.proc and r.proc.poll() == 0 for r in workers):
                break
            elapsed = time.monotonic() - started
            waiting = [
                r.name for r in self.replicas if not r.ready and r.proc and r.proc.poll() is None
            ]
            if waiting and elapsed > startup:
                state = JobState.FAILED
                error = (
                    f"{', '.join(waiting)} did not join the cluster within {startup:g} s "
                    f"(see logs/{waiting[0]}.log)"
                )
                break
            if timeout and elapsed > float(timeout):
                state, error = JobState.FAILED, f"the job ran past its timeout of {timeout} s"
                break
            time.sleep(POLL_S)
        if state is JobState.CANCELLED:
            self.store.transition(self.job_id, JobState.CANCELLING)
        self._stop_all()
        codes = {r.name: (r.proc.returncode if r.proc else None) for r in self.replicas}
        self.store.transition(
            self.job_id,
            state,
            error=error if state is not JobState.SUCCEEDED else None,
            error_location=location,
            mutate=lambda rec: {"handle": {**rec.handle, "exit_codes": codes}},
        )
        return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point (the local backend starts it; users never need to)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tfc_jupyter.backends.local_supervisor JOB_DIR", file=sys.stderr)
        return 2
    return Supervisor(Path(args[0])).run()


if __name__ == "__main__":
    sys.exit(main())
