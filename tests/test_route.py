"""The package route's choice, its prebuilt images and its wheel (no server here: see
tests/test_package_route.py for a job that runs by it)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from jobutil import write_notebook

from tfc_jupyter.backends.vertex import prebuilt
from tfc_jupyter.config import load_settings
from tfc_jupyter.errors import SpecError
from tfc_jupyter.image.names import local_tensorflow_version
from tfc_jupyter.job import options
from tfc_jupyter.notebook import capture
from tfc_jupyter.planner.plan import Plan, make_plan

types = pytest.importorskip("google.cloud.aiplatform_v1.types")

TF = local_tensorflow_version() or "0.0"
MINOR = ".".join(TF.split(".")[:2])
EXECUTOR = f"us-docker.pkg.dev/vertex-ai/training/tf-cpu.{MINOR.replace('.', '-')}.py311:latest"
VERTEX = "--backend vertex --project my-proj-1 --build-bucket tfc-test-builds"


@pytest.fixture
def notebook(tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A notebook that reads a data file next to it; this kernel's TensorFlow is offered."""
    monkeypatch.setenv("TFC_PREBUILT_IMAGES", f"{MINOR}={EXECUTOR}")
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    return write_notebook(
        tmp_path / "nb.ipynb", "%%tfc_run\nprint(open('data.csv').read())\nprint('done')"
    )


def _plan(path: Path, flags: str = "") -> Plan:
    nb = capture.read_notebook(path)
    selection = capture.select_cells(nb, path=path, how="test")
    ns = options.parse_line(f"{VERTEX} {flags}".strip())
    return make_plan(selection, ns, load_settings(include_server=False))


def test_nothing_to_build_takes_the_package_route(notebook: Path) -> None:
    plan = _plan(notebook)
    assert plan.route is not None and plan.route.kind == "package"
    assert f"prebuilt TensorFlow {MINOR} CPU image" in plan.route.reason
    assert plan.spec.decided.route == "package" and plan.image_uri == EXECUTOR
    body = plan.request()["body"]
    (pool,) = body["jobSpec"]["workerPoolSpecs"]
    assert "containerSpec" not in pool
    spec = pool["pythonPackageSpec"]
    assert spec["executorImageUri"] == EXECUTOR and spec["pythonModule"] == "tfc_job.task"
    assert spec["packageUris"] == [plan.package_uri]
    assert spec["packageUris"][0].startswith("gs://tfc-test-builds/tfc-jupyter/packages/")
    assert spec["args"][-1] == "script.py"
    # The real client takes the request as it is.
    job = types.CustomJob.from_json(json.dumps(body))
    assert job.job_spec.worker_pool_specs[0].python_package_spec.python_module == "tfc_job.task"
    # The plan says which route and why, and the dry run shows the package.
    text = plan.to_text()
    assert "route: package (nothing to build" in text and plan.package_uri in text
    assert plan.summary()["route"] == {
        "kind": "package",
        "reason": plan.route.reason,
        "package": plan.package_uri,
    }


def test_the_wheel_carries_what_the_image_would_and_is_reproducible(notebook: Path) -> None:
    plan = _plan(notebook)
    assert plan.package is not None
    archive = zipfile.ZipFile(io.BytesIO(plan.package.data))
    names = archive.namelist()
    assert {"tfc_job/task.py", "tfc_job/files/script.py", "tfc_job/files/data.csv"} <= set(names)
    assert "tfc_runtime/__main__.py" in names and "tfc_runtime/results.py" in names
    assert archive.read("tfc_job/files/script.py").decode() == plan.script.text
    # RECORD's hashes are the files' (pip checks them).
    record = archive.read("tfc_job-1.0.dist-info/RECORD").decode().splitlines()
    for row in record:
        name, digest, size = row.split(",")
        if digest:
            data = archive.read(name)
            assert int(size) == len(data)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == f"sha256={want.decode()}"
    # The same notebook, the same bytes: the same object, nothing to upload again.
    again = _plan(notebook)
    assert again.package is not None and again.package.data == plan.package.data
    (notebook.parent / "data.csv").write_text("a,b\n1,3\n")
    assert _plan(notebook).package_uri != plan.package_uri


