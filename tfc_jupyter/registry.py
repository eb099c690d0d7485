"""The backends this installation knows, and what each can do (the only module that names them).

A backend is a class implementing :class:`tfc_jupyter.backends.Backend`, found by name: the built-in
ones below, then any package that declares an entry point in the ``tfc_jupyter.backends`` group
(as papermill finds its engines)::

    [project.entry-points."tfc_jupyter.backends"]
    k8s = "my_package.k8s:KubernetesBackend"

The rest of the product never compares backend names: it asks the backend's :class:`Traits`
(builds an image? billed? runs here? has TPUs?), so a backend is one module and nothing else
changes. Loading a backend imports its module only then.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

from .errors import Fix, SpecError

GROUP = "tfc_jupyter.backends"
"""The entry-point group third-party backends register in."""

BUILTIN: dict[str, str] = {
    "local": "tfc_jupyter.backends.local.backend:LocalBackend",
    "docker": "tfc_jupyter.backends.docker.backend:DockerBackend",
    "vertex": "tfc_jupyter.backends.vertex.backend:VertexBackend",
}
"""Backend name -> ``module:class`` of the ones that ship with the product."""

RESIDENT: dict[str, tuple[str, str, str]] = {
    "local": (
        "tfc_jupyter.backends.local.warm:describe",
        "tfc_jupyter.backends.local.backend:keep_warm",
        "tfc_jupyter.backends.local.warm:keep",
    )
}
"""Backend name -> ``module:function`` that says what it keeps running between jobs (a warm
runtime; given the job store's folder), the one that starts it ahead of the first job (given
the folder), and the one that says this process launches jobs for a while (no argument)."""

BACKEND_SETTINGS: dict[str, str] = {"vertex": "tfc_jupyter.backends.vertex.settings:SETTINGS"}
"""Backend name -> ``module:table`` of the settings it declares, as it declares its options:
key -> (``number`` or ``text``, its default, its help). :mod:`tfc_jupyter.config` adds them to
every setting's table; the module is plain data (reading the settings imports nothing else)."""

IMAGE_REGISTRIES: dict[str, str] = {
    "-docker.pkg.dev": "tfc_jupyter.backends.vertex.google.artifacts",
    "gcr.io": "tfc_jupyter.backends.vertex.google.artifacts",
}
"""Image registry host (its ending) -> the module that logs in to it and explains its refusals:
``login(uri)`` gives the engine's ``auth_config`` for a push or pull (None: the engine's own
``docker login``), ``push_hint(error)`` what to do when a push was refused. The cloud that owns
a registry owns this (Artifact Registry is Vertex AI's): ``image/`` asks by host."""

STORES: dict[str, str] = {"gs": "tfc_jupyter.backends.vertex.cloudbuild.storage:open_uri"}
"""URI scheme -> ``module:function`` that opens the object store a job wrote its outputs to:
called with the URI, the job's record and the settings, it gives ``(store, path)``, where the
store lists (``names(prefix)``) and downloads (``download(name, dest)``) objects and holds its
``bucket``. A job folder on this machine needs none: ``returns/`` reads it through the border."""

DEFAULT = "local"
"""The backend a job uses when nothing chooses one: processes on this machine."""


@dataclass(frozen=True)
class Traits:
    """What a backend can do: the questions the planner, listings and front ends ask it."""

    label: str
    """The backend in the UI's own words ("this machine", "Vertex AI")."""
    runs_image: bool = False
    """Its replicas run in a container image (built by the plan unless ``--image`` names one)."""
    image_here: bool = False
    """The image runs on this machine: without a registry or project it keeps a local name."""
    on_this_machine: bool = False
    """Its replicas are processes here, so a listing checks them for life (a cheap pid check)."""
    billed: bool = False
    """Its machines cost money: plans show the price and warn about unpriced machines."""
    tpus: bool = False
    """It can run TPU jobs."""
    needs_project: bool = False
    """It needs a Google Cloud project (``--project``)."""
    routes: bool = False
    """Code reaches it by a route: a package on a prebuilt image, or a built image."""
    scheduling: bool = False
    """It takes the cloud scheduling settings (Spot, flex-start, reservations, restarts)."""
    model_place: str = "and it is no longer there"
    """Where a model saved to a path inside the job ends up, as words after "saved it at P"."""
    restarts: str = ""
    """Who restarts a replica that dies, and when, as a clause ("Vertex AI restarts a replica
    after ..."); empty: nothing does."""
    reports_in_logs: bool = False
    """The runtime's reports (metrics, saved models) come in the chief's log, as
    ``[tfc_runtime] result`` lines (Vertex AI: no job folder is shared). Otherwise they come
    only in the job folder's results file, and a line the code prints that looks like one is
    just a line: it sets no metric and no model path."""
    tunes: bool = False
    """It runs a sweep as one job of its own (Vertex AI's HyperparameterTuningJob, Vizier
    choosing the values): the trials are the service's, not jobs of ours. Its watcher keeps
    them in the job folder's :data:`TRIALS_FILE`."""
    keeps_backups: bool = False
    """The job's checkpoint folder outlives a replica's machine with no ``--base-output-dir``
    (a folder on this machine), so a restarted replica finds its backups there."""
    sweep_methods: frozenset[str] | None = None
    """The sweep methods (``--method``: ``tfc_jupyter.sweep.methods``) it runs; the plan refuses
    the others, naming the ones it runs. None: every registered method, as a sweep that runs
    here does (the local driver, ``trials/``, launches each trial as a job of this backend and
    asks the method's Optuna sampler for its values)."""


