"""Fault-injection helpers for ``tests/test_faults.py``: things that break on purpose.

* :func:`in_tmpfs`: run a command in its own mount namespace with a small tmpfs mounted on a
  folder (``unshare -m``, root only): a full disk that vanishes with the command.
* :class:`JupyterServer`: a real ``jupyter server`` process with the extension, to stop (SIGTERM
  or SIGKILL) and start again on the same root and job records.
* :class:`DedicatedEngine`: a private ``dockerd`` in its own mount namespace, its data on a tmpfs
  of a given size (a full disk for build contexts), killed for real when a test says so.
* :class:`SocketProxy`: a Unix-socket proxy in front of an engine that passes requests through,
  and traps a build request: ``hold`` it unanswered, or ``cut`` it once its answer has begun.

Everything listens on loopback or on Unix sockets under the test's folders; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import secrets
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
from pathlib import Path
from typing import Any

import psutil

_MOUNT = 'set -e; mount -t tmpfs -o size="$1",mode=0700 tmpfs "$2"; shift 2; exec "$@"'


# ----------------------------------------------------------------------------------- tmpfs
@functools.lru_cache(maxsize=1)
def tmpfs_unavailable() -> str | None:
    """Why a private tmpfs cannot be mounted here (None when it can)."""
    if os.name != "posix" or os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if not shutil.which("unshare"):
        return "no unshare command (util-linux)"
    with tempfile.TemporaryDirectory() as tmp:
        try:
            probe = subprocess.run(
                [
                    "unshare",
                    "-m",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    _MOUNT,
                    "sh",
                    "64k",
                    tmp,
                    "true",
                ],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"unshare -m failed: {exc}"
    if probe.returncode != 0:
        return f"cannot mount a tmpfs in a new mount namespace: {probe.stderr.strip()[:200]}"
    return None


def in_tmpfs(
    size: str, mountpoint: Path, argv: list[str], *, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with a tmpfs of ``size`` (``"4m"``) mounted on ``mountpoint``, seen by it
    alone; the tmpfs and all it holds are gone when it ends."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    cmd = [
        "unshare",
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        _MOUNT,
        "sh",
        size,
        str(mountpoint),
        *argv,
    ]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


# ----------------------------------------------------------------------------------- processes
def descendants(pid: int) -> list[psutil.Process]:
    """A process and every process under it (those that still run)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def kill_tree(procs: list[psutil.Process]) -> None:
    """SIGKILL each of these processes (ours: started by the test), by pid."""
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(procs, timeout=10)


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ----------------------------------------------------------------------------------- jupyter
class JupyterServer:
    """``python -m jupyter_server`` with only tfc_jupyter's extension, on a loopback port.

    ``start()`` waits (bounded) until the jobs API answers; ``stop(sig)`` ends it with SIGTERM
    (a restart) or SIGKILL (a crash). The same object may be started again.
    """

    def __init__(self, root: Path, config_dir: Path, env: dict[str, str], log: Path) -> None:
        self.root, self.env, self.log = root, env, log
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        config = {
            "ServerApp": {
                "jpserver_extensions": {
                    "tfc_jupyter": True,
                    "jupyterlab": False,
                    "jupyter_lsp": False,
                    "jupyter_server_terminals": False,
                    "notebook_shim": False,
                },
                "allow_unauthenticated_access": False,
                "port_retries": 0,
                "open_browser": False,
            },
            "IdentityProvider": {"token": self.token},
        }
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "jupyter_server_config.json").write_text(json.dumps(config))
        self.env = {**env, "JUPYTER_CONFIG_DIR": str(config_dir)}

    def start(self, timeout: float = 90.0) -> None:
        """Start the server and wait until ``GET /tfc-jupyter/defaults`` answers 200."""
        cmd = [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--port={self.port}",
            "--ip=127.0.0.1",
            "--allow-root",
            "--no-browser",
            f"--ServerApp.root_dir={self.root}",
        ]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter server exited: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(OSError):
                if self.request("GET", "defaults", timeout=2)[0] == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"jupyter server did not answer in {timeout:g} s")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        """End the server (only its own process: a job's supervisor is no child of it)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def request(
        self, method: str, path: str, body: Any = None, timeout: float = 30.0, **query: Any
    ) -> tuple[int, Any]:
        """``(status, JSON)`` of one API request with the token."""
        url = f"http://127.0.0.1:{self.port}/tfc-jupyter/{path}"
        if query:
            url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as reply:
                return reply.status, json.loads(reply.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")


# ----------------------------------------------------------------------------------- docker
class DedicatedEngine:
    """A private dockerd whose data lives on a tmpfs of ``size`` in its own mount namespace.

    Its socket is ``self.socket``; ``kill()`` ends it (and its containerd) with SIGKILL, as a
    crash would; ``stop()`` asks first. Needs root, ``unshare`` and ``dockerd``.
    """

    def __init__(self, size: str = "256m") -> None:
        self.size = size
        self.dir = Path(tempfile.mkdtemp(prefix="tfcd-", dir="/tmp"))  # short: socket paths
        self.socket = self.dir / "docker.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def unavailable() -> str | None:
        """Why no dedicated engine can run here (None when it can)."""
        if not shutil.which("dockerd") or not shutil.which("containerd"):
            return "no dockerd/containerd here (apt-get install docker.io)"
        try:
            import docker  # noqa: F401
        except ImportError:
            return "the docker package is not installed"
        return tmpfs_unavailable()

    def start(self, timeout: float = 60.0) -> Any:
        """Start dockerd; returns a docker SDK client once it answers."""
        import docker

        for sub in ("data", "exec"):
            (self.dir / sub).mkdir()
        dockerd = [
            "dockerd",
            "--data-root",
            str(self.dir / "data"),
            "--exec-root",
            str(self.dir / "exec"),
            "--pidfile",
            str(self.dir / "pid"),
            "-H",
            f"unix://{self.socket}",
            "--storage-driver=overlay2",
            "--iptables=false",
            "--ip6tables=false",
            "--bridge=none",
        ]
        cmd = [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            _MOUNT,
            "sh",
            self.size,
            str(self.dir / "data"),
            *dockerd,
        ]
        with open(self.dir / "dockerd.log", "ab") as log:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dockerd exited: {self.log_tail()}")
            with contextlib.suppress(Exception):
                client = docker.DockerClient(base_url=f"unix://{self.socket}", timeout=30)
                client.ping()
                return client
            time.sleep(0.2)
        raise RuntimeError(f"dockerd did not answer in {timeout:g} s: {self.log_tail()}")

    def log_tail(self) -> str:
        """The end of dockerd's log."""
        path = self.dir / "dockerd.log"
        return path.read_text(errors="replace")[-1500:] if path.exists() else ""

    def processes(self) -> list[psutil.Process]:
        """dockerd and everything it started (containerd, shims)."""
        return descendants(self.proc.pid) if self.proc else []

    def kill(self) -> None:
        """SIGKILL the engine and its children: the engine is gone, as in a crash."""
        kill_tree(self.processes())
        if self.proc is not None:
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL what is left; remove the engine's folder."""
        procs = self.processes()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=15)
        kill_tree([p for p in procs if p.is_running()])
        shutil.rmtree(self.dir, ignore_errors=True)


