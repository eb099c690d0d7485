"""Values come back exactly as they were (issue 49): generated frames, series, indexes and nested
containers go through the job's own writer (``giveback.save_names``: JSON and a pickle-free
``.npz`` in a real job folder) and the kernel's own reader (``bring_back``, through the border),
and come back equal with their dtypes, categories and their order, time zones, ``freq``,
masks, types, and which names hold one object."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import pathlib
import sys
import tempfile
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobutil import names_round_trip
from tfc_runtime import giveback

from tfc_jupyter.returns.border import KernelCell
from tfc_jupyter.returns.returned import bring_back

# -- the round trip: the job's writer, files, the kernel's reader ---------------------------


def through_files(names: dict[str, Any], out: Any = None) -> tuple[dict[str, Any], Any]:
    """``names`` as a run cell binds them, written by the job into a job folder and read back
    by the kernel: the kernel's namespace, and ``Out[]``."""
    namespace, got = names_round_trip(names, out=out)
    assert not got.stayed and not got.problems and sorted(got.names) == sorted(names), got
    return namespace, got.out


def back(value: Any) -> Any:
    """One value through the files."""
    return through_files({"x": value})[0]["x"]


# -- what "exactly" means --------------------------------------------------------------------


def same_index(a: pd.Index, b: pd.Index) -> None:
    pd.testing.assert_index_equal(a, b, exact=True, check_exact=True, check_categorical=True)
    assert type(a) is type(b) and a.names == b.names
    assert str(a.dtype) == str(b.dtype)
    if isinstance(a, pd.MultiIndex):
        for la, lb in zip(a.levels, b.levels, strict=True):
            same_index(la, lb)
        for ca, cb in zip(a.codes, b.codes, strict=True):
            np.testing.assert_array_equal(ca, cb)
    if isinstance(a, (pd.DatetimeIndex, pd.TimedeltaIndex)):
        assert a.freq == b.freq
    if isinstance(a.dtype, pd.CategoricalDtype):
        same_categories(a.array, b.array)


def same_categories(a: Any, b: Any) -> None:
    """Same categories in the same order, same ``ordered``, same codes."""
    assert list(a.categories) == list(b.categories)
    assert a.ordered == b.ordered
    np.testing.assert_array_equal(a.codes, b.codes)


def same_column(a: pd.Series, b: pd.Series) -> None:
    assert a.dtype == b.dtype and str(a.dtype) == str(b.dtype)
    if isinstance(a.dtype, pd.CategoricalDtype):
        same_categories(a.array, b.array)
    if a.dtype == object:  # each object of its own type
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            same(x, y)
    if isinstance(a.array, pd.arrays.FloatingArray):  # NA and NaN told apart
        np.testing.assert_array_equal(np.asarray(a.isna()), np.asarray(b.isna()))
        fa, fb = (s.to_numpy(dtype="float64", na_value=0.0) for s in (a, b))
        np.testing.assert_array_equal(np.isnan(fa), np.isnan(fb))


