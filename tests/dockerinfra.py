"""Docker test infrastructure: session fixtures, and the offline base images.

Fixtures (imported by ``tests/conftest.py``, so any test can ask for them):

* ``docker_client``: a docker SDK client on ``DOCKER_HOST``; the test skips, saying how to get an
  engine, when none answers (developers without Docker can still run the suite).
* ``registry``: ``host:port`` of a local registry (``TFC_TEST_REGISTRY``), answering ``/v2/``.
* ``tf_parent_image``: an image with Python 3 and this venv's TensorFlow (+ tf-keras), made
  offline: no Docker Hub here.

``scripts/docker_services.sh start`` (called by ``scripts/test.sh``) starts the engine and the
registry and runs ``python tests/dockerinfra.py images --cache DIR``, which makes the images once
per engine and prints the parent image's name:

1. ``tfc-test/debian-python:bookworm``: ``debootstrap --variant=minbase bookworm`` with python3
   and pip, imported as an image (about a minute);
2. ``tfc-test/tensorflow-cpu:<version>``: on top of it, ``pip install tensorflow-cpu==<version>``
   and ``tf-keras`` in a build with host networking, the host's CA bundle only in a throw-away
   build stage (about a minute more).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

BASE_IMAGE = "tfc-test/debian-python:bookworm"
SESSION_IMAGES = ("tfc-jupyter/", "tfc-test/hang-worker")  # removed when the session ends
PARENT_REPO = "tfc-test/tensorflow-cpu"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
HOW = (
    'start one with `eval "$(bash scripts/docker_services.sh start)"` (as root), '
    "or run scripts/test.sh"
)


def tf_version() -> str:
    """The TensorFlow version of this environment (the parent image gets the same)."""
    for dist in ("tensorflow-cpu", "tensorflow"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    raise RuntimeError("no TensorFlow in this environment")


def parent_image_name() -> str:
    """``tfc-test/tensorflow-cpu:<version>``."""
    return f"{PARENT_REPO}:{tf_version()}"


def _log(message: str) -> None:
    print(f"[dockerinfra] {message}", file=sys.stderr, flush=True)


def _exists(client: Any, name: str) -> bool:
    import docker.errors

    try:
        client.images.get(name)
        return True
    except docker.errors.ImageNotFound:
        return False


def make_base_image(client: Any, cache: Path) -> None:
    """Debian bookworm (minbase) with python3 and pip, from debootstrap: no registry needed."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache, prefix="rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        _log("debootstrap bookworm (minbase + python3)")
        subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                "--include=python3,python3-pip,python-is-python3,ca-certificates",
                "bookworm",
                str(rootfs),
                DEBIAN_MIRROR,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=900,
        )
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (rootfs / junk).glob("*"):
                if item.is_file():
                    item.unlink()
        archive = Path(tmp) / "rootfs.tar"
        subprocess.run(
            ["tar", "-C", str(rootfs), "-cf", str(archive), "."], check=True, timeout=600
        )
        repository, tag = BASE_IMAGE.split(":")
        client.api.import_image_from_file(str(archive), repository=repository, tag=tag)
    _log(f"{BASE_IMAGE} made in {time.monotonic() - started:.0f} s")


