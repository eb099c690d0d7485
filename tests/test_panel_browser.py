"""The launch panel in a real browser: JupyterLab, Debian chromium, a real 1-worker local job.

Open a notebook, run it (the last cell is ``%tfc_panel``), pick one worker in the panel, double
click Launch, and see the job succeed with both replicas' logs in the panel. The screenshot is
kept as ``artifacts/panel.png``; ``TFC_UPDATE_DOCS=1`` also copies it to the README's
``docs/panel.png``. The job ends with a Keras ``fit``: its loss curve shows in the panel.

And the panel's memory: choices made in the panel are its output's ``%%tfc_run`` line, a save
from the UI stores it with the notebook (no unsaved edit overwritten, no "File Changed"), and a
fresh kernel's panel starts from it.

Issue 23: a Keras ``fit`` with its default progress bar shows in the panel's log one line per
bar, without colour codes (Keras 3's bar, and tf-keras' with a worker); a notebook with several
``%%tfc_run`` cells offers them in the panel, the job running the one picked; the strategy
``auto`` is labelled as the code's choice; a cancel asked for is shown in a neutral colour. The
panel model's side of the cell choice is checked here too, without a browser (not slow).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser import (
    ROOT,
    LabServer,
    check_shown_log,
    lab_command,
    open_notebook,
    restart_kernel,
    screenshot,
)
from jobutil import write_notebook

from tfc_jupyter.config import Settings
from tfc_jupyter.job.options import JobOptions
from tfc_jupyter.jobs import store_for
from tfc_jupyter.notebook import capture
from tfc_jupyter.panel import build_model
from tfc_jupyter.panel.memory import MIME_TYPE as MIME
from tfc_jupyter.panel.memory import ChoicesDisplay, choices_bundle, saved_cell
from tfc_jupyter.planner.fields import STRATEGY_AUTO_LABEL
from tfc_jupyter.store.records import JobState

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


@pytest.mark.slow
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


@pytest.mark.slow
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


# ------------------------------------------------------------------ issue 23
PANEL_DATA = "import numpy as np\nx = np.random.rand(512, 8).astype('float32'); y = x.sum(1)"
PANEL_FIT = (
    "import tensorflow as tf\n"
    "model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])\n"
    "model.compile('sgd', 'mse')\n"
    "model.fit(x, y, epochs=4)"
)
_DONE = ("succeeded", "failed", "cancelled")


def _run_cell(page: Any, index: int) -> None:
    """Run one cell of the notebook in view (not the others: they would launch jobs)."""
    page.evaluate(
        "i => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = i; }", index
    )
    lab_command(page, "notebook:run-cell")


def _ended(page: Any, job_id: str) -> str:
    """Wait until the panel watches ``job_id`` and it has ended; returns its state."""
    page.wait_for_function(
        """([id, done]) => {
  const s = document.querySelector('.tfc-panel .tfc-state');
  const state = s && s.querySelector('.tfc-job-state');
  return !!state && s.innerText.includes(id) && done.includes(state.innerText.trim());
}""",
        arg=[job_id, list(_DONE)],
        timeout=JOB_DEADLINE_MS,
    )
    return _text(page, ".tfc-job-state").strip()


def _launched(page: Any, lab_server: LabServer, count: int) -> str:
    """Click Launch; returns the id of the job it made (the ``count``-th)."""
    launch = page.locator(f"{NB} button.tfc-launch")
    page.wait_for_function(
        f"() => !document.querySelector({json.dumps(NB + ' button.tfc-launch')}).disabled",
        timeout=30_000,
    )
    launch.click()
    deadline = time.monotonic() + 60
    while len(store_for(lab_server.home).list(limit=None)) < count:
        assert time.monotonic() < deadline, "no job launched"
        time.sleep(0.2)
    return store_for(lab_server.home).list(limit=1)[0].id


@pytest.mark.slow
def test_the_panel_shows_each_progress_bar_once_without_colour_codes(
    lab_server: LabServer, browser_page: Any
) -> None:
    """``%tfc_panel`` on a notebook whose ``fit`` draws Keras' default progress bar: launched
    with no worker (Keras 3's bar, in colour codes) and then with one (tf-keras' bar, both
    replicas alike), the panel's log shows one line per bar, without colour codes."""
    page = browser_page
    try:
        _panel_bars_scenario(lab_server, page)
    except Exception:
        screenshot(page, "panel-bars-failure.png")
        raise


