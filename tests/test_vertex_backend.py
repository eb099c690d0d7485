"""The Vertex AI backend against the local Vertex server: real clients, real jobs, real logs.

Nothing of tfc_jupyter is patched: the backend's aiplatform and Cloud Logging clients talk REST
to ``tests/vertex_server.py`` (``TFC_VERTEX_ENDPOINT``), which runs each job for real, as local
processes of a folder image here and as containers of the built image in the Docker test.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud.aiplatform_v1.types import CustomJob
from jobutil import JOB_DEADLINE_S, plan_for, wait_for, wait_state, write_notebook
from vertex_server import Fault, VertexServer, unsigned
from webhook import Receiver

from tfc_jupyter.backends import watch_lock
from tfc_jupyter.backends.vertex import request as vertex_request
from tfc_jupyter.backends.vertex.api import VertexSettings
from tfc_jupyter.backends.vertex.backend import VertexBackend, stop_watcher
from tfc_jupyter.backends.vertex.google.gcloud import QuotaError, credentials, is_loopback
from tfc_jupyter.backends.watched import LOG_NOTE, NOT_FOLLOWED, QUICK_STARTS
from tfc_jupyter.errors import BackendError, MissingDependency, TfcError
from tfc_jupyter.job.catalog import Machine
from tfc_jupyter.jobs import Job, job_dict, launch, store_for
from tfc_jupyter.planner.plan import Plan
from tfc_jupyter.store.records import JobRecord, JobState

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "registry.test/tfc/job:1"
FLAGS = f"--backend vertex --project test-project --image {IMAGE}"
CREATE = r"POST /v1/projects/[^/]+/locations/[^/]+/customJobs$"
TB = "projects/test-project/locations/us-central1/tensorboards/7"
SA_EMAIL = "trainer@test-project.iam.gserviceaccount.com"

MODEL_CELL = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf

    def dataset(batch=32):
        rng = np.random.default_rng(0)
        x = rng.normal(size=(512, 3)).astype("float32")
        y = (x @ np.array([1.0, -2.0, 0.5], dtype="float32") + 0.3).astype("float32")
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch)
""")
FIT_CELL = textwrap.dedent("""\
    %%tfc_run {flags}
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(dataset(), epochs=2, steps_per_epoch=10, verbose=2)
    print("final loss:", history.history["loss"][-1])
    print("replicas in sync:", tf.distribute.get_strategy().num_replicas_in_sync)
""")


@pytest.fixture
def home(
    vertex_server: VertexServer, tfc_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Path]:
    """A job store, the backend pointed at the server, fast polls; watchers ended afterwards."""
    home = Path(os.environ["TFC_JUPYTER_HOME"])
    for name, value in {
        "TFC_VERTEX_ENDPOINT": vertex_server.url,
        "TFC_VERTEX_POLL": "0.2",
        "TFC_VERTEX_BACKOFF": "0.05",
        "TFC_VERTEX_TIMEOUT": "10",
        "TFC_VERTEX_RETRY_TOTAL": "10",
        "TFC_VERTEX_DRAIN": "1.5",
        "TFC_VERTEX_LOG_READS": "600",  # one log read each 0.1 s at most (Google's: 20 a minute)
    }.items():
        monkeypatch.setenv(name, value)
    yield home
    for record in store_for(home).list(limit=None):
        stop_watcher(record)  # by the pid in its record; only ours


def notebook(folder: Path, body: str, *above: str) -> Path:
    """A notebook: ``above`` cells, then ``%%tfc_run`` with ``body``."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_notebook(folder / "job.ipynb", *above, "%%tfc_run\n" + body)


def image_folder(server: VertexServer, plan: Plan, folder: Path) -> None:
    """Register the plan's image with the server as a folder: script, source map, runtime."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "script.py").write_text(plan.script.text)
    smap = plan.script.source_map_json(plan.selection.name)
    (folder / "script.map.json").write_text(json.dumps(smap))
    shutil.copytree(ROOT / "runtime" / "tfc_runtime", folder / "tfc_runtime", dirs_exist_ok=True)
    assert plan.spec.image.image
    server.add_image(plan.spec.image.image, folder)


