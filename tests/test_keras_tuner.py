"""Keras Tuner notebooks run as they are (issue 37): alone, as in Jupyter, and with
``--workers N`` as Keras Tuner's own distributed search, its variables set by the runtime (the
chief runs the oracle at its cluster address, each worker tunes trials of its own)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from jobutil import JOB_DEADLINE_S, write_notebook

from tfc_jupyter.client import Client

pytest.importorskip("keras_tuner")
pytestmark = [pytest.mark.usefixtures("tfc_env"), pytest.mark.slow]

DATA = """\
import numpy as np
import tensorflow as tf
rng = np.random.default_rng(0)
x = rng.normal(size=(128, 4)).astype("float32")
y = (x.sum(1) > 0).astype("float32")"""
SEARCH = """\
%%tfc_run {flags}
import time
import keras_tuner as kt
def build(hp):
    time.sleep(2)  # a trial takes a while: a worker that starts late still gets trials
    model = tf.keras.Sequential([
        tf.keras.Input((4,)),
        tf.keras.layers.Dense(hp.Int("units", 2, 16, step=2), activation="relu"),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    return model
tuner = kt.RandomSearch(build, objective="val_accuracy", max_trials=4, directory="kt",
                        project_name="search", seed=1)
tuner.search(x, y, epochs=1, validation_split=0.25, verbose=1)
print("BEST", tuner.get_best_hyperparameters(1)[0].get("units"))"""


def _run(tmp_path: Path, flags: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    nb = write_notebook(tmp_path / "tuner.ipynb", DATA, SEARCH.format(flags=flags))
    done = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", "run", str(nb)],
        capture_output=True,
        text=True,
        timeout=JOB_DEADLINE_S * 2,
        cwd=tmp_path,
    )
    return done, [r.id for r in Client().list(limit=None)]


def test_a_keras_tuner_search_runs_unchanged(tmp_path: Path) -> None:
    done, jobs = _run(tmp_path, "")
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"\[chief\] BEST \d+", done.stdout), done.stdout[-2000:]
    assert len(jobs) == 1


def test_with_workers_it_is_keras_tuner_s_distributed_search(tmp_path: Path) -> None:
    """Two workers tune and the chief is the oracle: the four trials are split between the
    workers, and the search ends (the chief's oracle stops once the trials are done)."""
    done, jobs = _run(tmp_path, "--workers 2")
    assert done.returncode == 0, done.stderr[-3000:]
    job = Client().job(jobs[0])
    trained = {  # each trial's one epoch ends with its validation numbers, where it trained
        replica: len(re.findall(r"val_accuracy: [\d.]+ - val_loss", job.logs(replica)))
        for replica in ("chief", "worker-0", "worker-1")
    }
    assert trained["chief"] == 0, job.logs("chief")[-2000:]  # the oracle trains nothing
    assert trained["worker-0"] + trained["worker-1"] == 4, (trained, job.logs()[-3000:])
    assert trained["worker-0"] and trained["worker-1"], trained
    chief = job.logs("chief")
    assert len(re.findall(r"Trial \d Complete", chief)) == 4, chief[-2000:]
    assert re.search(r"\[chief\] BEST \d+", chief), chief[-2000:]
