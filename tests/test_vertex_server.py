"""The local Vertex AI server, driven by the real google-cloud-aiplatform and logging clients."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gcp_server import GcpServer
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.auth.exceptions import GoogleAuthError
from google.cloud import aiplatform
from google.cloud.aiplatform_v1 import CustomJob, JobServiceClient
from google.cloud.logging_v2 import Client as LoggingClient
from vertex_runner import AutoExecutor, InstallError, ProcessExecutor, install_wheels
from vertex_server import Fault, VertexServer, parse_filter
from vertex_validate import validate

PROJECT = "test-project"
PARENT = f"projects/{PROJECT}/locations/us-central1"
TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}

ENV_SCRIPT = """\
import json, os, sys
keys = ["CLUSTER_SPEC", "TF_CONFIG", "CLOUD_ML_JOB_ID", "AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR",
        "AIP_TENSORBOARD_LOG_DIR", "TFC_JOB_NAME"]
print("ENV " + json.dumps({k: os.environ.get(k) for k in keys}), flush=True)
print("to stderr", file=sys.stderr, flush=True)
if len(sys.argv) > 1:
    raise SystemExit(int(sys.argv[1]))
"""


def pool(
    machine: str = "n1-standard-4",
    replicas: int = 1,
    image: str = "test/env:1",
    args: tuple[str, ...] = (),
    **machine_spec: Any,
) -> dict[str, Any]:
    """A worker pool in the SDK's dict form (snake_case)."""
    return {
        "machine_spec": {"machine_type": machine, **machine_spec},
        "replica_count": replicas,
        "container_spec": {
            "image_uri": image,
            "command": ["python", "main.py"],
            "args": list(args),
            "env": [{"name": "TFC_JOB_NAME", "value": "env-test$$(HOME)"}],  # $$: Vertex's escape
        },
    }


EXECUTOR = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest"
BUCKET = "tfc-pkg-test"


def package_pool(
    replicas: int = 1,
    uris: tuple[str, ...] = (f"gs://{BUCKET}/tfc-jupyter/packages/abc/mypkg-1.0-py3-none-any.whl",),
    module: str = "mypkg.task",
    image: str = EXECUTOR,
    args: tuple[str, ...] = ("--strategy", "auto"),
) -> dict[str, Any]:
    """A python_package_spec worker pool in the REST (camelCase) form the client sends."""
    return {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": str(replicas),
        "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
        "pythonPackageSpec": {
            "executorImageUri": image,
            "packageUris": list(uris),
            "pythonModule": module,
            "args": list(args),
            "env": [{"name": "TFC_JOB_NAME", "value": "pkg-test"}],
        },
    }


TASK_MODULE = """\
import json, os, sys
import image_tool
keys = ["CLUSTER_SPEC", "TF_CONFIG", "CLOUD_ML_JOB_ID", "AIP_MODEL_DIR", "TFC_JOB_NAME"]
print("ENV " + json.dumps({k: os.environ.get(k) for k in keys}), flush=True)
print("ARGV " + json.dumps(sys.argv[1:]), flush=True)
print("WHERE " + json.dumps({"cwd": os.getcwd(), "module": __file__, "tool": image_tool.NAME}))
print("to stderr", file=sys.stderr, flush=True)
"""


def wheel(
    name: str = "mypkg",
    requires: tuple[str, ...] = (),
    tags: str = "py3-none-any",
    task: str = TASK_MODULE,
) -> tuple[str, bytes]:
    """A pure-Python wheel built by hand: ``(file name, bytes)``."""
    info = f"{name}-1.0.dist-info"
    files = {
        f"{name}/__init__.py": "",
        f"{name}/task.py": task,
        f"{info}/METADATA": "Metadata-Version: 2.1\n"
        f"Name: {name}\nVersion: 1.0\n" + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
        f"Tag: {tags}\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{n},,\n" for n in files) + f"{info}/RECORD,,\n"
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return f"{name}-1.0-{tags}.whl", data.getvalue()


def package_job(name: str, *pools: dict[str, Any], **job_spec: Any) -> CustomJob:
    """A CustomJob from its REST JSON (as the tfc_jupyter client builds it)."""
    body = {"displayName": name, "jobSpec": {"workerPoolSpecs": list(pools), **job_spec}}
    return CustomJob.from_json(json.dumps(body))


@pytest.fixture
def server(vertex_server: VertexServer, tmp_path: Path) -> VertexServer:
    """The test server with a folder image ``test/env:1`` that prints its environment."""
    image = tmp_path / "image"
    image.mkdir()
    (image / "main.py").write_text(ENV_SCRIPT)
    vertex_server.add_image("test/env:1", image)
    return vertex_server


@pytest.fixture
def gcp(server: VertexServer, tmp_path: Path) -> Iterator[GcpServer]:
    """A Cloud Storage server with the bucket ``BUCKET``, known to ``server`` as its storage
    endpoint; ``server`` also gets the executor image ``EXECUTOR`` as a folder with a module."""
    storage = GcpServer(buckets=(BUCKET,)).start()
    server.storage_url = storage.url
    image = tmp_path / "executor"
    image.mkdir()
    (image / "image_tool.py").write_text("NAME = 'from the executor image'\n")
    server.add_image(EXECUTOR, image)
    try:
        yield storage
    finally:
        storage.stop()


