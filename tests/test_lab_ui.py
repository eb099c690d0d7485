"""The JupyterLab sidebar and launch button, in a real JupyterLab driven through Debian chromium.

One scenario, as a user would go through it: open a notebook whose ``%%tfc_run`` cell asks for
one worker, edit a cell without saving, open the launch form from the toolbar: it shows the
cell's flags, checks each change with the server's dry run as it is made (an impossible choice
disables Launch), and a launch that fails opens it again with the values kept. Launch the
1-worker job (a real 2-process local job), watch it in the sidebar until it succeeds, read the
edited cell's output in the job's logs (chief and worker), then launch a second job from the
command palette with 0 workers over the cell's 1, and cancel it from its detail view.
All along, each detail view's state agrees with its sidebar row (one store feeds both) and Cancel
is disabled once a job has ended; the rows show start time and notebook, newest first, and filter;
tab titles are the job's name and short id; the supervisor tab shows only when its log has text.
A third job, a Keras ``fit``, shows its curves (the server's SVG) in its detail view while it
trains, and its last loss in the sidebar. A Python script open in the editor, edited and not
saved, launches as itself (its text and its arguments) from the same form.
Screenshots go to ``artifacts/``; ``TFC_UPDATE_DOCS=1`` also copies the sidebar one (after the
third job) to ``docs/sidebar.png``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import ROOT, LabServer, lab_command, open_notebook, screenshot, start_lab
from jobutil import JOB_DEADLINE_S, write_notebook

from tfc_jupyter.jobs import store_for
from tfc_jupyter.records import JobState

pytestmark = pytest.mark.slow

SAVED = "print('saved version of the cell')"
RUN_CELL = "%%tfc_run --workers 1 --label team=ui\nprint('run cell')"
JOB_MS = JOB_DEADLINE_S * 1000


def _edit_cell(page: Any, index: int, source: str) -> None:
    """Show the notebook and replace a cell's text in the editor (the notebook is not saved)."""
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="ui.ipynb").click()
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").wait_for()
    editor = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .cm-content").nth(index)
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(source)
    page.wait_for_function(
        "text => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) "
        ".jp-Cell .cm-content')].some(n => n.innerText.includes(text))",
        arg=source.splitlines()[-1],
    )


def _launch_dialog(page: Any) -> Any:
    dialog = page.locator(".jp-Dialog .tfc-LaunchForm")
    dialog.wait_for()
    return dialog


def _accept(page: Any) -> None:
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.locator(".jp-Dialog").wait_for(state="detached")


def _checked(form: Any, state: str) -> None:
    """Wait until the form's own dry run of its values says ``state`` (ok, error)."""
    form.locator(f".tfc-CheckState[data-state='{state}']").wait_for(timeout=30_000)


def _launch_enabled(page: Any) -> bool:
    return bool(page.locator(".jp-Dialog .jp-mod-accept").is_enabled())


def _job_row(page: Any, state: str) -> Any:
    return page.locator(f".tfc-Sidebar .tfc-JobRow[data-state='{state}']")


# Records, on every change of the page, each moment a detail view and the sidebar row of its job
# show different states, or a detail view of an ended job has Cancel enabled.
_WATCH_AGREEMENT = """() => {
  window.tfcDisagreements = [];
  const ended = ['succeeded', 'failed', 'cancelled'];
  const check = () => {
    for (const detail of document.querySelectorAll('.tfc-JobDetail[data-job-id]')) {
      const id = detail.dataset.jobId;
      const row = document.querySelector(`.tfc-JobRow[data-job-id="${id}"]`);
      const state = detail.dataset.state;
      if (row && row.dataset.state !== state) {
        window.tfcDisagreements.push(`${id}: detail ${state}, row ${row.dataset.state}`);
      }
      const cancel = detail.querySelector('.tfc-CancelButton');
      if (cancel && ended.includes(detail.dataset.state) && !cancel.disabled) {
        window.tfcDisagreements.push(`${id}: ${detail.dataset.state} with Cancel enabled`);
      }
    }
  };
  new MutationObserver(check).observe(document.body, {
    subtree: true, childList: true, attributes: true, attributeFilter: ['data-state', 'disabled']
  });
}"""


