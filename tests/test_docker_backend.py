"""The docker backend: real jobs in containers of their image, as Vertex AI would run them.

Needs the test engine (``tests/dockerinfra.py``); every job runs on the offline TensorFlow parent
image with host networking on free loopback ports, and has a deadline.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from jobutil import plan_for, run_job, wait_gone, wait_state, write_notebook
from tfc_runtime.protocol import RuntimeArgs

from tfc_jupyter.backends.docker.backend import JOB_LABEL, DockerBackend, container_env
from tfc_jupyter.backends.launch_file import DockerLaunch
from tfc_jupyter.errors import BackendError, SpecError
from tfc_jupyter.job.catalog import tpu_machine
from tfc_jupyter.job.spec import JobSpec
from tfc_jupyter.jobs import Job, launch, store_for
from tfc_jupyter.store.records import JobState

MODEL_CELL = """\
import numpy as np
import tensorflow as tf

def dataset(batch=32):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 3)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5], dtype="float32") + 0.3).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch)
"""


def _containers(client: Any, job_id: str) -> list[Any]:
    return client.containers.list(all=True, filters={"label": f"{JOB_LABEL}={job_id}"})


def _flags(parent: str, extra: str = "") -> str:
    return f"--backend docker --parent-image {parent} {extra}".strip()


# ------------------------------------------------------------------------------ no engine needed
def test_check_refuses_tpu_and_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = DockerBackend(store_for(tmp_path))
    with pytest.raises(SpecError, match=r"docker backend cannot run TPU jobs.*--backend vertex"):
        backend.check(JobSpec(chief=tpu_machine("v3-8"), backend="docker"))
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    with pytest.raises(BackendError) as info:
        backend.check(JobSpec(backend="docker"))
    text = str(info.value)
    assert "\n" not in text
    assert f"no Docker engine answers at unix://{tmp_path}/none.sock" in text
    assert text.endswith("or use --backend local")


def test_container_env_is_vertex_s(tmp_path: Path) -> None:
    spec = JobSpec(
        backend="docker", base_output_dir="gs://b/run", name="train", env=(("MODE", "fast"),)
    )
    env = container_env(spec, "job-1", tmp_path)
    assert env["MODE"] == "fast"  # --env
    assert env["AIP_MODEL_DIR"] == "gs://b/run/model/"
    assert env["AIP_CHECKPOINT_DIR"] == "gs://b/run/checkpoints/"
    assert env["AIP_TENSORBOARD_LOG_DIR"] == "gs://b/run/logs/"
    assert env["CLOUD_ML_JOB_ID"] == "job-1" and env["TFC_JOB_NAME"] == "train"
    assert env["TFC_JOB_DIR"] == str(tmp_path)


# ------------------------------------------------------------------------------ real jobs
@pytest.mark.slow
def test_two_workers_train_in_containers(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    nb = write_notebook(
        tmp_path / "train.ipynb",
        MODEL_CELL,
        f"%%tfc_run --workers 2 {_flags(tf_parent_image)}\n"
        "import json, os\n"
        "strategy = tf.distribute.get_strategy()\n"
        "print('replicas', strategy.num_replicas_in_sync, type(strategy).__name__)\n"
        "print('task', json.loads(os.environ['CLUSTER_SPEC'])['task']['type'],"
        " os.path.exists('/.dockerenv'))\n"
        "model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss='mse')\n"
        "hist = model.fit(dataset(), epochs=2, steps_per_epoch=10, verbose=0)\n"
        "print('loss', hist.history['loss'][0], hist.history['loss'][-1])",
    )
    job, record = run_job(nb, tmp_path / "home")
    logs = job.logs()
    assert record.state is JobState.SUCCEEDED, logs + str(record.error)
    assert record.handle["image"] == plan_for(nb).image_uri
    for replica, pool in (("chief", "workerpool0"), ("worker-0", "workerpool1")):
        assert re.search(rf"\[{replica}\] replicas 3 CollectiveAllReduceStrategy", logs), logs
        assert f"[{replica}] task {pool} True" in logs  # inside a container, Vertex's variables
        first, last = (
            float(x) for x in re.search(rf"\[{replica}\] loss (\S+) (\S+)", logs).groups()
        )
        assert math.isfinite(last) and last < first
    assert "[worker-1] task workerpool1 True" in logs
    assert record.handle["exit_codes"] == {"chief": 0, "worker-0": 0, "worker-1": 0}
    assert set(record.handle["containers"]) == {"chief", "worker-0", "worker-1"}
    assert _containers(docker_client, job.id) == []  # removed afterwards
    assert wait_gone([record.handle["watcher_pid"]]) == []
    launch = DockerLaunch.read(Path(record.job_dir))  # the watcher's own reading of it
    assert RuntimeArgs.from_argv(launch.runtime_args).script == "script.py"
    assert [r.name for r in launch.replicas] == ["chief", "worker-0", "worker-1"]


@pytest.mark.slow
def test_files_the_code_reads_are_in_the_image_it_runs(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    """A data file found in the code (no --include) is in the plan's context, and the image
    built is that very context: the job reads the file, and the image is the planned one."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_text("a,b\n1,2\n3,4\n")
    nb = write_notebook(
        tmp_path / "reads.ipynb",
        f"%%tfc_run --strategy none {_flags(tf_parent_image)}\n"
        "rows = open('data/rows.csv').read().splitlines()\n"
        "print('rows read:', len(rows) - 1)",
    )
    plan = plan_for(nb)
    assert plan.context is not None and "app/data/rows.csv" in {
        e.arcname for e in plan.context.entries
    }
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, record.error
    assert "[chief] rows read: 2" in job.logs()
    assert docker_client.images.get(plan.image_uri).labels  # the planned image is the one built