TRIALS_FILE = "trials.json"
"""A sweep's job folder (a backend that ``tunes``): its trials as the service last reported
them, a JSON list of Vertex AI ``Trial`` objects (``id``, ``state``, ``parameters``,
``measurements``, ``finalMeasurement``, ``startTime``, ``endTime``, ``infeasibleReason``)."""

SWEEP_LABEL, TRIAL_LABEL = "tfc-sweep", "tfc-trial"
"""The labels of a sweep's jobs: its sweep's id, and a trial's number (a trial driven here is a
job of ours; a backend that ``tunes`` runs the sweep as one job, labelled with its own id and no
trial number). The sidebar groups jobs by the first, and ``GET /sweeps/ID`` finds them by it."""


@dataclass(frozen=True)
class Preview:
    """What a dry run shows of a backend's launch: the exact request (or manifest) it sends."""

    title: str
    """Its heading ("Vertex AI request")."""
    request: dict[str, Any]
    """The request as JSON-ready data (the REST API's ``request``)."""
    text: str = ""
    """The request as the backend's users read it (default: indented JSON)."""

    def __post_init__(self) -> None:
        if not self.text:
            object.__setattr__(self, "text", json.dumps(self.request, indent=2))


@dataclass(frozen=True)
class Route:
    """How a job's code reaches a backend with ``routes`` (its class's ``route``), and why."""

    kind: str
    """``package`` (the code as a Python package on a prebuilt image) or ``image`` (built)."""
    reason: str
    """Why, in words ("nothing to build: ...", "apt.txt asks for system packages ...")."""
    image: str | None = None
    """The package route: the prebuilt image the package runs on."""
    package: Any = None
    """The package route: what the backend uploads at launch (``data``, ``object_name()``,
    ``uri(bucket)``)."""
    note: str | None = None
    """A warning the plan shows (the prebuilt image's end of availability)."""


ROUTES = ("auto", "package", "image")
"""What ``--route`` takes: ``auto`` lets the backend choose."""


_UNKNOWN = Traits(label="an unknown backend")


class _Names(type):
    """Iterating :class:`BackendName` gives every known backend."""

    def __iter__(cls) -> Any:
        return iter([BackendName(n) for n in names()])


class BackendName(str, metaclass=_Names):
    """A known backend's name (lower case); ``parse`` refuses others with the fix.

    One object per name, so ``spec.backend is BackendName.LOCAL`` holds; ``.value`` is the name.
    """

    _made: ClassVar[dict[str, BackendName]] = {}

    def __new__(cls, text: str) -> BackendName:
        key = str(text)
        made = cls._made.get(key)
        if made is None:
            made = cls._made[key] = super().__new__(cls, key)
        return made

    @property
    def value(self) -> str:
        """The name as a plain string."""
        return str.__str__(self)

    @classmethod
    def parse(cls, text: str) -> BackendName:
        """A known backend's name (any case), else :class:`SpecError` listing the known ones."""
        key = str(text).strip().lower()
        if key in BUILTIN or key in _entry_points():
            return cls(key)
        raise SpecError(
            f"unknown backend {text!r}", f"use --backend {_spoken(names())}", field="backend"
        )

    LOCAL: BackendName
    DOCKER: BackendName
    VERTEX: BackendName


BackendName.LOCAL = BackendName("local")
BackendName.DOCKER = BackendName("docker")
BackendName.VERTEX = BackendName("vertex")


