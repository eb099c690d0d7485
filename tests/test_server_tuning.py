"""A sweep on Vertex AI in the sidebar's sweep tab (issue 50): ``POST /jobs`` launches one
HyperparameterTuningJob against the local Vertex server (which plays Vizier and runs each trial
for real: ``tests/vertex_tuning.py``), the job carries its own id as its sweep's label (the
sidebar groups it as a sweep), and ``GET /sweeps/ID`` serves the trials its watcher keeps in the
job folder's ``trials.json``, read through the border: a link, an oversize file or entries
that are not trials are said, never a traceback.

The notebook is TensorFlow-free: its run cell reports a loss computed from ``lr`` through the
runtime's own channel, which writes the trial's metric file Vizier reads.
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobutil import JOB_DEADLINE_S, plan_for, wait_gone, write_notebook
from test_vertex_backend import FLAGS, image_folder
from test_vertex_backend import home as home  # a fixture: the server's endpoints, fast polls
from tornado.httpclient import HTTPClientError, HTTPResponse
from vertex_server import VertexServer

from tfc_jupyter.jobs import store_for
from tfc_jupyter.registry import SWEEP_LABEL, TRIALS_FILE
from tfc_jupyter.server.service import JobService
from tfc_jupyter.store.records import JobState
from tfc_jupyter.trials.tuned import TRIALS_BYTES
from tfc_jupyter.util.files import human_size

pytest_plugins = ("pytest_jupyter.jupyter_server",)

Fetch = Callable[..., Awaitable[HTTPResponse]]

SWEEP = '--sweep "lr=[0.1,0.01]" --trials 2 --parallel 1 --metric loss --goal min --method grid'
RUN = f"""%%tfc_run {FLAGS} {SWEEP}
from tfc_runtime.results import emit
emit({{"event": "epoch", "fit": 0, "epoch": 1, "metrics": {{"loss": lr * 10}}}})
print("trained with", lr)
"""
STATES = {"running", "succeeded", "failed", "pruned", "stopped"}


@pytest.fixture
def jp_server_config(home: Path) -> dict[str, Any]:
    return {
        "ServerApp": {
            "jpserver_extensions": {"tfc_jupyter": True, "jupyter_server_terminals": False},
            "allow_unauthenticated_access": False,
        }
    }


def _notebook(folder: Path, server: VertexServer) -> Path:
    nb = write_notebook(folder / "sweep.ipynb", "lr = 0.5  # the notebook's own", RUN)
    image_folder(server, plan_for(nb), folder / "image")
    return nb


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


def _check_shape(shown: dict[str, Any]) -> None:
    """The sweep tab's JSON as openapi.yaml's Sweep has it."""
    assert shown["goal"] in ("min", "max") and isinstance(shown["summary"], str)
    assert "\n" not in shown["summary"]
    json.dumps(shown, allow_nan=False)  # JSON the browser parses: no NaN, no infinity
    for t in shown["trials"]:
        assert isinstance(t["number"], int) and t["state"] in STATES, t
        assert all(isinstance(v, (int, float, str, bool)) for v in t["values"].values()), t
        assert t["metric"] is None or isinstance(t["metric"], float), t


async def test_a_tuning_job_s_trials_are_served_at_its_sweep(
    jp_fetch: Fetch, jp_root_dir: Path, vertex_server: VertexServer, home: Path
) -> None:
    _notebook(jp_root_dir, vertex_server)
    status, created = await _call(jp_fetch, "POST", "jobs", body={"path": "sweep.ipynb"})
    assert status == 201, created  # one job: Vertex AI runs the sweep
    job = created["job"]
    sweep_id = job["spec"]["labels"][SWEEP_LABEL]
    assert sweep_id == job["id"]  # the sidebar groups it as a sweep by this label
    (tuning,) = vertex_server.tuning_jobs.values()
    assert tuning.snapshot()["labels"][SWEEP_LABEL] == sweep_id

    deadline = time.monotonic() + JOB_DEADLINE_S
    shown: Any = None
    while time.monotonic() < deadline:
        status, shown = await _call(jp_fetch, "GET", "sweeps", sweep_id)
        assert status == 200, shown  # served from the first look: the job is there
        _check_shape(shown)
        done = [t for t in shown["trials"] if t["state"] == "succeeded"]
        if len(done) == 2 and f"job {sweep_id} succeeded" in shown["summary"]:
            break
        await asyncio.sleep(0.3)
    else:
        raise AssertionError(f"the tuning job did not end within {JOB_DEADLINE_S} s: {shown}")

    # The trials are Vizier's, as the server holds them: its values and the metric it read.
    served = {t["id"]: t for t in tuning.snapshot()["trials"]}
    assert {str(t["number"]) for t in shown["trials"]} == set(served) == {"1", "2"}
    for t in shown["trials"]:
        vizier = served[str(t["number"])]
        assert t["values"] == {"lr": vizier["parameters"][0]["value"]}
        assert t["metric"] == vizier["finalMeasurement"]["metrics"][0]["value"]
        assert t["metric"] == pytest.approx(t["values"]["lr"] * 10)
        assert t["job_id"] is None and t["seconds"] is not None  # Vertex AI's, not ours
    assert {t["values"]["lr"] for t in shown["trials"]} == {0.1, 0.01}  # the grid, once each
    assert (shown["metric"], shown["goal"], shown["trials_asked"]) == ("loss", "min", 2)
    assert shown["names"] == ["lr"] and shown["svg"]
    best = next(t for t in shown["trials"] if t["number"] == shown["best"])
    assert best["values"] == {"lr": 0.01}
    assert f"best #{best['number']} loss" in shown["summary"], shown["summary"]

    status, listed = await _call(jp_fetch, "GET", "jobs")
    (row,) = listed["jobs"]
    assert row["spec"]["labels"][SWEEP_LABEL] == sweep_id and row["state"] == "succeeded"


def _ended_tuning_job(server: VertexServer, home: Path, folder: Path) -> tuple[str, Path]:
    """A tuning job launched and cancelled before its trials start, its watcher gone: its
    folder is then the test's to write (the watcher writes trials.json no more)."""
    server.provision_delay = 30.0
    service = JobService(folder)
    _notebook(folder, server)
    status, created = service.create({"path": "sweep.ipynb"})
    assert status == 201, created
    job = service.client().job(created["job"]["id"])
    assert job.cancel().state is JobState.CANCELLED
    record = store_for(home).get(job.id)
    assert wait_gone([int(record.handle["watcher_pid"])]) == []
    return created["job"]["spec"]["labels"][SWEEP_LABEL], Path(record.job_dir)


