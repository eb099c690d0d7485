"""A replica forked from the warm runtime: what ``python -m tfc_runtime`` would be, without the
interpreter's start and TensorFlow's import.

The warm runtime (:mod:`.zygote`) imported TensorFlow and the runtime's modules once and executed
nothing. A supervisor forked from it (:mod:`.supervisor`) starts each replica with
:func:`start`: a fork of itself that sets up exactly what a cold replica starts with (its own
session, the supervisor's death signal, the log as stdout and stderr, the working folder, the
environment, ``sys.argv``, ``sys.path``, ``sys.modules`` as the zygote left them, fresh random
seeds, the default signal handlers) and then runs ``tfc_runtime`` as ``python -m`` runs it.

A replica whose environment differs from the zygote's in a variable read before the job's code
runs (``TF_*``, ``PYTHON*``, ``CUDA_*`` ...) is not forked: :meth:`Base.mismatch` names the
variables, and the supervisor starts that replica cold. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from tfc_runtime.protocol import RuntimeArgs
from tfc_runtime.strategy import keras_env

RUNTIME_SETS = {"TFC_REMOTE": "1", "TF_KERAS_RUNNING_REMOTELY": "1"}
"""What ``tfc_runtime`` puts in its environment before anything imports TensorFlow."""

READ_AT_START = ("PYTHON", "TF_", "KERAS_", "CUDA_", "LD_", "XLA_", "OMP_", "MKL_", "KMP_", "HIP_")
"""Prefixes of the variables a process may read as it starts or imports TensorFlow: a replica
whose value differs from the zygote's is started cold."""
READ_LATER = frozenset({"TF_CONFIG"})  # read when the job's strategy is built, never at import


def import_env(env: Mapping[str, str], args: Sequence[str]) -> dict[str, str]:
    """``env`` as TensorFlow's import sees it in a replica started with ``args``: with what the
    runtime sets first (:data:`RUNTIME_SETS`, tf-keras for a multi-worker job)."""
    out = {**env, **RUNTIME_SETS}
    try:
        parsed = RuntimeArgs.from_argv(list(args))
    except ValueError:
        return out
    return {**out, **keras_env(parsed.strategy, out, legacy=parsed.legacy_keras)}


def read_at_start(name: str) -> bool:
    """Whether a process may read variable ``name`` as it starts or imports TensorFlow."""
    return name.startswith(READ_AT_START) and name not in READ_LATER


@dataclass(frozen=True)
class Base:
    """What the zygote was when it became ready: the reference every fork is checked against."""

    env: dict[str, str]  # its environment when TensorFlow was imported
    modules: frozenset[str]  # sys.modules then (the job's code imports everything else fresh)
    path: tuple[str, ...]  # sys.path as `python -m` would start it, but its first entry
    executable: str = sys.executable
    fds: frozenset[int] = field(default_factory=frozenset)  # open then (TensorFlow's own)
    added: dict[str, str] = field(default_factory=dict)  # what the imports set in os.environ
    withheld: frozenset[str] = frozenset()  # secrets it was started without: each job's own

    def mismatch(
        self, env: Mapping[str, str], args: Sequence[str], per_job: Iterable[str]
    ) -> list[str]:
        """The variables whose values keep a replica with ``env`` and ``args`` from being
        forked: those that differ from the zygote's and are not the job's own (the launch's
        variables that nothing reads at start). Empty: fork it."""
        mine = {*per_job, *self.withheld}
        wanted = import_env(env, args)
        return sorted(
            k
            for k in set(self.env) | set(wanted)
            if self.env.get(k) != wanted.get(k) and (k not in mine or read_at_start(k))
        )


class Forked:
    """A forked replica, as the supervisor uses a ``subprocess.Popen``: ``pid``, ``poll()``,
    ``wait(timeout)``, ``returncode`` (negative: killed by that signal)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def _reap(self, flags: int) -> int | None:
        if self.returncode is not None:
            return self.returncode
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:
            self.returncode = self.returncode if self.returncode is not None else 1
            return self.returncode
        if pid == 0:
            return None
        self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self) -> int | None:
        """The exit code, or None while it runs."""
        return self._reap(os.WNOHANG)

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the end (at most ``timeout`` seconds; ``subprocess.TimeoutExpired`` after)."""
        import subprocess
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
            time.sleep(0.02)
        return code


def start(base: Base, args: Sequence[str], cwd: str, env: Mapping[str, str], log_fd: int) -> Forked:
    """Fork this (warm) process into a replica running ``tfc_runtime`` with ``args`` in ``cwd``,
    with ``env`` and ``log_fd`` as stdout and stderr."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    pid = os.fork()
    if pid:
        return Forked(pid)

    def replica() -> int:
        _become_replica(base, log_fd, cwd, env)
        return run_runtime(args)

    end_with(replica)


def end_with(body: Callable[[], int]) -> NoReturn:
    """In a fork: run ``body`` and end the process with its exit code (1 and the traceback on
    stderr when it raises), its output flushed. A fork never returns into its parent's code."""
    code = 1
    try:
        code = body()
    except BaseException:
        with contextlib.suppress(Exception):
            import traceback

            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _set_pdeathsig() -> None:
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _become_replica(base: Base, log_fd: int, cwd: str, env: Mapping[str, str]) -> None:
    """In the child: what a cold ``subprocess.Popen`` of the replica starts with."""
    os.setsid()
    _set_pdeathsig()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    keep = {0, 1, 2, *base.fds}
    for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else ():
        fd = int(name)
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    os.environ.update(base.added)  # as the job's own import of TensorFlow would have set them
    if not os.environ.get("PYTHONPATH"):
        os.environ.pop("PYTHONPATH", None)
    sys.path[:] = [os.getcwd(), *base.path]
    for name in [m for m in sys.modules if m not in base.modules]:
        del sys.modules[name]  # what the supervisor imported: the job imports its own, fresh
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = None  # type: ignore[attr-defined]  # TMPDIR: the job's
    numpy = sys.modules.get("numpy")
    if numpy is not None:  # a cold process seeds it from the system's entropy (random is
        with contextlib.suppress(Exception):  # seeded again at every fork by Python itself)
            numpy.random.seed()


def run_runtime(args: Sequence[str]) -> int:
    """Run ``tfc_runtime`` as ``python -m tfc_runtime ARGS`` runs it; its exit code, after the
    notebook's threads and ``atexit`` functions, as an interpreter's end runs them."""
    import atexit
    import runpy
    import threading

    sys.argv = ["-m", *args]
    sys.orig_argv = [sys.executable, "-m", "tfc_runtime", *args]
    code = 0
    try:
        runpy.run_module("tfc_runtime", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:  # (as the interpreter prints an uncaught error)
        import traceback

        traceback.print_exc()
        code = 1
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]  # non-daemon threads, as at exit
    atexit._run_exitfuncs()
    return code


def _exit_code(code: object) -> int:
    """``sys.exit(code)``'s status, as the interpreter turns it into one."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1
