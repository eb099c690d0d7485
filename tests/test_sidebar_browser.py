"""The jobs sidebar as a tool, in a real JupyterLab driven through Debian chromium (issue 38).

One scenario: with no notebook open, "Launch on ..." says so in a dialog, and the Launcher has a
tile for it; a running job's tab shows its log as the cell does, with no empty line and its
progress bar drawn in place, at three moments of its life, and when it ends JupyterLab says so
in a notification that opens it; a job whose loss is NaN, and one whose loss overflows (too
high a learning rate), are flagged in their rows, the second also in its view, which names no
Vertex AI and opens its TensorBoard; an ended job is removed with its files, and "Clear
finished" empties the list of ended jobs, each after a confirmation, in the list and in the API
alike.
"""

from __future__ import annotations

import re
import time
import urllib.error
from typing import Any

import pytest
from browser import LabServer, lab_command, open_lab, screenshot
from jobutil import JOB_DEADLINE_S, stored_job, write_notebook
from webhook import Receiver

from tfc_jupyter.client import Client
from tfc_jupyter.config import load_settings
from tfc_jupyter.job.options import JobOptions
from tfc_jupyter.jobs import store_for
from tfc_jupyter.returns import notify
from tfc_jupyter.store.records import JobStore
from tfc_jupyter.trials.trials import run_sweep

pytestmark = pytest.mark.slow

JOB_MS = JOB_DEADLINE_S * 1000
BAR = (
    "import sys, time\n"
    "print('first', flush=True)\n"
    "time.sleep(3)\n"
    "for i in range(1, 9):\n"
    "    sys.stdout.write(f'\\rstep {i}/8 ' + '=' * i); sys.stdout.flush(); time.sleep(0.7)\n"
    "print(flush=True)\n"
    "print('last', flush=True)"
)
DIVERGES = (
    "import numpy as np, tensorflow as tf, tfc_runtime\n"
    "x = np.random.RandomState(0).normal(size=(256, 4)).astype('float32')\n"
    "y = (x @ np.array([1, 2, 3, 4], dtype='float32')).astype('float32')\n"
    "tf.keras.utils.set_random_seed(0)\n"
    "model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])\n"
    "model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=3.0), loss='mse')\n"
    "board = tf.keras.callbacks.TensorBoard(tfc_runtime.tensorboard_dir())\n"
    "model.fit(x, y, epochs=8, batch_size=32, verbose=2, callbacks=[board])"
)

NAN = (  # labels that are NaN: the loss is NaN from the first epoch, and the fit goes on
    "import numpy as np, tensorflow as tf\n"
    "x = np.ones((32, 2), 'float32'); y = np.full((32, 1), np.nan, 'float32')\n"
    "model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])\n"
    "model.compile(optimizer='sgd', loss='mse')\n"
    "model.fit(x, y, epochs=2, verbose=2)"
)


def test_the_sidebar_says_removes_clears_and_flags(
    lab_server: LabServer, browser_page: Any
) -> None:
    page = browser_page
    try:
        _scenario(lab_server, page)
    except Exception:
        screenshot(page, "sidebar-tools-failure.png")
        raise


def _log_text(page: Any, job_id: str) -> str:
    return str(page.locator(f".tfc-JobDetail[data-job-id='{job_id}'] .tfc-LogText").inner_text())


def _no_empty_lines(text: str) -> None:
    assert "\n\n" not in text.rstrip("\n") and not text.startswith("\n"), repr(text)


def _dialog_button(page: Any, label: str) -> Any:
    return page.locator(".jp-Dialog button", has_text=label)


def _emptied(lab_server: LabServer) -> JobStore:
    """The server's job store, other tests' jobs removed: a test counts its own."""
    store = store_for(lab_server.home)
    for rec in store.list(limit=None):
        store.delete(rec.id)
    return store


def _gone(lab_server: LabServer, job_id: str) -> bool:
    try:
        lab_server.api("GET", f"tfc-jupyter/jobs/{job_id}")
    except urllib.error.HTTPError as exc:
        return exc.code == 404
    return False


