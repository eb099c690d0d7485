"""What the run cell changed that its statements do not bind: the cell's effects.

A cell's top-level assignments are its names (:func:`tfc_runtime.runcell.bound_names`), but a
cell also changes objects the notebook made before it (``df['b'] = ...``, ``lst.append(x)``,
``d[k] = v``), deletes names (``del x``), and binds names through a function's ``global`` or
``exec``. In Jupyter all of that stays in the kernel; in a job it happens to the job's copies.
So when the run cell starts, :func:`snapshot` takes a fingerprint of each plain value in the
notebook's namespace (what :class:`tfc_runtime.values.Encoder` encodes: numbers, strings,
containers, arrays, frames), and when it ends :func:`changes` says which of them changed in
place, were bound again, or are gone, and which new names appeared that no statement of the
cell binds. The changed and new names travel back as the cell's own do; the kernel admits
them only where the notebook's own code could bind them (``tfc_jupyter/returns/returned.py``).

Modules, functions, classes, Keras models (sent by their own codec when the cell reads them)
and TensorFlow objects (reading a distributed variable may start a collective) are not
fingerprinted. Fingerprints stop after :data:`BUDGET` bytes; the names left are not checked,
and :attr:`Changes.unchecked` says which. Standard library only (NumPy where a value holds
arrays).
"""

from __future__ import annotations

import hashlib
import json
import types
from dataclasses import dataclass, field
from typing import Any

from tfc_runtime import values

BUDGET = 512 << 20
"""Bytes of values fingerprinted at the run cell's start (and again at its end), at most."""
_SKIPPED_MODULES = ("tensorflow", "keras", "tf_keras", "torch", "jax")
_CODE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type, types.MethodType)


@dataclass
class Snapshot:
    """The namespace when the run cell started: each name's object (its ``id``) and the
    fingerprint of its value (None: not a plain value, or over the budget)."""

    ids: dict[str, int] = field(default_factory=dict)
    prints: dict[str, str | None] = field(default_factory=dict)
    unchecked: list[str] = field(default_factory=list)


@dataclass
class Changes:
    """What the run cell did beyond its own bindings: ``changed`` (name -> ``changed in
    place``, ``bound again`` or ``bound``, for a name no statement of the cell binds),
    ``deleted`` (names gone), ``unchecked`` (names too large to compare)."""

    changed: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)


def _user_name(name: str, value: Any) -> bool:
    """A name the notebook's code bound to a value (not ``_``-private, not code)."""
    if name.startswith("_") or isinstance(value, _CODE):
        return False
    module = type(value).__module__.partition(".")[0]
    return module not in _SKIPPED_MODULES


def fingerprint(value: Any, room: int) -> tuple[str | None, int]:
    """``(digest, bytes read)`` of a plain value's encoding; ``(None, 0)`` when it is not one
    (:class:`~tfc_runtime.values.Unsupported`) or is over ``room`` bytes."""
    encoder = values.Encoder()
    try:
        tree = encoder.encode(value)
    except (values.Unsupported, RecursionError, ValueError, TypeError):
        return None, 0
    if encoder.size > room:
        return None, 0
    digest = hashlib.blake2b(digest_size=16)
    digest.update(json.dumps(tree, sort_keys=True, default=repr).encode("utf-8", "replace"))
    for key in sorted(encoder.arrays):
        array = encoder.arrays[key]
        digest.update(f"{key}{array.dtype.str}{array.shape}".encode())
        import numpy as np

        digest.update(np.ascontiguousarray(array).reshape(-1).view(np.uint8).data)
    return digest.hexdigest(), encoder.size


def snapshot(namespace: dict[str, Any]) -> Snapshot:
    """Fingerprint the namespace's plain values (see the module's docstring)."""
    snap, room = Snapshot(), BUDGET
    for name, value in list(namespace.items()):
        if not _user_name(name, value):
            continue
        snap.ids[name] = id(value)
        if room <= 0:
            snap.prints[name] = None
            snap.unchecked.append(name)
            continue
        digest, size = fingerprint(value, room)
        snap.prints[name] = digest
        room -= size
    return snap


def changes(before: Snapshot, namespace: dict[str, Any], binds: set[str]) -> Changes:
    """What changed since :func:`snapshot`, besides the names in ``binds`` (the cell's own)."""
    out, room = Changes(unchecked=list(before.unchecked)), BUDGET
    for name, ident in before.ids.items():
        if name not in namespace:
            out.deleted.append(name)
            continue
        if name in binds:
            continue
        value = namespace[name]
        if id(value) != ident:
            if _user_name(name, value):
                out.changed[name] = "bound again"
            continue
        old = before.prints.get(name)
        if old is None:
            continue
        new, size = fingerprint(value, room)
        room -= size
        if new is not None and new != old:
            out.changed[name] = "changed in place"
    for name, value in list(namespace.items()):
        if name not in before.ids and name not in binds and _user_name(name, value):
            out.changed[name] = "bound"
    return out
