"""pandas objects as JSON trees and plain arrays, exactly as they were (:mod:`tfc_runtime.values`).

Each column (and index) is written by its dtype, so it comes back with that dtype: a categorical
as its codes, categories (in their order) and ``ordered``; a time-zone-aware column as its UTC
times and its zone; a nullable column (``Int64``, ``Float64``, ``boolean``) as its data and its
mask; a string column (``string``, ``str``) as its strings and how it says missing; a period or
interval column as its ordinals or bounds; a column of Python objects as each object's own tree.
A pandas array on its own (``pd.Categorical``, ``pd.array(...)``) is written as such a column,
and comes back as the same kind of array. A ``MultiIndex`` (rows or columns) is its levels and
codes; a ``DatetimeIndex`` or ``TimedeltaIndex`` keeps its ``freq``. pandas' ``Timestamp``,
``Timedelta``, ``NaT`` and ``NA`` travel too. Reading builds each object from plain arrays and
strings: nothing runs the job's code.
"""

from __future__ import annotations

import datetime
import math
from typing import Any, Protocol

from tfc_runtime.codecs import Unsupported


class Encoder(Protocol):
    """What writes the trees (:class:`tfc_runtime.values.Encoder`)."""

    depth_limit: int

    def encode(self, value: Any, depth: int = 0) -> Any:
        """The tree of any value."""
        ...

    def array(self, array: Any, what: str) -> dict[str, Any]:
        """``{"$array": key}`` of a plain NumPy array."""
        ...


class Decoder(Protocol):
    """What reads them (:class:`tfc_runtime.values.Decoder`)."""

    def decode(self, tree: Any, depth: int = 0) -> Any:
        """The value of any tree."""
        ...

    def array(self, key: Any) -> Any:
        """The array of ``key``."""
        ...


UNITS = frozenset({"s", "ms", "us", "ns"})
"""The time units a ``Timestamp`` or ``Timedelta`` comes back in."""


# -- time zones ------------------------------------------------------------------------------


def tz_tree(tz: Any) -> Any:
    """A time zone as JSON: ``{"zone": "Europe/Paris"}`` (zoneinfo), ``{"pytz": ...}``, or a
    fixed offset ``{"offset": [days, seconds, microseconds], "name": ...}``; None for none."""
    if tz is None:
        return None
    if isinstance(tz, datetime.timezone):
        offset = tz.utcoffset(None)
        name = tz.tzname(None)
        plain = datetime.timezone(offset).tzname(None)
        return {"offset": [offset.days, offset.seconds, offset.microseconds],
                "name": None if name == plain else name}  # fmt: skip
    key = getattr(tz, "key", None)
    if type(tz).__module__ == "zoneinfo" and isinstance(key, str):
        return {"zone": key}
    zone = getattr(tz, "zone", None)
    if type(tz).__module__.partition(".")[0] == "pytz" and isinstance(zone, str):
        return {"pytz": zone}
    raise Unsupported(
        f"time zone {type(tz).__name__} ({tz}): use a zoneinfo zone (tz_convert('Europe/Paris'))"
    )


def tz_of(tree: Any) -> Any:
    """The time zone of :func:`tz_tree`'s JSON; ValueError for any other."""
    if tree is None:
        return None
    if not isinstance(tree, dict):
        raise ValueError("not a time zone the job writes")
    if "zone" in tree:
        import zoneinfo

        return zoneinfo.ZoneInfo(str(tree["zone"]))  # a key, never a path: checked by zoneinfo
    if "pytz" in tree:
        try:
            import pytz
        except ImportError:
            raise ValueError(f"time zone {tree['pytz']!r} of pytz, not installed here") from None
        return pytz.timezone(str(tree["pytz"]))
    days, seconds, micro = (int(v) for v in tree["offset"])
    offset = datetime.timedelta(days=days, seconds=seconds, microseconds=micro)
    name = tree.get("name")
    return datetime.timezone(offset, str(name)) if name is not None else datetime.timezone(offset)


# -- writing ---------------------------------------------------------------------------------


def encode(enc: Encoder, value: Any, depth: int) -> Any:
    """The tree of a pandas object (frame, series, index, or scalar)."""
    import pandas as pd

    if isinstance(value, pd.Index):
        return {"$index": _index(enc, value, depth)}
    if isinstance(value, pd.Series):
        tree = {
            "name": enc.encode(value.name, depth + 1),
            "data": column(enc, value.array, depth),
            "index": _index(enc, value.index, depth),
        }
        return {"$series": _attrs(enc, value, tree, depth)}
    if isinstance(value, pd.DataFrame):
        tree = {
            "columns": _index(enc, value.columns, depth),
            "data": [column(enc, value.iloc[:, i].array, depth) for i in range(value.shape[1])],
            "index": _index(enc, value.index, depth),
        }
        return {"$frame": _attrs(enc, value, tree, depth)}
    if isinstance(value, pd.api.extensions.ExtensionArray):  # pd.Categorical, pd.array(...)
        return {"$pdarray": column(enc, value, depth)}
    return _scalar(enc, value)