def _scenario(lab_server: LabServer, page: Any) -> None:
    root = lab_server.root_dir
    notebooks = (("bar", BAR), ("diverges", DIVERGES), ("nan", NAN), ("short", "print('short')"))
    for name, code in notebooks:
        write_notebook(root / f"{name}.ipynb", code)
    open_lab(page, lab_server)
    lab_command(page, "tfc-jupyter:show-jobs")

    # Nothing open: the Launcher's tile is there, and the sidebar's button says what to do.
    page.locator(".jp-LauncherCard", has_text="Launch on").wait_for(timeout=20_000)
    page.locator(".tfc-LaunchShortcut").click()
    page.locator(".jp-Dialog", has_text="Nothing to launch yet").wait_for(timeout=10_000)
    assert "Open a notebook or a Python script" in page.locator(".jp-Dialog").inner_text()
    _dialog_button(page, "OK").click()
    page.locator(".jp-Dialog").wait_for(state="detached")

    ids = {
        name: lab_server.api("POST", "tfc-jupyter/jobs", {"path": f"{name}.ipynb"})["job"]["id"]
        for name in ("bar", "diverges", "nan", "short")
    }
    # The running job's tab: no empty line while nothing new comes, the bar drawn in place.
    lab_command(page, "tfc-jupyter:open-job", {"id": ids["bar"]})
    detail = page.locator(f".tfc-JobDetail[data-job-id='{ids['bar']}']")
    detail.wait_for()
    page.wait_for_function(
        "id => document.querySelector(`.tfc-JobDetail[data-job-id='${id}'] .tfc-LogText`)"
        "?.innerText.includes('first')",
        arg=ids["bar"],
        timeout=JOB_MS,
    )
    page.wait_for_timeout(2500)  # two polls that read nothing new
    _no_empty_lines(_log_text(page, ids["bar"]))  # moment 1: started, waiting
    page.wait_for_function(
        "id => /step [3-7]\\/8/.test(document.querySelector("
        "`.tfc-JobDetail[data-job-id='${id}'] .tfc-LogText`)?.innerText ?? '')",
        arg=ids["bar"],
        timeout=JOB_MS,
    )
    drawing = _log_text(page, ids["bar"])  # moment 2: the bar being drawn
    _no_empty_lines(drawing)
    assert len(re.findall(r"step \d/8", drawing)) == 1, drawing  # one line, redrawn
    page.wait_for_function(
        "id => document.querySelector(`.tfc-JobDetail[data-job-id='${id}']`)"
        "?.dataset.state === 'succeeded' && document.querySelector("
        "`.tfc-JobDetail[data-job-id='${id}'] .tfc-LogText`)?.innerText.includes('last')",
        arg=ids["bar"],
        timeout=JOB_MS,
    )
    ended = _log_text(page, ids["bar"])  # moment 3: ended
    _no_empty_lines(ended)
    assert ended.strip().splitlines() == ["first", "step 8/8 ========", "last"], ended
    # Heard: a job seen running has ended, and JupyterLab says so, with a way to open it.
    said = f"bar · {ids['bar'][-6:]} succeeded after"
    toast = page.locator(".Toastify__toast", has_text=said)
    toast.wait_for(timeout=20_000)
    assert "Open job" in toast.inner_text(), toast.inner_text()

    # The job whose loss is NaN: flagged in its row, from the epoch it became NaN.
    nan_row = page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{ids['nan']}']")
    nan_row.locator(".tfc-JobRow-flag", has_text="loss is NaN from epoch 1").wait_for(
        timeout=JOB_MS
    )
    # The job whose loss overflowed: flagged in its row and its view.
    row = page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{ids['diverges']}']")
    row.locator(".tfc-JobRow-flag", has_text="loss is inf from epoch").wait_for(timeout=JOB_MS)
    lab_command(page, "tfc-jupyter:open-job", {"id": ids["diverges"]})
    view = page.locator(f".tfc-JobDetail[data-job-id='{ids['diverges']}']")
    view.locator(".tfc-MetricsLast-flag", has_text="loss is inf from epoch").wait_for(
        timeout=20_000
    )
    screenshot(page, "sidebar-flagged.png")
    # A local job's view names no Vertex AI; its TensorBoard opens from here.
    assert "Vertex AI console" not in view.inner_text()
    with page.context.expect_page(timeout=90_000) as opened:
        view.locator(".tfc-TensorBoardButton").click()
    board = opened.value
    board.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/"), timeout=90_000)
    board.wait_for_function("() => document.title.includes('TensorBoard')", timeout=60_000)
    board.close()

    # Remove an ended job with its files: asked first, then gone from the list and the API.
    short = lab_server.api("GET", f"tfc-jupyter/jobs/{ids['short']}")
    assert short["terminal"], short
    lab_command(page, "tfc-jupyter:open-job", {"id": ids["short"]})
    page.locator(f".tfc-JobDetail[data-job-id='{ids['short']}'] .tfc-DeleteButton").click()
    page.locator(".jp-Dialog", has_text="Remove this job?").wait_for()
    _dialog_button(page, "Remove with its files").click()
    page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{ids['short']}']").wait_for(
        state="detached", timeout=10_000
    )
    assert _gone(lab_server, ids["short"])

    # Clear finished: every ended job leaves the list.
    deadline = time.monotonic() + JOB_DEADLINE_S
    for name in ("diverges", "nan"):
        while not lab_server.api("GET", f"tfc-jupyter/jobs/{ids[name]}")["terminal"]:
            assert time.monotonic() < deadline, f"the {name} job did not end"
            time.sleep(0.5)
    page.locator(".tfc-ClearFinished").click()
    page.locator(".jp-Dialog", has_text="finished job").wait_for()
    _dialog_button(page, "Clear the list").click()
    page.locator(".tfc-Sidebar .tfc-JobRow").first.wait_for(state="detached", timeout=10_000)
    assert lab_server.api("GET", "tfc-jupyter/jobs")["jobs"] == []
    assert all(_gone(lab_server, ids[name]) for name in ("bar", "diverges", "nan"))