def _ca_bundle() -> bytes:
    for path in (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"), *CA_BUNDLES):
        if path and Path(path).is_file():
            return Path(path).read_bytes()
    return b""


def make_parent_image(client: Any, name: str) -> None:
    """TensorFlow (this venv's version) and tf-keras on the base image, pip run in the build."""
    started = time.monotonic()
    version = tf_version()
    keras = metadata.version("tf-keras") if _has("tf-keras") else version
    dockerfile = f"""\
FROM {BASE_IMAGE} AS deps
COPY ca.crt /tmp/ca.crt
ENV PIP_CERT=/tmp/ca.crt PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \\
    PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore PIP_DEFAULT_TIMEOUT=180
RUN python3 -m pip install -q --root /install tensorflow-cpu=={version} \\
 && python3 -m pip install -q --root /install --no-deps tf-keras=={keras}
FROM {BASE_IMAGE}
COPY --from=deps /install/ /
ENV PYTHONUNBUFFERED=1
"""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for arcname, data in (("Dockerfile", dockerfile.encode()), ("ca.crt", _ca_bundle())):
            info = tarfile.TarInfo(arcname)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    _log(f"building {name} (pip install tensorflow-cpu=={version} tf-keras=={keras})")
    error = None
    for chunk in client.api.build(
        fileobj=buf,
        custom_context=True,
        tag=name,
        rm=True,
        forcerm=True,
        network_mode="host",
        decode=True,
        timeout=1800,
    ):
        if "error" in chunk:
            error = chunk["error"]
        elif chunk.get("stream", "").startswith("Step "):
            _log(chunk["stream"].strip())
    if error:
        raise RuntimeError(f"building {name} failed: {error}")
    _log(f"{name} made in {time.monotonic() - started:.0f} s")


def _has(dist: str) -> bool:
    try:
        metadata.version(dist)
        return True
    except metadata.PackageNotFoundError:
        return False


def ensure_images(client: Any, cache: Path) -> str:
    """Make the base and parent images unless the engine has them; the parent's name."""
    name = parent_image_name()
    if not _exists(client, name):
        if not _exists(client, BASE_IMAGE):
            make_base_image(client, cache)
        make_parent_image(client, name)
    return name


def connect(timeout: float = 10.0) -> Any:
    """A docker SDK client on ``DOCKER_HOST`` that answered a ping, else None."""
    try:
        import docker
    except ImportError:
        return None
    if not os.environ.get("DOCKER_HOST") and not Path("/var/run/docker.sock").exists():
        return None
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
        return client
    except Exception:
        return None


# ----------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    """A docker SDK client; the test skips when no engine answers."""
    client = connect()
    if client is None:
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        pytest.skip(f"no Docker engine answers at {where}: {HOW}")
    client.api.timeout = 600  # builds and pushes stream for a while
    before = {image["Id"] for image in _images(client)}
    yield client
    # The job images this session built (not the base images, not other sessions' names).
    for image in _images(client):
        tags = image.get("RepoTags") or []
        mine = any(t.startswith(SESSION_IMAGES) or "/tfc-tests/" in t for t in tags)
        if image["Id"] not in before and mine:
            with contextlib.suppress(Exception):  # in use by another session's container
                client.images.remove(image["Id"], force=True)
    client.close()


def _images(client: Any) -> list[dict[str, Any]]:
    """The engine's images as one listing (the SDK's ``images.list()`` inspects each after the
    listing: an image another test process removes in between made it fail with a 404)."""
    return list(client.api.images())


@dataclass
class OwnLayers:
    """The regular files of an image's own layers (above its parent's)."""

    names: set[str]  # every regular file's path in those layers
    marked: set[str]  # the paths whose content holds one of the marks asked about


def own_layer_files(client: Any, uri: str, parent: str, marks: tuple[bytes, ...]) -> OwnLayers:
    """The files ``uri``'s own layers hold, read as the engine streams ``docker save``.

    Nothing is written here (a saved TensorFlow image is 1.7 GB: two of them filled a CI disk).
    A layer is the image's own when the sha256 of its tar is one of the image's diff IDs and not
    one of the parent's; the whole stream is read once, each file's content scanned for ``marks``.
    """
    inherited = set(client.images.get(parent).attrs["RootFS"]["Layers"])
    own = set(client.images.get(uri).attrs["RootFS"]["Layers"]) - inherited
    found = OwnLayers(set(), set())
    seen: set[str] = set()
    saved = io.BufferedReader(_Chunks(client.api.get_image(uri)), 1 << 20)
    with tarfile.open(fileobj=saved, mode="r|") as image:
        for member in image:
            if not member.isfile() or member.name.endswith((".json", "VERSION", "repositories")):
                continue
            hashing = _Hashing(image.extractfile(member))  # type: ignore[arg-type]
            try:
                layer = _scan_layer(io.BufferedReader(hashing, 1 << 20), marks)
            except tarfile.ReadError:  # an OCI config or index blob, not a layer
                continue
            while hashing.read(1 << 20):  # the tar's end blocks, for the digest
                pass
            digest = "sha256:" + hashing.digest.hexdigest()
            if digest in own:
                seen.add(digest)
                found.names |= layer.names
                found.marked |= layer.marked
    assert seen == own, f"the saved image lacks its own layers {sorted(own - seen)}"
    return found


def _scan_layer(layer: io.BufferedReader, marks: tuple[bytes, ...]) -> OwnLayers:
    found = OwnLayers(set(), set())
    keep = max(len(mark) for mark in marks) - 1
    with tarfile.open(fileobj=layer, mode="r|") as tar:
        for member in tar:
            if not member.isfile():
                continue
            found.names.add(member.name)
            content, tail = tar.extractfile(member), b""
            while chunk := content.read(1 << 20):  # type: ignore[union-attr]
                window = tail + chunk
                if any(mark in window for mark in marks):
                    found.marked.add(member.name)
                    break
                tail = window[len(window) - keep :]
    return found


class _Chunks(io.RawIOBase):
    """A readable stream over an iterator of byte chunks (the engine's streamed answer)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks, self._left = iter(chunks), b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            self._left = next(self._chunks, b"")
            if not self._left:
                return 0
        count = min(len(buffer), len(self._left))
        buffer[:count] = self._left[:count]
        self._left = self._left[count:]
        return count


class _Hashing(io.RawIOBase):
    """A readable stream that hashes what is read through it."""

    def __init__(self, raw: Any) -> None:
        self._raw, self.digest = raw, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        self.digest.update(data)
        buffer[: len(data)] = data
        return len(data)


@pytest.fixture(scope="session")
def registry() -> str:
    """``127.0.0.1:PORT`` of the local registry; the test skips when none answers."""
    address = os.environ.get("TFC_TEST_REGISTRY", "")
    if not address:
        pytest.skip(f"no local registry (TFC_TEST_REGISTRY is not set): {HOW}")
    try:
        with urllib.request.urlopen(f"http://{address}/v2/", timeout=5) as reply:
            reply.read()
    except OSError as exc:
        pytest.skip(f"the registry at {address} does not answer ({exc}): {HOW}")
    return address


@pytest.fixture(scope="session")
def tf_parent_image(docker_client: Any) -> str:
    """The parent image with TensorFlow; made here (minutes, once per engine) when missing."""
    name = os.environ.get("TFC_TEST_PARENT_IMAGE") or parent_image_name()
    if _exists(docker_client, name):
        return name
    if os.geteuid() != 0 or not _which("debootstrap"):
        pytest.skip(f"the engine has no {name} and debootstrap cannot run here: {HOW}")
    cache = Path(__file__).resolve().parents[1] / ".cache" / "docker"
    cache.mkdir(parents=True, exist_ok=True)
    return ensure_images(docker_client, cache)


def _which(name: str) -> bool:
    from shutil import which

    return which(name) is not None


def main(argv: list[str] | None = None) -> int:
    """``python tests/dockerinfra.py images --cache DIR``: make the images, print the parent."""
    parser = argparse.ArgumentParser(prog="dockerinfra.py")
    parser.add_argument("command", choices=["images"])
    parser.add_argument("--cache", type=Path, required=True)
    args = parser.parse_args(argv)
    client = connect(timeout=30)
    if client is None:
        print("no Docker engine answers at DOCKER_HOST", file=sys.stderr)
        return 1
    client.api.timeout = 1800
    print(ensure_images(client, args.cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