def _attrs(enc: Encoder, value: Any, tree: dict[str, Any], depth: int) -> dict[str, Any]:
    if value.attrs:
        tree["attrs"] = enc.encode(dict(value.attrs), depth + 1)
    return tree


def _scalar(enc: Encoder, value: Any) -> Any:
    import numpy as np
    import pandas as pd

    if value is pd.NaT:
        return {"$nat": None}
    if value is pd.NA:
        return {"$na": None}
    if isinstance(value, pd.Timestamp):
        utc = value.tz_convert("UTC").tz_localize(None) if value.tz is not None else value
        stamp = utc.to_datetime64()
        return {"$timestamp": [int(stamp.astype(np.int64)), np.datetime_data(stamp.dtype)[0],
                               tz_tree(value.tz)]}  # fmt: skip
    if isinstance(value, pd.Timedelta):
        delta = value.to_timedelta64()
        return {"$timedelta64": [int(delta.astype(np.int64)), np.datetime_data(delta.dtype)[0]]}
    if isinstance(value, pd.Period):
        return {"$period": [int(value.ordinal), value.freqstr]}
    if isinstance(value, pd.CategoricalDtype):
        return {"$categories": [_index(enc, value.categories, 0), bool(value.ordered)]}
    if isinstance(value, pd.api.extensions.ExtensionDtype):
        if pd.api.types.pandas_dtype(str(value)) != value:
            raise Unsupported(f"{type(value).__name__} {value} (not made again from its name)")
        return {"$dtype": str(value)}
    raise Unsupported(type(value).__name__)


def column(enc: Encoder, values: Any, depth: int) -> Any:
    """One column's (or index's) array, by its dtype (see the module's docstring)."""
    import numpy as np
    import pandas as pd

    dtype = values.dtype
    if type(values) is pd.arrays.NumpyExtensionArray or (
        isinstance(dtype, np.dtype) and not isinstance(values, np.ndarray)
    ):
        values = np.asarray(values)  # a plain (or naive time) column: its NumPy array
    if isinstance(values, np.ndarray):
        if not values.dtype.hasobject:
            return enc.array(values, "a column")
        try:
            return {"$objects": [enc.encode(v, depth + 1) for v in values.tolist()]}
        except Unsupported as exc:
            raise Unsupported(f"pandas column of Python objects, one a {exc}") from None
    if isinstance(dtype, pd.CategoricalDtype):
        return {"$categorical": {
            "codes": enc.array(np.asarray(values.codes), "a column"),
            "categories": _index(enc, dtype.categories, depth),
            "ordered": bool(dtype.ordered),
        }}  # fmt: skip
    if isinstance(dtype, pd.DatetimeTZDtype):
        utc = np.asarray(values.tz_convert("UTC").tz_localize(None))
        return {"$zoned": {"utc": enc.array(utc, "a column"), "tz": tz_tree(dtype.tz)}}
    if isinstance(
        values, (pd.arrays.IntegerArray, pd.arrays.FloatingArray, pd.arrays.BooleanArray)
    ):
        data = values.to_numpy(dtype=dtype.numpy_dtype, na_value=False)
        mask = np.asarray(values.isna(), dtype=bool)
        return {"$masked": [enc.array(data, "a column"), enc.array(mask, "a column")]}
    if isinstance(dtype, pd.StringDtype):
        na = dtype.na_value
        strings = [None if v is na or (v is not None and not isinstance(v, str)) else v
                   for v in values.to_numpy(dtype=object)]  # fmt: skip
        missing = "NA" if na is pd.NA else "nan"
        return {"$strings": [strings, str(dtype.storage), missing]}
    if isinstance(dtype, pd.PeriodDtype):
        return {"$periods": [enc.array(np.asarray(values.asi8), "a column"), values.freqstr]}
    if isinstance(dtype, pd.IntervalDtype):
        left, right = (column(enc, side, depth) for side in (values.left, values.right))
        return {"$intervals": [left, right, str(values.closed)]}
    plain = np.asarray(values)  # another kind: its values, and its dtype by name
    if plain.dtype.hasobject:
        raise Unsupported(f"pandas column of dtype {dtype} (Python objects)")
    return {"$astype": [enc.array(plain, "a column"), str(dtype)]}


def _freq(index: Any) -> str | None:
    from pandas.tseries.frequencies import to_offset

    freq = getattr(index, "freq", None)
    if freq is None or index.dtype.kind not in "mM":
        return None
    name = freq.freqstr
    if to_offset(name) != freq:
        raise Unsupported(
            f"{type(index).__name__} whose freq ({freq!r}) has no name: set its .freq = None"
        )
    return str(name)


