"""Cloud Build when no Docker engine answers: the real client path over HTTP, nothing patched.

Our code sees no engine (``DOCKER_HOST`` points at a dead socket) and talks to
``tests/gcp_server.py`` (``TFC_CLOUDBUILD_ENDPOINT``), which speaks Cloud Storage's JSON API and
Cloud Build's v1 API. Builds there are validated only (fast), except in the Docker test, where the
server builds with the real engine (its own client, made before ``DOCKER_HOST`` moved) and pushes
to the local registry.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from dockerinfra import BASE_IMAGE
from gcp_runner import dockerfile_instructions
from gcp_server import GcpServer, api_disabled, permission_denied, registry_denied, storage_denied
from jobutil import plan_for, write_notebook
from vertex_server import Fault, VertexServer

from tfc_jupyter.backends.vertex import cloudbuild
from tfc_jupyter.backends.vertex.backend import VertexBackend, cloud_build, stop_watcher
from tfc_jupyter.errors import BackendError, SpecError, TfcError
from tfc_jupyter.image import BuildError, Progress, ensure_image, reporting
from tfc_jupyter.jobs import launch, store_for
from tfc_jupyter.planner.plan import Plan
from tfc_jupyter.store.records import JobState

ROOT = Path(__file__).resolve().parents[1]
BUCKET = "tfc-test-builds"
SECRET = "sk-planted-secret-0123456789"
CREATE = r"^/v1/projects/[^/]+(/locations/[^/]+)?/builds$"
UPLOAD = r"^/upload/storage/v1/b/"


@pytest.fixture
def no_engine(tfc_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Our code finds no Docker engine."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")


def point_at(server: GcpServer, monkeypatch: pytest.MonkeyPatch, registry: str) -> None:
    """Our Cloud Build client at the server, fast polls, short retries; images to ``registry``."""
    for name, value in {
        "TFC_CLOUDBUILD_ENDPOINT": server.url,
        "TFC_CLOUDBUILD_POLL": "0.05",
        "TFC_CLOUDBUILD_BACKOFF": "0.05",
        "TFC_CLOUDBUILD_RETRY_TOTAL": "10",
        "TFC_CLOUDBUILD_TIMEOUT": "10",
        "TFC_REGISTRY": f"{registry}/tfc-tests",
    }.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def gcp(no_engine: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[GcpServer]:
    """The server, validating builds and serving as the registry of what it "pushed"."""
    server = GcpServer(buckets=(BUCKET,)).start()
    point_at(server, monkeypatch, server.host)
    try:
        yield server
    finally:
        server.stop()


def project(folder: Path, body: str = "") -> Path:
    """A notebook folder with a data file and planted secrets; the body is unique per test, so
    its image is new to the (long-lived) registry."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.csv").write_text("x,y\n1,2\n")
    (folder / ".env").write_text(f"API_KEY={SECRET}\n")
    (folder / "deploy.pem").write_text(f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n")
    (folder / "sa.json").write_text(
        json.dumps({"type": "service_account", "private_key": SECRET, "client_email": "a@b"})
    )
    body = body or f"print('hello from Cloud Build', {uuid.uuid4().hex!r})"
    return write_notebook(folder / "job.ipynb", "import os", f"%%tfc_run\n{body}")


def flags(bucket: str = BUCKET, extra: str = "") -> str:
    """Vertex AI job flags with a build bucket (and the small offline base image as parent)."""
    return (
        f"--backend vertex --project test-project --build-bucket {bucket} --include . "
        f"--parent-image {BASE_IMAGE} {extra}"
    ).strip()


def build(plan: Plan) -> tuple[Any, list[Progress]]:
    """ensure_image(push=True, remote=cloud_build) with the progress events it reported."""
    events: list[Progress] = []
    with reporting(events.append):
        result = ensure_image(plan, push=True, remote=cloud_build)
    return result, events


def uploads(server: GcpServer) -> list[Any]:
    """Upload requests the server answered 200."""
    return [r for r in server.received("POST", UPLOAD) if r.answer == 200]


def creates(server: GcpServer) -> list[Any]:
    """Build-creating requests the server answered 200."""
    return [r for r in server.received("POST", CREATE) if r.answer == 200]


def check_tarball(server: GcpServer, plan: Plan) -> None:
    """The uploaded tarball is exactly the build context, and no planted secret is in it."""
    context = plan.context
    obj = server.object(BUCKET, f"tfc-jupyter/{context.tag}.tar.gz")
    assert obj is not None, sorted(server.objects[BUCKET])
    tar = gzip.decompress(obj.data)
    assert tar == context.tar_bytes()  # byte for byte
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        names = set(archive.getnames())
    assert names == {"Dockerfile"} | {e.arcname for e in context.entries}
    assert "app/data.csv" in names and "code/script.py" in names
    assert not {"app/.env", "app/deploy.pem", "app/sa.json"} & names
    assert SECRET.encode() not in tar
    assert {p for p, _ in context.left_out} >= {".env", "deploy.pem", "sa.json"}


# ------------------------------------------------------------------------------ the path
def test_builds_with_cloud_build_when_no_engine_answers(gcp: GcpServer, tmp_path: Path) -> None:
    nb = project(tmp_path / "nb")
    plan = plan_for(nb, flags())
    result, events = build(plan)
    assert (result.uri, result.built, result.pushed) == (plan.image_uri, True, True)
    assert result.uri.startswith(f"{gcp.host}/tfc-tests/job:")
    check_tarball(gcp, plan)

    (create,) = creates(gcp)
    body = create.body
    tag = plan.image_uri.rsplit(":", 1)[1]
    assert body["source"] == {
        "storageSource": {
            "bucket": BUCKET,
            "object": f"tfc-jupyter/{tag}.tar.gz",
            "generation": str(gcp.object(BUCKET, f"tfc-jupyter/{tag}.tar.gz").generation),  # type: ignore[union-attr]
        }
    }
    (step,) = body["steps"]
    assert step["name"] == "gcr.io/cloud-builders/docker"
    assert step["args"][:3] == ["build", "-t", plan.image_uri] and step["args"][-1] == "."
    assert body["images"] == [plan.image_uri]
    assert body["timeout"] == "3600s" and body["logsBucket"] == f"gs://{BUCKET}"

    (run,) = gcp.builds.values()
    assert run.status() == "SUCCESS" and run.mode == "validate"
    assert "the Dockerfile is validated against the context, not run" in run.log_text()
    assert gcp.images[plan.image_uri.split("/", 1)[1]]  # "pushed" to the server's registry
    log = gcp.object(BUCKET, f"log-{run.resource['id']}.txt")
    assert log is not None and log.data.decode().rstrip().endswith("DONE")

    steps = [e for e in events if e.phase == "build" and e.total]
    total = len(dockerfile_instructions(plan.context.dockerfile))
    assert [e.step for e in steps] == list(range(1, total + 1)), steps
    assert all(e.total == total for e in steps)
    assert [e.phase for e in events][-1] == "done" and any(e.phase == "push" for e in events)
    assert "built and pushed by Cloud Build" in events[-1].message
    assert result.steps[0][0].startswith("FROM ")
    # The log was read from growing offsets while the build ran, not once at the end.
    reads = gcp.received("GET", r"/o/log-")
    assert len(reads) >= 2

    # Resubmitting the unchanged notebook: found in the registry, nothing uploaded or built.
    again, events = build(plan_for(nb, flags()))
    assert (again.uri, again.built, again.pushed) == (plan.image_uri, False, False)
    assert len(uploads(gcp)) == 1 and len(creates(gcp)) == 1
    assert "in the registry already" in events[-1].message


@pytest.mark.slow
@pytest.mark.timeout(600)  # a fresh registry receives the base image's layers once
def test_the_server_builds_and_pushes_with_the_real_engine(
    tfc_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    docker_client: Any,
    registry: str,
    tf_parent_image: str,  # makes the base image too, when the engine lacks it
) -> None:
    server = GcpServer(buckets=(BUCKET,), docker=docker_client).start()
    try:
        monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")  # ours only
        point_at(server, monkeypatch, registry)
        nb = project(tmp_path / "nb")
        plan = plan_for(nb, flags())
        started = time.monotonic()
        result, events = build(plan)
        seconds = time.monotonic() - started
        assert (result.built, result.pushed) == (True, True)
        (run,) = server.builds.values()
        assert run.mode == "docker" and run.status() == "SUCCESS"
        assert "steps run with the local Docker engine" in run.log_text()
        check_tarball(server, plan)

        # In the registry, built from exactly this content.
        name, tag = plan.image_uri.split("/", 1)[1].rsplit(":", 1)
        request = urllib.request.Request(
            f"http://{registry}/v2/{name}/manifests/{tag}",
            method="HEAD",
            headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"},
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.status == 200
        image = docker_client.images.get(plan.image_uri)
        assert image.labels["org.tfc-jupyter.content"] == tag
        assert any("Step 1/" in e.message or "step 1/" in e.message for e in events)
        assert run.resource["results"]["images"][0]["digest"].startswith("sha256:")

        again, _ = build(plan_for(nb, flags()))
        assert (again.built, again.pushed) == (False, False)
        assert len(creates(server)) == 1
        print(f"cloud build through the real engine: {seconds:.1f} s")
    finally:
        server.stop()


@pytest.mark.slow
def test_a_vertex_job_launches_with_its_image_from_cloud_build(
    gcp: GcpServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The Vertex backend on a machine with no engine: check passes with a bucket, submit builds
    through Cloud Build, the job runs the built image (as processes of a folder for that URI)."""
    nb = project(tmp_path / "nb", "print('trained on', os.environ.get('CLOUD_ML_JOB_ID'))")
    with VertexServer(executor="process") as vertex:
        for name, value in {
            "TFC_VERTEX_ENDPOINT": vertex.url,
            "TFC_VERTEX_POLL": "0.2",
            "TFC_VERTEX_DRAIN": "1",
            "TFC_VERTEX_LOG_READS": "600",
        }.items():
            monkeypatch.setenv(name, value)
        plan = plan_for(nb, flags())  # the settings are read once, with the plan
        folder = tmp_path / "image"
        folder.mkdir()
        (folder / "script.py").write_text(plan.script.text)
        (folder / "script.map.json").write_text(
            json.dumps(plan.script.source_map_json(plan.selection.name))
        )
        shutil.copytree(ROOT / "runtime" / "tfc_runtime", folder / "tfc_runtime")
        vertex.add_image(plan.image_uri, folder)
        VertexBackend(store_for(Path(os.environ["TFC_JUPYTER_HOME"]))).check(plan.spec)
        with reporting(lambda event: None):
            job = launch(plan, store=store_for(Path(os.environ["TFC_JUPYTER_HOME"])))
        try:
            record = job.wait(timeout=120)
        finally:
            stop_watcher(job.record())
    assert record.state is JobState.SUCCEEDED, record.error
    assert record.handle["image"] == plan.image_uri
    assert record.handle["image_build"] == {"built": True, "pushed": True}
    assert "trained on" in job.logs("chief")
    assert len(creates(gcp)) == 1


# ------------------------------------------------------------------------------ failures
def test_a_failing_build_names_the_step_in_one_line(gcp: GcpServer, tmp_path: Path) -> None:
    nb = project(tmp_path / "nb")
    plan = plan_for(nb, flags())
    instructions = dockerfile_instructions(plan.context.dockerfile)
    gcp.fail_next_build(3, "E: Unable to locate package nope")
    events: list[Progress] = []
    with reporting(events.append), pytest.raises(BuildError) as info:
        ensure_image(plan, push=True, remote=cloud_build)
    text = str(info.value)
    (run,) = gcp.builds.values()
    assert "\n" not in text
    assert text.startswith(f"the image build failed at step 3 ({instructions[2][:40]}")
    assert f"(Cloud Build {run.resource['id']}, build step #0)" in text
    assert "E: Unable to locate package nope" in "\n".join(info.value.log)
    assert info.value.log[0].startswith("Step 3/")
    (tail,) = [e.message for e in events if e.phase == "log"]
    assert "E: Unable to locate package nope" in tail
    assert run.status() == "FAILURE"

    # Launching again: the same tarball is in the bucket (not uploaded again); it builds.
    result, _ = build(plan_for(nb, flags()))
    assert result.built and len(uploads(gcp)) == 1 and len(creates(gcp)) == 2


def test_a_failing_run_step_says_the_command_failed(gcp: GcpServer, tmp_path: Path) -> None:
    nb = project(tmp_path / "nb")
    (nb.parent / "apt.txt").write_text("nope-package\n")  # a RUN apt-get step, 2nd instruction
    plan = plan_for(nb, flags())
    gcp.fail_next_build(2, "E: Unable to locate package nope-package")
    with reporting(lambda event: None), pytest.raises(BuildError) as info:
        ensure_image(plan, push=True, remote=cloud_build)
    text = str(info.value)
    assert "failed at step 2 (apt-get install of apt.txt)" in text
    assert "the command returned a non-zero code: 1" in text
    assert "a package in apt.txt cannot be installed" in text


def test_transient_errors_are_retried_then_it_builds(gcp: GcpServer, tmp_path: Path) -> None:
    gcp.inject(
        Fault.unavailable(match=r"HEAD /v2/"),
        Fault.unavailable(match=r"POST /upload/"),
        Fault.rate_limited(match=r"POST /v1/projects/[^/]+/builds$"),
        Fault.unavailable(match=r"POST /v1/projects/[^/]+/builds$"),
        Fault.unavailable(match=r"GET /v1/projects/[^/]+/builds/"),
        Fault.rate_limited(match=r"GET /storage/v1/b/[^/]+/o/log-"),
    )
    result, _ = build(plan_for(project(tmp_path / "nb"), flags()))
    assert result.built and not gcp.faults
    answers = [r.answer for r in gcp.received("POST", CREATE)]
    assert answers == [429, 503, 200]  # and exactly one build: the adopt check found none
    assert [r.answer for r in gcp.received("POST", UPLOAD)] == [503, 200]
    assert len(gcp.builds) == 1
    assert len(gcp.received("GET", r"/builds$")) == 2  # looked for a build before each retry


def test_a_lost_create_answer_does_not_build_twice(
    gcp: GcpServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TFC_CLOUDBUILD_TIMEOUT", "0.5")
    gcp.inject(Fault.slow(1.5, match=r"POST /v1/projects/[^/]+/builds$", after=True))
    result, _ = build(plan_for(project(tmp_path / "nb"), flags()))
    assert result.built
    assert len(gcp.builds) == 1  # the retry adopted the build the lost answer created
    assert len(gcp.received("POST", CREATE)) == 1


def test_permission_denied_gives_one_line_advice(gcp: GcpServer, tmp_path: Path) -> None:
    plan = plan_for(project(tmp_path / "nb"), flags())
    gcp.inject(storage_denied(match="POST /upload/"))
    with reporting(lambda event: None), pytest.raises(BackendError) as info:
        ensure_image(plan, push=True, remote=cloud_build)
    text = str(info.value)
    assert "\n" not in text and "permission denied" in text
    assert "the Storage Object User role (roles/storage.objectUser) on the bucket" in text

    gcp.inject(permission_denied())  # Cloud Build names no permission: its API's role
    with reporting(lambda event: None), pytest.raises(BackendError) as info:
        ensure_image(plan, push=True, remote=cloud_build)
    text = str(info.value)
    assert "\n" not in text
    assert "permission denied in project test-project" in text
    assert "ask for the Cloud Build Editor role (roles/cloudbuild.builds.editor)" in text
    assert len(gcp.received("POST", CREATE)) == 1  # never retried

    gcp.inject(api_disabled("test-project"))
    with reporting(lambda event: None), pytest.raises(BackendError) as info:
        ensure_image(plan, push=True, remote=cloud_build)
    assert "the Cloud Build API is not enabled in project test-project" in str(info.value)
    assert "gcloud services enable cloudbuild.googleapis.com --project test-project" in str(
        info.value
    )
    assert not gcp.builds


def test_a_missing_or_invalid_bucket_says_so(gcp: GcpServer, tmp_path: Path) -> None:
    nb = project(tmp_path / "nb")
    with reporting(lambda event: None), pytest.raises(BackendError) as info:
        ensure_image(plan_for(nb, flags("no-such-bucket")), push=True, remote=cloud_build)
    text = str(info.value)
    assert "\n" not in text and "The specified bucket does not exist" in text
    assert "gs://no-such-bucket must exist in project test-project" in text
    with reporting(lambda event: None), pytest.raises(SpecError, match="not a Cloud Storage"):
        ensure_image(plan_for(nb, flags("Bad_Bucket!")), push=True, remote=cloud_build)
    assert not gcp.builds


def test_a_stuck_build_is_cancelled_at_the_deadline(
    gcp: GcpServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TFC_BUILD_TIMEOUT", "1")
    monkeypatch.setenv("TFC_CLOUDBUILD_QUEUE", "1")
    gcp.stall_next_build()
    started = time.monotonic()
    with reporting(lambda event: None), pytest.raises(BackendError) as info:
        ensure_image(plan_for(project(tmp_path / "nb"), flags()), push=True, remote=cloud_build)
    assert time.monotonic() - started < 15
    assert "did not end within 2 s; it was cancelled" in str(info.value)
    assert gcp.received("POST", r":cancel$")
    gcp.wait_builds(10)
    (run,) = gcp.builds.values()
    assert run.status() == "CANCELLED"


def test_no_bucket_or_a_docker_job_says_what_is_missing(no_engine: None, tmp_path: Path) -> None:
    nb = project(tmp_path / "nb")
    with reporting(lambda event: None), pytest.raises(BackendError) as info:
        ensure_image(
            plan_for(nb, "--backend vertex --project test-project"), push=True, remote=cloud_build
        )
    assert "pass --build-bucket to build with Cloud Build" in str(info.value)
    with pytest.raises(BackendError) as info:
        VertexBackend(store_for(Path(os.environ["TFC_JUPYTER_HOME"]))).check(
            plan_for(nb, "--backend vertex --project test-project").spec
        )
    assert "pass --build-bucket BUCKET to build with Cloud Build" in str(info.value)
    with reporting(lambda event: None), pytest.raises(BackendError) as info:
        ensure_image(plan_for(nb, f"--build-bucket {BUCKET}"), push=False)
    assert "Cloud Build with --build-bucket serves --backend vertex" in str(info.value)


# ------------------------------------------------------------------------------ options
def test_regional_builds_and_cache_from(
    gcp: GcpServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TFC_CLOUDBUILD_LOCATION", "europe-west4")
    cache = f"{gcp.host}/tfc-tests/job:previous"
    result, _ = build(plan_for(project(tmp_path / "nb"), flags(extra=f"--cache-from {cache}")))
    assert result.built
    (create,) = creates(gcp)
    assert create.path == "/v1/projects/test-project/locations/europe-west4/builds"
    pull, docker_build = create.body["steps"]
    assert pull["args"] == ["pull", cache] and pull["allowFailure"] is True
    assert docker_build["args"][-3:] == ["--cache-from", cache, "."]
    (run,) = gcp.builds.values()
    assert run.resource["steps"][0]["status"] == "FAILURE"  # nothing to pull: allowed to fail
    assert run.status() == "SUCCESS"
    assert gcp.received("GET", r"^/v1/projects/test-project/locations/europe-west4/builds/")


def test_a_registry_token_challenge_is_answered(
    no_engine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with GcpServer(buckets=(BUCKET,), registry_token=True) as server:
        point_at(server, monkeypatch, server.host)
        nb = project(tmp_path / "nb")
        first, _ = build(plan_for(nb, flags()))
        again, _ = build(plan_for(nb, flags()))
        assert first.built and not again.built
        heads = [r.answer for r in server.received("HEAD", r"/manifests/")]
        assert heads == [401, 404, 401, 200]
        assert len(server.token_requests) == 2
        assert all(t["auth"] == "" for t in server.token_requests)  # a plain registry: anonymous
        assert server.token_requests[0]["scope"].startswith("repository:tfc-tests/job:pull")


def test_settings_endpoints_and_bucket_names(tfc_env: Path) -> None:
    s = cloudbuild.CloudBuildSettings.load({"TFC_CLOUDBUILD_ENDPOINT": "127.0.0.1:9"})
    assert (s.api_url(), s.storage_url()) == ("http://127.0.0.1:9", "http://127.0.0.1:9")
    s = cloudbuild.CloudBuildSettings.load({"TFC_BUILD_TIMEOUT": "120"})
    assert s.api_url() == "https://cloudbuild.googleapis.com"
    assert s.storage_url() == "https://storage.googleapis.com" and s.build_timeout_s == 120
    with pytest.raises(TfcError, match="TFC_CLOUDBUILD_POLL"):
        cloudbuild.CloudBuildSettings.load({"TFC_CLOUDBUILD_POLL": "soon"})
    assert cloudbuild.bucket_name("gs://my-bucket/") == "my-bucket"
    for bad in ("gs://b/path", "UPPER", "x", "goog-bucket", "a..b"):
        with pytest.raises(SpecError):
            cloudbuild.bucket_name(bad)


def test_the_tarball_is_reproducible(tmp_path: Path, tfc_env: Path) -> None:
    plan = plan_for(project(tmp_path / "nb"), flags())
    context = plan.context
    first, size, md5 = cloudbuild.tarball(context)
    second, _, md5_again = cloudbuild.tarball(context)
    assert md5 == md5_again and size == len(first.read()) and first.read() == b""
    assert gzip.decompress(second.read()) == context.tar_bytes()


# ------------------------------------------------------------------------------ the fake
def test_the_server_refuses_what_cloud_build_refuses(gcp: GcpServer) -> None:
    url = f"{gcp.url}/v1/projects/p/builds"
    good = {
        "source": {"storageSource": {"bucket": BUCKET, "object": "x.tar.gz"}},
        "steps": [{"name": "gcr.io/cloud-builders/docker", "args": ["build", "."]}],
        "images": [],
    }
    cases = {
        "build must have at least one step": {**good, "steps": []},
        'Unknown name "stepz"': {**good, "stepz": []},
        "must specify name": {**good, "steps": [{"args": ["x"]}]},
        "invalid image name": {**good, "images": ["Not An Image"]},
        "between 1s and 24h": {**good, "timeout": "2d"},
        "the bucket does not exist": {**good, "logsBucket": "gs://nope"},
        "storageSource with bucket and object": {**good, "source": {}},
    }
    for message, body in cases.items():
        reply = requests.post(url, json=body, timeout=10)
        error = reply.json()["error"]
        assert (reply.status_code, error["status"]) == (400, "INVALID_ARGUMENT"), body
        assert message in error["message"]
    reply = requests.post(
        f"{gcp.url}/upload/storage/v1/b/nope/o",
        params={"uploadType": "media", "name": "a"},
        data=b"x",
        timeout=10,
    )
    assert reply.status_code == 404
    assert reply.json()["error"]["errors"][0]["reason"] == "notFound"
    # An accepted build of a missing source fails at FETCHSOURCE, as Cloud Build's does.
    op = requests.post(url, json=good, timeout=10).json()
    gcp.wait_builds()
    failed = requests.get(f"{url}/{op['metadata']['build']['id']}", timeout=10).json()
    assert failed["failureInfo"]["type"] == "FETCH_SOURCE_FAILED"


def test_load_ext_imports_no_cloud_build() -> None:
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'tfc_jupyter')\n"
        "print(sorted(m for m in sys.modules if m.startswith(("
        "'tfc_jupyter.backends.vertex.cloudbuild', "
        "'tfc_jupyter.image.docker', 'requests', 'google.auth', 'google.api_core'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_a_registry_that_refuses_the_lookup_names_the_reader_role(
    gcp: GcpServer, tmp_path: Path
) -> None:
    """Issue 50: Artifact Registry's 403 on the manifest's lookup (a HEAD: no body to read): the
    image is built, and the progress says which role lets it be reused."""
    gcp.inject(registry_denied())
    result, events = build(plan_for(project(tmp_path / "nb"), flags()))
    assert result.built and not gcp.faults
    (said,) = [e.message for e in events if "refused to say" in e.message]
    assert (
        "(403)" in said
        and "the Artifact Registry Reader role (roles/artifactregistry.reader)" in said
    )
    answers = [r.answer for r in gcp.received("HEAD", r"/v2/.+/manifests/")]
    assert answers[0] == 403