def test_fifty_jobs_in_sections_under_a_fixed_header_with_a_sweep_as_one_row(
    lab_server: LabServer, browser_page: Any
) -> None:
    """The list as a tool: 50 jobs in Running and Finished sections of one-line rows, the
    header and filter in view however far the list is scrolled, a long name whole on hover,
    and a sweep's trials as one row that opens to them."""
    page = browser_page
    try:
        _fifty_jobs(lab_server, page)
    except Exception:
        screenshot(page, "sidebar-fifty-failure.png")
        raise


def _fifty_jobs(lab_server: LabServer, page: Any) -> None:
    from tfc_jupyter.store.records import JobRecord, JobState, new_job_id

    store = _emptied(lab_server)
    now = time.time()
    long_name = "a-rather-long-experiment-name-that-does-not-fit-the-sidebar"
    made: list[JobRecord] = []
    for i in range(47):
        running = i < 3  # Vertex AI jobs are shown as recorded, never checked for a process
        name = long_name if i == 10 else f"run-{i:02d}"
        made.append(
            JobRecord(
                id=new_job_id(name),
                name=name,
                backend="vertex" if running else "local",
                state=JobState.RUNNING if running else JobState.SUCCEEDED,
                spec={"labels": [["team", "vision"]]},
                created_at=now - 100 * i,
                ended_at=None if running else now - 100 * i + 50,
            )
        )
    for trial in range(3):
        made.append(
            JobRecord(
                id=new_job_id(f"sweepy-trial-{trial}"),
                name=f"sweepy-trial-{trial}",
                backend="local",
                state=JobState.SUCCEEDED,
                spec={"labels": {"tfc-sweep": "sweepy-42", "tfc-trial": str(trial)}},
                created_at=now - 50 - trial,
                ended_at=now - 40,
            )
        )
    for rec in made:
        store.create(rec)
    assert len(lab_server.api("GET", "tfc-jupyter/jobs?limit=100")["jobs"]) == 50

    open_lab(page, lab_server)
    lab_command(page, "tfc-jupyter:show-jobs")
    sidebar = page.locator(".tfc-Sidebar")
    running = sidebar.locator(".tfc-JobSection[data-section='running']")
    finished = sidebar.locator(".tfc-JobSection[data-section='finished']")
    finished.wait_for(timeout=20_000)
    assert running.locator(".tfc-JobSection-count").inner_text() == "3"
    assert finished.locator(".tfc-JobSection-count").inner_text() == "47"
    assert running.locator(".tfc-JobRow").count() == 3

    # The sweep: one row, folded (its trials ended), that opens to its three trials.
    sweep = finished.locator(".tfc-SweepRow[data-sweep='sweepy-42']")
    assert sweep.locator(".tfc-SweepRow-count").inner_text() == "3 trials: 3 succeeded"
    assert sweep.locator(".tfc-JobRow").count() == 0
    sweep.locator(".tfc-SweepRow-summary").click()
    trials = sweep.locator(".tfc-JobRow .tfc-JobRow-name")
    trials.first.wait_for()
    assert trials.all_inner_texts() == [f"sweepy-trial-{n}" for n in range(3)]

    # One line a row, the long name cut short on screen and whole on hover.
    heights = page.eval_on_selector_all(
        ".tfc-Sidebar .tfc-JobRow", "rows => rows.map(r => r.getBoundingClientRect().height)"
    )
    assert len(heights) == 50 and max(heights) < 30, heights
    long_row = sidebar.locator(".tfc-JobRow", has_text="a-rather-long")
    assert long_row.get_attribute("title").startswith(long_name + "\n")
    cut = long_row.locator(".tfc-JobRow-name").evaluate("e => e.scrollWidth > e.clientWidth")
    assert cut, "the long name should be cut short in its row"

    # Scrolled to the end, the header and the filter are where they were.
    header = sidebar.locator(".tfc-JobsPanel-header")
    top_before = header.bounding_box()["y"]
    sidebar.evaluate("e => { e.scrollTop = e.scrollHeight; }")
    page.wait_for_timeout(300)
    assert sidebar.evaluate("e => e.scrollTop") > 200  # it did scroll
    assert header.bounding_box()["y"] == pytest.approx(top_before, abs=1)
    assert sidebar.locator(".tfc-JobFilter-input").is_visible()
    screenshot(page, "sidebar-fifty.png")

    # Folding a section hides its rows; the filter finds the sweep by name.
    finished.locator(".tfc-JobSection-title").click()
    assert finished.locator(".tfc-JobRow").count() == 0
    finished.locator(".tfc-JobSection-title").click()
    sidebar.locator(".tfc-JobFilter-input").fill("sweepy")
    page.wait_for_function(
        "() => document.querySelectorAll('.tfc-Sidebar .tfc-SweepRow').length === 1"
        " && !document.querySelector('.tfc-Sidebar .tfc-JobSection[data-section=running]')"
    )