def _index(enc: Encoder, index: Any, depth: int) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    if depth > enc.depth_limit:
        raise Unsupported("nested too deep")
    if isinstance(index, pd.MultiIndex):
        return {
            "levels": [_index(enc, level, depth + 1) for level in index.levels],
            "codes": [enc.array(np.asarray(c), "an index") for c in index.codes],
            "names": [enc.encode(n, depth + 1) for n in index.names],
        }
    name = enc.encode(index.name, depth + 1)
    if type(index) is pd.RangeIndex:
        return {"range": [index.start, index.stop, index.step], "name": name}
    tree = {"values": column(enc, index.array, depth + 1), "dtype": str(index.dtype), "name": name}
    freq = _freq(index)
    if freq is not None:
        tree["freq"] = freq
    return tree


# -- reading ---------------------------------------------------------------------------------


def decode(dec: Decoder, tag: str, body: Any, depth: int) -> Any:
    """The pandas object of a tagged tree :func:`encode` made (ValueError for any other)."""
    import numpy as np
    import pandas as pd

    if tag == "$index":
        return index_of(dec, body, depth)
    if tag == "$series":
        data = column_of(dec, body["data"], depth)
        name = dec.decode(body.get("name"), depth + 1)
        series = pd.Series(data, index=index_of(dec, body["index"], depth), name=name,
                           dtype=_object(data), copy=False)  # fmt: skip
        if isinstance(body.get("dtype"), str) and str(series.dtype) != body["dtype"]:
            series = series.astype(body["dtype"])  # a series written by an earlier version
        return _set_attrs(dec, series, body, depth)
    if tag == "$frame":
        return _set_attrs(dec, _frame(dec, body, depth), body, depth)
    if tag == "$pdarray":
        array = column_of(dec, body, depth)
        if isinstance(array, list):
            raise ValueError("not a pandas array the job writes")
        # a plain column's NumPy array: the pandas array of it (NumpyExtensionArray,
        # DatetimeArray, TimedeltaArray), as pd.array of that dtype makes it
        return pd.array(array, dtype=array.dtype) if isinstance(array, np.ndarray) else array
    if tag == "$categories":
        categories, ordered = body
        return pd.CategoricalDtype(index_of(dec, categories, depth), ordered=bool(ordered))
    return _scalar_of(tag, body)


def _set_attrs(dec: Decoder, value: Any, body: dict[str, Any], depth: int) -> Any:
    if "attrs" in body:
        attrs = dec.decode(body["attrs"], depth + 1)
        if not isinstance(attrs, dict):
            raise ValueError("not a value the job writes: attrs")
        value.attrs.update(attrs)
    return value


def _frame(dec: Decoder, body: dict[str, Any], depth: int) -> Any:
    import pandas as pd

    index = index_of(dec, body["index"], depth)
    data = [column_of(dec, col, depth) for col in body["data"]]
    series = {
        i: pd.Series(d, index=index, dtype=_object(d), copy=False) for i, d in enumerate(data)
    }  # the same index for all: nothing is aligned
    frame = pd.DataFrame(series) if series else pd.DataFrame(index=index)
    columns = body["columns"]
    if isinstance(columns, dict):
        frame.columns = index_of(dec, columns, depth)
        return frame
    labels = [dec.decode(c, depth + 1) for c in columns]  # a frame of an earlier version
    frame.columns = pd.Index(labels) if labels else frame.columns
    for i, dtype in enumerate(body.get("dtypes") or []):
        if str(frame.dtypes.iloc[i]) != dtype:
            frame.isetitem(i, frame.iloc[:, i].astype(dtype))
    return frame


def _scalar_of(tag: str, body: Any) -> Any:
    import numpy as np
    import pandas as pd

    if tag == "$nat":
        return pd.NaT
    if tag == "$na":
        return pd.NA
    if tag == "$timestamp":
        count, unit, tz = body
        stamp = pd.Timestamp(np.datetime64(int(count), _unit(unit)))
        return stamp.tz_localize("UTC").tz_convert(tz_of(tz)) if tz is not None else stamp
    if tag == "$timedelta64":
        count, unit = body
        return pd.Timedelta(np.timedelta64(int(count), _unit(unit)))
    if tag == "$period":
        ordinal, freq = body
        return pd.Period(ordinal=int(ordinal), freq=str(freq))
    if tag == "$dtype":
        return pd.api.types.pandas_dtype(str(body))  # parsed from its name: no code runs
    raise ValueError(f"not a value the job writes: {tag}")


