"""A real Estimator trained on this machine with ``tfc_runtime.run_config()`` (TensorFlow 2.15)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tensorflow as tf
import tfc_runtime
from tf215_helpers import input_fn, job_env, model_fn
from tfc_runtime.strategy import build_strategy


def test_estimator_trains_and_checkpoints_in_the_job_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    job_env(monkeypatch, tmp_path)
    config = tfc_runtime.run_config(save_checkpoints_steps=40, keep_checkpoint_max=2)
    estimator = tf.estimator.Estimator(model_fn, config=config)
    estimator.train(input_fn, max_steps=1)
    before = estimator.evaluate(input_fn, steps=4)["loss"]
    estimator.train(input_fn, max_steps=120)
    after = estimator.evaluate(input_fn, steps=4)
    assert after["global_step"] == 120
    assert after["loss"] < before / 10
    checkpoint = tf.train.latest_checkpoint(str(tmp_path / "model"))
    assert checkpoint is not None and checkpoint.endswith("model.ckpt-120")
    kept = sorted(p.name for p in (tmp_path / "model").glob("model.ckpt-*.index"))
    assert len(kept) == 2  # keep_checkpoint_max reached RunConfig


def test_train_and_evaluate_under_the_jobs_mirrored_strategy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    job_env(monkeypatch, tmp_path)
    try:
        build_strategy("mirrored")  # what --strategy mirrored builds in the job (1 CPU replica)
        config = tfc_runtime.run_config(save_checkpoints_steps=50)
        estimator = tf.estimator.Estimator(model_fn, config=config)
        train = tf.estimator.TrainSpec(input_fn, max_steps=100)
        evaluate = tf.estimator.EvalSpec(input_fn, steps=4, throttle_secs=0)
        metrics, _ = tf.estimator.train_and_evaluate(estimator, train, evaluate)
    finally:
        build_strategy("none")
    assert metrics["global_step"] == 100
    assert metrics["loss"] < 0.05
