"""The local backend: Vertex's environment, and real jobs run, fail, cancel and time out."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from jobutil import job_pids, run_job, wait_gone, wait_state, write_notebook

from tfc_jupyter.backends.local.backend import (
    LocalBackend,
    check_gpus,
    check_requirements,
    cluster_env,
    free_ports,
    gpu_split,
)
from tfc_jupyter.errors import BackendError, SpecError
from tfc_jupyter.job.catalog import lookup, tpu_machine
from tfc_jupyter.job.spec import JobSpec
from tfc_jupyter.jobs import Job, store_for
from tfc_jupyter.store.records import JobState

SRC = Path(__file__).resolve().parents[1]

MODEL_CELL = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf

    def dataset(batch=32):
        rng = np.random.default_rng(0)
        x = rng.normal(size=(512, 3)).astype("float32")
        y = (x @ np.array([1.0, -2.0, 0.5], dtype="float32") + 0.3).astype("float32")
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch)
""")


def test_cluster_env_matches_vertex() -> None:
    spec = JobSpec(chief=lookup("CPU"), worker_count=2, strategy="multi_worker_mirrored")
    replicas = dict(cluster_env(spec, "job-1", [1001, 1002, 1003]))
    assert list(replicas) == ["chief", "worker-0", "worker-1"]
    cluster_spec = json.loads(replicas["worker-1"]["CLUSTER_SPEC"])
    assert cluster_spec["cluster"] == {
        "workerpool0": ["127.0.0.1:1001"],
        "workerpool1": ["127.0.0.1:1002", "127.0.0.1:1003"],
    }
    assert cluster_spec["task"] == {"type": "workerpool1", "index": 1, "trial": ""}
    tf_config = json.loads(replicas["chief"]["TF_CONFIG"])
    assert tf_config["cluster"] == {
        "chief": ["127.0.0.1:1001"],
        "worker": ["127.0.0.1:1002", "127.0.0.1:1003"],
    }
    assert tf_config["task"]["type"] == "chief"
    assert tf_config["environment"] == "cloud"


def test_free_ports_and_gpu_split() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5 and all(1024 < p < 65536 for p in ports)
    assert gpu_split(0, 3, 1) == ["", "", ""]
    assert gpu_split(4, 2, 2) == ["0,1", "2,3"]
    assert gpu_split(2, 2, 0) == ["0", "1"]


def test_requirements_checked_against_this_environment() -> None:
    assert check_requirements(["pytest", "psutil>=1"]) == []
    missing = check_requirements(["surely-not-installed-pkg==1.0", "pytest<1", "--index-url x"])
    assert missing[0] == "surely-not-installed-pkg==1.0"
    assert missing[1].startswith("pytest<1 (have ")
    assert len(missing) == 2


def test_check_refuses_before_launch(tmp_path: Path) -> None:
    backend = LocalBackend(store_for(tmp_path))
    with pytest.raises(SpecError, match=r"cannot run TPU jobs.*--backend vertex"):
        backend.check(JobSpec(chief=tpu_machine("v3-8")))
    with pytest.raises(BackendError) as info:
        backend.check(JobSpec(requirements=("surely-not-installed-pkg",)))
    message = str(info.value)
    assert "\n" not in message
    assert "%pip install 'surely-not-installed-pkg'" in message


@pytest.mark.slow
def test_multiworker_fit_trains_for_real(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "train.ipynb",
        MODEL_CELL,
        "%%tfc_run --workers 1\n"
        "strategy = tf.distribute.get_strategy()\n"
        "print('replicas', strategy.num_replicas_in_sync, type(strategy).__name__)\n"
        "model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss='mse')\n"
        "hist = model.fit(dataset(), epochs=2, steps_per_epoch=10, verbose=0)\n"
        "print('loss', hist.history['loss'][0], hist.history['loss'][-1])",
    )
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, job.logs()
    logs = job.logs()
    for replica in ("chief", "worker-0"):
        # tf.distribute.MultiWorkerMirroredStrategy's class is CollectiveAllReduceStrategy
        assert re.search(rf"\[{replica}\] replicas 2 CollectiveAllReduceStrategy", logs), logs
        first, last = (
            float(x) for x in re.search(rf"\[{replica}\] loss (\S+) (\S+)", logs).groups()
        )
        assert math.isfinite(last) and last < first
    # The chief alone reports its epochs (the worker trains the same model).
    assert [m["epoch"] for m in job.metrics] == [1, 2]
    worker_log = (Path(record.log_dir) / "worker-0.log").read_text()
    assert "[tfc_runtime] result" not in worker_log
    assert record.handle["exit_codes"] == {"chief": 0, "worker-0": 0}
    assert wait_gone(job_pids(record)) == []


