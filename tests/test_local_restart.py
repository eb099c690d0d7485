"""A replica killed mid-fit is restarted, as Vertex AI restarts one, and the job resumes.

Real local jobs: the chief of a one-process job, then the worker of a multi-worker job, are
killed with SIGKILL (as the OOM killer or a preemption would) after a few epochs. The job ends
with every epoch trained once and a loss in line with the same job run uninterrupted.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import textwrap
import time
from pathlib import Path

import pytest
from jobutil import JOB_DEADLINE_S, job_pids, plan_for, run_job, wait_gone, write_notebook

from tfc_jupyter.backends.watch_loop import VERTEX_RESTARTS, restartable
from tfc_jupyter.jobs import Job, job_dict, launch, store_for
from tfc_jupyter.store.logs import is_noise
from tfc_jupyter.store.records import JobState

EPOCHS = 12

DATA = textwrap.dedent("""\
    import time
    import numpy as np
    import tensorflow as tf

    def dataset(batch=32):
        rng = np.random.default_rng(0)
        x = rng.normal(size=(512, 3)).astype("float32")
        y = (x @ np.array([1.0, -2.0, 0.5], dtype="float32") + 0.3).astype("float32")
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch)
""")

TRAIN = textwrap.dedent(f"""\
    tf.keras.utils.set_random_seed(0)  # the same start, killed or not
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    pace = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: time.sleep(0.4))
    hist = model.fit(dataset(), epochs={EPOCHS}, steps_per_epoch=5, verbose=0, callbacks=[pace])
    final = model.evaluate(dataset().take(16), verbose=0)  # all 512 samples, in a fixed order
    print("epochs", len(hist.history["loss"]), "loss", final)
""")


def _epochs(job_dir: Path) -> list[int]:
    try:
        lines = (job_dir / "results.jsonl").read_text().splitlines()
    except OSError:
        return []
    return [e["epoch"] for e in map(json.loads, lines) if e.get("event") == "epoch"]


def _kill_after(job: Job, replica: str, epoch: int) -> int:
    """SIGKILL ``replica`` once the chief has reported ``epoch``; its pid."""
    deadline = time.monotonic() + JOB_DEADLINE_S
    while time.monotonic() < deadline:
        record = job.record()
        assert not record.state.is_terminal(), job.logs()
        if max(_epochs(Path(record.job_dir)), default=0) >= epoch:
            pid = int(record.handle["replicas"][replica])
            os.kill(pid, signal.SIGKILL)
            return pid
        time.sleep(0.05)
    raise AssertionError(f"the chief never reported epoch {epoch}: {job.logs()}")


def _final(logs: str, replica: str = "chief") -> tuple[int, float]:
    match = re.search(rf"\[{replica}\] epochs (\d+) loss (\S+)", logs)
    assert match, logs
    return int(match.group(1)), float(match.group(2))


def _killed_and_whole(tmp_path: Path, flags: str, victim: str) -> tuple[Job, str, float]:
    nb = write_notebook(tmp_path / "train.ipynb", DATA, f"%%tfc_run{flags}\n" + TRAIN)
    whole, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, whole.logs()
    assert _final(whole.logs())[0] == EPOCHS
    job = launch(plan_for(nb), store=store_for(tmp_path / "home"))
    killed_pid = _kill_after(job, victim, 4)
    record = job.wait(timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, (record.error, job.logs())
    assert record.handle["restarts"] == 1
    assert job_dict(record)["restarts"] == 1 and "(restarted once)" in job.summary_line()
    assert killed_pid not in job_pids(record)
    assert wait_gone(job_pids(record)) == []
    return job, job.logs(), _final(whole.logs())[1]


@pytest.mark.slow
def test_a_killed_chief_is_restarted_and_its_fit_resumes(tmp_path: Path) -> None:
    job, logs, whole_loss = _killed_and_whole(tmp_path, "", "chief")
    assert "[chief] [tfc_jupyter] chief was killed by SIGKILL" in logs, logs
    assert "restart 1 of 5" in logs
    resumed = re.search(r"\[chief\] \[tfc_runtime\] fit 1 resumed after epoch (\d+) of 12", logs)
    assert resumed and int(resumed.group(1)) >= 4, logs
    epochs, loss = _final(logs)
    assert epochs == EPOCHS  # the History holds every epoch, those before the restart too
    assert loss == pytest.approx(whole_loss, rel=0.5, abs=0.02)
    # Every epoch reported once, in order, though some were reported before the restart.
    assert [m["epoch"] for m in job.metrics] == list(range(1, EPOCHS + 1))
    # The resume line is shown where the job's log is shown (not hidden as start-up chatter).
    line = next(ln for ln in job.log_lines("chief") if "fit 1 resumed" in ln)
    assert not is_noise(line.split("] ", 1)[1]), line


@pytest.mark.slow
def test_a_killed_worker_restarts_the_cluster_and_the_fit_resumes(tmp_path: Path) -> None:
    job, logs, whole_loss = _killed_and_whole(tmp_path, " --workers 1", "worker-0")
    assert "[worker-0] [tfc_jupyter] worker-0 was killed by SIGKILL" in logs, logs
    assert "[chief] [tfc_jupyter] worker-0 was killed by SIGKILL" in logs
    shown = io.StringIO()  # as the cell shows it: our note once, not as a replica's words
    job.follow(out=shown)
    said = [ln for ln in shown.getvalue().splitlines() if "was killed by" in ln]
    assert len(said) == 1 and said[0].startswith("[tfc_jupyter] worker-0 was killed"), said
    for replica in ("chief", "worker-0"):
        resumed = re.search(rf"\[{replica}\] \[tfc_runtime\] fit 1 resumed after epoch (\d+)", logs)
        assert resumed and int(resumed.group(1)) >= 3, logs
        epochs, loss = _final(logs, replica)
        assert epochs == EPOCHS
        assert loss == pytest.approx(whole_loss, rel=0.5, abs=0.02)
    assert [m["epoch"] for m in job.metrics] == list(range(1, EPOCHS + 1))


@pytest.mark.slow
def test_a_python_error_is_not_restarted_and_restarts_are_bounded(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "boom.ipynb",
        "import os, signal",
        "%%tfc_run --strategy none\nraise ValueError('boom')",
    )
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.FAILED and "ValueError: boom" in (record.error or "")
    assert record.handle["restarts"] == 0
    # A replica that kills itself every time: restarted 5 times, then the job fails.
    nb = write_notebook(
        tmp_path / "dies.ipynb",
        "import os, signal",
        "%%tfc_run --strategy none\nprint('start')\nos.kill(os.getpid(), signal.SIGKILL)",
    )
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.FAILED
    assert record.handle["restarts"] == VERTEX_RESTARTS
    assert (record.error or "").startswith("chief was killed by signal 9"), record.error
    assert (record.error or "").endswith("(the job had been restarted 5 times)")
    assert job.logs().count("[chief] start") == VERTEX_RESTARTS + 1


def test_which_deaths_are_restarted() -> None:
    assert restartable(-signal.SIGKILL) and restartable(-signal.SIGTERM)
    assert not restartable(-signal.SIGSEGV)  # a native crash would crash again
    assert not restartable(1) and not restartable(0) and not restartable(None)