def same_frame(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(
        a, b, check_exact=True, check_freq=True, check_flags=True, check_column_type=True,
        check_index_type=True, check_categorical=True, check_like=False,
    )  # fmt: skip
    same_index(a.index, b.index)
    same_index(a.columns, b.columns)
    for i in range(a.shape[1]):
        same_column(a.iloc[:, i], b.iloc[:, i])
    assert a.attrs == b.attrs


def same(a: Any, b: Any) -> None:
    """``b`` is ``a`` again: same type all the way down, equal (NaN equal to NaN)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, pd.DataFrame):
        same_frame(a, b)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, check_exact=True, check_freq=True)
        same_index(a.index, b.index)
        same_column(a, b)
    elif isinstance(a, pd.Index):
        same_index(a, b)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same(a[k], b[k])
    elif isinstance(a, float) and a != a:
        assert b != b
    elif isinstance(a, pd.CategoricalDtype):
        assert a == b and list(a.categories) == list(b.categories) and a.ordered == b.ordered
        same_index(a.categories, b.categories)
    elif isinstance(a, decimal.Decimal):
        assert str(a) == str(b)
    elif isinstance(a, (datetime.datetime, datetime.time)):
        assert a == b and a.tzinfo == b.tzinfo and a.fold == b.fold
        assert (a.tzinfo is None) == (b.tzinfo is None)
    else:
        assert a == b


# -- generated values ------------------------------------------------------------------------

ZONES = st.one_of(
    st.sampled_from(["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata"]).map(ZoneInfo),
    st.integers(-14 * 60, 14 * 60).map(lambda m: datetime.timezone(datetime.timedelta(minutes=m))),
    st.just(datetime.timezone.utc),
)
UNITS = st.sampled_from(["s", "ms", "us", "ns"])
LABELS = st.text(max_size=6)
SECONDS = st.integers(-(2**32), 2**33)  # 1834 to 2242: every unit holds them


@st.composite
def column(draw: st.DrawFn, n: int) -> Any:
    """Data of one column of ``n`` rows, of a generated dtype."""
    kind = draw(st.sampled_from([
        "int", "float", "bool", "datetime", "zoned", "timedelta", "categorical", "Int",
        "Float", "boolean", "string", "str", "object", "period",
    ]))  # fmt: skip
    sized = st.lists
    if kind == "int":
        dtype = draw(st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint64"]))
        info = np.iinfo(dtype)
        return np.array(draw(sized(st.integers(info.min, info.max), min_size=n, max_size=n)),
                        dtype=dtype)  # fmt: skip
    if kind == "float":
        dtype = draw(st.sampled_from(["float32", "float64"]))
        width = 32 if dtype == "float32" else 64
        floats = st.floats(width=width)
        return np.array(draw(sized(floats, min_size=n, max_size=n)), dtype=dtype)
    if kind == "bool":
        return np.array(draw(sized(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if kind in ("datetime", "zoned", "timedelta"):
        unit = draw(UNITS)
        seconds = draw(sized(st.one_of(SECONDS, st.none()), min_size=n, max_size=n))
        raw = np.array([s if s is not None else np.iinfo(np.int64).min for s in seconds])
        if kind == "timedelta":
            return raw.view("m8[s]").astype(f"m8[{unit}]")
        times = pd.DatetimeIndex(raw.view("M8[s]").astype(f"M8[{unit}]"))
        return (
            times.tz_localize("UTC").tz_convert(draw(ZONES)).array
            if kind == "zoned"
            else (np.asarray(times))
        )
    if kind == "categorical":
        labels = draw(st.one_of(
            st.lists(LABELS, unique=True, max_size=5),
            st.lists(st.integers(-50, 50), unique=True, max_size=5),
        ))  # fmt: skip
        codes = draw(sized(st.integers(-1, len(labels) - 1), min_size=n, max_size=n))
        dtype = pd.CategoricalDtype(labels, ordered=draw(st.booleans()))
        return pd.Categorical.from_codes(codes, dtype=dtype)
    return draw(_other_column(kind, n))


def _other_column(kind: str, n: int) -> st.SearchStrategy[Any]:
    sized = {"min_size": n, "max_size": n}
    if kind == "Int":
        dtype = st.sampled_from(["Int8", "Int64", "UInt16"])
        return dtype.flatmap(lambda d: st.lists(
            st.one_of(st.none(), st.integers(0, 100)), **sized
        ).map(lambda items: pd.array(items, dtype=d)))  # fmt: skip
    if kind == "Float":
        values = st.lists(st.one_of(st.none(), st.floats(width=32)), **sized)
        nan_not_na = st.lists(st.booleans(), **sized)
        return st.tuples(st.sampled_from(["Float32", "Float64"]), values, nan_not_na).map(
            lambda t: _floating(*t)
        )
    if kind == "boolean":
        return st.lists(st.one_of(st.none(), st.booleans()), **sized).map(
            lambda items: pd.array(items, dtype="boolean")
        )
    if kind in ("string", "str"):
        dtype = (
            pd.StringDtype("python")
            if kind == "string"
            else pd.StringDtype("python", na_value=np.nan)
        )
        return st.lists(st.one_of(st.none(), st.text(max_size=5)), **sized).map(
            lambda items: pd.array(items, dtype=dtype)
        )
    if kind == "period":
        return st.tuples(
            st.sampled_from(["D", "M", "Y", "h"]), st.lists(st.integers(-1000, 1000), **sized)
        ).map(lambda t: pd.PeriodIndex.from_ordinals(t[1], freq=t[0]).array)
    leaves = st.one_of(st.none(), st.integers(), st.text(max_size=4), st.booleans(),
                       st.decimals(allow_nan=False), st.dates())  # fmt: skip
    return st.lists(leaves, **sized).map(_objects)


def _floating(dtype: str, values: list[float | None], nan: list[bool]) -> Any:
    """A nullable float array with NA (masked) and NaN (a value) in different places."""
    data = np.array([0.0 if v is None else v for v in values], dtype=dtype.lower())
    data[np.array(nan, dtype=bool) & np.array([v is not None for v in values], dtype=bool)] = np.nan
    mask = np.array([v is None for v in values], dtype=bool)
    cls = pd.arrays.FloatingArray
    return cls(data, mask)


def _objects(items: list[Any]) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        array[i] = item
    return array


@st.composite
def index(draw: st.DrawFn, n: int) -> pd.Index:
    """A row (or column) index of ``n`` labels, of a generated kind."""
    kind = draw(st.sampled_from(["range", "int", "str", "times", "multi", "categorical"]))
    name = draw(st.one_of(st.none(), LABELS))
    if kind == "range":
        start, step = draw(st.integers(-5, 5)), draw(st.integers(1, 3) | st.integers(-3, -1))
        return pd.RangeIndex(start, start + step * n, step, name=name)
    if kind == "int":
        return pd.Index(draw(st.lists(st.integers(), min_size=n, max_size=n)), name=name)
    if kind == "str":
        return pd.Index(draw(st.lists(LABELS, min_size=n, max_size=n)), name=name)
    if kind == "times":
        freq = draw(st.sampled_from([None, "D", "h", "2min", "W-SUN", "ME", "QS-JAN"]))
        tz = draw(st.one_of(st.none(), ZONES))
        start = pd.Timestamp(draw(st.integers(0, 2**31)), unit="s")
        times = pd.date_range(start, periods=n, freq=freq or "D", tz=tz, name=name,
                              unit=draw(UNITS))  # fmt: skip
        return times if freq else pd.DatetimeIndex(times, freq=None)
    if kind == "multi":
        first = draw(st.lists(LABELS, min_size=n, max_size=n))
        second = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
        return pd.MultiIndex.from_arrays([first, second], names=[name, "n"])
    return pd.CategoricalIndex(draw(column(n).filter(_is_categorical)), name=name)


def _is_categorical(data: Any) -> bool:
    return isinstance(getattr(data, "dtype", None), pd.CategoricalDtype)


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    rows, width = draw(st.integers(0, 6)), draw(st.integers(0, 5))
    data = {i: draw(column(rows)) for i in range(width)}
    rows_index = draw(index(rows))
    frame = pd.DataFrame(
        {i: pd.Series(d, index=rows_index, copy=False,
                      dtype=object if isinstance(d, np.ndarray) and d.dtype == object else None)
         for i, d in data.items()}
    ) if data else pd.DataFrame(index=rows_index)  # fmt: skip
    frame.columns = draw(index(width).filter(lambda ix: not isinstance(ix, pd.DatetimeIndex)))
    if draw(st.booleans()):
        frame.attrs["source"] = draw(LABELS)
    return frame


SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                            HealthCheck.filter_too_much],
)  # fmt: skip


@given(frames())
@SETTINGS
def test_generated_frames_come_back_exactly(frame: pd.DataFrame) -> None:
    same(frame, back(frame))


@given(st.integers(0, 6).flatmap(lambda n: st.tuples(column(n), index(n), LABELS)))
@SETTINGS
def test_generated_series_and_indexes_come_back_exactly(drawn: tuple[Any, pd.Index, str]) -> None:
    data, rows, name = drawn
    obj = isinstance(data, np.ndarray) and data.dtype == object
    series = pd.Series(data, index=rows, name=name, dtype=object if obj else None)
    got = through_files({"s": series, "i": rows})[0]
    same(series, got["s"])
    same(rows, got["i"])


@given(st.integers(0, 6).flatmap(column))
@SETTINGS
def test_generated_pandas_arrays_on_their_own_come_back_exactly(data: Any) -> None:
    """``pd.Categorical(...)`` or ``pd.array(...)`` bound to a name: the same kind of array, of
    the same dtype and values (a categorical's categories in their order, ``ordered``)."""
    array = pd.array(data, dtype=data.dtype) if isinstance(data, np.ndarray) else data
    got = back(array)
    assert type(got) is type(array) and got.dtype == array.dtype, (type(got), got.dtype)
    same(pd.Series(array, dtype=array.dtype), pd.Series(got, dtype=got.dtype))


SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.binary(),
    st.complex_numbers(), st.dates(), st.timedeltas(),
    st.datetimes(timezones=st.one_of(st.none(), ZONES), allow_imaginary=False),
    st.times(timezones=st.one_of(st.none(), ZONES)),
    st.decimals(), st.text(max_size=8).map(pathlib.PurePosixPath),
    st.text(max_size=8).map(pathlib.PureWindowsPath),
    st.sampled_from([pd.Int64Dtype(), pd.BooleanDtype(), pd.StringDtype(), pd.PeriodDtype("M"),
                     pd.DatetimeTZDtype("s", "Europe/Paris")]),
    st.tuples(st.lists(LABELS, unique=True, max_size=4), st.booleans()).map(
        lambda t: pd.CategoricalDtype(t[0], ordered=t[1])
    ),
)  # fmt: skip
KEYS = st.one_of(st.text(max_size=4), st.integers(), st.dates(), st.decimals(allow_nan=False))
CONTAINERS = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(KEYS, inner, max_size=4),
        st.frozensets(st.integers() | st.text(max_size=3), max_size=4),
        st.sets(st.tuples(st.integers(), st.dates()), max_size=3),
        frames(),
    ),
    max_leaves=12,
)


