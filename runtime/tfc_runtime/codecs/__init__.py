"""Codecs: one kind of value a run cell sends back, written in the job and read in the kernel.

A codec is one class in one file, imported by both sides (this package is standard library
only; a codec imports its library, Keras or pandas, when it writes or reads a value):

* in the job, :meth:`Codec.claims` picks the codec of each name the run cell binds (cheap
  checks: ``type(value).__module__``, ``sys.modules``; never an import) and :meth:`Codec.write`
  writes it through a :class:`Writer` (files under the cell folder, JSON trees whose arrays go
  to one pickle-free ``.npz``), returning the name's manifest entry;
* in the kernel, the entry's ``kind`` names the codec, and :meth:`Codec.read` rebuilds the
  value through a :class:`Reader`: the border's bounded, checked readers
  (``tfc_jupyter/returns/border.py``). A codec never opens a path of the job folder itself,
  and loads nothing that runs code (a Keras Tuner tuner reloads from its folder where the
  notebook is, as the cell's files come back: JSON and weights).

The registry (:func:`codecs`) holds the built-in codecs (:mod:`.keras`: models and their
``History``; :mod:`.callback`: Keras callbacks; :mod:`.tuner`: Keras Tuner's tuners and
``HyperParameters``; :mod:`.figure`: matplotlib figures; :mod:`.sklearn_model`: scikit-learn
models through skops; :mod:`.value`: everything JSON and plain arrays carry, tried last), then
those of the installed packages' entry points of group :data:`ENTRY_POINTS` (each a
:class:`Codec` subclass or instance), then those given to :func:`register`. The first that
claims a value writes it. A codec must be installed where the job runs and in the kernel: the
manifest's ``kind`` only chooses among the kernel's own codecs, never code from the job folder.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

ENTRY_POINTS = "tfc_runtime.codecs"
"""The entry point group of codecs other packages add."""
REFERRED = "__history_model_"
"""Prefix of the names under which a value another refers to is written when no name of the
cell holds it (``__history_model_0``: a ``History``'s model)."""
CODE = "code"
"""The manifest kind of an ``import``, ``def`` or ``class`` of the cell: no codec writes it,
the kernel runs its own copy of the statement."""


class Unsupported(Exception):
    """A value that cannot travel; ``str()`` says what it is, in the user's words."""


class Unreadable(Exception):
    """What the job left cannot be read here; ``str()`` is one line (the border's ``Refused``
    is one)."""


class OverLimit(Unreadable):
    """Over the bytes the kernel reads back (``return_limit_mb``; the border's ``OverLimit``
    is one)."""


class Stays(Exception):
    """Raised by :meth:`Codec.read`: the value stays in the job; ``str()`` says why."""


class Writer(Protocol):
    """What a codec writes through, in the job."""

    @property
    def size(self) -> int:
        """Bytes encoded so far (:meth:`encode`), for the names in all."""
        ...

    def path(self, rel: str) -> str:
        """The path to write ``rel`` (a plain relative path, ``fractions/x.txt``) at under
        the cell folder; its folders are made, and the file is made owner-only once written."""
        ...

    def encode(self, value: Any) -> Any:
        """A JSON-able tree of ``value`` (its arrays go to the cell's ``.npz``);
        :class:`Unsupported` when it cannot travel."""
        ...

    def saved(self, value: Any) -> str | None:
        """The name an early codec wrote ``value`` under (see :meth:`Codec.refers`), or None."""
        ...


class Reader(Protocol):
    """What a codec reads through, in the kernel: each read is bounded, checked and counted
    against ``return_limit_mb`` by the border. Raises :class:`Unreadable` (:class:`OverLimit`
    past the limit) or OSError."""

    name: str
    """The name being read."""
    namespace: dict[str, Any]
    """The kernel's namespace (read only: the kernel sets the name)."""
    folder: Path
    """Where the run cell's files are in the kernel: the notebook's folder (a local job wrote
    there; the files other jobs wrote are copied there before the names are read)."""

    def bytes(self, file: str) -> bytes:
        """The bytes of ``file`` (a path the entry names, relative to the cell folder)."""
        ...

    def copy(self, file: str, *, archive: bool = False) -> Path:
        """A private copy of ``file``, what was read (``archive``: a zip, decompressed within
        the limit, nothing kept, before it is given); removed when the names are set."""
        ...

    def decode(self, tree: Any) -> Any:
        """The value of a tree :meth:`Writer.encode` made."""
        ...

    def loaded(self, name: str) -> Any:
        """The value an early codec read for ``name`` (see :meth:`Codec.refers`), or None."""
        ...

    def note(self, text: str) -> None:
        """Say ``text`` after the name in the cell's line (``model (tf-keras model, rebuilt in
        Keras 3 with its weights)``)."""
        ...


class Codec:
    """One kind of value: subclass it, set :attr:`kind`, write :meth:`claims`,
    :meth:`write` and :meth:`read` (see ``CONTRIBUTING.md``, "How to add a kind of value")."""

    kind: ClassVar[str] = ""
    """The manifest's ``kind`` of the names this codec writes: unique among codecs."""
    noun: ClassVar[str] = ""
    """What the value is, before a reason it stays (``Keras model over 105 MB ...``); empty:
    the reason alone."""
    early: ClassVar[bool] = False
    """Written first, on every task of the job (saving may join collectives: the chief's
    copy is kept), for the names the cell binds and those it reads (trained in place); read
    first, as others may refer to them (a Keras model)."""

    def claims(self, value: Any) -> bool:
        """Whether this codec writes ``value``: cheap checks that import nothing."""
        raise NotImplementedError

    def refers(self, value: Any) -> list[Any]:
        """Values ``value`` refers to that an early codec writes first (a History's model)."""
        return []

    def write(self, value: Any, name: str, out: Writer) -> dict[str, Any]:
        """Write ``value`` (bound to ``name``) in the job; its manifest entry (JSON-able, no
        ``kind``: it is added). :class:`Unsupported` when it cannot travel."""
        raise NotImplementedError

    def read(self, entry: dict[str, Any], src: Reader) -> Any:
        """The value of a manifest ``entry`` in the kernel. The entry is untrusted: check what
        it holds. :class:`Stays` with a reason, or any exception (said as "does not load
        here")."""
        raise NotImplementedError


_C = TypeVar("_C", bound="Codec | type[Codec]")

_BUILTIN = (
    "keras:KerasModel",
    "keras:KerasHistory",
    "callback:KerasCallback",
    "tuner:HyperParametersCodec",
    "tuner:KerasTuner",
    "figure:MatplotlibFigure",
    "sklearn_model:SklearnModel",
)
_LAST = "value:Value"
_registered: list[Codec] = []
_found: list[Codec] | None = None
broken: dict[str, str] = {}
"""Entry points that did not load (name -> why), for the kernel to say."""


def _builtin(spec: str) -> Codec:
    import importlib

    module, _, cls = spec.partition(":")
    made: Codec = getattr(importlib.import_module(f"{__name__}.{module}"), cls)()
    return made


def _as_codec(obj: Any) -> Codec:
    codec = obj() if isinstance(obj, type) else obj
    if not isinstance(codec, Codec) or not codec.kind:
        raise TypeError(f"{obj!r} is not a Codec with a kind")
    return codec


def _entry_points() -> list[Codec]:
    from importlib.metadata import entry_points

    out = []
    for ep in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        try:
            out.append(_as_codec(ep.load()))
        except Exception as exc:
            broken[ep.name] = f"{type(exc).__name__}: {str(exc)[:160]}"
            print(f"[tfc_runtime] codec {ep.name} not loaded: {broken[ep.name]}", file=sys.stderr)
    return out


def codecs() -> list[Codec]:
    """Every codec, in the order they are asked to claim a value (see the module's
    docstring). Entry points are read once a process (:func:`reset` reads them again)."""
    global _found
    if _found is None:
        _found = [_builtin(s) for s in _BUILTIN] + _entry_points() + [_builtin(_LAST)]
    builtin = [*_found[: len(_BUILTIN)], _found[-1]]
    kinds = {CODE, *(c.kind for c in builtin)}  # a built-in kind is never replaced
    found = list(_found[: len(_BUILTIN)])
    for codec in [*_found[len(_BUILTIN) : -1], *_registered]:
        if codec.kind in kinds:
            broken.setdefault(codec.kind, f"a second codec of kind {codec.kind!r}: not used")
            continue
        kinds.add(codec.kind)
        found.append(codec)
    return [*found, _found[-1]]


def register(codec: _C) -> _C:
    """Add a codec (a :class:`Codec` subclass or instance; a decorator too), asked after the
    built-in and installed ones. The job must register it too: an entry point does both."""
    _registered.append(_as_codec(codec))
    return codec


def reset() -> None:
    """Forget the codecs found and registered: entry points are read again when next asked."""
    global _found
    _found = None
    _registered.clear()
    broken.clear()


def claiming(value: Any, *, early: bool | None = None) -> Codec | None:
    """The first codec that claims ``value`` (only early ones, or only others, when
    ``early`` is given); a codec whose check fails claims nothing."""
    for codec in codecs():
        if early is not None and codec.early != early:
            continue
        try:
            if codec.claims(value):
                return codec
        except Exception:
            continue
    return None


def of_kind(kind: Any) -> Codec | None:
    """The codec of a manifest ``kind``, or None."""
    if not isinstance(kind, str):
        return None
    return next((c for c in codecs() if c.kind == kind), None)


def plain_rel(rel: str) -> list[str]:
    """The parts of a plain relative path (no ``..``, ``.``, empty part or backslash);
    ValueError otherwise."""
    parts = rel.split("/") if isinstance(rel, str) and rel and not rel.startswith("/") else []
    if not parts or any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts):
        raise ValueError(f"{str(rel)[:80]!r}: not a plain relative path")
    return parts
