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

Issue 23: Keras' default progress bar as Jupyter shows it (one line per bar, redrawn in place
while the job runs, in the cell, the sidebar's log and row, with the loss curve); Kernel >
Restart Kernel leaves a followed job running and ``%tfc_attach`` follows it again; the form
offers a notebook's ``%%tfc_run`` cells and warns of unsaved edits only for edits of its cells;
a failed job's view opens on the replica that failed and links to its cell; a cancel is shown
in neutral colours; the plot's axis labels fit (an expected failure until
tfc_jupyter/returns/plot.py is fixed).
"""

from __future__ import annotations

import base64
import decimal
import json
import os
import re
import secrets
import shutil
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser import (
    BAR,
    ROOT,
    LabServer,
    cell_outputs,
    check_shown_log,
    hide_notifications,
    lab_command,
    open_notebook,
    screenshot,
    start_command,
    start_lab,
)
from jobutil import JOB_DEADLINE_S, job_lines, job_pids, wait_gone, write_notebook

from tfc_jupyter.jobs import store_for
from tfc_jupyter.store.records import JobState

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


def _cancel_job(page: Any, detail: Any) -> None:
    """Press a job view's *Cancel job*; confirm when it asks (a job that has run a minute)."""
    detail.locator(".tfc-CancelButton").click()
    page.wait_for_timeout(1000)
    confirm = page.locator(".jp-Dialog button", has_text="Stop the job")
    if confirm.count():
        assert "has run for" in page.locator(".jp-Dialog").inner_text()
        confirm.click()


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
    assert form.locator("input[name=label]").input_value() == "team=ui"
    assert form.locator("select[name=strategy]").input_value() == "auto"
    _checked(form, "ok")
    preview = form.locator(".tfc-PlanPreview")
    assert "multi_worker_mirrored" in preview.inner_text()
    assert "the notebook as open in the editor" in preview.inner_text()
    # A local job's dry run in its own words: this machine, nothing billed, no Vertex AI.
    assert "nothing billed (it runs on this machine)" in preview.inner_text()
    assert "Vertex AI" not in preview.inner_text() and "$" not in preview.inner_text()
    line = preview.locator(".tfc-PlanLine").inner_text()
    assert "--workers 1 " in line and "--label team=ui" in line and "--gpus" not in line
    assert _launch_enabled(page)
    # An impossible choice is refused as it is made, and Launch is disabled until it is undone.
    form.locator("select[name=tpu]").select_option("v3-8")
    _checked(form, "error")
    assert "TPU" in form.locator(".tfc-Error").inner_text()
    assert not _launch_enabled(page)
    # Its fix comes as data: a button that makes the change (the next check is the TPU's own).
    fix = form.locator("button.tfc-FixButton")
    assert fix.inner_text() == "Set Workers to 0 (the TPU's cores are the replicas)"
    fix.click()
    assert form.locator("input[name=workers]").input_value() == "0"
    gone = form.locator(".tfc-Error", has_text="takes no extra workers")
    gone.wait_for(state="detached", timeout=30_000)
    _checked(form, "error")  # a TPU on this machine: said as before, and in words
    form.locator("select[name=tpu]").select_option("")
    form.locator("input[name=workers]").fill("1")
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
    assert form.locator("input[name=label]").input_value() == "team=ui"
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
        "?.innerText.includes('[tfc_runtime] task')",  # the runtime's status lines, hidden above
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
    row = _job_row(page, "succeeded").first
    assert " s" in row.inner_text()  # one line: state, name, elapsed, short id
    assert "local · $0.00 local" in (row.get_attribute("title") or "")  # the rest on hover
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
    _cancel_job(page, running)
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
        meta = page.locator(f".tfc-JobRow[data-job-id='{record.id}']").get_attribute("title")
        assert meta and _start_text(record.created_at) in meta and "ui.ipynb" in meta, meta
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
    hide_notifications(page)  # a job that ended says so in a toast: not in the picture
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
    """A metric as the sidebar and the detail view write it: 3 significant digits, rounded as
    JavaScript's ``toPrecision`` rounds (a tie goes up: 0.8125 is 0.813, where Python's
    ``.3g`` gives 0.812)."""
    exact = decimal.Decimal(value)
    if exact == 0:
        return "0"
    step = decimal.Decimal(1).scaleb(exact.adjusted() - 2)
    return f"{float(exact.quantize(step, rounding=decimal.ROUND_HALF_UP)):g}"


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
    assert "fit.ipynb" in (row.get_attribute("title") or "")
    assert page.evaluate("() => window.tfcDisagreements") == []
    # The picture for the README: the sidebar's jobs, this one's curves and log.
    hide_notifications(page)  # a job that ended says so in a toast: not in the picture
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
    assert "the script as open in the editor" in preview.inner_text()
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
    assert "train.py" in (row.get_attribute("title") or "")
    # Launching never saved the script.
    assert script.read_text() == SAVED_SCRIPT
    hide_notifications(page)  # a job that ended says so in a toast: not in the picture
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


# ------------------------------------------------------------------ progress bars (issue 23)
# Keras' default progress bar (verbose=1): each epoch's bar is one line the code rewrites with
# "\r" as batches end (tf-keras under MultiWorkerMirrored draws "[=====>....]"; Keras 3 draws
# "━━━━" with colour codes). Shown as Jupyter shows it: one line per bar, its latest state.
BAR_DATA = (
    "import time\nimport numpy as np, tensorflow as tf\n"
    "x = np.random.rand(512, 8).astype('float32'); y = x.sum(1)"
)
BAR_FIT = (
    "%%tfc_run --workers 1\n"
    "model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])\n"
    "model.compile('sgd', 'mse')\n"
    "model.fit(x, y, epochs=4)"
)
BAR_LAST = "print('LAST', _tfc_job.metrics[-1])"
# The notebook panel open on a path (JS), as tests/browser.py finds it.
_NB_JS = """(path) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (w.context && w.context.path === path && w.content && w.content.widgets) { return w; }
  }
  return null;
}"""