@given(CONTAINERS)
@SETTINGS
def test_nested_containers_come_back_with_their_types(value: Any) -> None:
    same(value, back(value))


@given(st.data())
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_objects_held_twice_come_back_as_one(data: st.DataObject) -> None:
    """Names and containers that hold one object (a list, a dict, an array, a frame) in the
    job hold one object in the kernel; distinct equal objects stay distinct."""
    pool = [[1, 2], [1, 2], {"a": 1}, np.arange(3), pd.DataFrame({"c": [1.5]}), {3, 4}]
    holder = st.sampled_from(range(len(pool)))
    layout = data.draw(st.lists(st.lists(holder, max_size=3), min_size=1, max_size=4))
    names = {f"n{i}": [pool[j] for j in slots] for i, slots in enumerate(layout)}
    names.update({f"p{j}": pool[j] for j in data.draw(st.sets(holder, max_size=3))})
    got, _ = through_files(names)
    sent = [(n, k, v) for n, v in names.items() for k, v in _slots(v)]
    came = {(n, k): v for n, v in got.items() for k, v in _slots(v)}
    for n, k, v in sent:
        same(v, came[n, k])
        for n2, k2, v2 in sent:
            assert (v is v2) == (came[n, k] is came[n2, k2]), (n, k, n2, k2)


