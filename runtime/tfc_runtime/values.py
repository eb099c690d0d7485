"""Values that travel from a job back to the kernel, in formats whose loading runs no code.

A value is written as JSON (numbers, strings, lists, tagged objects) and its arrays as one
``.npz`` file of plain (never object) arrays: :func:`decode` reads them back with
``numpy.load(..., allow_pickle=False)`` and ``json``, so a file crafted by whoever can write the
job's folder or bucket cannot run code on load (pickle is never used). This is the engine of
the ``value`` codec (:mod:`tfc_runtime.codecs.value`), and other codecs encode trees with it;
Keras models travel apart (:mod:`tfc_runtime.codecs.keras`), loaded in Keras' safe mode.

What travels: ``None``, bools, ints, floats (NaN and infinities kept), complex numbers, strings,
bytes, lists, tuples, sets, dicts (any keys of these kinds), NumPy arrays and scalars (not of
objects), TensorFlow tensors and variables (as NumPy arrays), pandas ``DataFrame``, ``Series``
and ``Index`` whose columns are arrays of plain values or of strings. Anything else raises
:class:`Unsupported`, naming what it is (``tf.data.Dataset``).

Standard library only; NumPy and pandas are imported when a value needs them.
"""

from __future__ import annotations

import base64
import math
import sys
from typing import Any

from tfc_runtime.codecs import Unsupported  # a value that cannot travel: raised here

__all__ = ["DEPTH", "Decoder", "Encoder", "Unsupported", "kind"]

DEPTH = 64
"""Nesting deeper than this is refused (a self-referencing list, too)."""


_PUBLIC = {
    "CollectiveAllReduceStrategy": "MultiWorkerMirroredStrategy",
    "CollectiveAllReduceStrategyV1": "MultiWorkerMirroredStrategy",
    "TPUStrategyV2": "TPUStrategy",
    "ParameterServerStrategyV2": "ParameterServerStrategy",
}
"""Strategy classes whose public names (``tf.distribute.X``) differ."""


def kind(value: Any) -> str:
    """What a value is, as a person would name it: ``tf.data.Dataset``, ``MirroredStrategy``,
    ``generator``, ``ndarray``."""
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        try:
            if isinstance(value, tf.data.Dataset):
                return "tf.data.Dataset"
            if isinstance(value, tf.distribute.Strategy):
                name = type(value).__name__  # the class behind TensorFlow's public name
                return _PUBLIC.get(name, name)
        except AttributeError:  # a TensorFlow still being imported
            pass
    return type(value).__name__


class Encoder:
    """Encodes values into JSON-able trees, collecting their arrays (``arrays``) and their
    size in bytes (``size``)."""

    def __init__(self) -> None:
        self.arrays: dict[str, Any] = {}
        self.size = 0

    def _array(self, array: Any, what: str) -> dict[str, Any]:
        if array.dtype.hasobject:
            raise Unsupported(f"{what} of Python objects")
        key = f"a{len(self.arrays)}"
        self.arrays[key] = array
        self.size += int(array.nbytes)
        return {"$array": key}

    def encode(self, value: Any, depth: int = 0) -> Any:
        """The JSON-able tree of ``value``; :class:`Unsupported` when it cannot travel."""
        if depth > DEPTH:
            raise Unsupported("nested too deep (or contains itself)")
        if value is None or isinstance(value, (bool, str)):
            self.size += len(value) if isinstance(value, str) else 1
            return value
        if isinstance(value, int):
            self.size += 8
            return value if type(value) is int else {"$int": int(value)}
        if isinstance(value, float):
            self.size += 8
            if type(value) is not float:
                return {"$float": repr(float(value))}
            return value if math.isfinite(value) else {"$float": repr(value)}
        if isinstance(value, complex):
            return {"$complex": [repr(value.real), repr(value.imag)]}
        if isinstance(value, (bytes, bytearray)):
            self.size += len(value)
            return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
        if type(value) in (list, tuple, set, frozenset):
            items = [self.encode(v, depth + 1) for v in value]
            if isinstance(value, list):
                return items
            return {"$" + type(value).__name__: items}
        if type(value) is dict:
            return {
                "$dict": [[self.encode(k, depth + 1), self.encode(v, depth + 1)]
                          for k, v in value.items()]
            }  # fmt: skip
        return self._library(value, depth)

    def _library(self, value: Any, depth: int) -> Any:
        module = type(value).__module__.partition(".")[0]
        if module == "numpy":
            import numpy as np

            if isinstance(value, np.ndarray):
                return self._array(value, "an array")
            if isinstance(value, np.generic):
                return {"$scalar": self._array(np.asarray(value), "an array")["$array"]}
        if module == "tensorflow" and hasattr(value, "numpy") and hasattr(value, "dtype"):
            name = type(value).__name__
            if "SyncOnRead" in name or "PerReplica" in name or "Aggregating" in name:
                # reading it may start a reduction the other tasks never join
                raise Unsupported(f"{name}, a distributed value: read it in the cell")
            try:
                array = value.numpy()
            except Exception as exc:  # a symbolic tensor, a variable on another task
                raise Unsupported(f"{kind(value)} with no value here ({exc})") from None
            import numpy as np

            return self._array(np.asarray(array), "a tensor")
        if module == "pandas":
            return self._pandas(value, depth)
        raise Unsupported(kind(value))

    def _column(self, values: Any, depth: int) -> Any:
        """One pandas column or index: an array of plain values, else a list of strings."""
        import numpy as np

        array = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
        if not array.dtype.hasobject:
            return self._array(array, "a column")
        items = array.tolist()
        if all(v is None or isinstance(v, (str, bool, int, float)) for v in items):
            return {"$list": [self.encode(v, depth + 1) for v in items]}
        raise Unsupported("pandas object with a column of Python objects")

    def _pandas(self, value: Any, depth: int) -> Any:
        import pandas as pd

        if isinstance(value, pd.MultiIndex) or isinstance(
            getattr(value, "index", None), pd.MultiIndex
        ):
            raise Unsupported(f"{type(value).__name__} with a MultiIndex")
        if isinstance(value, pd.Index):
            return {"$index": self._index(value, depth)}
        if isinstance(value, pd.Series):
            return {
                "$series": {
                    "name": self.encode(value.name, depth + 1),
                    "dtype": str(value.dtype),
                    "data": self._column(value, depth),
                    "index": self._index(value.index, depth),
                }
            }
        if isinstance(value, pd.DataFrame):
            if isinstance(value.columns, pd.MultiIndex):
                raise Unsupported("DataFrame with MultiIndex columns")
            return {
                "$frame": {
                    "columns": [self.encode(c, depth + 1) for c in value.columns],
                    "dtypes": [str(t) for t in value.dtypes],
                    "data": [self._column(value.iloc[:, i], depth)
                             for i in range(value.shape[1])],
                    "index": self._index(value.index, depth),
                }
            }  # fmt: skip
        raise Unsupported(kind(value))

    def _index(self, index: Any, depth: int) -> Any:
        import pandas as pd

        name = self.encode(index.name, depth + 1)
        if isinstance(index, pd.RangeIndex):
            return {"range": [index.start, index.stop, index.step], "name": name}
        return {"values": self._column(index, depth), "dtype": str(index.dtype), "name": name}