def _wait_cell(page: Any, path: str, index: int, text: str, timeout_ms: int = JOB_MS) -> None:
    page.wait_for_function(
        """([path, index, text]) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (w.context && w.context.path === path && w.content && w.content.widgets) {
      const cell = w.content.widgets[index];
      return !!cell && !!cell.outputArea && cell.outputArea.node.innerText.includes(text);
    }
  }
  return false;
}""",
        arg=[path, index, text],
        timeout=timeout_ms,
    )


def _svg_of(src: str) -> str:
    """The SVG text of an ``<img>``'s data: URL (base64 or URL-encoded)."""
    head, _, data = src.partition(",")
    if head.endswith(";base64"):
        return base64.b64decode(data).decode()
    return urllib.parse.unquote(data)


def test_keras_progress_bars_show_as_jupyter_shows_them(
    lab_server: LabServer, browser_page: Any
) -> None:
    """A notebook whose ``%%tfc_run --workers 1`` cell calls Keras' ``fit`` with its default
    progress bar, run in JupyterLab: the cell shows one line per bar (no empty ``[chief]``
    lines, no boxes or backspaces, no runtime report, no raw colour codes), ``_tfc_job.metrics``
    has the loss, the cell draws the loss curve; the sidebar's row shows the loss and its log
    view one line per bar, without colour codes."""
    page = browser_page
    try:
        _bars_scenario(lab_server, page)
    except Exception:
        screenshot(page, "lab-bars-failure.png")
        raise


def _bars_scenario(lab_server: LabServer, page: Any) -> None:
    name = "bars.ipynb"
    write_notebook(lab_server.root_dir / name, "%load_ext tfc_jupyter", BAR_DATA, BAR_FIT, BAR_LAST)
    page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    open_notebook(page, lab_server, name)
    start_command(page, "notebook:run-all-cells")
    _wait_cell(page, name, 3, "LAST")
    job_id = store_for(lab_server.home).list(limit=1)[0].id
    record = store_for(lab_server.home).get(job_id)
    assert record.state is JobState.SUCCEEDED, (record.state, record.error)

    # The cell: one line per bar, each replica's lines merged ("[chief, worker-0]").
    out = cell_outputs(page, name, 2)
    shown = out["shown"]
    assert f"Launched {job_id}" in shown and f"{job_id}: succeeded" in shown, shown
    assert "[chief, worker-0] Epoch 1/4" in shown, shown
    log = "\n".join(ln for ln in shown.splitlines() if ln.startswith("["))
    check_shown_log(log, epochs=4, steps=16, prefixed=True)
    assert "\x1b" not in out["streams"]  # tf-keras' bar has no colours: none added
    # _tfc_job.metrics in the next cell: the last epoch's loss.
    last = cell_outputs(page, name, 3)["shown"]
    found = re.search(r"'epoch': 4, 'loss': ([0-9.e+-]+)", last)
    assert found, last
    loss = float(found.group(1))
    # The loss curve, drawn in the cell (the SVG, as an image).
    plot = (
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell")
        .nth(2)
        .locator("[data-mime-type='image/svg+xml'] img")
    )
    plot.wait_for(timeout=10_000)
    assert page.evaluate("img => img.naturalWidth > 0", plot.element_handle())
    drawn = _svg_of(str(plot.get_attribute("src")))
    assert ">loss<" in drawn and "epoch 4" in drawn and "<polyline" in drawn, drawn
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(
        2
    ).scroll_into_view_if_needed()
    screenshot(page, "lab-bars-cell.png")
    # An 800-px window: the curve shrinks to the cell's width, nothing of it cut off.
    size = page.viewport_size
    page.set_viewport_size({"width": 800, "height": 900})
    try:
        page.wait_for_timeout(500)  # JupyterLab lays the panels out again
        fit = page.evaluate(
            "img => { const out = img.closest('.jp-OutputArea-output').getBoundingClientRect();"
            " const box = img.getBoundingClientRect();"
            " return {left: box.left - out.left, right: out.right - box.right,"
            " width: box.width, natural: img.naturalWidth}; }",
            plot.element_handle(),
        )
        assert fit["left"] >= -1 and fit["right"] >= -1, fit  # inside its output
        assert 0 < fit["width"] <= fit["natural"], fit
        screenshot(page, "lab-bars-cell-800.png")
    finally:
        page.set_viewport_size(size)

    # The sidebar: the row's loss, and the job's log, one line per bar, no colour codes.
    lab_command(page, "tfc-jupyter:show-jobs")
    row = page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{job_id}']")
    row.locator(".tfc-JobRow-metric", has_text=f"loss {_metric(loss)}").wait_for(timeout=15_000)
    row.click()
    chief = page.locator(f".tfc-JobDetail[data-job-id='{job_id}'] .tfc-LogText")
    page.wait_for_function(
        "id => document.querySelector(`.tfc-JobDetail[data-job-id='${id}'] .tfc-LogText`)"
        "?.innerText.includes('Epoch 4/4')",
        arg=job_id,
        timeout=30_000,
    )
    assert chief.get_attribute("data-replica") == "chief"
    check_shown_log(chief.inner_text(), epochs=4, steps=16, prefixed=False)
    page.locator(f".tfc-JobDetail[data-job-id='{job_id}'] .tfc-Following").wait_for(
        state="detached", timeout=15_000
    )
    screenshot(page, "lab-bars-job.png")


