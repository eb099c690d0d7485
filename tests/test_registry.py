"""The registry's tables by name: image registries by host, object stores by URI scheme. The
floors below the backends reach Google Cloud code only through them (tests/test_layout.py)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfc_jupyter import registry
from tfc_jupyter.config import current_settings
from tfc_jupyter.errors import SpecError

REFUSED = (
    'denied: Permission "artifactregistry.repositories.uploadArtifacts" denied on resource '
    '"projects/p/locations/us/repositories/r" (or it may not exist)'
)  # Artifact Registry's refusal of a push, as the engine's push stream carries it


def test_artifact_registry_is_found_by_its_host_and_names_the_role_for_a_refused_push() -> None:
    known = registry.image_registry("us-central1-docker.pkg.dev/p/r/job:abc")
    assert known is not None and known is registry.image_registry("gcr.io/p/job:abc")
    hint = known.push_hint(REFUSED)
    assert "Artifact Registry Writer" in hint and "roles/artifactregistry.writer" in hint
    assert known.push_hint("unauthorized: authentication required") is None


HOSTS = r"(localhost|127\.0\.0\.1|registry\.example\.com)(:[0-9]{2,5})?"


@given(st.from_regex(HOSTS, fullmatch=True))
def test_a_registry_no_cloud_here_knows_is_left_to_the_engine_s_own_login(host: str) -> None:
    uri = f"{host}/team/job:abc"
    assert registry.image_registry(uri) is None
    assert registry.registry_login(uri) is None


def test_a_local_registry_s_login_imports_no_google_code() -> None:
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"  # google and google.cloud: namespace packages' .pth files
        "from tfc_jupyter import registry\n"
        "assert registry.registry_login('127.0.0.1:5000/job:abc') is None\n"
        "print(sorted(m for m in set(sys.modules) - before if m.startswith(('google', "
        "'tfc_jupyter.backends.vertex'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_gs_uri_opens_cloud_storage_for_the_job_s_project() -> None:
    record = SimpleNamespace(spec={"google": {"project": "my-project"}})
    here = current_settings({"TFC_STORAGE_ENDPOINT": "127.0.0.1:9"})  # loopback: no credentials
    storage, path = registry.store_for("gs://my-bucket/runs/7/cell", record, here)
    assert (storage.project, storage.bucket, path) == ("my-project", "my-bucket", "runs/7/cell")


@pytest.mark.parametrize("uri", ["s3://bucket/model", "/tmp/model", "model.keras", "gs:/x"])
def test_a_place_no_store_reads_is_refused_with_the_fix(uri: str) -> None:
    with pytest.raises(SpecError) as info:
        registry.store_for(uri, SimpleNamespace(spec={}))
    assert "is not a place this installation reads" in str(info.value)
    assert "gs://" in info.value.hint
