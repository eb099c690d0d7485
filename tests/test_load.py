"""Load: 50 jobs submitted at once from 5 kernels (IPython shells in their own processes, 10
``%%tfc_run --no-wait`` cells each) to the local backend. Every job is recorded once, finishes
SUCCEEDED, and its log holds exactly its own lines in order (no line lost, none from another job);
nothing is left running. The whole test is bounded (``LOAD_DEADLINE_S``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from jobutil import job_pids, wait_gone, write_notebook

from tfc_jupyter.jobs import Job, store_for
from tfc_jupyter.store.records import JobState

KERNELS = 5
JOBS_PER_KERNEL = 10
LINES = 200
LOAD_DEADLINE_S = 240.0

BODY = textwrap.dedent(f"""\
    import sys, time
    tag = sys.argv[1]
    for i in range({LINES}):
        print(f"{{tag}} line {{i:04d}} " + "x" * 60)
        if i % 50 == 0:
            time.sleep(0.02)  # let the others write in between
    print(f"{{tag}} done")
""")

# One "kernel": an IPython shell in its own process. It waits for the start signal (so that all
# kernels submit at once), runs its %%tfc_run cells, and prints the job ids as JSON.
KERNEL = textwrap.dedent("""\
    import json, os, sys, time
    from pathlib import Path
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    kernel, count, notebook, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    body = Path(notebook).with_suffix(".body").read_text()
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tfc_jupyter")
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    ids = []
    for j in range(count):
        tag = f"k{kernel}-j{j}"
        line = f"--notebook {notebook} --no-wait --strategy none --name {tag} --args {tag}"
        with capture_output() as cap:
            job = ip.run_cell_magic("tfc_run", line, body)
        if job is None:
            print(json.dumps({"error": cap.stdout + cap.stderr}))
            sys.exit(1)
        ids.append([tag, job.id])
    print(json.dumps({"jobs": ids}))
""")


@pytest.mark.slow
def test_fifty_concurrent_jobs_from_five_kernels(tmp_path: Path, tfc_env: Path) -> None:
    started = time.monotonic()
    home = Path(os.environ["TFC_JUPYTER_HOME"])
    nb = write_notebook(tmp_path / "load.ipynb", "%%tfc_run --no-wait --strategy none\n" + BODY)
    nb.with_suffix(".body").write_text(BODY)
    go = tmp_path / "go"
    kernels = [
        subprocess.Popen(
            [sys.executable, "-c", KERNEL, str(k), str(JOBS_PER_KERNEL), str(nb), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(KERNELS)
    ]
    time.sleep(1.0)  # the shells start while the signal is withheld
    go.touch()
    submitted: dict[str, str] = {}
    try:
        for proc in kernels:
            out, err = proc.communicate(timeout=LOAD_DEADLINE_S / 2)
            if proc.returncode != 0:  # the whole traceback, not an assertion's shortened repr
                pytest.fail(f"a kernel ended {proc.returncode}:\n{out[-2000:]}\n{err[-6000:]}")
            submitted.update(dict(json.loads(out.strip().splitlines()[-1])["jobs"]))
    finally:
        for proc in kernels:
            if proc.poll() is None:
                proc.kill()
    submit_s = time.monotonic() - started
    assert len(submitted) == KERNELS * JOBS_PER_KERNEL
    assert len(set(submitted.values())) == len(submitted), "a job id was given twice"

    store = store_for(home)
    records = {r.id: r for r in store.list(limit=None)}
    assert set(records) == set(submitted.values()), "every job recorded, nothing else"

    deadline = started + LOAD_DEADLINE_S
    final = {}
    for tag, job_id in submitted.items():
        record = Job(job_id, store).wait(timeout=max(1.0, deadline - time.monotonic()))
        assert record.state.is_terminal(), f"{tag} still {record.state} at the deadline"
        final[tag] = record
    states = {r.state for r in final.values()}
    assert states == {JobState.SUCCEEDED}, {t: (r.state, r.error) for t, r in final.items()}

    for tag, record in final.items():
        lines = (Path(record.log_dir) / "chief.log").read_text().splitlines()
        mine = [line for line in lines if not line.startswith("[tfc_runtime]")]
        expected = [f"{tag} line {i:04d} " + "x" * 60 for i in range(LINES)] + [f"{tag} done"]
        assert mine == expected, f"{tag}: log not intact ({len(mine)} lines)"
        assert not any(line.startswith("[") and tag not in line for line in mine)

    records = {r.id: r for r in store.list(limit=None)}
    # Each record keeps its supervisor's and its chief's pid (however the launch and the
    # supervisor's first write raced) ...
    assert all(r.handle.get("replicas", {}).get("chief") for r in records.values())
    pids = [pid for record in records.values() for pid in job_pids(record)]
    assert len(pids) == 2 * len(final)
    # ... and none of them runs any more.
    assert wait_gone(pids) == [], "processes left running"
    took = time.monotonic() - started
    print(
        f"\n[load] {len(final)} jobs from {KERNELS} kernels: submitted in {submit_s:.1f} s, "
        f"all {len(final)} succeeded with intact logs in {took:.1f} s, 0 processes left"
    )
    assert took < LOAD_DEADLINE_S
