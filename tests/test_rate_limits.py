"""Google's rate limits and quotas, as Google answers them, against the product.

The test server keeps real per-project quotas (``VertexServer(log_reads=..., crud=...,
minute=...)``: a minute shortened so that a test takes seconds) and answers with the services'
own bodies (:mod:`google_errors`). Nothing of tfc_jupyter is patched.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1.types import CustomJob  # noqa: F401  (the server's: loaded once)
from google_errors import (
    Refused,
    accelerator_quota_failure,
    caller_denied,
    exhausted_bare,
    gpu_quota,
    internal,
    logging_read_daily,
    logging_read_rate,
    metric_quota_bare,
    permission_denied,
    permission_denied_bare,
    rate_bare,
    storage_denied,
    unavailable,
    vertex_crud_rate,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from jobutil import JOB_DEADLINE_S, plan_for, wait_for, write_notebook
from test_vertex_backend import image_folder
from vertex_server import Fault, VertexServer, project_number

from tfc_jupyter.backends.vertex.backend import stop_watcher
from tfc_jupyter.backends.vertex.google.gcloud import (
    DailyQuotaError,
    QuotaError,
    TransientError,
    explain,
)
from tfc_jupyter.errors import BackendError
from tfc_jupyter.jobs import Job, launch, store_for
from tfc_jupyter.store.records import JobRecord, JobState

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "registry.test/tfc/rate:1"
PROJECT = "test-project"
NUMBER = project_number(PROJECT)
CREATE = r"POST /v1/projects/[^/]+/locations/[^/]+/customJobs$"
GET_JOB = r"GET /v1/projects/[^/]+/locations/[^/]+/customJobs/\d+$"
ENTRIES = r"POST /v2/entries:list$"
MINUTE = 6.0  # the test server's minute, in seconds (Google's quotas are per minute)
SCALE = 60.0 / MINUTE


# ------------------------------------------------------------------------------- helpers
def answer(refused: Refused, url: str = "https://logging.googleapis.com/v2/entries:list") -> Any:
    """The Google API error the client libraries raise for this answer over the wire."""
    from vertex_server import ApiError

    reply = requests.Response()
    reply.status_code = {"RESOURCE_EXHAUSTED": 429, "PERMISSION_DENIED": 403}.get(
        refused.status, 500 if refused.status == "INTERNAL" else 503
    )
    reply._content = json.dumps(ApiError.of(refused).body()).encode()
    reply.headers.update(refused.headers)
    reply.request = requests.Request("POST", url).prepare()
    return gexc.from_http_response(reply)


def said(exc: Any) -> tuple[bool, Exception]:
    return explain(exc, project=PROJECT, region="us-central1", what="reading the job's logs")


@pytest.fixture
def home(tfc_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A job store; watchers ended afterwards (by the pids in their records)."""
    home = Path(os.environ["TFC_JUPYTER_HOME"])
    yield home
    for record in store_for(home).list(limit=None):
        stop_watcher(record)


def point_at(server: VertexServer, monkeypatch: pytest.MonkeyPatch, **extra: str) -> None:
    """The backend pointed at ``server``, with the test's patience (times scaled as the
    server's minute is)."""
    for name, value in {
        "TFC_VERTEX_ENDPOINT": server.url,
        "TFC_VERTEX_POLL": "0.2",
        "TFC_VERTEX_BACKOFF": "0.05",
        "TFC_VERTEX_TIMEOUT": "30",
        "TFC_VERTEX_RETRY_TOTAL": "10",
        "TFC_VERTEX_DRAIN": "1.5",
        "TFC_VERTEX_LOG_READS": str(20 * SCALE),  # the product's 20 a minute, in the test's minute
        **extra,
    }.items():
        monkeypatch.setenv(name, value)


def vertex_job(server: VertexServer, home: Path, folder: Path, body: str) -> Job:
    """Plan a one-cell notebook with a folder image registered with the server; launch it."""
    folder.mkdir(parents=True)
    nb = write_notebook(folder / "job.ipynb", f"%%tfc_run\n{body}")
    plan = plan_for(nb, f"--backend vertex --project {PROJECT} --image {IMAGE}")
    image_folder(server, plan, folder / "image")
    return launch(plan, store=store_for(home))


def log(record: JobRecord, replica: str) -> str:
    path = Path(record.log_dir) / f"{replica}.log"
    return path.read_text() if path.exists() else ""


