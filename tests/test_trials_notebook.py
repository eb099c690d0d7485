"""A sweep from a notebook cell, as a user runs it (issue 37): nbclient runs a Keras notebook
whose ``parameters`` cell sets ``lr`` and ``units``, with a ``%%tfc_run --sweep`` cell, in a
real kernel; six real TensorFlow trials train on this machine, two at a time."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jobutil import JOB_DEADLINE_S, write_notebook

pytestmark = [pytest.mark.usefixtures("tfc_env"), pytest.mark.slow]

DATA = """\
import numpy as np
import tensorflow as tf
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 4)).astype("float32")
y = (x @ np.array([1.0, -2.0, 0.5, 3.0], dtype="float32") > 0).astype("float32")"""
FLAGS = (
    '--sweep "lr=loguniform(1e-3,3e-1)" --sweep "units=[2,4,16]" --trials 6 --parallel 2 '
    "--metric val_accuracy"
)
RUN = (
    f"%%tfc_run {FLAGS}\n"
    + """\
tf.keras.utils.set_random_seed(1)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(units, activation="relu"),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile(tf.keras.optimizers.Adam(lr), "binary_crossentropy", metrics=["accuracy"])
history = model.fit(x, y, epochs=3, validation_split=0.25, verbose=0)"""
)
CHECK = """\
import json
sweep = _
print("CHECK", json.dumps({
    "trials": [[t.number, t.values, t.state, t.metric, t.job_id] for t in sweep.trials],
    "best": sweep.best.id, "units": model.layers[0].units,
    "lr": float(model.optimizer.learning_rate.numpy()),
    "val_accuracy": history.history["val_accuracy"][-1],
}))"""


def _executed(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from nbclient import NotebookClient

    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=JOB_DEADLINE_S * 3, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return nb


def test_a_six_trial_sweep_from_a_cell_brings_back_the_best_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_notebook(
        tmp_path / "sweep.ipynb",
        "%load_ext tfc_jupyter",
        "lr = 1e-2  # parameters, as papermill has them\nunits = 8",
        DATA,
        RUN,
        CHECK,
        tags={1: ["parameters"]},
    )
    nb = _executed(path, monkeypatch)
    text = "".join(o.get("text", "") for o in nb.cells[4].outputs if o.output_type == "stream")
    got = json.loads(text.split("CHECK ", 1)[1].splitlines()[0])
    trials = got["trials"]
    assert len(trials) == 6 and {t[2] for t in trials} == {"succeeded"}, trials
    assert len({t[4] for t in trials}) == 6  # six jobs
    best = max(trials, key=lambda t: (t[3], -t[0]))
    assert got["best"] == best[4]
    # The kernel has the best trial's model and history, trained with its values.
    assert got["units"] == best[1]["units"]
    assert math.isclose(got["lr"], best[1]["lr"], rel_tol=1e-6)
    assert math.isclose(got["val_accuracy"], best[3], rel_tol=1e-6)
    # The saved run cell shows the table of trials and their plot.
    html = [o["data"]["text/html"] for o in nb.cells[3].outputs if "text/html" in o.get("data", {})]
    final = html[-1]
    assert final.count("<tr") == 7 and final.count("<circle") == 6 * 3, final[:300]
    assert "best #" in final
