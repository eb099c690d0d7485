"""``launch.json``: what a backend tells the process that runs its replicas on this machine,
typed on both sides of that process boundary.

The local backend writes a :class:`LocalLaunch` for its supervisor, the docker backend a
:class:`DockerLaunch` for its watcher; each reads it back with :meth:`Launch.read`, the same
type, so a field renamed on one side fails on both. It imports only the standard library (the
supervisor reads it before it starts the first replica).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

FILE = "launch.json"
RUNTIME = ("python", "-m", "tfc_runtime")
"""How a replica's image starts the runtime (its arguments: :attr:`Launch.runtime_args`)."""

L = TypeVar("L", bound="Launch")


@dataclass(frozen=True)
class ReplicaLaunch:
    """One replica to start."""

    name: str
    """``chief``, ``worker-0`` ... (its log's name)."""
    env: dict[str, str]
    """Its own variables (``CLUSTER_SPEC``, ``TF_CONFIG``) over the job's."""
    daemon: bool = False
    """It serves others and never ends by itself (a parameter server): not waited for."""
    gpus: tuple[str, ...] = ()
    """The GPUs its container is given (docker; the local backend sets CUDA_VISIBLE_DEVICES)."""


@dataclass(frozen=True)
class Launch:
    """What every watcher of replicas here is told."""

    job_id: str
    store: str
    """The job store's path (the watcher records how the job ends there)."""
    env: dict[str, str]
    """The job's variables, for every replica (never the kernel's environment)."""
    replicas: tuple[ReplicaLaunch, ...]
    runtime_args: tuple[str, ...]
    """The arguments of ``python -m tfc_runtime`` (``tfc_runtime.protocol.RuntimeArgs``)."""
    startup_timeout: float = 300.0
    """Seconds a replica may take to join the cluster."""
    timeout: int | None = None
    """The job's time limit in seconds (``--timeout``)."""
    restarts: int = 0
    """How many times a killed replica is restarted."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object :meth:`from_json` reads back."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls: type[L], data: Mapping[str, Any]) -> L:
        """Read what :meth:`to_json` wrote.

        Raises:
            ValueError: a key this type does not have, or one it needs missing.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"{FILE}: unknown keys {unknown} for {cls.__name__}")
        values: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in data.items()
        }
        values["replicas"] = tuple(
            ReplicaLaunch(**{**r, "gpus": tuple(r.get("gpus", ()))}) for r in data["replicas"]
        )
        try:
            return cls(**values)
        except TypeError as exc:
            raise ValueError(f"{FILE}: {exc}") from None

    @classmethod
    def read(cls: type[L], job_dir: Path) -> L:
        """The launch file of ``job_dir``."""
        return cls.from_json(json.loads((job_dir / FILE).read_text()))


@dataclass(frozen=True)
class LocalLaunch(Launch):
    """The local backend's supervisor: replicas are processes of this machine."""

    cwd: str = "."
    """Where the replicas start: the notebook's folder."""
    python: str = ""
    """The kernel's Python (empty: the supervisor's own)."""


@dataclass(frozen=True)
class DockerLaunch(Launch):
    """The docker backend's watcher: replicas are containers of the local engine."""

    image: str = ""
    mounts: tuple[str, ...] = ()
    """Folders mounted at the same path (the job's folder)."""
    user: str | None = None
    """``uid:gid`` the containers run as (None: the image's user)."""
