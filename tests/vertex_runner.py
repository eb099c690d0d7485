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

The package route (a pool with ``pythonPackageSpec`` instead of ``containerSpec``): for each
replica, :class:`JobRun` downloads every ``packageUris`` object from the fake Cloud Storage
(``storage_url``, ``GET /storage/v1/b/B/o/N?alt=media``; loopback only) into the replica's own
folder, then the executor installs and runs them with the pool's ``env`` plus the variables above:

* :class:`ProcessExecutor` (the ``executorImageUri`` registered as a folder): the wheels unpacked
  into ``FOLDER/site`` (:func:`install_wheels`: pure ``py3-none-any`` wheels only, and every
  ``Requires-Dist`` already installed in this interpreter or among the wheels, as there is no
  package index), then ``python -m MODULE ARGS`` in a fresh ``FOLDER/work`` with ``PYTHONPATH`` =
  ``FOLDER/site`` then the image's folder;
* :class:`DockerExecutor`: the same unpacked folder copied into a container of the executor image
  at ``/tfc-packages`` (``PYTHONPATH``), running ``python -m MODULE ARGS`` (``python3`` when the
  image has no ``python``) in the image's working directory.

A package that cannot be downloaded (a missing object) or installed fails the job as Vertex does
when the replica's setup exits 1: a line in the replica's log, the reason (and the URI) in the
job's error.

Every output line becomes a Cloud Logging entry (``resource.type="ml_job"``, ``task_name``
``workerpool0-0`` ...) in :class:`LogStore`, and :class:`JobRun` moves the job through QUEUED,
PENDING, RUNNING to SUCCEEDED, FAILED or CANCELLED.
"""

from __future__ import annotations

import contextlib
import email.parser
import io
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from vertex_validate import container_env

OnLine = Callable[[str, str], None]  # (text, severity)
_ROLES = {0: "chief", 1: "worker", 2: "ps", 3: "evaluator"}
TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}
PACKAGES_IN_CONTAINER = "/tfc-packages"
_PY = 'PY="$(command -v python || command -v python3)"'  # the image's Python, in sh
_INSTALLED = """\
import importlib.metadata as m, json, os, platform, sys
dists = {d.metadata["Name"]: d.version for d in m.distributions() if d.metadata["Name"]}
environment = {
    "python_version": "%d.%d" % sys.version_info[:2],
    "python_full_version": platform.python_version(),
    "sys_platform": sys.platform,
    "platform_machine": platform.machine(),
    "platform_system": platform.system(),
    "os_name": os.name,
    "implementation_name": sys.implementation.name,
    "platform_python_implementation": platform.python_implementation(),
}
print(json.dumps({"dists": dists, "environment": environment}))
"""  # the image's distributions and marker environment, as one JSON line


class StartError(Exception):
    """A replica could not be started (its image cannot be found or pulled ...)."""


class InstallError(StartError):
    """A replica's Python package could not be downloaded or installed (on Vertex AI the
    replica's setup step exits 1; here the replica is not started)."""


# ------------------------------------------------------------------------------- packages
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_WHEEL = re.compile(
    r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[A-Za-z0-9_.!+]+)(-\d[\w.]*)?"
    r"-(?P<py>[\w.]+)-(?P<abi>[\w.]+)-(?P<plat>[\w.]+)\.whl$"
)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def download(storage_url: str | None, uri: str, dest: Path) -> Path:
    """Fetch ``gs://bucket/object`` from the fake Cloud Storage's JSON API (``?alt=media``) into
    ``dest`` (keeping the object's base name); raise :class:`InstallError` naming ``uri``.

    Only a loopback ``storage_url`` is asked, without proxies: the server reaches no network."""
    bucket, _, name = uri.removeprefix("gs://").partition("/")
    if not storage_url:
        raise InstallError(
            f"Unable to download {uri}: the test server knows no Cloud Storage endpoint "
            "(VertexServer.storage_url / --storage-url)."
        )
    if urlsplit(storage_url).hostname not in _LOOPBACK:
        raise InstallError(
            f"Unable to download {uri}: {storage_url} is not a loopback address and the test "
            "server reaches no network."
        )
    url = (
        f"{storage_url.rstrip('/')}/storage/v1/b/{quote(bucket, safe='')}"
        f"/o/{quote(name, safe='')}?alt=media"
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=30) as reply:
            data = reply.read()
    except urllib.error.HTTPError as exc:
        try:
            why = json.loads(exc.read())["error"]["message"]
        except Exception:
            why = exc.reason
        raise InstallError(f"Unable to download {uri}: {exc.code} {why}") from None
    except OSError as exc:
        raise InstallError(f"Unable to download {uri}: {exc}") from None
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / (name.rsplit("/", 1)[-1] or "package")
    path.write_bytes(data)
    return path


