"""The launch panel in a real browser: JupyterLab, Debian chromium, a real 1-worker local job.

Open a notebook, run it (the last cell is ``%tfc_panel``), pick one worker in the panel, double
click Launch, and see the job succeed with both replicas' logs in the panel. The screenshot is
kept as ``artifacts/panel.png``; ``TFC_UPDATE_DOCS=1`` also copies it to the README's
``docs/panel.png``. The job ends with a Keras ``fit``: its loss curve shows in the panel.

And the panel's memory: choices made in the panel are its output's ``%%tfc_run`` line, a save
from the UI stores it with the notebook (no unsaved edit overwritten, no "File Changed"), and a
fresh kernel's panel starts from it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any

import nbformat
import pytest
from browser import ROOT, LabServer, lab_command, open_notebook, restart_kernel, screenshot
from jobutil import write_notebook

from tfc_jupyter.jobs import store_for
from tfc_jupyter.panel.memory import MIME_TYPE as MIME
from tfc_jupyter.records import JobState

pytestmark = pytest.mark.slow

TRAIN = """\
import tensorflow as tf

strategy = tf.distribute.get_strategy()  # the job's strategy, set by tfc_runtime
per_replica = strategy.run(lambda: tf.constant(1.0))
total = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
mwms = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
print("MultiWorkerMirrored:", mwms, "replicas in sync:", strategy.num_replicas_in_sync)
print("sum over replicas:", float(total))

import numpy as np

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.SGD(0.05), "mse")
x = np.linspace(0, 1, 64, dtype="float32").reshape(16, 4)
model.fit(x, x.sum(1), epochs=5, batch_size=8, verbose=2)
"""
JOB_DEADLINE_MS = 180_000


def _text(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.inner_text())


def test_pick_launch_and_watch_a_job_in_the_panel(lab_server: LabServer, browser_page: Any) -> None:
    page = browser_page
    write_notebook(
        lab_server.root_dir / "panel_demo.ipynb", "%load_ext tfc_jupyter", TRAIN, "%tfc_panel"
    )
    open_notebook(page, lab_server, "panel_demo.ipynb")
    lab_command(page, "notebook:run-all-cells")
    page.wait_for_selector(".tfc-panel .tfc-summary code.tfc-line", timeout=60_000)
    assert "none (auto)" in _text(page, ".tfc-summary")

    # Pick one worker (typed, then Enter): the summary follows at once.
    workers = page.locator(".tfc-workers input")
    workers.fill("1")
    workers.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('.tfc-summary').innerText"
        ".includes('multi_worker_mirrored (auto)')"
    )
    summary = _text(page, ".tfc-summary")
    assert "%%tfc_run --workers 1" in summary and "worker × 1" in summary

    # A double click launches one job; the stages and the job's state show in the panel.
    launch = page.locator("button.tfc-launch")
    assert launch.is_enabled()
    launch.dblclick()
    page.wait_for_selector(".tfc-stage-done:has-text('submit')", timeout=60_000)
    page.wait_for_function(
        "() => { const s = document.querySelector('.tfc-job-state');"
        " return s && ['succeeded', 'failed', 'cancelled'].includes(s.innerText.trim()); }",
        timeout=JOB_DEADLINE_MS,
    )
    page.wait_for_function(
        "() => document.querySelector('.tfc-log').innerText.includes('[chief, worker-0] sum over')",
        timeout=30_000,
    )
    # The chief's loss by epoch, drawn in the panel (an image, not markup from the job).
    plot = page.locator(".tfc-plot img")
    plot.wait_for(timeout=30_000)
    assert str(plot.get_attribute("src")).startswith("data:image/svg+xml;base64,")
    page.set_viewport_size({"width": 1280, "height": 1600})  # the whole panel in view
    page.locator(".tfc-panel").scroll_into_view_if_needed()
    time.sleep(0.5)  # let the last render settle for the screenshot
    shot = screenshot(page.locator(".tfc-panel"), "panel.png")
    if os.environ.get("TFC_UPDATE_DOCS") == "1":
        shutil.copyfile(shot, ROOT / "docs" / "panel.png")

    state = _text(page, ".tfc-job-state").strip()
    log = _text(page, ".tfc-log")
    assert state == "succeeded", f"{_text(page, '.tfc-state')}\n{log}"
    # A line both replicas printed alike is shown once, the replicas named.
    assert "[chief, worker-0] MultiWorkerMirrored: True replicas in sync: 2" in log
    assert "[chief, worker-0] sum over replicas: 2.0" in log
    assert "[worker-0] sum over" not in log
    stages = _text(page, ".tfc-stages")
    assert "✓ convert" in stages and "– build" in stages and "✓ submit" in stages

    records = store_for(lab_server.home).list()
    assert len(records) == 1, [r.id for r in records]  # one job for the double click
    assert records[0].state is JobState.SUCCEEDED
    assert records[0].spec["worker_count"] == 1

    # The job list (what a re-opened panel attaches from) shows it, ended.
    listed = page.evaluate(
        "() => document.querySelector('.tfc-jobs select').selectedOptions[0].text"
    )
    assert records[0].id in listed and "succeeded" in listed

    # Per-replica view: only the worker's lines.
    page.locator(".tfc-replicas button:has-text('worker-0')").click()
    page.wait_for_function(
        "() => !document.querySelector('.tfc-log').innerText.includes('[chief]')"
    )
    assert "sum over replicas: 2.0" in _text(page, ".tfc-log")


# The notebook in view (a notebook opened by an earlier test may be restored in a hidden tab).
NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
# The current notebook's live model: whether it has unsaved changes, cell 1's text.
_LIVE = """() => {
  const model = window.jupyterapp.shell.currentWidget.context.model;
  return {dirty: model.dirty, cell1: model.sharedModel.cells[1].getSource()};
}"""


def _pick(page: Any, choice: str, value: str) -> None:
    """Type a value into one of the panel's text boxes and press Enter (as a user does)."""
    box = page.locator(f"{NB} .tfc-panel .tfc-{choice} input")
    box.fill(value)
    box.press("Enter")


