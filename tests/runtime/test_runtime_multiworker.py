"""Real 2-process MultiWorkerMirroredStrategy jobs: a chief and a worker on 127.0.0.1."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from runtime_helpers import Finished, free_ports, job_env, run_together

DEADLINE = 120  # seconds for the whole job; then both tasks are SIGKILLed

FIT = """\
import os
import numpy as np
import tensorflow as tf
import tfc_runtime

strategy = tf.distribute.get_strategy()
print("replicas", strategy.num_replicas_in_sync, "keras", tf.keras.__name__.split(".")[0])
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
x = np.ones((16, 3), "float32")
data = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(4)
history = model.fit(data, epochs=1, steps_per_epoch=2, verbose=0)
print("loss", history.history["loss"][-1])
model.save(tfc_runtime.task_save_path(os.path.join(tfc_runtime.model_dir(), "model.keras")))
"""

LOOP = """\
import tensorflow as tf
import tfc_runtime

strategy = tfc_runtime.strategy()
print("replicas", strategy.num_replicas_in_sync)
with strategy.scope():
    w = tf.Variable(0.0)
optimizer_lr = 0.1

@tf.function
def step(x):
    def replica_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x - 2.0 * x) ** 2)
        w.assign_sub(optimizer_lr * tape.gradient(loss, w))
        return loss
    losses = strategy.run(replica_step, args=(x,))
    return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

for _ in range(3):
    loss = step(tf.constant([1.0, 2.0]))
print("loss", float(loss))
"""


def cluster_env(tmp_path: Path, ports: list[int], task: str, **extra: str) -> dict[str, str]:
    """A task's environment: its own TF_CONFIG (or CLUSTER_SPEC for ``task == "vertex"``)."""
    chief, worker = (f"127.0.0.1:{p}" for p in ports)
    if task == "vertex":  # the worker as Vertex AI starts it: CLUSTER_SPEC only
        spec = {
            "cluster": {"workerpool0": [chief], "workerpool1": [worker]},
            "task": {"type": "workerpool1", "index": 0, "trial": ""},
            "environment": "cloud",
        }
        variables = {"CLUSTER_SPEC": json.dumps(spec)}
    else:
        cluster = {"chief": [chief], "worker": [worker]}
        config = {"cluster": cluster, "task": {"type": task, "index": 0}}
        variables = {"TF_CONFIG": json.dumps(config)}
    return job_env(TMPDIR=str(tmp_path), TFC_JOB_DIR=str(tmp_path / "job"), **variables, **extra)


def check_task(done: Finished) -> None:
    """The task ended well, trained on 2 replicas and reported a finite loss."""
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^replicas 2\b", done.stdout, re.MULTILINE)
    assert "waiting for the cluster to join" in done.stdout
    assert "strategy MultiWorkerMirroredStrategy, 2 replicas" in done.stdout
    losses = re.findall(r"^loss (\S+)$", done.stdout, re.MULTILINE)
    assert len(losses) == 1 and math.isfinite(float(losses[0]))


@pytest.mark.slow
@pytest.mark.timeout(DEADLINE + 30)
def test_model_fit_with_tf_keras(tmp_path: Path) -> None:
    (tmp_path / "fit.py").write_text(FIT)
    ports = free_ports(2)
    chief, worker = run_together(
        [
            (["fit.py"], cluster_env(tmp_path, ports, "chief")),
            (["fit.py"], cluster_env(tmp_path, ports, "vertex")),
        ],
        tmp_path,
        DEADLINE,
    )
    for done in (chief, worker):
        check_task(done)
        assert "TF_USE_LEGACY_KERAS=1" in done.stdout
        assert "replicas 2 keras tf_keras" in done.stdout
    assert "task chief:0 of 2 workers (TF_CONFIG)" in chief.stdout
    assert "task worker:0 of 2 workers (CLUSTER_SPEC)" in worker.stdout
    assert (tmp_path / "job" / "model" / "model.keras").is_file()  # the chief's copy
    assert (tmp_path / "tfc-task-worker-0" / "model.keras").is_file()  # the worker's own
    ready = sorted(p.name for p in (tmp_path / "job" / "status").glob("*.ready"))
    assert ready == ["chief-0.ready", "worker-0.ready"]


@pytest.mark.slow
@pytest.mark.timeout(DEADLINE + 30)
def test_custom_training_loop(tmp_path: Path) -> None:
    (tmp_path / "loop.py").write_text(LOOP)
    ports = free_ports(2)
    args = ["--strategy", "multi_worker_mirrored", "loop.py"]
    results = run_together(
        [(args, cluster_env(tmp_path, ports, task)) for task in ("chief", "worker")],
        tmp_path,
        DEADLINE,
    )
    for done in results:
        check_task(done)
