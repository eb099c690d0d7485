"""``tfc_runtime.run_config()`` on TensorFlow 2.15: what the RunConfig document promises."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import tensorflow as tf
import tfc_runtime
from tf215_helpers import DOC_CLUSTER, job_env
from tfc_runtime.strategy import build_strategy

# The document's three TF_CONFIG examples. It writes `master == 'host4:2222'`; RunConfig has
# returned the address with its gRPC scheme for years, which is what TensorFlow connects with.
DOC_EXAMPLES = [
    (
        {"type": "worker", "index": 1},
        {
            "master": "grpc://host4:2222",
            "task_id": 1,
            "num_ps_replicas": 2,
            "num_worker_replicas": 4,
            "task_type": "worker",
            "is_chief": False,
        },
        DOC_CLUSTER,
    ),
    (
        {"type": "chief", "index": 0},
        {
            "master": "grpc://host0:2222",
            "task_id": 0,
            "num_ps_replicas": 2,
            "num_worker_replicas": 4,
            "task_type": "chief",
            "is_chief": True,
        },
        DOC_CLUSTER,
    ),
    (
        {"type": "evaluator", "index": 0},
        {
            "master": "",
            "evaluation_master": "",
            "task_id": 0,
            "num_ps_replicas": 0,
            "num_worker_replicas": 0,
            "task_type": "evaluator",
            "is_chief": False,
        },
        {},  # "evaluator is not part of training cluster"
    ),
]


@pytest.mark.parametrize(("task", "expected", "cluster_spec"), DOC_EXAMPLES)
def test_the_documents_tf_config_examples(
    task: dict[str, object],
    expected: dict[str, object],
    cluster_spec: dict[str, list[str]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    job_env(monkeypatch, tmp_path)
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": DOC_CLUSTER, "task": task}))
    config = tfc_runtime.run_config()
    assert {key: getattr(config, key) for key in expected} == expected
    assert config.cluster_spec.as_dict() == cluster_spec
    assert config.model_dir == str(tmp_path / "model")


def test_global_id_in_cluster_follows_the_documents_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    job_env(monkeypatch, tmp_path)
    table = {
        ("chief", 0): 0,
        ("worker", 0): 1,
        ("worker", 1): 2,
        ("worker", 2): 3,
        ("ps", 0): 4,
        ("ps", 1): 5,
    }
    seen = {}
    for task_type, task_id in table:
        task = {"type": task_type, "index": task_id}
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": DOC_CLUSTER, "task": task}))
        seen[(task_type, task_id)] = tfc_runtime.run_config().global_id_in_cluster
    assert seen == table


def _vertex_cluster_spec(pool: str, index: int) -> str:
    """CLUSTER_SPEC as Vertex AI sets it: chief, 2 workers, a ps and an evaluator."""
    pools = {
        "workerpool0": ["h0:2222"],
        "workerpool1": ["h1:2222", "h2:2222"],
        "workerpool2": ["h3:2222"],
        "workerpool3": ["h4:2222"],
    }
    task = {"type": pool, "index": index, "trial": ""}
    return json.dumps({"cluster": pools, "environment": "cloud", "task": task})


@pytest.mark.parametrize(
    ("pool", "index", "task_type", "num_ps", "num_workers", "is_chief"),
    [
        ("workerpool0", 0, "chief", 1, 3, True),
        ("workerpool1", 1, "worker", 1, 3, False),
        ("workerpool2", 0, "ps", 1, 3, False),
        ("workerpool3", 0, "evaluator", 0, 0, False),
    ],
)
def test_cluster_spec_is_translated_for_runconfig(
    pool: str,
    index: int,
    task_type: str,
    num_ps: int,
    num_workers: int,
    is_chief: bool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    job_env(monkeypatch, tmp_path)
    monkeypatch.setenv("CLUSTER_SPEC", _vertex_cluster_spec(pool, index))
    config = tfc_runtime.run_config()
    assert (config.task_type, config.task_id) == (task_type, index)
    assert (config.num_ps_replicas, config.num_worker_replicas) == (num_ps, num_workers)
    assert config.is_chief is is_chief
    tf_config = json.loads(os.environ["TF_CONFIG"])  # TensorFlow itself reads this one
    assert set(tf_config["cluster"]) == {"chief", "worker", "ps"}  # no evaluator in it


def test_tf_config_with_vertex_pool_names_is_rewritten(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    job_env(monkeypatch, tmp_path)
    monkeypatch.setenv("TF_CONFIG", _vertex_cluster_spec("workerpool1", 0))
    with pytest.raises(ValueError, match='must have one "chief" node'):
        tf.estimator.RunConfig()  # what RunConfig alone makes of Vertex's names
    config = tfc_runtime.run_config()
    assert (config.task_type, config.task_id, config.master) == ("worker", 0, "grpc://h1:2222")
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    assert task == {"type": "worker", "index": 0, "trial": ""}


def test_checkpoint_notes_become_errors_and_warnings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job_env(monkeypatch, tmp_path)
    with pytest.raises(ValueError) as info:
        tfc_runtime.run_config(save_checkpoints_steps=100, save_checkpoints_secs=60)
    assert "\n" not in str(info.value) and "keep save_checkpoints_steps" in str(info.value)

    tfc_runtime.run_config(save_checkpoints_secs=60)  # one machine: no evaluator to miss them
    assert "warning" not in capsys.readouterr().err

    monkeypatch.setenv("CLUSTER_SPEC", _vertex_cluster_spec("workerpool0", 0))
    config = tfc_runtime.run_config(save_checkpoints_secs=60)
    err = capsys.readouterr().err
    assert "keep_checkpoint_max=5 (the default) are deleted after 300 s" in err
    assert config.save_checkpoints_secs == 60 and config.save_checkpoints_steps is None
    tfc_runtime.run_config(save_checkpoints_secs=60, keep_checkpoint_max=50)
    assert "warning" not in capsys.readouterr().err


def test_model_dir_and_distribution_come_from_the_job(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job_env(monkeypatch, tmp_path)
    monkeypatch.setenv("AIP_MODEL_DIR", str(tmp_path / "aip" / "model"))
    try:
        mirrored = build_strategy("mirrored")  # one CPU replica here, a MirroredStrategy still
        config = tfc_runtime.run_config()
        assert config.train_distribute is mirrored and config.eval_distribute is mirrored
        assert config.model_dir == str(tmp_path / "aip" / "model")
        assert "train and eval under MirroredStrategy" in capsys.readouterr().out
        assert tfc_runtime.run_config(train_distribute=None).train_distribute is None
        build_strategy("one_device")
        assert tfc_runtime.run_config().train_distribute is None  # Estimator needs none there
    finally:
        build_strategy("none")
