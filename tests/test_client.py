"""The one way in: a real local job through the Python API, and one store for every front end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jobutil import JOB_DEADLINE_S, write_notebook

import tfc_jupyter
from tfc_jupyter.client import Client
from tfc_jupyter.config import Settings, load_settings
from tfc_jupyter.errors import SpecError
from tfc_jupyter.job.options import JobOptions
from tfc_jupyter.jobs import Job
from tfc_jupyter.store.records import JobState


def _settings(home: Path) -> Settings:
    return load_settings(environ={"TFC_JUPYTER_HOME": str(home)}, include_server=False)


@pytest.mark.slow
def test_a_job_through_the_python_api(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "api.ipynb",
        "import sys\nprint('argv', sys.argv[1:])",
        "%%tfc_run --args 'from-the-line'\nprint('total', sum(range(5)))",
    )
    client = Client(_settings(tmp_path / "home"))
    plan = client.plan_notebook(nb, JobOptions.of(name="api-job", label=["team=ml"]))
    assert plan.spec.name == "api-job" and plan.spec.entry_args == ("from-the-line",)
    assert plan.options.to_line() == "%%tfc_run --name api-job --label team=ml --args from-the-line"
    job = client.submit(plan)
    record = job.wait(timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, record.error
    text = client.logs(job.id[:12])  # a unique prefix names the job
    assert "[chief] argv ['from-the-line']" in text and "[chief] total 10" in text
    assert [r.id for r in client.list(5)] == [job.id]
    assert client.get(job.id).spec["labels"] == {"team": "ml"}
    assert Path(client.store.path).parent == tmp_path / "home"


def test_the_top_level_names_are_lazy() -> None:
    assert tfc_jupyter.Client is Client and tfc_jupyter.JobOptions is JobOptions
    with pytest.raises(AttributeError):
        tfc_jupyter.Nope  # noqa: B018


def test_bad_keywords_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"unknown option 'worker'. Fix: use one of"):
        JobOptions.of(worker=2)
    with pytest.raises(SpecError, match="'workers': expected 0 or more"):
        JobOptions.of(workers=-1)
    with pytest.raises(Exception, match="not found"):
        Client(_settings(tmp_path)).plan_notebook(tmp_path / "missing.ipynb")


def test_a_handle_made_without_a_store_uses_the_shells_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Job(id)`` and ``Client()`` in a kernel use ``c.TfcConfig.home``, as the magics do."""
    from IPython.testing import globalipapp

    globalipapp.start_ipython()
    shell: Any = globalipapp.get_ipython()
    monkeypatch.delenv("TFC_JUPYTER_HOME", raising=False)
    home = tmp_path / "configured"
    shell.config.TfcConfig.home = str(home)
    try:
        client = Client()
        assert client.store.path == home / "jobs.sqlite"
        from tfc_jupyter.store.records import JobRecord

        client.store.create(JobRecord(id="cfg-1", name="n", backend="local"))
        assert Job("cfg-1").store.path == home / "jobs.sqlite"
    finally:
        del shell.config.TfcConfig["home"]


def test_a_dry_run_says_what_the_run_would_refuse(tmp_path: Path) -> None:
    """Plan and run give the same verdict: a TPU on this machine is refused by both."""
    from tfc_jupyter.errors import TfcError

    nb = write_notebook(tmp_path / "tpu.ipynb", "%%tfc_run --tpu v3-8\nprint(1)")
    client = Client(_settings(tmp_path / "home"))
    plan = client.plan_notebook(nb)
    assert plan.refused is not None and "TPU" in str(plan.refused)
    refused = plan.summary()["refused"]
    assert refused is not None and refused["message"] == plan.refused.message
    assert "!! Launching it would stop here: " in plan.to_text(script=False)
    with pytest.raises(TfcError) as info:
        client.submit(plan)
    assert str(info.value) == str(plan.refused)  # the very same words
    assert client.list() == []
    assert client.plan_notebook(nb, JobOptions.of(tpu="")).refused is None
