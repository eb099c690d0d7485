"""Watching never changes the training: custom loops under a multi-worker strategy, reported.

TensorFlow's distributed custom-training guide, as ``tests/runtime/custom_loop_job.py`` writes
it, runs as a real local job of two tasks (``--workers 1``): its own MultiWorkerMirroredStrategy,
Keras metrics updated in ``strategy.run`` and reset every epoch (at its end or at the start of
the next), with Keras 3 metrics (no ``fit``) and with tf-keras (a ``fit`` after the loop, which
has the plan run tf-keras). The job must run to the end on both tasks, and ``job.metrics`` must
hold, round for round, what the loop printed: the runtime reads nothing itself in such a job (a
read on the chief alone is a collective the worker never joins), only what the code read.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tfc_jupyter.client import Client
from tfc_jupyter.job.options import JobOptions
from tfc_jupyter.returns.results import LOOP
from tfc_jupyter.store.records import JobState

pytestmark = pytest.mark.slow

LOOP_JOB = Path(__file__).resolve().parent / "runtime" / "custom_loop_job.py"


@pytest.mark.parametrize("keras", ["keras3", "tf_keras"])
@pytest.mark.parametrize("when", ["end", "start"])
def test_a_multi_worker_custom_loop_runs_and_reports_what_it_printed(
    tmp_path: Path, tfc_env: Path, keras: str, when: str
) -> None:
    script = tmp_path / "loop.py"
    script.write_text(LOOP_JOB.read_text())
    env = ("LOOP_STRATEGY=multi_worker", f"LOOP_RESET={when}")
    env += ("LOOP_FIT=1",) if keras == "tf_keras" else ("LOOP_FIT=0",)
    client = Client()
    plan = client.plan_script(script, JobOptions.of(workers=1, env=list(env)))
    assert plan.spec.resolved_strategy().value == "none"  # the code makes its own
    job = client.submit(plan)
    record = job.wait(timeout=240)
    assert record.state is JobState.SUCCEEDED, (record.error, job.logs("worker-0")[-2000:])
    printed = json.loads(re.findall(r"PRINTED (\[.*\])$", job.logs(), re.M)[0])
    loop = [row for row in job.metrics if row["fit"] == LOOP]
    assert [row["epoch"] for row in loop] == [1, 2, 3]
    for row, seen in zip(loop, printed, strict=True):
        assert {k: v for k, v in row.items() if k not in ("fit", "epoch")} == pytest.approx(seen)
    fits = [row["epoch"] for row in job.metrics if row["fit"] == 0]
    assert fits == ([1] if keras == "tf_keras" else [])