def _panel_bars_scenario(lab_server: LabServer, page: Any) -> None:
    name = "panel_bars.ipynb"
    write_notebook(
        lab_server.root_dir / name, "%load_ext tfc_jupyter\n%tfc_panel", PANEL_DATA, PANEL_FIT
    )
    open_notebook(page, lab_server, name)
    _run_cell(page, 0)
    page.wait_for_selector(f"{NB} .tfc-panel .tfc-summary code.tfc-line", timeout=60_000)
    before = len(store_for(lab_server.home).list(limit=None))

    first = _launched(page, lab_server, before + 1)
    assert _ended(page, first) == "succeeded", _text(page, ".tfc-state")
    page.wait_for_function(
        "() => document.querySelector('.tfc-log').innerText.includes('Epoch 4/4')",
        timeout=30_000,
    )
    log = _text(page, ".tfc-log")
    check_shown_log(log, epochs=4, steps=16, prefixed=True)
    assert "[chief] 16/16 ━" in log, log
    raw = (Path(store_for(lab_server.home).get(first).log_dir) / "chief.log").read_bytes()
    assert b"\x1b[" in raw and b"\r" in raw  # what Keras 3 wrote: codes and rewrites
    page.locator(f"{NB} .tfc-plot img").wait_for(timeout=30_000)

    _pick(page, "workers", "1")
    page.wait_for_function(
        "() => document.querySelector('.tfc-summary').innerText.includes('--workers 1')"
    )
    time.sleep(1.2)  # the panel ignores a second click within a second of the first launch
    second = _launched(page, lab_server, before + 2)
    assert _ended(page, second) == "succeeded", _text(page, ".tfc-state")
    page.wait_for_function(
        "() => document.querySelector('.tfc-log').innerText.includes('Epoch 4/4')",
        timeout=30_000,
    )
    log = _text(page, ".tfc-log")
    check_shown_log(log, epochs=4, steps=16, prefixed=True)
    assert "[chief, worker-0] 16/16 [====" in log, log
    page.set_viewport_size({"width": 1280, "height": 1800})  # the whole panel in view
    page.locator(".tfc-panel").scroll_into_view_if_needed()
    time.sleep(0.5)
    screenshot(page.locator(f"{NB} .tfc-panel"), "panel-bars.png")


PANEL_CELLS = (
    "x = 1",
    "%%tfc_run --workers 1\nprint('FIRST', x)",
    "y = 2",
    "%%tfc_run --label pick=second\nimport time\nprint('SECOND', x, y, flush=True)\n"
    "time.sleep(120)",
    "%load_ext tfc_jupyter\n%tfc_panel",
)


@pytest.mark.slow
def test_the_panel_runs_the_tfc_run_cell_picked(lab_server: LabServer, browser_page: Any) -> None:
    """A notebook with two ``%%tfc_run`` cells: the panel offers both (the first picked, its
    flags shown, no "pass --cell"), labels ``auto`` as the code's choice; the second picked, the
    job runs it and the cells above it; cancelled from the panel, it is shown in a neutral
    colour, not as a failure."""
    page = browser_page
    try:
        _panel_cells_scenario(lab_server, page)
    except Exception:
        screenshot(page, "panel-cells-failure.png")
        raise


