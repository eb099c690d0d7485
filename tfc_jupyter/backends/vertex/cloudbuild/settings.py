"""Cloud Build settings (endpoints, timings), the bucket name, and the checks before launch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....config import current_settings
from ....errors import BackendError, MissingDependency, SpecError
from ....job import vertex_rules
from ....job.spec import JobSpec
from ..google import gcloud
from ..google.gcloud import base_url
from ..settings import fields

CLOUDBUILD_URL = "https://cloudbuild.googleapis.com"
STORAGE_URL = "https://storage.googleapis.com"


@dataclass(frozen=True)
class CloudBuildSettings:
    """How to reach Cloud Build and Cloud Storage, and how patiently.

    ``endpoint`` empty means cloudbuild.googleapis.com; ``storage_endpoint`` empty means
    storage.googleapis.com, or ``endpoint`` when that is a loopback (test) server. ``location``
    empty means global builds (``projects/P/builds``).
    """

    endpoint: str = ""
    storage_endpoint: str = ""
    location: str = ""
    timeout_s: float = 60.0  # one request
    retry_total_s: float = 120.0  # all tries of one call
    backoff_s: float = 1.0  # first wait; doubles up to 30 s
    poll_s: float = 2.0  # build state and log
    build_timeout_s: float = 3600.0  # the build's own timeout (Cloud Build stops it)
    queue_s: float = 900.0  # on top of it: how long the build may wait for a worker

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> CloudBuildSettings:
        """From the effective settings (``TFC_CLOUDBUILD_*``, ``TFC_BUILD_TIMEOUT``,
        ``c.TfcConfig``)."""
        return cls.from_settings(current_settings(environ))

    @classmethod
    def from_settings(cls, settings: Any) -> CloudBuildSettings:
        """From a :class:`~tfc_jupyter.config.Settings` resolved once by the caller."""
        return cls(
            **fields(
                settings,
                {
                    "endpoint": "cloudbuild_endpoint",
                    "storage_endpoint": "storage_endpoint",
                    "location": "cloudbuild_location",
                },
                {
                    "timeout_s": "cloudbuild_timeout",
                    "retry_total_s": "cloudbuild_retry_total",
                    "backoff_s": "cloudbuild_backoff",
                    "poll_s": "cloudbuild_poll",
                    "build_timeout_s": "build_timeout",
                    "queue_s": "cloudbuild_queue",
                },
            )
        )

    def api_url(self) -> str:
        """Cloud Build's base URL."""
        return base_url(self.endpoint) if self.endpoint else CLOUDBUILD_URL

    def storage_url(self) -> str:
        """Cloud Storage's base URL."""
        if self.storage_endpoint:
            return base_url(self.storage_endpoint)
        if self.endpoint and gcloud.is_loopback(self.endpoint):
            return base_url(self.endpoint)
        return STORAGE_URL


def bucket_name(value: str | None) -> str:
    """``gs://my-bucket`` or ``my-bucket`` -> ``my-bucket``, checked as Cloud Storage does.

    Raises:
        SpecError: not a bucket name.
    """
    name, problem = vertex_rules.bucket_given(value or "")
    if problem:
        raise SpecError(
            f"--build-bucket {value!r}: {name or 'the name'} {problem}",
            "pass a bucket name such as my-project-builds (lowercase letters, digits, - _ ., "
            f"no goog/google; {vertex_rules.BUCKET_NAMING_URL}), without a path",
            field="build_bucket",
        )
    return name


def require() -> None:
    """Raise :class:`MissingDependency` (the ``vertex`` extra) without requests / google-auth /
    google-api-core; looks them up without importing them."""
    from importlib.util import find_spec

    for module, dist in (
        ("requests", "requests"),
        ("google.auth", "google-auth"),
        ("google.api_core", "google-api-core"),
    ):
        try:
            found = find_spec(module) is not None
        except ImportError:  # a parent package is missing
            found = False
        if not found:
            raise MissingDependency(dist, "vertex", "building the image with Cloud Build")


def check(spec: JobSpec, settings: CloudBuildSettings | None = None) -> None:
    """Refuse before launch what a Cloud Build build cannot do: no project, a bad bucket name,
    no client packages, no credentials."""
    bucket_name(spec.image.build_bucket)
    if not spec.google.project:
        raise BackendError(
            "building the image with Cloud Build needs a Google Cloud project",
            "pass --project PROJECT_ID, or set GOOGLE_CLOUD_PROJECT",
            field="project",
        )
    require()
    settings = settings or CloudBuildSettings.load()
    gcloud.credentials(settings.api_url())
    gcloud.credentials(settings.storage_url())
