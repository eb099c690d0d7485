"""Defaults and provenance: flag > TFC_* > ipython_config > jupyter_server_config > GCP env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from traitlets.config import Config

from tfc_jupyter.config import KEYS, TfcConfig, load_settings, server_config
from tfc_jupyter.errors import SpecError
from tfc_jupyter.job import options

pytestmark = pytest.mark.usefixtures("tfc_env")


def _server_file(folder: Path, section: dict[str, str], name: str = "json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if name == "json":
        path = folder / "jupyter_server_config.json"
        path.write_text(json.dumps({"ServerApp": {"port": 9999}, "TfcConfig": section}))
    else:
        path = folder / "jupyter_server_config.py"
        lines = [f"c.TfcConfig.{k} = {v!r}" for k, v in section.items()]
        path.write_text("\n".join(["c.ServerApp.port = 9999", *lines]) + "\n")
    return path


def _ipython(**values: str) -> Config:
    config = Config()
    for key, value in values.items():
        setattr(config.TfcConfig, key, value)
    return config


def test_defaults_match_the_traits(tfc_env: Path) -> None:
    settings = load_settings(environ={})
    traits = TfcConfig()
    for key in KEYS:
        assert settings.get(key) == getattr(traits, key)
        assert settings.sources[key] == "default"
    assert settings.get("region") == "us-central1" and settings.get("backend") == "local"


def test_each_layer_in_order(tfc_env: Path) -> None:
    server = _server_file(tfc_env, {"project": "server-proj", "region": "europe-west4"})
    env = {
        "GOOGLE_CLOUD_PROJECT": "gcp-proj",
        "GOOGLE_CLOUD_REGION": "asia-east1",
        "TFC_PROJECT": "tfc-proj",
    }
    ipy = _ipython(project="ipy-proj", region="us-east1")

    s = load_settings(ipy, env)
    assert (s.get("project"), s.sources["project"]) == ("tfc-proj", "env TFC_PROJECT")
    assert (s.get("region"), s.sources["region"]) == (
        "us-east1",
        "ipython_config (c.TfcConfig.region)",
    )

    del env["TFC_PROJECT"]
    s = load_settings(ipy, env)
    assert (s.get("project"), s.sources["project"]) == (
        "ipy-proj",
        "ipython_config (c.TfcConfig.project)",
    )

    s = load_settings(None, env)
    assert s.get("project") == "server-proj"
    assert s.sources["project"] == f"{server} (c.TfcConfig.project)"
    assert s.get("region") == "europe-west4"

    server.unlink()
    s = load_settings(None, env)
    assert (s.get("project"), s.sources["project"]) == ("gcp-proj", "env GOOGLE_CLOUD_PROJECT")
    assert (s.get("region"), s.sources["region"]) == ("asia-east1", "env GOOGLE_CLOUD_REGION")

    s = load_settings(None, {})
    assert (s.get("project"), s.sources["project"]) == (None, "default")


def test_flag_beats_every_layer(tfc_env: Path) -> None:
    _server_file(tfc_env, {"project": "server-proj", "machine": "T4_1X"})
    s = load_settings(_ipython(project="ipy-proj"), {"TFC_PROJECT": "tfc-proj"})
    flagged = options.to_spec(options.parse_line("--project flag-proj"), s)
    assert flagged.google.project == "flag-proj"
    plain = options.to_spec(options.parse_line(""), s)
    assert plain.google.project == "tfc-proj"
    assert plain.chief.name == "T4_1X"  # the machine default came from the server config
    assert options.to_spec(options.parse_line("--machine CPU"), s).chief.name == "CPU"


def test_specific_gcp_variables_first(tfc_env: Path) -> None:
    env = {"GCLOUD_PROJECT": "c-proj", "CLOUDSDK_CORE_PROJECT": "b-proj"}
    assert load_settings(None, env).sources["project"] == "env CLOUDSDK_CORE_PROJECT"
    env["GOOGLE_CLOUD_PROJECT"] = "a-proj"
    assert load_settings(None, env).get("project") == "a-proj"


def test_empty_values_do_not_count(tfc_env: Path) -> None:
    s = load_settings(_ipython(project=""), {"TFC_PROJECT": "", "GOOGLE_CLOUD_PROJECT": "g-proj"})
    assert s.sources["project"] == "env GOOGLE_CLOUD_PROJECT"


def test_server_config_from_python_and_several_folders(
    tfc_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JUPYTER_CONFIG_PATH folders come first in Jupyter's search path, so they win."""
    user = _server_file(tfc_env, {"project": "user-proj", "registry": "r.example/x"}, "py")
    extra = _server_file(tmp_path / "extra", {"project": "path-proj"})
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "extra"))
    values, origins = server_config()
    assert values == {"project": "path-proj", "registry": "r.example/x"}
    assert origins == {"project": str(extra), "registry": str(user)}
    s = load_settings(None, {})
    assert s.sources["project"] == f"{extra} (c.TfcConfig.project)"
    assert s.sources["registry"] == f"{user} (c.TfcConfig.registry)"


def test_broken_server_config_is_ignored(tfc_env: Path) -> None:
    (tfc_env / "jupyter_server_config.json").write_text("{broken")
    (tfc_env / "jupyter_server_config.py").write_text("raise RuntimeError('nope')\n")
    assert server_config() == ({}, {})
    assert load_settings(None, {}).sources["project"] == "default"