def test_requirements_become_requires_dist(notebook: Path) -> None:
    write_notebook(
        notebook,
        "%pip install 'requests>=2' tqdm==4.66.1",
        "%%tfc_run\nimport requests, tqdm\nprint('ok')",
    )
    plan = _plan(notebook)
    assert plan.package is not None
    archive = zipfile.ZipFile(io.BytesIO(plan.package.data))
    metadata = archive.read("tfc_job-1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: requests>=2" in metadata
    assert "Requires-Dist: tqdm==4.66.1" in metadata


@pytest.mark.parametrize(
    ("setup", "flags", "why"),
    [
        (None, "--parent-image gcr.io/p/base:1", "--parent-image"),
        (None, "--image gcr.io/p/img:1", "--image names the image"),
        ("apt.txt", "", "apt.txt asks for system packages"),
        ("local-req", "", "not one pip installs at start"),
        (None, "--route image", "asked for (--route image)"),
        ("no-bucket", "", "no build bucket"),
    ],
)
def test_an_image_is_built_when_the_package_cannot_carry_the_job(
    notebook: Path, setup: Any, flags: str, why: str
) -> None:
    if setup == "apt.txt":
        (notebook.parent / "apt.txt").write_text("libsndfile1\n")
    if setup == "local-req":
        (notebook.parent / "requirements.txt").write_text("https://example.com/pkg.whl\n")
        flags = "--requirements requirements.txt"
    if setup == "no-bucket":
        flags = "--build-bucket ''"
    plan = _plan(notebook, flags)
    assert plan.route is not None and plan.route.kind == "image", plan.route
    assert why in plan.route.reason
    assert plan.package is None
    (pool,) = plan.request()["body"]["jobSpec"]["workerPoolSpecs"]
    assert "containerSpec" in pool and "pythonPackageSpec" not in pool


def test_package_asked_for_says_what_stands_in_the_way(
    notebook: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (notebook.parent / "apt.txt").write_text("libsndfile1\n")
    with pytest.raises(SpecError) as info:
        _plan(notebook, "--route package")
    assert "apt.txt" in str(info.value) and info.value.field == "route"
    # A TensorFlow Vertex AI does not offer: refused with the version list and the fix.
    (notebook.parent / "apt.txt").unlink()
    monkeypatch.delenv("TFC_PREBUILT_IMAGES")
    if (MINOR, False) not in prebuilt.IMAGES:
        with pytest.raises(SpecError) as info:
            _plan(notebook, "--route package")
        assert f"no prebuilt CPU training image for TensorFlow {MINOR}" in str(info.value)
        assert "prebuilt_images" in str(info.value)
        # auto: an image, with that reason in the plan.
        route = _plan(notebook).route
        assert route is not None and "no prebuilt" in route.reason


def test_the_prebuilt_list_and_its_setting() -> None:
    found = prebuilt.executor("2.15.1", gpu=True, region="europe-west4")
    assert found.uri == "europe-docker.pkg.dev/vertex-ai/training/tf-gpu.2-15.py310:latest"
    assert prebuilt.executor("2.17.0", gpu=False, region="us-central1").uri.endswith(
        "/tf-cpu.2-17.py310:latest"
    )
    extra = "2.99=us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-99.py312:latest"
    assert prebuilt.executor("2.99.0", gpu=False, region="x", extra=extra).tf_version == "2.99"
    with pytest.raises(SpecError, match=r"no prebuilt GPU training image for TensorFlow 2\.99"):
        prebuilt.executor("2.99.0", gpu=True, region="us-central1", extra=extra)
    with pytest.raises(SpecError, match="does not read"):
        prebuilt.extra_images("2.99 us-docker.pkg.dev/x")
    with pytest.raises(SpecError, match="TensorFlow is not installed"):
        prebuilt.executor(None, gpu=False, region="us-central1")


def test_route_is_refused_off_vertex(tmp_path: Path, tfc_env: Path) -> None:
    with pytest.raises(SpecError, match="--route package is how code reaches Vertex AI"):
        nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run\nprint(1)")
        selection = capture.select_cells(capture.read_notebook(nb), path=nb, how="test")
        make_plan(selection, options.parse_line("--route package"), load_settings())
