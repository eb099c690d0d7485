"""Defaults for every job, and where each value came from.

Order, first wins: a flag on the magic/CLI; a ``TFC_*`` environment variable; ``ipython_config.py``
(``c.TfcConfig.project = ...``); ``jupyter_server_config.py`` / ``.json`` (the same ``TfcConfig``
section, shared with the server extension); generic Google Cloud variables
(``GOOGLE_CLOUD_PROJECT``, ``GOOGLE_CLOUD_REGION`` ...); the built-in default.
``%tfc_config`` prints the table this module builds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traitlets import Unicode
from traitlets.config import Config, Configurable


class TfcConfig(Configurable):
    """tfc_jupyter settings, configurable from ipython_config.py and jupyter_server_config.py."""

    project = Unicode(
        None, allow_none=True, help="Google Cloud project id for Vertex AI jobs."
    ).tag(config=True)
    region = Unicode(
        "us-central1",
        help="Vertex AI region.",
    ).tag(config=True)
    backend = Unicode(
        "local",
        help="Default backend: local, docker or vertex.",
    ).tag(config=True)
    machine = Unicode("CPU", help="Default chief machine (catalog name or machine type).").tag(
        config=True
    )
    build_bucket = Unicode(
        None, allow_none=True, help="GCS bucket for Cloud Build and staging."
    ).tag(config=True)
    registry = Unicode(
        None, allow_none=True, help="Image registry (default: Artifact Registry in the region)."
    ).tag(config=True)
    service_account = Unicode(None, allow_none=True, help="Service account the job runs as.").tag(
        config=True
    )
    base_output_dir = Unicode(
        None, allow_none=True, help="gs:// folder for model, checkpoints and TensorBoard logs."
    ).tag(config=True)
    home = Unicode(
        None,
        allow_none=True,
        help="Folder for job records and job folders (default: Jupyter data dir).",
    ).tag(config=True)
    vertex_endpoint = Unicode(
        None,
        allow_none=True,
        help="Vertex AI API endpoint (default: REGION-aiplatform.googleapis.com); a loopback "
        "URL such as http://127.0.0.1:8080 reaches a local test server with no credentials.",
    ).tag(config=True)
    logging_endpoint = Unicode(
        None,
        allow_none=True,
        help="Cloud Logging API endpoint for job logs (default: logging.googleapis.com, or the "
        "Vertex endpoint when that is a loopback URL).",
    ).tag(config=True)
    cloudbuild_endpoint = Unicode(
        None,
        allow_none=True,
        help="Cloud Build API endpoint, used with build_bucket when no Docker engine answers "
        "(default: cloudbuild.googleapis.com); a loopback URL needs no credentials.",
    ).tag(config=True)
    storage_endpoint = Unicode(
        None,
        allow_none=True,
        help="Cloud Storage API endpoint for Cloud Build sources and logs (default: "
        "storage.googleapis.com, or the Cloud Build endpoint when that is a loopback URL).",
    ).tag(config=True)


KEYS = (
    "project",
    "region",
    "backend",
    "machine",
    "build_bucket",
    "registry",
    "service_account",
    "base_output_dir",
    "home",
    "vertex_endpoint",
    "logging_endpoint",
    "cloudbuild_endpoint",
    "storage_endpoint",
)
# Environment variables, most specific first.
ENV = {
    "project": ("TFC_PROJECT", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"),
    "region": ("TFC_REGION", "GOOGLE_CLOUD_REGION", "CLOUDSDK_COMPUTE_REGION"),
    "backend": ("TFC_BACKEND",),
    "machine": ("TFC_MACHINE",),
    "build_bucket": ("TFC_BUILD_BUCKET",),
    "registry": ("TFC_REGISTRY",),
    "service_account": ("TFC_SERVICE_ACCOUNT",),
    "base_output_dir": ("TFC_BASE_OUTPUT_DIR",),
    "home": ("TFC_JUPYTER_HOME",),
    "vertex_endpoint": ("TFC_VERTEX_ENDPOINT",),
    "logging_endpoint": ("TFC_LOGGING_ENDPOINT",),
    "cloudbuild_endpoint": ("TFC_CLOUDBUILD_ENDPOINT",),
    "storage_endpoint": ("TFC_STORAGE_ENDPOINT",),
}


@dataclass
class Settings:
    """Effective defaults with their provenance (``sources[key]`` says where each came from)."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        """The effective value of one setting."""
        return self.values.get(key)

    def rows(self) -> list[tuple[str, str, str]]:
        """``(key, value, source)`` for display."""
        return [
            (k, "" if self.values.get(k) is None else str(self.values[k]), self.sources[k])
            for k in KEYS
        ]

    def to_text(self) -> str:
        """An aligned table, as ``%tfc_config`` prints it."""
        rows = [("setting", "value", "from"), *self.rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        return "\n".join(
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        )


def _section(config: Config | None) -> dict[str, Any]:
    if config is None or "TfcConfig" not in config:
        return {}
    section = config["TfcConfig"]
    return {k: section[k] for k in KEYS if k in section}


def server_config() -> tuple[dict[str, Any], dict[str, str]]:
    """The ``TfcConfig`` section of the jupyter_server config files (later files win).

    Returns the merged values and, for each key, the file it came from.
    """
    from jupyter_core.paths import jupyter_config_path
    from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader

    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for folder in reversed(jupyter_config_path()):
        for name, loader in (
            ("jupyter_server_config.json", JSONFileConfigLoader),
            ("jupyter_server_config.py", PyFileConfigLoader),
        ):
            if not (Path(folder) / name).is_file():
                continue
            try:
                section = _section(loader(name, path=folder).load_config())
            except Exception:  # a broken server config is the server's problem, not ours
                continue
            merged.update(section)
            origins.update(dict.fromkeys(section, str(Path(folder) / name)))
    return merged, origins


def load_settings(
    ipython_config: Config | None = None,
    environ: Mapping[str, str] | None = None,
    include_server: bool = True,
) -> Settings:
    """Collect the effective defaults.

    Args:
        ipython_config: the shell's config (``shell.config``), when running in IPython.
        environ: environment to read (default ``os.environ``).
        include_server: also read jupyter_server config files.
    """
    env = os.environ if environ is None else environ
    defaults = TfcConfig()
    ipy = _section(ipython_config)
    server, server_origins = server_config() if include_server else ({}, {})
    settings = Settings()
    for key in KEYS:
        layers: list[tuple[str, Any]] = []
        specific = [v for v in ENV[key] if v.startswith("TFC_")]
        generic = [v for v in ENV[key] if not v.startswith("TFC_")]
        layers += [(f"env {v}", env.get(v)) for v in specific]
        layers.append((f"ipython_config (c.TfcConfig.{key})", ipy.get(key)))
        origin = server_origins.get(key, "jupyter_server_config")
        layers.append((f"{origin} (c.TfcConfig.{key})", server.get(key)))
        layers += [(f"env {v}", env.get(v)) for v in generic]
        for source, value in layers:
            if value not in (None, ""):
                settings.values[key], settings.sources[key] = value, source
                break
        else:
            settings.values[key] = getattr(defaults, key)
            settings.sources[key] = "default"
    return settings
