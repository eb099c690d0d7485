"""The jupyter_server extension: every endpoint of the jobs API through a real server (jp_fetch).

Jobs launched here are real local jobs (``--strategy none`` keeps them to one fast process);
kernels and the server share the job records under one ``TFC_JUPYTER_HOME``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from jobutil import JOB_DEADLINE_S, plan_for, write_notebook
from tornado.httpclient import HTTPClientError, HTTPResponse

from tfc_jupyter import jobs
from tfc_jupyter.config import KEYS
from tfc_jupyter.server import handlers
from tfc_jupyter.server.service import JobService
from tfc_jupyter.store.records import JobRecord, JobState

pytest_plugins = ("pytest_jupyter.jupyter_server",)

ROOT = Path(__file__).resolve().parent.parent
Fetch = Callable[..., Awaitable[HTTPResponse]]


@pytest.fixture
def tfc_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh job-record folder shared by the server and this test (as a kernel would)."""
    for name in ("TFC_BACKEND", "TFC_MACHINE", "TFC_REGION", "TFC_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "tfc_home"
    home.mkdir()
    monkeypatch.setenv("TFC_JUPYTER_HOME", str(home))
    return home


@pytest.fixture
def jp_server_config(tfc_home: Path) -> dict[str, Any]:
    """Our extension on, authentication required (never allow_unauthenticated_access)."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"tfc_jupyter": True, "jupyter_server_terminals": False},
            "allow_unauthenticated_access": False,
        }
    }


@pytest.fixture
def notebook(jp_root_dir: Path) -> Path:
    """A saved notebook under the server root: prints a line, then a %%tfc_run cell."""
    return write_notebook(
        jp_root_dir / "train.ipynb",
        "print('saved cell')",
        "%%tfc_run --workers 2\nprint('run cell')",
    )


@pytest.fixture
def cleanup(tfc_home: Path) -> Iterator[None]:
    """Cancel whatever job a test leaves running (bounded)."""
    yield
    store = jobs.store_for(tfc_home)
    for record in store.list(limit=None):
        if not record.state.is_terminal():
            jobs.Job(record.id, store).cancel()


def _model(*cells: str) -> dict[str, Any]:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return dict(json.loads(nbformat.writes(nb)))


async def _call(
    fetch: Fetch, method: str, *parts: str, body: Any = None, **kwargs: Any
) -> tuple[int, Any]:
    """``(status, decoded JSON)`` of a request; error answers are returned, not raised."""
    if body is not None:
        kwargs["body"] = body if isinstance(body, (str, bytes)) else json.dumps(body)
    elif method == "POST":
        kwargs["body"] = b""
    try:
        response = await fetch("tfc-jupyter", *parts, method=method, **kwargs)
    except HTTPClientError as exc:
        assert exc.response is not None
        response = exc.response
    text = response.body.decode() if response.body else ""
    try:
        return response.code, json.loads(text) if text else None
    except ValueError:
        return response.code, text


async def _wait_terminal(fetch: Fetch, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_DEADLINE_S
    while time.monotonic() < deadline:
        status, job = await _call(fetch, "GET", "jobs", job_id)
        assert status == 200, job
        if job["terminal"]:
            return dict(job)
        await _sleep(0.2)
    raise AssertionError(f"job {job_id} did not end within {JOB_DEADLINE_S} s")


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


async def _all_logs(
    fetch: Fetch, job_id: str, replica: str, limit: int = 64, quiet: bool = False
) -> tuple[str, int]:
    """Follow a replica's log from offset 0 in small chunks, as the UI does; (text, calls)."""
    text, offset, calls = "", 0, 0
    while calls < 10_000:  # a bound: the job has ended, its logs are finite
        status, chunk = await _call(
            fetch,
            "GET",
            "jobs",
            job_id,
            "logs",
            params={"replica": replica, "offset": offset, "limit": limit}
            | ({"quiet": "1"} if quiet else {}),
        )
        assert status == 200, chunk
        assert chunk["offset"] == offset
        text += chunk["text"]
        offset = chunk["next_offset"]
        calls += 1
        if chunk["terminal"] and not chunk["more"]:
            return text, calls
    raise AssertionError(f"the log of {replica} never ended")


# ---------------------------------------------------------------- read-only endpoints
async def test_defaults_say_where_each_value_came_from(jp_fetch: Fetch, tfc_home: Path) -> None:
    status, data = await _call(jp_fetch, "GET", "defaults")
    assert status == 200
    backend = data["settings"]["backend"]
    assert (backend["value"], backend["source"], backend["env"]) == (
        "local",
        "default",
        "TFC_BACKEND",
    )
    assert set(data["settings"]) == set(KEYS) and all(v["help"] for v in data["settings"].values())
    assert data["settings"]["startup_timeout"]["value"] == 300.0
    assert data["settings"]["home"]["value"] == str(tfc_home)
    assert data["settings"]["home"]["source"] == "env TFC_JUPYTER_HOME"
    assert data["jobs_home"] == str(tfc_home)
    assert {"local", "docker", "vertex"} <= set(data["backends"])
    assert "multi_worker_mirrored" in data["strategies"]
    names = {o["name"]: o for o in data["options"]}
    assert names["workers"]["flag"] == "--workers"
    assert names["label"]["repeatable"] and names["dry_run"]["boolean"]
    assert "notebook" not in names and "wait" not in names


async def test_machines_lists_the_catalog_with_prices(jp_fetch: Fetch) -> None:
    status, data = await _call(jp_fetch, "GET", "machines")
    assert status == 200
    by_name = {m["name"]: m for m in data["machines"]}
    assert by_name["T4_1X"]["accelerator_type"] == "NVIDIA_TESLA_T4"
    assert by_name["CPU"]["price_per_hour"] > 0 and by_name["CPU"]["description"]
    assert "T4" in data["gpu_types"] and "v3-8" in data["tpu_types"]
    assert data["prices_as_of"]
    # A machine without a verified list price is listed with null, not a made-up number.
    assert by_name["H200_8X"]["price_per_hour"] is None and "H200" in data["gpu_types"]
    assert data["pricing_url"].startswith("https://cloud.google.com/vertex-ai/pricing")
    assert "P100" not in data["gpu_types"] and "P100_1X" not in by_name


async def test_openapi_documents_every_route(jp_fetch: Fetch) -> None:
    status, text = await _call(jp_fetch, "GET", "openapi.yaml")
    assert status == 200
    spec = yaml.safe_load(text)
    documented = set(spec["paths"])
    for pattern, _ in handlers.ROUTES:
        if pattern.startswith("(?P<path>"):
            continue  # the JSON 404 for everything else
        path = pattern.replace(handlers._JOB, "{job_id}").replace(handlers._SWEEP, "{sweep_id}")
        assert "/" + path in documented


async def test_the_served_options_schema_is_the_option_table(jp_fetch: Fetch) -> None:
    """Issue 36: CreateJob's ``options`` in the served OpenAPI document is made from the
    option table: one property per option a request may send, no other name."""
    from tfc_jupyter.job.options import all_fields

    status, text = await _call(jp_fetch, "GET", "openapi.yaml")
    assert status == 200
    schema = yaml.safe_load(text)["components"]["schemas"]["CreateJob"]["properties"]["options"]
    sent = {f.name for f in all_fields() if f.flag.in_json}
    assert set(schema["properties"]) == sent and schema["additionalProperties"] is False
    assert schema["properties"]["workers"]["description"].startswith("--workers: ")
    assert "description" in schema and "example" in schema  # the file's own words stay


def _options_schema() -> dict[str, Any]:
    from tfc_jupyter.job.options import options_schema

    return options_schema()


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=5,
)


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(sorted(_options_schema()["properties"])), value=_JSON_VALUES)
def test_what_the_options_schema_takes_the_server_takes(name: str, value: Any) -> None:
    """A client that checks its request against the served schema is not then refused for a
    value's type: whatever the schema takes, the server's reading of options takes too."""
    import jsonschema

    from tfc_jupyter.errors import SpecError
    from tfc_jupyter.job.options import JobOptions

    schema = _options_schema()
    if value is None:
        return  # null is "not given" (OpenAPI's nullable, which JSON Schema does not read)
    try:
        jsonschema.validate({name: value}, schema)
    except jsonschema.ValidationError:
        return
    try:
        JobOptions.from_json({name: value})
    except SpecError as exc:  # a value of the right type that no flag takes is another refusal
        assert "must be" not in str(exc) and "expected a whole number" not in str(exc), exc