def _object(data: Any) -> Any:
    """``object`` for an array of Python objects (pandas would guess a dtype), else None."""
    import numpy as np

    return object if isinstance(data, np.ndarray) and data.dtype.hasobject else None


def _unit(unit: Any) -> Any:
    if unit not in UNITS:
        raise ValueError(f"not a time unit: {str(unit)[:20]!r}")
    return str(unit)


def column_of(dec: Decoder, tree: Any, depth: int) -> Any:
    """The array of a column's tree: a NumPy array or a pandas extension array."""
    import numpy as np
    import pandas as pd

    if not isinstance(tree, dict) or len(tree) != 1:
        raise ValueError("not a column the job writes")
    (tag, body), = tree.items()  # fmt: skip
    if tag == "$objects":
        items = [dec.decode(v, depth + 2) for v in body]
        array = np.empty(len(items), dtype=object)
        for i, item in enumerate(items):  # one by one: a list item stays one object
            array[i] = item
        return array
    if tag == "$categorical":
        categories = index_of(dec, body["categories"], depth + 1)
        codes = dec.array(body["codes"]["$array"])
        dtype = pd.CategoricalDtype(categories, ordered=bool(body["ordered"]))
        return pd.Categorical.from_codes(codes, dtype=dtype)
    if tag == "$zoned":
        utc = pd.DatetimeIndex(dec.array(body["utc"]["$array"])).tz_localize("UTC")
        return utc.tz_convert(tz_of(body["tz"])).array
    if tag == "$masked":
        data, mask = (dec.array(part["$array"]) for part in body)
        kinds = {"i": pd.arrays.IntegerArray, "u": pd.arrays.IntegerArray,
                 "f": pd.arrays.FloatingArray, "b": pd.arrays.BooleanArray}  # fmt: skip
        if data.dtype.kind not in kinds or mask.dtype != bool:
            raise ValueError("not a nullable column the job writes")
        return kinds[data.dtype.kind](data, mask)
    if tag == "$strings":
        strings, storage, missing = body
        if not all(s is None or isinstance(s, str) for s in strings):
            raise ValueError("not a string column the job writes")
        return pd.array(strings, dtype=_string_dtype(storage, missing))
    return _other_column(dec, tag, body, depth)


def _other_column(dec: Decoder, tag: str, body: Any, depth: int) -> Any:
    import pandas as pd

    if tag == "$periods":
        ordinals, freq = body
        return pd.PeriodIndex.from_ordinals(dec.array(ordinals["$array"]), freq=str(freq)).array
    if tag == "$intervals":
        left, right, closed = body
        sides = [pd.Index(column_of(dec, side, depth + 1)) for side in (left, right)]
        return pd.arrays.IntervalArray.from_arrays(*sides, closed=str(closed))
    if tag == "$astype":
        plain, dtype = body
        return pd.array(dec.array(plain["$array"])).astype(str(dtype))
    value = dec.decode({tag: body}, depth + 1)  # a plain array (or a list: an earlier version)
    if isinstance(value, list):
        return value
    if not hasattr(value, "dtype"):
        raise ValueError("not a column the job writes")
    return value


def _string_dtype(storage: Any, missing: Any) -> Any:
    import pandas as pd

    na = pd.NA if missing == "NA" else math.nan
    if storage == "pyarrow":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            storage = "python"  # the strings are the same; pyarrow holds them in the job only
    return pd.StringDtype("python" if storage != "pyarrow" else "pyarrow", na_value=na)


def index_of(dec: Decoder, body: Any, depth: int) -> Any:
    """The index of an index tree."""
    import pandas as pd

    if not isinstance(body, dict):
        raise ValueError("not an index the job writes")
    if "levels" in body:
        levels = [index_of(dec, level, depth + 1) for level in body["levels"]]
        codes = [dec.array(c["$array"]) for c in body["codes"]]
        names = [dec.decode(n, depth + 1) for n in body["names"]]
        return pd.MultiIndex(levels=levels, codes=codes, names=names, verify_integrity=True)
    name = dec.decode(body.get("name"), depth + 1)
    if "range" in body:
        start, stop, step = (int(v) for v in body["range"])
        return pd.RangeIndex(start, stop, step, name=name)
    data = column_of(dec, body["values"], depth + 1)
    if isinstance(data, list):  # an index written by an earlier version
        return pd.Index(data, dtype=body.get("dtype"), name=name)
    index = pd.Index(data, name=name, dtype=_object(data), copy=False)
    if "freq" in body:
        if not isinstance(index, (pd.DatetimeIndex, pd.TimedeltaIndex)):
            raise ValueError("a freq on an index of no times")
        index = type(index)(index, freq=str(body["freq"]))
    elif isinstance(body.get("dtype"), str) and str(index.dtype) != body["dtype"]:
        index = index.astype(body["dtype"])  # an index written by an earlier version
    return index
