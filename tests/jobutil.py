"""Helpers for tests that launch real jobs: notebooks on disk, plans, process checks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat
import psutil

from tfc_jupyter import config
from tfc_jupyter.job import options
from tfc_jupyter.jobs import Job, launch, store_for
from tfc_jupyter.notebook import capture
from tfc_jupyter.planner.plan import Plan, make_plan
from tfc_jupyter.store.records import JobRecord, JobState

JOB_DEADLINE_S = 150


def write_notebook(path: Path, *cells: str, tags: dict[int, list[str]] | None = None) -> Path:
    """A notebook of code cells (``tags`` by 0-based cell position) with a python3 kernelspec."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for i, source in enumerate(cells):
        cell = nbformat.v4.new_code_cell(source)
        if tags and i in tags:
            cell.metadata["tags"] = tags[i]
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def in_kernel(
    path: Path,
    *,
    timeout: float = JOB_DEADLINE_S,
    allow_errors: bool = True,
    cwd: Path | None = None,
) -> Any:
    """The notebook at ``path`` run top to bottom by nbclient in a real python3 kernel, in
    ``cwd`` (the notebook's folder by default), that finds its notebook as under JupyterLab
    (``JPY_SESSION_NAME``, this process's value restored after); the executed notebook, with
    each cell's error in its outputs where ``allow_errors`` (else nbclient raises at the first)."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    before = os.environ.get("JPY_SESSION_NAME")
    os.environ["JPY_SESSION_NAME"] = str(path)
    try:
        NotebookClient(
            nb, timeout=timeout, allow_errors=allow_errors, kernel_name="python3",
            resources={"metadata": {"path": str(cwd or path.parent)}},
        ).execute()  # fmt: skip
    finally:
        if before is None:
            os.environ.pop("JPY_SESSION_NAME", None)
        else:
            os.environ["JPY_SESSION_NAME"] = before
    return nb


def streamed(cell: Any) -> str:
    """What a cell printed (stdout and stderr), in its outputs' order."""
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


_ENDED = re.compile(r"^\S+: (succeeded|failed|cancelled) after \d")


def job_lines(lines: Sequence[str]) -> list[str]:
    """The lines a ``%%tfc_run`` cell shows that its job printed (a one-replica job's, as the
    cell's own prints, without ``[chief]``): those after the magic's "Launched ..." line and
    before its line saying how the job ended, tfc_jupyter's own notes left out."""
    shown: list[str] = []
    started = False
    for line in lines:
        if not started:
            started = line.startswith("Launched ")
        elif _ENDED.match(line):
            break
        elif not line.startswith("[tfc_jupyter] "):
            shown.append(line)
    return shown


def cli(*args: str, cwd: Path, timeout: float = JOB_DEADLINE_S) -> subprocess.CompletedProcess[str]:
    """``tfc-jupyter ARGS`` in ``cwd`` (this interpreter, this process's environment), bounded."""
    return subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", *args],
        capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd,
    )  # fmt: skip