async def test_unknown_endpoint_is_a_json_404(jp_fetch: Fetch) -> None:
    status, data = await _call(jp_fetch, "GET", "no-such-thing")
    assert status == 404
    assert data["error"] == "HTTPError" and "no such endpoint" in data["message"]


# ---------------------------------------------------------------- dry runs
async def test_dry_run_of_the_live_model_runs_unsaved_edits(
    jp_fetch: Fetch, notebook: Path
) -> None:
    model = _model("print('edited, not saved')", "x = 1")
    status, data = await _call(
        jp_fetch,
        "POST",
        "jobs",
        body={
            "path": "train.ipynb",
            "notebook": model,
            "dirty": True,
            "options": {"workers": 1, "dry_run": True},
        },
    )
    assert status == 200, data
    assert data["dry_run"] is True
    plan = data["plan"]
    assert plan["found_by"] == "live notebook model"
    assert plan["source"] == "the notebook as open in the editor"
    assert plan["notebook"] == str(notebook.resolve())
    assert plan["strategy"] == "multi_worker_mirrored" and plan["spec"]["worker_count"] == 1
    assert any("unsaved edits" in w for w in plan["warnings"])
    assert "edited, not saved" in data["script"] and "saved cell" not in data["script"]
    live = "(the notebook as open in the editor)"
    assert f"Plan for 'train.ipynb' {live}" in data["text"]
    assert not jobs.store_for().list(limit=None), "a dry run launched nothing"