@pytest.mark.slow
def test_env_reaches_every_replica(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "env.ipynb",
        "%%tfc_run --workers 1 --strategy none --env MODE=fast --env 'GREETING=hello, world'\n"
        "import os\n"
        "print('env', os.environ['MODE'], '|', os.environ['GREETING'])",
    )
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, job.logs()
    for replica in ("chief", "worker-0"):
        assert f"[{replica}] env fast | hello, world" in job.logs(), job.logs()
    assert record.spec["env"] == {"MODE": "fast", "GREETING": "hello, world"}


@pytest.mark.slow
def test_multiworker_custom_loop(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "loop.ipynb",
        MODEL_CELL,
        "%%tfc_run --workers 1 --strategy multi_worker_mirrored\n"
        "strategy = tf.distribute.get_strategy()\n"
        "w = tf.Variable(tf.zeros([3, 1]))\n"
        "opt = tf.keras.optimizers.SGD(0.1)\n"
        "dist = iter(strategy.experimental_distribute_dataset(dataset(16)))\n"
        "@tf.function\n"
        "def step(x, y):\n"
        "    def replica_step(x, y):\n"
        "        with tf.GradientTape() as tape:\n"
        "            loss = tf.reduce_mean((tf.squeeze(x @ w, 1) - y) ** 2)\n"
        "        opt.apply_gradients([(tape.gradient(loss, w), w)])\n"
        "        return loss\n"
        "    losses = strategy.run(replica_step, args=(x, y))\n"
        "    return strategy.reduce('MEAN', losses, axis=None)\n"
        "losses = [float(step(*next(dist))) for _ in range(15)]\n"
        "print('custom loop', strategy.num_replicas_in_sync, losses[0], losses[-1])",
    )
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, job.logs()
    match = re.search(r"\[chief\] custom loop 2 (\S+) (\S+)", job.logs())
    assert match, job.logs()
    assert float(match.group(2)) < float(match.group(1))


@pytest.mark.slow
def test_failing_worker_stops_the_job_and_names_the_cell(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "fail.ipynb",
        "import time\nimport tfc_runtime",
        "%%tfc_run --workers 1 --strategy none\n"
        "if not tfc_runtime.is_chief():\n"
        "    raise ValueError('worker boom')\n"
        "time.sleep(120)\n",
    )
    started = time.monotonic()
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.FAILED
    assert time.monotonic() - started < 60  # the chief was stopped, not waited for
    assert record.error is not None and record.error.startswith("worker-0 exited with status 1")
    assert "ValueError: worker boom" in record.error
    assert record.error_location == "cell 2, line 3"
    assert "[worker-0] [tfc_runtime] job failed at cell 2, line 3" in job.logs()
    assert wait_gone(job_pids(record)) == []


@pytest.mark.slow
def test_cancel_stops_every_process(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "long.ipynb",
        "%%tfc_run --workers 1 --strategy none\n"
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)  # like TensorFlow: SIGTERM is not enough\n"
        "print('started', flush=True)\n"
        "time.sleep(300)\n",
    )
    from jobutil import plan_for

    from tfc_jupyter.jobs import launch

    job = launch(plan_for(nb), store=store_for(tmp_path / "home"))
    wait_state(job, {JobState.RUNNING})
    deadline = time.monotonic() + 60
    while "started" not in job.logs() and time.monotonic() < deadline:
        time.sleep(0.2)
    pids = job_pids(job.record())
    record = job.cancel()
    assert record.state is JobState.CANCELLED
    assert wait_gone(pids) == []


LEAVES_PROCESSES = """\
%%tfc_run
import os, subprocess, sys, time
sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
own_session = subprocess.Popen(sleeper, start_new_session=True)
if os.fork() == 0:  # a daemon: fork twice, the middle one exits at once
    if os.fork() == 0:
        os.setsid()
        with open("daemon.pid", "w") as f:
            f.write(str(os.getpid()))
        time.sleep(300)
    os._exit(0)
with open("child.pid", "w") as f:
    f.write(str(own_session.pid))
while not os.path.exists("daemon.pid"):
    time.sleep(0.05)
print("started", flush=True)
{ending}
"""


