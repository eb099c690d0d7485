"""Building and pushing job images with the docker SDK, with progress, only when needed.

:func:`ensure_image` is what backends call: it names the image by the hash of its build context
(:mod:`tfc_jupyter.package`), and builds nothing when an image of that content exists here, and
pushes nothing when the registry has it already. Resubmitting an unchanged notebook costs a hash
and a lookup. Progress goes to the reporter installed with :func:`reporting` (the magic renders a
bar in the cell); by default, one line per step on stderr. A failed build raises
:class:`BuildError`: one line naming the failing step, and the log's tail in ``.log``.

docker is imported only here, and only when an image is needed; without the package the error
says which extra to install. Without an engine, a Vertex AI job with a build bucket
(``--build-bucket``) is built by Google Cloud Build (:mod:`tfc_jupyter.cloudbuild`); otherwise the
error says what is missing.
"""

from __future__ import annotations

import io
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from . import images, package
from .config import current_settings
from .errors import BackendError, MissingDependency
from .files import human

if TYPE_CHECKING:
    from .plan import Plan

CONTENT_LABEL = "org.tfc-jupyter.content"
API_TIMEOUT_S = 600  # one read from the engine (a silent RUN step) may take this long
PING_TIMEOUT_S = 10
LOG_TAIL = 40
_AR_HOSTS = ("-docker.pkg.dev", "gcr.io")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# ------------------------------------------------------------------------------ progress
@dataclass(frozen=True)
class Progress:
    """One progress event: ``phase`` is context, build, push, log (a failed build's tail) or
    done; ``step``/``total`` count build steps or pushed bytes."""

    phase: str
    message: str
    step: int = 0
    total: int = 0


ProgressFn = Callable[[Progress], None]
_REPORTER: ContextVar[ProgressFn | None] = ContextVar("tfc_build_progress", default=None)


class LineProgress:
    """Plain text: one line per build step, a line per tenth of a push (terminals, the CLI)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self._pushed = -1

    def __call__(self, event: Progress) -> None:
        stream = self.stream or sys.stderr
        if event.phase == "push" and event.total:
            tenth = event.step * 10 // event.total
            if tenth == self._pushed:
                return
            self._pushed = tenth
        stream.write(f"[image] {event.message}\n")
        stream.flush()


@contextmanager
def reporting(fn: ProgressFn) -> Iterator[None]:
    """Send build and push progress to ``fn`` within the block."""
    token = _REPORTER.set(fn)
    try:
        yield
    finally:
        _REPORTER.reset(token)


def report(event: Progress) -> None:
    """Hand one event to the current reporter (default: :class:`LineProgress` on stderr)."""
    (_REPORTER.get() or LineProgress())(event)


# ------------------------------------------------------------------------------ results
class BuildError(BackendError):
    """The image build failed: one line naming the step; ``log`` holds the log's tail."""

    def __init__(self, message: str, hint: str, log: list[str]) -> None:
        super().__init__(message, hint)
        self.log = log


@dataclass
class ImageResult:
    """What :func:`ensure_image` did: the image's URI, whether it built and pushed."""

    uri: str
    tag: str = ""
    built: bool = False
    pushed: bool = False
    steps: list[tuple[str, bool]] = field(default_factory=list)  # (instruction, from cache)
    context_bytes: int = 0
    seconds: float = 0.0

    @property
    def rebuilt(self) -> list[str]:
        """Layer-making instructions (RUN, COPY, ADD) that ran instead of coming from cache."""
        return [
            text
            for text, cached in self.steps
            if not cached and text.split(" ", 1)[0] in ("RUN", "COPY", "ADD")
        ]


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
            f"no Docker engine answers at {engine_address()} ({_short(exc)})",
            "start Docker (or set DOCKER_HOST to a running engine)",
        ) from None
    return client


def _short(exc: BaseException | str, limit: int = 240) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3].rsplit(" ", 1)[0] + "..."


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


def registry_auth(uri: str) -> dict[str, str] | None:
    """Push credentials: an OAuth token from application-default credentials for Artifact
    Registry and gcr.io; None elsewhere (the engine's own login, ``~/.docker/config.json``).

    The token goes to the engine with the push request only: never into a context or an image.
    """
    host = uri.split("/", 1)[0]
    if not host.endswith(_AR_HOSTS):
        return None
    try:
        import google.auth
        import google.auth.exceptions
        from google.auth.transport.requests import Request
    except ImportError:
        raise MissingDependency("google-auth", "vertex", f"pushing to {host}") from None
    try:
        credentials, _ = google.auth.default(
            scopes=["https://www.googleapis.com/auth/cloud-platform"]
        )
        credentials.refresh(Request())
    except google.auth.exceptions.GoogleAuthError as exc:
        raise BackendError(
            f"cannot get credentials to push to {host}: {_short(exc)}",
            "run `gcloud auth application-default login`, or set TFC_REGISTRY to a registry "
            "you are logged in to",
        ) from None
    return {"username": "oauth2accesstoken", "password": str(credentials.token)}


def in_registry(client: Any, uri: str, auth: dict[str, str] | None) -> bool:
    """True when the registry has ``uri`` already (False when it has not or cannot say)."""
    import docker.errors

    try:
        client.images.get_registry_data(uri, auth_config=auth)
        return True
    except docker.errors.APIError:
        return False