def _start_text(created_at: float) -> str:
    """The sidebar's start time of a job: ``14:02`` today, else ``Nov 23 14:02`` (local time)."""
    when, now = time.localtime(created_at), time.localtime()
    clock = time.strftime("%H:%M", when)
    if when[:3] == now[:3]:
        return clock
    return f"{time.strftime('%b', when)} {when.tm_mday} {clock}"


def _tab(page: Any, job_id: str) -> Any:
    """The main-area tab of a job's detail view (its tooltip holds the full id)."""
    return page.locator(f".lm-DockPanel-tabBar .lm-TabBar-tab[title*='{job_id}']")


def test_launch_follow_and_cancel_from_jupyterlab(lab_server: LabServer, browser_page: Any) -> None:
    try:
        _scenario(lab_server, browser_page)
    except Exception:
        screenshot(browser_page, "lab-failure.png")  # what the page showed when it failed
        raise


def _scenario(lab_server: LabServer, page: Any) -> None:
    write_notebook(lab_server.root_dir / "ui.ipynb", SAVED, RUN_CELL)
    # A user setting of the extension (schema/plugin.json): the form's default region.
    settings = Path(lab_server.env["JUPYTER_CONFIG_DIR"]) / "lab" / "user-settings" / "tfc-jupyter"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "plugin.jupyterlab-settings").write_text('{"region": "europe-west4"}')
    open_notebook(page, lab_server, "ui.ipynb")
    loaded = page.evaluate(
        "() => ['tfc-jupyter:plugin', 'tfc-jupyter:jobs'].map(p => window.jupyterapp.hasPlugin(p))"
    )
    assert loaded == [True, True], (
        "the tfc-jupyter labextension is not built or installed: run `bash scripts/bootstrap.sh`"
    )
    page.evaluate(_WATCH_AGREEMENT)

    # Edit the cell, do not save.
    marker = f"EDITED-{secrets.token_hex(4)}"
    _edit_cell(page, 0, f"print('{marker}')")
    page.locator(".jp-mod-current.jp-mod-dirty, .lm-TabBar-tab.jp-mod-dirty").first.wait_for()
    assert marker not in (lab_server.root_dir / "ui.ipynb").read_text()

    # The form opens on the cell's own flags, and checks them with the server's dry run.
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .tfc-LaunchButton").first.click()
    form = _launch_dialog(page)
    assert "unsaved edits" in form.locator(".tfc-LiveNotice").inner_text()
    assert form.locator("select[name=backend]").input_value() == "local"
    assert form.locator("input[name=region]").input_value() == "europe-west4"
    assert form.locator("input[name=workers]").input_value() == "1"  # the cell's --workers 1
    assert form.locator("input[name=labels]").input_value() == "team=ui"
    assert form.locator("select[name=strategy]").input_value() == "auto"
    _checked(form, "ok")
    preview = form.locator(".tfc-PlanPreview")
    assert "multi_worker_mirrored" in preview.inner_text()
    assert "live notebook model" in preview.inner_text()
    line = preview.locator(".tfc-PlanLine").inner_text()
    assert "--workers 1 " in line and "--label team=ui" in line and "--gpus" not in line
    assert _launch_enabled(page)
    # An impossible choice is refused as it is made, and Launch is disabled until it is undone.
    form.locator("select[name=tpu]").select_option("v3-8")
    _checked(form, "error")
    assert "TPU" in form.locator(".tfc-Error").inner_text()
    assert not _launch_enabled(page)
    form.locator("select[name=tpu]").select_option("")
    _checked(form, "ok")
    # What the run would refuse, the form says as it is chosen: Vertex AI with no project.
    form.locator("select[name=backend]").select_option("vertex")
    form.locator("input[name=project]").fill("")
    _checked(form, "error")
    assert "project" in form.locator(".tfc-Error").inner_text()
    assert not _launch_enabled(page)
    form.locator("select[name=backend]").select_option("local")
    _checked(form, "ok")
    # A launch that fails all the same (the job home broken behind its back) opens the form
    # again, with the values kept and the error.
    jobs_dir = lab_server.home / "jobs"
    aside = lab_server.home / "jobs.aside"
    if jobs_dir.exists():
        jobs_dir.rename(aside)
    jobs_dir.write_text("not a folder")
    try:
        page.locator(".jp-Dialog .jp-mod-accept").click()
        form = _launch_dialog(page)
        form.locator(".tfc-LaunchError").wait_for(timeout=30_000)
        assert "Launch failed" in form.locator(".tfc-LaunchError").inner_text()
    finally:
        jobs_dir.unlink()
        if aside.exists():
            aside.rename(jobs_dir)
    assert form.locator("input[name=workers]").input_value() == "1"
    assert form.locator("input[name=labels]").input_value() == "team=ui"
    _checked(form, "ok")
    screenshot(page, "lab-launch-form.png")
    _accept(page)

    # The job appears in the sidebar and its detail view follows it to the end.
    page.locator(".tfc-Sidebar .tfc-JobRow").first.wait_for()
    detail = page.locator(".tfc-JobDetail").first
    detail.wait_for()
    page.locator(".tfc-JobDetail[data-state='succeeded']").wait_for(timeout=JOB_MS)
    _job_row(page, "succeeded").wait_for()
    chief_log = page.locator(".tfc-LogText[data-replica='chief']")
    page.wait_for_function(
        "m => [...document.querySelectorAll('.tfc-LogText')].some(n => n.innerText.includes(m))",
        arg=marker,
        timeout=30_000,
    )
    assert marker in chief_log.inner_text()
    # TensorFlow's start-up chatter is left out, until asked for.
    assert "absl::InitializeLog" not in chief_log.inner_text()
    assert "[tfc_runtime] task" not in chief_log.inner_text()
    page.locator(".tfc-VerboseToggle input").first.check()
    page.wait_for_function(
        "() => document.querySelector(\".tfc-LogText[data-replica='chief']\")"
        "?.innerText.includes('absl::InitializeLog')",
        timeout=30_000,
    )
    page.locator(".tfc-VerboseToggle input").first.uncheck()
    page.locator(".tfc-ReplicaTab[data-replica='worker-0']").click()
    page.wait_for_function(
        "m => document.querySelector(\".tfc-LogText[data-replica='worker-0']\")"
        "?.innerText.includes(m)",
        arg=marker,
        timeout=30_000,
    )
    row = _job_row(page, "succeeded").first.inner_text()
    assert "local" in row and "$0.00 local" in row and " s" in row
    first = store_for(lab_server.home).list(limit=1)[0]
    succeeded = page.locator(f".tfc-JobDetail[data-job-id='{first.id}']")
    assert succeeded.get_attribute("data-state") == "succeeded"
    assert succeeded.locator(".tfc-CancelButton").is_disabled()
    # The tab says the job's name and short id (not the id cut from the left); its tooltip, the id.
    assert _tab(page, first.id).inner_text().strip() == f"{first.name} · {first.id[-6:]}"
    # The watcher's own log is empty: no supervisor tab.
    supervisor_log = Path(first.log_dir) / "supervisor.log"
    assert not supervisor_log.exists() or supervisor_log.stat().st_size == 0
    assert succeeded.locator(".tfc-ReplicaTab").all_inner_texts() == ["chief", "worker-0"]
    screenshot(page, "lab-job-succeeded.png")

    # A second job, from the command palette, that runs until it is cancelled.
    sleeper = f"SLEEPING-{secrets.token_hex(4)}"
    _edit_cell(page, 0, f"import time\nprint('{sleeper}', flush=True)\ntime.sleep(600)")
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+Shift+C")
    page.locator(".lm-CommandPalette-input").fill("Launch on")
    page.locator(".lm-CommandPalette-item", has_text="Launch on ...").first.click()
    form = _launch_dialog(page)
    form.locator("select[name=strategy]").select_option("none")
    form.locator("input[name=workers]").fill("0")  # 0 over the cell's --workers 1
    _checked(form, "ok")
    assert "worker(s)" not in form.locator(".tfc-PlanPreview").inner_text()
    _accept(page)
    running = page.locator(".tfc-JobDetail[data-state='running']")
    running.wait_for(timeout=JOB_MS)
    page.wait_for_function(
        "m => [...document.querySelectorAll('.tfc-LogText')].some(n => n.innerText.includes(m))",
        arg=sleeper,
        timeout=JOB_MS,
    )
    _job_row(page, "running").wait_for()
    running_id = running.get_attribute("data-job-id")
    assert running_id and running_id != first.id
    assert running.locator(".tfc-CancelButton").is_enabled()
    assert _tab(page, running_id).inner_text().strip().endswith(f" · {running_id[-6:]}")
    # When the watcher has something to say (here: a line in its log, as it writes on trouble),
    # the supervisor tab shows it.
    assert running.locator(".tfc-ReplicaTab[data-replica='supervisor']").count() == 0
    watcher_note = f"watcher note {secrets.token_hex(4)}"
    running_record = store_for(lab_server.home).get(running_id)
    with open(Path(running_record.log_dir) / "supervisor.log", "a") as log:
        log.write(watcher_note + "\n")
    running.locator(".tfc-ReplicaTab[data-replica='supervisor']").click(timeout=15_000)
    page.wait_for_function(
        "m => document.querySelector(\".tfc-LogText[data-replica='supervisor']\")"
        "?.innerText.includes(m)",
        arg=watcher_note,
        timeout=15_000,
    )
    running.locator(".tfc-CancelButton").click()
    page.locator(".tfc-JobDetail[data-state='cancelled']").wait_for(timeout=60_000)
    _job_row(page, "cancelled").wait_for(timeout=10_000)
    cancelled = page.locator(f".tfc-JobDetail[data-job-id='{running_id}']")
    assert cancelled.get_attribute("data-state") == "cancelled"
    assert cancelled.locator(".tfc-CancelButton").is_disabled()

    # The records agree, and the notebook file was never saved.
    records = store_for(lab_server.home).list(limit=None)
    assert [r.state for r in records] == [JobState.CANCELLED, JobState.SUCCEEDED]
    assert records[1].spec["worker_count"] == 1 and records[0].spec["worker_count"] == 0
    assert records[1].spec["labels"] == {"team": "ui"}
    assert all(r.notebook == str(lab_server.root_dir / "ui.ipynb") for r in records)
    assert SAVED in (lab_server.root_dir / "ui.ipynb").read_text()

    # The rows: newest first, each with its start time and notebook; the filter narrows them.
    rows = page.locator(".tfc-Sidebar .tfc-JobRow")
    assert [rows.nth(i).get_attribute("data-job-id") for i in range(rows.count())] == [
        r.id for r in records
    ]
    for record in records:
        meta = page.locator(f".tfc-JobRow[data-job-id='{record.id}']").inner_text()
        assert _start_text(record.created_at) in meta and "ui.ipynb" in meta, meta
    search = page.locator(".tfc-Sidebar .tfc-JobFilter-input")
    for words, expected in (
        ("cancelled", [records[0].id]),
        (records[1].id[-6:], [records[1].id]),
        ("UI.ipynb local", [r.id for r in records]),
        ("local succeeded", [records[1].id]),
    ):
        search.fill(words)
        page.wait_for_function(
            "n => document.querySelectorAll('.tfc-Sidebar .tfc-JobRow').length === n",
            arg=len(expected),
            timeout=5_000,
        )
        shown = [rows.nth(i).get_attribute("data-job-id") for i in range(rows.count())]
        assert shown == expected, (words, shown)
    search.fill("no-such-job")
    page.locator(".tfc-Sidebar .tfc-NoMatch").wait_for(timeout=5_000)
    search.fill("")
    rows.nth(len(records) - 1).wait_for(timeout=5_000)
    # Not once did a detail view and the sidebar disagree, or an ended job offer Cancel.
    assert page.evaluate("() => window.tfcDisagreements") == []

    # Both jobs in the sidebar, the succeeded one's logs open.
    _job_row(page, "succeeded").first.click()
    page.locator(".tfc-JobDetail[data-state='succeeded'] .tfc-LogText").first.wait_for()
    page.locator(".Toastify__toast").first.wait_for(state="detached", timeout=15_000)
    screenshot(page, "lab-jobs.png")


