"""The Docker engine: building, finding, pushing and pulling job images with the docker SDK.

:func:`tfc_jupyter.image.ensure_image` decides what to do; this module talks to the engine. A
build streams its steps as progress (:mod:`.progress`); a failed one raises
:class:`~.progress.BuildError` (one line naming the failing step, the log's tail in ``.log``);
an engine that refuses or goes away mid-way is one line too, never a traceback.

docker is imported only here, and only when an image is needed; without the package the error
says which extra to install.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import BackendError, MissingDependency
from ..registry import image_registry, registry_login
from ..util.files import human_size
from .context import Context
from .names import CONTENT_LABEL
from .progress import ANSI, LOG_TAIL, BuildError, Progress, build_error, report, short

API_TIMEOUT_S = 600  # one read from the engine (a silent RUN step) may take this long
PING_TIMEOUT_S = 10


# ------------------------------------------------------------------------------ engine
def engine_address() -> str:
    """Where the docker SDK looks for the engine (``DOCKER_HOST`` or the default socket)."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def docker_client(feature: str = "the docker backend") -> Any:
    """A docker SDK client whose engine answered a ping.

    Raises:
        MissingDependency: the docker package is not installed.
        BackendError: no engine answers (the message says where it looked).
    """
    try:
        import docker
    except ImportError:
        raise MissingDependency("docker", "docker", feature) from None
    try:
        client = docker.from_env(timeout=PING_TIMEOUT_S)
        client.ping()
        client.api.timeout = API_TIMEOUT_S
    except Exception as exc:
        raise BackendError(
            f"no Docker engine answers at {engine_address()} ({short(exc)})",
            "start Docker (or set DOCKER_HOST to a running engine)",
        ) from None
    return client


def find_local(client: Any, uri: str, tag: str) -> Any:
    """The local image named ``uri``, else one built from the same content (any name), else
    None."""
    import docker.errors

    try:
        return client.images.get(uri)
    except docker.errors.ImageNotFound:
        pass
    same = client.images.list(filters={"label": f"{CONTENT_LABEL}={tag}"})
    return same[0] if same else None


def in_registry(client: Any, uri: str, auth: dict[str, str] | None) -> bool:
    """True when the registry has ``uri`` already (False when it has not or cannot say)."""
    import docker.errors

    try:
        client.images.get_registry_data(uri, auth_config=auth)
        return True
    except docker.errors.APIError:
        return False


# ------------------------------------------------------------------------------ build
def build(
    client: Any, context: Context, uri: str, cache_from: str | None, deadline_s: float
) -> list[tuple[str, bool]]:
    """Run the build, reporting each step; returns ``[(instruction, cached)]``."""
    buf = io.BytesIO()
    context.write_tar(buf)
    buf.seek(0)
    steps: list[tuple[str, bool]] = []
    log: list[str] = []
    error = None
    deadline = time.monotonic() + deadline_s
    need = len(buf.getvalue())
    stream = engine_stream(
        "build",
        lambda: client.api.build(
            fileobj=buf,
            custom_context=True,
            tag=uri,
            rm=True,
            forcerm=True,
            pull=False,
            network_mode="host",  # apt and pip reach the network as the host does
            decode=True,
            labels={CONTENT_LABEL: context.tag},
            cache_from=[cache_from] if cache_from else None,
            timeout=API_TIMEOUT_S,
        ),
        lambda: engine_room(client, need),
    )
    for chunk in stream:
        if "error" in chunk:
            error = chunk.get("errorDetail", {}).get("message") or chunk["error"]
            log.append(error.rstrip())
            break
        text = ANSI.sub("", chunk.get("stream", ""))
        for line in text.splitlines():
            if line.strip():
                log.append(line)
            if line.startswith("Step ") and " : " in line:
                counter, instruction = line[5:].split(" : ", 1)
                done, _, total = counter.partition("/")
                steps.append((instruction.strip(), False))
                report(
                    Progress(
                        "build",
                        f"step {counter}: {instruction.strip()[:100]}",
                        int(done or 0),
                        int(total or 0),
                    )
                )
            elif line.strip() == "---> Using cache" and steps:
                steps[-1] = (steps[-1][0], True)
        if time.monotonic() > deadline:
            error = f"the build ran past its deadline of {deadline_s:g} s (TFC_BUILD_TIMEOUT)"
            log.append(error)
            break
    if error is not None:
        if "no space left" in error:  # a step filled the engine's disk (pip, apt, COPY)
            raise BuildError(
                f"the Docker engine ran out of disk space during the build "
                f"({engine_room(client, need)}): {short(error)}",
                "free disk space where Docker keeps its data (docker system prune), or leave "
                "large files out of the image (.tfcignore, fewer --include)",
                log[-LOG_TAIL:],
            )
        raise build_error(error, steps, log)
    return steps


def engine_room(client: Any, need: int) -> str:
    """Where the engine keeps its data and how big the build context is, for a full-disk error.

    The free space there is not reported: the engine may live on another machine or in
    another mount namespace, where this process would measure the wrong disk.
    """
    try:
        root = str(client.info().get("DockerRootDir") or "")
    except Exception:  # the engine is the one in trouble: say what we know
        root = ""
    where = f" at {root}" if root else ""
    return f"the engine's disk{where} is full; the build context alone is {human_size(need)}"


