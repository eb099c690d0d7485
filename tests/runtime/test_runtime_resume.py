"""A restarted replica resumes: Keras fit and custom loops, killed for real, run again.

Each test runs the job's script with ``python -m tfc_runtime`` as a replica runs it, kills it
with SIGKILL at an epoch (as a preemption or the OOM killer would), runs it again in the same job
folder (as a restarted replica), and checks what the second run did.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from jobutil import run_plain
from runtime_helpers import job_env, run_runtime

pytestmark = pytest.mark.slow

DATA = textwrap.dedent("""\
    import os, signal
    import numpy as np
    import tensorflow as tf
    import keras
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).random((256, 2)).astype("float32")
    y = 3 * x[:, :1] - 2 * x[:, 1:] + 1

    def kill_at(epoch):  # SIGKILL this replica once, at the end of that epoch
        if os.environ.get("KILL_AT") == str(epoch):
            os.kill(os.getpid(), signal.SIGKILL)

    class Kill(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            kill_at(epoch)
""")

FIT = DATA + textwrap.dedent("""\
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse")
    first = model.fit(x, y, epochs=3, verbose=0)
    h = model.fit(x, y, epochs=10, verbose=0, callbacks=[Kill()])
    print("history", len(h.history["loss"]), h.epoch[0], h.epoch[-1])
    print("loss", h.history["loss"][-1])
    print("iterations", int(model.optimizer.iterations.numpy()))
    after = model.fit(x, y, epochs=2, verbose=0)
    print("after", len(after.history["loss"]))
""")

LOOP = DATA + textwrap.dedent("""\
    import tfc_runtime
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    opt = keras.optimizers.Adam(0.1)
    train_loss = keras.metrics.Mean(name="train_loss")

    @tf.function
    def step(a, b):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(a) - b) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        train_loss.update_state(loss)

    for epoch in tfc_runtime.epochs(8, model=model, optimizer=opt):
        train_loss.reset_state()
        for a, b in ds:
            step(a, b)
        print("epoch", epoch, float(train_loss.result()))
        kill_at(epoch)
    print("iterations", int(opt.iterations.numpy()))