# A slower fit (a pause after each batch), with Keras 3's own bar (no --workers: no tf-keras),
# which draws colour codes: the cell draws them as colours, the sidebar leaves them out.
SLOW_FIT = (
    "%%tfc_run\n"
    "pause = tf.keras.callbacks.LambdaCallback(\n"
    "    on_train_batch_end=lambda batch, logs=None: time.sleep(0.12))\n"
    "model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])\n"
    "model.compile('sgd', 'mse')\n"
    "model.fit(x, y, epochs=3, callbacks=[pause])"
)


# The kernel's last line of the cell ("<id>: succeeded after 16.2 s"), not its job output's
# "succeeded after 16 s", which can come before the last lines do.
_SUMMARY = re.compile(r": succeeded after \d+\.\d s")


def test_a_progress_bar_is_redrawn_in_place_while_the_job_runs(
    lab_server: LabServer, browser_page: Any
) -> None:
    """While the job runs, its cell shows the bar of the epoch under way as one line that
    changes in place (2/16, then 5/16 ...), never one line per update; at the end, one line per
    bar, its colours drawn (not codes), and the sidebar's log the same lines without codes."""
    page = browser_page
    try:
        _redrawn_scenario(lab_server, page)
    except Exception:
        screenshot(page, "lab-bars-live-failure.png")
        raise


def _redrawn_scenario(lab_server: LabServer, page: Any) -> None:
    name = "bars_live.ipynb"
    write_notebook(lab_server.root_dir / name, "%load_ext tfc_jupyter", BAR_DATA, SLOW_FIT)
    page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    open_notebook(page, lab_server, name)
    start_command(page, "notebook:run-all-cells")
    # Watch the cell as the job runs: every state of its output, as shown.
    states: list[str] = []
    midway = None
    deadline = time.monotonic() + JOB_DEADLINE_S
    while time.monotonic() < deadline:
        shown = cell_outputs(page, name, 2)["shown"]
        if not states or states[-1] != shown:
            states.append(shown)
        lines = shown.splitlines()
        bar = BAR.search(lines[-1]) if lines else None
        if midway is None and bar and 4 <= int(bar.group(1)) < int(bar.group(2)):
            midway = screenshot(page, "lab-bars-live-running.png")  # a bar half drawn
        if _SUMMARY.search(shown) or "failed" in shown:
            break
        time.sleep(0.05)
    final = states[-1]
    assert _SUMMARY.search(final), final
    # While it ran: at most one bar line per epoch begun, the latest one where it was; the bar
    # under way seen at several steps, each time on that one line.
    partial: set[tuple[int, int]] = set()
    for shown in states:  # a one-replica job's lines, as the cell's own prints (no [chief])
        lines = [ln for ln in job_lines(shown.splitlines()) if ln.strip()]
        assert "\x08" not in shown and "\ufffd" not in shown, repr(shown)
        begun = sum(1 for ln in lines if re.search(r"Epoch \d+/3$", ln))
        bars = [i for i, ln in enumerate(lines) if BAR.search(ln)]
        assert len(bars) <= begun, shown
        for i in bars:
            assert re.search(r"Epoch \d+/3$", lines[i - 1]), shown
            step = BAR.search(lines[i])
            assert step
            if int(step.group(1)) < 16:
                epoch = int(re.search(r"Epoch (\d+)/3$", lines[i - 1]).group(1))  # type: ignore[union-attr]
                partial.add((epoch, int(step.group(1))))
                assert i == len(lines) - 1, shown  # only the bar under way is unfinished
    assert len(partial) >= 3, (partial, states[-5:])
    assert midway is not None, states[-5:]
    assert len({step for _, step in partial}) >= 3, partial
    # At the end: one line per bar, drawn in colour (the codes rendered, not shown).
    log = "\n".join(job_lines(final.splitlines()))
    check_shown_log(log, epochs=3, steps=16, prefixed=False)
    assert "[chief]" not in final, final
    out = cell_outputs(page, name, 2)
    assert "\x1b[" in out["streams"]  # Keras 3 wrote colour codes ...
    assert re.search(r'class="ansi-[a-z-]+', out["html"]), out["html"]  # ... drawn as colours
    screenshot(page, "lab-bars-live-done.png")

    # The sidebar's log of the job: the same bars, one line each, no codes.
    job_id = store_for(lab_server.home).list(limit=1)[0].id
    lab_command(page, "tfc-jupyter:open-job", {"id": job_id})
    page.wait_for_function(
        "id => document.querySelector(`.tfc-JobDetail[data-job-id='${id}'] .tfc-LogText`)"
        "?.innerText.includes('Epoch 3/3')",
        arg=job_id,
        timeout=30_000,
    )
    text = page.locator(f".tfc-JobDetail[data-job-id='{job_id}'] .tfc-LogText").inner_text()
    check_shown_log(text, epochs=3, steps=16, prefixed=False)


# ------------------------------------------------------------------ a kernel restart (issue 23)
TICKS = (
    "%%tfc_run\nimport time\nfor i in range(60):\n    print(f'tick {i}', flush=True)\n"
    "    time.sleep(1)"
)