def upload(
    gcp: GcpServer, file: tuple[str, bytes], folder: str = "tfc-jupyter/packages/abc"
) -> str:
    """Store a package in the bucket; its gs:// URI."""
    name, data = file
    gcp.put(BUCKET, f"{folder}/{name}", data, "application/octet-stream")
    return f"gs://{BUCKET}/{folder}/{name}"


def by_task(server: VertexServer, job_id: str) -> dict[str, list[Any]]:
    """The job's log entries by task name ("" for the service's own)."""
    out: dict[str, list[Any]] = {}
    for entry in entries(server, job_id):
        out.setdefault(entry.resource.labels.get("task_name", ""), []).append(entry)
    return out


def printed(lines: list[Any], tag: str) -> Any:
    """The JSON a replica printed after ``tag``."""
    return json.loads(
        next(str(e.payload)[len(tag) + 1 :] for e in lines if str(e.payload).startswith(tag + " "))
    )


@pytest.fixture
def sdk(server: VertexServer) -> Iterator[None]:
    """aiplatform initialised against the server (REST, anonymous), restored afterwards."""
    aiplatform.init(
        project=PROJECT,
        location="us-central1",
        api_endpoint=server.url,
        api_transport="rest",
        credentials=AnonymousCredentials(),
        staging_bucket="gs://test-bucket",
    )
    yield
    aiplatform.initializer.global_config.__init__()  # type: ignore[misc]


def client(server: VertexServer) -> JobServiceClient:
    """The GAPIC client over REST (no retries of its own)."""
    return JobServiceClient(
        credentials=AnonymousCredentials(),
        transport="rest",
        client_options={"api_endpoint": server.url},
    )


def wait_job(name: str, c: JobServiceClient, timeout: float = 60) -> Any:
    """Poll the job (every 0.1 s, not the SDK's 5 s) until it ends; bounded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = c.get_custom_job(name=name)
        if job.state.name in TERMINAL:
            return job
        time.sleep(0.1)
    raise AssertionError(f"{name} did not end within {timeout} s")


def entries(server: VertexServer, job_id: str, extra: str = "") -> list[Any]:
    """The job's log entries through the real Cloud Logging client."""
    logging = LoggingClient(
        project=PROJECT,
        credentials=AnonymousCredentials(),
        _use_grpc=False,
        client_options={"api_endpoint": server.url},
    )
    flt = f'resource.type="ml_job" AND resource.labels.job_id="{job_id}"{extra}'
    return list(logging.list_entries(filter_=flt, page_size=2))


def env_of(lines: list[Any]) -> dict[str, Any]:
    """The ENV line a replica printed."""
    text = next(e.payload for e in lines if str(e.payload).startswith("ENV "))
    return json.loads(text[4:])


def test_sdk_submit_get_list(server: VertexServer, sdk: None) -> None:
    job = aiplatform.CustomJob(display_name="sdk-job", worker_pool_specs=[pool()])
    job.submit()
    assert job.resource_name.startswith("projects/") and "/customJobs/" in job.resource_name
    done = wait_job(job.resource_name, client(server))
    assert done.state.name == "JOB_STATE_SUCCEEDED"
    assert done.start_time and done.end_time and done.end_time >= done.start_time
    again = aiplatform.CustomJob.get(job.resource_name)
    assert again.state.name == "JOB_STATE_SUCCEEDED"
    listed = aiplatform.CustomJob.list(filter='display_name="sdk-job"')
    assert [j.resource_name for j in listed] == [job.resource_name]
    assert aiplatform.CustomJob.list(filter='display_name="other"') == []
    states = [e.payload for e in entries(server, job.name) if "task_name" not in e.resource.labels]
    assert states[0] == "Waiting for job to be provisioned." and "completed" in states[-1]


def test_list_pages_and_filters(server: VertexServer) -> None:
    c = client(server)
    body = {"display_name": "paged", "labels": {"team": "ml"}, "job_spec": {}}
    names = []
    for i in range(3):
        job = c.create_custom_job(
            parent=PARENT,
            custom_job={
                **body,
                "job_spec": {"worker_pool_specs": [pool()]},
                "display_name": f"p{i}",
            },
        )
        names.append(job.name)
    pager = c.list_custom_jobs(request={"parent": PARENT, "page_size": 2})
    assert sorted(j.name for j in pager) == sorted(names)
    assert len(server.received("GET", r"customJobs$")) == 2  # two pages, the second by token
    only = c.list_custom_jobs(request={"parent": PARENT, "filter": 'display_name="p1"'})
    assert [j.name for j in only] == [names[1]]
    assert len(list(c.list_custom_jobs(request={"parent": PARENT, "filter": "labels.team=ml"})))
    with pytest.raises(gexc.BadRequest, match="AND filters only"):
        list(c.list_custom_jobs(request={"parent": PARENT, "filter": 'a="1" OR b="2"'}))
    for name in names:
        wait_job(name, c)


