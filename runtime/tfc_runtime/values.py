"""Values that travel from a job back to the kernel, in formats whose loading runs no code.

A value is written as JSON (numbers, strings, lists, tagged objects) and its arrays as one
``.npz`` file of plain (never object) arrays: :func:`decode` reads them back with
``numpy.load(..., allow_pickle=False)`` and ``json``, so a file crafted by whoever can write the
job's folder or bucket cannot run code on load (pickle is never used). This is the engine of
the ``value`` codec (:mod:`tfc_runtime.codecs.value`), and other codecs encode trees with it;
Keras models travel apart (:mod:`tfc_runtime.codecs.keras`), loaded in Keras' safe mode, and
a container holding one holds its name (``$saved``).

What travels, exactly as it was: ``None``, bools, ints, floats (NaN and infinities kept),
complex numbers, strings, bytes and bytearrays, lists, tuples, sets, frozensets, dicts (any
keys of these kinds), ``datetime``, ``date``, ``time`` (time zones kept), ``timedelta``,
``Decimal``, ``pathlib`` paths, NumPy arrays and scalars (not of objects), TensorFlow tensors
and variables (as NumPy arrays), ragged and sparse tensors (as themselves), pandas objects of
every common dtype (:mod:`tfc_runtime.frames`). An object held twice (two names bound to one
list, one array in two dicts) comes back as one object (``$ref``; :meth:`Encoder.expect`); a
container that holds itself is refused. Anything else raises :class:`Unsupported`, naming what
it is (``tf.data.Dataset``).

Standard library only; NumPy and pandas are imported when a value needs them.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import math
import pathlib
import sys
from collections.abc import Callable, Iterable
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


_ATOMS = frozenset({int, float, str, bool, type(None), bytes, complex})
_MUTABLE = (list, dict, set, bytearray)
"""Containers whose identity is kept (with arrays, frames and series): two names bound to one
come back bound to one."""
_PATHS = {c.__name__: c for c in (pathlib.PurePosixPath, pathlib.PureWindowsPath,
                                  pathlib.PosixPath, pathlib.WindowsPath)}  # fmt: skip


def _kept(value: Any) -> bool:
    """Whether ``value``'s identity is kept: a mutable container, array, frame or series."""
    if type(value) in _MUTABLE:
        return True
    name = type(value).__name__
    module = type(value).__module__.partition(".")[0]
    return (module == "numpy" and name == "ndarray") or (
        module == "pandas" and name in ("DataFrame", "Series")
    )


def _inner(value: Any) -> Any:
    """The values a container the encoder walks holds (none for others)."""
    if type(value) in (list, tuple, set, frozenset):
        return value
    if type(value) is dict:
        return [*value.keys(), *value.values()]
    return ()


def refers(value: Any, claims: Callable[[Any], bool]) -> list[Any]:
    """The values inside ``value``'s lists, tuples and dicts (not sets: their order differs
    between tasks) that ``claims`` (the early codecs: Keras models), in order, once each."""
    found: dict[int, Any] = {}
    seen: set[int] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) in (list, tuple, dict):
            stack.extend(reversed(list(_inner(node))))
        elif type(node).__module__.partition(".")[0] not in _PLAIN_MODULES and claims(node):
            found.setdefault(id(node), node)
    return list(found.values())


_PLAIN_MODULES = frozenset({"builtins", "numpy", "pandas", "datetime", "decimal", "pathlib"})


