"""A sweep on this machine launched through the jobs API (issue 47): ``POST /jobs`` starts its
driver (``tfc_jupyter.trials.driver``), a process of its own, and answers 202 with the sweep's
id; the sidebar follows it at ``GET /sweeps/ID`` and its trials in ``GET /jobs``.

The notebook is TensorFlow-free: its run cell reports a loss computed from ``lr`` through the
runtime's own channel (``tfc_runtime.results.emit``), so each trial's metric is known (a grid:
each value once).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from jobutil import JOB_DEADLINE_S, wait_for
from tornado.httpclient import HTTPClientError, HTTPResponse

from tfc_jupyter.trials.driver import DRIVER_LOG
from tfc_jupyter.trials.trials import SWEEPS, _driving

pytest_plugins = ("pytest_jupyter.jupyter_server",)

Fetch = Callable[..., Awaitable[HTTPResponse]]

FLAGS = '--sweep "lr=[0.1,0.01]" --trials 2 --parallel 1 --metric loss --goal min --method grid'
RUN = (
    f"%%tfc_run {FLAGS}\n"
    + """from tfc_runtime.results import emit
emit({"event": "epoch", "fit": 0, "epoch": 1, "metrics": {"loss": lr * 10}})
print("trained with", lr)
"""
)


def _notebook(path: Path) -> Path:
    cells = [
        {"cell_type": "code", "metadata": {}, "source": "lr = 0.5  # the notebook's own\n"},
        {"cell_type": "code", "metadata": {}, "source": RUN},
    ]
    for i, c in enumerate(cells):
        c.update(outputs=[], execution_count=None, id=f"c{i}")
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}
    path.write_text(json.dumps(nb))
    return path


@pytest.fixture
def tfc_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh job-record folder shared by the server, the driver and this test."""
    for name in ("TFC_BACKEND", "TFC_MACHINE", "TFC_REGION", "TFC_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "tfc_home"
    home.mkdir()
    monkeypatch.setenv("TFC_JUPYTER_HOME", str(home))
    return home


@pytest.fixture
def jp_server_config(tfc_home: Path) -> dict[str, Any]:
    return {
        "ServerApp": {
            "jpserver_extensions": {"tfc_jupyter": True, "jupyter_server_terminals": False},
            "allow_unauthenticated_access": False,
        }
    }


async def _call(fetch: Fetch, method: str, *parts: str, body: Any = None) -> tuple[int, Any]:
    kwargs: dict[str, Any] = {}
    if method == "POST":
        kwargs["body"] = json.dumps(body) if body is not None else b""
    try:
        response = await fetch("tfc-jupyter", *parts, method=method, **kwargs)
    except HTTPClientError as exc:
        assert exc.response is not None
        response = exc.response
    text = response.body.decode() if response.body else ""
    return response.code, json.loads(text) if text else None


def _own_session(pid: int) -> bool:
    try:
        return os.getsid(pid) == pid
    except ProcessLookupError:  # it ended already (and was reaped): nothing to check
        return True


@pytest.mark.slow
async def test_a_local_sweep_posted_runs_its_trials_and_is_followed(
    jp_fetch: Fetch, jp_root_dir: Path, tfc_home: Path
) -> None:
    _notebook(jp_root_dir / "sweep.ipynb")
    status, dry = await _call(
        jp_fetch, "POST", "jobs", body={"path": "sweep.ipynb", "options": {"dry_run": True}}
    )
    assert status == 200 and dry["plan"]["refused"] is None, dry
    assert dry["sweep"] == "it would run as a sweep: its trials are jobs of their own"

    status, started = await _call(jp_fetch, "POST", "jobs", body={"path": "sweep.ipynb"})
    assert status == 202, started
    sweep_id = started["sweep"]
    assert (started["trials"], started["parallel"]) == (2, 1)
    assert started["path"] == f"sweeps/{sweep_id}"
    assert _own_session(started["driver"]["pid"])  # detached: it outlives the server
    assert started["driver"]["log"].endswith(DRIVER_LOG)

    status, shown = await _call(jp_fetch, "GET", *started["path"].split("/"))
    assert status == 200, shown  # at once: before its driver launched its first trial
    assert shown["trials_asked"] == 2 and shown["names"] == ["lr"], shown
    deadline = time.monotonic() + JOB_DEADLINE_S
    while time.monotonic() < deadline:
        status, shown = await _call(jp_fetch, "GET", *started["path"].split("/"))
        assert status == 200, shown
        trials = shown["trials"]
        if len(trials) == 2 and all(t["state"] == "succeeded" for t in trials):
            break
        await asyncio.sleep(0.2)
    else:
        log = Path(started["driver"]["log"]).read_text()
        raise AssertionError(f"the sweep did not end within {JOB_DEADLINE_S} s: {shown}\n{log}")
    got = {t["values"]["lr"]: t["metric"] for t in shown["trials"]}
    assert got == {0.1: pytest.approx(1.0), 0.01: pytest.approx(0.1)}
    assert (shown["metric"], shown["goal"]) == ("loss", "min")
    best = next(t for t in shown["trials"] if t["number"] == shown["best"])
    assert best["values"] == {"lr": 0.01}

    status, listed = await _call(jp_fetch, "GET", "jobs")
    assert status == 200
    ids = {j["id"] for j in listed["jobs"]}
    assert {t["job_id"] for t in shown["trials"]} <= ids
    log = Path(started["driver"]["log"])
    said = wait_for("the driver's last line", lambda: "done: sweep" in log.read_text())
    assert said and "2 of 2 trials (2 succeeded)" in log.read_text()


async def test_a_sweep_being_driven_is_not_started_twice(
    jp_fetch: Fetch, jp_root_dir: Path, tfc_home: Path
) -> None:
    """Its lock is held (a driver runs it): a second start is a 409 and launches nothing."""
    _notebook(jp_root_dir / "sweep.ipynb")
    status, dry = await _call(
        jp_fetch, "POST", "jobs", body={"path": "sweep.ipynb", "options": {"dry_run": True}}
    )
    assert status == 200, dry
    from tfc_jupyter.client import Client
    from tfc_jupyter.trials.trials import sweep_folder

    client = Client()
    plan = client.plan_file(str(jp_root_dir / "sweep.ipynb"), how="test")
    with _driving(sweep_folder(client, plan)):
        status, data = await _call(jp_fetch, "POST", "jobs", body={"path": "sweep.ipynb"})
    assert status == 409 and data["error"] == "JobConflict", data
    assert "is being run by another process" in data["message"]
    status, listed = await _call(jp_fetch, "GET", "jobs")
    assert listed["jobs"] == []


async def test_a_sweep_nothing_can_run_keeps_its_one_line_error(
    jp_fetch: Fetch, jp_root_dir: Path, tfc_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Docker not answering: the dry run and the launch say it, and no driver starts."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tfc_home}/no-docker.sock")
    _notebook(jp_root_dir / "sweep.ipynb")
    body: dict[str, Any] = {"path": "sweep.ipynb", "options": {"backend": "docker"}}
    status, data = await _call(jp_fetch, "POST", "jobs", body=body)
    assert status == 502 and data["error"] == "BackendError", data
    assert "no Docker engine answers" in data["message"] and "\n" not in data["message"]
    assert data["hint"]
    body["options"]["dry_run"] = True
    status, dry = await _call(jp_fetch, "POST", "jobs", body=body)
    assert status == 200 and dry["plan"]["refused"]["error"] == "BackendError", dry
    assert dry["sweep"] is None
    assert not (tfc_home / SWEEPS).exists() or not list((tfc_home / SWEEPS).rglob(DRIVER_LOG))


@pytest.mark.slow
def test_the_driver_outlives_the_service(tmp_path: Path, tfc_env: Path) -> None:
    """Started from a service object that then goes away: the driver is in a session of its
    own and runs the sweep to its end."""
    import gc

    from tfc_jupyter.server.service import JobService

    _notebook(tmp_path / "sweep.ipynb")
    service = JobService(tmp_path)
    status, started = service.create({"path": "sweep.ipynb"})
    assert status == 202, started
    store = service.store()
    del service
    gc.collect()
    pid = started["driver"]["pid"]
    assert _own_session(pid)
    from tfc_jupyter.trials.sweep_jobs import sweep_json

    def ended() -> Any:
        try:
            shown = sweep_json(store, started["sweep"])
        except Exception:
            return None
        done = [t for t in shown["trials"] if t["state"] == "succeeded"]
        return shown if len(done) == 2 else None

    shown = wait_for("two succeeded trials", ended, timeout=JOB_DEADLINE_S)
    assert all(t["metric"] is not None for t in shown["trials"])


def test_a_sweep_whose_driver_has_made_no_trial_yet_is_shown_starting_or_its_error(
    tmp_path: Path, tfc_home: Path
) -> None:
    """Between the 202 and its first trial's job (the driver plans the cells again and imports
    Optuna), ``GET sweeps/ID`` shows the sweep with no trials and says it starts; a driver that
    ended with an error before any trial (the cells changed meanwhile) says that error."""
    import contextlib
    import io

    from tfc_jupyter.client import Client
    from tfc_jupyter.trials.driver import DRIVER_FILE, _say
    from tfc_jupyter.trials.sweep_jobs import sweep_json
    from tfc_jupyter.trials.trials import SWEEP_FILE, sweep_file, sweep_folder, sweep_label

    client = Client()
    plan = client.plan_file(str(_notebook(tmp_path / "sweep.ipynb")), how="test")
    folder = sweep_folder(client, plan)
    folder.mkdir(parents=True)
    (folder / SWEEP_FILE).write_text(sweep_file(plan))  # as start_driver writes them
    (folder / DRIVER_FILE).write_text("{}")
    sweep_id = sweep_label(folder.name)
    shown = sweep_json(client.store, sweep_id)
    assert shown["trials"] == [] and shown["trials_asked"] == 2 and shown["names"] == ["lr"]
    assert shown["summary"].endswith("0 of 2 trials; starting: its first trial is planned")
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        _say("error: the cells planned again make another sweep. Fix: launch the sweep again")
    (folder / DRIVER_LOG).write_text(said.getvalue())
    shown = sweep_json(client.store, sweep_id)
    assert shown["trials"] == [] and shown["summary"].endswith(
        "; its driver ended: the cells planned again make another sweep. "
        "Fix: launch the sweep again"
    ), shown["summary"]
