"""How the test Vertex server runs an accepted CustomJob: for real, with Vertex's environment.

Each replica of each worker pool runs the pool's container command with the variables Vertex AI
sets (``CLUSTER_SPEC``, ``TF_CONFIG`` with pool 3 as an evaluator outside the cluster,
``CLOUD_ML_JOB_ID``, ``AIP_*`` only with a base output directory), on its own free loopback port.
Two executors:

* :class:`DockerExecutor`: one container per replica from the job's image, host networking,
  ``command`` as the entrypoint and ``args`` as the command, as Vertex runs them.
* :class:`ProcessExecutor`: when no Docker engine answers, the same command as a local process in
  a folder registered for the image (``python`` is this interpreter). Used by standalone runs on
  machines without Docker; the test command provides Docker, so CI runs containers.

Every output line becomes a Cloud Logging entry (``resource.type="ml_job"``, ``task_name``
``workerpool0-0`` ...) in :class:`LogStore`, and :class:`JobRun` moves the job through QUEUED,
PENDING, RUNNING to SUCCEEDED, FAILED or CANCELLED.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol

OnLine = Callable[[str, str], None]  # (text, severity)
_ROLES = {0: "chief", 1: "worker", 2: "ps", 3: "evaluator"}
_TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}


class StartError(Exception):
    """A replica could not be started (its image cannot be found or pulled ...)."""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rfc3339(when: datetime) -> str:
    """``2024-05-01T12:00:00.123456Z``."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 time with any number of fraction digits (nanoseconds cut to micros)."""
    text = text.strip().replace("z", "Z")
    main, _, frac = text.rstrip("Z").partition(".")
    zone = ""
    for sep in ("+", "-"):
        if sep in frac:
            frac, zone = frac.split(sep, 1)[0], sep + frac.split(sep, 1)[1]
    if not frac and len(main) > 19:
        main, zone = main[:19], main[19:]
    stamp = main + (f".{frac[:6].ljust(6, '0')}" if frac else "") + (zone or "+00:00")
    return datetime.fromisoformat(stamp)