def engine_stream(
    what: str, start: Callable[[], Any], room: Callable[[], str] | None = None
) -> Iterator[Any]:
    """The engine's answer to ``start()`` (a build or push stream), chunk by chunk.

    The engine refusing the request (a 500: no space left for the context ...) or going away
    mid-way (a dropped connection, a killed daemon) ends in one :class:`BuildError` line naming
    the fix, never in a docker or requests traceback.
    """
    import docker.errors
    import requests
    import urllib3.exceptions

    broken = (docker.errors.DockerException, requests.RequestException, OSError)
    try:
        yield from start()
    except (*broken, urllib3.exceptions.HTTPError) as exc:  # urllib3: a stream cut mid-way
        first = exc.args[0] if exc.args and isinstance(exc.args[0], str) else exc
        detail = short(getattr(exc, "explanation", None) or first)
        if "no space left" in detail:
            where = f" ({room()})" if room else ""
            raise BuildError(
                f"the Docker engine ran out of disk space during the {what}{where}: {detail}",
                "free disk space where Docker keeps its data (docker system prune), or leave "
                "large files out of the image (.tfcignore, fewer --include)",
                [detail],
            ) from None
        if isinstance(exc, docker.errors.APIError) and exc.response is not None:
            raise BuildError(
                f"the Docker engine refused the {what}: {detail}",
                "see the Docker engine's log (journalctl -u docker), then launch again",
                [detail],
            ) from None
        raise BuildError(
            f"the Docker engine at {engine_address()} stopped answering during the {what} "
            f"({detail})",
            "check that Docker is running (docker info), then launch again",
            [detail],
        ) from None


def _push_hint(uri: str, chunk: dict[str, Any]) -> str:
    """What to do when a push was refused: the registry's own answer where its cloud knows it
    (:func:`tfc_jupyter.registry.image_registry`: the role that holds the permission Artifact
    Registry named), else a login."""
    known = image_registry(uri)
    hint = known.push_hint(str(chunk["error"])) if known is not None else None
    return hint or (
        "check that you may push to that registry (docker login, or "
        "`gcloud auth application-default login` for Artifact Registry)"
    )


def push(client: Any, uri: str, auth: dict[str, str] | None, deadline_s: float) -> None:
    """Push ``uri``, reporting bytes sent over all layers."""
    repository, _, tag = uri.rpartition(":")
    sent: dict[str, tuple[int, int]] = {}
    deadline = time.monotonic() + deadline_s
    push = lambda: client.api.push(  # noqa: E731
        repository, tag=tag, stream=True, decode=True, auth_config=auth
    )
    for chunk in engine_stream("push", push):
        if "error" in chunk:
            raise BackendError(
                f"pushing {uri} failed: {short(chunk['error'])}", _push_hint(uri, chunk)
            )
        detail = chunk.get("progressDetail") or {}
        if chunk.get("id") and detail.get("total"):
            sent[chunk["id"]] = (int(detail.get("current", 0)), int(detail["total"]))
            current = sum(c for c, _ in sent.values())
            total = sum(t for _, t in sent.values())
            report(
                Progress(
                    "push",
                    f"pushing {human_size(current)} / {human_size(total)}",
                    current,
                    total,
                )
            )
        if time.monotonic() > deadline:
            raise BackendError(
                f"pushing {uri} ran past {deadline_s:g} s",
                "check the network and retry, or raise TFC_BUILD_TIMEOUT",
            )


def no_engine(spec_bucket: str | None, uri: str) -> BackendError:
    """What is missing when there is no Docker engine and Cloud Build cannot serve."""
    if spec_bucket:  # only a pushed image (Vertex AI) can be built by Cloud Build
        return BackendError(
            f"no Docker engine answers at {engine_address()}, and {uri} must be built here: the "
            "docker backend runs it on this machine (Cloud Build with --build-bucket serves "
            "--backend vertex)",
            "start Docker (or set DOCKER_HOST), or launch with --backend vertex",
        )
    return BackendError(
        f"no Docker engine answers at {engine_address()}, so {uri} cannot be built here",
        "start Docker (or set DOCKER_HOST), pass --build-bucket to build with Cloud Build, or "
        "pass --image with an image you built",
    )


def ensure_pulled(client: Any, uri: str) -> None:
    import docker.errors

    try:
        client.images.get(uri)
        return
    except docker.errors.ImageNotFound:
        pass
    report(Progress("pull", f"pulling {uri}"))
    repository, _, tag = uri.rpartition(":")
    if not repository or "/" in tag:
        repository, tag = uri, "latest"
    try:
        client.images.pull(repository, tag=tag, auth_config=registry_login(uri))
    except docker.errors.APIError as exc:
        raise BackendError(
            f"the image {uri} is not here and cannot be pulled: {short(exc)}",
            "check the --image name, or docker login to its registry",
        ) from None