def _wheel_requirements(archive: zipfile.ZipFile, wheel: str) -> list[str]:
    metadata = [n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
    if len(metadata) != 1:
        raise InstallError(f"{wheel} is not a valid wheel: it has no .dist-info/METADATA.")
    message = email.parser.Parser().parsestr(archive.read(metadata[0]).decode("utf-8", "replace"))
    return list(message.get_all("Requires-Dist") or [])


@dataclass(frozen=True)
class Installed:
    """What an executor image has: distributions (canonical name -> version) and the marker
    environment of its Python (``python_version``, ``sys_platform`` ...)."""

    dists: dict[str, str]
    environment: dict[str, str]


def _unmet(requirement: str, given: dict[str, str], image: Installed | None = None) -> bool:
    """Whether a ``Requires-Dist`` line is neither among ``given`` wheels (name -> version) nor
    installed: in ``image`` when given, else in this interpreter (markers that do not apply
    there count as met)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    req = Requirement(requirement)
    environment = {**(image.environment if image else {}), "extra": ""}
    if req.marker is not None and not req.marker.evaluate(environment):
        return False
    name = _canonical(req.name)
    version = given.get(name)
    if version is None and image is not None:
        version = image.dists.get(name)
        if version is None:
            return True
    elif version is None:
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            return True
    return not req.specifier.contains(version, prereleases=True)


def install_wheels(wheels: list[Path], site: Path, *, image: Installed | None = None) -> None:
    """What ``pip install`` does with pure wheels, without an index: unpack each archive into
    ``site`` (``*.data/purelib`` and ``platlib`` moved to the top, other data dropped).

    Refuses (:class:`InstallError`) anything but a ``py3-none-any`` wheel, a member outside the
    folder, and a ``Requires-Dist`` that neither another of ``wheels`` nor the Python that will
    run them (``image``'s, else this interpreter) provides: the test machine has no package
    index to fetch it from."""
    parsed = []
    for wheel in wheels:
        m = _WHEEL.fullmatch(wheel.name)
        if not m:
            raise InstallError(
                f"{wheel.name} is not a wheel: this test server installs pure wheels "
                "(NAME-VERSION-py3-none-any.whl) only."
            )
        if "py3" not in m["py"].split(".") or m["abi"] != "none" or m["plat"] != "any":
            raise InstallError(
                f"{wheel.name} is not a pure Python wheel (py3-none-any): "
                f"{m['py']}-{m['abi']}-{m['plat']} cannot be installed here."
            )
        parsed.append((wheel, m))
    given = {_canonical(m["name"]): m["version"] for _, m in parsed}
    site.mkdir(parents=True, exist_ok=True)
    for wheel, _ in parsed:
        try:
            archive = zipfile.ZipFile(wheel)
        except zipfile.BadZipFile:
            raise InstallError(f"{wheel.name} is not a valid wheel: not a zip archive.") from None
        with archive:
            for member in archive.namelist():
                parts = Path(member).parts
                if member.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
                    raise InstallError(f"{wheel.name} holds a file outside its folder: {member}")
            requires = _wheel_requirements(archive, wheel.name)
            unmet = [r for r in requires if _unmet(r, given, image)]
            if unmet:
                raise InstallError(
                    f"{wheel.name} requires {', '.join(unmet)}, not installed in the "
                    "executor image; this test server has no package index to fetch it from."
                )
            archive.extractall(site)
    for data in site.glob("*.data"):
        for scheme in ("purelib", "platlib"):
            if (data / scheme).is_dir():
                shutil.copytree(data / scheme, site, dirs_exist_ok=True)
        shutil.rmtree(data, ignore_errors=True)


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

    def add(
        self,
        project: str,
        job_id: str,
        task: str | None,
        text: str,
        severity: str,
        labels: dict[str, str] | None = None,
    ) -> None:
        """One entry: a replica's line (``task`` like ``workerpool0-0``) or a service message;
        ``labels``: the entry's own (a tuning trial's ``ml.googleapis.com/trial_id``)."""
        with self._lock:
            now = max(datetime.now(timezone.utc), self._last + timedelta(microseconds=1))
            self._last = now
            resource = {"job_id": job_id, "project_id": project}
            if task:
                resource["task_name"] = task
            log = task or f"ml.googleapis.com%2F{job_id}"
            entry = {
                "logName": f"projects/{project}/logs/{log}",
                "resource": {"type": "ml_job", "labels": resource},
                "textPayload": text,
                "timestamp": rfc3339(now),
                "receiveTimestamp": rfc3339(now),
                "severity": severity,
                "insertId": f"{next(self._ids):012x}",
            }
            if labels:
                entry["labels"] = dict(labels)
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

    def read_file(self, path: str) -> bytes | None:
        """A file the replica wrote (before :meth:`finish` releases it), None if absent."""


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

    def start_package(
        self,
        name: str,
        image: str,
        wheels: list[Path],
        module: str,
        args: list[str],
        env: dict[str, str],
        on_line: OnLine,
        folder: Path,
    ) -> Running:
        """Start one replica of a ``pythonPackageSpec`` pool: install ``wheels`` (downloaded
        into ``folder``, the replica's own) and run ``python -m MODULE ARGS`` in ``image``;
        raise :class:`StartError` (:class:`InstallError`) when it cannot start."""
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

    def read_file(self, path: str) -> bytes | None:
        try:
            return Path(path).read_bytes()
        except OSError:
            return None


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
        return _spawn(argv, folder, [folder], env, on_line)

    def start_package(
        self,
        name: str,
        image: str,
        wheels: list[Path],
        module: str,
        args: list[str],
        env: dict[str, str],
        on_line: OnLine,
        folder: Path,
    ) -> Running:
        """Unpack ``wheels`` into ``folder/site`` (:func:`install_wheels`), then run
        ``python -m MODULE ARGS`` in a fresh ``folder/work`` with ``PYTHONPATH`` = the site
        folder, then the image's folder."""
        image_folder = self.images.get(image)
        if image_folder is None:
            raise StartError(f"Unable to pull image {image}: not found")
        site, work = folder / "site", folder / "work"
        install_wheels(wheels, site)
        work.mkdir(parents=True, exist_ok=True)
        on_line(_running(module, args), "INFO")
        argv = [sys.executable, "-m", module, *args]
        return _spawn(argv, work, [site, image_folder], env, on_line)


def _running(module: str, args: list[str]) -> str:
    return "Running command: " + shlex.join(["python3", "-m", module, *args])


def _spawn(
    argv: list[str], cwd: Path, path: list[Path], env: dict[str, str], on_line: OnLine
) -> _Process:
    """A process in its own session with a minimal environment, its output read into lines."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "SSL_CERT_FILE", "TMPDIR")
    full = {k: os.environ[k] for k in keep if k in os.environ}
    pythonpath = os.pathsep.join(str(p) for p in path)
    full.update({"PYTHONPATH": pythonpath, "TF_CPP_MIN_LOG_LEVEL": "1", **env})
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
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

    def read_file(self, path: str) -> bytes | None:
        try:
            chunks, _ = self.container.get_archive(path)
            with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
                member = tar.extractfile(tar.getmembers()[0])
                return member.read() if member is not None else None
        except Exception:
            return None


class DockerExecutor:
    """Replicas as containers of the job's image: host networking, pulled when missing."""

    name = "docker"

    def __init__(self, client: Any) -> None:
        self.client = client
        self._installed: dict[str, Installed] = {}

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
        return self._run(name, image, command, args, env, on_line)

    def start_package(
        self,
        name: str,
        image: str,
        wheels: list[Path],
        module: str,
        args: list[str],
        env: dict[str, str],
        on_line: OnLine,
        folder: Path,
    ) -> Running:
        """A container of the executor image with the wheels unpacked (:func:`install_wheels`,
        each ``Requires-Dist`` checked against what the image's Python has, :meth:`installed`)
        and copied in at ``/tfc-packages``, running ``python -m MODULE ARGS`` (``python3`` when
        the image has no ``python``) in the image's working directory with ``PYTHONPATH`` set to
        it."""
        site = folder / "site"
        install_wheels(wheels, site, image=self.installed(image))
        tree = io.BytesIO()
        with tarfile.open(fileobj=tree, mode="w") as tar:
            tar.add(site, arcname=PACKAGES_IN_CONTAINER.strip("/"))
        script = _PY + f' && exec "$PY" -m {module} "$@"'  # module: a validated dotted name
        env = {"PYTHONPATH": PACKAGES_IN_CONTAINER, **env}
        on_line(_running(module, args), "INFO")
        return self._run(
            name, image, ["sh", "-c", script, "sh"], args, env, on_line, tree.getvalue()
        )

    def installed(self, image: str) -> Installed:
        """The distributions and marker environment of the image's Python (asked once per
        image, in a throwaway container without a network)."""
        if image not in self._installed:
            import docker.errors

            self._pull(image)
            try:
                out = self.client.containers.run(
                    image,
                    entrypoint=["sh", "-c", _PY + ' && exec "$PY" -c "$0"', _INSTALLED],
                    network_mode="none",
                    remove=True,
                    labels={"tfc-vertex-test": "1"},
                )
                data = json.loads(out.decode().strip().splitlines()[-1])
            except (docker.errors.DockerException, ValueError, IndexError) as exc:
                raise StartError(f"Unable to read the packages of {image}: {exc}") from None
            dists = {_canonical(k): v for k, v in data["dists"].items()}
            self._installed[image] = Installed(dists, data["environment"])
        return self._installed[image]

    def _pull(self, image: str) -> None:
        import docker.errors

        try:
            try:
                self.client.images.get(image)
            except docker.errors.ImageNotFound:
                self.client.images.pull(image)
        except docker.errors.DockerException as exc:
            raise StartError(f"Unable to pull image {image}: {exc}") from None

    def _run(
        self,
        name: str,
        image: str,
        command: list[str],
        args: list[str],
        env: dict[str, str],
        on_line: OnLine,
        files: bytes | None = None,
    ) -> Running:
        """Create the container (``files``: a tar archive copied to ``/`` first), start it, read
        its output."""
        import docker.errors

        self._pull(image)
        container = None
        try:
            container = self.client.containers.create(
                image,
                entrypoint=command or None,
                command=args or None,
                environment=env,
                network_mode="host",
                name=name,
                labels={"tfc-vertex-test": "1"},
            )
            if files is not None:
                container.put_archive("/", files)
            container.start()
        except docker.errors.DockerException as exc:
            if container is not None:
                with contextlib.suppress(Exception):
                    container.remove(force=True)
            raise StartError(f"Unable to start a container of {image}: {exc}") from None

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
        return self._pick(image).start(name, image, command, args, env, on_line)

    def start_package(
        self,
        name: str,
        image: str,
        wheels: list[Path],
        module: str,
        args: list[str],
        env: dict[str, str],
        on_line: OnLine,
        folder: Path,
    ) -> Running:
        """Start one package replica with the executor that has its executor image."""
        use = self._pick(image)
        return use.start_package(name, image, wheels, module, args, env, on_line, folder)

    def _pick(self, image: str) -> ProcessExecutor | DockerExecutor:
        return self.docker if self.docker and image not in self.process.images else self.process


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


class Lifecycle:
    """A job resource's life as Vertex AI shows it: its state under a lock, its times, its
    error, and the daemon thread that runs it (``_run``). Shared by custom jobs
    (:class:`JobRun`) and tuning jobs (``vertex_tuning.TuningRun``)."""

    resource: dict[str, Any]
    lock: threading.Lock
    thread: threading.Thread | None

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

    def _run(self) -> None:
        raise NotImplementedError

    def _set(self, state: str, error: str | None = None, code: int = 0) -> None:
        """Move to ``state`` (never out of an ended one), stamping its times and error."""
        now = rfc3339(datetime.now(timezone.utc))
        with self.lock:
            if self.resource["state"] in TERMINAL:
                return
            self.resource["state"] = state
            self.resource["updateTime"] = now
            if state == "JOB_STATE_RUNNING":
                self.resource.setdefault("startTime", now)
            if state in TERMINAL:
                self.resource["endTime"] = now
            if error:
                self.resource["error"] = {"code": code, "message": error}


@dataclass
class JobRun(Lifecycle):
    """One accepted job: its resource (a JSON dict) and the thread that runs it."""

    resource: dict[str, Any]
    project: str
    executor: Executor | None
    logs: LogStore
    provision_delay: float = 0.1
    fail_with: str | None = None
    storage_url: str | None = None  # the fake Cloud Storage that package URIs are read from
    workdir: Path | None = None  # package replicas' folders (made on demand, removed at the end)
    # A tuning trial's job (vertex_tuning): its lines are logged under the tuning job's id with
    # the trial's labels, its replicas get the trial's variables, and ``collect`` sees the
    # replicas once they ended (before they are released).
    log_as: str | None = None
    log_labels: dict[str, str] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)
    collect: Callable[[dict[str, Running]], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    replicas: dict[str, Running] = field(default_factory=dict)
    thread: threading.Thread | None = None

    def _log(self, task: str | None, text: str, severity: str) -> None:
        self.logs.add(
            self.project, self.log_as or self.job_id, task, text, severity, self.log_labels
        )

    def _service(self, text: str, severity: str = "INFO") -> None:
        self._log(None, text, severity)

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
            if self.workdir is not None:
                shutil.rmtree(self.workdir, ignore_errors=True)

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
            package = pools[pool].get("pythonPackageSpec")
            spec_env = (package or pools[pool].get("containerSpec", {})).get("env", [])
            env = {**container_env(spec_env), **env, **self.extra_env}  # $(NAME) expanded

            def on_line(text: str, severity: str, task: str = task) -> None:
                self._log(task, text, severity)

            try:
                if package is not None:
                    self.replicas[task] = self._start_package(task, package, env, on_line)
                else:
                    container = pools[pool]["containerSpec"]
                    self.replicas[task] = self.executor.start(
                        f"vertex-{self.job_id}-{task}",
                        container["imageUri"],
                        list(container.get("command", [])),
                        list(container.get("args", [])),
                        env,
                        on_line,
                    )
            except InstallError as exc:  # the replica's setup fails: it exits 1 on Vertex AI
                on_line(str(exc), "ERROR")
                message = (
                    f"The replica {task} exited with a non-zero status of 1. \n"
                    f"Termination reason: Error. \n{exc}"
                )
                self._service(f"Job failed. {message.splitlines()[0]} {exc}", "ERROR")
                return self._set("JOB_STATE_FAILED", message, 3)
            except StartError as exc:
                self._service(str(exc), "ERROR")
                return self._set("JOB_STATE_FAILED", str(exc), 3)
        self._set("JOB_STATE_RUNNING")
        self._service("Job is running.")
        self._watch(float(str(spec.get("scheduling", {}).get("timeout", "0s")).rstrip("s")))

    def _start_package(
        self, task: str, package: dict[str, Any], env: dict[str, str], on_line: OnLine
    ) -> Running:
        """Download the replica's packages into its own folder, then start it (the executor
        installs them and runs ``python -m MODULE ARGS``), logging the steps as Vertex does."""
        assert self.executor is not None
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"vertex-{self.job_id}-"))
        folder = self.workdir / task
        wheels = []
        for i, uri in enumerate(package["packageUris"]):
            on_line(f"Downloading the package: {uri}", "INFO")
            wheels.append(download(self.storage_url, uri, folder / "packages" / str(i)))
        for uri in package["packageUris"]:
            on_line(f"Installing the package: {uri}", "INFO")
        module, args = package["pythonModule"], list(package.get("args", []))
        start = getattr(self.executor, "start_package", None)
        if start is None:
            raise StartError(f"The {self.executor.name} executor cannot run python_package_spec.")
        name = f"vertex-{self.job_id}-{task}"
        return start(name, package["executorImageUri"], wheels, module, args, env, on_line, folder)

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
        if self.collect is not None:
            self.collect(self.replicas)
        for replica in self.replicas.values():
            replica.finish(10)

    def _cancelled(self) -> None:
        self._set("JOB_STATE_CANCELLING")
        for replica in self.replicas.values():
            replica.kill()
        self._drain()
        self._service("Job was cancelled.")
        self._set("JOB_STATE_CANCELLED", "CANCELED", 1)
