"""The runtime reports what Keras trained and saved (``tfc_runtime.results``), in real jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import job_env, run_runtime

from tfc_jupyter.results import LOOP, Results, loss_name, parse

pytestmark = pytest.mark.slow

KERAS3 = """\
import contextlib, io, json
import numpy as np
import tensorflow as tf

x = np.linspace(0, 1, 64, dtype="float32").reshape(16, 4); y = x.sum(1)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse", metrics=["mae"])
board = tf.keras.callbacks.TensorBoard("board")
first = model.fit(x, y, epochs=3, verbose=0, validation_split=0.25, callbacks=[board])
quiet = io.StringIO()
with contextlib.redirect_stdout(quiet):  # the code hides its own prints: ours still go out
    second = model.fit(x, y, 4, 2, 0, (tf.keras.callbacks.History(),))
print("HISTORY", json.dumps([first.history, second.history]))
print("QUIET", repr(quiet.getvalue()))
model.save("model.keras")
model.export("exported")
"""

TF_KERAS = """\
import numpy as np
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
model.compile("sgd", "mse")
model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0, callbacks=None)
model.save("legacy.h5")
print("KERAS", type(model).__module__.split(".")[0])
"""


def _results(stdout: str) -> Results:
    results = Results()
    for line in stdout.splitlines():
        results.add_line(line)
    return results


def test_every_epoch_and_save_is_reported_and_training_is_unchanged(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(KERAS3)
    done = run_runtime(["--strategy", "none", "train.py"], tmp_path, job_env())
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    history = json.loads(next(line for line in out if line.startswith("HISTORY "))[8:])
    results = _results(done.stdout)
    # Each epoch of both fit calls, with exactly the numbers Keras' own History holds.
    done_epochs = [(e["fit"], e["epoch"]) for e in results.epochs]
    assert done_epochs == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2)]
    for fit, epochs in enumerate(history):
        reported = [e["metrics"] for e in results.epochs if e["fit"] == fit]
        for name, values in epochs.items():
            assert [m[name] for m in reported] == pytest.approx(values)
    assert results.names == ["loss", "mae", "val_loss", "val_mae"]
    assert [f["epochs"] for f in results.fits] == [3, 2]
    # The code's own callbacks ran too (positional tuple kept), and its redirect kept its own.
    assert "QUIET ''" in out
    assert results.tensorboard == [str(tmp_path / "board")]
    assert (tmp_path / "board" / "train").is_dir()
    assert results.saved == [str(tmp_path / "model.keras"), str(tmp_path / "exported")]
    assert [s["library"] for s in results.saved_with] == ["keras", "keras"]
    # Every report is one parseable line; none is mixed into the code's own output.
    reports = [line for line in out if line.startswith("[tfc_runtime] result ")]
    assert len(reports) == 2 + 5 + 1 + 2 and all(parse(line) for line in reports)


def test_tf_keras_is_recorded_with_its_own_callback_class(tmp_path: Path) -> None:
    pytest.importorskip("tf_keras")
    (tmp_path / "train.py").write_text(TF_KERAS)
    env = job_env(TF_USE_LEGACY_KERAS="1")
    done = run_runtime(["--strategy", "none", "train.py"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "KERAS tf_keras" in done.stdout.splitlines()
    results = _results(done.stdout)
    assert [e["epoch"] for e in results.epochs] == [1, 2]
    assert results.saved_with == [
        {"path": str(tmp_path / "legacy.h5"), "how": "save", "library": "tf_keras"}
    ]


# A custom loop as TensorFlow's guides write one (tests/runtime/custom_loop_job.py).
CUSTOM_LOOP = (Path(__file__).parent / "custom_loop_job.py").read_text()


def _loop_job(tmp_path: Path, strategy: str, when: str) -> tuple[list[Any], Results]:
    (tmp_path / "train.py").write_text(CUSTOM_LOOP)
    env = job_env(LOOP_STRATEGY=strategy, LOOP_RESET=when)
    done = run_runtime(["--strategy", "none", "train.py"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    printed = json.loads(next(x for x in done.stdout.splitlines() if x.startswith("PRINTED "))[8:])
    return printed, _results(done.stdout)


@pytest.mark.parametrize(
    ("strategy", "when"),
    [("default", "end"), ("default", "start"), ("mirrored", "end"), ("mirrored", "start")],
)
def test_a_custom_loops_metrics_are_its_epochs(tmp_path: Path, strategy: str, when: str) -> None:
    """Each round of the loop's metrics is an epoch, with the numbers the code printed, whether
    it resets them at the end of an epoch or the start of the next (the last one then at the
    end of the script). TensorFlow 2.15's Keras (reset_states): tests/tf215/test_custom_loop.py.
    """
    printed, results = _loop_job(tmp_path, strategy, when)
    loop = [e for e in results.epochs if e["fit"] == LOOP]
    assert [e["epoch"] for e in loop] == [1, 2, 3]
    for row, seen in zip(loop, printed, strict=True):
        assert row["metrics"] == pytest.approx(seen)
    # fit's epoch is there too, as fit 0: its resets inside Keras reported no loop round
    assert [(e["fit"], e["epoch"]) for e in results.epochs if e["fit"] != LOOP] == [(0, 1)]
    assert loss_name(list(loop[-1]["metrics"])) == "train_loss" and "loss" in results.names


def test_a_multi_worker_loops_metrics_are_left_alone(tmp_path: Path) -> None:
    """Reading a metric of a collective strategy is a collective every worker must join: the
    chief alone must never read one, so such a loop reports no rounds (and runs as written)."""
    printed, results = _loop_job(tmp_path, "multi_worker", "end")
    assert len(printed) == 3
    assert [e["fit"] for e in results.epochs] == [0]