# A Keras `fit` whose epochs take a while (the sleep), so the plot can be seen growing.
FIT_CELL = """%%tfc_run
import time
import numpy as np
import tensorflow as tf
x = np.random.default_rng(0).normal(size=(256, 4)).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
model = tf.keras.Sequential([
    tf.keras.Input((4,)),
    tf.keras.layers.Dense(8, activation="relu"),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
pause = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: time.sleep(1.5))
model.fit(x, y, epochs=8, batch_size=32, verbose=2, callbacks=[pause])
"""

# While the job's detail view says "running", note each plot image it shows; true once it has
# ended.
_PLOTS_WHILE_RUNNING = """(id) => {
  const detail = document.querySelector(`.tfc-JobDetail[data-job-id="${id}"]`);
  const img = detail && detail.querySelector('img.tfc-MetricsPlot');
  window.tfcPlots = window.tfcPlots || [];
  if (img && detail.dataset.state === 'running' && !window.tfcPlots.includes(img.src)) {
    window.tfcPlots.push(img.src);
  }
  return !!detail && ['succeeded', 'failed', 'cancelled'].includes(detail.dataset.state);
}"""


def _metric(value: float) -> str:
    """A metric as the sidebar and the detail view write it: 3 significant digits."""
    return f"{float(f'{value:.3g}'):g}"


