"""A failed job's one line says what went wrong and where, even for a replica killed by a signal.

Real local jobs: an error raised inside a ``tf.function`` (TensorFlow's ``in user code:``
wrapping), a segfault in native code, and a SIGKILL as the kernel's OOM killer sends it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from jobutil import run_job, write_notebook

from tfc_jupyter.store.records import JobState

CUSTOM_STEP = """\
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.1)

@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
"""


@pytest.mark.slow
def test_error_line_is_the_real_message(tmp_path: Path) -> None:
    """An explicit strategy around a custom step fails (the plan warned); the line says why."""
    nb = write_notebook(tmp_path / "nb.ipynb", CUSTOM_STEP, "train_step(tf.ones((4, 2)))")
    _, record = run_job(nb, tmp_path / "home", "--strategy one_device")
    assert record.state is JobState.FAILED
    assert record.error is not None
    assert "'NoneType' object has no attribute 'merge_call'" in record.error
    assert "in user code" not in record.error


@pytest.mark.slow
def test_segfault_names_the_cell(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", "import ctypes", "x = 1\nctypes.string_at(0)")
    _, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.FAILED
    assert record.error is not None
    assert record.error.startswith("chief was killed by signal 11 at cell 2, line 2: SIGSEGV")
    assert record.error_location == "cell 2, line 2"


@pytest.mark.slow
def test_oom_kill_names_the_cell_it_was_running(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "import os, signal, time\nprint('loading', flush=True)",
        "time.sleep(1.5)\nos.kill(os.getpid(), signal.SIGKILL)",
    )
    _, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.FAILED
    assert record.error is not None
    assert "killed by signal 9 at cell 2, line 1: SIGKILL" in record.error
    assert "last lines: " in record.error and "loading" in record.error
