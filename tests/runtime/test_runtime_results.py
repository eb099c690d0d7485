"""The runtime reports what Keras trained and saved (``tfc_runtime.results``), in real jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import job_env, run_runtime

from tfc_jupyter.returns.results import LOOP, Results, loss_name, parse

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


def _results(done: Any) -> Results:
    """The reports of a runtime run without a job folder: lines of stderr, never stdout."""
    assert "[tfc_runtime] result " not in done.stdout
    results = Results()
    for line in done.stderr.splitlines():
        results.add_line(line)
    return results


def test_every_epoch_and_save_is_reported_and_training_is_unchanged(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(KERAS3)
    done = run_runtime(["--strategy", "none", "train.py"], tmp_path, job_env())
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    history = json.loads(next(line for line in out if line.startswith("HISTORY "))[8:])
    results = _results(done)
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
    # Every report is one parseable line of stderr (no job folder here); none is in stdout.
    err = done.stderr.splitlines()
    reports = [line for line in err if line.startswith("[tfc_runtime] result ")]
    assert len(reports) == 2 + 5 + 1 + 2 and all(parse(line) for line in reports)


def test_tf_keras_is_recorded_with_its_own_callback_class(tmp_path: Path) -> None:
    pytest.importorskip("tf_keras")
    (tmp_path / "train.py").write_text(TF_KERAS)
    env = job_env(TF_USE_LEGACY_KERAS="1")
    done = run_runtime(["--strategy", "none", "train.py"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "KERAS tf_keras" in done.stdout.splitlines()
    results = _results(done)
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
    return printed, _results(done)


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


DEFAULT_VERBOSE = """\
import json
import numpy as np
import tensorflow as tf

x = np.linspace(0, 1, 256, dtype="float32").reshape(64, 4); y = x.sum(1)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse", metrics=["mae"])
stop = tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=50)
first = model.fit(x, y, epochs=3, validation_split=0.25, callbacks=[stop])  # Keras' progress bar
second = model.fit(x, y, batch_size=8, epochs=2)
print("unfinished line", end="")
print("HISTORY", json.dumps([first.history, second.history]))
"""


@pytest.mark.parametrize("keras", ["keras3", "tf_keras"])
def test_progress_bars_never_lose_or_show_a_report(tmp_path: Path, keras: str) -> None:
    """Keras' default progress bar ends its lines with ``\\r`` updates: the reports go to the
    job's results file, apart from it. Every epoch of both fits is reported with the numbers
    of Keras' own History, stdout holds none of our protocol, and each bar is shown as one line
    (its latest state)."""
    from tfc_jupyter.returns.results import parse_json
    from tfc_jupyter.store.logs import shown

    (tmp_path / "train.py").write_text(DEFAULT_VERBOSE)
    job = tmp_path / "job"
    job.mkdir()
    legacy = {"TF_USE_LEGACY_KERAS": "1"} if keras == "tf_keras" else {}
    done = run_runtime(
        ["--strategy", "none", "train.py"], tmp_path, job_env(TFC_JOB_DIR=str(job), **legacy)
    )
    assert done.returncode == 0, done.stderr
    assert "[tfc_runtime] result" not in done.stdout + done.stderr
    history = json.loads(done.stdout.split("HISTORY ", 1)[1].splitlines()[0])
    events = [parse_json(line) for line in (job / "results.jsonl").read_text().splitlines()]
    results = Results()
    for event in events:
        assert event is not None
        results.add(event)
    assert [(e["fit"], e["epoch"]) for e in results.epochs] == [
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 1),
        (1, 2),
    ]
    for fit, epochs in enumerate(history):
        reported = [e["metrics"] for e in results.epochs if e["fit"] == fit]
        for name, values in epochs.items():
            assert [m[name] for m in reported] == pytest.approx(values)
    lines = [shown(line) for line in done.stdout.split("\n")]
    bars = [line for line in lines if line and "/step" in line]
    assert len(bars) == 5, bars  # one line per bar: 3 epochs, then 2
    assert all("\r" not in line and "\b" not in line for line in bars)


def test_metrics_made_anew_each_epoch_and_summary_scalars_are_epochs(tmp_path: Path) -> None:
    """The Iris walkthrough makes its metrics anew each epoch and never resets them, and a
    loop may log its epochs with ``tf.summary.scalar``: both report one round an epoch, with
    the numbers the code kept."""
    from tfc_jupyter.returns.results import parse_json

    (tmp_path / "train.py").write_text((Path(__file__).parent / "iris_loop_job.py").read_text())
    job = tmp_path / "job"
    job.mkdir()
    done = run_runtime(["--strategy", "none", "train.py"], tmp_path, job_env(TFC_JOB_DIR=str(job)))
    assert done.returncode == 0, done.stderr
    losses, accuracies = json.loads(done.stdout.split("PRINTED ", 1)[1])
    results = Results()
    for line in (job / "results.jsonl").read_text().splitlines():
        event = parse_json(line)
        assert event is not None
        results.add(event)
    rows = [e["metrics"] for e in results.epochs if e["fit"] == LOOP]
    assert [r["mean"] for r in rows] == pytest.approx(losses)
    assert [r["epoch_loss"] for r in rows] == pytest.approx(losses)
    assert [r["sparse_categorical_accuracy"] for r in rows] == pytest.approx(accuracies)


KEYED = """\
import json, os, sys
seen = {
    "variables": sorted(k for k in os.environ if k.startswith("TFC_REPORT")),
    "environ": open("/proc/self/environ", "rb").read().decode("latin-1"),
    "cmdline": open("/proc/self/cmdline", "rb").read().decode("latin-1"),
    "fds": sorted(os.listdir("/proc/self/fd")),
}
print("SEEN", json.dumps(seen))
from tfc_runtime import results
results.emit({"event": "probe", "value": 1})
print('[tfc_runtime] result {"event": "forged"}', file=sys.stderr)
print('[tfc_runtime] result ' + '0' * 32 + ' {"event": "forged"}', file=sys.stderr)
"""


@pytest.mark.item("printed look-alikes of reports are only lines", suite="security")
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_the_report_key_is_out_of_the_code_s_reach(tmp_path: Path) -> None:
    """Issue 39: where reports come with the logs (Vertex AI), the runtime signs them with a key
    its launch put in the environment. The code finds it in no variable, not in the environment
    the process started with (``/proc/self/environ``), not on its command line and in no open
    descriptor; the runtime's reports verify with the key and a printed look-alike does not."""
    import secrets

    key = secrets.token_hex(16)
    (tmp_path / "keyed.py").write_text(KEYED)
    done = run_runtime(["keyed.py"], tmp_path, job_env(TFC_REPORT_KEY=key))
    assert done.returncode == 0, done.stderr
    seen = json.loads(next(x for x in done.stdout.splitlines() if x.startswith("SEEN "))[5:])
    assert seen["variables"] == [] and key not in done.stdout
    assert key not in seen["environ"] + seen["cmdline"]
    assert "TFC_REPORT_KEY=" not in seen["environ"]  # (the closed pipe's number is there)
    assert set(seen["fds"]) <= {"0", "1", "2", "3"}  # 3: the listing's own
    lines = done.stderr.splitlines()
    assert [parse(line, key) for line in lines if parse(line, key)] == [
        {"event": "probe", "value": 1}
    ]
    assert sum("forged" in line for line in lines) == 2
    assert not any(parse(line, "f" * 32) for line in lines)  # another key reads none