def test_the_job_detail_plots_the_metrics_as_it_trains(
    lab_server: LabServer, browser_page: Any
) -> None:
    page = browser_page
    try:
        _plot_scenario(lab_server, page)
    except Exception:
        screenshot(page, "lab-plot-failure.png")
        raise


def _plot_scenario(lab_server: LabServer, page: Any) -> None:
    write_notebook(lab_server.root_dir / "fit.ipynb", FIT_CELL)
    # A fresh workspace (the server remembers the earlier test's tabs).
    page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    page.wait_for_function("() => window.jupyterapp?.hasPlugin('tfc-jupyter:jobs')")
    lab_command(page, "tfc-jupyter:show-jobs")
    page.evaluate(_WATCH_AGREEMENT)
    created = lab_server.api("POST", "tfc-jupyter/jobs", {"path": "fit.ipynb", "options": {}})
    job_id = created["job"]["id"]
    lab_command(page, "tfc-jupyter:open-job", {"id": job_id})
    detail = page.locator(f".tfc-JobDetail[data-job-id='{job_id}']")
    detail.wait_for()
    page.wait_for_function(_PLOTS_WHILE_RUNNING, arg=job_id, polling=200, timeout=JOB_MS)
    assert detail.get_attribute("data-state") == "succeeded", store_for(lab_server.home).get(job_id)
    # The plot was shown while it trained, and redrawn as epochs came.
    assert len(page.evaluate("() => window.tfcPlots")) >= 2
    # It is the server's SVG, as an image; the last metrics are written beside it.
    metrics = lab_server.api("GET", f"tfc-jupyter/jobs/{job_id}/metrics")
    assert metrics["terminal"] and len(metrics["epochs"]) == 8 and metrics["svg"]
    plot = detail.locator("img.tfc-MetricsPlot")
    plot.wait_for()
    page.wait_for_function(
        "([id, svg]) => {"
        "  const img = document.querySelector(`.tfc-JobDetail[data-job-id='${id}'] img`);"
        "  const text = img && new TextDecoder().decode("
        "    Uint8Array.from(atob(img.src.split(',')[1]), c => c.charCodeAt(0)));"
        "  return text === svg && img.naturalWidth > 0;"
        "}",
        arg=[job_id, metrics["svg"]],
        timeout=10_000,
    )
    assert plot.get_attribute("src").startswith("data:image/svg+xml;base64,")
    last = metrics["last"]
    values = detail.locator(".tfc-MetricsLast-values").inner_text()
    assert f"loss {_metric(last['loss'])}" in values
    assert f"accuracy {_metric(last['accuracy'])}" in values
    assert "epoch 8" in detail.locator(".tfc-MetricsLast").inner_text()
    # The sidebar's row gives the last loss too (the job dict's last_metrics).
    row = page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{job_id}']")
    row.locator(".tfc-JobRow-metric", has_text=f"loss {_metric(last['loss'])}").wait_for(
        timeout=10_000
    )
    assert "fit.ipynb" in row.inner_text()
    assert page.evaluate("() => window.tfcDisagreements") == []
    # The picture for the README: the sidebar's jobs, this one's curves and log.
    page.locator(".Toastify__toast").first.wait_for(state="detached", timeout=15_000)
    detail.locator(".tfc-Following").wait_for(state="detached", timeout=10_000)
    shot = screenshot(page, "lab-sidebar.png")
    if os.environ.get("TFC_UPDATE_DOCS") == "1":
        (ROOT / "docs").mkdir(exist_ok=True)
        shutil.copyfile(shot, ROOT / "docs" / "sidebar.png")


