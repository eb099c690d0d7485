"""Results come back from notebooks as people write them: Keras' default progress bar.

A notebook written like TensorFlow's guides (``model.fit(x, y, epochs=3)`` with the default
``verbose``, ``validation_split``, a callback, a second ``fit``) runs as a real local job, alone
and with ``--workers 1``. ``job.metrics`` must equal, epoch for epoch, the ``History`` the same
job printed; what the cell shows must hold no line of ours, and each progress bar as one line
(its latest state), as Jupyter shows it.
"""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pytest
from jobutil import run_job, write_notebook

from tfc_jupyter.store.records import JobState

pytestmark = pytest.mark.slow

SETUP = """\
import json
import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(256, 8).astype("float32")
y = (x.sum(1) > 4).astype("int64")


def build():
    layers = [tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(2)]
    model = tf.keras.Sequential([tf.keras.Input((8,)), *layers])
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model
"""
TRAIN = """\
model = build()
history = model.fit(
    x, y, epochs=3, validation_split=0.2, callbacks=[tf.keras.callbacks.EarlyStopping(patience=3)]
)
more = model.fit(x, y, epochs=2, batch_size=64)
print("HISTORY", json.dumps([history.history, more.history]))
"""


@pytest.mark.parametrize("flags", ["", "--workers 1"])
def test_default_progress_bars_give_every_epoch_and_show_none_of_ours(
    tmp_path: Path, tfc_env: Path, flags: str
) -> None:
    nb = write_notebook(tmp_path / "guide.ipynb", SETUP, f"%%tfc_run {flags}\n{TRAIN}".strip())
    job, record = run_job(nb, tmp_path / "home", flags)
    assert record.state is JobState.SUCCEEDED, record.error
    chief = job.logs("chief")
    history = json.loads(re.findall(r"HISTORY (.*)$", chief, re.M)[0])
    for fit, epochs in enumerate(history):
        rows = [row for row in job.metrics if row["fit"] == fit]
        assert [row["epoch"] for row in rows] == list(range(1, len(epochs["loss"]) + 1))
        for name, values in epochs.items():
            assert [row[name] for row in rows] == pytest.approx(values), (fit, name)
    assert {"val_loss", "val_accuracy"} <= set(job.metrics[0])
    shown = io.StringIO()
    job.follow(out=shown)
    text = shown.getvalue()
    assert "tfc_runtime" not in text and "\r" not in text and "\x08" not in text
    assert "\x1b[" not in text  # a StringIO draws no colours
    lines = text.splitlines()
    epochs_seen = [i for i, line in enumerate(lines) if re.search(r"\] Epoch \d+/\d+$", line)]
    assert len(epochs_seen) == 5
    for i in epochs_seen:  # the bar: one line (its latest state) after each "Epoch N/M"
        after = [ln for ln in lines[i + 1 :] if ln.split("] ", 1)[-1].strip()]
        assert re.search(r"\d+/\d+ .*loss: ", after[0]), after[:3]
        assert "Epoch" in after[1] or "HISTORY" in after[1], after[:3]


def test_a_bar_being_drawn_updates_live_in_the_cell(tmp_path: Path, tfc_env: Path) -> None:
    """The cell (a notebook's stream) gets a progress bar's line as it is written, each update
    rewriting it (``\\r``), and then the line once ended: what Jupyter shows is one line per
    bar, at its latest state, updating while the job runs."""
    from jobutil import plan_for

    from tfc_jupyter.jobs import launch, store_for
    from tfc_jupyter.returns.cell import BoundedLog
    from tfc_jupyter.store.logs import render

    bar = (
        "import sys, time\n"
        "for i in range(1, 6):\n"
        "    sys.stdout.write(f'\\r{i}/5 working'); sys.stdout.flush(); time.sleep(0.5)\n"
        "print()\nprint('done')"
    )
    nb = write_notebook(tmp_path / "bar.ipynb", f"%%tfc_run\n{bar}")
    live = launch(plan_for(nb), store=store_for(tmp_path / "home"))
    raw = io.StringIO()
    cell = BoundedLog(raw, 200, live.id)
    live.follow(out=cell)
    cell.close()
    assert live.record().state is JobState.SUCCEEDED
    text = raw.getvalue()
    assert text.count("\r[chief] ") >= 3, repr(text)  # drawn while it moved
    shown = [render(line) for line in text.split("\n") if line]
    assert shown == ["[chief] 5/5 working", "[chief] done"], shown