def _ticks(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^tick (\d+)$", text, re.M)]  # as the cell printed


def test_restarting_the_kernel_leaves_the_followed_job_running(
    lab_server: LabServer, browser_page: Any
) -> None:
    """Kernel > Restart Kernel while a ``%%tfc_run`` cell follows its job (a minute of ticks):
    the job goes on (its record, its processes and the sidebar say running); in a new cell,
    ``%load_ext tfc_jupyter`` and ``%tfc_attach JOB`` follow it again, its new lines coming in;
    Cancel in its job view stops it, the attaching cell says so, and the cancel (asked for) is
    shown in neutral colours, not as a failure."""
    page = browser_page
    try:
        _restart_scenario(lab_server, page)
    except Exception:
        screenshot(page, "lab-restart-failure.png")
        raise


def _restart_scenario(lab_server: LabServer, page: Any) -> None:
    name = "restart.ipynb"
    write_notebook(lab_server.root_dir / name, "%load_ext tfc_jupyter", TICKS)
    page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    open_notebook(page, lab_server, name)
    start_command(page, "notebook:run-all-cells")
    _wait_cell(page, name, 1, "tick 2")
    store = store_for(lab_server.home)
    job_id = store.list(limit=1)[0].id
    before = _ticks(cell_outputs(page, name, 1)["shown"])

    # Kernel > Restart Kernel..., as a user does it (the menu and its dialog).
    page.locator(".lm-MenuBar-item", has_text="Kernel").click()
    page.locator(".lm-Menu-item:visible", has_text="Restart Kernel…").first.click()
    page.locator(".jp-Dialog .jp-mod-accept", has_text="Restart").click()
    page.locator(".jp-Dialog").wait_for(state="detached")
    page.wait_for_function(
        "() => { const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;"
        " return k && k.connectionStatus === 'connected' && k.status === 'idle'; }",
        timeout=60_000,
    )
    time.sleep(2)  # what a restart could do to the job has happened by now
    record = store.get(job_id)
    assert record.state is JobState.RUNNING, (record.state, record.error)
    pids = job_pids(record)
    assert pids and sorted(wait_gone(pids, timeout=0.5)) == sorted(pids), "a process stopped"
    lab_command(page, "tfc-jupyter:show-jobs")
    page.locator(
        f".tfc-Sidebar .tfc-JobRow[data-job-id='{job_id}'][data-state='running']"
    ).wait_for(timeout=15_000)
    screenshot(page, "lab-restart-running.png")

    # A new cell: load the extension again and attach to the job.
    page.evaluate(
        f"""() => {{
  const panel = ({_NB_JS})({json.dumps(name)});
  window.jupyterapp.shell.activateById(panel.id);
  panel.content.activeCellIndex = panel.content.widgets.length - 1;
}}"""
    )
    lab_command(page, "notebook:insert-cell-below")
    page.evaluate(
        f"""() => {{
  const panel = ({_NB_JS})({json.dumps(name)});
  panel.content.activeCell.model.sharedModel.setSource(
    '%load_ext tfc_jupyter\\n%tfc_attach {job_id}');
}}"""
    )
    start_command(page, "notebook:run-cell")
    _wait_cell(page, name, 2, f"{job_id} on local: running")
    newer = max(before) + 3
    _wait_cell(page, name, 2, f"tick {newer}", timeout_ms=30_000)
    attached = _ticks(cell_outputs(page, name, 2)["shown"])
    assert attached == sorted(attached) and len(set(attached)) == len(attached), attached
    screenshot(page, "lab-restart-attached.png")

    # Cancel from its job view: the job stops; the attaching cell says how it ended.
    page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{job_id}']").click()
    detail = page.locator(f".tfc-JobDetail[data-job-id='{job_id}']")
    _cancel_job(page, detail)
    page.locator(f".tfc-JobDetail[data-job-id='{job_id}'][data-state='cancelled']").wait_for(
        timeout=60_000
    )
    assert store.get(job_id).state is JobState.CANCELLED
    _wait_cell(page, name, 2, "cancelled", timeout_ms=30_000)
    # A cancel asked for is no failure: no error colour on the badge, the row or the view.
    row = page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{job_id}'][data-state='cancelled']")
    row.wait_for(timeout=15_000)
    assert row.locator(".tfc-JobRow-error").count() == 0
    assert detail.locator(".tfc-Error").count() == 0
    error_color = page.evaluate(
        "() => { const n = document.createElement('span'); n.className = 'tfc-Error';"
        " document.body.appendChild(n); const c = getComputedStyle(n).color; n.remove();"
        " return c; }"
    )
    for badge in (row.locator(".tfc-StateBadge"), detail.locator(".tfc-StateBadge")):
        colors = badge.evaluate(
            "n => [getComputedStyle(n).backgroundColor, getComputedStyle(n).color]"
        )
        assert error_color not in colors, (colors, error_color)
    hide_notifications(page)  # a job that ended says so in a toast: not in the picture
    detail.locator(".tfc-Following").wait_for(state="detached", timeout=15_000)
    screenshot(page, "lab-restart-cancelled.png")
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=name).click()
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(
        2
    ).scroll_into_view_if_needed()
    screenshot(page, "lab-restart-cancelled-cell.png")


# ------------------------------------------------------------------ a failed worker (issue 23)
WORKER_FAILS = (
    "%%tfc_run --workers 1\n"
    "task = json.loads(os.environ['TF_CONFIG'])['task']\n"
    "print('replica', task['type'], flush=True)\n"
    "if task['type'] == 'worker':\n"
    "    raise ValueError('the worker broke')\n"
    "time.sleep(3)"
)
_SELECTED_LINE = """(path) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (!(w.context && w.context.path === path && w.content && w.content.widgets)) { continue; }
    const notebook = w.content;
    const cell = notebook.activeCell;
    if (window.jupyterapp.shell.currentWidget !== w || !cell || !cell.editor) { return false; }
    const lines = cell.model.sharedModel.getSource().split('\\n');
    const line = lines[cell.editor.getCursorPosition().line];
    return notebook.mode === 'edit' ? [notebook.activeCellIndex, line] : false;
  }
  return false;
}"""