# ------------------------------------------------------------------------------- bodies
def test_the_server_answers_as_google_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cloud Logging's read quota kept for real, answered with Google's own body; read by the
    real logging client as Google's answer is."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.logging_v2 import Client

    with VertexServer(executor="process", log_reads=5, minute=2.0) as server:
        client = Client(
            project=PROJECT,
            credentials=AnonymousCredentials(),
            _use_grpc=False,
            client_options={"api_endpoint": server.url},
        )
        for _ in range(5):
            list(client.list_entries(resource_names=[f"projects/{PROJECT}"]))
        with pytest.raises(gexc.TooManyRequests) as info:
            list(client.list_entries(resource_names=[f"projects/{PROJECT}"]))
        error = info.value
        assert error.reason == "RATE_LIMIT_EXCEEDED" and error.domain == "googleapis.com"
        assert error.metadata["quota_limit"] == "ReadRequestsPerMinutePerProject"
        assert error.metadata["quota_metric"] == "logging.googleapis.com/read_requests"
        assert error.metadata["quota_unit"] == "1/min/{project}"
        assert error.message.split(": ", 1)[1].startswith(
            "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute'"
            " of service 'logging.googleapis.com' for consumer 'project_number:"
        )
        assert [d["@type"].rsplit(".", 1)[1] for d in error.details] == ["ErrorInfo", "Help"]
        time.sleep(2.05)  # the (shortened) minute passed: answered again
        list(client.list_entries(resource_names=[f"projects/{PROJECT}"]))
        assert server.log_budget is not None and server.log_budget.refused == 1


# Google's refusals and what each must mean: (transient, error class, words in the message).
CASES = [
    (logging_read_rate(NUMBER), True, TransientError, "Cloud Logging is rate-limiting"),
    (vertex_crud_rate(NUMBER), True, TransientError, "Vertex AI is rate-limiting"),
    (logging_read_daily(NUMBER), False, DailyQuotaError, "daily quota is used up"),
    (permission_denied("logging.logEntries.list", f"projects/{PROJECT}"), False, BackendError, ""),
    (unavailable(2), True, TransientError, "unavailable (503)"),
    (gpu_quota(), False, QuotaError, "Vertex AI quota exceeded"),
    (accelerator_quota_failure(PROJECT), False, QuotaError, "quota exceeded"),
    (
        rate_bare(NUMBER, "Read requests", "Read requests per minute", "logging.googleapis.com"),
        True,
        TransientError,
        "Cloud Logging is rate-limiting",
    ),
    (
        rate_bare(NUMBER, "Read requests", "Read requests per day", "logging.googleapis.com"),
        False,
        DailyQuotaError,
        "Cloud Logging's daily quota is used up",
    ),
    (exhausted_bare(), True, TransientError, "rate-limiting"),
    (
        metric_quota_bare("embed_content_input_tokens_per_minute_per_base_model"),
        True,
        TransientError,
        "Vertex AI is rate-limiting",
    ),
    (caller_denied(), False, BackendError, "permission denied"),
    (internal(), True, TransientError, "unavailable (500)"),
]


@pytest.mark.parametrize(("refused", "transient", "kind", "words"), CASES)
def test_each_refusal_is_told_by_its_structure(
    refused: Refused, transient: bool, kind: type, words: str
) -> None:
    retry, error = said(answer(refused))
    assert retry is transient and type(error) is kind, (retry, error)
    assert words in str(error) and "\n" not in str(error) and "Fix: " in str(error)


def test_a_daily_quota_names_its_reset_and_the_quota_page() -> None:
    _, error = said(answer(logging_read_daily(NUMBER)))
    text = str(error)
    assert "Cloud Logging's daily quota is used up in project test-project" in text
    assert "ReadRequestsPerDayPerProject" in text and "midnight Pacific time" in text
    assert f"quotas?project={PROJECT}&metric=logging.googleapis.com/read_requests" in text
    assert not isinstance(error, QuotaError)  # not "ask for fewer or smaller machines"


def test_retry_after_is_read_from_the_header_and_from_retry_info() -> None:
    _, error = said(answer(unavailable(7)))
    assert getattr(error, "retry_after", None) == 7.0
    with_info = Refused(
        "RESOURCE_EXHAUSTED",
        "Resource has been exhausted (e.g. check quota).",
        [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "23s"}],
    )
    retry, error = said(answer(with_info))
    assert retry and getattr(error, "retry_after", None) == 23.0


