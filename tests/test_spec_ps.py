"""Parameter servers and an evaluator: JobSpec rules, flags, Vertex AI pools 2 and 3, local env."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from vertex_validate import validate

from tfc_jupyter.backends.local.backend import LocalBackend, check_estimator_tensorflow, cluster_env
from tfc_jupyter.config import Settings
from tfc_jupyter.errors import BackendError, SpecError
from tfc_jupyter.job import options, prices
from tfc_jupyter.job.catalog import lookup, tpu_machine
from tfc_jupyter.job.spec import Decisions, JobSpec, Strategy
from tfc_jupyter.jobs import store_for
from tfc_jupyter.notebook.capture import Selection
from tfc_jupyter.notebook.convert import Cell
from tfc_jupyter.planner.plan import make_plan

CPU, T4 = lookup("CPU"), lookup("T4_1X")
ESTIMATOR_CELL = "import tensorflow as tf\nconfig = tf.estimator.RunConfig()\n"


def test_ps_and_evaluator_defaults_replicas_and_cost() -> None:
    spec = JobSpec(chief=T4, worker_count=2, ps_count=2, evaluator=True)
    assert spec.ps_machine == CPU  # parameter servers hold variables: CPU machines
    assert spec.evaluator_machine == T4  # the evaluator runs the model like the chief
    assert spec.replica_count == 6
    h100, disk = lookup("H100_8X"), prices.boot_disk_price("pd-ssd", 100) or 0.0
    t4 = 4 * ((T4.price_per_hour or 0) + disk) + 2 * ((CPU.price_per_hour or 0) + disk)
    assert spec.cost_per_hour() == pytest.approx(t4, abs=1e-5)
    priced = JobSpec(chief=h100, worker_count=2, ps_count=2, evaluator=True)
    expected = 4 * ((h100.price_per_hour or 0) + disk) + 2 * ((CPU.price_per_hour or 0) + disk)
    assert priced.cost_per_hour() == pytest.approx(expected, abs=1e-5)
    assert spec.resolved_strategy() is Strategy.NONE  # tf.estimator places variables on the ps
    again = JobSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again == spec
    evaluator_only = JobSpec(chief=CPU, worker_count=1, evaluator=True)
    assert evaluator_only.resolved_strategy() is Strategy.MULTI_WORKER_MIRRORED


@pytest.mark.parametrize(
    ("fields", "message", "fix"),
    [
        (dict(ps_count=1), "parameter servers without workers", "add --workers N"),
        (dict(evaluator=True), "an evaluator without workers", "tf.estimator"),
        (
            dict(ps_count=1, worker_count=1, strategy="multi_worker_mirrored"),
            "--ps with strategy multi_worker_mirrored",
            "use --strategy auto (or none)",
        ),
        (dict(chief=tpu_machine("v3-8"), ps_count=1), "takes no parameter servers", "drop --ps"),
        (
            dict(chief=tpu_machine("v3-8"), evaluator=True, decided=Decisions(estimator=True)),
            "on one TPU host: it takes no parameter servers and no evaluator",
            "drop --ps and --evaluator",
        ),
        (dict(worker_count=1, ps_count=-1), "--ps -1 is out of range", "use 0 to 256"),
        (
            dict(worker_count=1, ps_count=1, ps_machine=tpu_machine("v2-8")),
            "parameter servers cannot run on a TPU host",
            "--ps-machine",
        ),
    ],
)
def test_invalid_combinations_name_the_fix(fields: dict[str, Any], message: str, fix: str) -> None:
    with pytest.raises(SpecError) as info:
        JobSpec(**fields)
    text = str(info.value)
    assert message in text and fix in text and "\n" not in text


def test_a_chief_based_estimator_job_may_have_ps_and_evaluator() -> None:
    spec = JobSpec(chief=CPU, ps_count=1, evaluator=True, decided=Decisions(estimator=True))
    assert spec.replica_count == 3 and spec.resolved_strategy() is Strategy.NONE


def test_flags(settings: Settings) -> None:
    ns = options.parse_line("--workers 2 --ps 2 --ps-machine n1-highmem-8 --evaluator CPU")
    spec = options.to_spec(ns, settings)
    assert (spec.ps_count, spec.ps_machine, spec.evaluator) == (2, lookup("n1-highmem-8"), True)
    assert spec.evaluator_machine == CPU
    bare = options.to_spec(options.parse_line("--workers 1 --evaluator"), settings)
    assert bare.evaluator and bare.evaluator_machine == bare.chief
    with pytest.raises(SpecError, match="--ps-machine without --ps"):
        options.to_spec(options.parse_line("--workers 1 --ps-machine CPU"), settings)
    with pytest.raises(SpecError, match="unknown machine 'T9_1X'"):
        options.to_spec(options.parse_line("--workers 1 --evaluator T9_1X"), settings)
    chief_only = options.parse_line("--ps 1")
    with pytest.raises(SpecError, match="without workers"):
        options.to_spec(chief_only, settings)
    assert options.to_spec(chief_only, settings, estimator=True).ps_count == 1


def _request(settings: Settings, line: str, source: str = "print('hi')") -> dict[str, Any]:
    sel = Selection(cells=[Cell(1, source)], notebook=None, how="test")
    plan = make_plan(sel, options.parse_line(line), settings)
    return plan.request()["body"]


def test_vertex_pools_2_and_3(settings: Settings) -> None:
    body = _request(settings, "--backend vertex --workers 2 --gpus 1 --ps 3 --evaluator CPU")
    chief, workers, ps, evaluator = body["jobSpec"]["workerPoolSpecs"]
    assert [p["replicaCount"] for p in (chief, workers, ps, evaluator)] == ["1", "2", "3", "1"]
    assert ps["machineSpec"] == {"machineType": "n1-standard-4"}
    assert evaluator["machineSpec"] == {"machineType": "n1-standard-4"}
    assert workers["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_T4"
    args = ps["containerSpec"]["args"]
    assert args[args.index("--strategy") + 1] == "none"
    assert body["jobSpec"]["scheduling"]["restartJobOnWorkerRestart"] is False
    assert validate(body) == []


def test_vertex_keeps_empty_slots_before_a_used_pool(settings: Settings) -> None:
    body = _request(settings, "--backend vertex --ps 1 --evaluator", ESTIMATOR_CELL)
    pools = body["jobSpec"]["workerPoolSpecs"]
    assert len(pools) == 4 and pools[1] == {} and pools[2]["replicaCount"] == "1"
    assert pools[3]["machineSpec"] == pools[0]["machineSpec"]
    assert validate(body) == []
    types = pytest.importorskip("google.cloud.aiplatform_v1.types")
    job = types.CustomJob.from_json(json.dumps(body))  # the real client accepts it
    assert [p.replica_count for p in job.job_spec.worker_pool_specs] == [1, 0, 1, 1]


def test_local_cluster_env_has_pools_2_and_3() -> None:
    spec = JobSpec(chief=CPU, worker_count=1, ps_count=2, evaluator=True)
    replicas = dict(cluster_env(spec, "job-1", [1001, 1002, 1003, 1004, 1005]))
    assert list(replicas) == ["chief", "worker-0", "ps-0", "ps-1", "evaluator-0"]
    spec_of = json.loads(replicas["ps-1"]["CLUSTER_SPEC"])
    assert spec_of["cluster"] == {
        "workerpool0": ["127.0.0.1:1001"],
        "workerpool1": ["127.0.0.1:1002"],
        "workerpool2": ["127.0.0.1:1003", "127.0.0.1:1004"],
        "workerpool3": ["127.0.0.1:1005"],
    }
    assert spec_of["task"] == {"type": "workerpool2", "index": 1, "trial": ""}
    evaluator = json.loads(replicas["evaluator-0"]["TF_CONFIG"])
    assert evaluator["task"]["type"] == "evaluator"
    assert evaluator["cluster"] == {
        "chief": ["127.0.0.1:1001"],
        "worker": ["127.0.0.1:1002"],
        "ps": ["127.0.0.1:1003", "127.0.0.1:1004"],
    }  # the evaluator is no part of the training cluster


def test_local_backend_refuses_estimator_code_on_new_tensorflow(tmp_path: Path) -> None:
    spec = JobSpec(chief=CPU, worker_count=1, ps_count=1, decided=Decisions(estimator=True))
    check_estimator_tensorflow(spec, "2.15.1")  # the last TensorFlow with tf.estimator: fine
    check_estimator_tensorflow(spec.decide(estimator=False), "2.21.0")
    with pytest.raises(BackendError) as info:
        check_estimator_tensorflow(spec, "2.16.2")
    assert "TensorFlow 2.16.2 (this kernel's) no longer has" in str(info.value)
    assert "scripts/bootstrap_tf215.sh" in str(info.value)
    import tensorflow as tf  # this environment's: 2.16 or newer

    with pytest.raises(BackendError, match=f"TensorFlow {tf.__version__} .* no longer has"):
        LocalBackend(store_for(tmp_path)).check(spec)
