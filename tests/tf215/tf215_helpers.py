"""Helpers of the TensorFlow 2.15 tests: a clean job environment and a small Estimator model.

(No conftest.py here: a second ``conftest`` module breaks ``from conftest import`` elsewhere.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

# Variables the runtime reads: each test starts without them.
JOB_VARS = (
    "TF_CONFIG",
    "CLUSTER_SPEC",
    "TFC_REMOTE",
    "TFC_JOB_DIR",
    "AIP_MODEL_DIR",
    "AIP_CHECKPOINT_DIR",
    "AIP_TENSORBOARD_LOG_DIR",
    "TPU_NAME",
    "TPU_CONFIG",
    "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS",
    "TFC_TPU_TIMEOUT",
)

#: The cluster of the RunConfig document's examples.
DOC_CLUSTER = {
    "chief": ["host0:2222"],
    "ps": ["host1:2222", "host2:2222"],
    "worker": ["host3:2222", "host4:2222", "host5:2222"],
}


def job_env(monkeypatch: pytest.MonkeyPatch, job_dir: Path) -> pytest.MonkeyPatch:
    """No job variables but ``TFC_JOB_DIR=job_dir``; the working directory is ``job_dir``."""
    for name in JOB_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TFC_JOB_DIR", str(job_dir))
    monkeypatch.chdir(job_dir)
    return monkeypatch


def input_fn(batch_size: int = 32, n: int = 256) -> Any:
    """Synthetic linear data ``y = x0 - 2 x1 + 0.5 x2 + 0.3`` as an Estimator input_fn result."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5], dtype="float32") + 0.3)[:, None]
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(batch_size)


def model_fn(features: Any, labels: Any, mode: str) -> Any:
    """A linear regression as an Estimator model_fn (graph-mode variables, SGD)."""
    w = tf.compat.v1.get_variable("w", [3, 1])
    b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) + b - labels))
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss)
    step = tf.compat.v1.train.get_global_step()
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, step)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