def _write(job_dir: Path, text: str) -> None:
    path = job_dir / TRIALS_FILE
    path.unlink(missing_ok=True)
    path.write_text(text)


async def test_a_tuning_job_s_trials_file_is_read_through_the_border(
    jp_fetch: Fetch, jp_root_dir: Path, vertex_server: VertexServer, home: Path
) -> None:
    """A link, a file over the limit, JSON that is not a list, entries that are not trials:
    the sweep is served with what could be read, and the summary says what was not."""
    sweep_id, job_dir = _ended_tuning_job(vertex_server, home, jp_root_dir)
    trial = {"id": "3", "state": "SUCCEEDED", "parameters": [{"parameterId": "lr", "value": 0.1}],
             "finalMeasurement": {"metrics": [{"metricId": "loss", "value": 1.0}]}}  # fmt: skip
    secret = jp_root_dir / "secret.json"
    secret.write_text(json.dumps([trial]))
    (job_dir / TRIALS_FILE).unlink(missing_ok=True)
    os.symlink(secret, job_dir / TRIALS_FILE)
    cases = [
        (None, f"not read: {TRIALS_FILE}: a link, not followed", []),
        (" " * (TRIALS_BYTES + 1), f"not read: {TRIALS_FILE}: over {human_size(TRIALS_BYTES)}", []),
        ('{"id": "3"}', f"not read: {TRIALS_FILE}: not a list of trials", []),
        ("[" * 200 + "]" * 200, "nested over 100 levels deep", []),
        (json.dumps([trial, 7, {"id": "x"}, {"id": True}]), "3 of 4 entries not trials", [3]),
        (json.dumps([trial]), None, [3]),
    ]
    for text, says, numbers in cases:
        if text is not None:
            _write(job_dir, text)
        status, shown = await _call(jp_fetch, "GET", "sweeps", sweep_id)
        assert status == 200, shown
        _check_shape(shown)
        assert [t["number"] for t in shown["trials"]] == numbers, (says, shown)
        if says is None:
            assert "not read" not in shown["summary"], shown["summary"]
        else:
            assert says in shown["summary"], (says, shown["summary"])
    assert shown["trials"][0]["metric"] == 1.0 and shown["best"] == 3
    assert f"job {sweep_id} cancelled" in shown["summary"]
    (job_dir / "job.json").write_text("[]")  # what the sweep tries, gone: one line, the fix
    status, shown = await _call(jp_fetch, "GET", "sweeps", sweep_id)
    assert status == 502 and "it holds no sweep that a job runs" in shown["message"], shown
    assert "\n" not in shown["message"] and shown["hint"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=20,
)
_TRIAL = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.integers(-3, 10**20).map(str), _JSON),
        "state": st.sampled_from(["ACTIVE", "SUCCEEDED", "INFEASIBLE", "STOPPING", "X"]) | _JSON,
        "parameters": st.lists(
            st.fixed_dictionaries({"parameterId": st.just("lr") | _JSON, "value": _JSON}),
            max_size=3,
        )
        | _JSON,
        "finalMeasurement": st.fixed_dictionaries(
            {
                "metrics": st.lists(
                    st.fixed_dictionaries({"metricId": st.just("loss"), "value": _JSON}), max_size=2
                )
            }
        )
        | _JSON,
        "measurements": st.lists(st.fixed_dictionaries({"stepCount": _JSON}), max_size=3) | _JSON,
        "startTime": st.just("2026-01-01T00:00:00Z") | _JSON,
        "endTime": st.just("2026-01-01T00:01:00") | st.just("2026-01-01T00:01:00Z") | _JSON,
        "infeasibleReason": _JSON,
    },
)


def test_any_trials_file_is_served_in_the_sweep_s_shape(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    """Whatever JSON a job folder's trials.json holds (hypothesis), GET /sweeps/ID answers the
    Sweep shape: a trial a number, a state of the five, values the browser reads, no NaN."""
    sweep_id, job_dir = _ended_tuning_job(vertex_server, home, tmp_path)
    service = JobService(tmp_path)

    @settings(
        max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(st.lists(_TRIAL | _JSON, max_size=6) | _JSON)
    def check(data: Any) -> None:
        _write(job_dir, json.dumps(data))
        shown = service.sweep(sweep_id)
        _check_shape(shown)
        numbers = [t["number"] for t in shown["trials"]]
        assert numbers == sorted(set(numbers))
        if not isinstance(data, list):
            assert "not a list of trials" in shown["summary"]

    check()