# ------------------------------------------------------------------------------- logs
class LogStore:
    """Cloud Logging entries of every job, in arrival order (thread-safe).

    ``delay`` holds each entry back that many seconds before ``entries:list`` shows it, as
    Cloud Logging's ingestion does.
    """

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.entries: list[tuple[float, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._last = datetime.now(timezone.utc)

    def add(self, project: str, job_id: str, task: str | None, text: str, severity: str) -> None:
        """One entry: a replica's line (``task`` like ``workerpool0-0``) or a service message."""
        with self._lock:
            now = max(datetime.now(timezone.utc), self._last + timedelta(microseconds=1))
            self._last = now
            labels = {"job_id": job_id, "project_id": project}
            if task:
                labels["task_name"] = task
            log = task or f"ml.googleapis.com%2F{job_id}"
            entry = {
                "logName": f"projects/{project}/logs/{log}",
                "resource": {"type": "ml_job", "labels": labels},
                "textPayload": text,
                "timestamp": rfc3339(now),
                "receiveTimestamp": rfc3339(now),
                "severity": severity,
                "insertId": f"{next(self._ids):012x}",
            }
            self.entries.append((time.monotonic() + self.delay, entry))

    def visible(self) -> list[dict[str, Any]]:
        """Entries that Cloud Logging would show now."""
        now = time.monotonic()
        with self._lock:
            return [entry for at, entry in self.entries if at <= now]


# ------------------------------------------------------------------------------- executors
class Running(Protocol):
    """A started replica (``kind``: ``process`` or ``docker``)."""

    kind: str

    def poll(self) -> int | None:
        """Exit code, or None while it runs."""

    def kill(self) -> None:
        """Stop it at once (TensorFlow ignores SIGTERM)."""

    def finish(self, timeout: float) -> None:
        """Wait (bounded) until its output is read, then release it."""


class Executor(Protocol):
    """Starts replicas."""

    name: str

    def start(
        self,
        name: str,
        image: str,
        command: list[str],
        args: list[str],
        env: dict[str, str],
        on_line: OnLine,
    ) -> Running:
        """Start one replica; raise :class:`StartError` when it cannot start."""
        ...


def _pump(chunks: Any, severity: str, on_line: OnLine) -> None:
    """Split a stream of byte chunks into lines for ``on_line``."""
    rest = b""
    for chunk in chunks:
        rest += chunk
        *lines, rest = rest.split(b"\n")
        for line in lines:
            on_line(line.decode("utf-8", "replace").rstrip("\r"), severity)
    if rest:
        on_line(rest.decode("utf-8", "replace"), severity)


def _threads(*targets: Callable[[], None]) -> list[threading.Thread]:
    out = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in out:
        t.start()
    return out


@dataclass
class _Process:
    proc: subprocess.Popen[bytes]
    readers: list[threading.Thread]
    kind: str = "process"

    def poll(self) -> int | None:
        return self.proc.poll()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def finish(self, timeout: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=timeout)
        for t in self.readers:
            t.join(timeout)
        self.kill()  # whatever the replica left behind in its group


class ProcessExecutor:
    """Replicas as local processes, in a folder registered for each image URI."""

    name = "process"

    def __init__(self, images: dict[str, Path]) -> None:
        self.images = images

    def start(
        self,
        name: str,
        image: str,
        command: list[str],
        args: list[str],
        env: dict[str, str],
        on_line: OnLine,
    ) -> Running:
        """Run ``command + args`` in the image's folder (``python`` is this interpreter)."""
        folder = self.images.get(image)
        if folder is None:
            raise StartError(f"Unable to pull image {image}: not found")
        argv = [*command, *args]
        if not argv:
            raise StartError(f"image {image} has no entrypoint known to the process executor")
        if argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "SSL_CERT_FILE", "TMPDIR")
        full = {k: os.environ[k] for k in keep if k in os.environ}
        full.update({"PYTHONPATH": str(folder), "TF_CPP_MIN_LOG_LEVEL": "1", **env})
        proc = subprocess.Popen(
            argv,
            cwd=folder,
            env=full,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout, proc.stderr
        readers = _threads(
            lambda: _pump(iter(lambda: out.read1(65536), b""), "INFO", on_line),
            lambda: _pump(iter(lambda: err.read1(65536), b""), "ERROR", on_line),
        )
        return _Process(proc, readers)


@dataclass
class _Container:
    container: Any
    readers: list[threading.Thread]
    kind: str = "docker"

    def poll(self) -> int | None:
        try:
            self.container.reload()
        except Exception:
            return -1
        if self.container.status in ("exited", "dead"):
            return int(self.container.attrs["State"]["ExitCode"])
        return None

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.container.kill()

    def finish(self, timeout: float) -> None:
        with contextlib.suppress(Exception):
            self.container.wait(timeout=timeout)
        for t in self.readers:
            t.join(timeout)
        with contextlib.suppress(Exception):
            self.container.remove(force=True)


class DockerExecutor:
    """Replicas as containers of the job's image: host networking, pulled when missing."""

    name = "docker"

    def __init__(self, client: Any) -> None:
        self.client = client

    def start(
        self,
        name: str,
        image: str,
        command: list[str],
        args: list[str],
        env: dict[str, str],
        on_line: OnLine,
    ) -> Running:
        """``docker run --network host --entrypoint COMMAND IMAGE ARGS`` with ``env``."""
        import docker.errors

        try:
            try:
                self.client.images.get(image)
            except docker.errors.ImageNotFound:
                self.client.images.pull(image)
            container = self.client.containers.run(
                image,
                entrypoint=command or None,
                command=args or None,
                environment=env,
                network_mode="host",
                detach=True,
                name=name,
                labels={"tfc-vertex-test": "1"},
            )
        except docker.errors.DockerException as exc:
            raise StartError(f"Unable to pull image {image}: {exc}") from None

        def stream(stdout: bool) -> Callable[[], None]:
            chunks = container.logs(stdout=stdout, stderr=not stdout, stream=True, follow=True)
            return lambda: _pump(chunks, "INFO" if stdout else "ERROR", on_line)

        return _Container(container, _threads(stream(True), stream(False)))


class AutoExecutor:
    """Folder images (registered with the server) as processes; any other image in Docker when
    an engine answers, else as a process (which then cannot find it: "Unable to pull image")."""

    def __init__(self, process: ProcessExecutor, docker: DockerExecutor | None) -> None:
        self.process, self.docker = process, docker
        self.name = "docker+process" if docker else "process"

    def start(
        self,
        name: str,
        image: str,
        command: list[str],
        args: list[str],
        env: dict[str, str],
        on_line: OnLine,
    ) -> Running:
        """Start one replica with the executor that has its image."""
        use = self.docker if self.docker and image not in self.process.images else self.process
        return use.start(name, image, command, args, env, on_line)


def docker_executor() -> DockerExecutor | None:
    """A Docker executor when an engine answers (``DOCKER_HOST`` or the default socket)."""
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
    except Exception:
        return None
    return DockerExecutor(client)


# ------------------------------------------------------------------------------- jobs
def vertex_env(body: dict[str, Any], job_id: str) -> list[tuple[str, int, dict[str, str]]]:
    """``(task_name, pool, env)`` for every replica: what Vertex AI sets in each container."""
    spec = body["jobSpec"]
    pools = spec["workerPoolSpecs"]
    cluster: dict[str, list[str]] = {}
    for i, pool in enumerate(pools):
        if pool:
            n = int(pool.get("replicaCount", 1))
            cluster[f"workerpool{i}"] = [f"127.0.0.1:{free_port()}" for _ in range(n)]
    tf_cluster = {_ROLES[int(k[-1])]: v for k, v in cluster.items() if k != "workerpool3"}
    common: dict[str, str] = {"CLOUD_ML_JOB_ID": job_id}
    base = spec.get("baseOutputDirectory", {}).get("outputUriPrefix")
    if base:
        base = base.rstrip("/")
        common["AIP_MODEL_DIR"] = f"{base}/model/"
        common["AIP_CHECKPOINT_DIR"] = f"{base}/checkpoints/"
        common["AIP_TENSORBOARD_LOG_DIR"] = f"{base}/logs/"
    if spec.get("tensorboard"):
        common["AIP_TENSORBOARD_RESOURCE_NAME"] = spec["tensorboard"]
    job = {"worker_pool_specs": pools}
    out = []
    for pool_name, addrs in cluster.items():
        pool = int(pool_name[-1])
        for index in range(len(addrs)):
            task = {"type": pool_name, "index": index, "trial": ""}
            role = _ROLES[pool]
            tf_task = {"type": role, "index": index, "trial": ""}
            env = {
                **common,
                "CLUSTER_SPEC": json.dumps(
                    {"cluster": cluster, "environment": "cloud", "task": task, "job": job}
                ),
            }
            if sum(len(a) for a in cluster.values()) > 1:  # Vertex: distributed jobs only
                env["TF_CONFIG"] = json.dumps(
                    {"cluster": tf_cluster, "environment": "cloud", "task": tf_task, "job": job}
                )
            out.append((f"{pool_name}-{index}", pool, env))
    return out


@dataclass
class JobRun:
    """One accepted job: its resource (a JSON dict) and the thread that runs it."""

    resource: dict[str, Any]
    project: str
    executor: Executor | None
    logs: LogStore
    provision_delay: float = 0.1
    fail_with: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    replicas: dict[str, Running] = field(default_factory=dict)
    thread: threading.Thread | None = None

    @property
    def job_id(self) -> str:
        """The numeric id at the end of the resource name."""
        return str(self.resource["name"].rsplit("/", 1)[1])

    def snapshot(self) -> dict[str, Any]:
        """A copy of the resource as it is now."""
        with self.lock:
            return json.loads(json.dumps(self.resource))

    def state(self) -> str:
        """``JOB_STATE_...`` now."""
        with self.lock:
            return str(self.resource["state"])

    def start(self) -> None:
        """Run the job in a daemon thread."""
        self.thread = threading.Thread(target=self._run, name=f"job-{self.job_id}", daemon=True)
        self.thread.start()

    def _set(self, state: str, error: str | None = None, code: int = 0) -> None:
        now = rfc3339(datetime.now(timezone.utc))
        with self.lock:
            if self.resource["state"] in _TERMINAL:
                return
            self.resource["state"] = state
            self.resource["updateTime"] = now
            if state == "JOB_STATE_RUNNING":
                self.resource.setdefault("startTime", now)
            if state in _TERMINAL:
                self.resource["endTime"] = now
            if error:
                self.resource["error"] = {"code": code, "message": error}

    def _service(self, text: str, severity: str = "INFO") -> None:
        self.logs.add(self.project, self.job_id, None, text, severity)

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless cancelled; True when a cancel arrived."""
        return self.cancel_requested.wait(seconds)

    def _run(self) -> None:
        try:
            self._lifecycle()
        except Exception as exc:  # a bug here must not leave a job RUNNING forever
            self._set("JOB_STATE_FAILED", f"Internal error in the test server: {exc!r}", 13)
        finally:
            for replica in self.replicas.values():
                replica.kill()
            for replica in self.replicas.values():
                replica.finish(10)

    def _lifecycle(self) -> None:
        if self._sleep(self.provision_delay):
            return self._cancelled()
        self._set("JOB_STATE_PENDING")
        self._service("Waiting for job to be provisioned.")
        if self._sleep(self.provision_delay):
            return self._cancelled()
        if self.fail_with:
            self._service(self.fail_with, "ERROR")
            return self._set("JOB_STATE_FAILED", self.fail_with, 3)
        if self.executor is None:
            message = "No executor: the test server has no Docker engine and no image folder."
            return self._set("JOB_STATE_FAILED", message, 13)
        spec = self.resource["jobSpec"]
        pools = spec["workerPoolSpecs"]
        for task, pool, env in vertex_env(self.resource, self.job_id):
            container = pools[pool].get("containerSpec", {})
            env = {**{e["name"]: e.get("value", "") for e in container.get("env", [])}, **env}

            def on_line(text: str, severity: str, task: str = task) -> None:
                self.logs.add(self.project, self.job_id, task, text, severity)

            try:
                self.replicas[task] = self.executor.start(
                    f"vertex-{self.job_id}-{task}",
                    container["imageUri"],
                    list(container.get("command", [])),
                    list(container.get("args", [])),
                    env,
                    on_line,
                )
            except StartError as exc:
                self._service(str(exc), "ERROR")
                return self._set("JOB_STATE_FAILED", str(exc), 3)
        self._set("JOB_STATE_RUNNING")
        self._service("Job is running.")
        self._watch(float(str(spec.get("scheduling", {}).get("timeout", "0s")).rstrip("s")))

    def _watch(self, timeout: float) -> None:
        started = time.monotonic()
        while True:
            if self.cancel_requested.is_set():
                return self._cancelled()
            codes = {task: r.poll() for task, r in self.replicas.items()}
            failed = [(t, c) for t, c in codes.items() if c not in (None, 0)]
            if failed:
                task, code = failed[0]
                for replica in self.replicas.values():
                    replica.kill()
                self._drain()
                message = (
                    f"The replica {task} exited with a non-zero status of {code}. \n"
                    "Termination reason: Error. \nTo find out more about why your job exited "
                    "please check the logs: https://console.cloud.google.com/logs/viewer?"
                    f"project={self.project}&resource=ml_job%2Fjob_id%2F{self.job_id}"
                )
                self._service(f"Job failed. {message.splitlines()[0]}", "ERROR")
                return self._set("JOB_STATE_FAILED", message, 3)
            workers = {t: c for t, c in codes.items() if not t.startswith("workerpool2-")}
            if all(c == 0 for c in workers.values()):
                self._drain()
                self._service("Job completed successfully.")
                return self._set("JOB_STATE_SUCCEEDED")
            if timeout and time.monotonic() - started > timeout:
                for replica in self.replicas.values():
                    replica.kill()
                self._drain()
                message = f"The job ran past its timeout of {timeout:g}s and was stopped."
                self._service(message, "ERROR")
                return self._set("JOB_STATE_FAILED", message, 4)
            time.sleep(0.05)

    def _drain(self) -> None:
        """Wait (bounded) for the replicas' last output to reach the logs."""
        for replica in self.replicas.values():
            replica.finish(10)

    def _cancelled(self) -> None:
        self._set("JOB_STATE_CANCELLING")
        for replica in self.replicas.values():
            replica.kill()
        self._drain()
        self._service("Job was cancelled.")
        self._set("JOB_STATE_CANCELLED", "CANCELED", 1)
