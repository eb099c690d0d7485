"""Everything else JSON and plain arrays carry (``kind: value``): asked last.

Numbers, strings, bytes, dates, containers, NumPy arrays, tensors and pandas objects, as one JSON
tree whose arrays go to the cell's pickle-free ``.npz`` (:mod:`tfc_runtime.values`); anything
else is :class:`~tfc_runtime.codecs.Unsupported`, named (``tf.data.Dataset``), and stays in the
job. A Keras model in a list, tuple or dict is written first by its own codec (:meth:`refers`),
and the container holds its name.
"""

from __future__ import annotations

from typing import Any

from . import Codec, Reader, Writer


class Value(Codec):
    """A value :class:`tfc_runtime.values.Encoder` encodes."""

    kind = "value"

    def claims(self, value: Any) -> bool:
        return True  # the last asked: what it cannot encode is Unsupported when written

    def refers(self, value: Any) -> list[Any]:
        from tfc_runtime import codecs
        from tfc_runtime.values import refers

        return refers(value, lambda v: codecs.claiming(v, early=True) is not None)

    def write(self, value: Any, name: str, out: Writer) -> dict[str, Any]:
        before = out.size
        tree = out.encode(value)
        return {"value": tree, "bytes": out.size - before}

    def read(self, entry: dict[str, Any], src: Reader) -> Any:
        return src.decode(entry.get("value"))
