"""Vertex AI without Docker: a notebook job by the package route, end to end.

No Docker engine answers (``DOCKER_HOST`` points at a dead socket); the build bucket is the fake
Cloud Storage of ``tests/gcp_server.py``, Vertex AI is ``tests/vertex_server.py``. The plan takes
the package route, the launch uploads the wheel through our storage client, the Vertex server
validates the ``pythonPackageSpec`` request, downloads the wheel, installs it for each replica
on the prebuilt image (here: a registered folder, run as processes with this interpreter, whose
TensorFlow the mapped image name stands for) and runs it; the logs come back as for any job.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from gcp_server import GcpServer
from jobutil import plan_for, write_notebook
from vertex_server import VertexServer, unsigned

from tfc_jupyter.backends.vertex.backend import stop_watcher
from tfc_jupyter.image import Progress, reporting
from tfc_jupyter.image.names import local_tensorflow_version
from tfc_jupyter.jobs import Job, launch, store_for
from tfc_jupyter.store.records import JobState

pytestmark = pytest.mark.slow

BUCKET = "tfc-package-builds"
MINOR = ".".join((local_tensorflow_version() or "0.0").split(".")[:2])
EXECUTOR = f"us-docker.pkg.dev/vertex-ai/training/tf-cpu.{MINOR.replace('.', '-')}.py311:latest"
FLAGS = f"--backend vertex --project my-proj-1 --build-bucket {BUCKET}"
CELL = """\
%%tfc_run
import os
import tensorflow as tf
rows = open('data.csv').read().split()
print('rows', rows, 'job', os.environ.get('CLOUD_ML_JOB_ID'))
print('sum', float(tf.reduce_sum(tf.constant([1.0, 2.0]))))"""


@contextlib.contextmanager
def package_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, buckets: tuple[str, ...] = (BUCKET,)
) -> Iterator[tuple[GcpServer, VertexServer]]:
    """The test Cloud Storage and Vertex AI servers, no Docker engine, the prebuilt image a
    registered folder, and the settings that point the product at them."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with GcpServer(buckets=buckets) as gcs, VertexServer(executor="process") as vertex:
        vertex.storage_url = gcs.url
        image = tmp_path / "prebuilt"
        image.mkdir()
        vertex.add_image(EXECUTOR, image)
        for name, value in {
            "TFC_VERTEX_ENDPOINT": vertex.url,
            "TFC_STORAGE_ENDPOINT": gcs.url,
            "TFC_CLOUDBUILD_ENDPOINT": gcs.url,
            "TFC_PREBUILT_IMAGES": f"{MINOR}={EXECUTOR}",
            "TFC_VERTEX_POLL": "0.2",
            "TFC_VERTEX_DRAIN": "1",
            "TFC_VERTEX_LOG_READS": "600",
        }.items():
            monkeypatch.setenv(name, value)
        yield gcs, vertex


@pytest.fixture
def servers(
    tfc_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[GcpServer, VertexServer]]:
    with package_servers(tmp_path, monkeypatch) as both:
        yield both


def _launch(nb: Path) -> tuple[Job, list[Progress]]:
    events: list[Progress] = []
    with reporting(events.append):
        job = launch(plan_for(nb, FLAGS), store=store_for(Path(os.environ["TFC_JUPYTER_HOME"])))
    return job, events


def test_a_notebook_runs_by_the_package_route_with_no_docker(
    servers: tuple[GcpServer, VertexServer], tmp_path: Path
) -> None:
    gcs, _ = servers
    (tmp_path / "data.csv").write_text("a\nb\n")
    nb = write_notebook(tmp_path / "train.ipynb", CELL)
    plan = plan_for(nb, FLAGS)
    assert plan.route is not None and plan.route.kind == "package", plan.route
    job, events = _launch(nb)
    try:
        record = job.wait(timeout=120)
    finally:
        stop_watcher(job.record())
    assert record.state is JobState.SUCCEEDED, (record.error, job.logs())
    logs = job.logs("chief")
    assert "rows ['a', 'b'] job" in logs and "sum 3.0" in logs  # data file and TF in the job
    assert record.handle["image"] == EXECUTOR
    assert record.handle["image_build"] == {"package": plan.package_uri, "uploaded": True}
    assert any("uploading" in e.message for e in events)
    # The request Vertex AI was sent is the dry run's.
    sent = json.loads((Path(record.job_dir) / "vertex_request.json").read_text())
    assert unsigned(sent) == plan.request()["body"]  # and the report key, made at launch
    # The wheel in the bucket is the plan's, byte for byte.
    assert plan.package is not None
    stored = gcs.object(BUCKET, plan.package.object_name())
    assert stored is not None and stored.data == plan.package.data

    # Unchanged: the same wheel is found in the bucket, not uploaded again.
    again, events = _launch(nb)
    try:
        assert again.wait(timeout=120).state is JobState.SUCCEEDED
    finally:
        stop_watcher(again.record())
    assert again.record().handle["image_build"]["uploaded"] is False
    assert any("is there already" in e.message for e in events)