def test_a_failed_job_view_opens_on_the_failed_replica_and_links_to_its_cell(
    lab_server: LabServer, browser_page: Any
) -> None:
    """A 1-worker job whose worker fails (the chief is fine): its view opens on worker-0's log,
    which says why, not on the chief's; beside the error, "Go to cell 3, line 5" (as the cell
    shows it) opens the notebook and selects that cell, the cursor on the line, found by the
    line's text though a cell was added above it since."""
    page = browser_page
    try:
        _failed_worker_scenario(lab_server, page)
    except Exception:
        screenshot(page, "lab-failed-worker-failure.png")
        raise


def _failed_worker_scenario(lab_server: LabServer, page: Any) -> None:
    name = "worker_fails.ipynb"
    path = lab_server.root_dir / name
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A worker that fails"),
        nbformat.v4.new_code_cell("import json, os, time"),
        nbformat.v4.new_code_cell(WORKER_FAILS),
    ]
    nbformat.write(nb, path)
    page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    page.wait_for_function("() => window.jupyterapp?.hasPlugin('tfc-jupyter:jobs')")
    created = lab_server.api("POST", "tfc-jupyter/jobs", {"path": name, "options": {}})
    job_id = created["job"]["id"]
    lab_command(page, "tfc-jupyter:open-job", {"id": job_id})
    detail = page.locator(f".tfc-JobDetail[data-job-id='{job_id}']")
    page.locator(f".tfc-JobDetail[data-job-id='{job_id}'][data-state='failed']").wait_for(
        timeout=JOB_MS
    )
    record = store_for(lab_server.home).get(job_id)
    assert record.error and record.error.startswith("worker-0 "), record.error
    assert record.error_location == "cell 3, line 5", record.error_location

    # The view is on the worker's log, which says why; the chief's tab is one click away.
    active = detail.locator(".tfc-ReplicaTab.tfc-mod-active")
    page.wait_for_function(
        "id => document.querySelector(`.tfc-JobDetail[data-job-id='${id}'] "
        ".tfc-ReplicaTab.tfc-mod-active`)?.dataset.replica === 'worker-0'",
        arg=job_id,
        timeout=15_000,
    )
    log = detail.locator(".tfc-LogText")
    page.wait_for_function(
        "id => document.querySelector(`.tfc-JobDetail[data-job-id='${id}'] .tfc-LogText`)"
        "?.innerText.includes('ValueError: the worker broke')",
        arg=job_id,
        timeout=30_000,
    )
    assert log.get_attribute("data-replica") == "worker-0"
    assert active.inner_text() == "worker-0"
    link = detail.locator(".tfc-GoToCell")
    assert link.inner_text() == "Go to cell 3, line 5"
    colors = link.evaluate(
        "n => [getComputedStyle(n).color, getComputedStyle(n.closest('.tfc-Error')).color]"
    )
    assert colors[0] != colors[1], colors  # a link, not more of the error's text
    error = detail.locator(".tfc-Error").first.inner_text()
    assert "ValueError: the worker broke" in error, error
    detail.locator(".tfc-Following").wait_for(state="detached", timeout=15_000)
    screenshot(page, "lab-failed-worker-view.png")
    # A tab the user picks stays picked.
    detail.locator(".tfc-ReplicaTab[data-replica='chief']").click()
    page.wait_for_function(
        "id => document.querySelector(`.tfc-JobDetail[data-job-id='${id}'] .tfc-LogText`)"
        "?.innerText.includes('replica chief')",
        arg=job_id,
        timeout=15_000,
    )
    time.sleep(2.5)  # a store round or more
    assert active.inner_text() == "chief"

    # A cell added above since: the link still selects the failing cell (one down now).
    saved = nbformat.read(path, as_version=4)
    saved.cells.insert(1, nbformat.v4.new_code_cell("print('added since')"))
    nbformat.write(saved, path)
    link.click()
    found = page.wait_for_function(_SELECTED_LINE, arg=name, timeout=30_000).json_value()
    assert found == [3, "    raise ValueError('the worker broke')"], found
    screenshot(page, "lab-failed-worker-cell.png")


# ------------------------------------------------------------------ the form (issue 23)
TWO_RUN_CELLS = (
    "x = 1",
    "%%tfc_run --workers 1\nprint('FIRST-RUN-CELL', x)",
    "y = 2",
    "%%tfc_run --label pick=second\nprint('SECOND-RUN-CELL', x, y)",
)


def test_the_launch_form_offers_the_tfc_run_cells(lab_server: LabServer, browser_page: Any) -> None:
    """A notebook just opened (JupyterLab marks it changed as the kernel fills in its metadata)
    with two ``%%tfc_run`` cells: the form says nothing of unsaved edits, offers both cells
    (the first picked), labels the strategy ``auto`` as the code's choice, and never says "pass
    --cell"; picking the second starts the form from its flags, and the job runs it and the
    cells above it. An edit of a cell, not saved, is then said."""
    page = browser_page
    try:
        _form_cells_scenario(lab_server, page)
    except Exception:
        screenshot(page, "lab-form-cells-failure.png")
        raise