def test_replicas_get_vertex_environment_and_logs(server: VertexServer) -> None:
    c = client(server)
    spec = {
        "worker_pool_specs": [pool(), pool(replicas=2), pool(), pool()],
        "base_output_directory": {"output_uri_prefix": "gs://bucket/run/"},
    }
    job = c.create_custom_job(parent=PARENT, custom_job={"display_name": "env", "job_spec": spec})
    assert wait_job(job.name, c).state.name == "JOB_STATE_SUCCEEDED"
    job_id = job.name.rsplit("/", 1)[1]
    by_task: dict[str, list[Any]] = {}
    for entry in entries(server, job_id):
        by_task.setdefault(entry.resource.labels.get("task_name", ""), []).append(entry)
    tasks = ["workerpool0-0", "workerpool1-0", "workerpool1-1", "workerpool2-0", "workerpool3-0"]
    assert sorted(t for t in by_task if t) == tasks
    worker1 = env_of(by_task["workerpool1-1"])
    cluster_spec = json.loads(worker1["CLUSTER_SPEC"])
    assert cluster_spec["task"] == {"type": "workerpool1", "index": 1, "trial": ""}
    assert sorted(cluster_spec["cluster"]) == [
        "workerpool0",
        "workerpool1",
        "workerpool2",
        "workerpool3",
    ]
    tf_config = json.loads(worker1["TF_CONFIG"])
    assert sorted(tf_config["cluster"]) == ["chief", "ps", "worker"]  # no evaluator in cluster
    assert tf_config["task"] == {"type": "worker", "index": 1, "trial": ""}
    evaluator = json.loads(env_of(by_task["workerpool3-0"])["TF_CONFIG"])
    assert evaluator["task"]["type"] == "evaluator"
    assert worker1["CLOUD_ML_JOB_ID"] == job_id
    assert worker1["AIP_MODEL_DIR"] == "gs://bucket/run/model/"
    assert worker1["AIP_CHECKPOINT_DIR"] == "gs://bucket/run/checkpoints/"
    assert worker1["AIP_TENSORBOARD_LOG_DIR"] == "gs://bucket/run/logs/"
    assert worker1["TFC_JOB_NAME"] == "env-test$(HOME)"  # the spec's own env, as Vertex expands it
    stderr = [e for e in by_task["workerpool0-0"] if e.payload == "to stderr"]
    assert stderr and stderr[0].severity == "ERROR"
    one = entries(server, job_id, ' AND resource.labels.task_name="workerpool2-0"')
    assert {e.resource.labels["task_name"] for e in one} == {"workerpool2-0"}


def test_no_aip_dirs_without_base_output_directory(server: VertexServer) -> None:
    c = client(server)
    spec = {"worker_pool_specs": [pool()]}
    job = c.create_custom_job(parent=PARENT, custom_job={"display_name": "e", "job_spec": spec})
    wait_job(job.name, c)
    env = env_of(entries(server, job.name.rsplit("/", 1)[1]))
    assert env["AIP_MODEL_DIR"] is None and env["AIP_TENSORBOARD_LOG_DIR"] is None
    assert env["TF_CONFIG"] is None  # Vertex AI sets TF_CONFIG for distributed jobs only
    assert sorted(json.loads(env["CLUSTER_SPEC"])["cluster"]) == ["workerpool0"]


def test_failed_replica_fails_the_job(server: VertexServer) -> None:
    c = client(server)
    spec = {"worker_pool_specs": [pool(), pool(args=("3",))]}
    job = c.create_custom_job(parent=PARENT, custom_job={"display_name": "f", "job_spec": spec})
    done = wait_job(job.name, c)
    assert done.state.name == "JOB_STATE_FAILED"
    assert "The replica workerpool1-0 exited with a non-zero status of 3" in done.error.message


def test_accepted_then_failed_on_request(server: VertexServer) -> None:
    server.fail_next_job("Unable to pull image test/env:1: manifest unknown")
    c = client(server)
    job = c.create_custom_job(
        parent=PARENT, custom_job={"display_name": "x", "job_spec": {"worker_pool_specs": [pool()]}}
    )
    assert job.state.name == "JOB_STATE_QUEUED"
    done = wait_job(job.name, c)
    assert done.state.name == "JOB_STATE_FAILED" and "manifest unknown" in done.error.message


def test_unknown_image_fails_like_a_failed_pull(server: VertexServer) -> None:
    c = client(server)
    spec = {"worker_pool_specs": [pool(image="nowhere/none:1")]}
    job = c.create_custom_job(parent=PARENT, custom_job={"display_name": "n", "job_spec": spec})
    done = wait_job(job.name, c)
    assert done.state.name == "JOB_STATE_FAILED" and "Unable to pull image" in done.error.message


