"""Find the job's TPU, connect to it and initialize it, with deadlines; build TPUStrategy.

Where the TPU is comes from, first found wins: an explicit name or ``grpc://`` address,
``TPU_NAME``, AI Platform's legacy ``TPU_CONFIG`` JSON (project, zone, node), GKE's
``KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS``, and ``'local'`` on a TPU VM (how Vertex AI runs TPUs today).

TensorFlow itself waits without limit in places: connecting to a ``grpc://`` address where no
gRPC server answers hangs forever, and the resolver retries for many minutes. Here every step is
bounded by ``TFC_TPU_TIMEOUT`` seconds (300 by default): name lookups run in a thread with a
deadline, each ``grpc://`` endpoint is probed (TCP and an HTTP/2 handshake, bounded retries)
before TensorFlow connects, and inside a job connect and initialize run under a hard deadline.
Failures are one-line RuntimeErrors saying where we looked, what we found, and what to do.
TensorFlow is imported only when a resolver is built.
"""

from __future__ import annotations

import contextlib
import faulthandler
import glob
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: Default deadline (seconds) of each TPU step: resolving, connecting, initializing.
DEFAULT_TIMEOUT_S = 300.0
#: At most this many probes of a ``grpc://`` endpoint before giving up.
PROBE_ATTEMPTS = 30
_HOST_PORT = re.compile(r"^[A-Za-z0-9._-]+:\d{1,5}$")
_ENV_SOURCES = ("TPU_NAME", "TPU_CONFIG", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS")


@dataclass(frozen=True)
class TpuTarget:
    """Which TPU to use and where that was found (no TensorFlow involved)."""

    tpu: str  # 'local', 'grpc://host:port[,grpc://...]' or a Cloud TPU node name
    source: str  # 'argument', 'TPU_NAME', 'TPU_CONFIG', 'KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS', 'TPU VM'
    project: str | None = None
    zone: str | None = None

    @property
    def endpoints(self) -> list[tuple[str, int]]:
        """``(host, port)`` of each ``grpc://`` address (empty for 'local' and node names)."""
        out = []
        for item in self.tpu.split(","):
            if item.startswith("grpc://"):
                host, _, port = item[len("grpc://") :].rpartition(":")
                out.append((host, int(port)))
        return out

    def describe(self) -> str:
        """``grpc://10.0.0.2:8470 (from TPU_NAME)``-style phrase."""
        where = ", ".join(f"{k} {v}" for k, v in (("project", self.project), ("zone", self.zone)))
        extra = f", {where}" if self.project or self.zone else ""
        return f"{self.tpu} (from {self.source}{extra})"


def timeout_s(environ: Mapping[str, str] = os.environ) -> float:
    """The deadline of each TPU step: ``TFC_TPU_TIMEOUT`` seconds, else 300."""
    raw = environ.get("TFC_TPU_TIMEOUT", "").strip()
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise RuntimeError(f"TFC_TPU_TIMEOUT must be a number of seconds, got {raw!r}") from None
    if value <= 0:
        raise RuntimeError(f"TFC_TPU_TIMEOUT must be positive, got {raw!r}")
    return value


def tpu_vm_evidence() -> tuple[bool, str]:
    """(True when this machine has TPU chips attached, what was found): a TPU VM."""
    devices = sorted(glob.glob("/dev/accel[0-9]*") + glob.glob("/dev/vfio/[0-9]*"))
    libtpu = importlib.util.find_spec("libtpu") is not None or bool(
        os.environ.get("TPU_LIBRARY_PATH")
    )
    found = f"devices {', '.join(devices)}" if devices else "no /dev/accel* or /dev/vfio/N devices"
    found += ", libtpu installed" if libtpu else ", libtpu not installed"
    return bool(devices), found


def _from_argument(tpu: str) -> TpuTarget:
    """An explicit ``tpu``: 'local', grpc address(es), a bare host:port, or a node name."""
    if tpu == "local" or tpu.startswith("grpc://"):
        return TpuTarget(tpu, "argument")
    if _HOST_PORT.match(tpu):  # TensorFlow would look 'host:port' up as a node name
        return TpuTarget(f"grpc://{tpu}", "argument")
    return TpuTarget(tpu, "argument")


def _from_tpu_config(raw: str) -> TpuTarget:
    """AI Platform's ``TPU_CONFIG``: ``{"project": .., "zone": .., "tpu_node_name": ..}``."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"TPU_CONFIG is not valid JSON ({exc.msg} at char {exc.pos})") from None
    node = data.get("tpu_node_name") if isinstance(data, dict) else None
    if not node:
        raise RuntimeError(
            'TPU_CONFIG must be a JSON object with "tpu_node_name" (and "project", "zone"), '
            f"got {raw[:120]!r}"
        )
    project, zone = data.get("project"), data.get("zone")
    return TpuTarget(str(node), "TPU_CONFIG", str(project) if project else None, zone or None)


def find_tpu(tpu: str | None = None, environ: Mapping[str, str] = os.environ) -> TpuTarget:
    """Where the TPU is, from the first source that names one (see the module docstring).

    Raises:
        RuntimeError: no source names a TPU; the message lists every place looked at.
    """
    if tpu:
        return _from_argument(tpu.strip())
    if environ.get("TPU_NAME", "").strip():
        return TpuTarget(environ["TPU_NAME"].strip(), "TPU_NAME")
    if environ.get("TPU_CONFIG", "").strip():
        return _from_tpu_config(environ["TPU_CONFIG"])
    if environ.get("KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "").strip():
        endpoints = environ["KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS"].strip()
        return TpuTarget(endpoints, "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS")
    on_vm, found = tpu_vm_evidence()
    if on_vm:
        return TpuTarget("local", "TPU VM")
    unset = ", ".join(f"{name} (unset)" for name in _ENV_SOURCES)
    raise RuntimeError(
        f"no TPU found: looked at the tpu argument (none), {unset} and this machine ({found}); "
        "run the job on a TPU (%%tfc_run --tpu v3-8 --backend vertex) or pass "
        "tpu='grpc://HOST:8470'"
    )


def tpu_in_environment(environ: Mapping[str, str] = os.environ) -> bool:
    """True when a TPU variable is set or this is a TPU VM (strategy ``auto`` picks TPU)."""
    if any(environ.get(name, "").strip() for name in _ENV_SOURCES):
        return True
    return tpu_vm_evidence()[0]


class TpuTimeout(RuntimeError):
    """A TPU step did not finish within its deadline."""


def within(seconds: float, what: str, fn: Callable[[], T]) -> T:
    """``fn()``, or :class:`TpuTimeout` when it has not returned after ``seconds``.

    TensorFlow's blocking calls cannot be interrupted, so ``fn`` runs in a daemon thread that
    is left behind on timeout; its exception (if any) is raised here.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    import threading  # a TPU job's, imported then: every job imports this module

    thread = threading.Thread(target=run, name=f"tfc-tpu-{what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TpuTimeout(
            f"{what} did not finish within {seconds:g} s; check that the TPU is READY and "
            "reachable (raise TFC_TPU_TIMEOUT if it is only slow)"
        )
    if "error" in box:
        raise box["error"]
    return box["value"]


# An HTTP/2 client preface and an empty SETTINGS frame: a gRPC server answers with SETTINGS.
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_H2_SETTINGS = 4


def _grpc_answers(host: str, port: int, timeout: float) -> str | None:
    """None when a gRPC (HTTP/2) server answers at ``host:port`` in ``timeout``, else why not."""
    try:
        import socket

        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(_H2_PREFACE)
            header = b""
            while len(header) < 9:
                chunk = sock.recv(9 - len(header))
                if not chunk:
                    return "the connection was closed without an HTTP/2 reply"
                header += chunk
    except TimeoutError:
        return "it accepts connections but sends no gRPC (HTTP/2) reply"
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None if header[3] == _H2_SETTINGS else "its reply is not gRPC (HTTP/2)"


def probe(host: str, port: int, deadline_s: float, attempts: int = PROBE_ATTEMPTS) -> int:
    """Wait until a gRPC server answers at ``host:port``; returns the attempts it took.

    TensorFlow connects without a timeout, so nothing listening, or something that is not a
    gRPC server, would hang it forever. Each attempt opens a TCP connection and checks for an
    HTTP/2 SETTINGS reply (at most 5 s); attempts are bounded in number and by ``deadline_s``
    (backoff 0.25 s doubling to 5 s). Raises RuntimeError saying what was found.
    """
    end = time.monotonic() + deadline_s
    pause, why, attempt = 0.25, "no attempt made", 0
    while attempt < attempts and time.monotonic() < end:
        attempt += 1
        why = _grpc_answers(host, port, min(5.0, max(0.05, end - time.monotonic()))) or ""
        if not why:
            return attempt
        time.sleep(max(0.0, min(pause, end - time.monotonic())))
        pause = min(pause * 2, 5.0)
    raise RuntimeError(
        f"no TPU worker answers at {host}:{port} ({why}) after {attempt} "
        f"attempt{'s' * (attempt != 1)} in "
        f"{deadline_s:g} s; check the TPU address (a TPU worker serves gRPC on port 8470) and "
        "that the TPU is READY"
    )


@contextlib.contextmanager
def hard_deadline(seconds: float, what: str) -> Iterator[None]:
    """Inside a job, end the process when ``what`` runs past ``seconds``.

    TensorFlow's connect and initialize can block in C++ without releasing the GIL, so no
    Python thread could step in: faulthandler's C watchdog ends the process (exit status 1)
    instead. The reason is first written to stderr and, under the local backend, to the
    task's error record (which a normal exit removes). Outside a job this does nothing: the
    probes bound the waits there.
    """
    if os.environ.get("TFC_REMOTE") != "1":
        yield
        return
    reason = f"{what} did not finish within {seconds:g} s (TFC_TPU_TIMEOUT); the job stops"
    record = _pending_error(reason)
    print(f"[tfc_runtime] {what} (deadline {seconds:g} s)", file=sys.stderr, flush=True)
    faulthandler.dump_traceback_later(seconds, exit=True, file=sys.stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        if record is not None:
            with contextlib.suppress(OSError):
                record.unlink()


def _pending_error(reason: str) -> Path | None:
    """``$TFC_JOB_DIR/errors/<task>.json`` naming ``reason``, as tfc_runtime reports errors."""
    job_dir = os.environ.get("TFC_JOB_DIR")
    if not job_dir:
        return None
    from tfc_runtime.cluster import cluster_info

    try:
        info = cluster_info()
    except RuntimeError:
        return None
    path = Path(job_dir) / "errors" / f"{info.task_type}-{info.task_index}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = {"cell": None, "line": None, "script_line": None, "type": "TpuTimeout"}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # owner-only, as the logs
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({**fields, "message": reason, "traceback": ""}))
    return path


def tpu_resolver(
    tpu: str | None = None,
    *,
    zone: str | None = None,
    project: str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Any:
    """``TPUClusterResolver`` for the job's TPU (see :func:`find_tpu`), built under a deadline.

    The resolver carries ``tfc_target`` (which TPU, found where) and a status line says it.
    A node name needs the Cloud TPU API (and the GCE metadata server when project or zone
    are missing); when that fails the RuntimeError says which TPU and why.
    """
    target = find_tpu(tpu, environ)
    project = project or target.project
    zone = zone or target.zone
    if project or zone:
        target = TpuTarget(target.tpu, target.source, project, zone)
    import tensorflow as tf

    def build() -> Any:
        return tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=target.tpu, zone=zone, project=project
        )

    try:
        resolver = within(timeout_s(environ), f"resolving TPU {target.tpu}", build)
    except TpuTimeout:
        raise
    except Exception as exc:  # URLError from the metadata server, ValueError ...
        raise _resolve_error(target, exc) from None
    resolver.tfc_target = target
    print(f"[tfc_runtime] TPU: {target.describe()}", flush=True)
    return resolver


def _resolve_error(target: TpuTarget, exc: BaseException) -> RuntimeError:
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    return RuntimeError(
        f"cannot resolve TPU {target.describe()}: {type(exc).__name__}: {first}; a TPU node "
        "name needs the Cloud TPU API (pip install cloud-tpu-client) and, without project and "
        "zone, the GCE metadata server: on Vertex AI use a TPU VM (tpu='local')"
    )


def target_of(resolver: Any) -> TpuTarget:
    """The TpuTarget a resolver was built for (ours carry it; others: their ``tpu``)."""
    target = getattr(resolver, "tfc_target", None)
    if isinstance(target, TpuTarget):
        return target
    return TpuTarget(str(getattr(resolver, "_tpu", "") or "unknown"), "a given resolver")


def reachable_master(resolver: Any, deadline_s: float) -> str:
    """The resolver's ``grpc://`` master, looked up and TCP-probed under the deadline.

    A node name asks the Cloud TPU API here. Raises RuntimeError when the lookup fails or
    nothing listens at an endpoint.
    """
    target = target_of(resolver)
    try:
        master = str(within(deadline_s, f"looking up TPU {target.tpu}", resolver.master))
    except TpuTimeout:
        raise
    except Exception as exc:
        raise _resolve_error(target, exc) from None
    for host, port in TpuTarget(master, target.source).endpoints:
        probe(host, port, deadline_s)
    return master


def connect_tpu(resolver: Any, *, deadline_s: float | None = None) -> Any:
    """Connect to the resolver's TPU and initialize it; returns the TPU topology.

    The master address is looked up and each ``grpc://`` endpoint probed first (bounded);
    connect and initialize then run as TensorFlow's TPU guide does them (a remote TPU host
    becomes the default device), under :func:`hard_deadline` inside a job.

    Raises:
        RuntimeError: unreachable, too slow, or no TPU behind the address, with the fix.
    """
    import tensorflow as tf

    deadline = deadline_s if deadline_s is not None else timeout_s()
    target = target_of(resolver)
    local = target.tpu == "local"
    if not local:
        reachable_master(resolver, deadline)
    where = target.describe()
    with hard_deadline(deadline, f"connecting to TPU {where}"):
        tf.config.experimental_connect_to_cluster(resolver)
        try:
            return tf.tpu.experimental.initialize_tpu_system(resolver)
        except tf.errors.OpError as exc:
            said = (str(exc).strip().splitlines() or [""])[0][:120]
            fix = (
                "use a TPU VM image with libtpu and TensorFlow's TPU build (tfc_jupyter plans "
                "one for --tpu jobs)"
                if local
                else "check that this address is a TPU worker (port 8470) and that it is READY"
            )
            raise RuntimeError(
                f"connected to {where}, but it has no TPU: initializing the TPU system failed "
                f"({type(exc).__name__}); {fix}. TensorFlow said: {said}"
            ) from None


def tpu_strategy(resolver: Any = None, *, deadline_s: float | None = None) -> Any:
    """TPUStrategy over the job's TPU: resolve, connect and initialize (all bounded), build.

    Called with no resolver inside a job whose strategy is already a TPUStrategy, returns that
    one (initializing the TPU system again would wipe its memory). Uses
    ``tf.distribute.TPUStrategy``, or the experimental class on TensorFlow that lacks it.
    """
    from tfc_runtime.built import current_strategy

    built = current_strategy()
    if resolver is None and type(built).__name__.startswith("TPUStrategy"):
        return built
    import tensorflow as tf

    resolver = resolver if resolver is not None else tpu_resolver()
    connect_tpu(resolver, deadline_s=deadline_s)
    cls = getattr(tf.distribute, "TPUStrategy", None) or tf.distribute.experimental.TPUStrategy
    deadline = deadline_s if deadline_s is not None else timeout_s()
    with hard_deadline(deadline, "building TPUStrategy"):  # it queries the TPU system again
        return cls(resolver)
