"""Backends: where jobs run. Each is imported only when a job uses it.

Every backend implements :class:`Backend`; :func:`tfc_jupyter.jobs.backend_for` picks one by name.
A backend's replicas write their output to ``<job_dir>/logs/<replica>.log`` (directly, or through a
watcher process that copies it from Docker or Cloud Logging) and its state to the job records, so
the magic, the CLI, the panel and the server extension all read jobs the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..plan import Plan
    from ..records import JobRecord
    from ..spec import JobSpec


class Backend(Protocol):
    """What every backend does."""

    name: str

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