async def test_dry_run_of_the_saved_file_uses_its_tfc_run_flags(
    jp_fetch: Fetch, notebook: Path
) -> None:
    status, data = await _call(
        jp_fetch, "POST", "jobs", body={"path": "train.ipynb", "options": {"dry_run": True}}
    )
    assert status == 200, data
    plan = data["plan"]
    assert plan["found_by"] == "saved notebook file"
    assert plan["cells"] == [1, 2] and plan["spec"]["worker_count"] == 2  # --workers 2 on the cell
    assert "saved cell" in data["script"] and "run cell" in data["script"]
    # Options override the cell's flags, as on the command line.
    status, data = await _call(
        jp_fetch,
        "POST",
        "jobs",
        body={
            "path": "train.ipynb",
            "options": {"workers": "0", "label": ["team=ml"], "dry_run": True},
        },
    )
    assert status == 200, data
    assert data["plan"]["spec"]["worker_count"] == 0
    assert data["plan"]["spec"]["labels"] == {"team": "ml"}


async def test_a_form_gets_the_cells_options_and_replaces_them(
    jp_fetch: Fetch, notebook: Path
) -> None:
    """The launch form starts from the cell's own options (the plan says them, and the line),
    and sends them all back with ``replace``: a 0, an empty list or "" (the default) replaces
    the cell's value instead of leaving it."""
    _, data = await _call(
        jp_fetch, "POST", "jobs", body={"path": "train.ipynb", "options": {"dry_run": True}}
    )
    assert data["plan"]["options"] == {"workers": 2}
    assert data["plan"]["line"] == "%%tfc_run --workers 2"
    form = {"workers": 0, "label": [], "machine": "", "strategy": "", "dry_run": True}
    status, data = await _call(
        jp_fetch, "POST", "jobs", body={"path": "train.ipynb", "options": form, "replace": True}
    )
    assert status == 200, data
    assert data["plan"]["spec"]["worker_count"] == 0 and data["plan"]["options"] == {}
    status, data = await _call(
        jp_fetch, "POST", "jobs", body={"path": "train.ipynb", "options": {}, "replace": "yes"}
    )
    assert status == 400 and data["field"] == "replace"


