"""Issue 49's first list, the three ways: one notebook whose middle cell changes what the kernel
holds (a frame gets a column, a list and a dict grow, a name is deleted, a function sets a
``global``, ``exec`` binds a name) and makes the values that used to come back changed or not at
all (an ordered categorical, on its own and in a tz-aware, MultiIndex frame with a nullable
column, a ``DatetimeIndex`` with its ``freq``, two names for one list, ``datetime``,
``Decimal``, ``Path``, ``set``, a ragged tensor, a dict of Keras models, a figure, a
scikit-learn model; Keras' and the notebook's callbacks a fit used), and whose last cell prints
a digest of all of it. Jupyter is the truth: the notebook run in a real kernel. The same
notebook as a job through ``tfc-jupyter run`` (the whole notebook is the job; its executed
notebook holds the last cell's digest), and with its middle cell as a ``%%tfc_run`` job in a
real kernel (the last cell runs in the kernel, on what came back), locally and on docker: the
same digest, but for the name ``exec`` bound, which the kernel says and does not set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jobutil import executed_by_cli, in_kernel, streamed, write_notebook

SETUP = """\
import datetime, decimal, json, pathlib
import numpy as np
import pandas as pd
import tensorflow as tf
df = pd.DataFrame({"a": [1, 2, 3]})
lst = [1]
d = {"k": 1}
x = 5
kept = "unchanged"
def set_g():
    global g
    g = "set by a call"
class Counter(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen = []
    def on_epoch_end(self, epoch, logs=None):
        self.seen.append(epoch)
counter = Counter()
stopper = tf.keras.callbacks.EarlyStopping(monitor="loss", patience=1, min_delta=10.0)
"""
CELL = """\
import matplotlib.figure
from sklearn.linear_model import LinearRegression
df["b"] = df["a"] * 10
lst.append(2)
d["q"] = [1.5, None]
del x
set_g()
exec("z = 3")
sizes = pd.Categorical(["m", "s", "l", "m"], categories=["s", "m", "l"], ordered=True)
frame = pd.DataFrame(
    {"size": sizes,
     "when": pd.date_range("2024-03-30", periods=4, freq="D", tz="Europe/Paris"),
     "n": pd.array([1, None, 3, 4], dtype="Int64")},
    index=pd.MultiIndex.from_tuples([("a", 1), ("a", 2), ("b", 1), ("b", 2)], names=["g", "i"]))
days = pd.date_range("2024-01-01", periods=5, freq="W-MON")
shared = [1, 2]
also = shared
stamp = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc)
price = decimal.Decimal("19.990")
where = pathlib.Path("data") / "x.csv"
tags = {"b", "a"}
ragged = tf.ragged.constant([[1, 2], [3]])
models = {"small": tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(3)])}
models["small"].compile("sgd", "mse")
models["small"].fit(np.zeros((8, 2)), np.zeros((8, 3)), epochs=4, verbose=0,
                    callbacks=[stopper, counter])
fig = matplotlib.figure.Figure(figsize=(3, 2), dpi=50)
fig.add_subplot().plot([0, 1, 2], [2, 0, 1])
reg = LinearRegression().fit([[0.0], [1.0], [2.0]], [1.0, 3.0, 5.0])
print("ran")"""
CHECK = """\
def _names(value):
    return [type(value).__name__, str(value)]