class Decoder:
    """Decodes a tree :class:`Encoder` made, with its arrays (a mapping: the ``.npz`` file)."""

    def __init__(self, arrays: Any) -> None:
        self.arrays = arrays

    def _array(self, key: Any) -> Any:
        if not isinstance(key, str) or key not in self.arrays:
            raise ValueError(f"no array {key!r} in the job's arrays")
        return self.arrays[key]

    def decode(self, tree: Any, depth: int = 0) -> Any:
        """The value of ``tree``; ValueError for a tree no :class:`Encoder` makes."""
        if depth > DEPTH + 2:
            raise ValueError("nested too deep")
        if tree is None or isinstance(tree, (bool, int, float, str)):
            return tree
        if isinstance(tree, list):
            return [self.decode(v, depth + 1) for v in tree]
        if not isinstance(tree, dict) or len(tree) != 1:
            raise ValueError(f"not a value the job writes: {str(tree)[:60]}")
        (tag, body), = tree.items()  # fmt: skip
        return self._tagged(tag, body, depth)

    def _tagged(self, tag: str, body: Any, depth: int) -> Any:
        if tag == "$int":
            return int(body)
        if tag == "$float":
            return float(body)
        if tag == "$complex":
            return complex(float(body[0]), float(body[1]))
        if tag == "$bytes":
            return base64.b64decode(body)
        if tag in ("$tuple", "$set", "$frozenset"):
            items = [self.decode(v, depth + 1) for v in body]
            return {"$tuple": tuple, "$set": set, "$frozenset": frozenset}[tag](items)
        if tag == "$dict":
            return {self.decode(k, depth + 1): self.decode(v, depth + 1) for k, v in body}
        if tag == "$array":
            return self._array(body)
        if tag == "$scalar":
            return self._array(body)[()]
        if tag == "$list":
            return [self.decode(v, depth + 1) for v in body]
        if tag in ("$index", "$series", "$frame"):
            return self._pandas(tag, body, depth)
        raise ValueError(f"not a value the job writes: {tag}")

    def _column(self, body: Any, depth: int) -> Any:
        return self.decode(body, depth + 1)

    def _index(self, body: dict[str, Any], depth: int) -> Any:
        import pandas as pd

        name = self.decode(body.get("name"), depth + 1)
        if "range" in body:
            start, stop, step = (int(v) for v in body["range"])
            return pd.RangeIndex(start, stop, step, name=name)
        return pd.Index(self._column(body["values"], depth), dtype=body.get("dtype"), name=name)

    def _pandas(self, tag: str, body: dict[str, Any], depth: int) -> Any:
        import pandas as pd

        if tag == "$index":
            return self._index(body, depth)
        index = self._index(body["index"], depth)
        if tag == "$series":
            data = self._column(body["data"], depth)
            name = self.decode(body.get("name"), depth + 1)
            return pd.Series(data, index=index, name=name, dtype=body.get("dtype"))
        columns = [self.decode(c, depth + 1) for c in body["columns"]]
        data = {i: self._column(col, depth) for i, col in enumerate(body["data"])}
        frame = pd.DataFrame(data, index=index)
        frame.columns = pd.Index(columns) if columns else frame.columns
        for i, dtype in enumerate(body.get("dtypes") or []):
            if str(frame.dtypes.iloc[i]) != dtype:
                frame.isetitem(i, frame.iloc[:, i].astype(dtype))
        return frame
