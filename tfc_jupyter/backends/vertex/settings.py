"""Vertex AI's own settings, declared by the backend as its options are (``options.py``):
where Google's APIs are (Vertex AI, Cloud Logging, Cloud Build, Cloud Storage) and how patiently
they are called, and the prebuilt images' list. :mod:`tfc_jupyter.config` adds them to every
setting's table (``%tfc_config``, ``TFC_<KEY>``, ``c.TfcConfig.<key>``) through
:data:`tfc_jupyter.registry.BACKEND_SETTINGS`. Plain data: reading the settings imports nothing
else of the backend."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SETTINGS: dict[str, tuple[str, float | str | None, str]] = {
    "vertex_endpoint": (
        "text",
        None,
        "Vertex AI API endpoint (default: REGION-aiplatform.googleapis.com); a loopback "
        "URL such as http://127.0.0.1:8080 reaches a local test server with no credentials.",
    ),
    "logging_endpoint": (
        "text",
        None,
        "Cloud Logging API endpoint for job logs (default: logging.googleapis.com, or the "
        "Vertex endpoint when that is a loopback URL).",
    ),
    "cloudbuild_endpoint": (
        "text",
        None,
        "Cloud Build API endpoint, used with build_bucket when no Docker engine answers "
        "(default: cloudbuild.googleapis.com); a loopback URL needs no credentials.",
    ),
    "storage_endpoint": (
        "text",
        None,
        "Cloud Storage API endpoint for Cloud Build sources and logs (default: "
        "storage.googleapis.com, or the Cloud Build endpoint when that is a loopback URL).",
    ),
    "vertex_timeout": (
        "number",
        60,
        "Seconds one Vertex AI or Cloud Logging request may take.",
    ),
    "vertex_retry_total": (
        "number",
        120,
        "Seconds all tries of one Vertex AI call may take (transient errors retry).",
    ),
    "vertex_backoff": (
        "number",
        1,
        "First wait between tries of a Vertex AI call (doubles, up to 30 s).",
    ),
    "vertex_poll": (
        "number",
        10,
        "Seconds between the Vertex AI watcher's looks at the job and its logs (grows to "
        "6x while nothing changes).",
    ),
    "vertex_gone_after": (
        "number",
        300,
        "Seconds Vertex AI must keep saying a followed job does not exist before the job is "
        "recorded failed (a NOT_FOUND for a while is no end: the job's status is unknown).",
    ),
    "vertex_drain": (
        "number",
        10,
        "After a Vertex AI job ends: read its logs until none came for this long.",
    ),
    "vertex_log_reads": (
        "number",
        20,
        "Cloud Logging reads a minute, at most, for all the Vertex AI jobs of one project "
        "followed from this machine (Cloud Logging allows 60 a minute per project).",
    ),
    "cloudbuild_location": (
        "text",
        "",
        "Cloud Build region for builds (default: global builds).",
    ),
    "cloudbuild_timeout": (
        "number",
        60,
        "Seconds one Cloud Build or Cloud Storage request may take.",
    ),
    "cloudbuild_retry_total": (
        "number",
        120,
        "Seconds all tries of one Cloud Build call may take.",
    ),
    "cloudbuild_backoff": (
        "number",
        1,
        "First wait between tries of a Cloud Build call (doubles, up to 30 s).",
    ),
    "cloudbuild_poll": (
        "number",
        2,
        "Seconds between looks at a build and its log.",
    ),
    "prebuilt_images": (
        "text",
        "",
        "Vertex AI prebuilt training images newer than tfc_jupyter's list, for the package "
        "route: VERSION[-gpu]=URI, comma separated (2.21=us-docker.pkg.dev/vertex-ai/training/"
        "tf-cpu.2-21.py311:latest).",
    ),
    "cloudbuild_queue": (
        "number",
        900,
        "Seconds a Cloud Build build may wait for a worker, on top of build_timeout.",
    ),
}
"""Key -> (``number`` or ``text``, its default, its help), in the order ``%tfc_config`` shows
them after the portable settings."""


def fields(settings: Any, texts: Mapping[str, str], seconds: Mapping[str, str]) -> dict[str, Any]:
    """A settings dataclass's fields from resolved settings (a :class:`tfc_jupyter.config.
    Settings`): ``texts`` maps a field to its key (stripped; unset: ``""``), ``seconds`` a field
    to its key read as a number of seconds."""
    out: dict[str, Any] = {name: (settings.get(key) or "").strip() for name, key in texts.items()}
    out.update({name: settings.seconds(key) for name, key in seconds.items()})
    return out