# A cell that fails only in the job (TFC_REMOTE is set there), so Run All reaches the run cell.
FAILS_IN_THE_JOB = (
    "import os\nremote = os.environ.get('TFC_REMOTE')\nshare = 1 / (0 if remote else 1)"
)
_AT_THE_FAILING_LINE = """() => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  const cell = notebook.activeCell;
  if (!cell || !cell.editor) { return false; }
  const lines = cell.model.sharedModel.getSource().split('\\n');
  const line = lines[cell.editor.getCursorPosition().line];
  return notebook.mode === 'edit' && line === 'share = 1 / (0 if remote else 1)'
    ? notebook.activeCellIndex : false;
}"""


def test_a_failed_job_links_to_the_cell_that_failed(
    lab_server: LabServer, browser_page: Any
) -> None:
    """Run All; the job fails at cell 2, line 3; its cell shows "Go to cell 2, line 3". A cell
    added above since moves the failing one down: the link still selects it (found by the line
    it saved), in edit mode with the cursor on that line."""
    page = browser_page
    try:
        write_notebook(
            lab_server.root_dir / "fails.ipynb",
            "%load_ext tfc_jupyter",
            FAILS_IN_THE_JOB,
            "%%tfc_run\nprint('never here')",
        )
        page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
        page.locator(".jp-LabShell").wait_for()
        open_notebook(page, lab_server, "fails.ipynb")
        lab_command(page, "notebook:run-all-cells")
        link = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .tfc-CellLink a")
        link.wait_for(timeout=JOB_MS)
        assert link.inner_text() == "Go to cell 2, line 3"
        page.evaluate(
            "() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0; }"
        )
        lab_command(page, "notebook:insert-cell-above")
        page.evaluate(
            "() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 3; }"
        )
        link.click()
        index = page.wait_for_function(_AT_THE_FAILING_LINE, timeout=10_000).json_value()
        assert index == 2  # the failing cell, one down from where the job saw it
        screenshot(page, "lab-failure-link.png")
    except Exception:
        screenshot(page, "lab-failure-link-failure.png")
        raise