""")


def _run(tmp_path: Path, script: str, kill_at: int | None = None, **env: str):
    (tmp_path / "job").mkdir(exist_ok=True)
    path = tmp_path / "job.py"
    path.write_text(script)
    extra = {"TFC_JOB_DIR": str(tmp_path / "job"), "CLOUD_ML_JOB_ID": "job-1", **env}
    if kill_at is not None:
        extra["KILL_AT"] = str(kill_at)
    return run_runtime([str(path)], tmp_path, job_env(**extra), timeout=120)


def _epochs(tmp_path: Path) -> list[tuple[int, int]]:
    lines = (tmp_path / "job" / "results.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    return [(e["fit"], e["epoch"]) for e in events if e["event"] == "epoch"]


def test_a_killed_fit_resumes_after_its_last_epoch(tmp_path: Path) -> None:
    whole = _run(tmp_path / "whole", FIT) if (tmp_path / "whole").mkdir() is None else None
    assert whole is not None and whole.returncode == 0, whole.stderr
    killed = _run(tmp_path, FIT, kill_at=5)
    assert killed.returncode == -9, killed.stderr
    backups = tmp_path / "job" / "checkpoints" / "tfc-resume" / "job-1"
    assert (backups / "fit-2").is_dir() and (backups / "fit-1").is_dir()
    loose = [str(p) for p in [backups.parent, *backups.rglob("*")] if p.stat().st_mode & 0o077]
    assert loose == []  # the backups hold the trained weights: owner-only, as the job folder
    again = _run(tmp_path, FIT)
    assert again.returncode == 0, again.stderr
    # Fit 1 had ended: restored, not run again; fit 2 goes on after its 5 saved epochs.
    assert "[tfc_runtime] fit 1 had ended before the job was restarted" in again.stderr
    assert "[tfc_runtime] fit 2 resumed after epoch 5 of 10" in again.stderr
    # The history holds every epoch, those before the restart too; the next fit starts at 0.
    assert "history 10 0 9" in again.stdout, again.stdout
    assert "after 2" in again.stdout
    # The optimizer went on from its state: as many steps as the uninterrupted run made.
    steps = re.search(r"iterations (\d+)", whole.stdout)
    assert steps and f"iterations {steps.group(1)}" in again.stdout, again.stdout
    loss_whole = float(re.search(r"loss (\S+)", whole.stdout).group(1))
    loss_again = float(re.search(r"loss (\S+)", again.stdout).group(1))
    assert loss_again == pytest.approx(loss_whole, rel=0.25, abs=1e-3)
    # The reported epochs: fit 2's 6th to 10th come after the restart, none twice in the end.
    epochs = _epochs(tmp_path)
    assert epochs[-7:] == [(1, 6), (1, 7), (1, 8), (1, 9), (1, 10), (2, 1), (2, 2)]
    # It ended well: the backups are gone.
    assert not backups.exists()


@pytest.mark.item("resume restores only this user's plain files of a fit in range", suite="faults")
@pytest.mark.parametrize("forged", [1_000_000, -3, "5"])
def test_a_backup_whose_epoch_is_out_of_range_starts_the_fit_over(
    tmp_path: Path, forged: object
) -> None:
    """Training metadata saying epoch 1,000,000 of 10 skipped training and reported success
    (issue 39): an epoch past the fit's end, below 0 or not a number is not restored; the fit
    trains from its start and the log says why."""
    killed = _run(tmp_path, FIT, kill_at=5)
    assert killed.returncode == -9, killed.stderr
    (meta,) = (tmp_path / "job").rglob("fit-2/training_metadata.json")
    meta.write_text(json.dumps({"epoch": forged, "batch": -1}))
    again = _run(tmp_path, FIT)
    assert again.returncode == 0, again.stderr
    said = f"fit 2's backup is not restored (it says epoch {forged} of 10): it trains from"
    assert said in again.stderr, again.stderr
    assert "fit 2 resumed" not in again.stderr
    assert "history 10 0 9" in again.stdout, again.stdout  # all ten epochs, run now
    assert [e for f, e in _epochs(tmp_path) if f == 1][-10:] == list(range(1, 11))  # 0-based


@pytest.mark.item("resume restores only this user's plain files of a fit in range", suite="faults")
def test_a_backup_of_another_shape_starts_the_fit_over(tmp_path: Path) -> None:
    """Issue 39: a backup must fit the model it resumes. The job's code changed between the
    kill and the restart (a wider layer): the backup is not restored, the log says so in one
    line, and the fit trains all its epochs from the start."""
    killed = _run(tmp_path, FIT, kill_at=5)
    assert killed.returncode == -9, killed.stderr
    wider = FIT.replace(
        "[keras.Input((2,)), keras.layers.Dense(1)]",
        "[keras.Input((2,)), keras.layers.Dense(3), keras.layers.Dense(1)]",
    )
    assert wider != FIT
    again = _run(tmp_path, wider)
    assert again.returncode == 0, again.stderr
    said = [line for line in again.stderr.splitlines() if "backup" in line]
    one = (
        r"\[tfc_runtime\] warning: fit {}'s backup is not restored \(it does not load: "
        r"[^\n]{{1,200}}\): it trains from the start"
    )
    assert len(said) == 2, again.stderr[-3000:]  # each fit's backup, one line each
    assert all(re.fullmatch(one.format(n), line) for n, line in zip("12", said, strict=True)), said
    assert "Traceback" not in again.stderr
    assert "fit 2 resumed" not in again.stderr
    assert "history 10 0 9" in again.stdout, again.stdout  # all ten epochs, run now


BIG_FIT = DATA + textwrap.dedent("""\
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4096), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    h = model.fit(x, y, epochs=4, verbose=0)
    print("history", len(h.history["loss"]))