def test_two_jobs_compared_in_one_overlaid_plot(lab_server: LabServer, browser_page: Any) -> None:
    """Compare: two jobs picked in the list open one view with their loss curves overlaid
    (one scale, one colour each, a legend) and the options they differ in."""
    page = browser_page
    try:
        _compare(lab_server, page)
    except Exception:
        screenshot(page, "sidebar-compare-failure.png")
        raise


def _compare(lab_server: LabServer, page: Any) -> None:
    from tfc_jupyter.store.records import new_job_id

    _emptied(lab_server)
    ids = []
    for name, scale, workers in (("adam", 1.0, 0), ("sgd", 2.0, 1)):
        job_id = new_job_id(name)
        stored_job(
            lab_server.home,
            job_id,
            name,
            spec={"worker_count": workers, "entry_args": [f"--optimizer={name}"]},
            epochs=[{"loss": scale / e, "accuracy": 1 - 0.1 / e} for e in range(1, 6)],
        )
        ids.append(job_id)
    assert lab_server.api("GET", f"tfc-jupyter/jobs/{ids[1]}/metrics")["epoch_count"] == 5

    open_lab(page, lab_server)
    lab_command(page, "tfc-jupyter:show-jobs")
    for job_id in ids:
        box = page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{job_id}'] .tfc-JobRow-pick")
        box.wait_for(timeout=20_000)
        assert page.locator(".tfc-CompareButton").count() == 0  # two are needed
        box.check()
    assert page.locator(".jp-MainAreaWidget .tfc-JobDetail").count() == 0  # no job opened
    page.locator(".tfc-CompareButton", has_text="Compare 2").click()
    view = page.locator(f".tfc-Compare[data-jobs='{' '.join(ids)}']")
    view.wait_for(timeout=10_000)
    lines = view.locator("polyline.tfc-Compare-line")
    lines.first.wait_for(timeout=10_000)
    assert sorted(lines.evaluate_all("ls => ls.map(l => l.dataset.jobId)")) == sorted(ids)
    colours = lines.evaluate_all("ls => ls.map(l => l.getAttribute('stroke'))")
    assert len(set(colours)) == 2, colours
    # One scale: the second job's loss starts twice as high, at the top of the box.
    tops = lines.evaluate_all(
        "ls => ls.map(l => Number(l.getAttribute('points').split(' ')[0].split(',')[1]))"
    )
    assert tops[1] == 0 and tops[0] > 0, tops
    legend = view.locator(".tfc-Compare-legend").inner_text()
    assert "adam" in legend and "sgd" in legend and "loss 0.4" in legend, legend
    row = view.locator(".tfc-Compare-options tr[data-option='worker_count']")
    assert row.locator("td").all_inner_texts() == ["worker_count", "0", "1"]
    assert view.locator(".tfc-Compare-options tr[data-option='entry_args']").count() == 1
    # Another metric every job reported.
    view.locator(".tfc-Compare-metric select").select_option("accuracy")
    view.locator(".tfc-Compare-legend", has_text="accuracy").wait_for(timeout=5_000)
    screenshot(page, "sidebar-compare.png")