def _form_cells_scenario(lab_server: LabServer, page: Any) -> None:
    name = "two_cells.ipynb"
    write_notebook(lab_server.root_dir / name, *TWO_RUN_CELLS)
    page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    open_notebook(page, lab_server, name)
    # JupyterLab marks a notebook just opened as changed when the kernel fills in its metadata
    # (language_info, the kernelspec's name); one more metadata change makes sure it is.
    dirty = page.evaluate(
        """() => {
  const model = window.jupyterapp.shell.currentWidget.context.model;
  model.sharedModel.setMetadata('tfc_test', {opened: true});
  return model.dirty;
}"""
    )
    assert dirty is True
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .tfc-LaunchButton").first.click()
    form = _launch_dialog(page)
    _checked(form, "ok")
    assert "unsaved" not in form.locator(".tfc-LiveNotice").inner_text(), dirty
    preview = form.locator(".tfc-PlanPreview")
    assert "unsaved" not in preview.inner_text(), (dirty, preview.inner_text())
    assert "--cell" not in form.inner_text()
    # The cells, the first picked; the form shows its flags.
    cell = form.locator("select[name=cell]")
    options = cell.locator("option").all_inner_texts()
    assert options == [
        "cell 2: %%tfc_run --workers 1 · print('FIRST-RUN-CELL', x)",
        "cell 4: %%tfc_run --label pick=second · print('SECOND-RUN-CELL', x, y)",
    ], options
    assert cell.input_value() == "2"
    assert form.locator("input[name=workers]").input_value() == "1"
    assert "cells 1, 2 " in preview.inner_text()
    assert "The form starts from the chosen cell's %%tfc_run line" in form.inner_text()
    # The strategy auto: the code decides (not tfc.run's rules).
    strategy = form.locator("select[name=strategy]")
    assert strategy.locator("option[value=auto]").inner_text() == "auto (the code decides)"
    assert "tfc.run" not in form.inner_text()
    # The second cell: its flags, its cells.
    cell.select_option("4")
    page.wait_for_function(
        "() => document.querySelector('.tfc-LaunchForm input[name=label]')?.value"
        " === 'pick=second'",
        timeout=15_000,
    )
    assert form.locator("input[name=workers]").input_value() == "0"
    _checked(form, "ok")
    page.wait_for_function(
        "() => document.querySelector('.tfc-PlanPreview')?.innerText.includes('cells 1, 3, 4 ')",
        timeout=15_000,
    )
    assert "--label pick=second" in preview.locator(".tfc-PlanLine").inner_text()
    assert "--cell" not in form.inner_text() and "unsaved" not in form.inner_text()
    screenshot(page, "lab-form-cells.png")
    _accept(page)

    page.locator(".tfc-JobDetail[data-job-id]:visible").first.wait_for()
    job_id = store_for(lab_server.home).list(limit=1)[0].id
    detail = page.locator(f".tfc-JobDetail[data-job-id='{job_id}']")
    page.locator(f".tfc-JobDetail[data-job-id='{job_id}'][data-state='succeeded']").wait_for(
        timeout=JOB_MS
    )
    page.wait_for_function(
        "id => document.querySelector(`.tfc-JobDetail[data-job-id='${id}'] .tfc-LogText`)"
        "?.innerText.includes('SECOND-RUN-CELL 1 2')",
        arg=job_id,
        timeout=30_000,
    )
    assert "FIRST-RUN-CELL" not in detail.locator(".tfc-LogText").inner_text()
    record = store_for(lab_server.home).get(job_id)
    assert record.notebook == str(lab_server.root_dir / name)
    assert record.spec["labels"] == {"pick": "second"} and record.spec["worker_count"] == 0

    # An edit of a cell, not saved: now the form says so.
    _edit_cell_of(page, name, 0, "x = 41")
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .tfc-LaunchButton").first.click()
    form = _launch_dialog(page)
    _checked(form, "ok")
    assert "including its unsaved edits" in form.locator(".tfc-LiveNotice").inner_text()
    assert "unsaved edits" in form.locator(".tfc-PlanPreview").inner_text()
    page.locator(".jp-Dialog .jp-mod-reject").click()
    page.locator(".jp-Dialog").wait_for(state="detached")


def _edit_cell_of(page: Any, name: str, index: int, source: str) -> None:
    """Show the notebook and replace a cell's text in the editor (not saved)."""
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=name).click()
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").wait_for()
    editor = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .cm-content").nth(index)
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(source)
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(index).locator(
        ".cm-content", has_text=source
    ).wait_for()


# ------------------------------------------------------------------ the plot's axis (issue 23)
BIG_LOSS = (
    "%%tfc_run\n"
    "import numpy as np, tensorflow as tf\n"
    "x = np.random.default_rng(0).random((256, 8)).astype('float32')\n"
    "y = x.sum(1) * 30000\n"
    "model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])\n"
    "model.compile(tf.keras.optimizers.SGD(1e-3), 'mse')\n"
    "model.fit(x, y, epochs=3, verbose=2)"
)
# Each text of an SVG drawn inline (hidden): its box, and the image's width and height.
_TEXT_BOXES = """(svg) => {
  const host = document.createElement('div');
  host.style.cssText = 'position:absolute;left:-10000px;top:0';
  host.innerHTML = svg;
  document.body.appendChild(host);
  const root = host.querySelector('svg');
  const boxes = [...root.querySelectorAll('text')].map(t => {
    const b = t.getBBox();
    return [t.textContent, b.x, b.x + b.width];
  });
  const size = [root.width.baseVal.value, root.height.baseVal.value];
  host.remove();
  return {boxes, size};
}"""


