"""The supervisor of one local job: ``python -m tfc_jupyter.backends.local.supervisor JOB_DIR``.

Started detached (its own session) by the local backend, so the job survives a killed kernel.
It starts every replica (chief, workers, ps, evaluator) as ``python -m tfc_runtime`` with the
``CLUSTER_SPEC`` / ``TF_CONFIG`` Vertex AI would set, on free loopback ports, each in its own
process group and tied to the supervisor's life (PR_SET_PDEATHSIG), and then:

* marks the job RUNNING, SUCCEEDED, FAILED or CANCELLED in the job records;
* restarts the job's replicas when one is killed from outside (SIGKILL, SIGTERM, SIGHUP: out
  of memory, by hand), up to ``restarts`` times (5, as Vertex AI restarts a replica), so a
  user can rehearse a restart here; the runtime resumes the training (``tfc_runtime.resume``);
* fails the job when a replica exits non-zero otherwise (stopping the others) or does not join
  the cluster by the start-up deadline, naming the replica, its last lines and the notebook
  cell of the error;
* on SIGTERM (cancel) stops every replica: SIGTERM, then SIGKILL after a grace period
  (TensorFlow ignores SIGTERM); and when the job ends, however it ends, every process the
  job's code started, in a session of its own or orphaned (the supervisor is their
  subreaper);
* ends parameter servers when the chief is done (they never exit by themselves);
* enforces the job's timeout;
* starts the job's guardian (:mod:`.guardian`, a small process of its own), which ends every
  process of the job, what the replicas started included, when this supervisor dies however
  it dies (SIGKILL, out of memory): the replicas die with it (PR_SET_PDEATHSIG), and the
  guardian ends their process groups, the supervisor's last known descendants and every
  process whose environment carries the job's id.

It imports nothing heavy: the standard library, psutil and the job records.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen
from typing import IO, TYPE_CHECKING, Any

from ...store.records import JobState
from ...util.files import open_private
from ..launch_file import RUNTIME, LocalLaunch
from ..watch_loop import JobWatcher, ReplicaState, killed_by
from ..watched import started_at

if TYPE_CHECKING:
    from .forked import Base, Forked

GRACE_S = 3.0
POLL_S = 0.1


@dataclass
class Replica(ReplicaState):
    """One process of the job."""

    proc: subprocess.Popen[bytes] | Forked | None = None


def _load_libc() -> Any:
    """libc, loaded once in the supervisor: a child between fork and exec then only calls
    prctl (importing ctypes there cost every replica's start about 10 ms, one after another)."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6", use_errno=True)
    except Exception:
        return None


_LIBC = _load_libc()


def _set_pdeathsig() -> None:
    """In the child: die with SIGKILL when the supervisor dies (Linux)."""
    if _LIBC is not None:
        with contextlib.suppress(Exception):
            _LIBC.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _become_subreaper() -> None:
    """Processes the replicas leave behind (a daemon that forked twice, a child in a session
    of its own) become this supervisor's children when their parent ends (Linux
    PR_SET_CHILD_SUBREAPER), so that the job's end ends them too."""
    if _LIBC is not None:
        with contextlib.suppress(Exception):
            _LIBC.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER


def _descendants(keep: set[int]) -> list[Any]:
    """Every process below this supervisor but the replicas' own (``keep``): what the job's
    code started, wherever it moved to."""
    import psutil

    try:
        return [p for p in psutil.Process().children(recursive=True) if p.pid not in keep]
    except psutil.Error:
        return []


def _end_descendants(keep: set[int]) -> None:
    """SIGKILL what :func:`_descendants` finds, and reap those that were orphans (ours now)."""
    for proc in _descendants(keep):
        with contextlib.suppress(Exception):
            proc.kill()
    for proc in _descendants(keep):
        with contextlib.suppress(Exception):
            proc.wait(timeout=2)


GUARDIAN = Path(__file__).with_name("guardian.py")


class ForkedGuardian:
    """A guardian forked from a warm supervisor, used as its ``subprocess.Popen``: ``pid``,
    ``stdin`` (the pipe it reads), ``wait(timeout)``."""

    def __init__(self, pid: int, stdin: IO[bytes]) -> None:
        from .forked import Forked

        self.pid = pid
        self.stdin: IO[bytes] | None = stdin
        self._proc = Forked(pid)

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code (``subprocess.TimeoutExpired`` past ``timeout``)."""
        return self._proc.wait(timeout)


def _fork_guardian(job_id: str) -> ForkedGuardian | None:
    """The guardian as a fork of this warm supervisor (it has imported the guardian's module:
    no interpreter to start, on every job and trial), reading a pipe from it as its input."""
    read, write = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    supervisor = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid == 0:
        code = 1
        try:
            os.setsid()  # never in a group or session the job's stop signals
            os.close(write)
            for sig in (signal.SIGTERM, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
            os.dup2(read, 0)
            os.close(read)
            from . import guardian

            code = guardian.guard(job_id, supervisor)
        except BaseException:  # (a fork never returns into the supervisor)
            code = 1
        finally:
            os._exit(code)
    os.close(read)
    return ForkedGuardian(pid, os.fdopen(write, "wb"))


def start_guardian(
    job_id: str, warm: bool = False
) -> subprocess.Popen[bytes] | ForkedGuardian | None:
    """Start this job's guardian (:mod:`.guardian`): it ends every process of the job when
    this supervisor dies, however it dies. None when it cannot start (the job runs without).
    A warm supervisor forks it."""
    if warm and (forked := _fork_guardian(job_id)) is not None:
        return forked
    try:
        return subprocess.Popen(
            [sys.executable, "-I", str(GUARDIAN), job_id, str(os.getpid())],
            stdin=subprocess.PIPE,
            start_new_session=True,  # never in a group or session the job's stop signals
        )
    except OSError as exc:
        print(f"[tfc_jupyter] could not start the job's guardian: {exc}", file=sys.stderr)
        return None


def tell_guardian(guardian: subprocess.Popen[bytes] | ForkedGuardian | None, line: str) -> None:
    """Send one line to the guardian (nothing when there is none or it is gone)."""
    if guardian is None or guardian.stdin is None:
        return
    with contextlib.suppress(OSError, ValueError):
        guardian.stdin.write(f"{line}\n".encode())
        guardian.stdin.flush()


def release_guardian(guardian: subprocess.Popen[bytes] | ForkedGuardian | None) -> None:
    """The job is ended by this supervisor: the guardian exits without killing anything."""
    if guardian is None:
        return
    tell_guardian(guardian, "done")
    with contextlib.suppress(OSError, ValueError):
        if guardian.stdin is not None:
            guardian.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        guardian.wait(timeout=5)


def _kill_group(proc: subprocess.Popen[bytes] | Forked, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


class Supervisor(JobWatcher[Replica]):
    """Runs and watches the replicas of one job folder (see the module docstring)."""

    poll_s = POLL_S
    quick_poll_s = POLL_S  # no quick polls: the loop wakes when a replica exits (_live_pids)
    launch_type = LocalLaunch
    launch: LocalLaunch

    def __init__(self, job_dir: Path, base: Base | None = None) -> None:
        super().__init__(job_dir)
        self.base = base  # forked from the warm runtime (.zygote): replicas fork from here
        self.replicas = [Replica(r.name, r.env, r.daemon) for r in self.launch.replicas]
        self.logs = job_dir / "logs"
        self.status = job_dir / "status"
        self.guardian: subprocess.Popen[bytes] | ForkedGuardian | None = None

    def _start(self) -> None:
        python = self.launch.python or sys.executable
        argv = [python, *RUNTIME[1:], *self.launch.runtime_args]
        for replica in self.replicas:
            log = open_private(self.logs / f"{replica.name}.log", buffering=0)
            # The kernel's environment, inherited (launch.json holds only the job's variables).
            env = {**os.environ, **self.launch.env, **replica.env}
            if not env.get("PYTHONPATH"):
                env.pop("PYTHONPATH", None)
            replica.proc = self._fork(replica, env, log.fileno()) or subprocess.Popen(
                argv,
                cwd=self.launch.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_set_pdeathsig,
            )
            log.close()
        tell_guardian(
            self.guardian, "groups " + " ".join(str(r.proc.pid) for r in self.replicas if r.proc)
        )
        handle = {
            "watcher_pid": os.getpid(),
            "supervisor_started": started_at(os.getpid()),
            "replicas": {r.name: r.proc.pid for r in self.replicas if r.proc},
            "replicas_started": {r.name: started_at(r.proc.pid) for r in self.replicas if r.proc},
            "restarts": self.restarts,
            "warm": [r.name for r in self.replicas if r.proc and not isinstance(r.proc, Popen)],
            "warm_runtime": os.getppid() if self.base is not None else None,
        }
        self.store.transition(self.job_id, JobState.RUNNING, handle=handle)

    def _fork(self, replica: Replica, env: dict[str, str], log_fd: int) -> Forked | None:
        """The replica forked from this warm supervisor (:mod:`.forked`), or None: it is not
        warm, or the replica's environment differs from the warm runtime's where TensorFlow's
        import reads it (said in the supervisor's log; the replica starts cold)."""
        if self.base is None:
            return None
        from . import forked

        python = self.launch.python or sys.executable
        args = self.launch.runtime_args
        per_job = {*self.launch.env, *replica.env}
        differ = self.base.mismatch(env, args, per_job)
        if python != self.base.executable or differ:
            why = ", ".join(differ[:5]) or f"the interpreter {python}"
            print(f"[tfc_jupyter] {replica.name} starts cold: {why} differ from the warm runtime's")
            return None
        return forked.start(self.base, args, self.launch.cwd, env, log_fd)

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
        self._poll()
        # ... and those in sessions of their own, or orphaned: the replicas are gone, so
        # everything still below this supervisor is what the job's code started.
        keep = {r.proc.pid for r in self.replicas if r.proc and r.exit_code is None}
        _end_descendants(keep | ({self.guardian.pid} if self.guardian else set()))

    def _restart(self, replica: Replica) -> bool:
        """Stop every replica and start them all again (a multi-worker job's tasks cannot go on
        without the one that died), saying so in each replica's log."""
        self.restarts += 1
        code = replica.exit_code or 0
        line = (
            f"[tfc_jupyter] {replica.name} was killed by {killed_by(code)}: "
            f"restarting the job (restart {self.restarts} of {self.max_restarts}, as Vertex AI "
            "restarts a replica); training resumes from its last saved epoch\n"
        )
        self._stop_all()
        for old in [*self.status.glob("*.ready"), *self.status.glob("*.where")]:
            with contextlib.suppress(OSError):
                old.unlink()
        with contextlib.suppress(OSError):
            for fault in (self.job_dir / "errors").glob("*.fault"):
                fault.unlink()
        for each in self.replicas:
            each.exit_code, each.ready, each.proc = None, False, None
            with contextlib.suppress(OSError), open_private(self.logs / f"{each.name}.log") as log:
                log.write(line.encode())
        try:
            self._start()
        except Exception:  # it could not start again: the job fails with the first death
            replica.exit_code = code
            return False
        return True

    def _live_pids(self) -> list[int]:
        return [r.proc.pid for r in self.replicas if r.proc is not None and r.exit_code is None]

    def _poll(self) -> None:
        for replica in self.replicas:
            if replica.exit_code is None and replica.proc is not None:
                replica.exit_code = replica.proc.poll()

    def run(self) -> int:
        """Start the replicas and watch them to the end; returns the supervisor's exit code."""
        self.handle_signals()
        _become_subreaper()
        self.logs.mkdir(exist_ok=True)
        self.status.mkdir(exist_ok=True)
        self.guardian = start_guardian(self.job_id, warm=self.base is not None)
        try:
            self._start()
        except Exception as exc:  # a replica could not even start
            self.store.transition(self.job_id, JobState.FAILED, error=f"could not start: {exc}")
            self._stop_all()
            release_guardian(self.guardian)
            return 1
        outcome = self.watch()
        self.cancelling(outcome[0])
        self._stop_all()
        release_guardian(self.guardian)
        self.finish(outcome)
        return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point (the local backend starts it; users never need to)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tfc_jupyter.backends.local.supervisor JOB_DIR", file=sys.stderr)
        return 2
    return Supervisor(Path(args[0])).run()


if __name__ == "__main__":
    sys.exit(main())
