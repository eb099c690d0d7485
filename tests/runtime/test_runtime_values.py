"""Values that travel from a job to the kernel (tfc_runtime.values): what goes in comes out
equal, NaN stays NaN, what cannot travel is named, and loading never runs code."""

from __future__ import annotations

import io
import json
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tfc_runtime.values import Decoder, Encoder, Unsupported


def _round_trip(value: Any) -> Any:
    """Encode, write as the runtime does (JSON + npz), read back as the kernel does."""
    enc = Encoder()
    tree = enc.encode(value)
    text = json.dumps(tree, allow_nan=False)  # the manifest never holds a bare NaN
    buf = io.BytesIO()
    np.savez(buf, **enc.arrays)
    buf.seek(0)
    arrays = np.load(buf, allow_pickle=False)
    return Decoder(arrays).decode(json.loads(text))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, complex):
        return isinstance(b, complex) and _same(a.real, b.real) and _same(a.imag, b.imag)
    return type(a) is type(b) and a == b


keys = st.one_of(st.text(), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and infinities included
    st.complex_numbers(),
    st.text(),  # any code point, as a UTF-32 string holds
    st.binary(),
)
trees = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(keys, inner, max_size=4),
    ),
    max_leaves=20,
)


@given(trees)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_plain_values_come_back_equal(value: Any) -> None:
    assert _same(value, _round_trip(value))


@given(
    hnp.arrays(
        dtype=st.one_of(
            hnp.integer_dtypes(),
            hnp.floating_dtypes(),
            hnp.boolean_dtypes(),
            hnp.unicode_string_dtypes(),
            hnp.complex_number_dtypes(),
            hnp.datetime64_dtypes(),
        ),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
    )
)
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_arrays_come_back_with_their_dtype_and_values(array: np.ndarray) -> None:
    back = _round_trip(array)
    assert back.dtype == array.dtype and back.shape == array.shape
    np.testing.assert_array_equal(back, array)


def test_numpy_scalars_sets_and_nested_arrays() -> None:
    value = {"n": np.float32(1.5), "s": {1, 2}, "f": frozenset({"a"}), "a": [np.ones((2, 2))]}
    back = _round_trip(value)
    assert back["n"] == np.float32(1.5) and back["n"].dtype == np.float32
    assert back["s"] == {1, 2} and back["f"] == frozenset({"a"})
    np.testing.assert_array_equal(back["a"][0], np.ones((2, 2)))


def test_frames_and_series_come_back() -> None:
    frame = pd.DataFrame(
        {
            "loss": [0.5, float("nan"), 0.25],
            "name": ["a", None, "ü😀"],
            "n": np.array([1, 2, 3], dtype="int16"),
            "when": pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-03"]),
            "kind": pd.Categorical(["x", "y", "x"]),
        },
        index=pd.Index([10, 20, 30], name="step"),
    )
    back = _round_trip(frame)
    pd.testing.assert_frame_equal(back, frame)
    series = pd.Series([1.0, 2.0], index=["a", "b"], name="s")
    pd.testing.assert_series_equal(_round_trip(series), series)
    ranged = pd.DataFrame({"a": [1, 2]})
    pd.testing.assert_frame_equal(_round_trip(ranged), ranged)
    duplicated = pd.DataFrame([[1, 2]], columns=["a", "a"])
    pd.testing.assert_frame_equal(_round_trip(duplicated), duplicated)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ((i for i in range(3)), "generator"),
        (np.array([object()]), "array of Python objects"),
        (pd.DataFrame({"o": [object()]}), "column of Python objects"),
        (open, "builtin_function_or_method"),
        (pd.Series([1], index=pd.Index([open], dtype=object)), "one a builtin_function"),
    ],
)
def test_what_cannot_travel_is_named(value: Any, said: str) -> None:
    with pytest.raises(Unsupported, match=said):
        Encoder().encode(value)


def test_a_list_that_holds_itself_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(Unsupported, match="list that contains itself"):
        Encoder().encode(loop)


class _Marker:
    """Unpickling it writes a file: proof that code ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (Path(self.path).write_text, ("ran",))


def test_an_array_file_crafted_to_run_code_does_not_run_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    crafted = tmp_path / "arrays.npz"
    payload = np.array([_Marker(str(marker))], dtype=object)
    np.savez(crafted, a0=payload)  # an object array: stored as a pickle
    assert pickle.dumps(_Marker(str(marker)))  # the payload would run, were it unpickled
    arrays = np.load(crafted, allow_pickle=False)
    with pytest.raises(ValueError, match="pickle"):
        Decoder(arrays).decode({"$array": "a0"})
    assert not marker.exists()


@pytest.mark.parametrize(
    "tree",
    [
        {"$eval": "print(1)"},
        {"$array": "missing"},
        {"$array": "a0", "$extra": 1},
        {"$dict": [[1]]},
    ],
)
def test_trees_no_encoder_makes_are_refused(tree: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        Decoder({}).decode(tree)