def test_cancel(server: VertexServer, tmp_path: Path) -> None:
    image = tmp_path / "sleeper"
    image.mkdir()
    (image / "main.py").write_text("import time\nprint('started', flush=True)\ntime.sleep(120)\n")
    server.add_image("test/sleep:1", image)
    c = client(server)
    spec = {"worker_pool_specs": [pool(image="test/sleep:1")]}
    job = c.create_custom_job(parent=PARENT, custom_job={"display_name": "c", "job_spec": spec})
    deadline = time.monotonic() + 30
    while c.get_custom_job(name=job.name).state.name != "JOB_STATE_RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    c.cancel_custom_job(name=job.name)
    done = wait_job(job.name, c, timeout=30)
    assert done.state.name == "JOB_STATE_CANCELLED"
    replica = server.job(job.name).replicas["workerpool0-0"]
    assert replica.poll() is not None  # the process is gone
    with pytest.raises(gexc.BadRequest, match="Cannot cancel"):
        c.cancel_custom_job(name=job.name)
    with pytest.raises(gexc.NotFound):
        c.get_custom_job(name=f"{PARENT}/customJobs/123")


def test_errors_are_google_error_bodies(server: VertexServer) -> None:
    c = client(server)
    with pytest.raises(gexc.BadRequest) as info:
        c.create_custom_job(
            parent=PARENT,
            custom_job={
                "display_name": "bad",
                "job_spec": {"worker_pool_specs": [pool(replicas=2)]},
            },
        )
    assert "job_spec.worker_pool_specs[0].replica_count" in info.value.message
    violations = info.value.details[0]["fieldViolations"]
    assert violations[0]["field"] == "job_spec.worker_pool_specs[0].replica_count"
    request = urllib.request.Request(
        f"{server.url}/v1/{PARENT}/customJobs",
        data=json.dumps(
            {
                "displayName": "x",
                "jobSpec": {
                    "workerPoolSpecs": [
                        {
                            "machineSpec": {
                                "machineType": "n1-standard-4",
                                "acceleratorType": "NVIDIA_X",
                            }
                        }
                    ]
                },
                "surprise": 1,
            }
        ).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as http:
        urllib.request.urlopen(request, timeout=10)
    error = json.loads(http.value.read())["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert "Invalid JSON payload" in error["message"]


def test_faults_then_recovery(server: VertexServer) -> None:
    c = client(server)
    server.inject(Fault.rate_limited(), Fault.unavailable(), Fault.quota(match="POST"))
    with pytest.raises(gexc.TooManyRequests):
        list(c.list_custom_jobs(parent=PARENT))
    with pytest.raises(gexc.ServiceUnavailable):
        list(c.list_custom_jobs(parent=PARENT))
    assert list(c.list_custom_jobs(parent=PARENT)) == []  # the POST-only fault waits
    with pytest.raises(gexc.TooManyRequests, match="quota"):
        c.create_custom_job(
            parent=PARENT,
            custom_job={"display_name": "q", "job_spec": {"worker_pool_specs": [pool()]}},
        )
    server.inject(Fault.unauthenticated(), Fault.permission_denied(), Fault.api_disabled())
    # A 401 makes google-auth refresh the credentials and retry; anonymous ones cannot refresh.
    with pytest.raises(GoogleAuthError, match="cannot be refreshed"):
        c.get_custom_job(name=f"{PARENT}/customJobs/1")
    for _ in range(2):
        with pytest.raises(gexc.Forbidden):  # HTTP 403 (PermissionDenied over gRPC)
            c.get_custom_job(name=f"{PARENT}/customJobs/1")
    assert server.faults == []


def test_slow_response_still_does_the_work(server: VertexServer) -> None:
    import requests

    c = client(server)
    server.inject(Fault.slow(2.0, match=r"POST .*customJobs$"))
    started = time.monotonic()
    with pytest.raises(requests.exceptions.ReadTimeout):
        c.create_custom_job(
            parent=PARENT,
            custom_job={"display_name": "slow", "job_spec": {"worker_pool_specs": [pool()]}},
            timeout=0.5,
        )
    assert time.monotonic() - started < 2.0
    deadline = time.monotonic() + 10
    while not server.jobs:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    created = next(iter(server.jobs.values()))
    assert created.resource["displayName"] == "slow"
    wait_job(created.resource["name"], c)


@pytest.mark.parametrize(
    ("machine_spec", "field"),
    [
        (
            {
                "machineType": "n1-standard-4",
                "acceleratorType": "NVIDIA_TESLA_T4",
                "acceleratorCount": 3,
            },
            "accelerator_count",
        ),
        (
            {"machineType": "n1-standard-4", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1},
            "accelerator_type",
        ),
        (
            {
                "machineType": "a2-highgpu-2g",
                "acceleratorType": "NVIDIA_TESLA_A100",
                "acceleratorCount": 1,
            },
            "accelerator_count",
        ),
        ({"machineType": "n1-standard-5"}, "machine_type"),
        ({"machineType": "n1-standard-4", "acceleratorCount": 2}, "accelerator_type"),
        (
            {"machineType": "cloud-tpu", "acceleratorType": "TPU_V3", "acceleratorCount": 4},
            "accelerator_type",
        ),
        (
            {
                "machineType": "cloud-tpu",
                "acceleratorType": "NVIDIA_TESLA_T4",
                "acceleratorCount": 8,
            },
            "accelerator_type",
        ),
        ({"machineType": "ct5lp-hightpu-4t", "tpuTopology": "2x4"}, "tpu_topology"),
        (
            {
                "machineType": "a3-ultragpu-8g",
                "acceleratorType": "NVIDIA_H100_80GB",
                "acceleratorCount": 8,
            },
            "accelerator_count",
        ),
        (
            {
                "machineType": "a4-highgpu-8g",
                "acceleratorType": "NVIDIA_B200",
                "acceleratorCount": 4,
            },
            "accelerator_count",
        ),
        (
            {
                "machineType": "ct5lp-hightpu-1t",
                "tpuTopology": "1x1",
                "acceleratorType": "TPU_V5_LITEPOD",
                "acceleratorCount": 1,
            },
            "accelerator_type",
        ),
        (
            {"machineType": "n1-standard-8", "acceleratorType": "TPU_V2", "acceleratorCount": 8},
            "accelerator_type",
        ),
    ],
)
def test_machine_shapes_vertex_refuses(machine_spec: dict[str, Any], field: str) -> None:
    body = {
        "displayName": "x",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": machine_spec,
                    "replicaCount": "1",
                    "containerSpec": {"imageUri": "i"},
                }
            ]
        },
    }
    problems = validate(body)
    assert problems and problems[0][0].endswith(field), problems


