"""The warm runtime: local jobs that import TensorFlow start without paying for its import.

A process that has imported TensorFlow and the runtime, and executed nothing (:mod:`.zygote`), is
kept by the process that launches jobs (its owner: a kernel, the Jupyter server, a command, a
sweep's driver: :func:`keep`). A kernel starts it as soon as its notebook has imported
TensorFlow; otherwise the first local job that imports TensorFlow starts it and itself starts
cold (a launch never waits for the warm runtime's import). Every such job after it is handed to
it (:func:`claim`): it forks the job's supervisor, which forks each replica (:mod:`.forked`) in
about 20 ms instead of starting an interpreter that imports TensorFlow again (5 to 8 s here).
One zygote serves any number of jobs and trials, one after another or side by side.

The zygote is used only while it is what a cold start would be: it was started with this
process's environment as it is now (``%env``, ``TFC_*`` settings), the same interpreter, the
packages as they are now (a ``%pip install`` changes a ``site-packages`` folder: that zygote
is discarded and the job starts cold, the next one warm again) and the same runtime code. It ends
with its owner (the end of its stdin), after ``warm_idle`` seconds without a job (a setting; 0
turns the warm runtime off), or when discarded; jobs it started go on.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .forked import import_env, read_at_start
from .zygote import BOOT

TENSORFLOW_IMPORTS = frozenset({"tensorflow", "keras", "tf_keras"})
"""A job whose code imports one of these is started warm."""
READY_DEADLINE_S = 120.0  # a zygote not ready by then is discarded: the job starts cold
ANSWER_DEADLINE_S = 10.0  # its answer to a job line
FOLDER = "warm"  # next to the job store: one <pid>.json per live zygote

ROOT = str(Path(__file__).resolve().parents[3])  # the folder tfc_jupyter is imported from
_SOURCES = (Path(__file__).resolve().parent, Path(__file__).resolve().parents[3] / "runtime")


def uses_tensorflow(imports: Iterable[str]) -> bool:
    """Whether code with these top-level imports is one a warm runtime starts."""
    return not TENSORFLOW_IMPORTS.isdisjoint(imports)


def _stamp(paths: Iterable[str | Path]) -> tuple[tuple[str, int], ...]:
    """``(path, mtime_ns)`` of each file that exists."""
    out = []
    for path in paths:
        with contextlib.suppress(OSError):
            out.append((str(path), os.stat(path).st_mtime_ns))
    return tuple(out)


def _sources() -> tuple[tuple[str, int], ...]:
    """The runtime's and this backend's files with their times: changed code, a new zygote."""
    files: list[Path] = []
    for folder in _SOURCES:
        with contextlib.suppress(OSError):
            files.extend(folder.rglob("*.py"))
    return _stamp(sorted(files))


_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH", re.I
)
WITHHELD_ENV = "TFC_WARM_WITHHELD"  # the names (never the values) the zygote starts without


def withheld(env: Mapping[str, str]) -> frozenset[str]:
    """The variables the warm runtime is started without: secrets, by their name or by the
    secret scanner's rules on their value. It holds none; each job's supervisor gets them
    (through the pipe, with the job's environment), and its replicas with them."""
    from ...util.secretscan import scan_text

    return frozenset(
        k
        for k, v in env.items()
        if _SECRET_NAME.search(k) or (len(v) >= 16 and scan_text(f"{k}={v}", detect=False))
    )


def _without_secrets(env: Mapping[str, str]) -> tuple[dict[str, str], frozenset[str]]:
    held = withheld(env)
    return {k: v for k, v in env.items() if k not in held}, held


def _installed() -> tuple[tuple[str, int], ...]:
    """Each installed distribution's metadata folder (``*.dist-info``, ``*.egg-info``) in the
    folders on ``sys.path``, with its time: a package installed, upgraded, reinstalled or removed
    changes it. Other changes in those folders (the notebook's folder, a checkout, ``/tmp``)
    leave it as it is: the zygote imported nothing from them."""
    out: list[tuple[str, int]] = []
    for folder in dict.fromkeys(p for p in sys.path if p):
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith((".dist-info", ".egg-info")):
                    with contextlib.suppress(OSError):
                        out.append((entry.path, entry.stat().st_mtime_ns))
    return tuple(sorted(out))


def environment_key(env: Mapping[str, str]) -> tuple[Any, ...]:
    """What a zygote's imports depend on: the interpreter, the environment they ran in, the
    packages installed on ``sys.path`` and the runtime's code."""
    return (sys.executable, tuple(sorted(env.items())), _installed(), _sources())


@dataclass
class Zygote:
    """One warm runtime process, as its owner sees it."""

    proc: subprocess.Popen[bytes]
    key: tuple[Any, ...]
    started: float = field(default_factory=time.monotonic)
    ready: dict[str, Any] | None = None
    buffer: bytes = b""

    def _line(self, deadline: float) -> str | None:
        """The next line it says, or None by the deadline or at its end."""
        out = self.proc.stdout
        if out is None:
            return None
        while b"\n" not in self.buffer:
            left = max(0.0, deadline - time.monotonic())  # 0: only what is there already
            if not select.select([out], [], [], left)[0]:
                return None
            chunk = os.read(out.fileno(), 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode(errors="replace")

    def wait_ready(self, deadline: float) -> bool:
        """True once it has imported everything (waits until the deadline)."""
        if self.ready is None:
            line = self._line(deadline)
            if line is None or not line.startswith("{"):
                return False
            with contextlib.suppress(ValueError):
                self.ready = json.loads(line)
        return self.ready is not None

    def hand(self, job_dir: Path, env: Mapping[str, str]) -> int | None:
        """Give it a job: the pid of the supervisor it forked, or None."""
        if self.proc.stdin is None or self.proc.poll() is not None:
            return None
        request = json.dumps({"dir": str(job_dir), "env": dict(env)})
        try:
            self.proc.stdin.write(f"job {request}\n".encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):
            return None
        line = self._line(time.monotonic() + ANSWER_DEADLINE_S)
        if line is None or not line.startswith("started "):
            return None
        with contextlib.suppress(ValueError):
            return int(line.split()[1])
        return None

    def stop(self) -> None:
        """End it (an empty line, then SIGKILL if it lingers) and reap it."""
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self.proc.stdout is not None:
            with contextlib.suppress(OSError):
                self.proc.stdout.close()


_zygote: Zygote | None = None
_keep = False
_lock = threading.RLock()  # the server launches from several threads: one talks to it at a time


def keep() -> None:
    """This process launches jobs for a while (a kernel, the Jupyter server, a sweep's driver):
    a local TensorFlow job starts the warm runtime, for the next ones. A process that does not
    call it (``tfc-jupyter run`` of one job) never starts one: it would import TensorFlow a
    second time beside the job, for no job."""
    global _keep
    _keep = True


def kept() -> bool:
    """Whether :func:`keep` was called in this process."""
    return _keep


def idle_seconds() -> float:
    """The ``warm_idle`` setting: seconds a warm runtime waits for a job; 0: no warm runtime."""
    from ...config import current_settings

    try:
        return max(0.0, current_settings().seconds("warm_idle"))
    except (KeyError, ValueError, TypeError):
        return 0.0


def wanted_env(
    inherited: Mapping[str, str],
    common: Mapping[str, str],
    chief: Mapping[str, str],
    args: Sequence[str],
) -> dict[str, str]:
    """The environment a zygote for this job imports TensorFlow in: the chief replica's, but
    for the job's own variables that nothing reads at start (its id, folders, ``TF_CONFIG``),
    with what the runtime sets first (tf-keras for a multi-worker job)."""
    full = {**inherited, **common, **chief}
    if not full.get("PYTHONPATH"):
        full.pop("PYTHONPATH", None)
    own = {*common, *chief}
    return {k: v for k, v in import_env(full, args).items() if k not in own or read_at_start(k)}


def prepare(env: Mapping[str, str], home: Path) -> Zygote | None:
    """Have a warm runtime for ``env`` start (nothing when one is there, ready or starting, or
    when the setting turns it off); one for another environment is discarded first."""
    with _lock:
        return _prepare(env, home)


def _prepare(env: Mapping[str, str], home: Path) -> Zygote | None:
    global _zygote
    idle = idle_seconds()
    if idle <= 0:
        discard()
        return None
    env, held = _without_secrets(env)
    key = (*environment_key(env), held)
    if _zygote is not None and _zygote.key == key and _zygote.proc.poll() is None:
        return _zygote
    discard()
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        errors = open(home / "warm.log", "wb")  # noqa: SIM115 (the zygote's own; ours closes)
        os.chmod(home / "warm.log", 0o600)
    except OSError:
        errors = None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", BOOT, f"{idle:g}", ROOT, str(home / FOLDER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors if errors is not None else subprocess.DEVNULL,
            env={**env, WITHHELD_ENV: ",".join(sorted(held))},
            cwd=str(home),
            start_new_session=True,  # never in the group a Ctrl-C or a kernel's stop reaches
        )
    except OSError:
        return None
    finally:
        if errors is not None:
            errors.close()
    _zygote = Zygote(proc, key)
    return _zygote


def claim(job_dir: Path, env: Mapping[str, str], wanted: Mapping[str, str]) -> int | None:
    """Hand ``job_dir`` (its ``launch.json`` written) to the warm runtime made for ``wanted``;
    the supervisor's pid, or None (the job starts cold): there is none, it is still importing
    (never waited for), it is not for this environment (then it is discarded), or it failed."""
    with _lock:
        return _claim(job_dir, env, wanted)


def _claim(job_dir: Path, env: Mapping[str, str], wanted: Mapping[str, str]) -> int | None:
    zygote = _zygote
    if zygote is None or idle_seconds() <= 0:
        return None
    clean, held = _without_secrets(wanted)
    if zygote.key != (*environment_key(clean), held) or zygote.proc.poll() is not None:
        discard()
        return None
    if zygote.ready is None:  # still importing: this job starts cold, never waits for it
        if time.monotonic() - zygote.started > READY_DEADLINE_S:
            discard()
            return None
        if not zygote.wait_ready(time.monotonic()):
            return None
    pid = zygote.hand(job_dir, env)
    if pid is None:
        discard()
    return pid


def discard() -> None:
    """End this process's warm runtime, if any."""
    global _zygote
    with _lock:
        zygote, _zygote = _zygote, None
        if zygote is not None:
            zygote.stop()


def status() -> dict[str, Any] | None:
    """This process's warm runtime: ``pid``, ``ready``, ``memory`` (bytes resident), or None."""
    zygote = _zygote
    if zygote is None or zygote.proc.poll() is not None:
        return None
    return {
        "pid": zygote.proc.pid,
        "ready": zygote.ready is not None,
        "memory": _memory(zygote.proc.pid),
    }


def _memory(pid: int) -> int:
    """Bytes the process holds that no other does (its unique set), else its resident set."""
    import psutil

    try:
        proc = psutil.Process(pid)
        try:
            return int(proc.memory_full_info().uss)
        except (psutil.AccessDenied, AttributeError):
            return int(proc.memory_info().rss)
    except psutil.Error:
        return 0


def live(home: Path) -> list[dict[str, Any]]:
    """Every warm runtime of this user's job store that runs now (any owner): ``pid``,
    ``owner``, ``idle_s`` and ``memory``; for ``tfc-jupyter jobs`` and ``%tfc_jobs``."""
    import psutil

    out = []
    for path in sorted((home / FOLDER).glob("*.json")):
        try:
            info = json.loads(path.read_text())
            pid = int(info["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not _is_zygote(psutil, pid):  # gone (killed): its entry goes too
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        out.append({**info, "memory": _memory(pid)})
    return out


def _is_zygote(psutil: Any, pid: int) -> bool:
    """Whether ``pid`` runs a warm runtime (not another process that got its pid since)."""
    try:
        return "zygote" in " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return False


def describe(home: Path) -> list[str]:
    """A line per warm runtime running for the job store in ``home``: its pid, memory and
    idle time, and how to turn it off."""
    return [
        f"Warm runtime (TensorFlow imported for local jobs): pid {z['pid']}, "
        f"{z['memory'] / 2**20:.0f} MB; ends with its owner (pid {z.get('owner')}) or after "
        f"{float(z.get('idle_s') or 0):g} s idle; warm_idle=0 turns it off"
        for z in live(Path(home))
    ]