# A script that says its arguments; the saved version never runs (it is edited, not saved).
SAVED_SCRIPT = "print('saved version of the script')\n"


def test_a_python_script_in_the_editor_launches_as_itself(
    lab_server: LabServer, browser_page: Any
) -> None:
    """Open train.py in JupyterLab's editor, edit it without saving; its toolbar's Launch opens
    the form for the script (its name, its arguments first, no cell or %%tfc_run wording), whose
    dry run plans the editor's text; launched from the sidebar's "Launch on ..." with script
    arguments, the local job runs the edited text with them, and its log says so."""
    page = browser_page
    try:
        _script_scenario(lab_server, page)
    except Exception:
        screenshot(page, "lab-script-failure.png")
        raise


def _script_scenario(lab_server: LabServer, page: Any) -> None:
    script = lab_server.root_dir / "train.py"
    script.write_text(SAVED_SCRIPT)
    page.goto(f"{lab_server.url}lab/tree/train.py?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    page.wait_for_function("() => window.jupyterapp?.hasPlugin('tfc-jupyter:plugin')")
    editor = page.locator(".jp-FileEditor .cm-content")
    editor.wait_for(timeout=60_000)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.context?.path === 'train.py'"
    )

    # Edit the script, do not save.
    marker = f"SCRIPT-EDITED-{secrets.token_hex(4)}"
    source = f"import sys\nprint('{marker}', sys.argv[1:], flush=True)"
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(source)
    page.wait_for_function(
        "m => document.querySelector('.jp-FileEditor .cm-content')?.innerText.includes(m)",
        arg=marker,
    )
    page.locator(".lm-TabBar-tab.jp-mod-dirty", has_text="train.py").wait_for()
    assert script.read_text() == SAVED_SCRIPT

    # The editor's toolbar has the Launch button; its form is the script's.
    button = page.locator(".jp-MainAreaWidget:not(.lm-mod-hidden) .tfc-LaunchButton")
    button.wait_for()
    button.click()
    form = _launch_dialog(page)
    notice = form.locator(".tfc-LiveNotice").inner_text()
    assert "train.py" in notice and "unsaved edits" in notice and "sys.argv" in notice, notice
    assert "%%tfc_run" not in form.inner_text() and "cell" not in form.inner_text().lower()
    # the script's arguments come first
    assert form.locator("input").first.get_attribute("name") == "args"
    assert form.locator("input[name=name]").get_attribute("placeholder") == "the script's name"
    _checked(form, "ok")
    preview = form.locator(".tfc-PlanPreview")
    assert "script train.py" in preview.inner_text()
    assert "found by the editor's text" in preview.inner_text()
    assert "train.py has unsaved edits" in preview.inner_text()
    line = preview.locator(".tfc-PlanLine").inner_text()
    assert line.startswith("as a command: tfc-jupyter run train.py --backend local"), line
    assert "%%tfc_run" not in form.inner_text() and "cells" not in form.inner_text()
    page.locator(".jp-Dialog .jp-mod-reject").click()
    page.locator(".jp-Dialog").wait_for(state="detached")

    # The sidebar's "Launch on ..." launches the script in front, with its arguments.
    lab_command(page, "tfc-jupyter:show-jobs")
    page.locator(".tfc-Sidebar .tfc-LaunchShortcut").click()
    form = _launch_dialog(page)
    assert "train.py" in form.locator(".tfc-LiveNotice").inner_text()
    form.locator("input[name=args]").fill('--epochs 3 --note "two words"')
    form.locator("select[name=backend]").select_option("local")
    _checked(form, "ok")
    line = form.locator(".tfc-PlanLine").inner_text()
    assert line.startswith("as a command: tfc-jupyter run train.py "), line
    assert """ --args '--epochs 3 --note "two words"'""" in line, line
    screenshot(page, "lab-launch-script-form.png")
    _accept(page)

    # The job runs the editor's text with the arguments, and its log in the job view says so.
    detail = page.locator(".tfc-JobDetail[data-job-id]").first
    detail.wait_for()
    job_id = detail.get_attribute("data-job-id")
    assert job_id == store_for(lab_server.home).list(limit=1)[0].id
    done = page.locator(f".tfc-JobDetail[data-job-id='{job_id}']")
    page.wait_for_function(
        "id => ['succeeded', 'failed', 'cancelled'].includes("
        "document.querySelector(`.tfc-JobDetail[data-job-id='${id}']`)?.dataset.state)",
        arg=job_id,
        timeout=JOB_MS,
    )
    record = store_for(lab_server.home).get(job_id)
    assert done.get_attribute("data-state") == "succeeded", (record.state, record.error)
    expected = f"{marker} ['--epochs', '3', '--note', 'two words']"
    page.wait_for_function(
        "([id, text]) => document.querySelector("
        "`.tfc-JobDetail[data-job-id='${id}'] .tfc-LogText[data-replica='chief']`)"
        "?.innerText.includes(text)",
        arg=[job_id, expected],
        timeout=30_000,
    )
    assert "saved version of the script" not in done.locator(".tfc-LogText").first.inner_text()
    assert record.notebook == str(script)
    assert record.spec["entry_args"] == ["--epochs", "3", "--note", "two words"]
    row = page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{job_id}']")
    row.wait_for()
    assert "train.py" in row.inner_text()
    # Launching never saved the script.
    assert script.read_text() == SAVED_SCRIPT
    page.locator(".Toastify__toast").first.wait_for(state="detached", timeout=15_000)
    screenshot(page, "lab-script-job.png")


@pytest.fixture(scope="module")
def lab_without_server_extension(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """JupyterLab with our labextension but with the tfc_jupyter server extension turned off."""
    server = start_lab(
        tmp_path_factory.mktemp("lab-no-ext"),
        extra_args=("--ServerApp.jpserver_extensions", "tfc_jupyter=False"),
    )
    try:
        yield server
    finally:
        server.stop()


def test_the_sidebar_names_the_command_when_the_server_extension_is_off(
    lab_without_server_extension: LabServer, browser_page: Any
) -> None:
    page = browser_page
    server = lab_without_server_extension
    page.goto(f"{server.url}lab?token={server.token}")
    page.locator(".jp-LabShell").wait_for()
    page.wait_for_function("() => window.jupyterapp?.hasPlugin('tfc-jupyter:jobs')")
    lab_command(page, "tfc-jupyter:show-jobs")
    missing = page.locator(".tfc-Sidebar .tfc-ServerMissing")
    missing.wait_for()
    assert "jupyter server extension enable tfc_jupyter" in missing.inner_text()
    screenshot(page, "lab-server-extension-missing.png")