@pytest.mark.parametrize(
    "machine_spec",
    [
        {
            "machineType": "n1-standard-8",
            "acceleratorType": "NVIDIA_TESLA_T4",
            "acceleratorCount": 4,
        },
        {
            "machineType": "a2-highgpu-2g",
            "acceleratorType": "NVIDIA_TESLA_A100",
            "acceleratorCount": 2,
        },
        {"machineType": "g2-standard-24", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 2},
        {
            "machineType": "a3-highgpu-8g",
            "acceleratorType": "NVIDIA_H100_80GB",
            "acceleratorCount": 8,
        },
        {"machineType": "cloud-tpu", "acceleratorType": "TPU_V2", "acceleratorCount": 8},
        {"machineType": "ct5lp-hightpu-8t", "tpuTopology": "2x4"},
        {
            "machineType": "a3-highgpu-2g",
            "acceleratorType": "NVIDIA_H100_80GB",
            "acceleratorCount": 2,
        },
        {
            "machineType": "a3-megagpu-8g",
            "acceleratorType": "NVIDIA_H100_MEGA_80GB",
            "acceleratorCount": 8,
        },
        {
            "machineType": "a3-ultragpu-8g",
            "acceleratorType": "NVIDIA_H200_141GB",
            "acceleratorCount": 8,
        },
        {"machineType": "a4-highgpu-8g", "acceleratorType": "NVIDIA_B200", "acceleratorCount": 8},
    ],
)
def test_machine_shapes_vertex_accepts(machine_spec: dict[str, Any]) -> None:
    body = {
        "displayName": "x",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": machine_spec,
                    "replicaCount": "1",
                    "containerSpec": {"imageUri": "i"},
                }
            ]
        },
    }
    assert validate(body) == []


def test_job_level_rules() -> None:
    one = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": "1",
        "containerSpec": {"imageUri": "i"},
    }
    tpu = {
        "machineSpec": {
            "machineType": "cloud-tpu",
            "acceleratorType": "TPU_V3",
            "acceleratorCount": 8,
        },
        "replicaCount": "1",
        "containerSpec": {"imageUri": "i"},
    }

    def fields(**job: Any) -> list[str]:
        body = {
            "displayName": job.pop("displayName", "x"),
            "labels": job.pop("labels", {}),
            "jobSpec": {"workerPoolSpecs": [one], **job},
        }
        return [f for f, _ in validate(body)]

    assert fields() == []
    assert fields(workerPoolSpecs=[{}, one]) == ["job_spec.worker_pool_specs[0]"]
    assert fields(workerPoolSpecs=[one, {}, one]) == []  # an empty pool keeps a position
    assert fields(workerPoolSpecs=[tpu, one]) == ["job_spec.worker_pool_specs"]
    assert fields(workerPoolSpecs=[one, {**tpu}])[0] == "job_spec.worker_pool_specs[1].machine_spec"
    assert fields(labels={"Team": "x"}) == ["labels['Team']"]
    assert fields(labels={"team": "X Y"}) == ["labels['team']"]
    assert fields(labels={f"k{i}": "v" for i in range(65)}) == ["labels"]
    assert fields(displayName="") == ["display_name"]
    assert fields(tensorboard="projects/p/locations/us-central1/tensorboards/1") == [
        "job_spec.base_output_directory",
        "job_spec.service_account",
    ]
    assert fields(network="default") == ["job_spec.network"]
    assert fields(serviceAccount="me@example.com") == ["job_spec.service_account"]
    with_env = {**one, "containerSpec": {"imageUri": "i", "env": [{"name": "MODE", "value": "x"}]}}
    assert fields(workerPoolSpecs=[with_env]) == []
    bad_env = {**one, "containerSpec": {"imageUri": "i", "env": [{"name": "1 X", "value": "x"}]}}
    assert fields(workerPoolSpecs=[bad_env]) == [
        "job_spec.worker_pool_specs[0].container_spec.env[0].name"
    ]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"executorImageUri": ""}, "python_package_spec.executor_image_uri"),
        ({"executorImageUri": "gcr.io/me/trainer:1"}, "python_package_spec.executor_image_uri"),
        (
            {"executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:1"},
            "python_package_spec.executor_image_uri",
        ),
        ({"packageUris": []}, "python_package_spec.package_uris"),
        ({"packageUris": ["https://example.com/p.whl"]}, "python_package_spec.package_uris[0]"),
        ({"packageUris": ["gs://bucket-only"]}, "python_package_spec.package_uris[0]"),
        ({"pythonModule": ""}, "python_package_spec.python_module"),
        ({"pythonModule": "my-pkg.task"}, "python_package_spec.python_module"),
        ({"env": [{"name": "1BAD", "value": "x"}]}, "python_package_spec.env[0].name"),
    ],
)
def test_package_specs_vertex_refuses(
    server: VertexServer, change: dict[str, Any], field: str
) -> None:
    spec = package_pool()
    spec["pythonPackageSpec"].update(change)
    with pytest.raises(gexc.BadRequest) as info:
        client(server).create_custom_job(parent=PARENT, custom_job=package_job("p", spec))
    at = f"job_spec.worker_pool_specs[0].{field}"
    assert f"Field: {at}; Message:" in info.value.message
    assert info.value.details[0]["fieldViolations"][0]["field"] == at
    assert not server.jobs