def test_the_plot_axis_labels_fit_in_the_image(lab_server: LabServer, browser_page: Any) -> None:
    """A loss in the hundreds of millions: the job view's plot (the server's SVG) writes its
    y-axis labels whole, inside the image, and compactly (no ``e+08``)."""
    page = browser_page
    write_notebook(lab_server.root_dir / "big_loss.ipynb", BIG_LOSS)
    page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    page.wait_for_function("() => window.jupyterapp?.hasPlugin('tfc-jupyter:jobs')")
    created = lab_server.api("POST", "tfc-jupyter/jobs", {"path": "big_loss.ipynb", "options": {}})
    job_id = created["job"]["id"]
    lab_command(page, "tfc-jupyter:open-job", {"id": job_id})
    page.locator(f".tfc-JobDetail[data-job-id='{job_id}'][data-state='succeeded']").wait_for(
        timeout=JOB_MS
    )
    plot = page.locator(f".tfc-JobDetail[data-job-id='{job_id}'] img.tfc-MetricsPlot")
    plot.wait_for(timeout=30_000)
    page.wait_for_function(
        "id => document.querySelector(`.tfc-JobDetail[data-job-id='${id}'] .tfc-MetricsLast`)"
        "?.innerText.includes('epoch 3')",
        arg=job_id,
        timeout=30_000,
    )
    plot.scroll_into_view_if_needed()
    screenshot(plot, "lab-plot-axis.png")
    drawn = page.evaluate(_TEXT_BOXES, _svg_of(str(plot.get_attribute("src"))))
    width = drawn["size"][0]
    assert drawn["boxes"], drawn
    assert metrics_high(drawn) >= 1e6, drawn  # the labels this is about: large numbers
    cut = [(text, x0, x1) for text, x0, x1 in drawn["boxes"] if x0 < 0 or x1 > width]
    assert not cut, (cut, width)
    assert not [t for t, _, _ in drawn["boxes"] if "e+" in t], drawn["boxes"]


def metrics_high(drawn: dict[str, Any]) -> float:
    """The largest number among an SVG's texts (its y-axis top)."""
    numbers = []
    for text, _, _ in drawn["boxes"]:
        try:
            numbers.append(float(text))
        except ValueError:
            continue
    return max(numbers, default=0.0)


# ----------------------------------------------------------- the cell stays with its job (issue 34)
FOLLOWED = (
    "%%tfc_run\nimport os\nimport time\nfor i in range(16):\n"
    "    print(f'tick {i} of {os.getpid()}', flush=True)\n    time.sleep(1)"
)
_JOB_OUTPUT = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell:nth-child({n}) .tfc-JobOutput"


def _pids_shown(text: str) -> set[int]:
    """The job processes whose ticks a cell shows."""
    return {int(pid) for pid in re.findall(r"tick \d+ of (\d+)", text)}


def _job_output(page: Any, cell: int, job_id: str, state: str | None = None) -> Any:
    """A cell's job output of ``job_id`` (in ``state``), as the extension renders it."""
    selector = _JOB_OUTPUT.format(n=cell + 1) + f"[data-job-id='{job_id}']"
    return page.locator(selector + (f"[data-state='{state}']" if state else ""))


def _tick_pid(lab_server: LabServer, job_id: str) -> int:
    """The process id the job's ticks name (its chief's log)."""
    text = Path(store_for(lab_server.home).get(job_id).log_dir, "chief.log").read_text()
    pids = _pids_shown(text)
    assert len(pids) == 1, text
    return pids.pop()


def test_the_run_cell_follows_its_job_after_a_restart_and_a_reload(
    lab_server: LabServer, browser_page: Any
) -> None:
    """The run cell stays with its job. (a) Kernel > Restart Kernel while the cell follows a job:
    the job goes on, and the cell's job output shows it running, then its latest lines from its
    log and how to attach, until it says "succeeded after N s". (b) Save, run the cell again,
    reload the page (the file holds the first job's outputs): the cell shows the second job, to
    its end. The first job's lines are never shown while the second one runs or after."""
    page = browser_page
    try:
        _follow_scenario(lab_server, page)
    except Exception:
        screenshot(page, "lab-follow-failure.png")
        raise


def _follow_scenario(lab_server: LabServer, page: Any) -> None:
    name = "follow.ipynb"
    write_notebook(lab_server.root_dir / name, "%load_ext tfc_jupyter", "x = 1", FOLLOWED)
    page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    open_notebook(page, lab_server, name)
    store = store_for(lab_server.home)

    # (a) A kernel restart while the cell follows its job.
    start_command(page, "notebook:run-all-cells")
    _wait_cell(page, name, 2, "tick 2 of", timeout_ms=60_000)
    first = store.list(limit=1)[0]
    assert first.cell_id, "the job's record has no cell id"
    _job_output(page, 2, first.id, "running").wait_for(timeout=15_000)
    start_command(page, "kernelmenu:restart")
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.locator(".jp-Dialog").wait_for(state="detached")
    assert store.get(first.id).state is JobState.RUNNING
    output = _job_output(page, 2, first.id)
    output.locator(".tfc-JobOutput-lines").wait_for(timeout=30_000)  # the log's latest lines
    screenshot(page, "lab-follow-restarted.png")
    assert f"%tfc_attach {first.id}" in output.locator(".tfc-JobOutput-hint").inner_text()
    _job_output(page, 2, first.id, "succeeded").wait_for(timeout=JOB_MS)
    text = output.inner_text()
    assert "succeeded after" in text and "tick 15 of" in text, text
    assert store.get(first.id).state is JobState.SUCCEEDED
    first_pid = _tick_pid(lab_server, first.id)
    screenshot(page, "lab-follow-restarted-done.png")

    # (b) Save (the file holds the first job's outputs), run the cell again, reload the page.
    lab_command(page, "docmanager:save")
    assert first.id in (lab_server.root_dir / name).read_text()
    start_command(page, "notebook:run-all-cells")  # the kernel restarted: load the extension again
    _wait_cell(page, name, 2, "tick 1 of", timeout_ms=60_000)
    second = store.list(limit=1)[0]
    assert second.id != first.id and second.cell_id == first.cell_id
    shown = cell_outputs(page, name, 2)["shown"]
    assert first_pid not in _pids_shown(shown) and first.id not in shown, shown
    page.on("dialog", lambda dialog: dialog.accept())  # "leave the page?" (unsaved outputs)
    page.reload()
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").wait_for(timeout=60_000)
    _job_output(page, 2, second.id).wait_for(timeout=30_000)
    deadline = time.monotonic() + JOB_DEADLINE_S
    seen: list[str] = []
    while time.monotonic() < deadline:
        shown = cell_outputs(page, name, 2)["shown"]
        seen.append(shown)
        assert first_pid not in _pids_shown(shown) and first.id not in shown, shown
        if _job_output(page, 2, second.id, "succeeded").count():
            break
        time.sleep(0.5)
    text = _job_output(page, 2, second.id).inner_text()
    assert "succeeded after" in text and "tick 15 of" in text, (text, seen[-3:])
    assert _pids_shown(text) == {_tick_pid(lab_server, second.id)}, text
    screenshot(page, "lab-follow-reloaded-done.png")