DIVERGES = """\
%%tfc_run
import json, math
import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).normal(size=(256, 4)).astype("float32")
y = (x @ np.array([1, 2, 3, 4], dtype="float32")).astype("float32")
tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=3.0), loss="mse")
history = model.fit(x, y, epochs=8, batch_size=32, verbose=2)  # too high a rate: inf, then NaN
print("HISTORY", json.dumps(history.history))
"""


def test_a_loss_that_turns_nan_is_kept_and_flagged(tmp_path: Path, tfc_env: Path) -> None:
    """A fit whose loss overflows to inf, then NaN (too high a learning rate): ``job.metrics``
    keeps every epoch's value as the History has it, the job's line, its listing and its plot
    say where it stopped being a number, and the jobs API's JSON stays JSON."""
    from tfc_runtime.protocol import json_safe

    from tfc_jupyter.jobs import job_dict
    from tfc_jupyter.returns.plot import svg

    nb = write_notebook(tmp_path / "diverges.ipynb", DIVERGES)
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, record.error
    (line,) = re.findall(r"HISTORY (.*)$", job.logs("chief"), re.M)
    history = json.loads(line)["loss"]  # json reads NaN and Infinity
    first = next(i for i, v in enumerate(history) if not math.isfinite(v))
    assert 0 < first < len(history) - 1, history  # the curve has numbers, then not
    word = "NaN" if math.isnan(history[first]) else "inf"
    got = [row["loss"] for row in job.metrics]
    assert len(got) == len(history)
    for ours, theirs in zip(got, history, strict=True):
        assert (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs)
    flag = f"loss is {word} from epoch {first + 1}"
    assert flag in job.summary_line()
    listed = job_dict(job.record())
    assert listed["metric_flags"] == [flag]
    text = json.dumps(json_safe(listed), allow_nan=False)  # what the browser's JSON.parse reads
    assert json.loads(text)["last_metrics"]["loss"] in ("NaN", "Infinity")
    picture = svg(job.results())
    assert picture is not None and flag in picture
    assert not re.search(r'="[^"]*\b(nan|inf)\b', picture)  # no point drawn at NaN or inf


LOOKALIKE = """\
%%tfc_run
import sys
fake = '[tfc_runtime] result {"event": "%s", %s}'
print(fake % ("epoch", '"fit": 0, "epoch": 1, "logs": {"loss": 123.0}'))
print(fake % ("saved", '"path": "/etc/passwd", "how": "save"'), file=sys.stderr)
print("done")
"""


@pytest.mark.item("printed look-alikes of reports are only lines", suite="security")
def test_printed_look_alikes_of_reports_are_only_lines(tmp_path: Path, tfc_env: Path) -> None:
    """Issue 39: a local job that prints ``[tfc_runtime] result ...`` lines set ``job.metrics``
    (loss 123.0) and the model path (/etc/passwd). Its runtime reports in its results file;
    a line its code prints is a line, whatever it says."""
    from tfc_jupyter.jobs import job_dict

    nb = write_notebook(tmp_path / "fake.ipynb", LOOKALIKE)
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, record.error
    assert "done" in job.logs("chief")
    results = job.results()
    assert (results.epochs, results.model_dir, job.metrics) == ([], None, [])
    assert job_dict(job.record())["last_metrics"] is None
    reported: list[dict[str, object]] = []
    job.follow(out=io.StringIO(), on_result=reported.append, timeout=30)
    assert [r["event"] for r in reported] == ["cell"]  # the runtime's own: the names came back