def test_package_spec_rules() -> None:
    def fields(*pools: dict[str, Any]) -> list[str]:
        return [f for f, _ in validate({"displayName": "x", "jobSpec": {"workerPoolSpecs": pools}})]

    assert fields(package_pool()) == []
    assert fields(package_pool(), package_pool(replicas=2)) == []
    for region in ("europe", "asia"):
        assert fields(package_pool(image=EXECUTOR.replace("us-", f"{region}-"))) == []
    both = {**package_pool(), "containerSpec": {"imageUri": "i"}}
    assert fields(both) == ["job_spec.worker_pool_specs[0].python_package_spec"]
    neither = {k: v for k, v in package_pool().items() if k != "pythonPackageSpec"}
    assert fields(neither) == ["job_spec.worker_pool_specs[0].container_spec"]
    bad_env = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": "1",
        "containerSpec": {"imageUri": "i", "env": [{"name": "A-B"}, {"value": "v"}]},
    }
    assert fields(bad_env) == [
        "job_spec.worker_pool_specs[0].container_spec.env[0].name",
        "job_spec.worker_pool_specs[0].container_spec.env[1].name",
    ]


def test_package_job_runs_to_success(server: VertexServer, gcp: GcpServer) -> None:
    # Requirements this interpreter has (and an extra's, which pip skips) install nothing more.
    uri = upload(gcp, wheel(requires=("packaging>=20", 'nothing-here>=1; extra == "dev"')))
    c = client(server)
    spec = package_pool(uris=(uri,), args=("--strategy", "auto", "--source-map", "m.json"))
    job = c.create_custom_job(parent=PARENT, custom_job=package_job("pkg", spec))
    done = wait_job(job.name, c)
    job_id = job.name.rsplit("/", 1)[1]
    lines = by_task(server, job_id)
    assert done.state.name == "JOB_STATE_SUCCEEDED", (done.error.message, lines)
    assert sorted(t for t in lines if t) == ["workerpool0-0"]
    chief = lines["workerpool0-0"]
    texts = [str(e.payload) for e in chief]
    assert texts[:3] == [
        f"Downloading the package: {uri}",
        f"Installing the package: {uri}",
        "Running command: python3 -m mypkg.task --strategy auto --source-map m.json",
    ]
    assert printed(chief, "ARGV") == ["--strategy", "auto", "--source-map", "m.json"]
    env = printed(chief, "ENV")
    assert env["CLOUD_ML_JOB_ID"] == job_id and env["TFC_JOB_NAME"] == "pkg-test"
    assert json.loads(env["CLUSTER_SPEC"])["task"] == {
        "type": "workerpool0",
        "index": 0,
        "trial": "",
    }
    assert env["TF_CONFIG"] is None and env["AIP_MODEL_DIR"] is None
    where = printed(chief, "WHERE")
    assert where["tool"] == "from the executor image"  # the image folder is on PYTHONPATH too
    assert Path(where["cwd"]).name == "work" and Path(where["module"]).parent.parent.name == "site"
    assert Path(where["cwd"]).parent == Path(where["module"]).parent.parent.parent  # one replica's
    assert [e.severity for e in chief if e.payload == "to stderr"] == ["ERROR"]
    got = gcp.received("GET", r"/storage/v1/b/")
    assert [(r.path, r.query) for r in got] == [
        (
            f"/storage/v1/b/{BUCKET}/o/tfc-jupyter%2Fpackages%2Fabc%2Fmypkg-1.0-py3-none-any.whl",
            {"alt": ["media"]},
        )
    ]
    assert not Path(where["cwd"]).exists()  # the replica's folders go with the job


