"""Backends: where jobs run. Each is imported only when a job uses it.

Every backend implements :class:`Backend` and is one module, found by name in
:mod:`tfc_jupyter.registry` (built in, or a package's ``tfc_jupyter.backends`` entry point);
:func:`get` imports it when a job first uses it and makes it from the settings resolved once.
The rest of the product asks a backend's :class:`~tfc_jupyter.registry.Traits`, never its name,
and starts replicas through :mod:`tfc_jupyter.job.replica` (the runtime's protocol).
A backend's replicas write their output to ``<job_dir>/logs/<replica>.log`` (directly, or through a
watcher process that copies it from Docker or Cloud Logging) and its state to the job records, so
the magic, the CLI, the panel and the server extension all read jobs the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from .. import registry
from ..errors import BackendError, SpecError
from ..registry import Preview, Traits

if TYPE_CHECKING:
    from ..config import Settings
    from ..job.spec import JobSpec
    from ..planner.plan import Plan
    from ..store.records import JobRecord, JobStore


def get(name: str, store: JobStore, settings: Settings | None = None) -> Backend:
    """The backend called ``name``, made for ``store`` with ``settings`` (default: this
    process's), its module imported only now."""
    try:
        factory: Any = registry.load(name)
    except SpecError as exc:
        raise BackendError(
            f"the {name} backend is not available in this version (nor installed as a package)",
            f"{exc.hint}, or --dry-run to see the plan",
        ) from exc
    if settings is None:
        from ..config import current_settings

        settings = current_settings()
    return cast(Backend, factory.from_settings(store, settings))


class Backend(Protocol):
    """What every backend does."""

    name: str
    traits: ClassVar[Traits]
    """What it can do (the product asks these, never the name)."""

    @classmethod
    def preview(cls, plan: Plan) -> Preview:
        """The exact request a launch of ``plan`` sends (the dry run shows it)."""
        ...

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