def tiny_image(client: Any, name: str = "tfc-test/tiny:1") -> str:
    """An image of one small file (no shell, no Python): a parent for builds that only COPY."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = b"tiny\n"
        info = tarfile.TarInfo("etc/tiny")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    repository, tag = name.rsplit(":", 1)
    client.api.import_image_from_data(buf.getvalue(), repository=repository, tag=tag)
    return name


_BUILD = re.compile(rb"POST /v[\d.]+/build\?")


class SocketProxy:
    """A Unix-socket proxy to an engine's socket; ``mode`` says what a build request meets.

    ``pass``: nothing. ``hold``: the build request is never forwarded nor answered (a stuck
    engine) until :meth:`release`. ``cut``: the build goes through; once its answer has begun,
    the proxy waits for :meth:`release` (the test kills the engine meanwhile) and closes the
    client's connection. ``build_seen`` is set when a build request arrives, ``answer_begun``
    when the first bytes of its answer have gone back to the client.
    """

    def __init__(self, upstream: Path, path: Path, mode: str = "pass") -> None:
        self.upstream, self.path, self.mode = upstream, path, mode
        self.build_seen = threading.Event()
        self.answer_begun = threading.Event()
        self.released = threading.Event()
        self._server: socket.socket | None = None

    def start(self) -> SocketProxy:
        """Listen on ``path``."""
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self._server.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def release(self) -> None:
        """Let a held or cut build connection end."""
        self.released.set()

    def close(self) -> None:
        """Stop listening (connections in flight end with their peers)."""
        self.released.set()
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.close()

    def _accept(self) -> None:
        assert self._server is not None
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(str(self.upstream))
        except OSError:
            client.close()
            return
        state = {"build": False}
        back = threading.Thread(target=self._back, args=(upstream, client, state), daemon=True)
        back.start()
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                if _BUILD.search(data):
                    state["build"] = True
                    self.build_seen.set()
                    if self.mode == "hold":
                        self.released.wait(timeout=300)
                        break
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def _back(self, upstream: socket.socket, client: socket.socket, state: dict[str, bool]) -> None:
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                client.sendall(data)
                if state["build"] and self.mode == "cut":
                    self.answer_begun.set()
                    self.released.wait(timeout=300)
                    break
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