print("CHECK", json.dumps({
    "df": df.to_dict(orient="list"), "lst": lst, "d": d, "x": "x" in globals(),
    "g": globals().get("g"), "kept": kept, "z": globals().get("z"),
    "dtypes": {c: str(t) for c, t in frame.dtypes.items()},
    "categories": list(frame["size"].cat.categories), "ordered": bool(frame["size"].cat.ordered),
    "codes": frame["size"].cat.codes.tolist(),
    "sizes": [type(sizes).__name__, list(sizes.categories), bool(sizes.ordered),
              sizes.codes.tolist()],
    "index": [[g, int(i)] for g, i in frame.index], "index_names": list(frame.index.names),
    "n": [None if pd.isna(v) else int(v) for v in frame["n"]],
    "when": [str(t) for t in frame["when"]],
    "freq": days.freqstr, "days": [str(t) for t in days],
    "shared": also is shared, "shared_value": shared,
    "stamp": _names(stamp), "price": _names(price), "where": _names(where),
    "tags": [type(tags).__name__, sorted(tags)],
    "ragged": [type(ragged).__name__, ragged.to_list()],
    "models": {k: [type(m).__module__.split(".")[0], type(m).__name__, m.count_params()]
               for k, m in models.items()},
    "fig": [type(fig).__name__, [float(v) for v in fig.get_size_inches()], float(fig.dpi)],
    "reg": [type(reg).__name__, [round(float(c), 6) for c in reg.coef_]],
    "stopper": [type(stopper).__name__, stopper.stopped_epoch, stopper.patience],
    "counter": [type(counter).__name__, counter.seen],
}))"""


def _digest(cell: Any) -> dict[str, Any]:
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert not errors, "\n".join(o["evalue"] + "\n".join(o["traceback"]) for o in errors)
    text = streamed(cell)
    assert "CHECK " in text, cell.outputs
    return dict(json.loads(text.split("CHECK ", 1)[1].splitlines()[0]))


@pytest.fixture(scope="module")
def truth(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The digest Jupyter prints: the notebook run as written, in a real kernel."""
    folder = tmp_path_factory.mktemp("jupyter")
    nb = in_kernel(write_notebook(folder / "jupyter.ipynb", SETUP, CELL, CHECK))
    got = _digest(nb.cells[2])
    assert got["df"]["b"] == [10, 20, 30] and got["x"] is False and got["z"] == 3, got
    assert got["ordered"] and got["categories"] == ["s", "m", "l"] and got["freq"] == "W-MON"
    return got


def _as_a_job_through_the_cli(tmp_path: Path, truth: dict[str, Any], *flags: str) -> None:
    executed = executed_by_cli(write_notebook(tmp_path / "job.ipynb", SETUP, CELL, CHECK), *flags)
    assert _digest(executed.cells[2]) == truth
    assert "ran" in streamed(executed.cells[1])


def _as_a_run_cell_in_a_kernel(tmp_path: Path, truth: dict[str, Any], flags: str) -> None:
    path = write_notebook(
        tmp_path / "cell.ipynb", "%load_ext tfc_jupyter", SETUP, f"%%tfc_run{flags}\n{CELL}", CHECK
    )
    nb = in_kernel(path)
    assert not [o for o in nb.cells[2].outputs if o.output_type == "error"], nb.cells[2].outputs
    said = streamed(nb.cells[2])
    assert "ran" in said, nb.cells[2].outputs
    back = said.split("Back in the kernel: ", 1)[1].split("\n", 1)[0]
    for part in (
        "df (changed in place)",
        "lst (changed in place)",
        "d (changed in place)",
        "g (bound)",
        "frame",
    ):
        assert part in back, said
    assert "deleted by the cell: x" in back, said
    assert "z (bound in the job by code the kernel cannot check)" in back, said
    assert _digest(nb.cells[3]) == {**truth, "z": None}  # exec's name is said, not set


@pytest.mark.slow
def test_the_notebook_as_a_job_through_the_cli_prints_what_jupyter_prints(
    tmp_path: Path, tfc_env: Path, truth: dict[str, Any]
) -> None:
    _as_a_job_through_the_cli(tmp_path, truth)


@pytest.mark.slow
def test_the_run_cell_in_a_real_kernel_leaves_what_jupyter_leaves(
    tmp_path: Path, tfc_env: Path, truth: dict[str, Any]
) -> None:
    _as_a_run_cell_in_a_kernel(tmp_path, truth, "")


@pytest.mark.slow
def test_the_notebook_in_a_container_through_the_cli_prints_what_jupyter_prints(
    tmp_path: Path, tfc_env: Path, truth: dict[str, Any], tf_parent_image: str
) -> None:
    _as_a_job_through_the_cli(
        tmp_path, truth, "--backend", "docker", "--parent-image", tf_parent_image
    )


@pytest.mark.slow
def test_the_run_cell_in_a_container_leaves_what_jupyter_leaves(
    tmp_path: Path, tfc_env: Path, truth: dict[str, Any], tf_parent_image: str
) -> None:
    _as_a_run_cell_in_a_kernel(
        tmp_path, truth, f" --backend docker --parent-image {tf_parent_image}"
    )