def _slots(value: Any) -> Iterator[tuple[int, Any]]:
    """A name's value (slot -1) and, for a list, each item."""
    yield -1, value
    if type(value) is list:
        yield from enumerate(value)


def test_out_is_the_object_a_name_holds() -> None:
    shared = [1, 2]
    got, out = through_files({"a": shared, "b": 3}, out=shared)
    assert out is got["a"] and out == [1, 2]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (pd.Series([1], index=pd.DatetimeIndex(["2026-01-01"], freq=pd.offsets.CustomBusinessDay(
            holidays=["2026-01-02"]))), "has no name: set its .freq = None"),
        (datetime.datetime(2026, 1, 1, tzinfo=datetime.tzinfo()), "use a zoneinfo zone"),
    ],
)  # fmt: skip
def test_what_would_not_come_back_exactly_stays_and_says_the_fix(value: Any, said: str) -> None:
    with tempfile.TemporaryDirectory() as job, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TFC_JOB_DIR", job)
        state = SimpleNamespace(run_cell=1, binds=("x", "y"), reads=(), code=(), chief=True,
                                out=None, started=0.0, workdir="")  # fmt: skip
        manifest = giveback.save_names(state, {"x": value, "y": 1})
    assert manifest is not None and said in manifest.stayed["x"] and "y" in manifest.names


# -- containers of Keras models -------------------------------------------------------------


def _model(seed: int, lam: bool = False) -> Any:
    import keras

    keras.utils.set_random_seed(seed)
    layers = [keras.Input((3,)), keras.layers.Dense(2, name=f"d{seed}")]
    if lam:
        layers.append(keras.layers.Lambda(lambda t: t * 2))
    model = keras.Sequential(layers, name=f"m{seed}")
    model.compile(optimizer="adam", loss="mse")
    return model