def _run_to_panel(page: Any) -> None:
    lab_command(page, "notebook:clear-all-cell-outputs")
    lab_command(page, "notebook:run-all-cells")
    page.wait_for_selector(f"{NB} .tfc-panel .tfc-summary code.tfc-line", timeout=60_000)


def test_choices_are_kept_in_the_panels_saved_output(
    lab_server: LabServer, browser_page: Any
) -> None:
    page, name = browser_page, "panel_memory.ipynb"
    path = lab_server.root_dir / name
    write_notebook(path, "%load_ext tfc_jupyter", "x = 1", "%tfc_panel")
    open_notebook(page, lab_server, name)
    _run_to_panel(page)

    # An unsaved edit elsewhere in the notebook: the panel's memory must not overwrite it.
    page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.widgets[1]"
        ".model.sharedModel.setSource('x = 41')"
    )
    _pick(page, "workers", "2")
    _pick(page, "region", "europe-west4")
    line = "%%tfc_run --workers 2 --region europe-west4"
    summary = f"{NB} .tfc-summary"
    page.wait_for_function(
        f"() => document.querySelector({json.dumps(summary)}).innerText"
        ".includes('--workers 2 --region europe-west4')"
    )
    note = page.locator(f"{NB} .tfc-PanelChoices")
    page.wait_for_function(
        "l => [...document.querySelectorAll('.tfc-PanelChoices')].some(n => n.innerText"
        ".includes(l))",
        arg=line,
        timeout=15_000,
    )
    assert note.count() == 1  # one output, updated in place
    live = page.evaluate(_LIVE)
    assert live["dirty"] and live["cell1"] == "x = 41"
    assert line not in path.read_text()  # not on disk before a save

    # Save from the UI (Ctrl+S, the notebook focused): no "File Changed" dialog, all on disk.
    page.locator(f"{NB} .jp-Cell .jp-InputPrompt").first.click()
    page.keyboard.press("Control+s")
    page.wait_for_function(f"() => !({_LIVE})().dirty", timeout=15_000)
    assert page.locator(".jp-Dialog").count() == 0
    saved = nbformat.read(path, as_version=4)
    assert saved.cells[1].source == "x = 41"  # the unsaved edit, saved with it
    assert "tfc_jupyter" not in saved.metadata  # nothing but the output
    ours = [o for c in saved.cells for o in c.get("outputs", []) if MIME in o.get("data", {})]
    assert len(ours) == 1 and ours[0].data[MIME]["line"] == line  # one output, in place

    # A fresh kernel: the panel starts from the line saved with the notebook.
    restart_kernel(page, name)
    _run_to_panel(page)
    assert page.locator(f"{NB} .tfc-panel .tfc-workers input").input_value() == "2"
    assert page.locator(f"{NB} .tfc-panel .tfc-region input").input_value() == "europe-west4"
    assert line in _text(page, summary)