def _spoken(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" or {items[-1]}" if len(items) > 1 else "".join(items)


def _entry_points() -> dict[str, str]:
    """Third-party backends: name -> ``module:class`` (read each time: installs change).

    ``importlib.metadata`` is imported here, not with the module: a job on a built-in backend
    never asks, and the import (with its email and zipfile modules) costs every launch 20 ms.
    """
    from importlib.metadata import entry_points

    return {ep.name.lower(): ep.value for ep in entry_points(group=GROUP)}


def installed() -> list[str]:
    """The backends installed packages add (not the built-in ones)."""
    return [n for n in _entry_points() if n not in BUILTIN]


def names() -> list[str]:
    """Every known backend: the built-in ones, then the installed ones."""
    return list(BUILTIN) + installed()


def target(name: str) -> str | None:
    """``module:class`` of the backend called ``name`` (None: not known)."""
    return BUILTIN.get(name) or _entry_points().get(name)


@cache
def _load(where: str) -> Any:
    module, _, cls = where.partition(":")
    return getattr(importlib.import_module(module), cls)


def load(name: str) -> Any:
    """The backend class called ``name``, its module imported now.

    Raises:
        SpecError: no backend has that name (the fix lists the known ones).
    """
    where = target(str(name))
    if where is None:
        BackendName.parse(name)  # raises, naming the known ones
        raise AssertionError(name)  # pragma: no cover - parse raised
    return _load(where)


def traits(name: str) -> Traits:
    """What the backend called ``name`` can do; a neutral answer for one no longer installed
    (a record made by a backend since removed still lists)."""
    where = target(str(name))
    if where is None:
        return _UNKNOWN
    return _load(where).traits


def resident(home: Any) -> list[str]:
    """One line for each thing the built-in backends keep running on this machine between
    jobs (the local backend's warm runtime), for ``%tfc_jobs`` and ``tfc-jupyter jobs``."""
    lines = []
    for where, _, _ in RESIDENT.values():
        with contextlib.suppress(Exception):  # never a reason for a job list to fail
            lines.extend(_load(where)(home))
    return lines


def start_resident(home: Any) -> None:
    """Start what the built-in backends keep running between jobs (the warm runtime), ahead of
    the first job: a kernel whose notebook has imported TensorFlow calls it."""
    for _, where, _ in RESIDENT.values():
        with contextlib.suppress(Exception):  # a job starts it later, or starts cold
            _load(where)(home)


def keep_resident() -> None:
    """This process launches jobs for a while (the Jupyter server, a sweep's driver): the
    backends keep what they keep between jobs (the warm runtime, started by the first job)."""
    for _, _, where in RESIDENT.values():
        with contextlib.suppress(Exception):
            _load(where)()


def offering(trait: str) -> list[str]:
    """The built-in backends whose :class:`Traits` say yes to ``trait`` (for a fix's words)."""
    return [n for n in BUILTIN if getattr(traits(n), trait)]


def use_instead(trait: str) -> str:
    """``--backend X`` (or ``X or Y``) for the backends that offer ``trait``."""
    return f"--backend {_spoken(offering(trait))}"


def fixes_instead(trait: str) -> list[Fix]:
    """Use one of the backends that offer ``trait``, as fixes (``use --backend X``)."""
    return [Fix.set("backend", name, verb="use") for name in offering(trait)]


def label_of(trait: str) -> str:
    """The UI words of the backends that offer ``trait`` ("Vertex AI")."""
    return _spoken([traits(n).label for n in offering(trait)])


def image_registry(uri: str) -> Any | None:
    """The module that logs in to the registry of the image ``uri`` and explains its refusals
    (:data:`IMAGE_REGISTRIES`), imported now; None: a registry nothing here knows."""
    host = uri.split("/", 1)[0]
    for ending, module in IMAGE_REGISTRIES.items():
        if host.endswith(ending):
            return importlib.import_module(module)
    return None


def registry_login(uri: str) -> dict[str, str] | None:
    """The engine's ``auth_config`` to push or pull ``uri`` (:func:`image_registry`'s
    ``login``), or None: the engine's own login stands."""
    known = image_registry(uri)
    return None if known is None else known.login(uri)


def store_for(uri: str, record: Any, settings: Any = None) -> tuple[Any, str]:
    """The object store holding ``uri`` (:data:`STORES`, by scheme) for the job ``record``,
    and the URI's path in it.

    Raises:
        SpecError: no store here reads that scheme.
    """
    scheme = uri.partition("://")[0]
    where = STORES.get(scheme)
    if where is None or "://" not in uri:
        raise SpecError(
            f"{uri} is not a place this installation reads",
            f"save under a folder of the job or under {', '.join(s + '://' for s in STORES)}",
        )
    opened: tuple[Any, str] = _load(where)(uri, record, settings)
    return opened


def backend_settings() -> dict[str, dict[str, tuple[str, Any, str]]]:
    """The settings each built-in backend declares (:data:`BACKEND_SETTINGS`), by backend."""
    return {name: _load(where) for name, where in BACKEND_SETTINGS.items()}