def test_dicts_and_lists_of_keras_models_come_back_loaded_safely() -> None:
    """Each model in a container is saved by the keras codec and loaded in safe mode; one
    bound to a name too is the same object in the kernel; weights and predictions equal."""
    import keras

    first, second, third = _model(1), _model(2), _model(3)
    names = {"models": {"a": first, "b": second}, "pair": [first, (third, 4)], "model": first}
    got, _ = through_files(names)
    assert set(got["models"]) == {"a", "b"} and type(got["pair"][1]) is tuple
    assert got["models"]["a"] is got["model"] is got["pair"][0]
    assert got["pair"][1][1] == 4
    x = np.arange(6, dtype="float32").reshape(2, 3)
    for sent, came in [(first, got["model"]), (second, got["models"]["b"]),
                       (third, got["pair"][1][0])]:  # fmt: skip
        assert isinstance(came, keras.Model) and came is not sent and came.name == sent.name
        np.testing.assert_array_equal(came.predict(x, verbose=0), sent.predict(x, verbose=0))


def test_a_container_of_a_model_that_runs_code_on_load_stays_in_the_job() -> None:
    with tempfile.TemporaryDirectory() as job, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TFC_JOB_DIR", job)
        state = SimpleNamespace(run_cell=1, binds=("ms", "n"), reads=(), code=(), chief=True,
                                out=None, started=0.0, workdir="")  # fmt: skip
        giveback.save_names(state, {"ms": {"evil": _model(4, lam=True)}, "n": 1})
        namespace: dict[str, Any] = {}
        got = bring_back(job, namespace, kernel_cell=KernelCell.from_source("ms, n = f()"))
    assert "ms" not in namespace and namespace["n"] == 1
    why = got.stayed["ms"]
    assert why.startswith("does not load here: it holds a Keras model that does not load"), why
    assert "Lambda" in why or "safe" in why, why


# -- a real job ------------------------------------------------------------------------------

JOB_CELL = """\
import pandas as pd
levels = pd.CategoricalDtype(["low", "mid", "high"], ordered=True)
frame = pd.DataFrame(
    {"level": pd.Series(["high", "low", None, "mid"], dtype=levels),
     "when": pd.date_range("2026-03-28", periods=4, freq="D", tz="Europe/Paris"),
     "n": pd.array([1, None, 3, 4], dtype="Int64")},
    index=pd.MultiIndex.from_product([["a", "b"], [1, 2]], names=["k", "i"]),
)
steps = [1, 2]
also = steps
"""


@pytest.fixture(scope="module")
def ip() -> Iterator[Any]:
    """The test IPython shell with the extension loaded."""
    from IPython.testing import globalipapp

    globalipapp.start_ipython()
    shell = globalipapp.get_ipython()
    assert shell is not None
    shell.run_line_magic("load_ext", "tfc_jupyter")
    yield shell


@pytest.mark.slow
@pytest.mark.usefixtures("tfc_env")
def test_a_real_job_brings_an_ordered_categorical_frame_and_a_shared_list_back_exactly(
    ip: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat
    from IPython.utils.capture import capture_output

    line = "--strategy none"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(f"%%tfc_run {line}\n{JOB_CELL}")]
    nbformat.write(notebook, tmp_path / "job.ipynb")
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "job.ipynb"))
    with capture_output() as cap:
        result = ip.run_cell(f"%%tfc_run {line}\n{JOB_CELL}")
    assert result.error_in_exec is None, cap.stdout
    assert "Back in the kernel: levels, frame, steps, also." in cap.stdout, cap.stdout
    here: dict[str, Any] = {}
    exec(JOB_CELL, here)  # the same cell, run here: what the job had
    same(here["frame"], ip.user_ns["frame"])
    same(here["levels"], ip.user_ns["levels"])
    assert ip.user_ns["frame"]["level"].dtype == ip.user_ns["levels"]
    assert list(ip.user_ns["frame"]["level"].cat.categories) == ["low", "mid", "high"]
    assert ip.user_ns["frame"]["level"].cat.ordered
    assert ip.user_ns["steps"] is ip.user_ns["also"] and ip.user_ns["steps"] == [1, 2]


