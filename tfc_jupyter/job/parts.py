"""A typed part of a job's spec (``JobSpec.google``, ``JobSpec.decided``), read back from the
spec's JSON form (``JobSpec.to_dict``) under its own key, or from the flat keys a job record
written before the parts existed kept its values in."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from typing import Self


class SpecPart:
    """A frozen dataclass that is one part of a spec: ``KEY`` names it in the spec's JSON, and
    ``FLAT`` the field a record of the flat shape kept under another name."""

    KEY: ClassVar[str]
    FLAT: ClassVar[Mapping[str, str]] = {}  # field -> its key in a flat record (default: its name)

    @classmethod
    def raw(cls, spec: Mapping[str, Any] | None) -> dict[str, Any]:
        """This part's values in a spec's JSON form as written, unchecked (a job record's,
        which is read, never refused)."""
        spec = spec or {}
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        part = spec.get(cls.KEY)
        if isinstance(part, Mapping):
            return {k: part[k] for k in names if k in part}
        keys = {name: cls.FLAT.get(name, name) for name in names}
        return {name: spec[key] for name, key in keys.items() if key in spec}

    @classmethod
    def of_spec(cls, spec: Mapping[str, Any] | None) -> Self:
        """This part of a spec's JSON form, checked as it is made."""
        return cls(**cls.raw(spec))
