"""The spare supervisor ``tfc-jupyter run`` starts ahead of its job
(tfc_jupyter.backends.spare): it supervises the job it is handed exactly as a supervisor
started at launch does, and ends having started nothing when it is not used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jobutil import write_notebook

from tfc_jupyter import cli
from tfc_jupyter.backends import spare
from tfc_jupyter.backends.watched import alive
from tfc_jupyter.jobs import store_for
from tfc_jupyter.store.records import JobState

pytestmark = pytest.mark.usefixtures("tfc_env")


def _gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_an_unused_spare_ends_having_started_nothing() -> None:
    spare.start()
    proc = spare._spare
    assert proc is not None and proc.poll() is None
    spare.start()  # one spare at a time
    assert spare._spare is proc
    spare.discard()  # stopped and reaped: a command that launched nothing leaves no process
    assert spare._spare is None and proc.returncode is not None
    assert spare.claim(Path("/nonexistent")) is None  # nothing left to hand a job to


def test_a_spare_that_ended_is_not_handed_a_job() -> None:
    spare.start()
    proc = spare._spare
    assert proc is not None and proc.stdin is not None
    proc.stdin.close()  # as if it had ended by itself
    proc.wait(timeout=30)
    assert spare.claim(Path("/nonexistent")) is None


def test_run_hands_the_job_to_its_spare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tfc-jupyter run`: the job's supervisor is the spare started before the plan; the job
    runs, logs and ends as with a supervisor started at launch."""
    claimed: list[int | None] = []
    real = spare.claim

    def claim(job_dir: Path) -> int | None:
        claimed.append(real(job_dir))
        return claimed[-1]

    monkeypatch.setattr(spare, "claim", claim)
    nb = write_notebook(tmp_path / "first.ipynb", "import os\nprint('FIRST', os.getcwd())")
    assert cli.main(["run", str(nb)]) == 0
    out, err = capsys.readouterr()
    assert f"[chief] FIRST {tmp_path}" in out and "succeeded" in err
    (record,) = store_for().list(limit=5)
    assert record.state is JobState.SUCCEEDED and record.handle["exit_codes"] == {"chief": 0}
    pid = int(record.handle["watcher_pid"])
    assert claimed == [pid]  # the spare supervised it
    assert _gone(pid)  # the supervisor ended with its job
    job_dir = Path(record.job_dir or "")
    assert (job_dir / "logs" / "supervisor.log").is_file()
    assert (job_dir / "logs" / "supervisor.log").stat().st_mode & 0o077 == 0
    assert spare._spare is None


def test_a_failed_plan_leaves_no_spare_behind(tmp_path: Path) -> None:
    """A run that stops before launching (here: a notebook that is not one) ends its spare."""
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    code = f"""
import json, sys
from tfc_jupyter import cli
from tfc_jupyter.backends import spare
started = []
real = spare.start
def start():
    real()
    started.append(spare._spare.pid)
spare.start = start
status = cli.main(["run", {str(bad)!r}])
print(json.dumps([status, started, spare._spare is None]))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert proc.returncode == 0, proc.stderr
    status, started, cleared = json.loads(proc.stdout.strip().splitlines()[-1])
    assert status == 2 and "not a readable notebook" in proc.stderr
    assert len(started) == 1 and cleared and _gone(started[0], timeout=0.5)