def test_a_long_job_is_not_cancelled_by_a_stray_click(
    lab_server: LabServer, browser_page: Any
) -> None:
    """Cancel asks first when the job has run over a minute; *Keep running* sends nothing."""
    from tfc_jupyter.store.records import JobRecord, JobState, new_job_id

    page = browser_page
    store = store_for(lab_server.home)
    job_id = new_job_id("long")
    started = time.time() - 180  # a Vertex AI job is shown as recorded: three minutes in
    store.create(
        JobRecord(
            id=job_id,
            name="long",
            backend="vertex",
            state=JobState.RUNNING,
            created_at=started,
            started_at=started,
        )
    )
    try:
        open_lab(page, lab_server)
        lab_command(page, "tfc-jupyter:open-job", {"id": job_id})
        detail = page.locator(f".tfc-JobDetail[data-job-id='{job_id}']")
        detail.locator(".tfc-CancelButton").click()
        dialog = page.locator(".jp-Dialog", has_text="Stop this job?")
        dialog.wait_for(timeout=10_000)
        assert "long has run for 3 min" in dialog.inner_text(), dialog.inner_text()
        _dialog_button(page, "Keep running").click()
        dialog.wait_for(state="detached")
        page.wait_for_timeout(1500)
        assert lab_server.api("GET", f"tfc-jupyter/jobs/{job_id}")["state"] == "running"
        assert detail.get_attribute("data-state") == "running"
        assert detail.locator(".tfc-CancelButton").is_enabled()
    except Exception:
        screenshot(page, "sidebar-cancel-ask-failure.png")
        raise
    finally:
        store.delete(job_id)