""")


@pytest.mark.item("a backup that cannot be written is one warning", suite="faults")
def test_a_backup_on_a_full_disk_is_one_warning_and_the_fit_trains_on(tmp_path: Path) -> None:
    """Issue 39: on a full disk the backups stopped without a word and the job ended well. The
    fit's checkpoint folder is a 64 KB tmpfs here (its weights take about 200 KB): the log says
    once that the backup could not be written and that a restart would start the fit over, and
    the fit trains all its epochs."""
    from faultinfra import in_tmpfs, tmpfs_unavailable

    reason = tmpfs_unavailable()
    if reason:
        pytest.skip(f"no private tmpfs: {reason}")
    (tmp_path / "job").mkdir()
    (tmp_path / "job.py").write_text(BIG_FIT)
    env = job_env(TFC_JOB_DIR=str(tmp_path / "job"), CLOUD_ML_JOB_ID="job-1")
    done = in_tmpfs(
        "64k",
        tmp_path / "job" / "checkpoints",
        [sys.executable, "-m", "tfc_runtime", str(tmp_path / "job.py")],
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "history 4" in done.stdout, done.stdout
    warnings = re.findall(r"^\[tfc_runtime\] warning: fit 1 could not .*$", done.stderr, re.M)
    assert len(warnings) == 1, done.stderr[-3000:]
    assert "free; the backup needs about" in warnings[0], warnings
    assert "a restart would start it over" in warnings[0], warnings


def test_a_killed_custom_loop_resumes_with_tfc_runtime_epochs(tmp_path: Path) -> None:
    killed = _run(tmp_path, LOOP, kill_at=3)
    assert killed.returncode == -9
    assert "epoch 3 " in killed.stdout
    again = _run(tmp_path, LOOP)
    assert again.returncode == 0, again.stderr
    # Killed in epoch 3's body, before the epoch ended: epochs 0-2 are saved, 3 runs again.
    assert "[tfc_runtime] loop 1 resumed after epoch 3 of 8" in again.stderr
    ran = re.findall(r"^epoch (\d+) ", again.stdout, re.M)
    assert ran == ["3", "4", "5", "6", "7"], again.stdout
    assert "iterations 64" in again.stdout  # 8 epochs of 8 batches: the optimizer was restored
    lines = (tmp_path / "job" / "results.jsonl").read_text().splitlines()
    rounds = [json.loads(line)["round"] for line in lines if '"metric"' in line]
    assert rounds == [1, 2, 3, 4, 5, 6, 7, 8]  # the rounds go on from where the loop was


def test_outside_a_job_and_turned_off_nothing_is_saved(tmp_path: Path) -> None:
    off = _run(tmp_path, FIT, kill_at=5, TFC_RESUME="0")
    assert off.returncode == -9
    assert not (tmp_path / "job" / "checkpoints" / "tfc-resume").exists()
    again = _run(tmp_path, FIT, TFC_RESUME="0")
    assert "resumed" not in again.stderr and "history 10 0 9" in again.stdout
    done = run_plain(LOOP, tmp_path, timeout=120)  # plain python, outside any job: range(8)
    assert done.returncode == 0, done.stderr
    assert re.findall(r"^epoch (\d+) ", done.stdout, re.M) == [str(i) for i in range(8)]
    assert not list(tmp_path.glob("**/tfc-resume"))


def test_the_codes_own_backup_and_an_unbuilt_model_are_left_as_they_are(tmp_path: Path) -> None:
    own = DATA + textwrap.dedent("""\
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        mine = keras.callbacks.BackupAndRestore(backup_dir="mine")
        model.fit(x, y, epochs=2, verbose=0, callbacks=[mine])
        lazy = keras.Sequential([keras.layers.Dense(1)])
        lazy.compile(optimizer="sgd", loss="mse")
        print("lazy", len(lazy.fit(x, y, epochs=2, verbose=0).history["loss"]))
    """)
    done = _run(tmp_path, own)
    assert done.returncode == 0, done.stderr
    assert "lazy 2" in done.stdout
    assert "fit 2 cannot resume after a restart: its model is built by its first batch" in (
        done.stderr
    )
    made = list((tmp_path / "job").glob("checkpoints/tfc-resume/job-1/fit-*"))
    assert made == []  # neither fit got ours


def test_a_folder_it_cannot_write_never_fails_the_job(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    for script in (FIT, LOOP):
        done = _run(tmp_path, script, AIP_CHECKPOINT_DIR=str(tmp_path / "file" / "ckpt"))
        assert done.returncode == 0, done.stderr
        assert "cannot resume after a restart" in done.stderr  # said, once a fit or loop
    gone = _run(tmp_path, FIT, AIP_CHECKPOINT_DIR="gs://no-such-bucket-tfc-test/ckpt")
    assert gone.returncode == 0, gone.stderr[-2000:]
    assert "history 10 0 9" in gone.stdout


def test_the_chief_ending_first_leaves_a_worker_its_last_backup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chief may end while a worker still writes its last epoch's copy (tf-keras'
    ``workertemp_<i>``, beside the chief's): the chief's clean-up leaves that folder, the
    worker's own removes it, and whichever ends last leaves no backup behind."""
    from tfc_runtime import resume

    backups = tmp_path / "job" / "checkpoints" / "tfc-resume" / "job-1"
    for fit in ("fit-1", "fit-2"):
        (backups / fit / "workertemp_0" / "ckpt-4_temp").mkdir(parents=True)
        (backups / fit / "workertemp_0" / "ckpt-4_temp" / "part.tempstate").write_text("w0")
        (backups / fit / "workertemp_1").mkdir()
        (backups / fit / "ckpt-4.index").write_text("chief")
    (backups / "fit-1.history.json").write_text("[]")
    monkeypatch.setenv("TFC_JOB_DIR", str(tmp_path / "job"))
    monkeypatch.setenv("CLOUD_ML_JOB_ID", "job-1")
    cluster = {"chief": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]}

    def end_as(task_type: str, index: int) -> None:
        task = {"type": task_type, "index": index}
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": task}))
        resume.finish()

    end_as("chief", 0)
    left = sorted(str(p.relative_to(backups)) for p in backups.rglob("*"))
    assert left == [
        "fit-1",
        "fit-1/workertemp_0",
        "fit-1/workertemp_0/ckpt-4_temp",
        "fit-1/workertemp_0/ckpt-4_temp/part.tempstate",
        "fit-1/workertemp_1",
        "fit-2",
        "fit-2/workertemp_0",
        "fit-2/workertemp_0/ckpt-4_temp",
        "fit-2/workertemp_0/ckpt-4_temp/part.tempstate",
        "fit-2/workertemp_1",
    ]
    end_as("worker", 0)
    assert sorted(str(p.relative_to(backups)) for p in backups.rglob("*")) == [
        "fit-1",
        "fit-1/workertemp_1",
        "fit-2",
        "fit-2/workertemp_1",
    ]
    end_as("worker", 1)
    assert not (tmp_path / "job" / "checkpoints" / "tfc-resume").exists()