class Encoder:
    """Encodes values into JSON-able trees, collecting their arrays (``arrays``) and their
    size in bytes (``size``). ``saved`` names a value an early codec wrote (a Keras model in
    a dict): it is written as that name. Call :meth:`expect` with every value first for one
    object held twice (two names, a list in two dicts) to come back as one."""

    def __init__(self, saved: Callable[[Any], str | None] | None = None) -> None:
        self.arrays: dict[str, Any] = {}
        self.size = 0
        self.saved = saved
        self.depth_limit = DEPTH
        self.shared: set[int] = set()
        self._refs: dict[int, list[Any]] = {}  # id -> [number, tree]
        self._active: set[int] = set()

    def expect(self, values: Iterable[Any]) -> None:
        """Walk the values that will be encoded, to find the objects held more than once."""
        count: dict[int, int] = {}
        stack = list(values)
        while stack:
            node = stack.pop()
            if type(node) in _ATOMS:
                continue
            if not _kept(node) and type(node) not in (tuple, frozenset):
                continue  # a tuple is walked (and kept once when held twice)
            count[id(node)] = count.get(id(node), 0) + 1
            if count[id(node)] == 1:
                stack.extend(_inner(node))
        self.shared |= {i for i, n in count.items() if n > 1}

    def array(self, array: Any, what: str) -> dict[str, Any]:
        """``{"$array": key}`` of a NumPy array that holds no Python objects."""
        if array.dtype.hasobject:
            raise Unsupported(f"{what} of Python objects")
        key = f"a{len(self.arrays)}"
        self.arrays[key] = array
        self.size += int(array.nbytes)
        return {"$array": key}

    def encode(self, value: Any, depth: int = 0) -> Any:
        """The JSON-able tree of ``value``; :class:`Unsupported` when it cannot travel."""
        if type(value) in _ATOMS:  # the most common: no identity to keep
            return self._leaf(value, depth)
        if depth > DEPTH:
            raise Unsupported("nested too deep (or contains itself)")
        if id(value) in self._active:
            raise Unsupported(f"{kind(value)} that contains itself")
        if id(value) not in self.shared:
            return self._walk(value, depth)
        ref = self._refs.get(id(value))
        if ref is None:
            ref = self._refs[id(value)] = [len(self._refs), self._walk(value, depth)]
        return {"$ref": ref}

    def _walk(self, value: Any, depth: int) -> Any:
        if type(value) in (list, tuple, set, frozenset, dict):
            self._active.add(id(value))
            try:
                return self._container(value, depth)
            finally:
                self._active.discard(id(value))
        return self._leaf(value, depth)

    def _container(self, value: Any, depth: int) -> Any:
        if type(value) is dict:
            return {
                "$dict": [[self.encode(k, depth + 1), self.encode(v, depth + 1)]
                          for k, v in value.items()]
            }  # fmt: skip
        items = [self.encode(v, depth + 1) for v in value]
        if isinstance(value, list):
            return items
        return {"$" + type(value).__name__: items}

    def _leaf(self, value: Any, depth: int) -> Any:
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
            data = base64.b64encode(bytes(value)).decode("ascii")
            return {"$bytearray" if type(value) is bytearray else "$bytes": data}
        stdlib = _stdlib(value)
        if stdlib is not None:
            self.size += 16
            return stdlib
        return self._library(value, depth)

    def _library(self, value: Any, depth: int) -> Any:
        module = type(value).__module__.partition(".")[0]
        if module == "numpy":
            import numpy as np

            if isinstance(value, np.ndarray):
                return self.array(value, "an array")
            if isinstance(value, np.generic):
                return {"$scalar": self.array(np.asarray(value), "an array")["$array"]}
        if module == "tensorflow" and hasattr(value, "dtype"):
            return self._tensor(value)
        if module == "pandas":
            from tfc_runtime import frames

            return frames.encode(self, value, depth)
        name = self.saved(value) if self.saved is not None else None
        if name is not None:
            return {"$saved": name}
        raise Unsupported(kind(value))

    def _tensor(self, value: Any) -> Any:
        import numpy as np

        name = type(value).__name__
        if "SyncOnRead" in name or "PerReplica" in name or "Aggregating" in name:
            # reading it may start a reduction the other tasks never join
            raise Unsupported(f"{name}, a distributed value: read it in the cell")
        if name == "RaggedTensor":
            splits = [self.array(np.asarray(s), "a tensor") for s in value.nested_row_splits]
            return {"$ragged": [self._tensor(value.flat_values), splits]}
        if name == "SparseTensor":
            parts = (value.indices, value.values, value.dense_shape)
            return {"$sparse": [self.array(np.asarray(p), "a tensor") for p in parts]}
        if not hasattr(value, "numpy"):
            raise Unsupported(kind(value))
        try:
            array = value.numpy()
        except Exception as exc:  # a symbolic tensor, a variable on another task
            raise Unsupported(f"{kind(value)} with no value here ({exc})") from None
        return self.array(np.asarray(array), "a tensor")


def _stdlib(value: Any) -> Any:
    """The tree of a date, time, ``Decimal`` or path (None for other values)."""
    from tfc_runtime import frames

    cls = type(value)
    if cls is datetime.datetime:
        naive = value.replace(tzinfo=None, fold=0).isoformat()
        return {"$datetime": [naive, frames.tz_tree(value.tzinfo), value.fold]}
    if cls is datetime.date:
        return {"$date": value.isoformat()}
    if cls is datetime.time:
        naive = value.replace(tzinfo=None, fold=0).isoformat()
        return {"$time": [naive, frames.tz_tree(value.tzinfo), value.fold]}
    if cls is datetime.timedelta:
        return {"$timedelta": [value.days, value.seconds, value.microseconds]}
    if cls is decimal.Decimal:
        return {"$decimal": str(value)}
    if _PATHS.get(cls.__name__) is cls:
        return {"$path": [cls.__name__, str(value)]}
    return None


