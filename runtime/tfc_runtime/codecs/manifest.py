"""The run cell's manifest, ``cell/values.json``: which names came back, how, and which stayed.

Written by the job (:func:`tfc_runtime.giveback.save_names`), read by the kernel
(``tfc_jupyter/returns/returned.py``) through the border, so :meth:`Manifest.from_json` takes any
JSON a job folder may hold and keeps only what has the manifest's shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

VERSION = 1
FILE = "values.json"
"""The manifest's name in the cell folder."""
STAYED_READ = 50
"""Names that stayed in the job read back at most (each reason cut to 200 characters)."""


@dataclass
class Manifest:
    """``names``: name -> entry (``{"kind": <codec kind>, ...}``, in the order written: early
    kinds first); ``stayed``: name -> why it stays in the job; ``order``: the names the cell
    binds that came back, in its order; ``out``: the cell's ``Out[]`` as a value entry, when
    it travels; ``partial``: the job failed, and these are the names bound before the failing
    statement (``{"cell", "line", "script_line", "place"}``: where that statement starts);
    ``changed``: names no statement of the cell binds that it changed (name -> ``changed in
    place``, ``bound again``, ``bound``: :mod:`tfc_runtime.effects`), saved as the others;
    ``deleted``: names the cell deleted."""

    names: dict[str, dict[str, Any]] = field(default_factory=dict)
    stayed: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    out: dict[str, Any] | None = None
    version: int = VERSION
    partial: dict[str, Any] | None = None
    changed: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The JSON object written (``out`` only when there is one)."""
        data: dict[str, Any] = {
            "version": self.version,
            "names": self.names,
            "stayed": self.stayed,
            "order": self.order,
        }
        if self.out is not None:
            data["out"] = self.out
        if self.partial is not None:
            data["partial"] = self.partial
        if self.changed:
            data["changed"] = self.changed
        if self.deleted:
            data["deleted"] = self.deleted
        return data

    @classmethod
    def from_json(cls, data: Any) -> Manifest:
        """The manifest of a parsed ``values.json``: entries that are not objects, and
        whatever is not of the manifest's shape, are dropped; ValueError for what is not a
        JSON object."""
        if not isinstance(data, dict):
            raise ValueError("not a manifest")
        names, stayed, order, out = (data.get(k) for k in ("names", "stayed", "order", "out"))
        version = data.get("version")
        partial = data.get("partial")
        return cls(
            names={
                str(k): v
                for k, v in (names.items() if isinstance(names, dict) else ())
                if isinstance(v, dict)
            },
            stayed={
                str(k): str(v)[:200]
                for k, v in list(stayed.items() if isinstance(stayed, dict) else ())[:STAYED_READ]
            },
            order=[str(n) for n in order] if isinstance(order, list) else [],
            out=out if isinstance(out, dict) else None,
            version=version if isinstance(version, int) else VERSION,
            partial=_partial(partial),
            changed=_changed(data.get("changed")),
            deleted=[str(n) for n in deleted if isinstance(n, str)][:STAYED_READ]
            if isinstance(deleted := data.get("deleted"), list)
            else [],
        )


_WHAT = ("changed in place", "bound again", "bound")


def _changed(data: Any) -> dict[str, str]:
    """The cell's changes as read back: names to one of the known words, at most
    :data:`STAYED_READ`."""
    if not isinstance(data, dict):
        return {}
    pairs = [(k, v) for k, v in data.items() if isinstance(k, str) and v in _WHAT]
    return dict(pairs[:STAYED_READ])


def _partial(data: Any) -> dict[str, Any] | None:
    """Where a failed job's statement starts, as read back (ints and a short place only)."""
    if not isinstance(data, dict):
        return None
    out: dict[str, Any] = {
        k: v
        for k in ("cell", "line", "script_line")
        if isinstance(v := data.get(k), int) and not isinstance(v, bool) and v >= 1
    }
    if "script_line" not in out:
        return None
    place = data.get("place")
    out["place"] = place[:60] if isinstance(place, str) else ""
    return out