def test_server_config_can_be_left_out(tfc_env: Path) -> None:
    _server_file(tfc_env, {"project": "server-proj"})
    assert load_settings(None, {}, include_server=False).get("project") is None


def test_os_environ_is_the_default(tfc_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFC_BACKEND", "docker")
    s = load_settings()
    assert (s.get("backend"), s.sources["backend"]) == ("docker", "env TFC_BACKEND")


def test_table_shows_every_key_and_source(tfc_env: Path) -> None:
    s = load_settings(_ipython(region="europe-west4"), {"TFC_PROJECT": "tfc-proj"})
    lines = s.to_text().splitlines()
    assert lines[0].split() == ["setting", "value", "from"]
    assert [line.split()[0] for line in lines[1:]] == list(KEYS)
    rows = {row[0]: row for row in s.rows()}
    assert rows["project"] == ("project", "tfc-proj", "env TFC_PROJECT")
    assert rows["region"][2] == "ipython_config (c.TfcConfig.region)"
    assert rows["build_bucket"][1] == ""
    assert any(line.startswith("project") and "env TFC_PROJECT" in line for line in lines)


def test_every_trait_is_a_setting_with_help_and_a_variable() -> None:
    traits = set(TfcConfig.class_trait_names(config=True))
    assert traits == set(KEYS)
    settings = load_settings(environ={}, include_server=False)
    for key, entry in settings.to_dict().items():
        assert entry["help"] and entry["env"].startswith("TFC_"), key
    assert settings.to_dict()["home"]["env"] == "TFC_JUPYTER_HOME"


def test_limits_are_numbers_from_any_layer(tfc_env: Path) -> None:
    _server_file(tfc_env, {"vertex_poll": "4"})
    s = load_settings(_ipython(build_timeout="90"), {"TFC_STARTUP_TIMEOUT": "45"})
    assert (s.get("startup_timeout"), s.sources["startup_timeout"]) == (
        45.0,
        "env TFC_STARTUP_TIMEOUT",
    )
    assert s.get("build_timeout") == 90.0 and s.sources["build_timeout"].startswith("ipython")
    assert s.get("vertex_poll") == 4.0 and "jupyter_server_config" in s.sources["vertex_poll"]
    assert s.get("max_context_mb") == 500.0 and s.sources["max_context_mb"] == "default"
    rows = dict((k, v) for k, v, _ in s.rows())
    assert rows["startup_timeout"] == "45" and rows["max_context_mb"] == "500"


@pytest.mark.parametrize("value", ["soon", "-1", "0"])
def test_a_bad_limit_is_one_line_naming_its_source(value: str) -> None:
    with pytest.raises(SpecError) as info:
        load_settings(environ={"TFC_VERTEX_POLL": value}, include_server=False)
    text = str(info.value)
    assert "vertex_poll" in text and "env TFC_VERTEX_POLL" in text and "Fix: set it to" in text
    assert "\n" not in text


def test_the_limits_reach_what_uses_them(tmp_path: Path) -> None:
    """The settings resolved once tune the backends and the build context."""
    from tfc_jupyter.backends import get
    from tfc_jupyter.backends.vertex.api import VertexSettings
    from tfc_jupyter.image import context as package
    from tfc_jupyter.jobs import store_for

    s = load_settings(
        environ={"TFC_STARTUP_TIMEOUT": "12", "TFC_VERTEX_DRAIN": "3", "TFC_MAX_CONTEXT_MB": "2"},
        include_server=False,
    )
    store = store_for(tmp_path)
    assert get("local", store, s).startup_timeout == 12.0  # type: ignore[attr-defined]
    assert get("docker", store, s).startup_timeout == 12.0  # type: ignore[attr-defined]
    assert get("vertex", store, s).settings.drain_s == 3.0  # type: ignore[attr-defined]
    assert VertexSettings.from_settings(s).drain_s == 3.0
    assert package.limit_bytes(s) == 2_000_000
    with pytest.raises(Exception, match=r"not available in this version.*--backend local"):
        get("slurm", store, s)


def test_vertex_ai_declares_its_own_settings_and_reading_them_imports_no_more_of_it() -> None:
    """Issue 47: a backend declares its settings as it declares its options; the portable
    settings come first, then the backend's, and reading them loads only its table."""
    import subprocess
    import sys

    from tfc_jupyter.backends.vertex.settings import SETTINGS as VERTEX

    assert list(KEYS[-len(VERTEX) :]) == list(VERTEX)
    assert {"vertex_poll", "cloudbuild_queue", "storage_endpoint"} <= set(VERTEX)
    settings = load_settings(environ={"TFC_VERTEX_POLL": "3"}, include_server=False)
    assert (
        settings.get("vertex_poll") == 3.0
        and settings.sources["vertex_poll"] == "env TFC_VERTEX_POLL"
    )
    code = (
        "import sys\nimport tfc_jupyter.config\n"
        "print(sorted(m for m in sys.modules if m.startswith('tfc_jupyter.backends')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        "['tfc_jupyter.backends',", "'tfc_jupyter.backends.vertex',",
        "'tfc_jupyter.backends.vertex.settings']",
    ]  # fmt: skip