def test_ragged_and_sparse_tensors_come_back_as_themselves() -> None:
    import tensorflow as tf

    ragged = tf.ragged.constant([[[1.5, 2.0], []], [[3.0]]], dtype=tf.float32)
    sparse = tf.sparse.SparseTensor([[0, 1], [2, 0]], tf.constant([7, 8], tf.int64), [3, 2])
    got = back({"r": ragged, "s": sparse})
    assert isinstance(got["r"], tf.RaggedTensor) and got["r"].dtype == tf.float32
    assert got["r"].to_list() == ragged.to_list() and got["r"].ragged_rank == 2
    for a, b in zip(got["r"].nested_row_splits, ragged.nested_row_splits, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert isinstance(got["s"], tf.sparse.SparseTensor)
    np.testing.assert_array_equal(tf.sparse.to_dense(got["s"]), tf.sparse.to_dense(sparse))


# -- matplotlib figures ----------------------------------------------------------------------


def test_a_matplotlib_figure_comes_back_as_a_figure_of_the_jobs_drawing() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(3.0, 2.0), dpi=50)
    figure.add_subplot().plot([0, 1, 2], [2, 0, 1], color="red")
    got = back(figure)
    assert isinstance(got, Figure) and got is not figure
    assert list(got.get_size_inches()) == [3.0, 2.0] and got.dpi == 50
    drawn, again = (io.BytesIO(), io.BytesIO())
    figure.savefig(drawn, format="png", dpi=50)
    got.savefig(again, format="png", dpi=50)
    from PIL import Image

    a, b = (np.asarray(Image.open(f).convert("RGBA")) for f in (drawn, again))
    np.testing.assert_array_equal(a, b)  # the same pixels, written again by the kernel


def test_a_figure_file_of_too_many_pixels_stays_unread(tmp_path: pathlib.Path) -> None:
    from PIL import Image

    (tmp_path / "cell" / "figures").mkdir(parents=True)
    Image.new("1", (8000, 8000)).save(tmp_path / "cell" / "figures" / "f.png")  # small file
    entry = {"kind": "figure", "file": "figures/f.png", "size": [80.0, 80.0], "dpi": 100.0}
    (tmp_path / "cell" / "values.json").write_text(json.dumps({"names": {"f": entry}}))
    namespace: dict[str, Any] = {}
    got = bring_back(tmp_path, namespace, kernel_cell=KernelCell.from_source("f = g()"))
    assert namespace == {} and got.stayed == {"f": "matplotlib figure of 8000x8000 pixels"}


# -- scikit-learn models, through skops -----------------------------------------------------


def _fitted() -> Any:
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = np.array([[0.0, 1.0], [1.0, 0.5], [2.0, 0.0], [3.0, 1.5]])
    return make_pipeline(StandardScaler(), LogisticRegression()).fit(x, [0, 0, 1, 1]), x


def test_a_scikit_learn_pipeline_comes_back_through_skops() -> None:
    pytest.importorskip("skops")
    model, x = _fitted()
    got = back(model)
    assert type(got) is type(model) and got is not model
    np.testing.assert_array_equal(got.predict_proba(x), model.predict_proba(x))


def test_without_skops_a_scikit_learn_model_stays_and_says_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, _ = _fitted()
    monkeypatch.setitem(sys.modules, "skops", None)  # as where skops is not installed
    monkeypatch.setitem(sys.modules, "skops.io", None)
    with tempfile.TemporaryDirectory() as job, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TFC_JOB_DIR", job)
        state = SimpleNamespace(run_cell=1, binds=("m",), reads=(), code=(), chief=True,
                                out=None, started=0.0, workdir="")  # fmt: skip
        manifest = giveback.save_names(state, {"m": model})
    assert manifest is not None and manifest.stayed == {
        "m": "scikit-learn Pipeline: install skops where the job runs and in the kernel "
        "(pip install skops)"
    }


def _double(x: Any) -> Any:
    return x * 2


def test_a_scikit_learn_model_of_a_type_skops_does_not_trust_stays_in_the_job() -> None:
    pytest.importorskip("skops")
    pytest.importorskip("sklearn")
    from sklearn.preprocessing import FunctionTransformer

    model = FunctionTransformer(_double).fit(np.ones((2, 2)))
    with tempfile.TemporaryDirectory() as job, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TFC_JOB_DIR", job)
        state = SimpleNamespace(run_cell=1, binds=("m",), reads=(), code=(), chief=True,
                                out=None, started=0.0, workdir="")  # fmt: skip
        giveback.save_names(state, {"m": model})
        namespace: dict[str, Any] = {}
        got = bring_back(job, namespace, kernel_cell=KernelCell.from_source("m = f()"))
    assert namespace == {}
    assert got.stayed["m"].startswith("scikit-learn model of types skops does not trust: ")
    assert "_double" in got.stayed["m"], got.stayed