def test_the_curves_read_in_the_dark_theme_and_fit_an_800_px_window(
    lab_server: LabServer, browser_page: Any
) -> None:
    """Issue 38: in JupyterLab's dark theme the curves were a white rectangle, and an 800-px
    window cut the plot off. The job's tab, dark: the plot's pixels are the theme's dark, with
    the curve's colour on it; at 800 px wide the plot fits its view."""
    import io

    from PIL import Image

    from tfc_jupyter.store.records import new_job_id

    page = browser_page
    store = store_for(lab_server.home)
    job_id = new_job_id("dark")
    stored_job(
        lab_server.home,
        job_id,
        "dark",
        epochs=[{"loss": 1 / e, "accuracy": 1 - 0.5 / e} for e in range(1, 9)],
    )
    try:
        page.set_viewport_size({"width": 800, "height": 900})
        open_lab(page, lab_server)
        lab_command(page, "apputils:change-theme", {"theme": "JupyterLab Dark"})
        page.wait_for_function(
            "() => document.body.dataset.jpThemeLight === 'false'", timeout=20_000
        )
        lab_command(page, "tfc-jupyter:open-job", {"id": job_id})
        detail = page.locator(f".tfc-JobDetail[data-job-id='{job_id}']")
        plot = detail.locator("img.tfc-MetricsPlot")
        plot.wait_for(timeout=20_000)
        page.wait_for_function(
            "id => document.querySelector(`.tfc-JobDetail[data-job-id='${id}'] img`)"
            "?.naturalWidth > 0",
            arg=job_id,
        )
        box, view = plot.bounding_box(), detail.bounding_box()
        assert box and view and box["x"] + box["width"] <= view["x"] + view["width"] + 1, (
            box,
            view,
        )
        image = Image.open(io.BytesIO(plot.screenshot())).convert("RGB")
        pixels = list(image.getdata())
        white = sum(1 for r, g, b in pixels if min(r, g, b) > 230) / len(pixels)
        dark = sum(1 for r, g, b in pixels if max(r, g, b) < 70) / len(pixels)
        blue = sum(1 for r, g, b in pixels if b > 140 and r < 90 and 90 < g < 150)
        screenshot(page, "sidebar-dark-plot.png")
        assert white < 0.01 and dark > 0.8, (white, dark)
        assert blue > 20, blue  # the loss curve, in its colour, on the dark
    except Exception:
        screenshot(page, "sidebar-dark-failure.png")
        raise
    finally:
        lab_command(page, "apputils:change-theme", {"theme": "JupyterLab Light"})
        store.delete(job_id)


_DESKTOP = """
(() => {
  // The page put in the background by the test (window.__tfcHidden), and the browser's desktop
  // notifications allowed: what the sidebar raises is kept for the test (and still raised).
  Object.defineProperty(document, 'hidden', {
    configurable: true, get: () => window.__tfcHidden === true
  });
  const Real = window.Notification;
  const raised = (window.__tfcRaised = []);
  class Kept {
    static get permission() { return 'granted'; }
    static requestPermission() { return Promise.resolve('granted'); }
    constructor(title, options) {
      raised.push({ title, body: options && options.body, tag: options && options.tag });
      try { return new Real(title, options); } catch (e) { this.onclick = null; }
    }
  }
  window.Notification = Kept;
})();
"""


def test_a_job_whose_notebook_is_closed_is_heard_by_webhook_toast_and_desktop(
    lab_server: LabServer, browser_page: Any
) -> None:
    """Launched from the sidebar's API with no notebook tab open, ``notify`` set to a webhook on
    a loopback address: when the job ends its supervisor posts one message there, and the open
    JupyterLab, its page in the background by then (it reads the list less often, not never),
    says so in a toast and a desktop notification. A job that failed in a cell offers "Go to
    cell" in its toast."""
    page = browser_page
    receiver = Receiver()
    try:
        root = lab_server.root_dir
        write_notebook(root / "heard.ipynb", "import time\ntime.sleep(4)\nprint('done')")
        write_notebook(root / "fails.ipynb", "import time\ntime.sleep(4)", "1 / 0")
        page.add_init_script(_DESKTOP)
        open_lab(page, lab_server)
        lab_command(page, "tfc-jupyter:show-jobs")
        ids = {
            name: lab_server.api(
                "POST",
                "tfc-jupyter/jobs",
                {"path": f"{name}.ipynb", "options": {"notify": [receiver.url]}},
            )["job"]["id"]
            for name in ("heard", "fails")
        }
        for job_id in ids.values():  # seen running, then the user looks at another tab
            page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{job_id}']").wait_for()
        page.evaluate("() => { window.__tfcHidden = true; }")
        bodies = receiver.wait_for(2)
        assert sorted(b["title"] for b in bodies) == [
            "TensorFlow job fails failed",
            "TensorFlow job heard succeeded",
        ], bodies
        said = f"heard · {ids['heard'][-6:]} succeeded after"
        page.locator(".Toastify__toast", has_text=said).wait_for(timeout=30_000)
        failed = page.locator(".Toastify__toast", has_text=f"fails · {ids['fails'][-6:]} failed")
        failed.wait_for(timeout=30_000)
        assert "Go to cell 2, line 1" in failed.inner_text(), failed.inner_text()
        raised = page.wait_for_function(
            "() => window.__tfcRaised.length >= 2 && window.__tfcRaised", timeout=30_000
        ).json_value()
        assert {r["tag"] for r in raised} == set(ids.values()), raised
        assert all(r["title"] == "TensorFlow job ended" for r in raised), raised
        assert any(said in r["body"] for r in raised), raised
        time.sleep(1.0)
        assert len(receiver.posts) == 2  # each job told once
        told = lab_server.api("GET", f"tfc-jupyter/jobs/{ids['heard']}")
        assert told["handle"]["notified"]["ok"] is True, told["handle"]
        assert told["spec"]["notify"] == [notify.shown(receiver.url)]  # its path masked
    except Exception:
        screenshot(page, "sidebar-heard-failure.png")
        raise
    finally:
        receiver.close()