def _panel_cells_scenario(lab_server: LabServer, page: Any) -> None:
    name = "panel_cells.ipynb"
    write_notebook(lab_server.root_dir / name, *PANEL_CELLS)
    open_notebook(page, lab_server, name)
    _run_cell(page, 4)
    summary = f"{NB} .tfc-panel .tfc-summary"
    page.wait_for_selector(f"{summary} code.tfc-line", timeout=60_000)
    cell = page.locator(f"{NB} .tfc-panel .tfc-cell select")
    assert cell.is_visible()
    # (ipywidgets writes the labels' spaces as no-break spaces)
    assert [o.replace("\xa0", " ") for o in cell.locator("option").all_inner_texts()] == [
        "cell 2: %%tfc_run --workers 1 · print('FIRST', x)",
        "cell 4: %%tfc_run --label pick=second · import time",
    ]
    text = _text(page, summary)
    assert "cells 1, 2 of panel_cells.ipynb" in text and "--workers 1" in text, text
    assert "--cell" not in _text(page, f"{NB} .tfc-panel")
    strategy = page.locator(f"{NB} .tfc-panel .tfc-strategy select")
    labels = [o.replace("\xa0", " ") for o in strategy.locator("option").all_inner_texts()]
    assert labels[0] == "auto (the code decides)", labels
    assert "tfc.run" not in _text(page, f"{NB} .tfc-panel")

    cell.select_option(index=1)
    page.wait_for_function(
        f"() => document.querySelector({json.dumps(summary)}).innerText"
        ".includes('cells 1, 3, 4 of panel_cells.ipynb')",
        timeout=30_000,
    )
    assert page.locator(f"{NB} .tfc-panel .tfc-workers input").input_value() == "0"
    assert page.locator(f"{NB} .tfc-panel .tfc-label input").input_value() == "pick=second"
    assert "--label pick=second" in _text(page, summary)
    # The panel's memory keeps the cell picked beside the line.
    page.wait_for_function(
        "() => [...document.querySelectorAll('.tfc-PanelChoices')].some(n => n.innerText"
        ".includes('%%tfc_run --label pick=second on cell 4'))",
        timeout=15_000,
    )
    screenshot(page.locator(f"{NB} .tfc-panel"), "panel-cells.png")

    before = len(store_for(lab_server.home).list(limit=None))
    job_id = _launched(page, lab_server, before + 1)
    page.wait_for_function(
        "() => document.querySelector('.tfc-log').innerText.includes('SECOND 1 2')",
        timeout=JOB_DEADLINE_MS,
    )
    assert "FIRST" not in _text(page, ".tfc-log")
    page.locator(f"{NB} .tfc-panel button.tfc-cancel").click()
    assert _ended(page, job_id) == "cancelled"
    record = store_for(lab_server.home).get(job_id)
    assert record.state is JobState.CANCELLED and record.spec["labels"] == {"pick": "second"}
    # A cancel asked for: the state in grey, no error line in red.
    state = page.locator(f"{NB} .tfc-panel .tfc-state")
    color = state.locator(".tfc-job-state").evaluate("n => getComputedStyle(n).color")
    assert color == "rgb(110, 119, 129)", color
    assert "cf222e" not in str(state.inner_html()).lower(), state.inner_html()
    time.sleep(0.5)
    screenshot(page.locator(f"{NB} .tfc-panel"), "panel-cancelled.png")


# The panel model's side of the cell choice: no browser, no kernel.
def _panel_model(tmp_path: Path, settings: Settings, *cells: str, remember: bool = True) -> Any:
    nb = write_notebook(tmp_path / "cells.ipynb", *cells).resolve()

    def select() -> capture.Selection:  # as %tfc_panel selects: the first %%tfc_run cell
        return capture.select_cells(capture.read_notebook(nb), path=nb, how="test")

    base = JobOptions.from_line(select().magic_line)  # as %tfc_panel starts: the cell's line
    return build_model(settings, select=select, base=base, notebook=nb, remember=remember)


def test_the_panel_model_offers_and_runs_the_tfc_run_cell_picked(
    tmp_path: Path, settings: Settings
) -> None:
    model = _panel_model(tmp_path, settings, *PANEL_CELLS[:4])
    assert [c.label for c in model.run_cells()] == [
        "cell 2: %%tfc_run --workers 1 · print('FIRST', x)",
        "cell 4: %%tfc_run --label pick=second · import time",
    ]
    assert model.current_cell() == 2 and model.check.ok, model.check.error
    plan = model.check.plan
    assert plan is not None and list(plan.script.cells) == [1, 2]
    assert not [w for w in plan.warnings if "--cell" in w], plan.warnings
    assert model.choices.workers == 1

    check = model.set_cell(4)
    assert check.ok, check.error
    assert model.current_cell() == 4 and model.choices.workers == 0
    assert model.choices.label == "pick=second"
    assert check.plan is not None and list(check.plan.script.cells) == [1, 3, 4]
    assert model.line() == "%%tfc_run --label pick=second"
    summary = model.summary()
    assert summary is not None and summary["cells"] == [1, 3, 4]
    assert list(model.plan(fresh=True).script.cells) == [1, 3, 4]  # what Launch runs
    with pytest.raises(ValueError):
        model.set_cell(3)  # not a %%tfc_run cell


def test_the_panel_model_offers_no_cell_choice_for_one_cell_or_its_own(
    tmp_path: Path, settings: Settings
) -> None:
    one = _panel_model(tmp_path, settings, "x = 1", "%%tfc_run\nprint(x)")
    assert one.run_cells() == [] and one.current_cell() is None and one.check.ok
    own = _panel_model(tmp_path, settings, *PANEL_CELLS[:4], remember=False)
    assert own.run_cells() == []  # %%tfc_run --interactive: its own cell runs


