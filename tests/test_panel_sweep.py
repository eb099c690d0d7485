"""A sweep in the ipywidgets launch panel (issue 50), driven in Python as tests/test_panel.py
drives the panel: real widgets, real jobs, every wait with a deadline.

A sweep launched from the panel on Vertex AI (one tuning job, against the local Vertex server,
which plays Vizier and runs each trial for real) shows its trials' table, the cell's own
(:class:`tfc_jupyter.trials.trial_table.Sweep`), updating as trials end; a trial of a sweep this
machine ran, attached from *Earlier jobs*, shows its whole sweep. The notebook is
TensorFlow-free: its run cell reports a loss computed from ``lr`` through the runtime's channel.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from jobutil import JOB_DEADLINE_S, plan_for, write_notebook
from test_vertex_backend import FLAGS, image_folder
from test_vertex_backend import home as home  # a fixture: the server's endpoints, fast polls
from vertex_server import VertexServer

from tfc_jupyter.client import Client
from tfc_jupyter.config import load_settings
from tfc_jupyter.job import options
from tfc_jupyter.jobs import Job, store_for
from tfc_jupyter.notebook import capture
from tfc_jupyter.panel import build_model
from tfc_jupyter.panel.view import LaunchPanel
from tfc_jupyter.trials.trials import run_sweep

SWEEP = '--sweep "lr=[0.1,0.01]" --trials 2 --parallel 1 --metric loss --goal min --method grid'
BODY = """from tfc_runtime.results import emit
emit({"event": "epoch", "fit": 0, "epoch": 1, "metrics": {"loss": lr * 10}})
print("trained with", lr)
"""


def _panel(nb: Path, store_home: Path) -> LaunchPanel:
    settings = load_settings(include_server=False)  # the environment's: the server's endpoint

    def select() -> capture.Selection:
        return capture.select_cells(capture.read_notebook(nb), path=nb, how="test")

    base = options.parse_line(select().magic_line)  # the cell's flags, as --interactive has them
    model = build_model(settings, select=select, base=base, notebook=nb, remember=False)
    return LaunchPanel(model, store_for(store_home))


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def _rows(html: str) -> list[str]:
    """The table's rows (each row's cells as text, joined by |)."""
    return [
        "|".join(re.findall(r"<td>(.*?)</td>", row))
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", html)
        if "<td>" in row
    ]


def test_a_sweep_launched_from_the_panel_on_vertex_ai_shows_its_trials(
    tmp_path: Path, vertex_server: VertexServer, home: Path
) -> None:
    nb = write_notebook(tmp_path / "sweep.ipynb", "lr = 0.5", f"%%tfc_run {FLAGS} {SWEEP}\n{BODY}")
    panel = _panel(nb, home)
    try:
        assert panel.model.check.ok, panel.model.check.error
        image_folder(vertex_server, panel.model.plan(), tmp_path / "image")
        assert panel.trials.value == ""  # no job yet
        panel.launch_button.click()
        assert panel.launcher.wait(JOB_DEADLINE_S) == "launched", panel.message.value
        _wait(lambda: panel.watch is not None, 10, "the panel to watch the tuning job")
        assert panel.watch is not None and panel.watch.sweep_id == panel.watch.job.id
        seen: list[list[str]] = []

        def ended() -> bool:
            rows = _rows(panel.trials.value)
            if rows and rows not in seen:
                seen.append(rows)
            return len(rows) == 2 and all("succeeded" in r for r in rows)

        _wait(ended, JOB_DEADLINE_S, "both trials succeeded in the panel's table")
        assert panel.watch.join(JOB_DEADLINE_S) and "succeeded" in panel.state.value
    finally:
        panel.close()
    # It updated as trials ran and ended: a table with a running or a single trial came first.
    assert len(seen) >= 2, seen
    assert any(len(rows) == 1 or any("running" in r for r in rows) for rows in seen[:-1]), seen
    (tuning,) = vertex_server.tuning_jobs.values()
    for trial in tuning.snapshot()["trials"]:
        lr = trial["parameters"][0]["value"]
        loss = trial["finalMeasurement"]["metrics"][0]["value"]
        row = next(r for r in seen[-1] if r.startswith(f"{trial['id']}|"))
        assert row.split("|")[1] == str(lr) and f"{loss:g}"[:4] in row, (row, trial)
    value = panel.trials.value
    assert "tfc-sweep" in value and "<svg" in value and "best #" in value  # the cell's view


def test_a_trial_attached_in_the_panel_shows_its_whole_sweep(tmp_path: Path, tfc_env: Path) -> None:
    """A sweep this machine ran (its trials are jobs): attaching one of them from Earlier
    jobs shows the sweep's table, both trials with their metrics, the best one marked."""
    nb = write_notebook(tmp_path / "sweep.ipynb", "lr = 0.5", f"%%tfc_run {SWEEP}\n{BODY}")
    store_home = tmp_path / "home"
    sweep = run_sweep(Client(store=store_for(store_home)), plan_for(nb))
    assert [t.state for t in sweep.trials] == ["succeeded", "succeeded"], sweep.summary_line()
    panel = _panel(nb, store_home)
    try:
        trial = sweep.trials[0].job_id
        assert trial is not None
        watch = panel.attach(Job(trial, store_for(store_home)))
        assert watch.join(JOB_DEADLINE_S)
        _wait(lambda: len(_rows(panel.trials.value)) == 2, 10, "the sweep's table")
    finally:
        panel.close()
    rows = _rows(panel.trials.value)
    assert [r.split("|")[:3] for r in rows] == [
        ["0", "0.1", "succeeded"],
        ["1", "0.01", "succeeded"],
    ]
    assert sweep.summary_line().split(":", 1)[1] in panel.trials.value.replace("&#x27;", "'")


def test_a_local_sweep_launched_from_the_panel_runs_and_is_followed_trial_by_trial(
    tmp_path: Path, tfc_env: Path
) -> None:
    """Launch on a local sweep starts its driver (a process of its own, as the jobs API
    does): the panel follows the first trial, then the next, and shows the sweep's table until
    both trials succeeded; the watch ends with the sweep."""
    import os

    nb = write_notebook(tmp_path / "sweep.ipynb", "lr = 0.5", f"%%tfc_run {SWEEP}\n{BODY}")
    home = Path(os.environ["TFC_JUPYTER_HOME"])  # the driver's store is the environment's
    panel = _panel(nb, home)
    try:
        assert panel.model.check.ok, panel.model.check.error
        panel.launch_button.click()
        assert panel.launcher.wait(JOB_DEADLINE_S) == "launched", panel.message.value
        assert panel.launcher.drives_sweep
        assert panel.launcher.stage("build").status == "skipped"
        _wait(lambda: panel.watch is not None, 10, "the panel to watch the first trial")
        watch = panel.watch
        assert watch is not None and watch.follows_sweep and watch.sweep_id
        followed = {watch.job.id}

        def ended() -> bool:
            followed.add(watch.job.id)
            rows = _rows(panel.trials.value)
            return len(rows) == 2 and all("succeeded" in r for r in rows)

        _wait(ended, JOB_DEADLINE_S, "both trials succeeded in the panel's table")
        assert watch.join(JOB_DEADLINE_S), "the watch did not end with the sweep"
    finally:
        panel.close()
    assert len(followed) == 2, followed  # the second trial was followed too
    assert "trained with 0.01" in watch.text() and "trial 1: job" in watch.text(), watch.text()
    rows = _rows(panel.trials.value)
    assert [r.split("|")[:3] for r in rows] == [
        ["0", "0.1", "succeeded"],
        ["1", "0.01", "succeeded"],
    ]