@pytest.mark.parametrize(
    ("options", "field", "fixed_by"),
    [
        ({"backend": "local", "gpus": 1, "gpu_type": "T4"}, "gpus", ("drop", "gpus")),
        ({"backend": "local", "tpu": "v5e-8"}, "backend", ("drop", "tpu")),
        (
            {"backend": "vertex", "project": "my-project-1", "label": ["lr=0.01", "Team=ML"]},
            "labels",
            ("set", "label"),
        ),
    ],
)
async def test_each_form_error_offers_the_fix_that_clears_it(
    jp_fetch: Fetch,
    notebook: Path,
    monkeypatch: pytest.MonkeyPatch,
    options: dict[str, Any],
    field: str,
    fixed_by: tuple[str, str],
) -> None:
    """GPUs or a TPU on this machine, and a label Google Cloud refuses: each refusal carries
    its fixes as data, worded without flags for the form, and the values with the fix applied
    (a drop: the field's default, as the form sets it) are refused no more (issue 51)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # this machine has no GPU, whatever it has
    _, defaults = await _call(jp_fetch, "GET", "defaults")
    fields = {f["name"]: f for f in defaults["fields"]}
    form = {"workers": 0, "label": [], "machine": "", "strategy": "", "dry_run": True}

    async def refusal(values: dict[str, Any]) -> dict[str, Any] | None:
        body = {"path": "train.ipynb", "options": {**form, **values}, "replace": True}
        status, data = await _call(jp_fetch, "POST", "jobs", body=body)
        return data if status == 400 else data["plan"]["refused"]

    refused = await refusal(options)
    assert refused is not None and refused["field"] == field, refused
    assert "--" not in refused["ui_message"] + refused["ui_hint"], refused
    fix = next(f for f in refused["fixes"] if (f["action"], f["option"]) == fixed_by)
    assert "--" not in fix["ui_text"] and fix["text"].startswith(("drop --", "use --"))
    if fix["action"] == "drop":  # the field's default, sent as the form sends its kind
        shown = fields[fix["option"]]
        value: Any = int(shown["default"] or 0) if shown["kind"] == "count" else shown["default"]
    else:
        value = fix["value"].split()
    after = await refusal({**options, fix["option"]: value})
    assert after is None or after["field"] != field, after


# ---------------------------------------------------------------- error mapping
@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"path": "train.ipynb", "options": {"workers": -1}}, "workers", "expected 0 or more"),
        ({"path": "train.ipynb", "options": {"workers": True}}, "workers", "string or a number"),
        ({"path": "train.ipynb", "options": {"wokers": 1}}, "wokers", "unknown option"),
        ({"path": "train.ipynb", "options": {"spot": "yes"}}, "spot", "true or false"),
        ({"path": "train.ipynb", "options": {"machine": "Z9_1X"}}, "machine", "unknown machine"),
        ({"path": "train.ipynb", "options": {"tpu": "v3-8", "gpus": 1}}, "gpus", "TPU host"),
        ({"path": "train.ipynb", "options": []}, "options", "JSON object"),
        ({"options": {}}, "path", "'path' is required"),
        ({"path": "../outside.ipynb"}, "path", "outside the server's root"),
        ({"path": "missing.ipynb"}, "path", "not found"),
        ({"path": "train.ipynb", "cell": 1}, "cell", "not a %%tfc_run cell"),
        ({"path": "train.ipynb", "cell": "2"}, "cell", "whole number"),
        ({"path": "train.ipynb", "notebook": {"cells": "nope"}}, "notebook", "not valid"),
    ],
)
async def test_bad_requests_are_400_naming_the_field(
    jp_fetch: Fetch, notebook: Path, body: dict[str, Any], field: str, words: str
) -> None:
    status, data = await _call(jp_fetch, "POST", "jobs", body=body)
    assert status == 400, data
    assert data["field"] == field, data
    assert words in data["message"], data
    assert set(data) == {"error", "message", "hint", "field", "ui_message", "ui_hint", "fixes"}
    if field == "gpus":  # a fix the server knows as data comes as data too
        assert [(f["action"], f["option"]) for f in data["fixes"]] == [
            ("drop", "gpus"),
            ("drop", "tpu"),
        ]


async def test_fifos_and_devices_are_refused_at_once(
    jp_fetch: Fetch, notebook: Path, jp_root_dir: Path
) -> None:
    """A FIFO (or a link to /dev/zero) named in a request is refused in one 400, never read:
    such requests once grew the server to 23.6 GB and blocked every jobs endpoint."""
    import asyncio
    import os
    import time

    os.mkfifo(jp_root_dir / "pipe.txt")
    (jp_root_dir / "zero.txt").symlink_to("/dev/zero")
    start = time.monotonic()
    bodies = [
        {"path": "train.ipynb", "options": {"dry_run": True, "requirements": ["pipe.txt"]}},
        {"path": "train.ipynb", "options": {"dry_run": True, "requirements": ["zero.txt"]}},
        {"path": "train.ipynb", "options": {"dry_run": True, "include": ["pipe.txt"]}},
    ] * 2  # six at once, as in the report
    results = await asyncio.gather(*(_call(jp_fetch, "POST", "jobs", body=b) for b in bodies))
    for status, data in results:
        assert status == 400, data
        words = ("FIFO", "device", "outside the server's root")  # a link to /dev/zero: outside
        assert any(w in data["message"] for w in words), data
    assert time.monotonic() - start < 30
    status, _ = await _call(jp_fetch, "GET", "jobs")  # the jobs endpoints still answer
    assert status == 200


async def test_a_body_that_is_not_json_is_400(jp_fetch: Fetch) -> None:
    for body in ("{not json", "[1, 2]"):
        status, data = await _call(jp_fetch, "POST", "jobs", body=body)
        assert (status, data["field"], data["error"]) == (400, "body", "SpecError")


_JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


def _exact_values(value: Any) -> int:
    """Containers, and each member after a container's first: what the count promises."""
    if isinstance(value, dict):
        members = list(value.values())
    elif isinstance(value, list):
        members = value
    else:
        return 0
    return 1 + max(len(members) - 1, 0) + sum(_exact_values(m) for m in members)


@settings(max_examples=300, deadline=None)
@given(value=_JSON, ascii=st.booleans(), indent=st.sampled_from([None, 1]))
def test_a_bodys_values_are_counted_outside_its_strings(
    value: Any, ascii: bool, indent: Any
) -> None:
    """Strings holding quotes, backslashes, braces, commas and any Unicode (UTF-8 or escaped)
    do not change the count the byte-level scan makes before a body is read."""
    from tfc_jupyter.server.service import json_values

    raw = json.dumps(value, ensure_ascii=ascii, indent=indent).encode()
    assert json_values(raw) == _exact_values(value)


