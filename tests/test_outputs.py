"""What a %%tfc_run cell shows of its job's output, against Jupyter (issue 49): the same code runs
in a real kernel (nbclient) as it is, and as a local job through ``%%tfc_run`` in a real kernel.
A progress bar on stderr and the code's ``\\r`` prints on stdout each keep their own lines, an
unfinished line is not glued to the traceback after it, a failed job's traceback has no frame of
the runtime's between the code's line and Keras', and no output is empty: the live plot is made
once an epoch has ended, between two lines (never inside a Keras bar's redraws)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jobutil import JOB_DEADLINE_S, job_lines, write_notebook

from tfc_jupyter.store.logs import render, strip_ansi

pytestmark = pytest.mark.slow

BARS = """\
import time
from tqdm import tqdm
for i in tqdm(range(5)):
    print(f"\\rstep {i}", end="")
    time.sleep(0.15)
print()
print("done")"""
FAILS = """\
import sys
print("\\r 50%|#####", end="", file=sys.stderr)
print("\\rstep 3", end="")
1/0"""
KERAS = """\
import numpy as np
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(np.zeros((8, 3)), np.zeros(8), epochs=1, verbose=0)"""
KERAS_BARS = """\
import time
import numpy as np
import tensorflow as tf
class Slow(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        time.sleep(0.4)  # the epoch's report reaches the cell while the next bar is drawn
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(np.zeros((64, 4)), np.zeros(64), epochs=3, batch_size=8, callbacks=[Slow()])
print("done")"""
_STEP = re.compile(r"step \d")
_BAR = re.compile(r"\s*\d+%\|[^|]*\| \d/5 \[[^\]]*\]")


def _run(
    tmp_path: Path,
    name: str,
    code: str,
    monkeypatch: pytest.MonkeyPatch,
    above: str = "",
    flags: str = "",
) -> Any:
    """The cell's outputs: ``code`` in a kernel (``name`` jupyter), or a %%tfc_run job; the
    cell ``above`` (if any) runs before it, in the kernel (and in the job, before its cell)."""
    from nbclient import NotebookClient

    body = code if name.endswith("jupyter") else f"%%tfc_run{flags}\n{code}"
    cells = ["%load_ext tfc_jupyter", *([above] if above else []), body]
    path = write_notebook(tmp_path / f"{name}.ipynb", *cells)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=JOB_DEADLINE_S,
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    return nb.cells[-1].outputs


def _lines(outputs: Any, name: str | None = None) -> list[str]:
    """The lines the cell's stream outputs show (of one stream, else all), as JupyterLab shows
    them: consecutive outputs of a stream are one text, each ``\\r`` writes over its line."""
    shown: list[str] = []
    text, last = "", None
    for out in [*outputs, None]:
        kind = out.get("name") if out is not None and out.output_type == "stream" else None
        if kind != last and text:
            shown += [render(line) for line in text.split("\n")]
            text = ""
        if kind is not None and name in (None, kind):
            text += out.text
        last = kind
    return [line for line in map(strip_ansi, shown) if line.strip()]


def _job_lines(outputs: Any) -> list[str]:
    """What the job printed, as its cell shows it (the magic's own lines left out)."""
    return job_lines(_lines(outputs))


def test_a_bar_on_stderr_and_prints_on_stdout_keep_their_own_lines(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jupyter = _run(tmp_path, "bars_jupyter", BARS, monkeypatch)
    job = _run(tmp_path, "bars_job", BARS, monkeypatch)
    for lines in ([*_lines(jupyter, "stdout"), *_lines(jupyter, "stderr")], _job_lines(job)):
        # every line is one stream's: a step, the bar, or the end, never one spliced in another
        odd = [
            ln for ln in lines if not (_STEP.fullmatch(ln) or _BAR.fullmatch(ln) or ln == "done")
        ]
        assert not odd, lines
        assert "step 4" in lines and "done" in lines
        assert any(ln.startswith("100%|") for ln in lines)


def test_the_live_plot_comes_between_two_lines_and_no_output_is_empty(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = _run(tmp_path, "plot_job", KERAS_BARS, monkeypatch)
    empty = [
        o
        for o in outputs
        if o.output_type == "display_data" and not any(str(v).strip() for v in o.data.values())
    ]
    assert empty == [], outputs
    plots = [i for i, o in enumerate(outputs) if "image/svg+xml" in o.get("data", {})]
    assert len(plots) == 1, outputs
    assert outputs[plots[0]].data["text/plain"].startswith("epoch 3: loss ")
    before = [o for o in outputs[: plots[0]] if o.output_type == "stream"]
    assert "Epoch 1/3" in "".join(o.text for o in before), outputs  # once an epoch ended,
    assert before[-1].text.endswith("\n"), outputs  # between two lines
    lines = _job_lines(outputs)
    epochs = [ln for ln in lines if ln.startswith("Epoch ")]
    assert epochs == ["Epoch 1/3", "Epoch 2/3", "Epoch 3/3"], lines
    bars = [ln for ln in lines if re.match(r"\d+/8 ", ln)]
    assert len(bars) == 3 and all(b.startswith("8/8 ") for b in bars), lines  # none split
    assert lines[-1] == "done"


FIT_ABOVE = """\
import numpy as np
import tensorflow as tf
x, y = np.zeros((32, 4)), np.zeros(32)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse", metrics=["mae"])
model.fit(x, y, epochs=2, verbose=0)"""
FIT_HERE = """\
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y, epochs=3, verbose=0)
print("done")"""


def test_the_live_plot_draws_the_run_cells_fits_not_those_of_the_cells_above(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = _run(tmp_path, "fit_job", FIT_HERE, monkeypatch, above=FIT_ABOVE)
    plots = [o for o in outputs if "image/svg+xml" in o.get("data", {})]
    assert len(plots) == 1, outputs
    assert plots[0].data["text/plain"] == f"epoch 3: loss {0.0:.4g}", plots[0].data["text/plain"]
    assert "mae" not in plots[0].data["image/svg+xml"]  # the cell above's fit, not drawn
    # A page opened after the job ended draws the run cell's plot from the jobs API: the same.
    from tfc_jupyter.returns.cell import JOB_MIME
    from tfc_jupyter.server.service import JobService

    job_id = next(o.data[JOB_MIME]["id"] for o in outputs if JOB_MIME in o.get("data", {}))
    service = JobService(tmp_path)
    own = service.metrics(job_id, run_cell=True)
    assert [e["epoch"] for e in own["epochs"]] == [1, 2, 3] and "mae" not in own["svg"], own
    every = service.metrics(job_id)
    assert len(every["epochs"]) == 5 and "mae" in every["svg"]  # the sidebar's: every fit


def test_an_unfinished_line_is_not_glued_to_the_traceback(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jupyter = _run(tmp_path, "fails_jupyter", FAILS, monkeypatch)
    job = _run(tmp_path, "fails_job", FAILS, monkeypatch)
    mine = ["step 3", " 50%|#####"]
    assert sorted(_lines(jupyter)) == sorted(mine)  # each stream's line, then the error
    lines = _job_lines(job)
    assert sorted(lines[:2]) == sorted(mine), lines
    assert lines[2] == "Traceback (most recent call last):", lines
    assert lines[-1] == "ZeroDivisionError: division by zero"


_JUPYTER_FRAME = re.compile(r"^File (\S+\.py):(\d+), in ", re.M)
_JOB_FRAME = re.compile(r'^\s*File "(\S+\.py)", line (\d+), in ', re.M)


def test_a_failed_jobs_traceback_has_no_runtime_frame(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jupyter = _run(tmp_path, "keras_jupyter", KERAS, monkeypatch)
    job = _run(tmp_path, "keras_job", KERAS, monkeypatch)
    error = next(o for o in jupyter if o.output_type == "error")
    expected = _JUPYTER_FRAME.findall(strip_ansi("\n".join(error.traceback)))
    assert expected and all("keras" in path for path, _ in expected)  # the cell's line, then Keras'
    shown = "\n".join(_job_lines(job))
    frames = _JOB_FRAME.findall(shown)
    assert frames[0][0].endswith("script.py") and "[cell 2, line 6]" in shown
    assert frames[1:] == expected, shown  # the code's line, then Keras' frames, as in Jupyter


ABOVE = """\
import os
import sys
print("loading the data")
print("a warning of the set-up", file=sys.stderr)
if os.environ.get("TFC_JOB_ID") and os.environ.get("FAIL_ABOVE"):
    raise RuntimeError("the data is not there in the job")"""


def test_the_run_cell_shows_what_it_printed_not_what_the_cells_above_printed(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job runs the cells above the run cell first; Jupyter showed their lines where they
    ran, and the run cell shows its own, on both streams."""
    _own_lines(tmp_path, monkeypatch, "")


def test_a_container_s_run_cell_shows_what_it_printed_not_what_the_cells_above_printed(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch, tf_parent_image: str
) -> None:
    """The same through a container's log, a pipe (issue 49)."""
    _own_lines(tmp_path, monkeypatch, f" --backend docker --parent-image {tf_parent_image}")


def _own_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str) -> None:
    code = "import sys\nprint('the run cell')\nprint('its warning', file=sys.stderr)"
    jupyter = _run(tmp_path, "above_jupyter", code, monkeypatch, above=ABOVE)
    job = _run(tmp_path, "above_job", code, monkeypatch, above=ABOVE, flags=flags)
    assert sorted(_lines(jupyter)) == ["its warning", "the run cell"]
    assert sorted(_job_lines(job)) == sorted(_lines(jupyter)), _lines(job)


def test_a_job_failing_in_the_cells_above_shows_what_they_printed(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell above that ran in the kernel fails in the job: the run cell never starts, and
    what the cells above printed is the failure's context, shown with its traceback."""
    monkeypatch.setenv("FAIL_ABOVE", "1")
    job = _run(tmp_path, "above_fails", "print('the run cell')", monkeypatch, above=ABOVE)
    lines = _job_lines(job)
    assert lines[:2] == ["loading the data", "a warning of the set-up"], lines
    assert "the run cell" not in lines
    assert lines[-1] == "RuntimeError: the data is not there in the job", lines