@pytest.mark.item("no process a job started outlives it", suite="faults")
@pytest.mark.slow
@pytest.mark.parametrize("ending", ["natural end", "cancel", "supervisor killed"])
def test_no_process_the_job_started_outlives_it(tmp_path: Path, ending: str) -> None:
    """Issue 39: a child started in a session of its own survived cancel, and a double-forked
    daemon survived the job's natural end and SIGKILL of the supervisor (docs/jobs.md
    promises cancel stops every process)."""
    from jobutil import plan_for

    from tfc_jupyter.jobs import launch

    code = "print('done')" if ending == "natural end" else "time.sleep(300)"
    nb = write_notebook(tmp_path / "leaves.ipynb", LEAVES_PROCESSES.format(ending=code))
    job = launch(plan_for(nb), store=store_for(tmp_path / "home"))
    if ending != "natural end":
        deadline = time.monotonic() + 60
        while "started" not in job.logs() and time.monotonic() < deadline:
            time.sleep(0.2)
    if ending == "supervisor killed":
        os.kill(int(job.record().handle["watcher_pid"]), signal.SIGKILL)
        record = job.wait(timeout=60)  # the next look finds it dead: failed, processes killed
        assert record.state is JobState.FAILED, record
    elif ending == "cancel":
        record = job.cancel()
        assert record.state is JobState.CANCELLED
    else:
        record = job.wait(timeout=60)
        assert record.state is JobState.SUCCEEDED, record.error
    left = [int((tmp_path / name).read_text()) for name in ("child.pid", "daemon.pid")]
    assert wait_gone([*left, *job_pids(record)]) == []


@pytest.mark.slow
def test_replica_that_never_joins_fails_by_the_deadline(tmp_path: Path, monkeypatch) -> None:
    hang = tmp_path / "hang"
    hang.mkdir()
    (hang / "sitecustomize.py").write_text(
        "import json, os, time\n"
        "task = json.loads(os.environ.get('TF_CONFIG', '{}')).get('task', {})\n"
        "if task.get('type') == 'worker':\n"
        "    time.sleep(3600)\n"
    )
    monkeypatch.setenv("PYTHONPATH", f"{hang}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("TFC_STARTUP_TIMEOUT", "20")
    nb = write_notebook(
        tmp_path / "join.ipynb",
        "%%tfc_run --workers 1 --strategy multi_worker_mirrored\nprint('never')",
    )
    _, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.FAILED
    assert "worker-0" in (record.error or "") and "did not join the cluster within 20 s" in (
        record.error or ""
    )
    assert wait_gone(job_pids(record)) == []


@pytest.mark.slow
def test_job_outlives_a_killed_kernel_and_reattaches(tmp_path: Path) -> None:
    home = tmp_path / "home"
    nb = write_notebook(
        tmp_path / "attach.ipynb",
        "%%tfc_run --strategy none --no-wait\n"
        "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n"
        "    time.sleep(1)\nprint('done')",
    )
    kernel = textwrap.dedent(f"""
        import os, signal
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "tfc_jupyter")
        cell = open({str(nb)!r}).read()
        import json
        source = "".join(json.loads(cell)["cells"][0]["source"])
        line, _, body = source.partition("\\n")
        ip.run_cell_magic("tfc_run", line[len("%%tfc_run"):], body)
        print("JOB", ip.user_ns["_tfc_job"].id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = {**os.environ, "TFC_JUPYTER_HOME": str(home), "JPY_SESSION_NAME": str(nb)}
    proc = subprocess.run(
        [sys.executable, "-c", kernel],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    job_id = re.search(r"JOB (\S+)", proc.stdout).group(1)
    job = Job(job_id, store_for(home))
    lines: list[str] = []
    record = job.follow(timeout=120, on_line=lambda replica, line: lines.append(line))
    assert record.state is JobState.SUCCEEDED
    assert [x for x in lines if x.startswith("tick")] == ["tick 0", "tick 1", "tick 2"]
    assert lines[-1] == "done"


@pytest.mark.slow
def test_killed_supervisor_takes_its_replicas_and_marks_the_job(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "sup.ipynb",
        "%%tfc_run --strategy none --workers 1\nimport time\ntime.sleep(300)",
    )
    from jobutil import plan_for

    from tfc_jupyter.jobs import launch

    job = launch(plan_for(nb), store=store_for(tmp_path / "home"))
    record = wait_state(job, {JobState.RUNNING})
    os.kill(record.handle["watcher_pid"], signal.SIGKILL)
    assert wait_gone(job_pids(record)) == []
    time.sleep(2.5)
    final = job.wait(timeout=30)
    assert final.state is JobState.FAILED
    assert "supervisor" in (final.error or "")


def test_gpus_asked_for_on_a_machine_without_any_are_refused() -> None:
    from tfc_jupyter.job import catalog
    from tfc_jupyter.job.spec import JobSpec

    spec = JobSpec(chief=catalog.gpu_machine("T4", 1))
    with pytest.raises(BackendError) as info:
        check_gpus(spec, available=0)
    text = str(info.value)
    assert "1 GPU(s) per machine asked for, and this machine has none" in text
    assert "drop --gpus" in text and info.value.field == "gpus"
    check_gpus(spec, available=1)
    check_gpus(JobSpec(chief=catalog.lookup("CPU")), available=0)