async def test_a_body_of_too_many_values_is_413_and_the_server_goes_on(jp_fetch: Fetch) -> None:
    """15 million empty objects fit in 42 MB (under the byte limit) and once took the server to
    4 GB for 95 s: counted before they are read, they are one 413 naming the limit; a body
    nested too deeply is one 400."""
    import asyncio

    from tfc_jupyter.server.service import MAX_BODY_DEPTH, MAX_BODY_VALUES

    many = b'{"path": "a.ipynb", "x": [' + b",".join([b"{}"] * 15_000_000) + b"]}"
    deep = '{"path": "a.ipynb", "x": ' + "[" * 500 + "]" * 500 + "}"
    (status, data), (listed, _) = await asyncio.gather(
        _call(jp_fetch, "POST", "jobs", body=many), _call(jp_fetch, "GET", "jobs")
    )
    assert status == 413 and f"the limit is {MAX_BODY_VALUES}" in data["message"], data
    assert listed == 200
    status, data = await _call(jp_fetch, "POST", "jobs", body=deep)
    assert (status, data["field"]) == (400, "body"), data
    assert f"deeper than {MAX_BODY_DEPTH} levels" in data["message"], data


async def test_query_arguments_are_checked(jp_fetch: Fetch) -> None:
    for params, field in (
        ({"limit": "0"}, "limit"),
        ({"limit": "x"}, "limit"),
        ({"state": "done"}, "state"),
    ):
        status, data = await _call(jp_fetch, "GET", "jobs", params=params)
        assert (status, data["field"]) == (400, field), data


async def test_unknown_job_is_404(jp_fetch: Fetch) -> None:
    for method, parts in (
        ("GET", ("jobs", "nope-123")),
        ("GET", ("jobs", "nope-123", "logs")),
        ("POST", ("jobs", "nope-123", "cancel")),
        ("GET", ("sweeps", "nope-123")),
    ):
        status, data = await _call(jp_fetch, method, *parts)
        assert (status, data["error"]) == (404, "JobNotFound"), data
        assert "nope-123" in data["message"]


async def test_a_backend_refusal_is_502(jp_fetch: Fetch, jp_root_dir: Path, cleanup: None) -> None:
    write_notebook(
        jp_root_dir / "deps.ipynb", "%pip install tfc-no-such-package-xyz==1.0\nprint(1)"
    )
    status, data = await _call(jp_fetch, "POST", "jobs", body={"path": "deps.ipynb", "options": {}})
    assert status == 502, data
    assert data["error"] == "BackendError" and data["field"] == "requirements"
    assert "tfc-no-such-package-xyz" in data["message"] and data["hint"]


