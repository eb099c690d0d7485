"""TPUConfig and the TPU RunConfig through tfc_runtime (TensorFlow 2.15): construction, checks."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf
import tfc_runtime
from tf215_helpers import job_env

MODES = tf.compat.v1.estimator.tpu.InputPipelineConfig


class TwoHostsOfEightCores:
    """A resolver's answers for a TPU of 2 hosts x 8 cores (the count is all TPUConfig needs)."""

    def master(self) -> str:
        return ""

    def get_job_name(self) -> str:
        return "worker"

    def num_accelerators(self) -> dict[str, int]:
        return {"TPU": 8}

    def cluster_spec(self) -> Any:
        return tf.train.ClusterSpec({"worker": ["10.0.0.2:8470", "10.0.0.3:8470"]})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("iterations", [1, 100, "100", "60s", "5m", "1h"])
def test_iterations_per_loop_as_steps_or_time(
    iterations: int | str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    job_env(monkeypatch, tmp_path)
    config = tfc_runtime.tpu_config(iterations_per_loop=iterations)
    assert str(config.iterations_per_loop) == str(iterations)
    assert config.num_shards is None  # no TPU here: nothing to count


@pytest.mark.parametrize("iterations", [0, -3, "10x", "s60", "", True, 1.5])
def test_bad_iterations_per_loop(
    iterations: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    job_env(monkeypatch, tmp_path)
    with pytest.raises(ValueError, match=r"^iterations_per_loop must be a positive step count"):
        tfc_runtime.tpu_config(iterations_per_loop=iterations)


def test_cores_per_replica_and_input_modes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    job_env(monkeypatch, tmp_path)
    for cores in (1, 2, 4, 8, 16, 32, 64, 128):
        assert tfc_runtime.tpu_config(num_cores_per_replica=cores).num_cores_per_replica == cores
    for bad in (3, 6, 256, 0):
        with pytest.raises(ValueError, match=r"one of 1, 2, 4, 8, 16, 32, 64, 128; got"):
            tfc_runtime.tpu_config(num_cores_per_replica=bad)
    config = tfc_runtime.tpu_config(
        per_host_input_for_training="per_host_v2",
        eval_training_input_configuration="SLICED",
        num_cores_per_replica=4,
        input_partition_dims=[[1, 2, 2, 1], None],
        initial_infeed_sleep_secs=5,
    )
    assert config.per_host_input_for_training == MODES.PER_HOST_V2
    assert config.eval_training_input_configuration == MODES.SLICED
    assert config.input_partition_dims == [[1, 2, 2, 1], None]
    per_shard = tfc_runtime.tpu_config(per_host_input_for_training=False)
    assert per_shard.per_host_input_for_training == MODES.PER_SHARD_V1
    with pytest.raises(ValueError, match="per_host_input_for_training must be one of"):
        tfc_runtime.tpu_config(per_host_input_for_training="PER_HOST_V3")
    with pytest.raises(ValueError, match="eval_training_input_configuration must be one of"):
        tfc_runtime.tpu_config(eval_training_input_configuration="PER_HOST_V2")
    with pytest.raises(ValueError, match="input_partition_dims needs"):
        tfc_runtime.tpu_config(input_partition_dims=[[1, 2]])


def test_num_shards_derived_from_the_resolvers_cores(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    job_env(monkeypatch, tmp_path)
    resolver = TwoHostsOfEightCores()
    assert tfc_runtime.tpu_config(resolver=resolver).num_shards == 16  # 2 hosts x 8 cores
    assert tfc_runtime.tpu_config(resolver=resolver, num_cores_per_replica=4).num_shards == 4
    assert tfc_runtime.tpu_config(resolver=resolver, num_shards=2).num_shards == 2  # as given
    with pytest.raises(ValueError, match="does not divide the TPU's 16 cores"):
        tfc_runtime.tpu_config(resolver=resolver, num_cores_per_replica=32)


def test_tpu_run_config_on_a_tpu_vm_resolver(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job_env(monkeypatch, tmp_path)
    cluster = {"cluster": {"chief": ["127.0.0.1:2222"]}, "task": {"type": "chief", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(cluster))  # a one-replica TPU job on Vertex AI
    resolver = tfc_runtime.tpu_resolver("local")
    config = tfc_runtime.tpu_run_config(resolver=resolver, save_checkpoints_steps=500)
    assert isinstance(config, tf.compat.v1.estimator.tpu.RunConfig)
    assert config.cluster is resolver and config.master == ""
    assert config.tpu_config.iterations_per_loop == 2 and config.tpu_config.num_shards is None
    assert config.is_chief and config.save_checkpoints_steps == 500
    assert config.model_dir == str(tmp_path / "model")
    out = capsys.readouterr().out
    assert "TPU: local (from argument)" in out and "sees no TPU cores" in out


def test_tpu_run_config_bound_to_a_grpc_resolver(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    job_env(monkeypatch, tmp_path)
    port = _closed_port()  # building the config talks to no one
    monkeypatch.setenv("TPU_NAME", f"grpc://127.0.0.1:{port}")
    resolver = tfc_runtime.tpu_resolver()
    tpu = tfc_runtime.tpu_config(iterations_per_loop="30s", num_shards=8)
    config = tfc_runtime.tpu_run_config(resolver=resolver, tpu_config=tpu)
    assert config.master == f"grpc://127.0.0.1:{port}"
    assert config.evaluation_master == config.master
    assert config.cluster_spec.as_dict() == {"worker": [f"127.0.0.1:{port}"]}
    assert config.tpu_config is tpu
    with pytest.raises(ValueError, match="both set"):
        tfc_runtime.tpu_run_config(
            resolver=resolver, tpu_config=tpu, save_checkpoints_steps=1, save_checkpoints_secs=1
        )
