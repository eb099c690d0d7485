"""Shared fixtures of the tfc_jupyter tests (tests/runtime has its own conftest)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Shared browser fixtures (JupyterLab + chromium): see tests/browser.py.
from browser import browser_page, chromium_path, lab_server  # noqa: F401

# Docker engine, local registry and the offline TensorFlow parent image: see tests/dockerinfra.py.
from dockerinfra import docker_client, registry, tf_parent_image  # noqa: F401

# A local Vertex AI + Cloud Logging server (real clients over REST): see tests/vertex_server.py.
from vertex_server import vertex_server  # noqa: F401

from tfc_jupyter.config import Settings, load_settings

# Counted suites (security, bad input, faults, secretscan): see tests/counted.py.
pytest_plugins = ["counted"]

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime"

# Under pytest-xdist (scripts/test.sh runs two processes) each process keeps its own job home,
# inside the one the test command made: a listing sees only its own process's jobs.
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("TFC_JUPYTER_HOME"):
    _home = Path(os.environ["TFC_JUPYTER_HOME"], os.environ["PYTEST_XDIST_WORKER"])
    _home.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ["TFC_JUPYTER_HOME"] = str(_home)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (scripts/test.sh): a file's tests run in one process, in
    their order, sharing their module's fixtures; the tests of a JupyterLab in a browser run in
    one process, one after another (two JupyterLabs and two chromiums at once on two cores
    would race their own deadlines)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        group = "browser" if uses & {"lab_server", "browser_page"} else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


# Variables that would leak this machine's own defaults into a test.
_ENV_PREFIXES = ("TFC_", "GOOGLE_CLOUD_", "CLOUDSDK_", "GCLOUD_", "JPY_", "JUPYTER_")


@pytest.fixture
def fixtures_dir() -> Path:
    """The folder of fixture notebooks (written by tests/fixtures/make_fixtures.py)."""
    return FIXTURES


@pytest.fixture
def train_nb() -> Path:
    """The main fixture notebook: see ``make_fixtures.train`` for its cells."""
    return FIXTURES / "train.ipynb"


@pytest.fixture
def tfc_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """No TFC_*/Google Cloud/Jupyter variables; Jupyter config and tfc home in empty folders.

    Returns the (empty) JUPYTER_CONFIG_DIR.
    """
    for name in list(os.environ):
        if name.startswith(_ENV_PREFIXES):
            monkeypatch.delenv(name)
    config_dir = tmp_path_factory.mktemp("jupyter_config")
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config_dir))
    monkeypatch.setenv("TFC_JUPYTER_HOME", str(tmp_path_factory.mktemp("tfc_home")))
    # no application-default credentials: a plan asks Google's Cloud Billing API for nothing
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path_factory.mktemp("gcloud_config")))
    return config_dir


@pytest.fixture
def settings(tfc_env: Path) -> Settings:
    """Built-in defaults only (no environment, no config files)."""
    return load_settings(environ={}, include_server=False)