async def test_an_unexpected_failure_is_a_500_without_traceback(
    jp_fetch: Fetch, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(self: JobService, **kwargs: Any) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(JobService, "list_jobs", boom)
    status, data = await _call(jp_fetch, "GET", "jobs")
    assert status == 500
    assert data["error"] == "InternalError" and "server's log" in data["hint"]
    assert "secret internals" not in json.dumps(data) and "Traceback" not in json.dumps(data)


# ---------------------------------------------------------------- authentication and XSRF
ENDPOINTS = [
    ("GET", ("jobs",)),
    ("POST", ("jobs",)),
    ("GET", ("jobs", "some-job")),
    ("GET", ("jobs", "some-job", "logs")),
    ("GET", ("jobs", "some-job", "code")),
    ("POST", ("jobs", "some-job", "cancel")),
    ("POST", ("jobs", "some-job", "tensorboard")),
    ("DELETE", ("jobs", "some-job")),
    ("DELETE", ("jobs",)),
    ("GET", ("machines",)),
    ("GET", ("defaults",)),
    ("GET", ("openapi.yaml",)),
    ("GET", ("no-such-thing",)),
]


@pytest.mark.parametrize(("method", "parts"), ENDPOINTS)
async def test_every_endpoint_refuses_requests_without_a_token(
    jp_fetch: Fetch, method: str, parts: tuple[str, ...]
) -> None:
    for auth in ("", "token wrong-token"):
        status, data = await _call(jp_fetch, method, *parts, headers={"Authorization": auth})
        assert status in (401, 403), (method, parts, status, data)
        assert "Traceback" not in json.dumps(data)


def _cookies(response: HTTPResponse, into: dict[str, str]) -> dict[str, str]:
    for header in response.headers.get_list("Set-Cookie"):
        name, _, rest = header.partition("=")
        into[name] = rest.split(";")[0]
    return into


async def _browser_session(jp_fetch: Fetch, token: str) -> dict[str, str]:
    """Log in as a browser does: the login page (an _xsrf cookie), then its form with the token."""
    page = await jp_fetch("login", headers={"Authorization": ""}, follow_redirects=False)
    cookies = _cookies(page, {})
    form = urllib.parse.urlencode({"password": token, "_xsrf": cookies["_xsrf"]})
    try:
        await jp_fetch(
            "login",
            method="POST",
            body=form,
            headers={"Authorization": "", "Cookie": f"_xsrf={cookies['_xsrf']}"},
            follow_redirects=False,
        )
        raise AssertionError("the login form should redirect")
    except HTTPClientError as exc:  # 302 to the application: logged in
        assert exc.code == 302 and exc.response is not None
        _cookies(exc.response, cookies)
    assert any(n.startswith("username-") for n in cookies), cookies
    return cookies


async def test_a_cookie_session_needs_the_xsrf_token_to_post(
    jp_fetch: Fetch, jp_serverapp: Any, jp_http_port: int, notebook: Path
) -> None:
    cookies = await _browser_session(jp_fetch, jp_serverapp.identity_provider.token)
    cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
    browser = {"Authorization": "", "Cookie": cookie}
    body = {"path": "train.ipynb", "options": {"dry_run": True}}
    # The cookie alone reads (a GET) ...
    status, data = await _call(jp_fetch, "GET", "jobs", headers=browser)
    assert status == 200, data
    # ... but cannot POST: a cross-site form could send the cookie too.
    status, data = await _call(jp_fetch, "POST", "jobs", body=body, headers=browser)
    assert status == 403, data
    assert "xsrf" in json.dumps(data).lower()
    # Echoing the _xsrf cookie (what JupyterLab's requests do) is accepted.
    xsrf = urllib.parse.unquote(cookies["_xsrf"])
    status, data = await _call(
        jp_fetch, "POST", "jobs", body=body, headers={**browser, "X-XSRFToken": xsrf}
    )
    assert status == 200, data
    # From another origin, even with the XSRF header, it is refused.
    status, data = await _call(
        jp_fetch,
        "POST",
        "jobs",
        body=body,
        headers={**browser, "X-XSRFToken": xsrf, "Origin": "http://evil.example"},
    )
    assert status in (403, 404), data
    assert not jobs.store_for().list(limit=None)


def test_check_auth_script_passes_and_catches_a_missing_decorator() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_auth.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "authenticated" in proc.stdout
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import check_auth
    finally:
        sys.path.remove(str(ROOT / "scripts"))

    class Careless(handlers.TfcHandler):
        async def get(self) -> None:  # no @web.authenticated
            self.finish("{}")

    problems = check_auth.problems([("careless", Careless), ("jobs", handlers.JobsHandler)])
    assert problems == ["Careless.get (careless) is not @tornado.web.authenticated"]


# ---------------------------------------------------------------- real jobs
async def test_a_job_launched_through_the_api_runs_and_is_in_the_shared_records(
    jp_fetch: Fetch, notebook: Path, tfc_home: Path, cleanup: None
) -> None:
    lines = "\n".join(f"print('line {i:03d} ' + 'x' * 40)" for i in range(30))
    chatter = "WARNING: All log messages before absl::InitializeLog() is called are written"
    model = _model(f"print('hello from the live model')\nprint({chatter!r})", lines)
    status, data = await _call(
        jp_fetch,
        "POST",
        "jobs",
        body={
            "path": "train.ipynb",
            "notebook": model,
            "options": {"strategy": "none", "name": "api-job"},
        },
    )
    assert status == 201, data
    job = data["job"]
    assert job["backend"] == "local" and job["name"] == "api-job"
    assert job["notebook"] == str(notebook.resolve())
    # A kernel's view: the same record in the shared store.
    record = jobs.store_for(tfc_home).get(job["id"])
    assert record.spec["name"] == "api-job"

    final = await _wait_terminal(jp_fetch, job["id"])
    assert final["state"] == "succeeded", final
    assert final["replicas"] == ["chief"] and final["cost_estimate"] == 0.0 and not final["billed"]
    assert final["cost_per_hour"] > 0 and final["elapsed"] > 0
    text, calls = await _all_logs(jp_fetch, job["id"], "chief", limit=64)
    assert "hello from the live model" in text
    assert [f"line {i:03d}" in text for i in range(30)] == [True] * 30
    assert calls > 10, "a 64-byte limit makes the reader follow in many steps"
    assert (
        text == jobs.Job(job["id"], jobs.store_for(tfc_home)).logs().replace("[chief] ", "") + "\n"
    )
    assert chatter in text and "[tfc_runtime] task" in text
    # The sidebar asks for the logs without TensorFlow's chatter and the runtime's status lines.
    quiet, _ = await _all_logs(jp_fetch, job["id"], "chief", limit=65536, quiet=True)
    assert chatter not in quiet and "[tfc_runtime] task" not in quiet
    assert "hello from the live model" in quiet and "line 029" in quiet
    # The job shows in the list; a finished job cannot be cancelled.
    status, listed = await _call(jp_fetch, "GET", "jobs", params={"state": "succeeded"})
    assert [j["id"] for j in listed["jobs"]] == [job["id"]]
    status, data = await _call(jp_fetch, "POST", "jobs", job["id"], "cancel")
    assert (status, data["error"]) == (409, "JobConflict")
    # Reading past the end, or a bad replica name, is a 400.
    status, data = await _call(jp_fetch, "GET", "jobs", job["id"], "logs", params={"offset": 10**9})
    assert (status, data["field"]) == (400, "offset")
    for bad in ("../../etc", "../../../etc/passwd", "chief\x00", " chief", "chief\n"):
        status, data = await _call(
            jp_fetch, "GET", "jobs", job["id"], "logs", params={"replica": bad}
        )
        assert (status, data["field"]) == (400, "replica"), bad


async def test_a_running_jobs_log_followed_as_the_tab_does_has_no_empty_lines(
    jp_fetch: Fetch, notebook: Path, tfc_home: Path, cleanup: None
) -> None:
    """The sidebar's tab polls a running job's log every second (again at once while ``more``).
    An empty read is no line, ``more`` is never true for a line still being drawn, and that
    line (a progress bar) comes as ``partial``, at its latest state, until its newline."""
    bar = (
        "import sys, time\n"
        "print('first', flush=True)\n"
        "time.sleep(1.5)\n"
        "for i in range(1, 6):\n"
        "    sys.stdout.write(f'\\rstep {i}/5 ' + '=' * i); sys.stdout.flush(); time.sleep(0.6)\n"
        "print(flush=True)\n"
        "print('last', flush=True)\n"
        "time.sleep(1.5)"
    )
    status, data = await _call(
        jp_fetch,
        "POST",
        "jobs",
        body={"path": "train.ipynb", "notebook": _model(bar), "options": {"strategy": "none"}},
    )
    assert status == 201, data
    job_id = data["job"]["id"]
    text, offset, partials, polls = "", 0, [], 0
    deadline = time.monotonic() + JOB_DEADLINE_S
    while time.monotonic() < deadline:
        polls += 1
        again = 0
        while True:  # one poll: LogView's loop
            status, chunk = await _call(
                jp_fetch,
                "GET",
                "jobs",
                job_id,
                "logs",
                params={"replica": "chief", "offset": offset, "quiet": "1"},
            )
            assert status == 200, chunk
            text += chunk["text"]
            offset = chunk["next_offset"]
            if not chunk["more"]:
                break
            again += 1
            assert again < 20, "more stayed true: the tab would read without end"
        assert "\n\n" not in text and not text.startswith("\n"), repr(text)
        if chunk["partial"]:
            partials.append(chunk["partial"])
        if chunk["terminal"]:
            break
        await _sleep(0.2)
    assert text == "first\nstep 5/5 =====\nlast\n", repr(text)
    assert partials and all(re.fullmatch(r"step \d/5 =+", p) for p in partials), partials
    assert len(set(partials)) >= 2  # the bar seen moving, each state in place of the last
    assert polls > 5


async def test_ended_jobs_are_deleted_and_cleared_running_ones_stay(
    jp_fetch: Fetch, jp_root_dir: Path, tfc_home: Path, cleanup: None
) -> None:
    """``DELETE jobs/{id}`` removes an ended job (``files=1``: its folder too), ``DELETE jobs``
    clears every ended one; a running job is refused with the fix and stays."""
    store = jobs.store_for(tfc_home)
    done = [
        jobs.launch(
            plan_for(write_notebook(jp_root_dir / f"d{i}.ipynb", "print(1)"), "--strategy none"),
            store=store,
        )
        for i in range(3)
    ]
    for job in done:
        assert job.wait(timeout=JOB_DEADLINE_S).state is JobState.SUCCEEDED
    sleepy = write_notebook(jp_root_dir / "sleepy.ipynb", "import time\ntime.sleep(120)")
    running = jobs.launch(plan_for(sleepy, "--strategy none"), store=store)
    folder = Path(done[0].record().job_dir)
    assert folder.is_dir()

    status, data = await _call(jp_fetch, "DELETE", "jobs", done[0].id, params={"files": "1"})
    assert status == 200 and data["id"] == done[0].id, data
    assert not folder.exists()
    status, data = await _call(jp_fetch, "GET", "jobs", done[0].id)
    assert status == 404, data
    kept = Path(done[1].record().job_dir)
    status, data = await _call(jp_fetch, "DELETE", "jobs", done[1].id)
    assert status == 200 and kept.is_dir()  # the list only, unless asked

    status, data = await _call(jp_fetch, "DELETE", "jobs", running.id)
    assert status == 409 and "cancel it first" in data["hint"], data
    status, data = await _call(jp_fetch, "DELETE", "jobs")
    assert status == 200 and data["deleted"] == [done[2].id], data
    status, listed = await _call(jp_fetch, "GET", "jobs")
    assert [j["id"] for j in listed["jobs"]] == [running.id]


async def test_a_kernel_launch_shows_in_the_api_and_can_be_cancelled_there(
    jp_fetch: Fetch, jp_root_dir: Path, tfc_home: Path, cleanup: None
) -> None:
    path = write_notebook(
        jp_root_dir / "sleepy.ipynb",
        "import time\nprint('started', flush=True)\ntime.sleep(120)",
    )
    # What %%tfc_run does in a kernel: plan, then launch into the records under TFC_JUPYTER_HOME.
    job = jobs.launch(plan_for(path, "--strategy none"), store=jobs.store_for(tfc_home))
    status, listed = await _call(jp_fetch, "GET", "jobs")
    assert status == 200 and job.id in [j["id"] for j in listed["jobs"]]
    status, one = await _call(jp_fetch, "GET", "jobs", job.id[:-2])  # a unique prefix
    assert (status, one["id"]) == (200, job.id)
    deadline = time.monotonic() + 60
    while "started" not in job.logs() and time.monotonic() < deadline:
        await _sleep(0.2)
    assert "started" in job.logs(), job.record()
    status, data = await _call(jp_fetch, "POST", "jobs", job.id, "cancel", request_timeout=60)
    assert status == 200, data
    assert data["state"] == "cancelled" and data["terminal"]
    assert job.record().state is JobState.CANCELLED


def test_load_ext_imports_no_server_code() -> None:
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'tfc_jupyter')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tornado', 'jupyter_server')"
        " or m.startswith('tfc_jupyter.server')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