def submit(server: VertexServer, home: Path, nb: Path, flags: str = "") -> tuple[Plan, Job]:
    """Plan with the folder image and launch on the vertex backend."""
    plan = plan_for(nb, f"{FLAGS} {flags}".strip())
    image_folder(server, plan, nb.parent / "image")
    return plan, launch(plan, store=store_for(home))


def finish(job: Job, timeout: float = JOB_DEADLINE_S) -> JobRecord:
    """Wait (bounded) for the job to end."""
    record = job.wait(timeout=timeout)
    assert record.state.is_terminal(), f"{job.id} still {record.state} after {timeout} s"
    return record


def log(record: JobRecord, replica: str) -> str:
    """One replica's log file."""
    path = Path(record.log_dir) / f"{replica}.log"
    return path.read_text() if path.exists() else ""


def sent_body(server: VertexServer) -> dict[str, Any]:
    """The create request's body as the server received it (the client's own JSON)."""
    (request,) = [r for r in server.received("POST", r"customJobs$") if r.answer == 200]
    return dict(request.body)


def same_job(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal as CustomJob protos (the client sends enums as numbers, a dry run as names)."""
    return bool(CustomJob.from_json(json.dumps(a)) == CustomJob.from_json(json.dumps(b)))


@pytest.mark.slow
def test_a_job_trains_and_its_logs_and_state_come_back(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    nb = write_notebook(tmp_path / "train.ipynb", MODEL_CELL, FIT_CELL.format(flags=""))
    plan, job = submit(vertex_server, home, nb)
    out = io.StringIO()
    record = job.follow(out=out, timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, (record.error, out.getvalue()[-2000:])
    assert "[chief] final loss:" in out.getvalue()
    assert "[vertex] Job completed successfully." in out.getvalue()
    # One replica: Vertex AI sets CLUSTER_SPEC but no TF_CONFIG, and one device needs no strategy.
    assert "chief:0 of 1 worker (CLUSTER_SPEC), strategy none" in log(record, "chief")
    sent = sent_body(vertex_server)
    assert same_job(unsigned(sent), plan.request()["body"])  # what the dry run showed, and
    assert (  # the report key (made at launch, never shown)
        unsigned(json.loads((Path(record.job_dir) / "vertex_request.json").read_text()))
        == (plan.request()["body"])
    )
    vertex_id = record.handle["vertex_job_id"]
    assert record.console_url == vertex_request.console_url(plan.spec, vertex_id)
    assert record.handle["vertex_state"] == "JOB_STATE_SUCCEEDED"
    assert vertex_server.job(vertex_id).state() == "JOB_STATE_SUCCEEDED"
    assert record.tensorboard_url is None and "Vertex console" in job._repr_html_()
    assert job.logs("chief").count("final loss:") == 1  # no line twice
    # Results come back through Vertex AI's logs (the runtime's own stderr lines): every
    # epoch, the last with the loss the job printed; none of them is shown.
    metrics = job.metrics
    assert [m["epoch"] for m in metrics] == [1, 2]
    printed = float(out.getvalue().split("[chief] final loss: ", 1)[1].split()[0])
    assert metrics[-1]["loss"] == pytest.approx(printed)
    assert "tfc_runtime" not in out.getvalue()


LOOKALIKES = """\
import sys
fake = '[tfc_runtime] result %s{"event": "%s", %s}'
print(fake % ("", "epoch", '"fit": 0, "epoch": 1, "logs": {"loss": 123.0}'))
print(fake % ("", "saved", '"path": "/etc/passwd", "how": "save"'), file=sys.stderr)
print(fake % ("0" * 32 + " ", "saved", '"path": "/etc/shadow", "how": "save"'), file=sys.stderr)
import numpy as np
import keras
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(np.zeros((8, 2)), np.zeros((8, 1)), epochs=1, verbose=0)
print("done")
"""


@pytest.mark.item("printed look-alikes of reports are only lines", suite="security")
@pytest.mark.slow
def test_on_vertex_ai_printed_look_alikes_of_reports_are_only_lines(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    """Issue 39: on Vertex AI reports come with the logs, so a line the code prints on either
    stream could pass for one. Each report is signed with a key made at launch; unsigned and
    badly signed look-alikes set no metric and no model path; the runtime's own reports (the
    fit's epoch) still come."""
    _, job = submit(vertex_server, home, notebook(tmp_path, LOOKALIKES))
    reported: list[dict[str, Any]] = []
    record = job.follow(out=io.StringIO(), on_result=reported.append, timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, record.error
    assert "done" in log(record, "chief")
    results = job.results()
    assert results.model_dir is None and results.saved == []
    assert [m["epoch"] for m in job.metrics] == [1] and job.metrics[0]["loss"] != 123.0
    assert [r["event"] for r in reported] == ["fit", "epoch"]  # the runtime's own, signed
    assert "report_key" not in json.dumps(job_dict(job.record()))  # the API never serves it


@pytest.mark.slow
@pytest.mark.timeout(900)  # on a fresh registry the TensorFlow parent's layers are pushed too
def test_multi_worker_job_runs_in_containers_from_the_built_image(
    tmp_path: Path,
    tfc_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    docker_client: Any,
    registry: str,
    tf_parent_image: str,
) -> None:
    """No --image: the backend builds and pushes; the server pulls and runs it in Docker."""
    monkeypatch.setenv("TFC_REGISTRY", f"{registry}/tfc-tests")
    with VertexServer(executor="docker") as server:
        for name, value in {"TFC_VERTEX_ENDPOINT": server.url, "TFC_VERTEX_POLL": "0.2"}.items():
            monkeypatch.setenv(name, value)
        flags = f"--backend vertex --project test-project --parent-image {tf_parent_image}"
        nb = write_notebook(
            tmp_path / "train.ipynb", MODEL_CELL, FIT_CELL.format(flags="--workers 1")
        )
        plan = plan_for(nb, flags)
        assert plan.image_uri.startswith(f"{registry}/tfc-tests/train:")
        home = Path(os.environ["TFC_JUPYTER_HOME"])
        job = launch(plan, store=store_for(home))
        try:
            record = finish(job, timeout=240)
        finally:
            stop_watcher(job.record())
        assert record.state is JobState.SUCCEEDED, record.error
        assert record.handle["image"] == plan.image_uri
        for replica in ("chief", "worker-0"):
            text = log(record, replica)
            assert "MultiWorkerMirroredStrategy, 2 replicas" in text, text[-2000:]
            assert "replicas in sync: 2" in text
        run = server.job(record.handle["vertex_job_id"])
        assert {r.kind for r in run.replicas.values()} == {"docker"}
        assert same_job(unsigned(sent_body(server)), plan.request()["body"])


@pytest.mark.slow
def test_a_failing_cell_fails_the_job_with_its_location(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    nb = notebook(tmp_path, "print('starting')\nraise ValueError('boom')", "x = 1")
    _, job = submit(vertex_server, home, nb)
    record = finish(job)
    assert record.state is JobState.FAILED
    assert record.error == "chief exited with status 1 at cell 2, line 3: ValueError: boom"
    assert record.error_location == "cell 2, line 3"  # line 1 is %%tfc_run
    assert "starting" in log(record, "chief")


def test_a_failed_vertex_job_is_told_once_with_its_cell_and_console_link(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    """``--notify``: the Vertex AI job's watcher, which records its end, posts it once to a
    webhook on a loopback address: the error, the cell and the console link."""
    receiver = Receiver()
    try:
        nb = notebook(tmp_path, "raise ValueError('boom')", "x = 1")
        _, job = submit(vertex_server, home, nb, f"--notify {receiver.url}")
        record = finish(job)
        (body,) = receiver.wait_for(1, deadline_s=30)
        assert record.state is JobState.FAILED
        assert body["type"] == "failure" and body["title"] == "TensorFlow job job failed", body
        assert "at cell 2, line 2: ValueError: boom" in body["message"], body
        assert f"console: {record.console_url}" in body["message"], body
        assert record.console_url and "console.cloud.google.com" in record.console_url
        time.sleep(1.0)
        assert len(receiver.posts) == 1
    finally:
        receiver.close()


def test_accepted_then_failed_by_vertex(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    vertex_server.fail_next_job("Unable to pull image registry.test/tfc/job:1: manifest unknown")
    _, job = submit(vertex_server, home, notebook(tmp_path, "print(1)"))
    record = finish(job, timeout=60)
    assert record.state is JobState.FAILED
    assert (
        record.error == "Vertex AI: Unable to pull image registry.test/tfc/job:1: manifest unknown"
    )
    assert "manifest unknown" in log(record, "vertex")


@pytest.mark.slow
def test_cancel(vertex_server: VertexServer, home: Path, tmp_path: Path) -> None:
    body = "import time\nprint('working', flush=True)\ntime.sleep(300)"
    _, job = submit(vertex_server, home, notebook(tmp_path, body))
    wait_state(job, {JobState.RUNNING}, timeout=60)
    record = job.cancel()
    assert record.state is JobState.CANCELLED, record.state
    run = vertex_server.job(record.handle["vertex_job_id"])
    assert run.state() == "JOB_STATE_CANCELLED"
    assert all(r.poll() is not None for r in run.replicas.values())
    assert record.error == "cancelled"


def test_validation_errors_are_one_line_naming_the_field(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    nb = notebook(tmp_path, "print(1)")
    with pytest.raises(BackendError) as info:
        # (with the service account our own rule asks for: this is Vertex AI's refusal)
        submit(vertex_server, home, nb, f"--tensorboard {TB} --service-account {SA_EMAIL}")
    error = info.value
    assert error.field == "job_spec.base_output_directory"
    assert "\n" not in str(error) and "--base-output-dir" in str(error)
    assert str(error).startswith("Vertex AI rejected job_spec.base_output_directory: ")
    (record,) = store_for(home).list()
    assert record.state is JobState.FAILED and record.error.startswith("launch failed: ")
    # A machine shape the catalog would never make, as if it drifted from Vertex AI's:
    plan = plan_for(nb, FLAGS)
    odd = Machine("T4_3X", "n1-standard-8", "NVIDIA_TESLA_T4", 3)
    plan = dataclasses.replace(plan, spec=plan.spec.evolve(chief=odd))
    with pytest.raises(BackendError) as info:
        launch(plan, store=store_for(home))
    assert info.value.field == "job_spec.worker_pool_specs[0].machine_spec.accelerator_count"
    assert "3 x NVIDIA_TESLA_T4 is not supported" in str(info.value)
    assert "--machine / --gpus" in str(info.value)
    assert len(vertex_server.received("POST", r"customJobs$")) == 2  # one try each


@pytest.mark.slow
def test_transient_errors_are_retried_then_the_job_runs(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    vertex_server.inject(Fault.rate_limited(CREATE), Fault.unavailable(CREATE))
    plan, job = submit(vertex_server, home, notebook(tmp_path, "print('made it')"))
    assert job.record().handle["api_retries"] == 2
    assert [r.answer for r in vertex_server.received("POST", r"customJobs$")] == [429, 503, 200]
    record = finish(job, timeout=60)
    assert record.state is JobState.SUCCEEDED and "made it" in log(record, "chief")
    assert len(vertex_server.jobs) == 1
    assert same_job(unsigned(sent_body(vertex_server)), plan.request()["body"])


@pytest.mark.slow
def test_a_timed_out_create_is_adopted_not_repeated(
    vertex_server: VertexServer, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TFC_VERTEX_TIMEOUT", "1")
    vertex_server.inject(Fault.slow(3.0, CREATE, after=True))  # created, but the answer is late
    _, job = submit(vertex_server, home, notebook(tmp_path, "print(1)"))
    assert len(vertex_server.jobs) == 1 and len(vertex_server.received("POST", "customJobs$")) == 1
    (run,) = vertex_server.jobs.values()
    assert job.record().handle["resource_name"] == run.resource["name"]
    assert job.record().handle["api_retries"] == 1
    assert finish(job, timeout=60).state is JobState.SUCCEEDED


def test_retries_are_bounded(
    vertex_server: VertexServer, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TFC_VERTEX_RETRY_TOTAL", "1")
    vertex_server.inject(*[Fault.unavailable(CREATE) for _ in range(200)])
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"unavailable \(503\).*gave up after \d+ tries in 1 s"):
        submit(vertex_server, home, notebook(tmp_path, "print(1)"))
    assert time.monotonic() - started < 8
    tries = len(vertex_server.received("POST", r"customJobs$"))
    assert 3 <= tries < 30
    assert vertex_server.jobs == {}


@pytest.mark.parametrize(
    ("fault", "advice"),
    [
        (Fault.unauthenticated(CREATE), "gcloud auth application-default login"),
        (Fault.permission_denied(match=CREATE), "roles/aiplatform.user"),
        (Fault.api_disabled(match=CREATE), "gcloud services enable aiplatform.googleapis.com"),
        (Fault.quota(match=CREATE), "request more quota in the console"),
    ],
)
def test_auth_permission_and_quota_errors_say_what_to_do(
    vertex_server: VertexServer, home: Path, tmp_path: Path, fault: Fault, advice: str
) -> None:
    vertex_server.inject(fault)
    with pytest.raises(BackendError) as info:
        submit(vertex_server, home, notebook(tmp_path, "print(1)"))
    text = str(info.value)
    assert advice in text and "\n" not in text and "Fix: " in text
    assert isinstance(info.value, QuotaError) == ("quota" in advice)
    assert len(vertex_server.received("POST", r"customJobs$")) == 1  # never retried
    assert vertex_server.jobs == {}


@pytest.mark.slow
def test_console_and_tensorboard_links(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    flags = (
        f"--tensorboard {TB} --base-output-dir gs://bucket/run "
        "--service-account trainer@test-project.iam.gserviceaccount.com"
    )
    _, job = submit(vertex_server, home, notebook(tmp_path, "print(1)"), flags)
    record = job.record()
    vertex_id = record.handle["vertex_job_id"]
    assert record.console_url == (
        "https://console.cloud.google.com/vertex-ai/locations/us-central1/training/"
        f"{vertex_id}/cpu?project=test-project"
    )
    assert record.tensorboard_url == (
        "https://us-central1.tensorboard.googleusercontent.com/experiment/projects+test-project"
        f"+locations+us-central1+tensorboards+7+experiments+{vertex_id}"
    )
    page = job._repr_html_()
    assert record.console_url in page and "TensorBoard" in page
    assert sent_body(vertex_server)["jobSpec"]["tensorboard"] == TB
    assert finish(job, timeout=60).state is JobState.SUCCEEDED


@pytest.mark.slow
def test_a_restarted_watcher_resumes_without_repeating_lines(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    body = (
        "import time\nfor i in range(30):\n    print(f'line {i}', flush=True)\n    time.sleep(0.2)"
    )
    _, job = submit(vertex_server, home, notebook(tmp_path, body))
    deadline = time.monotonic() + 60
    while "line 3" not in log(job.record(), "chief"):
        assert time.monotonic() < deadline, "no log lines arrived"
        time.sleep(0.1)
    stop_watcher(job.record())  # as if the machine rebooted; job.wait() restarts it
    record = finish(job, timeout=90)
    assert record.state is JobState.SUCCEEDED, record.error
    assert record.handle["watcher_starts"] == 2
    lines = [x for x in log(record, "chief").splitlines() if x.startswith("line ")]
    assert lines == [f"line {i}" for i in range(30)]


@pytest.mark.slow
def test_a_second_watcher_of_a_job_leaves_it_to_the_first(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    """Two processes may each find a job's watcher dead and start one: the second leaves at
    once (the job's watcher lock), so no line is written twice; a record whose pid is stale
    is not restarted while the lock is held."""
    body = (
        "import time\nfor i in range(20):\n    print(f'line {i}', flush=True)\n    time.sleep(0.2)"
    )
    _, job = submit(vertex_server, home, notebook(tmp_path, body))
    record = job.record()
    deadline = time.monotonic() + 30
    while not watch_lock.watched(Path(record.job_dir)):  # the first watcher has started
        assert time.monotonic() < deadline, "the job's watcher never took its lock"
        time.sleep(0.1)
    second = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.backends.vertex.watcher", record.job_dir],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert second.returncode == 0 and "another watcher follows this job" in second.stdout
    record = finish(job, timeout=90)
    assert record.state is JobState.SUCCEEDED, record.error
    assert record.handle["watcher_starts"] == 1
    lines = [x for x in log(record, "chief").splitlines() if x.startswith("line ")]
    assert lines == [f"line {i}" for i in range(20)]


@pytest.mark.slow
def test_late_log_entries_are_waited_for(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    vertex_server.logs.delay = 1.0  # Cloud Logging's ingestion lag
    _, job = submit(vertex_server, home, notebook(tmp_path, "print('last words')"))
    record = finish(job, timeout=60)
    assert record.state is JobState.SUCCEEDED
    assert "last words" in log(record, "chief")
    assert "Job completed successfully." in log(record, "vertex")


@pytest.mark.slow
def test_list_and_status(vertex_server: VertexServer, home: Path, tmp_path: Path) -> None:
    first_plan, first = submit(vertex_server, home, notebook(tmp_path / "a", "print(1)"))
    _, second = submit(vertex_server, home, notebook(tmp_path / "b", "print(2)"))
    for job in (first, second):
        finish(job, timeout=60)
    backend = VertexBackend(store_for(home))
    listed = backend.list_jobs(first_plan.spec)
    assert [j["name"] for j in listed] == [
        second.record().handle["resource_name"],
        first.record().handle["resource_name"],
    ]
    assert {j["state"] for j in listed} == {"succeeded"}
    assert listed[0]["console_url"].startswith("https://console.cloud.google.com/vertex-ai/")
    assert backend.list_jobs(first_plan.spec, filter_='display_name="other"') == []
    status = backend.status(first.record())
    assert status["vertex_state"] == "JOB_STATE_SUCCEEDED" and status["error"] is None


def test_check_refuses_what_cannot_run(
    vertex_server: VertexServer, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = notebook(tmp_path, "print(1)")
    store = store_for(home)
    with pytest.raises(BackendError, match="needs a Google Cloud project") as info:
        launch(plan_for(nb, f"--backend vertex --image {IMAGE}"), store=store)
    assert info.value.field == "project"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(BackendError, match="pass --image") as info:
        launch(plan_for(nb, "--backend vertex --project test-project"), store=store)
    assert info.value.field == "image"
    monkeypatch.setitem(sys.modules, "google.cloud.aiplatform_v1", None)
    with pytest.raises(MissingDependency, match=r"tfc_jupyter\[vertex\]"):
        launch(plan_for(nb, FLAGS), store=store)
    assert store.list() == []  # refused before anything was written or launched


def test_settings_and_credentials(monkeypatch: pytest.MonkeyPatch, tfc_env: Path) -> None:
    defaults = VertexSettings.load({})
    assert defaults.api_endpoint("europe-west4") == "europe-west4-aiplatform.googleapis.com"
    assert defaults.log_endpoint() == "https://logging.googleapis.com"
    local = VertexSettings.load(
        {"TFC_VERTEX_ENDPOINT": "http://127.0.0.1:9", "TFC_VERTEX_POLL": "1"}
    )
    assert local.api_endpoint("us-central1") == "http://127.0.0.1:9"
    assert local.log_endpoint() == "http://127.0.0.1:9" and local.poll_s == 1.0
    with pytest.raises(TfcError, match="TFC_VERTEX_POLL"):
        VertexSettings.load({"TFC_VERTEX_POLL": "often"})
    assert [is_loopback(e) for e in ("http://127.0.0.1:8", "localhost:9", "http://[::1]:7")] == [
        True,
        True,
        True,
    ]
    assert not is_loopback("us-central1-aiplatform.googleapis.com")
    assert type(credentials("http://127.0.0.1:8")).__name__ == "AnonymousCredentials"
    empty = tfc_env / "nothing"
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(empty))
    with pytest.raises(BackendError, match="application-default login"):
        credentials("us-central1-aiplatform.googleapis.com")


def test_loading_the_extension_imports_no_aiplatform() -> None:
    code = textwrap.dedent("""\
        import sys
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.extension_manager.load_extension("tfc_jupyter")
        import tfc_jupyter.backends.vertex.backend, tfc_jupyter.backends.vertex.watcher
        heavy = [m for m in sys.modules if m.startswith(("google.cloud.aiplatform",
                 "google.cloud.logging", "tensorflow"))]
        print(heavy)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("task", "replica"),
    [
        ("workerpool0-0", "chief"),
        ("workerpool1-0", "worker-0"),
        ("workerpool1-12", "worker-12"),
        ("workerpool2-1", "ps-1"),
        ("workerpool3-0", "evaluator-0"),
        ("workerpool7-0", "pool7-0"),
        ("service", "vertex"),
        (None, "vertex"),
    ],
)
def test_a_vertex_task_name_is_the_replica_named_as_local_jobs_name_it(
    task: str | None, replica: str
) -> None:
    """Cloud Logging's ``task_name`` label becomes the log the local backend would write."""
    from tfc_jupyter.backends.vertex.watcher import replica_name

    assert replica_name(task) == replica


# ------------------------------------------------------------------ issue 50: never lie
EPOCHS = 14
GATED = """\
import os, time
from tfc_runtime.results import emit
for epoch in range(1, {epochs} + 1):
    while not os.path.exists(os.path.join({folder!r}, f"e{{epoch}}")):
        time.sleep(0.05)
    print(f"epoch {{epoch}}", flush=True)
    emit({{"event": "epoch", "fit": 0, "epoch": epoch, "metrics": {{"loss": 1.0 / epoch}}}})
"""


def gated_job(server: VertexServer, home: Path, tmp_path: Path) -> tuple[Path, Job]:
    """A job of :data:`EPOCHS` epochs, each reported once the test lets it (``release``)."""
    gates = tmp_path / "gates"
    gates.mkdir()
    _, job = submit(
        server, home, notebook(tmp_path / "nb", GATED.format(epochs=EPOCHS, folder=str(gates)))
    )
    return gates, job


def release(gates: Path, upto: int) -> None:
    """Let the job report its epochs up to ``upto``."""
    for epoch in range(1, upto + 1):
        (gates / f"e{epoch}").touch()


def every_epoch(job: Job) -> list[int]:
    return [m["epoch"] for m in job.metrics]


def restarted(job: Job, starts: int) -> JobRecord:
    """Kill the job's watcher (as a machine restart does) and have a reader start the next."""
    stop_watcher(job.record())

    def next_start() -> JobRecord | None:
        record = job.record()
        if record.handle.get("watcher_starts") == starts + 1 or record.state.is_terminal():
            return record
        return record if record.handle.get(NOT_FOLLOWED) else None

    return wait_for(f"watcher start {starts + 1}", next_start)


@pytest.mark.slow
def test_a_watcher_killed_again_and_again_over_a_long_job_never_fails_it(
    vertex_server: VertexServer, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 50: a watcher that ran long (past ``SETTLED_POLLS`` polls) is no quick start, so
    six watchers over a job end with it SUCCEEDED and every metric, where the fourth start
    recorded it FAILED."""
    monkeypatch.setenv("TFC_VERTEX_POLL", "0.1")  # a watcher settles after 3 s
    gates, job = gated_job(vertex_server, home, tmp_path)
    for kill in range(1, 6):
        release(gates, 2 * kill)
        wait_for("metrics", lambda k=kill: len(every_epoch(job)) == 2 * k)
        wait_for("a settled watcher", lambda: job.record().handle.get(QUICK_STARTS, 0) == 0)
        record = restarted(job, kill)
        assert record.state is JobState.RUNNING and record.error is None, record.error
    release(gates, EPOCHS)
    record = finish(job)
    assert record.state is JobState.SUCCEEDED, record.error
    assert record.handle["watcher_starts"] == 6 and record.error is None
    assert every_epoch(job) == list(range(1, EPOCHS + 1))
    lines = [x for x in log(record, "chief").splitlines() if x.startswith("epoch ")]
    assert lines == [f"epoch {i}" for i in range(1, EPOCHS + 1)]  # none lost, none twice


@pytest.mark.slow
@pytest.mark.parametrize("then", ["followed again", "read by a reader"])
def test_a_watcher_that_keeps_stopping_leaves_the_job_not_followed_never_ended(
    vertex_server: VertexServer,
    home: Path,
    tmp_path: Path,
    then: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Four quick starts in a row: the job stays RUNNING, "not followed (status unknown)" with
    the way to follow it again, and its log is said frozen; the service's real end is taken
    later, by a watcher started by a follow (every metric) or by a read of the job."""
    from tfc_jupyter.cli import main

    gates, job = gated_job(vertex_server, home, tmp_path)
    release(gates, 3)
    wait_for("metrics", lambda: len(every_epoch(job)) == 3)
    for starts in range(1, 4):  # each watcher killed as soon as it started
        restarted(job, starts)
    stop_watcher(job.record())
    record = wait_for("not followed", lambda: (r := job.record()).handle.get(NOT_FOLLOWED) and r)
    assert record.state is JobState.RUNNING
    assert record.error is not None and record.error.startswith("not followed (status unknown)")
    assert f"`tfc-jupyter logs {job.id} --follow`" in record.error
    assert record.handle["watcher_starts"] == 4  # no fifth start by itself
    time.sleep(2.5)
    assert job.record().handle["watcher_starts"] == 4
    assert main(["logs", job.id]) == 0
    out, err = capsys.readouterr()
    assert "[chief] epoch 3" in out and "the log is frozen" in err
    assert f"tfc-jupyter logs {job.id} --follow" in err
    release(gates, EPOCHS)
    vertex_id = record.handle["vertex_job_id"]
    wait_for("the end", lambda: vertex_server.job(vertex_id).state() == "JOB_STATE_SUCCEEDED")
    if then == "followed again":
        record = job.follow(out=io.StringIO(), timeout=JOB_DEADLINE_S)
        assert record.state is JobState.SUCCEEDED, record.error
        assert record.error is None and NOT_FOLLOWED not in record.handle
        assert every_epoch(job) == list(range(1, EPOCHS + 1))
    else:
        seen = job.backend("vertex").status(record)  # type: ignore[attr-defined]
        assert seen["state"] == "succeeded"
        record = job.record()
        assert record.state is JobState.SUCCEEDED and record.error is None
        assert "the job ended while no watcher followed it" in record.handle["log_note"]


@pytest.mark.slow
def test_a_refused_log_read_window_ends_with_every_metric(
    vertex_server: VertexServer, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 50: Cloud Logging answers 403 for a while (a permission withdrawn, then granted
    again): the record says the logs are not read since when, and why; once the reads are
    answered they resume, and the job ends with every metric."""
    from google_errors import permission_denied

    from tfc_jupyter.cli import main

    gates, job = gated_job(vertex_server, home, tmp_path)
    release(gates, 2)
    wait_for("metrics", lambda: len(every_epoch(job)) == 2)
    denied = permission_denied("logging.logEntries.list", "projects/test-project")
    vertex_server.inject(*[Fault.of(denied, r"entries:list$") for _ in range(1000)])
    try:
        release(gates, 6)
        note = wait_for("a note", lambda: job.record().handle.get(LOG_NOTE), 30)
        assert note.startswith("logs not read since ") and "logging.logEntries.list" in note
        assert "(roles/logging.viewer)" in note and "aiplatform.user" not in note
        assert main(["logs", job.id]) == 0
        err = capsys.readouterr().err
        assert "the log is not being updated: logs not read since " in err
        time.sleep(3.0)  # refused for a while longer (the reader backs off, never gives up)
        assert job.record().state is JobState.RUNNING
    finally:
        vertex_server.faults.clear()
    wait_for("the logs read again", lambda: LOG_NOTE not in job.record().handle, 60)
    release(gates, EPOCHS)
    record = finish(job)
    assert record.state is JobState.SUCCEEDED, record.error
    assert every_epoch(job) == list(range(1, EPOCHS + 1))
    assert LOG_NOTE not in record.handle
    vertex_log = log(record, "vertex")
    assert "[tfc_jupyter] cannot read the job's logs: " in vertex_log
    assert "[tfc_jupyter] the job's logs are read again" in vertex_log
    refused = [r for r in vertex_server.received("POST", r"entries:list$") if r.answer == 403]
    assert len(refused) >= 3