def test_the_panel_labels_auto_as_the_codes_choice(tmp_path: Path, settings: Settings) -> None:
    model = _panel_model(tmp_path, settings, "%%tfc_run\nprint(1)")
    labels = {o.value: o.label for o in model.options("strategy")}
    assert labels["auto"] == STRATEGY_AUTO_LABEL == "auto (the code decides)"
    assert not [label for label in labels.values() if "tfc.run" in label]


def test_the_panel_remembers_the_tfc_run_cell_picked(tmp_path: Path, settings: Settings) -> None:
    """The memory holds the cell picked beside the line; a new panel starts from that cell (its
    line the base), while it is still a ``%%tfc_run`` cell."""
    line = "%%tfc_run --workers 2 --label pick=second"
    bundle = choices_bundle(line, notebook=None, cell=4)
    assert bundle[MIME]["cell"] == 4 and bundle["text/plain"].endswith(f"{line} (cell 4)")
    assert "cell" not in choices_bundle(line, notebook=None)[MIME]  # one %%tfc_run cell: none

    sent: list[tuple[dict[str, Any], str, bool]] = []
    shown = ChoicesDisplay(None, publish=lambda b, i, u: sent.append((b, i, u)))
    shown.show(line, 2)
    assert shown.update(line, 2) is False  # unchanged
    assert shown.update(line, 4) is True and sent[-1][0][MIME]["cell"] == 4

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in PANEL_CELLS[:4]]
    panel = nbformat.v4.new_code_cell("%tfc_panel")
    panel.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells.append(panel)
    path = tmp_path / "remembered.ipynb"
    nbformat.write(nb, path)
    assert saved_cell(capture.read_notebook(path)) == 4

    def select() -> capture.Selection:
        return capture.select_cells(capture.read_notebook(path), path=path, how="test")

    first = JobOptions.from_line(select().magic_line)  # what %tfc_panel passes: the first cell's
    model = build_model(settings, select=select, base=first, notebook=path)
    assert model.current_cell() == 4 and model.choices.workers == 2, model.check.error
    assert model.check.plan is not None and list(model.check.plan.script.cells) == [1, 3, 4]
    assert model.line() == line

    # The cell gone (now plain code): the first cell, as without a memory of it.
    nb.cells[3].source = "print('no longer a run cell')"
    nbformat.write(nb, path)
    model = build_model(settings, select=select, base=first, notebook=path)
    assert model.run_cells() == [] and model.current_cell() is None


_PANEL_FIELDS = """() => [...document.querySelectorAll('.tfc-panel .widget-label')]
  .map(label => [label.closest('.jupyter-widgets'), label.innerText.replace(/\u200b/g, '').trim()])
  .map(([box, text]) => [[...(box?.classList ?? [])].find(c => c.startsWith('tfc-')), text])
  .filter(([name, text]) => name && name !== 'tfc-cell' && name !== 'tfc-jobs' && text)
  .map(([name, text]) => [name.slice(4).replace(/-/g, '_'), text])"""
_FORM_FIELDS = """() => [
  ...document.querySelectorAll('.jp-Dialog .tfc-LaunchForm label[data-field]')
].map(label => [label.dataset.field, label.firstChild.textContent.trim()])"""


@pytest.mark.slow
def test_the_form_and_the_panel_show_the_same_fields(
    lab_server: LabServer, browser_page: Any
) -> None:
    """Issue 36: the JupyterLab form and the ipywidgets panel render one list, the option
    table's labelled options: the same fields, in the same order, with the same labels."""
    page = browser_page
    write_notebook(
        lab_server.root_dir / "fields.ipynb", "%load_ext tfc_jupyter", "x = 1", "%tfc_panel"
    )
    open_notebook(page, lab_server, "fields.ipynb")
    lab_command(page, "notebook:run-all-cells")
    page.wait_for_selector(".tfc-panel .tfc-summary", timeout=60_000)
    panel = [tuple(pair) for pair in page.evaluate(_PANEL_FIELDS)]
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .tfc-LaunchButton").first.click()
    page.locator(".jp-Dialog .tfc-LaunchForm").wait_for()
    form = [tuple(pair) for pair in page.evaluate(_FORM_FIELDS)]
    page.locator(".jp-Dialog .jp-mod-reject").click()
    from tfc_jupyter.planner.fields import form_fields

    table = [(f.name, f.label) for f in form_fields()]
    assert form == table, form
    assert panel == table, panel
    assert ("sweep", "Swept variables") in table  # the sweep's section, on both