# ------------------------------------------------------------------------------ build
def _build(
    client: Any, context: package.Context, uri: str, cache_from: str | None, deadline_s: float
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
        text = _ANSI.sub("", chunk.get("stream", ""))
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
                f"({engine_room(client, need)}): {_short(error)}",
                "free disk space where Docker keeps its data (docker system prune), or leave "
                "large files out of the image (.tfcignore, fewer --include)",
                log[-LOG_TAIL:],
            )
        raise _build_error(error, steps, log)
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
    return f"the engine's disk{where} is full; the build context alone is {human(need)}"


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
        detail = _short(getattr(exc, "explanation", None) or first)
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


def _build_error(error: str, steps: list[tuple[str, bool]], log: list[str]) -> BuildError:
    """One line naming the failing step, and the log's tail from that step on."""
    # "The command '/bin/sh -c <the whole RUN line>' returned ...": the step names it already
    error = re.sub(r"^The command '.*' returned", "the command returned", error, flags=re.S)
    start = max((i for i, line in enumerate(log) if line.startswith("Step ")), default=0)
    tail = log[max(start, len(log) - LOG_TAIL) :] if len(log) - start > LOG_TAIL else log[start:]
    report(Progress("log", "\n".join(tail)))
    instruction = steps[-1][0] if steps else ""
    what = instruction[:80]
    hint = "see the build log above, which ends with the failing step"
    if "pip install" in instruction:
        what = "pip install of the requirements"
        hint = "a requirement cannot be installed in the image: see the pip output above"
    elif "apt-get" in instruction:
        what = f"apt-get install of {package.APT_FILE}"
        hint = f"a package in {package.APT_FILE} cannot be installed: see the log above"
    where = f"step {len(steps)} ({what})" if steps else "the start"
    return BuildError(f"the image build failed at {where}: {_short(error)}", hint, tail)


def _push(client: Any, uri: str, auth: dict[str, str] | None, deadline_s: float) -> None:
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
                f"pushing {uri} failed: {_short(chunk['error'])}",
                "check that you may push to that registry (docker login, or "
                "`gcloud auth application-default login` for Artifact Registry)",
            )
        detail = chunk.get("progressDetail") or {}
        if chunk.get("id") and detail.get("total"):
            sent[chunk["id"]] = (int(detail.get("current", 0)), int(detail["total"]))
            current = sum(c for c, _ in sent.values())
            total = sum(t for _, t in sent.values())
            report(
                Progress(
                    "push",
                    f"pushing {package.human_size(current)} / {package.human_size(total)}",
                    current,
                    total,
                )
            )
        if time.monotonic() > deadline:
            raise BackendError(
                f"pushing {uri} ran past {deadline_s:g} s",
                "check the network and retry, or raise TFC_BUILD_TIMEOUT",
            )


def _no_engine(spec_bucket: str | None, uri: str) -> BackendError:
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


def ensure_image(plan: Plan, *, push: bool, client: Any = None) -> ImageResult:
    """Make the plan's image available: here (``push=False``, the docker backend) or in its
    registry (``push=True``, Vertex AI). Builds only when no image of the same content exists;
    pushes only when the registry lacks it. With no engine here, ``push=True`` and a build
    bucket, Cloud Build builds and pushes it (:func:`tfc_jupyter.cloudbuild.ensure_image`).

    Raises:
        MissingDependency, BackendError: no docker package, no engine (and what is missing).
        BuildError: the build failed (one line; ``.log`` holds the tail).
        ContextTooLarge, SpecError: the build context cannot be made.
    """
    started = time.monotonic()
    spec = plan.spec
    deadline_s = (plan.settings or current_settings()).seconds("build_timeout")
    if spec.image.image:  # the user's own image: nothing to build
        result = ImageResult(uri=spec.image.image)
        if not push:
            _ensure_pulled(client or docker_client(), spec.image.image)
        return result
    context = package.from_plan(plan)
    uri = images.image_uri(spec, context.tag)
    result = ImageResult(uri=uri, tag=context.tag, context_bytes=context.size)
    report(Progress("context", f"context {context.summary()}"))
    if client is None:
        try:
            client = docker_client("building the job's image")
        except BackendError:
            if push and spec.image.build_bucket:  # no engine here: Google Cloud Build builds it
                from . import cloudbuild

                settings = cloudbuild.CloudBuildSettings.from_settings(
                    plan.settings or current_settings()
                )
                return cloudbuild.ensure_image(spec, context, uri, result, settings=settings)
            raise _no_engine(spec.image.build_bucket, uri) from None
    auth = registry_auth(uri) if push else None
    if push and in_registry(client, uri, auth):
        report(Progress("done", f"{uri} is in the registry already: nothing to build or push"))
        result.seconds = time.monotonic() - started
        return result
    local = find_local(client, uri, context.tag)
    if local is None:
        report(Progress("build", f"building {uri}"))
        result.steps = _build(client, context, uri, spec.image.cache_from, deadline_s)
        result.built = True
    elif uri not in local.tags:
        local.tag(*uri.rsplit(":", 1))  # same content under another name: just name it
    if push:
        _push(client, uri, auth, deadline_s)
        result.pushed = True
    result.seconds = time.monotonic() - started
    verb = "built" if result.built else "found here"
    report(Progress("done", f"{uri} {verb}" + (" and pushed" if result.pushed else "")))
    return result


def _ensure_pulled(client: Any, uri: str) -> None:
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
        client.images.pull(repository, tag=tag, auth_config=registry_auth(uri))
    except docker.errors.APIError as exc:
        raise BackendError(
            f"the image {uri} is not here and cannot be pulled: {_short(exc)}",
            "check the --image name, or docker login to its registry",
        ) from None