def test_two_replica_package_job_gets_tf_config(server: VertexServer, gcp: GcpServer) -> None:
    uri = upload(gcp, wheel())
    c = client(server)
    spec = {"baseOutputDirectory": {"outputUriPrefix": "gs://bucket/run"}}
    body = package_job("pkg2", package_pool(uris=(uri,)), package_pool(uris=(uri,)), **spec)
    job = c.create_custom_job(parent=PARENT, custom_job=body)
    done = wait_job(job.name, c)
    lines = by_task(server, job.name.rsplit("/", 1)[1])
    assert done.state.name == "JOB_STATE_SUCCEEDED", (done.error.message, lines)
    chief, worker = printed(lines["workerpool0-0"], "ENV"), printed(lines["workerpool1-0"], "ENV")
    for env, role in ((chief, "chief"), (worker, "worker")):
        tf_config = json.loads(env["TF_CONFIG"])
        assert sorted(tf_config["cluster"]) == ["chief", "worker"]
        assert tf_config["task"] == {"type": role, "index": 0, "trial": ""}
        assert env["AIP_MODEL_DIR"] == "gs://bucket/run/model/"
    assert json.loads(worker["CLUSTER_SPEC"])["task"]["type"] == "workerpool1"
    folders = {printed(lines[t], "WHERE")["cwd"] for t in ("workerpool0-0", "workerpool1-0")}
    assert len(folders) == 2  # each replica installs into its own folder
    assert len(gcp.received("GET", r"/storage/v1/b/")) == 2  # each replica downloads


def test_missing_package_fails_the_job_naming_it(server: VertexServer, gcp: GcpServer) -> None:
    uri = f"gs://{BUCKET}/tfc-jupyter/packages/none/mypkg-1.0-py3-none-any.whl"
    c = client(server)
    job = c.create_custom_job(
        parent=PARENT, custom_job=package_job("gone", package_pool(uris=(uri,)))
    )
    done = wait_job(job.name, c)
    assert done.state.name == "JOB_STATE_FAILED"
    assert "The replica workerpool0-0 exited with a non-zero status of 1" in done.error.message
    assert uri in done.error.message and "No such object" in done.error.message
    lines = by_task(server, job.name.rsplit("/", 1)[1])
    errors = [str(e.payload) for e in lines["workerpool0-0"] if e.severity == "ERROR"]
    assert errors == [
        f"Unable to download {uri}: 404 No such object: {BUCKET}/{uri.split('/', 3)[3]}"
    ]
    assert any(uri in str(e.payload) for e in lines[""] if e.severity == "ERROR")


def test_package_job_without_a_storage_endpoint_fails(server: VertexServer) -> None:
    server.add_image(EXECUTOR, Path(__file__).parent)
    c = client(server)
    job = c.create_custom_job(parent=PARENT, custom_job=package_job("nowhere", package_pool()))
    done = wait_job(job.name, c)
    assert done.state.name == "JOB_STATE_FAILED" and "storage_url" in done.error.message


@pytest.mark.parametrize(
    ("package", "why"),
    [
        (wheel(tags="cp311-cp311-manylinux_2_17_x86_64"), "not a pure Python wheel"),
        (wheel(requires=("surely-not-installed-xyz>=1",)), "surely-not-installed-xyz>=1"),
        (wheel(requires=("packaging>=999",)), "packaging>=999"),
        (("mypkg-1.0.tar.gz", b"sdist"), "pure wheels"),
    ],
)
def test_packages_this_server_cannot_install_fail_the_job(
    server: VertexServer, gcp: GcpServer, package: tuple[str, bytes], why: str
) -> None:
    uri = upload(gcp, package)
    c = client(server)
    job = c.create_custom_job(
        parent=PARENT, custom_job=package_job("bad", package_pool(uris=(uri,)))
    )
    done = wait_job(job.name, c)
    assert done.state.name == "JOB_STATE_FAILED" and why in done.error.message
    assert "workerpool0-0 exited with a non-zero status of 1" in done.error.message


def test_unregistered_executor_image_fails_like_a_failed_pull(
    server: VertexServer, gcp: GcpServer
) -> None:
    uri = upload(gcp, wheel())
    image = EXECUTOR.replace("tf-cpu.2-17.py310", "tf-gpu.2-17.py310")
    spec = package_pool(uris=(uri,), image=image)
    c = client(server)
    server.executor = AutoExecutor(ProcessExecutor(server.images), None)  # no Docker to pull
    job = c.create_custom_job(parent=PARENT, custom_job=package_job("img", spec))
    done = wait_job(job.name, c)
    assert (
        done.state.name == "JOB_STATE_FAILED"
        and f"Unable to pull image {image}" in done.error.message
    )


