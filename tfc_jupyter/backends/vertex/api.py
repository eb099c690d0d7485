"""Talking to Vertex AI and Cloud Logging: settings and clients.

Shared by the Vertex backend (in the kernel) and its watcher process; credentials, errors and
retries are Google Cloud's, in :mod:`tfc_jupyter.google.gcloud`.

* :class:`VertexSettings`: endpoints (``TFC_VERTEX_ENDPOINT``, ``TFC_LOGGING_ENDPOINT`` or
  ``c.TfcConfig.vertex_endpoint`` / ``logging_endpoint``), request timeout, retry budget, poll
  interval, from the settings resolved once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ...config import current_settings
from ...errors import MissingDependency
from .google.gcloud import authorized_session, base_url, credentials, is_loopback
from .settings import fields


@dataclass(frozen=True)
class VertexSettings:
    """How to reach Vertex AI and Cloud Logging, and how patiently.

    ``endpoint`` empty means ``{region}-aiplatform.googleapis.com``; ``logging_endpoint`` empty
    means Cloud Logging's own, or ``endpoint`` when that is a local (loopback) server.
    """

    endpoint: str = ""
    logging_endpoint: str = ""
    timeout_s: float = 60.0  # one request
    retry_total_s: float = 120.0  # all tries of one call
    backoff_s: float = 1.0  # first wait; doubles up to 30 s
    poll_s: float = 10.0  # the watcher's state and log poll (grows to 6x while nothing changes)
    watch_retry_s: float = 1800.0  # how long the watcher keeps trying through transient errors
    drain_s: float = 10.0  # after the job ends: read logs until none came for this long
    gone_after_s: float = 300.0  # NOT_FOUND for this long before a followed job is lost
    log_reads: float = 20.0  # Cloud Logging reads a minute for one project's jobs, at most

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> VertexSettings:
        """From the effective settings (``TFC_VERTEX_*`` variables, ``c.TfcConfig``)."""
        return cls.from_settings(current_settings(environ))

    @classmethod
    def from_settings(cls, settings: Any) -> VertexSettings:
        """From a :class:`~tfc_jupyter.config.Settings` resolved once by the caller."""
        return cls(
            **fields(
                settings,
                {"endpoint": "vertex_endpoint", "logging_endpoint": "logging_endpoint"},
                {
                    "timeout_s": "vertex_timeout",
                    "retry_total_s": "vertex_retry_total",
                    "backoff_s": "vertex_backoff",
                    "poll_s": "vertex_poll",
                    "drain_s": "vertex_drain",
                    "gone_after_s": "vertex_gone_after",
                    "log_reads": "vertex_log_reads",
                },
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the watcher reads it from the job folder)."""
        return asdict(self)

    def api_endpoint(self, region: str) -> str:
        """The Vertex AI endpoint for ``region``."""
        return self.endpoint or f"{region}-aiplatform.googleapis.com"

    def log_endpoint(self) -> str:
        """The Cloud Logging endpoint."""
        if self.logging_endpoint:
            return self.logging_endpoint
        if self.endpoint and is_loopback(self.endpoint):
            return self.endpoint
        return "https://logging.googleapis.com"


def require_clients() -> None:
    """Raise :class:`MissingDependency` (naming the ``vertex`` extra) without the clients.

    Looks the packages up without importing them (importing aiplatform takes seconds).
    """
    from importlib.util import find_spec

    for module, package, feature in (
        ("google.cloud.aiplatform_v1", "google-cloud-aiplatform", "the Vertex AI backend"),
        ("google.cloud.logging_v2", "google-cloud-logging", "Vertex AI job logs"),
    ):
        try:
            found = find_spec(module) is not None
        except ImportError:  # a parent package is missing
            found = False
        if not found:
            raise MissingDependency(package, "vertex", feature)


def job_client(settings: VertexSettings, region: str) -> Any:
    """A ``JobServiceClient`` over REST for ``region``."""
    require_clients()
    from google.cloud.aiplatform_v1 import JobServiceClient

    endpoint = settings.api_endpoint(region)
    return JobServiceClient(
        credentials=credentials(endpoint),
        transport="rest",
        client_options={"api_endpoint": endpoint},
    )


def rest_url(settings: VertexSettings, region: str) -> str:
    """Vertex AI's REST base URL for ``region`` (``http://`` on loopback)."""
    return base_url(settings.api_endpoint(region))


def rest_session(settings: VertexSettings, region: str) -> Any:
    """An authorized ``requests`` session for Vertex AI's REST API (anonymous on loopback):
    google-auth only, no aiplatform import."""
    require_clients()
    return authorized_session(settings.api_endpoint(region))


TUNING = "hyperparameterTuningJobs"
"""The collection of a sweep's job (a ``HyperparameterTuningJob``); ``customJobs`` otherwise."""


def is_tuning(resource: str) -> bool:
    """Whether a resource name is a tuning job's."""
    return f"/{TUNING}/" in resource


def same_job(found: Mapping[str, Any], body: Mapping[str, Any], *, tuning: bool = False) -> bool:
    """Whether a listed job is the one ``body`` creates (its spec and labels; a tuning job's
    study and trial spec), compared as the protos they are (defaults filled in, int64 as
    text): only when a create timed out."""
    from google.cloud.aiplatform_v1.types import CustomJob, HyperparameterTuningJob

    kind: Any = HyperparameterTuningJob if tuning else CustomJob
    mine = kind.from_json(json.dumps(dict(body)))
    theirs = kind.from_json(json.dumps(dict(found)), ignore_unknown_fields=True)
    if dict(theirs.labels) != dict(mine.labels):
        return False
    if tuning:
        return bool(
            theirs.trial_job_spec == mine.trial_job_spec and theirs.study_spec == mine.study_spec
        )
    return bool(theirs.job_spec == mine.job_spec)