@pytest.mark.slow
def test_records_the_code_globs_are_in_the_image_it_runs(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    """Issue 34: TFRecords an earlier step wrote next to the notebook, which the run cell finds
    with tf.io.gfile.glob (no literal names them), are in the image: the job counts them all,
    where it counted none (an empty dataset, and a job that "succeeded")."""
    import tensorflow as tf

    (tmp_path / "data").mkdir()
    for name, count in (("a", 3), ("b", 4)):
        with tf.io.TFRecordWriter(str(tmp_path / "data" / f"{name}.tfrecord")) as writer:
            for i in range(count):
                writer.write(f"{name}{i}".encode())
    nb = write_notebook(
        tmp_path / "records.ipynb",
        "import tensorflow as tf",
        f"%%tfc_run --strategy none {_flags(tf_parent_image)}\n"
        "files = tf.io.gfile.glob('data/*.tfrecord')\n"
        "count = sum(1 for _ in tf.data.TFRecordDataset(files))\n"
        "missing = tf.io.gfile.glob('prepared/*.tfrecord')\n"
        "print('records:', len(files), count)",
    )
    plan = plan_for(nb)
    assert plan.context is not None
    assert {"app/data/a.tfrecord", "app/data/b.tfrecord"} <= {
        e.arcname for e in plan.context.entries
    }
    assert any("prepared/*.tfrecord" in w and "matches nothing" in w for w in plan.warnings)
    job, record = run_job(nb, tmp_path / "home")
    logs = job.logs()
    assert record.state is JobState.SUCCEEDED, (record.error, logs[-2000:])
    assert "[chief] records: 2 7" in logs
    assert (
        "[chief] [tfc_runtime] warning: tf.io.gfile.glob('prepared/*.tfrecord') matched nothing "
        "in /app: " in logs
    )


@pytest.mark.slow
def test_failing_worker_stops_the_job_and_names_the_cell(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    nb = write_notebook(
        tmp_path / "fail.ipynb",
        "import time\nimport tfc_runtime",
        f"%%tfc_run --workers 1 --strategy none {_flags(tf_parent_image)}\n"
        "if not tfc_runtime.is_chief():\n"
        "    raise ValueError('worker boom')\n"
        "time.sleep(300)\n",
    )
    started = time.monotonic()
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.FAILED
    assert time.monotonic() - started < 90  # the chief was stopped, not waited for
    assert record.error is not None
    assert record.error.startswith("worker-0 exited with status 1 at cell 2, line 3")
    assert "ValueError: worker boom" in record.error
    assert record.error_location == "cell 2, line 3"
    assert "[worker-0] [tfc_runtime] job failed at cell 2, line 3" in job.logs()
    assert _containers(docker_client, job.id) == []


@pytest.mark.slow
def test_cancel_stops_and_removes_the_containers(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    nb = write_notebook(
        tmp_path / "long.ipynb",
        f"%%tfc_run --workers 1 --strategy none {_flags(tf_parent_image)}\n"
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)  # like TensorFlow: SIGTERM is not enough\n"
        "print('started', flush=True)\n"
        "time.sleep(300)\n",
    )
    job = launch(plan_for(nb), store=store_for(tmp_path / "home"))
    try:
        wait_state(job, {JobState.RUNNING}, timeout=120)
        deadline = time.monotonic() + 60
        while job.logs().count("started") < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(_containers(docker_client, job.id)) == 2
        started = time.monotonic()
        record = job.cancel()
        assert record.state is JobState.CANCELLED
        assert time.monotonic() - started < 30
        assert _containers(docker_client, job.id) == []
        assert wait_gone([record.handle["watcher_pid"]]) == []
    finally:
        if not job.record().state.is_terminal():
            job.cancel()


@pytest.mark.slow
def test_replica_that_never_joins_fails_by_the_deadline(
    tmp_path: Path,
    tfc_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    docker_client: Any,
    tf_parent_image: str,
) -> None:
    # A parent whose Python hangs at start-up in the worker task: it never joins the cluster.
    hang = (
        "import json, os, time; "
        "time.sleep(3600) if json.loads(os.environ.get('TF_CONFIG', '{}'))"
        ".get('task', {}).get('type') == 'worker' else None"
    )
    parent = "tfc-test/hang-worker:1"
    container = docker_client.containers.run(
        tf_parent_image,
        ["sh", "-c", f'echo "{hang}" > /usr/local/lib/python3.11/dist-packages/hang.pth'],
        detach=True,
        network_mode="none",
    )
    try:
        assert container.wait(timeout=60)["StatusCode"] == 0
        container.commit(*parent.split(":"))
    finally:
        container.remove(force=True)
    monkeypatch.setenv("TFC_STARTUP_TIMEOUT", "25")
    nb = write_notebook(
        tmp_path / "join.ipynb",
        f"%%tfc_run --workers 1 --strategy multi_worker_mirrored {_flags(parent)}\nprint('never')",
    )
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.FAILED
    assert "worker-0" in (record.error or "")
    assert "did not join the cluster within 25 s" in (record.error or "")
    assert _containers(docker_client, job.id) == []


@pytest.mark.slow
def test_killed_watcher_marks_the_job_and_removes_its_containers(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    nb = write_notebook(
        tmp_path / "sup.ipynb",
        f"%%tfc_run --strategy none {_flags(tf_parent_image)}\nimport time\ntime.sleep(300)",
    )
    job = launch(plan_for(nb), store=store_for(tmp_path / "home"))
    record = wait_state(job, {JobState.RUNNING}, timeout=120)
    os.kill(record.handle["watcher_pid"], signal.SIGKILL)
    assert wait_gone([record.handle["watcher_pid"]]) == []
    time.sleep(2.5)
    final = Job(job.id, store_for(tmp_path / "home")).wait(timeout=30)
    assert final.state is JobState.FAILED
    assert "watcher" in (final.error or "")
    assert _containers(docker_client, job.id) == []


# ------------------------------------------------------------------------------ what images carry
def test_what_the_shipped_modules_and_libraries_need_is_in_the_image(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    """Issue 28's notebooks, one step off the guides: a helper beside the notebook imports a
    package the notebook never names (psutil, installed in this kernel, not in the image), a
    package folder's module imports a helper that imports another package (yaml), Keras'
    TensorBoard callback needs TensorBoard (no import names it), and the notebook uses
    IPython.display. In Jupyter it all runs; as a docker job it must run the same."""
    (tmp_path / "helpers.py").write_text(
        "import psutil\n\n\ndef cpus():\n    return psutil.cpu_count() > 0\n"
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .inner import dump\n")
    (tmp_path / "pkg" / "inner.py").write_text("from more import dump\n")
    (tmp_path / "more.py").write_text(
        "import yaml\n\n\ndef dump(x):\n    return yaml.safe_dump(x)\n"
    )
    nb = write_notebook(
        tmp_path / "needs.ipynb",
        MODEL_CELL,
        f"%%tfc_run --strategy none {_flags(tf_parent_image)}\n"
        "from IPython.display import HTML, display\n"
        "from helpers import cpus\n"
        "import pkg\n"
        "model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "board = tf.keras.callbacks.TensorBoard('logs')\n"
        "model.fit(dataset(), epochs=1, steps_per_epoch=4, verbose=2, callbacks=[board])\n"
        "display(HTML('<b>done</b>'))\n"
        "print('helpers:', cpus(), pkg.dump({'a': 1}).strip())",
    )
    plan = plan_for(nb)
    added = {line.split("==")[0] for line in plan.requirements}
    assert {"psutil", "pyyaml", "tensorboard"} <= added, plan.requirements
    notes = " ".join(plan.script.notes)
    assert "(imported by helpers.py, line 1)" in notes and "(imported by more.py, line 1)" in notes
    assert "TensorBoard callback needs it" in notes
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, (record.error, job.logs()[-2000:])
    # The run cell's display comes back as the cell would show it, not as a log line.
    shown = [json.loads(p.read_text()) for p in (Path(record.job_dir) / "outputs").glob("*.json")]
    assert [o["data"].get("text/html") for o in shown] == ["<b>done</b>"], shown
    assert "[chief] helpers: True a: 1" in job.logs()


def test_an_import_the_image_cannot_satisfy_fails_the_build_not_the_job(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    (tmp_path / "helpers.py").write_text("import not_installed_anywhere_xyz\n")
    nb = write_notebook(
        tmp_path / "broken.ipynb",
        f"%%tfc_run --strategy none {_flags(tf_parent_image)}\nimport helpers\nprint('never')",
    )
    plan = plan_for(nb)
    assert any(
        "not_installed_anywhere_xyz (imported by helpers.py, line 1)" in w for w in plan.warnings
    )
    with pytest.raises(BackendError) as info:
        launch(plan, store=store_for(tmp_path / "home"))
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(
        "the image lacks not_installed_anywhere_xyz (helpers.py, line 1), which the job imports"
    ), text
    assert "Fix: add %pip install not_installed_anywhere_xyz" in text


SWEEP_RUN = """\
import math
from tfc_runtime.results import emit
score = units / 100 - (math.log10(lr) + 2) ** 2
emit({"event": "epoch", "fit": 0, "epoch": 1, "metrics": {"val_score": score}})
print("trained with", lr, units, os.path.exists("/.dockerenv"))
"""


@pytest.mark.slow
def test_a_sweep_runs_each_trial_in_containers_of_one_image(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    """A sweep on the docker backend: each trial a job in containers, with its values on the
    notebook's lines and its metric through the runtime's channel (the job folder mounted);
    the image is built once for every trial (only the values differ)."""
    from tfc_jupyter.client import Client
    from tfc_jupyter.job.options import JobOptions
    from tfc_jupyter.trials.trials import run_sweep

    nb = write_notebook(
        tmp_path / "sweep.ipynb",
        "import os\nlr = 0.1\nunits = 8",
        f"%%tfc_run --strategy none {_flags(tf_parent_image)}\n" + SWEEP_RUN,
    )
    client = Client()
    words = ["--sweep", "lr=loguniform(1e-4,1)", "--sweep", "units=[8,32]", "--metric"]
    plan = client.plan_file(
        str(nb), JobOptions.from_words([*words, "val_score", "--trials", "3"]), how="test"
    )
    sweep = run_sweep(client, plan)
    assert [t.state for t in sweep.trials] == ["succeeded"] * 3, sweep.summary_line()
    images = set()
    for trial in sweep.trials:
        lr, units = trial.values["lr"], trial.values["units"]
        assert trial.metric == pytest.approx(units / 100 - (math.log10(lr) + 2) ** 2), trial
        record = client.job(trial.job_id).record()
        assert record.backend == "docker"
        assert f"[chief] trained with {lr} {units} True" in client.job(trial.job_id).logs()
        images.add(record.handle["image"])
        assert _containers(docker_client, trial.job_id) == []  # removed afterwards
    assert images == {plan.image_uri}  # one image, built once
    assert (
        sweep.best is not None
        and sweep.best.id == max(sweep.trials, key=lambda t: t.metric or -math.inf).job_id
    )


_PNG_1X1 = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)


class _Cell:
    """What a cell is given, in order: the lines shown and the outputs (issue 49)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._text = ""

    def write(self, text: str) -> int:
        self._text += text
        *lines, self._text = self._text.split("\n")
        self.seen += [f"line {ln.rpartition('] ')[2]}" for ln in lines if ln.strip()]
        return len(text)

    def flush(self) -> None:
        pass

    def output(self, event: dict[str, Any]) -> None:
        if event.get("event") == "output":
            found = json.loads(Path(event["file"]).read_text())
            self.seen.append("output " + ",".join(sorted(found["data"])))


@pytest.mark.slow
def test_displays_show_as_in_jupyter_between_the_prints(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    """In a container (no IPython in the image, its output a pipe), ``display(Image(...))`` is
    the image, not ``<IPython.core.display.Image object>``, and each output comes between the
    lines printed before and after it, as in Jupyter (they all came before the lines)."""
    nb = write_notebook(
        tmp_path / "shows.ipynb",
        f"%%tfc_run --strategy none {_flags(tf_parent_image)}\n"
        "import base64\n"
        "from IPython.display import HTML, Image, display\n"
        "print('before')\n"
        f"display(Image(data=base64.b64decode({_PNG_1X1!r})))\n"
        "print('between')\n"
        "display(HTML('<b>b</b>'))\n"
        "print('after')",
    )
    job, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, record.error
    cell = _Cell()
    job.follow(out=cell, on_result=cell.output)  # type: ignore[arg-type]
    assert cell.seen == [
        "line before",
        "output image/png,text/plain",
        "line between",
        "output text/html,text/plain",
        "line after",
    ]
