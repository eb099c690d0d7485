"""The launch panel in a real browser: JupyterLab, Debian chromium, a real 1-worker local job.

Open a notebook, run it (the last cell is ``%tfc_panel``), pick one worker in the panel, double
click Launch, and see the job succeed with both replicas' logs in the panel. The screenshot is
kept as ``artifacts/panel.png`` (the README's ``docs/panel.png`` is a copy of one).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from browser import LabServer, lab_command, open_notebook, screenshot
from jobutil import write_notebook

from tfc_jupyter.jobs import store_for
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
    assert "one_device (auto)" in _text(page, ".tfc-summary")

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
        "() => document.querySelector('.tfc-log').innerText.includes('[worker-0] sum over')",
        timeout=30_000,
    )
    page.set_viewport_size({"width": 1280, "height": 1400})  # the whole panel in view
    page.locator(".tfc-panel").scroll_into_view_if_needed()
    time.sleep(0.5)  # let the last render settle for the screenshot
    screenshot(page.locator(".tfc-panel"), "panel.png")

    state = _text(page, ".tfc-job-state").strip()
    log = _text(page, ".tfc-log")
    assert state == "succeeded", f"{_text(page, '.tfc-state')}\n{log}"
    for replica in ("chief", "worker-0"):
        assert f"[{replica}] MultiWorkerMirrored: True replicas in sync: 2" in log
        assert f"[{replica}] sum over replicas: 2.0" in log
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