WORDS = st.sampled_from(
    ["Quota exceeded", "quota", "per day", "daily", "per minute", "limit", "Too many requests", ""]
)
UNITS = st.sampled_from(
    ["1/min/{project}", "1/d/{project}", "1/s/{project}", "1/min/{project}/{region}", ""]
)
LIMITS = st.sampled_from(
    ["ReadRequestsPerMinutePerProject", "defaultPerDayPerProject", "WritePerSecond", "", "x"]
)
REASONS = st.sampled_from(["RATE_LIMIT_EXCEEDED", "RESOURCE_QUOTA_EXCEEDED", "OTHER", None])


@settings(max_examples=150, deadline=None)
@given(st.lists(WORDS, max_size=4), UNITS, LIMITS, REASONS, st.integers(1, 10**6))
def test_a_refusal_is_never_told_by_a_word_in_its_text(
    words: list[str], unit: str, limit: str, reason: str | None, value: int
) -> None:
    """The same structure with any words says the same thing; a daily quota is told by its
    unit (or, without one, its limit's name), a per-minute limit is retried."""
    details: list[dict[str, Any]] = []
    if reason is not None:
        meta = {"quota_limit": limit, "quota_limit_value": str(value)}
        meta |= {"quota_unit": unit} if unit else {}
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "googleapis.com",
                "metadata": meta,
            }
        )
    outcomes = set()
    for text in (" ".join(words), "nothing to see", "Quota exceeded per day, daily quota"):
        retry, error = said(answer(Refused("RESOURCE_EXHAUSTED", text, details)))
        outcomes.add((retry, type(error)))
    assert len(outcomes) == 1, outcomes
    ((retry, kind),) = outcomes
    daily = unit.startswith("1/d/") or (not unit and "PerDay" in limit)
    if reason == "RATE_LIMIT_EXCEEDED":
        assert (kind, retry) == ((DailyQuotaError, False) if daily else (TransientError, True))
    elif reason == "RESOURCE_QUOTA_EXCEEDED":
        assert (kind, retry) == (QuotaError, False)
    else:  # a 429 that says nothing more: a rate limit, retried
        assert (kind, retry) == (TransientError, True)