ENDED = """\
%%tfc_run --strategy none
import time
import numpy as np
import tensorflow as tf

class Slow(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        print(f'epoch {epoch} done', flush=True)
        time.sleep(1.5)

x = np.random.default_rng(0).normal(size=(64, 2)).astype('float32')
model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
model.compile(optimizer='sgd', loss='mse')
history = model.fit(x, x[:, :1], epochs=8, verbose=0, callbacks=[Slow()])
print('last line of the job', flush=True)"""


def test_a_reload_after_the_job_ended_shows_its_end(
    lab_server: LabServer, browser_page: Any
) -> None:
    """Issue 49: save while the run cell's job trains (an autosave cuts its log and plot), leave
    the page, let the job end (the kernel brings the names back with no page open), open the
    page again: the notification of its end comes, and the cell shows the job's final lines, its
    curves and what is in the kernel now, not the cut log."""
    page = browser_page
    try:
        _ended_scenario(lab_server, page)
    except Exception:
        screenshot(page, "lab-ended-failure.png")
        raise


def _ended_scenario(lab_server: LabServer, page: Any) -> None:
    name = "ended.ipynb"
    write_notebook(lab_server.root_dir / name, "%load_ext tfc_jupyter", ENDED)
    page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    open_notebook(page, lab_server, name)
    store = store_for(lab_server.home)
    start_command(page, "notebook:run-all-cells")
    _wait_cell(page, name, 1, "epoch 1 done", timeout_ms=JOB_MS)
    job = store.list(limit=1)[0]
    lab_command(page, "docmanager:save")  # what an autosave does: the file cuts the job here
    assert "epoch 1 done" in (lab_server.root_dir / name).read_text()
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto("about:blank")  # no page open while the job ends
    deadline = time.monotonic() + JOB_DEADLINE_S
    while time.monotonic() < deadline and not store.get(job.id).returned:
        time.sleep(0.5)
    record = store.get(job.id)
    assert record.state is JobState.SUCCEEDED, record.error
    assert record.returned and record.returned.startswith("Back in the kernel: "), record
    assert "epoch 7 done" not in (lab_server.root_dir / name).read_text()

    open_notebook(page, lab_server, name)
    said = f"{job.name} · {job.id[-6:]} succeeded after"
    page.locator(".Toastify__toast", has_text=said).wait_for(timeout=30_000)
    output = _job_output(page, 1, job.id, "succeeded")
    output.locator(".tfc-JobOutput-returned").wait_for(timeout=30_000)
    lines = output.locator(".tfc-JobOutput-lines").inner_text()
    assert "epoch 7 done" in lines and "last line of the job" in lines, lines
    assert output.locator(".tfc-JobOutput-returned").inner_text() == record.returned
    assert {"model", "history"} <= set(record.returned.rstrip(".").split(": ", 1)[1].split(", "))
    assert output.locator(".tfc-JobOutput-hint").count() == 0
    plot = output.locator("img.tfc-JobOutput-plot")
    plot.wait_for(timeout=15_000)
    assert page.evaluate("img => img.naturalWidth > 0", plot.element_handle())
    got = cell_outputs(page, name, 1)  # the cut log and plot are gone: the job's output alone
    assert got["count"] == 1 and got["streams"] == "", got
    screenshot(page, "lab-ended-reloaded.png")

    # The kernel restarts (a new process, the same id): the names are gone from it, and the
    # cell says so and how to bring them back, when the page is opened again.
    kernel_id, _, pid = (record.returned_kernel or "").partition("/")
    assert kernel_id and pid.isdigit(), record.returned_kernel
    restart = urllib.request.Request(
        f"{lab_server.url}api/kernels/{kernel_id}/restart?token={lab_server.token}",
        data=b"", method="POST",
    )  # fmt: skip
    with urllib.request.urlopen(restart, timeout=60) as answer:
        assert answer.status == 200
    page.goto("about:blank")
    open_notebook(page, lab_server, name)
    output = _job_output(page, 1, job.id, "succeeded")
    gone = output.locator(".tfc-JobOutput-hint", has_text="The kernel restarted since")
    gone.wait_for(timeout=30_000)
    assert f"%tfc_attach {job.id}" in gone.inner_text()
    assert output.locator(".tfc-JobOutput-returned").count() == 0