SWEPT = (
    "%%tfc_run\n"
    "from tfc_runtime.results import emit\n"
    "for epoch in (1, 2):\n"
    "    emit({'event': 'epoch', 'fit': 0, 'epoch': epoch,\n"
    "          'metrics': {'loss': 1 / units, 'val_score': units * lr * epoch}})\n"
)


def test_a_sweep_opens_as_a_tab_of_its_trials(lab_server: LabServer, browser_page: Any) -> None:
    """A real sweep (three trials, each a local job) is one row; its *Trials* button opens a
    tab with the table of trials (values, state, metric, time, job), the best one marked, and
    the plot; a trial's job opens from its row."""
    page = browser_page
    try:
        path = write_notebook(
            lab_server.root_dir / "swept.ipynb",
            "lr = 0.1\nunits = 8",
            SWEPT,
            tags={0: ["parameters"]},
        )
        client = Client(load_settings(include_server=False), store_for(lab_server.home))
        words = ["--sweep", "units=[4,8,16]", "--method", "grid", "--metric", "val_score"]
        plan = client.plan_file(str(path), JobOptions.from_words(words), how="test")
        sweep = run_sweep(client, plan)
        assert [t.state for t in sweep.trials] == ["succeeded"] * 3, sweep.table_text()
        best = sweep.best_trial
        assert best is not None and best.values["units"] == 16

        open_lab(page, lab_server)
        lab_command(page, "tfc-jupyter:show-jobs")
        row = page.locator(f".tfc-SweepRow[data-sweep='{sweep.id.lower()[-63:]}']")
        row.wait_for(timeout=20_000)
        row.locator(".tfc-SweepRow-open").click()
        view = page.locator(".tfc-SweepView")
        view.locator("tbody tr").nth(2).wait_for(timeout=20_000)
        heads = view.locator("th").all_inner_texts()
        assert heads == ["#", "units", "state", "val_score", "time", "job"], heads
        rows = [r.split("\t") for r in view.locator("tbody tr").all_inner_texts()]
        assert [(r[0], r[1]) for r in rows] == [
            (str(t.number), str(t.values["units"])) for t in sweep.trials
        ], rows  # by trial number, each with its value (the grid's order is Optuna's)
        marked = view.locator("tr.tfc-SweepView-best")
        assert marked.get_attribute("data-trial") == str(best.number)
        assert "succeeded (best)" in marked.inner_text()
        assert view.locator("img.tfc-SweepView-plot").evaluate("img => img.naturalWidth") > 0
        assert sweep.summary_line() in view.inner_text()
        screenshot(page, "sidebar-sweep.png")
        marked.locator(".tfc-SweepView-job").click()
        page.locator(f".tfc-JobDetail[data-job-id='{best.job_id}']").wait_for(timeout=20_000)
    except Exception:
        screenshot(page, "sidebar-sweep-failure.png")
        raise
