"""Building the job's image with Google Cloud Build, when no Docker engine answers here.

:func:`tfc_jupyter.image.ensure_image` comes here, through the Vertex AI backend's ``remote``
builder (:func:`tfc_jupyter.backends.vertex.backend.cloud_build`), for a Vertex AI job with a
build bucket (``--build-bucket`` / ``c.TfcConfig.build_bucket``) on a machine with no Docker
engine:

1. the registry is asked whether it has the image already (``HEAD /v2/<name>/manifests/<tag>``
   with an OAuth token from application-default credentials for Artifact Registry and gcr.io, or
   the token a plain registry's challenge hands out): if it has, nothing is uploaded or built
   (:mod:`.registry`);
2. the build context (:mod:`tfc_jupyter.package`: secrets are never in it) goes up as a
   reproducible ``gs://BUCKET/tfc-jupyter/<tag>.tar.gz`` (Cloud Storage JSON API media upload),
   unless an object with the same MD5 is there already (:mod:`.storage`);
3. a build is created (``POST /v1/projects/P/builds``, or ``.../locations/L/builds`` with
   ``TFC_CLOUDBUILD_LOCATION``): one ``gcr.io/cloud-builders/docker`` step ``build -t IMAGE .``
   (the classic builder, as here; after a ``pull`` of ``--cache-from`` that may fail), and
   ``images: [IMAGE]``, so Cloud Build pushes it; the build timeout; logs to the bucket
   (:mod:`.builds`);
4. the build is polled until it ends, within a deadline (its timeout plus queueing time), and its
   log (``gs://BUCKET/log-<id>.txt``, read from a byte offset) becomes progress: each Dockerfile
   step, then the push. A failed build raises :class:`~tfc_jupyter.image.progress.BuildError`
   naming the failing step, after the log's tail. Past the deadline, or on an interrupt, the build
   is cancelled.

API errors go through :func:`tfc_jupyter.backends.gcloud.call` (:mod:`.client`): transient
ones (429, 5xx, timeouts) are retried with backoff within a bounded total; auth, permission, quota
and not-found errors stop with one line saying what to do. Endpoints (:mod:`.settings`):
``TFC_CLOUDBUILD_ENDPOINT`` / ``TFC_STORAGE_ENDPOINT`` (or ``c.TfcConfig.cloudbuild_endpoint`` /
``storage_endpoint``); a loopback endpoint (``tests/gcp_server.py``) gets anonymous credentials.
The OAuth token travels in request headers only, never into a file. google-auth and requests
(the ``vertex`` extra) are imported only when a build needs them.
"""

from __future__ import annotations

import time

from ....image import context as package
from ....image.progress import ImageResult, Progress, report
from ....job.spec import JobSpec
from .builds import CloudBuilder
from .registry import in_registry
from .settings import CloudBuildSettings, bucket_name, check
from .storage import tarball

__all__ = ["CloudBuildSettings", "bucket_name", "check", "ensure_image", "tarball"]


def ensure_image(
    spec: JobSpec,
    context: package.Context,
    uri: str,
    result: ImageResult,
    *,
    settings: CloudBuildSettings | None = None,
) -> ImageResult:
    """Make ``uri`` exist in its registry through Cloud Build (see the module docstring).

    Raises:
        SpecError: the bucket name is invalid.
        BackendError: an API refused (one line: what to do), or the build ran past its deadline.
        BuildError: the build failed (one line naming the step; ``.log`` holds the tail).
    """
    started = time.monotonic()
    settings = settings or CloudBuildSettings.load()
    check(spec, settings)
    assert spec.google.project
    builder = CloudBuilder(spec.google.project, bucket_name(spec.image.build_bucket), settings)
    if in_registry(uri, settings, project=spec.google.project):
        report(Progress("done", f"{uri} is in the registry already: nothing to build or push"))
        result.seconds = time.monotonic() - started
        return result
    source = builder.storage.upload(context)
    created = builder.create(source, uri, context.tag, spec.image.cache_from)
    done = builder.follow(created, uri)
    result.built = result.pushed = True
    result.steps = builder.log.docker_steps()
    result.seconds = time.monotonic() - started
    report(Progress("done", f"{uri} built and pushed by Cloud Build (build {done['id']})"))
    return result