async def test_a_keras_jobs_metrics_and_plot_come_from_the_api(
    jp_fetch: Fetch, notebook: Path, tfc_home: Path, cleanup: None
) -> None:
    """A real Keras fit launched through the API: its epochs, last metrics and plot (an SVG to
    show as an image), the same numbers the job's own handle and the CLI's JSON give."""
    fit = (
        "import numpy as np, tensorflow as tf\n"
        "x = np.linspace(0, 1, 64, dtype='float32').reshape(16, 4)\n"
        "model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])\n"
        "model.compile('sgd', 'mse')\n"
        "model.fit(x, x.sum(1), epochs=3, verbose=0)\n"
        "model.save('api.keras')"
    )
    body = {"path": "train.ipynb", "notebook": _model(fit), "options": {"name": "fit-job"}}
    status, data = await _call(jp_fetch, "POST", "jobs", body=body)
    assert status == 201, data
    job_id = data["job"]["id"]
    final = await _wait_terminal(jp_fetch, job_id)
    assert final["state"] == "succeeded", final
    status, metrics = await _call(jp_fetch, "GET", "jobs", job_id, "metrics")
    assert status == 200, metrics
    assert [e["epoch"] for e in metrics["epochs"]] == [1, 2, 3] and metrics["names"] == ["loss"]
    assert metrics["last"] == metrics["epochs"][-1]["metrics"] == final["last_metrics"]
    assert metrics["model_dir"] == str(notebook.parent.resolve() / "api.keras")
    assert metrics["terminal"] and metrics["svg"].startswith("<svg")
    handle = jobs.Job(job_id, jobs.store_for(tfc_home))
    assert [m["loss"] for m in handle.metrics] == [e["metrics"]["loss"] for e in metrics["epochs"]]
    listed = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", "jobs", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TFC_JUPYTER_HOME": str(tfc_home)},
    )
    assert listed.returncode == 0, listed.stderr
    (row,) = [j for j in json.loads(listed.stdout) if j["id"] == job_id]
    assert row["last_metrics"] == metrics["last"]
    status, data = await _call(jp_fetch, "GET", "jobs", "no-such-job", "metrics")
    assert status == 404, data


