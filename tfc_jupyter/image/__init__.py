"""The job's image: what goes in it, what it is called, and how it is made.

* :mod:`.context`: the build context, exactly what goes into the image (the plan makes it once).
* :mod:`.names`: the parent image and the content-addressed name of the job's image.
* :mod:`.docker`: the Docker engine here builds, finds, pushes and pulls.
* :mod:`.progress`: what both share: progress events, the result, a failed build's one line.

:func:`ensure_image` is what backends call. The image is named by the hash of its context, so
nothing is built when an image of that content exists here, and nothing is pushed when the
registry has it: resubmitting an unchanged notebook costs a hash and a lookup.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..config import Settings, current_settings
from ..errors import BackendError
from .progress import BuildError, ImageResult, LineProgress, Progress, report, reporting

if TYPE_CHECKING:
    from ..job.spec import JobSpec
    from .context import Context

__all__ = [
    "BuildError",
    "ImageOrder",
    "ImageResult",
    "LineProgress",
    "Progress",
    "ensure_image",
    "report",
    "reporting",
]


class ImageOrder(Protocol):
    """What :func:`ensure_image` reads of a plan: the job, its settings, its build context and
    the image it planned.
    A :class:`~tfc_jupyter.planner.plan.Plan` is one; the image package never imports the
    planner (it sits below it)."""

    @property
    def spec(self) -> JobSpec: ...
    @property
    def settings(self) -> Settings | None: ...
    @property
    def context(self) -> Context | None: ...
    @property
    def image_uri(self) -> str: ...


RemoteBuild = Callable[["JobSpec", "Context", str, ImageResult, Settings], ImageResult]
"""A builder away from this machine (``spec, context, uri, result, settings``), given by the
backend whose cloud has one (Vertex AI: Google Cloud Build): it builds and pushes ``uri`` when no
engine answers here."""


def ensure_image(
    plan: ImageOrder, *, push: bool, client: Any = None, remote: RemoteBuild | None = None
) -> ImageResult:
    """Make the plan's image available: here (``push=False``, the docker backend) or in its
    registry (``push=True``, Vertex AI). Builds only when no image of the same content exists;
    pushes only when the registry lacks it. With no engine here, ``push=True``, a build bucket
    and a ``remote`` builder, that builder builds and pushes it.

    Raises:
        MissingDependency, BackendError: no docker package, no engine (and what is missing).
        BuildError: the build failed (one line; ``.log`` holds the tail).
    """
    from ..registry import registry_login
    from . import docker, names

    started = time.monotonic()
    spec = plan.spec
    settings = plan.settings or current_settings()
    deadline_s = settings.seconds("build_timeout")
    if spec.image.image:  # the user's own image: nothing to build
        result = ImageResult(uri=spec.image.image)
        if not push:
            docker.ensure_pulled(client or docker.docker_client(), spec.image.image)
        return result
    context = plan.context
    if context is None:
        raise ValueError("a job without --image is planned with its build context")
    # The plan's image, whatever the job is named now: a sweep's trials (named apart) run the
    # sweep's one image, built once.
    uri = plan.image_uri or names.image_uri(spec, context.tag)
    result = ImageResult(uri=uri, tag=context.tag, context_bytes=context.size)
    report(Progress("context", f"context {context.summary()}"))
    if client is None:
        try:
            client = docker.docker_client("building the job's image")
        except BackendError:
            if push and spec.image.build_bucket and remote is not None:  # built away from here
                return remote(spec, context, uri, result, settings)
            raise docker.no_engine(spec.image.build_bucket, uri) from None
    auth = registry_login(uri) if push else None
    if push and docker.in_registry(client, uri, auth):
        report(Progress("done", f"{uri} is in the registry already: nothing to build or push"))
        result.seconds = time.monotonic() - started
        return result
    local = docker.find_local(client, uri, context.tag)
    if local is None:
        report(Progress("build", f"building {uri}"))
        result.steps = docker.build(client, context, uri, spec.image.cache_from, deadline_s)
        result.built = True
    elif uri not in local.tags:
        local.tag(*uri.rsplit(":", 1))  # same content under another name: just name it
    if push:
        docker.push(client, uri, auth, deadline_s)
        result.pushed = True
    result.seconds = time.monotonic() - started
    verb = "built" if result.built else "found here"
    report(Progress("done", f"{uri} {verb}" + (" and pushed" if result.pushed else "")))
    return result