# ------------------------------------------------------------------------------- launches
def test_retry_after_is_waited_for(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with VertexServer(executor="process") as server:
        point_at(server, monkeypatch)
        server.inject(Fault.unavailable(CREATE, retry_after=1))
        started = time.monotonic()
        job = vertex_job(server, home, tmp_path / "a", "print('up')")
        assert time.monotonic() - started >= 1.0  # not the 0.05 s backoff
        assert [r.answer for r in server.received("POST", "customJobs$")] == [503, 200]
        assert job.record().handle["api_retries"] == 1


def test_a_daily_quota_at_launch_stops_with_its_own_message(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with VertexServer(executor="process") as server:
        point_at(server, monkeypatch)
        server.inject(Fault.daily_quota(CREATE))
        with pytest.raises(DailyQuotaError) as info:
            vertex_job(server, home, tmp_path / "a", "print('up')")
        assert "daily quota is used up" in str(info.value)
        assert "midnight Pacific time" in str(info.value) and "\n" not in str(info.value)
        assert len(server.received("POST", "customJobs$")) == 1  # never retried
        assert server.jobs == {}


# ------------------------------------------------------------------------------- watchers
def test_refused_state_reads_never_fail_a_running_job(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vertex AI's CRUD limit on getCustomJob: the job is "status unknown", never FAILED, and
    its watcher goes on until the reads are answered again."""
    go = tmp_path / "go"
    body = (
        "import os, time\nprint('up', flush=True)\n"
        f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.05)\nprint('done', flush=True)"
    )
    with VertexServer(executor="process", crud=600, minute=MINUTE) as server:
        point_at(server, monkeypatch, TFC_VERTEX_RETRY_TOTAL="1")
        job = vertex_job(server, home, tmp_path / "a", body)
        record = wait_for(
            "running job", lambda: log(job.record(), "chief").count("up") and job.record()
        )
        run = server.job(record.handle["vertex_job_id"])
        assert server.crud_budget is not None
        server.crud_budget.limit = 0  # every job call refused with Google's CRUD 429
        try:
            note = wait_for("note", lambda: job.record().handle.get("watch_note"), 30)
            assert note.startswith("status unknown (reads refused since ")
            assert "the job may still be running" in note and "Vertex AI is rate-limiting" in note
            assert run.state() == "JOB_STATE_RUNNING"
            time.sleep(1.0)  # refused for a while longer
            assert job.record().state is JobState.RUNNING, job.record().error
        finally:
            server.crud_budget.limit = 600
            go.touch()
        record = job.wait(timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, record.error
    assert "watch_note" not in record.handle
    assert "status unknown (reads refused since" in log(record, "vertex")
    assert "done" in log(record, "chief")
    refused = [r for r in server.received("GET", r"customJobs/\d+$") if r.answer == 429]
    assert len(refused) >= 2


def test_a_withdrawn_permission_leaves_the_job_unknown_not_failed(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """403 IAM_PERMISSION_DENIED on getCustomJob while the job runs: status unknown, the fix
    named, then the job followed to its end once the reads are answered again."""
    go = tmp_path / "go"
    body = f"import os, time\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.05)\n"
    resource = f"projects/{PROJECT}/locations/us-central1/customJobs/1"
    denied = permission_denied("aiplatform.customJobs.get", resource)
    with VertexServer(executor="process") as server:
        point_at(server, monkeypatch)
        job = vertex_job(server, home, tmp_path / "a", body)
        wait_for("running job", lambda: job.record().state is JobState.RUNNING)
        server.inject(*[Fault.of(denied, GET_JOB) for _ in range(4)])
        try:
            note = wait_for("note", lambda: job.record().handle.get("watch_note"), 30)
            assert note.startswith("status unknown (reads refused since ") and "roles/" in note
            assert job.record().state is JobState.RUNNING
            wait_for("the faults met", lambda: server.faults == [], 30)
        finally:
            go.touch()
        record = job.wait(timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, record.error


def test_a_not_found_for_a_while_leaves_a_running_job_unknown_not_failed(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """404 NOT_FOUND on getCustomJob for a few reads while the job runs (a job just made, a
    regional hiccup): status unknown, said, never FAILED; followed to its end after."""
    go = tmp_path / "go"
    body = f"import os, time\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.05)\n"
    with VertexServer(executor="process") as server:
        point_at(server, monkeypatch)
        job = vertex_job(server, home, tmp_path / "a", body)
        wait_for("running job", lambda: job.record().state is JobState.RUNNING)
        server.inject(*[Fault.not_found(GET_JOB) for _ in range(4)])
        try:
            note = wait_for("note", lambda: job.record().handle.get("watch_note"), 30)
            assert (
                note.startswith("status unknown (reads refused since ") and "does not exist" in note
            )
            wait_for("the faults met", lambda: server.faults == [], 30)
            assert job.record().state is JobState.RUNNING
        finally:
            go.touch()
        record = job.wait(timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, record.error
    assert "watch_note" not in record.handle or record.handle["watch_note"] is None


def test_a_job_vertex_keeps_saying_does_not_exist_is_lost_track_of(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with VertexServer(executor="process") as server:
        point_at(server, monkeypatch, TFC_VERTEX_GONE_AFTER="1")
        server.inject(*[Fault.not_found(GET_JOB) for _ in range(200)])
        job = vertex_job(server, home, tmp_path / "a", "import time\ntime.sleep(30)")
        record = job.wait(timeout=JOB_DEADLINE_S)
    assert record.state is JobState.FAILED
    assert record.error is not None and "does not exist" in record.error


def test_a_daily_log_quota_stops_the_logs_with_its_own_message(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with VertexServer(executor="process") as server:
        point_at(server, monkeypatch)
        server.inject(Fault.daily_quota(ENTRIES))
        job = vertex_job(server, home, tmp_path / "a", "print('trained')")
        record = job.wait(timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, record.error  # the state reads go on
    (line,) = [x for x in log(record, "vertex").splitlines() if "cannot read" in x]
    assert line.startswith(
        "[tfc_jupyter] cannot read the job's logs: Cloud Logging's daily quota is used up in "
        "project test-project (ReadRequestsPerDayPerProject"
    )
    assert "midnight Pacific time" in line and "Fix: " in line
    assert len(server.received("POST", "entries:list$")) == 1  # not asked again today


TEN = 10
LINES = 40
EPOCHS = 3


@pytest.mark.slow
def test_ten_jobs_followed_at_once_within_the_read_quota(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cloud Logging's 60 reads a minute for the project (Google's body when spent), ten jobs
    followed from one process: every line and metric arrives, no job is recorded FAILED while
    the server runs it, and the reads stay well under the quota."""
    body = (
        "import time\nfrom tfc_runtime.results import emit\n"
        f"for i in range({LINES}):\n    print(f'line {{i:02d}}', flush=True)\n"
        f"    if i % {LINES // EPOCHS} == {LINES // EPOCHS - 1}:\n"
        "        emit({'event': 'epoch', 'fit': 0, 'epoch': i // "
        f"{LINES // EPOCHS} + 1, 'metrics': {{'loss': 1.0 / (i + 1)}}}})\n"
        "    time.sleep(0.05)\n"
    )
    wrong: list[str] = []
    with VertexServer(executor="process", log_reads=60, crud=600, minute=MINUTE) as server:
        point_at(server, monkeypatch)
        # Refused from the start as well: the reader backs off and comes back.
        server.inject(*[Fault.rate_limited(ENTRIES) for _ in range(3)])
        jobs = [vertex_job(server, home, tmp_path / f"j{i}", body) for i in range(TEN)]
        stop = threading.Event()

        def watch() -> None:  # no job FAILED while the server says it runs
            while not stop.is_set():
                for job in jobs:
                    record = job.record()
                    vertex_id = record.handle.get("vertex_job_id")
                    if record.state is JobState.FAILED and vertex_id:
                        wrong.append(f"{job.id} FAILED while {server.job(vertex_id).state()}")
                time.sleep(0.1)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            records = [job.wait(timeout=JOB_DEADLINE_S) for job in jobs]
        finally:
            stop.set()
            watcher.join(5)
        budget = server.log_budget
        assert budget is not None
        reads = len(server.received("POST", "entries:list$"))
    assert wrong == []
    for job, record in zip(jobs, records, strict=True):
        assert record.state is JobState.SUCCEEDED, (job.id, record.error)
        lines = [x for x in log(record, "chief").splitlines() if x.startswith("line ")]
        assert lines == [f"line {i:02d}" for i in range(LINES)], job.id
        assert [m["epoch"] for m in job.metrics] == list(range(1, EPOCHS + 1)), job.id
        assert "Job completed successfully." in log(record, "vertex")
    assert budget.peak <= 30, f"{budget.peak} reads in one minute: not well under 60"
    assert reads < TEN * 20  # batched: far fewer reads than jobs x polls


# ------------------------------------------------------------------------------- bare bodies
GPU_METRICS = st.builds(
    lambda kind, gpu: f"custom_model_training_{kind}{gpu}",
    st.sampled_from(["nvidia_", "preemptible_nvidia_", ""]),
    st.sampled_from(["t4_gpus", "l4_gpus", "a100_gpus", "h100_gpus", "tpu_v2", "cpus"]),
)


@settings(max_examples=60, deadline=None)
@given(
    GPU_METRICS,
    st.sampled_from(["bare", "help", "retry info"]),
    st.sampled_from([None, "5"]),
)
def test_a_resource_quota_is_never_a_rate_limit_in_any_body_google_sends(
    metric: str, extra: str, wait: str | None
) -> None:
    """Issue 50: Vertex AI's resource quota as Google sends it (the sentence, no details), with a
    Help link or a RetryInfo added, with a Retry-After or not: a quota error naming its metric
    and the console's quota page, never retried."""
    base = gpu_quota(metric)
    details = {
        "bare": [],
        "help": [
            {
                "@type": "type.googleapis.com/google.rpc.Help",
                "links": [{"description": "quotas", "url": "https://cloud.google.com/quotas"}],
            }
        ],
        "retry info": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "9s"}],
    }[extra]
    headers = {"Retry-After": wait} if wait else {}
    retry, error = said(answer(Refused(base.status, base.message, details, headers), CREATE_URL))
    assert (retry, type(error)) == (False, QuotaError), error
    text = str(error)
    assert f"quotas?project={PROJECT}&metric=aiplatform.googleapis.com/{metric}" in text
    assert "\n" not in text and "Fix: request more quota" in text
    if metric.endswith("gpus"):
        assert "fewer GPUs" in text


CREATE_URL = f"https://us-central1-aiplatform.googleapis.com/v1/projects/{PROJECT}/customJobs"

# Each service's 403 as Google sends it, and the role that holds the permission refused.
DENIALS = [
    (permission_denied("logging.logEntries.list"), "roles/logging.viewer", "in project"),
    (permission_denied_bare("logging.logEntries.list"), "roles/logging.viewer", "in project"),
    (
        permission_denied(
            "aiplatform.customJobs.create",
            f"//aiplatform.googleapis.com/projects/{PROJECT}/locations/us-central1",
        ),
        "roles/aiplatform.user",
        "in project",
    ),
    (
        permission_denied_bare("iam.serviceAccounts.actAs"),
        "roles/iam.serviceAccountUser",
        "on the service account",
    ),
    (
        storage_denied("ci@p.iam.gserviceaccount.com", "storage.objects.create"),
        "roles/storage.objectUser",
        "on the bucket",
    ),
    (
        storage_denied("ci@p.iam.gserviceaccount.com", "storage.objects.get"),
        "roles/storage.objectViewer",
        "on the bucket",
    ),
    (
        storage_denied("ci@p.iam.gserviceaccount.com", "storage.buckets.create", "project 1"),
        "roles/storage.admin",
        "in project",
    ),
    (
        Refused(
            "PERMISSION_DENIED",
            'Permission "artifactregistry.repositories.uploadArtifacts" denied on resource '
            '"projects/p/locations/us-central1/repositories/r" (or it may not exist)',
        ),
        "roles/artifactregistry.writer",
        "on the repository",
    ),
    (caller_denied(), "roles/aiplatform.user", "in project"),  # names none: the API's own
]


@pytest.mark.parametrize(("refused", "role", "where"), DENIALS)
def test_each_permission_refused_names_the_role_that_holds_it(
    refused: Refused, role: str, where: str
) -> None:
    """Issue 50: a Cloud Logging 403 names the Logs Viewer role, not Vertex AI User's; each
    service's permission its own role (tfc_jupyter/backends/vertex/google/roles.py)."""
    retry, error = said(answer(refused))
    text = str(error)
    assert not retry and type(error) is BackendError and "\n" not in text
    assert f"({role}) {where}" in text and text.count("roles/") == 1, text


def test_the_roles_table_names_a_role_and_its_source_for_each_service() -> None:
    from tfc_jupyter.backends.vertex.google.roles import ROLES, role_for

    for permission in (
        "aiplatform.customJobs.create",
        "logging.logEntries.list",
        "storage.objects.create",
        "cloudbuild.builds.create",
        "artifactregistry.repositories.uploadArtifacts",
    ):
        role = role_for(permission)
        assert role is not None and role.id.startswith("roles/"), permission
        assert permission.split(".")[0] in role.id, (permission, role)
        assert role.source.startswith("https://cloud.google.com/"), permission
    assert role_for("compute.instances.create") is None
    assert all(
        r.on in ("project", "bucket", "repository", "service account") for r in ROLES.values()
    )


def test_a_gpu_quota_at_launch_is_a_quota_error_at_once(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 50: Vertex AI's GPU quota on job creation, as Google sends it (no details): the
    launch stops within 5 s with the quota's fix; it was read as a rate limit, retried for the
    whole retry budget, then said "wait a minute"."""
    with VertexServer(executor="process") as server:
        point_at(server, monkeypatch, TFC_VERTEX_RETRY_TOTAL="120")
        server.inject(*[Fault.quota(match=CREATE) for _ in range(20)])
        started = time.monotonic()
        with pytest.raises(QuotaError) as info:
            vertex_job(server, home, tmp_path / "a", "print('up')")
        took = time.monotonic() - started
        posts = server.received("POST", "customJobs$")
    text = str(info.value)
    assert took < 5.0, took
    assert [r.answer for r in posts] == [429]  # never retried
    assert "custom_model_training_nvidia_t4_gpus" in text and "rate-limiting" not in text
    assert f"quotas?project={PROJECT}&metric=aiplatform.googleapis.com/" in text
    assert "fewer GPUs" in text and "\n" not in text
    assert server.jobs == {}


def test_a_log_permission_refused_names_the_logs_viewer_role(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 50: Cloud Logging's 403 on entries.list, while the job runs to its end: the job's
    log says which role reads logs (it named the Vertex AI User role)."""
    denied = permission_denied("logging.logEntries.list")
    with VertexServer(executor="process") as server:
        point_at(server, monkeypatch)
        server.inject(*[Fault.of(denied, ENTRIES) for _ in range(2)])
        job = vertex_job(server, home, tmp_path / "a", "print('trained')")
        record = job.wait(timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, record.error
    lines = [x for x in log(record, "vertex").splitlines() if "cannot read" in x]
    assert lines and "the Logs Viewer role (roles/logging.viewer)" in lines[0], lines
    assert "aiplatform.user" not in lines[0]


def status_answer(refused: Refused, code: int) -> Any:
    """Google's answer with the HTTP status ``code`` (a 403 quota, as Compute-style APIs send)."""
    error = answer(refused)
    reply = error.response
    reply.status_code = code
    return gexc.from_http_response(reply)


META_KEYS = st.sets(
    st.sampled_from(["quota_metric", "quota_limit", "quota_limit_value", "quota_unit", "service"])
)


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(["RATE_LIMIT_EXCEEDED", "RESOURCE_QUOTA_EXCEEDED"]),
    st.sampled_from([429, 403]),
    META_KEYS,
    st.sampled_from(["1/min/{project}", "1/d/{project}", "1/min/{project}/{region}"]),
    st.booleans(),
    st.sampled_from(["googleapis.com", "aiplatform.googleapis.com", "logging.googleapis.com"]),
)
def test_error_info_in_every_form_google_uses(
    reason: str, code: int, keys: set[str], unit: str, help_first: bool, domain: str
) -> None:
    """Issue 50: ``ErrorInfo`` as the services vary it (a 403 or a 429, metadata in part, another
    domain, a Help link before it): its reason and window say the kind, never the status."""
    meta = {
        "quota_metric": "logging.googleapis.com/read_requests",
        "quota_limit": "ReadRequestsPerMinutePerProject",
        "quota_limit_value": "60",
        "quota_unit": unit,
        "service": "logging.googleapis.com",
    }
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": reason,
        "domain": domain,
        "metadata": {k: v for k, v in meta.items() if k in keys},
    }
    helper = {"@type": "type.googleapis.com/google.rpc.Help", "links": []}
    details = [helper, info] if help_first else [info, helper]
    retry, error = said(status_answer(Refused("RESOURCE_EXHAUSTED", "Quota.", details), code))
    daily = "quota_unit" in keys and unit.startswith("1/d/")
    if reason == "RESOURCE_QUOTA_EXCEEDED":
        assert (retry, type(error)) == (False, QuotaError)
    elif daily:
        assert (retry, type(error)) == (False, DailyQuotaError)
    else:
        assert (retry, type(error)) == (True, TransientError)
    assert "permission denied" not in str(error)


PERMISSIONS = st.sampled_from(
    [
        ("aiplatform.customJobs.create", "roles/aiplatform.user"),
        ("aiplatform.hyperparameterTuningJobs.get", "roles/aiplatform.user"),
        ("logging.logEntries.list", "roles/logging.viewer"),
        ("storage.objects.create", "roles/storage.objectUser"),
        ("storage.objects.get", "roles/storage.objectViewer"),
        ("storage.buckets.get", "roles/storage.admin"),
        ("cloudbuild.builds.create", "roles/cloudbuild.builds.editor"),
        ("artifactregistry.repositories.uploadArtifacts", "roles/artifactregistry.writer"),
        ("artifactregistry.repositories.downloadArtifacts", "roles/artifactregistry.reader"),
        ("iam.serviceAccounts.actAs", "roles/iam.serviceAccountUser"),
    ]
)


@settings(max_examples=120, deadline=None)
@given(PERMISSIONS, st.sampled_from(["error info", "bare", "storage", "registry"]))
def test_a_permission_in_every_form_google_words_it_names_its_role(
    permission_role: tuple[str, str], form: str
) -> None:
    """Issue 50: the permission read from ``ErrorInfo``, from "Permission 'P' denied", from
    Cloud Storage's "does not have P access" or Artifact Registry's "Permission "P" denied":
    the same role, never a quota, never retried."""
    permission, role = permission_role
    refused = {
        "error info": permission_denied(permission, "projects/test-project"),
        "bare": permission_denied_bare(permission),
        "storage": storage_denied("ci@p.iam.gserviceaccount.com", permission),
        "registry": Refused(
            "PERMISSION_DENIED", f'denied: Permission "{permission}" denied on resource "r"'
        ),
    }[form]
    retry, error = said(answer(refused))
    assert not retry and type(error) is BackendError
    assert f"({role})" in str(error) and "quota" not in str(error)
