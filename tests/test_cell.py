"""What a %%tfc_run cell shows and gives back, in a real kernel (nbclient) running real jobs:
the live plot, bounded logs, the job's metrics and model, TensorBoard, a --no-wait handle that
follows its job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jobutil import JOB_DEADLINE_S, job_lines, write_notebook

pytestmark = pytest.mark.slow

DATA = """\
import numpy as np
import tensorflow as tf
x = np.linspace(0, 1, 128, dtype="float32").reshape(32, 4)
y = x.sum(1)
tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse", metrics=["mae"])"""
TRAIN = """\
%%tfc_run
history = model.fit(x, y, epochs=4, verbose=2, validation_split=0.25,
                    callbacks=[tf.keras.callbacks.TensorBoard("board")])
for i in range(120):
    print("row", i)
model.save("trained.keras")
print("PREDICT", [round(float(v), 5) for v in model.predict(x[:3], verbose=0).ravel()])"""
CHECK = """\
import json, urllib.request
job = _tfc_job
print("METRICS", json.dumps(job.metrics))
print("MODEL_DIR", job.model_dir)
loaded = job.load_model()
print("LOADED", [round(float(v), 5) for v in loaded.predict(x[:3], verbose=0).ravel()])
%tfc_jobs
%tfc_tensorboard {job.id}
from tfc_jupyter.returns.tensorboard import _SERVERS
url = _SERVERS[job.id][1]
runs = json.load(urllib.request.urlopen(url + "data/runs", timeout=30))
print("RUNS", sorted(runs))"""
LATER = "%%tfc_run --no-wait\nimport time\ntime.sleep(2)\nprint('later')"
WAIT = "_tfc_job.wait(60)\nimport time\ntime.sleep(3)  # the handle's output polls each second"


def _texts(cell: Any) -> str:
    out = []
    for o in cell.outputs:
        out.append(o.get("text", ""))
        out.append(o.get("data", {}).get("text/plain", ""))
    return "\n".join(out)


def test_a_cell_plots_bounds_and_gives_back_metrics_and_model(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbclient import NotebookClient

    path = write_notebook(
        tmp_path / "cell.ipynb",
        "%load_ext tfc_jupyter",
        DATA,
        TRAIN,
        CHECK,
        LATER,
        WAIT,
        tags={3: ["tfc-skip"], 5: ["tfc-skip"]},
    )
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    monkeypatch.setenv("TFC_CELL_LINES", "40")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=JOB_DEADLINE_S, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    train, check, later = nb.cells[2], nb.cells[3], nb.cells[4]

    # The live plot: one output, made once an epoch has ended, holding the final curves.
    plots = [o for o in train.outputs if "image/svg+xml" in o.get("data", {})]
    assert len(plots) == 1
    assert plots[0].data["text/plain"].startswith("epoch 4: loss ")
    assert "val_loss" in plots[0].data["image/svg+xml"]
    # Bounded logs: 20 lines as printed, then one window with the latest 20 and the count.
    streamed = "".join(o.get("text", "") for o in train.outputs if o.output_type == "stream")
    plain = [o.get("data", {}).get("text/plain", "") for o in train.outputs]
    windows = [o for o, t in zip(train.outputs, plain, strict=True) if t.startswith("...")]
    assert len(windows) == 1
    window = windows[0].data["text/plain"].splitlines()
    assert "not shown here: %tfc_logs" in window[0]
    assert window[-1].startswith("PREDICT ")  # the job's last line, in the window
    assert "row 119" in windows[0].data["text/plain"] and "row 119" not in streamed
    shown = job_lines(streamed.splitlines())  # a one-replica job's lines: no [chief]
    assert len(shown) == 20 and "[tfc_runtime] result" not in streamed, shown
    assert "[chief]" not in streamed

    # Results come back: every epoch, the model where it was saved, loaded with the same weights.
    text = _texts(check)
    metrics = json.loads(text.split("METRICS ", 1)[1].splitlines()[0])
    assert [m["epoch"] for m in metrics] == [1, 2, 3, 4]
    assert {"loss", "mae", "val_loss", "val_mae"} <= set(metrics[-1])
    assert f"MODEL_DIR {tmp_path / 'trained.keras'}" in text
    loaded = text.split("LOADED ", 1)[1].splitlines()[0]
    assert loaded == _predicted(train)
    # %tfc_jobs shows the final loss; TensorBoard serves the callback's runs on loopback.
    assert f"{metrics[-1]['loss']:.4g}" in text
    assert "TensorBoard for " in text and "http://127.0.0.1:" in text
    assert "RUNS ['train', 'validation']" in text

    # A --no-wait handle's output followed the job to its end.
    handles = [o for o in later.outputs if "text/html" in o.get("data", {})]
    assert handles and "succeeded" in handles[-1].data["text/html"], later.outputs


def _predicted(train: Any) -> str:
    """The predictions the job printed (in the window of its last lines)."""
    for o in train.outputs:
        for line in (o.get("text", "") + o.get("data", {}).get("text/plain", "")).splitlines():
            if "PREDICT " in line:
                return line.split("PREDICT ", 1)[1]
    raise AssertionError("the job printed no predictions")


def test_a_failed_job_links_its_cell_to_the_line_that_failed(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cell of a failed job shows where it failed as a link (JupyterLab's extension renders
    it: tests/test_lab_ui.py), with the line as saved, besides the one-line error."""
    from nbclient import NotebookClient

    from tfc_jupyter.returns.cell import LINK_MIME

    path = write_notebook(
        tmp_path / "fails.ipynb",
        "%load_ext tfc_jupyter",
        "total = 1\nparts = 0\nshare = total / parts",
        "%%tfc_run\nprint('never here')",
    )
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=JOB_DEADLINE_S,
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    run = nb.cells[2]
    links = [o.data[LINK_MIME] for o in run.outputs if LINK_MIME in o.get("data", {})]
    assert links == [
        {
            "version": 1,
            "cell": 2,
            "line": 3,
            "code": "share = total / parts",
            "text": "cell 2, line 3",
        }
    ]
    errors = [o for o in run.outputs if o.output_type == "error"]
    assert len(errors) == 1 and "ZeroDivisionError" in "".join(errors[0].traceback)