class Decoder:
    """Decodes a tree :class:`Encoder` made, with its arrays (a mapping: the ``.npz`` file).
    ``loaded`` gives the value an early codec read for a name (a Keras model in a dict)."""

    def __init__(self, arrays: Any, loaded: Callable[[str], Any] | None = None) -> None:
        self.arrays = arrays
        self.loaded = loaded
        self._refs: dict[int, Any] = {}

    def array(self, key: Any) -> Any:
        """The array of ``key`` in the job's arrays; ValueError when it has none."""
        if not isinstance(key, str) or key not in self.arrays:
            raise ValueError(f"no array {key!r} in the job's arrays")
        return self.arrays[key]

    def decode(self, tree: Any, depth: int = 0) -> Any:
        """The value of ``tree``; ValueError for a tree no :class:`Encoder` makes."""
        if depth > DEPTH + 8:
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
        if tag == "$ref":
            number, inner = body
            if not isinstance(number, int):
                raise ValueError("not a value the job writes: $ref")
            if number not in self._refs:  # the first name read that holds it
                self._refs[number] = self.decode(inner, depth + 1)
            return self._refs[number]
        if tag in ("$tuple", "$set", "$frozenset"):
            items = [self.decode(v, depth + 1) for v in body]
            return {"$tuple": tuple, "$set": set, "$frozenset": frozenset}[tag](items)
        if tag == "$dict":
            return {self.decode(k, depth + 1): self.decode(v, depth + 1) for k, v in body}
        if tag == "$list":
            return [self.decode(v, depth + 1) for v in body]
        if tag == "$array":
            return self.array(body)
        if tag == "$scalar":
            return self.array(body)[()]
        if tag in _PANDAS:
            from tfc_runtime import frames

            return frames.decode(self, tag, body, depth)
        return _scalar(self, tag, body)


_PANDAS = frozenset({
    "$index", "$series", "$frame", "$pdarray", "$nat", "$na", "$timestamp", "$timedelta64",
    "$period", "$categories", "$dtype",
})  # fmt: skip


def _scalar(dec: Decoder, tag: str, body: Any) -> Any:
    from tfc_runtime import frames

    if tag == "$int":
        return int(body)
    if tag == "$float":
        return float(body)
    if tag == "$complex":
        return complex(float(body[0]), float(body[1]))
    if tag in ("$bytes", "$bytearray"):
        data = base64.b64decode(body)
        return bytearray(data) if tag == "$bytearray" else data
    if tag in ("$datetime", "$time"):
        naive, tz, fold = body
        cls = datetime.datetime if tag == "$datetime" else datetime.time
        return cls.fromisoformat(str(naive)).replace(tzinfo=frames.tz_of(tz), fold=int(fold))
    if tag == "$date":
        return datetime.date.fromisoformat(str(body))
    if tag == "$timedelta":
        days, seconds, micro = (int(v) for v in body)
        return datetime.timedelta(days=days, seconds=seconds, microseconds=micro)
    if tag == "$decimal":
        return decimal.Decimal(str(body))
    if tag == "$path" and body[0] in _PATHS:
        path = _PATHS[body[0]]
        if not path.__name__.startswith("Pure") and path is not type(pathlib.Path()):
            path = _PATHS["Pure" + path.__name__]  # another system's path: pure here
        return path(str(body[1]))
    return _tensor(dec, tag, body)


def _tensor(dec: Decoder, tag: str, body: Any) -> Any:
    if tag == "$saved":
        value = dec.loaded(str(body)) if dec.loaded is not None else None
        if value is None:
            raise ValueError(f"it holds a Keras model that did not load here ({str(body)[:60]})")
        return value
    if tag not in ("$ragged", "$sparse"):
        raise ValueError(f"not a value the job writes: {tag}")
    try:
        import tensorflow as tf
    except ImportError:
        raise ValueError(
            f"a TensorFlow {tag[1:]} tensor: TensorFlow is not installed here"
        ) from None
    if tag == "$sparse":
        indices, values, shape = (dec.array(part["$array"]) for part in body)
        return tf.sparse.SparseTensor(indices, values, shape)
    flat, splits = body
    nested = [dec.array(s["$array"]) for s in splits]
    return tf.RaggedTensor.from_nested_row_splits(dec.array(flat["$array"]), nested)
