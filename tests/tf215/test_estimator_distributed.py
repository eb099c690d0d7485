"""notebooks/estimator_multiworker.ipynb through the local backend: a real distributed Estimator.

Chief, worker, parameter server and evaluator run as four processes with Vertex AI's
CLUSTER_SPEC / TF_CONFIG; the parameter server never exits by itself, so the supervisor ends it
once the others are done. Bounded by jobutil's deadline (the job is cancelled past it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jobutil import job_pids, plan_for, run_job, wait_gone

from tfc_jupyter.job.spec import Strategy
from tfc_jupyter.store.records import JobState

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "estimator_multiworker.ipynb"


def test_the_notebook_plans_an_estimator_job_on_tensorflow_2_15() -> None:
    plan = plan_for(NOTEBOOK)
    spec = plan.spec
    assert spec.decided.estimator
    assert (spec.worker_count, spec.ps_count, spec.evaluator) == (1, 1, True)
    assert spec.resolved_strategy() is Strategy.NONE  # the ps tasks hold the variables
    assert [role for role, _, _ in plan.pools()] == ["chief", "worker", "ps", "evaluator"]
    assert any("uses tf.estimator" in note for note in plan.script.notes)


@pytest.mark.slow
def test_train_and_evaluate_on_chief_worker_ps_and_evaluator(tmp_path: Path) -> None:
    job, record = run_job(NOTEBOOK, tmp_path / "home")
    logs = job.logs()
    assert record.state is JobState.SUCCEEDED, logs
    codes = record.handle["exit_codes"]
    assert {name: codes[name] for name in ("chief", "worker-0", "evaluator-0")} == {
        "chief": 0,
        "worker-0": 0,
        "evaluator-0": 0,
    }
    assert codes["ps-0"] != 0  # ended by the supervisor: a ps never exits by itself
    for replica, task in (("chief", "chief:0"), ("worker-0", "worker:0"), ("ps-0", "ps:0")):
        assert f"[{replica}] [tfc_runtime] RunConfig: {task} (TF_CONFIG), 2 worker(s), 1 ps" in logs
    assert "[chief] chief:0 done, 1 ps, 2 training tasks" in logs
    found = re.search(r"\[evaluator-0\] final eval: loss (\S+) at step (\d+)", logs)
    assert found, logs
    assert float(found.group(1)) < 0.05 and int(found.group(2)) >= 60
    cluster_spec = json.loads((Path(job.record().job_dir) / "launch.json").read_text())
    envs = {r["name"]: json.loads(r["env"]["TF_CONFIG"]) for r in cluster_spec["replicas"]}
    assert set(envs["evaluator-0"]["cluster"]) == {"chief", "worker", "ps"}  # not the evaluator
    assert wait_gone(job_pids(record)) == []