@pytest.mark.slow
def test_package_job_in_docker_runs_in_the_executor_image(docker_client: Any) -> None:
    """The Docker route: the unpacked wheel copied into a container of the executor image (the
    small offline Debian image tagged as a prebuilt training image for this test). Its
    ``Requires-Dist`` are checked against what that image's Python has, markers evaluated as
    that Python would: a requirement it lacks fails the job as a replica's setup fails."""
    import uuid

    from dockerinfra import BASE_IMAGE

    try:
        base = docker_client.images.get(BASE_IMAGE)
    except Exception:
        pytest.skip(f"the engine has no {BASE_IMAGE} (scripts/docker_services.sh makes it)")
    repository = f"us-docker.pkg.dev/vertex-ai/training/tfc-test-pkg-{uuid.uuid4().hex[:8]}"
    base.tag(repository, "latest")
    task = TASK_MODULE.replace("import image_tool\n", "").replace("image_tool.NAME", "None")
    try:
        with GcpServer(buckets=(BUCKET,)) as gcp, VertexServer(executor="docker") as server:
            server.storage_url = gcp.url
            # a requirement whose marker is false for the image's Python 3 needs nothing
            uri = upload(gcp, wheel(task=task, requires=("absent-pkg; python_version < '3'",)))
            c = client(server)
            spec = package_pool(uris=(uri,), image=f"{repository}:latest")
            job = c.create_custom_job(parent=PARENT, custom_job=package_job("dock", spec))
            done = wait_job(job.name, c, timeout=120)
            job_id = job.name.rsplit("/", 1)[1]
            lines = by_task(server, job_id)
            assert done.state.name == "JOB_STATE_SUCCEEDED", (done.error.message, lines)
            assert {r.kind for r in server.job(job_id).replicas.values()} == {"docker"}
            chief = lines["workerpool0-0"]
            assert printed(chief, "ARGV") == ["--strategy", "auto"]
            env = printed(chief, "ENV")
            assert env["CLOUD_ML_JOB_ID"] == job_id and env["TFC_JOB_NAME"] == "pkg-test"
            assert printed(chief, "WHERE")["module"] == "/tfc-packages/mypkg/task.py"
            lacking = upload(gcp, wheel("needy", task=task, requires=("absent-pkg>=1",)))
            spec = package_pool(uris=(lacking,), image=f"{repository}:latest", module="needy.task")
            job = c.create_custom_job(parent=PARENT, custom_job=package_job("lack", spec))
            done = wait_job(job.name, c, timeout=120)
            assert done.state.name == "JOB_STATE_FAILED"
            assert "requires absent-pkg>=1, not installed in the executor image" in (
                done.error.message
            )
    finally:
        docker_client.images.remove(f"{repository}:latest")


def test_install_wheels_unpacks_pure_wheels_only(tmp_path: Path) -> None:
    def write(file: tuple[str, bytes]) -> Path:
        path = tmp_path / file[0]
        path.write_bytes(file[1])
        return path

    dep = write(wheel("helper", task="VALUE = 1\n"))
    main = write(wheel(requires=("helper==1.0",)))  # met by the other wheel given
    install_wheels([main, dep], tmp_path / "site")
    assert (tmp_path / "site" / "mypkg" / "task.py").read_text() == TASK_MODULE
    assert (tmp_path / "site" / "helper-1.0.dist-info" / "METADATA").exists()
    with pytest.raises(InstallError, match="helper==2"):
        install_wheels([write(wheel(requires=("helper==2",))), dep], tmp_path / "site2")
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../outside.py", "")
    with pytest.raises(InstallError, match="outside its folder"):
        install_wheels([write(("evil-1.0-py3-none-any.whl", evil.getvalue()))], tmp_path / "s3")
    assert not (tmp_path / "outside.py").exists()


def test_filter_parser() -> None:
    terms = parse_filter('resource.type="ml_job" AND timestamp>="2024-01-01T00:00:00Z" AND x:y')
    assert terms == [
        ("resource.type", "=", "ml_job"),
        ("timestamp", ">=", "2024-01-01T00:00:00Z"),
        ("x", ":", "y"),
    ]


def test_standalone_server_serves_and_stops(tmp_path: Path) -> None:
    here = Path(__file__).resolve().parent
    proc = subprocess.Popen(
        [
            sys.executable,
            str(here / "vertex_server.py"),
            "--executor",
            "process",
            "--storage-url",
            "http://127.0.0.1:9",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded by the test timeout
        url = line.split(" on ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:")
        faults = json.dumps([{"status": "UNAVAILABLE", "message": "down"}]).encode()
        urllib.request.urlopen(
            urllib.request.Request(f"{url}/_control/faults", data=faults, method="POST"), timeout=10
        )
        with pytest.raises(urllib.error.HTTPError) as http:
            urllib.request.urlopen(f"{url}/v1/{PARENT}/customJobs", timeout=10)
        assert http.value.code == 503
        with urllib.request.urlopen(f"{url}/_control/requests", timeout=10) as reply:
            assert len(json.loads(reply.read())["requests"]) == 3  # this one too
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
