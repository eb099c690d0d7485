"""Backends: where jobs run. Each is imported only when a job uses it.

Every backend implements :class:`Backend` and is one module, named in :data:`REGISTRY`;
:func:`get` imports it when a job first uses it and makes it from the settings resolved once.
A backend's replicas write their output to ``<job_dir>/logs/<replica>.log`` (directly, or through a
watcher process that copies it from Docker or Cloud Logging) and its state to the job records, so
the magic, the CLI, the panel and the server extension all read jobs the same way.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import BackendError

if TYPE_CHECKING:
    from ..config import Settings
    from ..job.plan import Plan
    from ..job.spec import JobSpec
    from ..records import JobRecord, JobStore


REGISTRY: dict[str, str] = {
    "local": "tfc_jupyter.backends.local:LocalBackend",
    "docker": "tfc_jupyter.backends.docker:DockerBackend",
    "vertex": "tfc_jupyter.backends.vertex:VertexBackend",
}
"""Backend name -> ``module:class``; a new backend is one module and one line here."""


def get(name: str, store: JobStore, settings: Settings | None = None) -> Backend:
    """The backend called ``name``, made for ``store`` with ``settings`` (default: this
    process's), its module imported only now."""
    target = REGISTRY.get(name)
    if target is None:
        raise BackendError(
            f"the {name} backend is not available in this version",
            f"use --backend {' or '.join(REGISTRY)}, or --dry-run to see the plan",
        )
    module, _, cls = target.partition(":")
    factory: Any = getattr(importlib.import_module(module), cls)
    if settings is None:
        from ..config import current_settings

        settings = current_settings()
    return cast(Backend, factory.from_settings(store, settings))


class Backend(Protocol):
    """What every backend does."""

    name: str

    @classmethod
    def from_settings(cls, store: JobStore, settings: Settings) -> Backend:
        """The backend for ``store``, tuned by the effective settings."""
        ...

    def check(self, spec: JobSpec) -> None:
        """Refuse, before anything is written or launched, what this backend cannot run."""

    def submit(self, record: JobRecord, plan: Plan) -> None:
        """Start the job (the record exists, state QUEUED); return without waiting for it."""

    def refresh(self, record: JobRecord) -> JobRecord:
        """Bring a non-terminal record up to date (e.g. notice a dead watcher); cheap."""
        ...

    def cancel(self, record: JobRecord, *, timeout: float = 20.0) -> JobRecord:
        """Stop the job; bounded wait until it is CANCELLED (or already ended)."""
        ...