def executed_by_cli(path: Path, *flags: str, timeout: float = JOB_DEADLINE_S) -> Any:
    """``tfc-jupyter run PATH FLAGS`` in the notebook's folder (a notebook without a run cell
    runs whole, as the job); the job's executed notebook, valid nbformat, from the folder the
    command names. Fails the test, with what the command printed, when it failed."""
    done = cli("run", str(path), *flags, cwd=path.parent, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    said = next(
        (line for line in done.stderr.splitlines() if line.startswith("Executed notebook: ")), ""
    )
    assert said, done.stderr
    executed = nbformat.read(said.split(": ", 1)[1].split(" (next to", 1)[0], as_version=4)
    nbformat.validate(executed)
    return executed


def names_round_trip(
    names: dict[str, Any], *, kernel: dict[str, Any] | None = None, out: Any = None, job: str = ""
) -> tuple[dict[str, Any], Any]:
    """``names`` as a run cell binds them (``out``: its ``Out[]``), written by the job's own
    writer into a job folder (``job``, or a new one) and read back by the kernel's reader into a
    namespace that starts as ``kernel``: the namespace, and what ``bring_back`` said (its
    ``Returned``). Fails when the job's writer left a name in the job."""
    import tempfile
    from types import SimpleNamespace

    from tfc_runtime import giveback

    from tfc_jupyter.returns.border import KernelCell
    from tfc_jupyter.returns.returned import bring_back

    with tempfile.TemporaryDirectory() as tmp:
        folder = job or tmp
        before = os.environ.get("TFC_JOB_DIR")
        os.environ["TFC_JOB_DIR"] = folder  # as a job has it
        try:
            state = SimpleNamespace(
                run_cell=1, binds=tuple(names), reads=(), code=(), chief=True, out=out,
                started=0.0, workdir="",
            )  # fmt: skip
            manifest = giveback.save_names(state, dict(names))
            assert manifest is not None and not manifest.stayed, manifest.stayed
            namespace = dict(kernel or {})
            cell = KernelCell.from_source(f"{', '.join(names)} = f()")
            return namespace, bring_back(folder, namespace, kernel_cell=cell)
        finally:
            if before is None:
                os.environ.pop("TFC_JOB_DIR", None)
            else:
                os.environ["TFC_JOB_DIR"] = before


def plan_for(path: Path, extra_flags: str = "") -> Plan:
    """Plan the first %%tfc_run cell of a notebook file, as the CLI does."""
    nb = capture.read_notebook(path)
    selection = capture.select_cells(nb, path=path, how="test")
    ns = options.parse_line(f"{selection.magic_line} {extra_flags}".strip())
    return make_plan(selection, ns, config.load_settings(include_server=False))


def run_job(path: Path, home: Path, extra_flags: str = "") -> tuple[Job, JobRecord]:
    """Launch and wait (bounded); on timeout the job is cancelled and the test fails."""
    job = launch(plan_for(path, extra_flags), store=store_for(home))
    record = job.wait(timeout=JOB_DEADLINE_S)
    if not record.state.is_terminal():
        job.cancel()
        raise AssertionError(f"job {job.id} still {record.state.value} after {JOB_DEADLINE_S} s")
    return job, record


def job_pids(record: JobRecord) -> list[int]:
    """The supervisor's and every replica's pid."""
    pids = [record.handle.get("watcher_pid")]
    pids += list((record.handle.get("replicas") or {}).values())
    return [int(p) for p in pids if p]


def wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    """Pids still alive (not zombies) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    alive = pids
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.Error:
                pass
        if not alive:
            return []
        time.sleep(0.2)
    return alive


def wait_state(job: Job, states: set[JobState], timeout: float = 60.0) -> JobRecord:
    """Poll until the job is in one of ``states`` (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = job.record()
        if record.state in states:
            return record
        time.sleep(0.1)
    raise AssertionError(f"job {job.id} never reached {states}: {job.record().state}")


RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime"
# Runs a converted script as plain python with IPython made unimportable.
_NO_IPYTHON = (
    "import runpy, sys; sys.modules['IPython'] = None; "
    "runpy.run_path(sys.argv[1], run_name='__main__')"
)


def run_plain(text: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Write ``text`` as ``cwd/script.py`` and run it as plain python, with no IPython and
    ``tfc_runtime`` importable; stdout and stderr are captured."""
    path = cwd / "script.py"
    path.write_text(text)
    return subprocess.run(
        [sys.executable, "-c", _NO_IPYTHON, str(path)],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(RUNTIME_DIR), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def stored_job(
    home: Path,
    job_id: str,
    name: str = "job",
    *,
    spec: dict[str, Any] | None = None,
    epochs: Sequence[dict[str, float]] = (),
) -> Path:
    """A finished local job's record and folder in ``home``, written as the product writes
    them; ``epochs``: the metrics of each epoch its chief reported (``results.jsonl``)."""
    job_dir = home / "jobs" / job_id
    (job_dir / "logs").mkdir(parents=True)
    with (job_dir / "results.jsonl").open("w") as f:
        for number, metrics in enumerate(epochs, start=1):
            event = {"event": "epoch", "fit": 0, "epoch": number, "metrics": metrics}
            f.write(json.dumps(event) + "\n")
    store_for(home).create(
        JobRecord(
            id=job_id,
            name=name,
            backend="local",
            state=JobState.SUCCEEDED,
            spec=spec or {},
            job_dir=str(job_dir),
            log_dir=str(job_dir / "logs"),
            ended_at=time.time(),
        )
    )
    return job_dir


def wait_for(what: str, check: Any, timeout: float = 60.0) -> Any:
    """Poll ``check`` until it is truthy (bounded: past ``timeout`` the test fails naming
    ``what``); its value."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.05)
    return value
