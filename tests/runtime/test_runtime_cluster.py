"""tfc_runtime.cluster: TF_CONFIG, Vertex AI's CLUSTER_SPEC, single machine."""

from __future__ import annotations

import json

import pytest
from tfc_runtime.cluster import (
    ClusterInfo,
    cluster_info,
    ensure_tf_config,
    tf_config_from_cluster_spec,
)

POOLS = {
    "workerpool0": ["host0:2222"],
    "workerpool1": ["host1:2222", "host2:2222"],
    "workerpool2": ["host3:2222"],
    "workerpool3": ["host4:2222"],
}
TF_CLUSTER = {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"], "ps": ["host3:2222"]}


def vertex_spec(pool: str, index: int) -> dict[str, object]:
    """A CLUSTER_SPEC exactly as Vertex AI sets it on the replica ``pool``/``index``."""
    return {
        "cluster": POOLS,
        "environment": "cloud",
        "task": {"type": pool, "index": index, "trial": ""},
    }


@pytest.mark.parametrize(
    ("pool", "index", "task_type", "chief"),
    [
        ("workerpool0", 0, "chief", True),
        ("workerpool1", 1, "worker", False),
        ("workerpool2", 0, "ps", False),
        ("workerpool3", 0, "evaluator", False),
    ],
)
def test_cluster_spec_translates_every_pool(
    pool: str, index: int, task_type: str, chief: bool
) -> None:
    config = tf_config_from_cluster_spec(vertex_spec(pool, index))
    assert config == {
        "cluster": TF_CLUSTER,  # the evaluator is not part of the cluster, as on Vertex
        "task": {"type": task_type, "index": index, "trial": ""},
        "environment": "cloud",
    }
    info = cluster_info({"CLUSTER_SPEC": json.dumps(vertex_spec(pool, index))})
    assert (info.task_type, info.task_index, info.source) == (task_type, index, "CLUSTER_SPEC")
    assert info.is_chief is chief
    assert info.num_workers == 3
    assert info.is_multi_worker


def test_cluster_spec_without_optional_pools() -> None:
    spec = {
        "cluster": {"workerpool0": ["h0:1"], "workerpool1": []},
        "task": {"type": "workerpool0"},
    }
    assert tf_config_from_cluster_spec(spec) == {
        "cluster": {"chief": ["h0:1"]},
        "task": {"type": "chief", "index": 0},
    }


def test_unknown_pool_is_refused() -> None:
    with pytest.raises(ValueError, match="workerpool7"):
        tf_config_from_cluster_spec({"cluster": {"workerpool7": ["h:1"]}, "task": {}})
    with pytest.raises(RuntimeError, match=r"^CLUSTER_SPEC: unknown task type"):
        cluster_info({"CLUSTER_SPEC": json.dumps({"cluster": {}, "task": {"type": "boss"}})})


def test_tf_config_wins_over_cluster_spec() -> None:
    tf_config = {
        "cluster": {"worker": ["a:1", "b:2", "c:3"]},
        "task": {"type": "worker", "index": 0},
    }
    env = {
        "TF_CONFIG": json.dumps(tf_config),
        "CLUSTER_SPEC": json.dumps(vertex_spec("workerpool3", 0)),
    }
    info = cluster_info(env)
    assert info == ClusterInfo(
        "worker", 0, {"chief": [], "worker": ["a:1", "b:2", "c:3"], "ps": []}, "TF_CONFIG"
    )
    assert info.is_chief  # worker 0 leads when there is no chief
    assert info.num_workers == 3
    assert info.describe() == "worker:0 of 3 workers (TF_CONFIG)"
    second = cluster_info(
        {"TF_CONFIG": json.dumps({**tf_config, "task": {"type": "worker", "index": 1}})}
    )
    assert not second.is_chief


def test_single_machine() -> None:
    info = cluster_info({})
    assert (info.task_type, info.task_index, info.source) == ("chief", 0, "none")
    assert info.cluster == {"chief": [], "worker": [], "ps": []}
    assert info.is_chief and info.num_workers == 1 and not info.is_multi_worker
    assert cluster_info({"TF_CONFIG": "  ", "CLUSTER_SPEC": ""}).source == "none"


@pytest.mark.parametrize("name", ["TF_CONFIG", "CLUSTER_SPEC"])
@pytest.mark.parametrize("value", ['{"cluster": ', "[1, 2]"])
def test_malformed_json_names_the_variable(name: str, value: str) -> None:
    with pytest.raises(RuntimeError, match=f"^{name} ") as caught:
        cluster_info({name: value})
    assert "\n" not in str(caught.value)


def test_ensure_tf_config_sets_it_from_cluster_spec() -> None:
    env = {"CLUSTER_SPEC": json.dumps(vertex_spec("workerpool1", 0))}
    ensure_tf_config(env)
    assert json.loads(env["TF_CONFIG"])["task"] == {"type": "worker", "index": 0, "trial": ""}
    mine = {"TF_CONFIG": '{"task": {"type": "chief"}}', "CLUSTER_SPEC": env["CLUSTER_SPEC"]}
    ensure_tf_config(mine)
    assert mine["TF_CONFIG"] == '{"task": {"type": "chief"}}'  # a set TF_CONFIG is kept
    empty: dict[str, str] = {}
    ensure_tf_config(empty)
    assert empty == {}


def test_one_replica_gets_no_tf_config() -> None:
    """Vertex AI sets no TF_CONFIG for a one-replica job; a one-task TF_CONFIG would break code
    that builds MultiWorkerMirroredStrategy after TensorFlow started."""
    spec = {
        "cluster": {"workerpool0": ["host0:2222"]},
        "environment": "cloud",
        "task": {"type": "workerpool0", "index": 0, "trial": ""},
    }
    env = {"CLUSTER_SPEC": json.dumps(spec)}
    ensure_tf_config(env)
    assert "TF_CONFIG" not in env
    assert cluster_info(env).describe() == "chief:0 of 1 worker (CLUSTER_SPEC)"