async def test_a_job_s_names_are_said_gone_once_the_kernel_that_set_them_restarted(
    jp_fetch: Fetch, jp_serverapp: Any, tfc_home: Path
) -> None:
    """Issue 49: a page opened after the job ended shows what came back into the kernel; once
    that kernel restarted (a new process, the same id) or shut down, the job says its names
    are gone from it (``returned_gone``), so the page offers ``%tfc_attach`` instead."""
    response = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
    kernel_id = json.loads(response.body)["id"]
    manager = jp_serverapp.kernel_manager
    pid = manager.get_kernel(kernel_id).provisioner.pid
    store = jobs.store_for(tfc_home)
    record = JobRecord(
        id="back-20261129-120000-abcdef", name="back", backend="local", state=JobState.SUCCEEDED,
        returned="Back in the kernel: model.", returned_kernel=f"{kernel_id}/{pid}",
    )  # fmt: skip
    store.create(record)
    try:
        status, job = await _call(jp_fetch, "GET", "jobs", record.id)
        assert status == 200 and job["returned_gone"] is False, job
        assert job["returned"] == "Back in the kernel: model."
        await jp_fetch("api", "kernels", kernel_id, "restart", method="POST", body=b"")
        assert manager.get_kernel(kernel_id).provisioner.pid != pid
        status, job = await _call(jp_fetch, "GET", "jobs", record.id)
        assert job["returned_gone"] is True, job
        status, listed = await _call(jp_fetch, "GET", "jobs")
        assert [j["returned_gone"] for j in listed["jobs"] if j["id"] == record.id] == [True]
    finally:
        await jp_fetch("api", "kernels", kernel_id, method="DELETE")
    store.update(record.id, returned_kernel=f"{kernel_id}/{pid}")
    status, job = await _call(jp_fetch, "GET", "jobs", record.id)
    assert job["returned_gone"] is True, job  # shut down: gone too
