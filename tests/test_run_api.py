"""``tfc_jupyter.run``: tfc.run's call, its checks, and TensorFlow Cloud's examples.

The validation cases are TensorFlow Cloud's own (``core/tests/unit/validate_test.py`` and the
machine, label and service-account cases of ``gcp_test.py``), re-expressed: what tfc.run
accepted is accepted, what it refused is refused with the same words (``Invalid
`entry_point```...) on one line with the fix; a deliberate difference (K80s, the bucket in a
notebook, TPUs beyond TF 2.1) is asserted as the "From tfc.run" table (docs/tfc-run.md) states it.

The example runs (marked slow) launch real local jobs from TensorFlow Cloud's examples under
``tests/tfcloud/``, data made small and synthetic, ``import tfc_jupyter as tfc`` the only change.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbclient
import nbformat
import pytest
from jobutil import write_notebook
from vertex_server import VertexServer

import tfc_jupyter as tfc
from tfc_jupyter.client import Client
from tfc_jupyter.errors import TfcError
from tfc_jupyter.planner.plan import Plan
from tfc_jupyter.run_api import job_options
from tfc_jupyter.store.records import JobState
from tfc_jupyter.tfc_types import machine_options

EXAMPLES = Path(__file__).resolve().parent / "tfcloud"
CPU, T4, TPU = (tfc.COMMON_MACHINE_CONFIGS[k] for k in ("CPU", "T4_1X", "TPU"))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tfc_env: Path) -> Path:
    """A folder with tfc's test data layout (an entry point, a notebook, requirements), as cwd."""
    (tmp_path / "train.py").write_text("import sys\nprint('ARGS', sys.argv[1:])\n")
    write_notebook(tmp_path / "train.ipynb", "print('from the notebook')")
    (tmp_path / "requirements.txt").write_text("numpy\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(pattern: str, **kwargs: Any) -> str:
    """job_options(**kwargs) raises a ValueError matching ``pattern``, one line with a fix."""
    with pytest.raises(ValueError, match=pattern) as info:
        job_options(**kwargs)
    text = str(info.value)
    assert isinstance(info.value, TfcError) and "\n" not in text and "Fix: " in text, text
    return text


# ---------------------------------------------------------------- validate_test.py, accepted
def test_valid_args_chief_worker(project: Path) -> None:
    opts = job_options(
        entry_point="train.py",
        distribution_strategy="auto",
        requirements_txt="requirements.txt",
        chief_config=T4,
        worker_config=T4,
        worker_count=1,
        stream_logs=True,
    )
    assert (opts.machine, opts.workers, opts.strategy) == ("T4_1X", 1, "auto")
    assert opts.requirements == (str(project / "requirements.txt"),)


def test_valid_args_chief_only_with_arguments(project: Path) -> None:
    opts = job_options(
        entry_point="train.py",
        distribution_strategy=None,
        requirements_txt="requirements.txt",
        chief_config=T4,
        worker_config=None,
        worker_count=0,
        entry_point_args=["1000", "a b"],
    )
    assert (opts.strategy, opts.args, opts.workers) == ("none", "1000 'a b'", 0)


def test_valid_args_notebook_entry_point(project: Path) -> None:
    assert job_options(entry_point="train.ipynb", distribution_strategy=None).strategy == "none"


def test_valid_no_entry_point_with_labels_and_no_bucket(project: Path) -> None:
    """tfc.run required a build bucket in a notebook; here none is needed (a difference)."""
    opts = job_options(job_labels={"a": "b", "team": "vision-2"}, chief_config=CPU)
    assert opts.label == ("a=b", "team=vision-2") and opts.machine == "CPU"
    assert opts.build_bucket is None


def test_docker_config_and_legacy_keywords(project: Path) -> None:
    """docker_config_test's DockerConfig, and run_on_script_test's backward-compatibility case
    (docker_image_bucket_name / docker_base_image as keywords)."""
    config = tfc.DockerConfig(
        parent_image="tensorflow/tensorflow:latest-gpu",
        image_build_bucket="test-bucket",
        image="gcr.io/test-project/tf_cloud_train:1",
        cache_from="gcr.io/test-project/tf_cloud_train:0",
    )
    opts = job_options(docker_config=config)
    assert (opts.image, opts.parent_image, opts.cache_from, opts.build_bucket) == (
        "gcr.io/test-project/tf_cloud_train:1",
        "tensorflow/tensorflow:latest-gpu",
        "gcr.io/test-project/tf_cloud_train:0",
        "test-bucket",
    )
    legacy = job_options(docker_image_bucket_name="b2", docker_base_image="python:3.11")
    assert (legacy.build_bucket, legacy.parent_image) == ("b2", "python:3.11")


def test_worker_count_as_text_is_a_number(project: Path) -> None:
    """tfc.run applied int() to worker_count."""
    assert job_options(worker_count="2").workers == 2


def test_our_own_options_are_keywords(project: Path) -> None:
    opts = job_options(backend="vertex", project="my-proj", region="europe-west4", spot=True)
    assert (opts.backend, opts.project, opts.region, opts.spot) == (
        "vertex",
        "my-proj",
        "europe-west4",
        True,
    )


# ---------------------------------------------------------------- validate_test.py, refused
@pytest.mark.parametrize(
    ("pattern", "kwargs"),
    [
        ("Invalid `entry_point`", {"entry_point": "/path/to/nonexistent.py"}),
        ("Invalid `entry_point`", {"entry_point": "requirements.txt"}),  # not .py / .ipynb
        ("Invalid `requirements_txt`", {"requirements_txt": "/path/to/nonexistent/req.txt"}),
        ("Invalid `distribution_strategy`", {"distribution_strategy": "MirroredStrategy"}),
        ("Invalid `chief_config`", {"chief_config": None, "worker_count": 1}),
        ("Invalid `worker_config`", {"chief_config": T4, "worker_config": None, "worker_count": 1}),
        ("Invalid `worker_count`", {"worker_count": -1}),
        ("Invalid `worker_count`", {"worker_count": "x"}),
        ("Invalid `entry_point_args`", {"worker_count": 1, "entry_point_args": "1000"}),
        ("Invalid `stream_logs`", {"stream_logs": "True"}),
        ("Invalid `chief_config`", {"chief_config": TPU, "worker_config": T4, "worker_count": 1}),
        ("Invalid `worker_count`", {"chief_config": CPU, "worker_config": TPU, "worker_count": 2}),
        ("Invalid `region`", {"region": ["us-region-a"]}),
        ("Invalid `docker_config`", {"docker_config": "mine"}),
    ],
)
def test_tfc_refusals(project: Path, pattern: str, kwargs: dict[str, Any]) -> None:
    _refused(pattern, **kwargs)


@pytest.mark.parametrize(
    "labels",
    [
        {"": ""},
        {"test": "-label"},
        {"Test": "label"},
        {"test": "labelA"},
        {"test": "label@"},
        {"test": "a" * 64},
        {f"key{i}": f"val{i}" for i in range(65)},
    ],
)
def test_invalid_job_labels(project: Path, labels: dict[str, str]) -> None:
    _refused("Invalid job labels", job_labels=labels)


@pytest.mark.parametrize(
    "account",
    [
        "test_sa_name@test-project.wrong_domain.com",
        "test_sa_name@aaaaa.iam.gserviceaccount.com",
        f"test_sa_name@{'a' * 31}.iam.gserviceaccount.com",
        "test_sa_name@test.projectid.iam.gserviceaccount.com",
        "test_sa_name@test_projectid.iam.gserviceaccount.com",
    ],
)
def test_invalid_service_account(project: Path, account: str) -> None:
    _refused("Invalid service_account", service_account=account)


def test_valid_service_account(project: Path) -> None:
    account = "trainer@my-project-1.iam.gserviceaccount.com"
    assert job_options(service_account=account).service_account == account


def test_unknown_keyword_is_a_type_error(project: Path) -> None:
    with pytest.raises(TypeError, match="Unknown keyword arguments: foo") as info:
        job_options(foo=1)
    assert "Fix: " in str(info.value)


def test_a_keyword_tfc_run_names_otherwise_is_refused(project: Path) -> None:
    text = _refused("worker_count", workers=2)
    assert "pass worker_count= instead of workers=" in text


# ---------------------------------------------------------------- machine configurations
def test_machine_configurations_of_gcp_test() -> None:
    assert machine_options(tfc.MachineConfig(4, 15, tfc.AcceleratorType.TPU_V3, 8)).tpu == "v3-8"
    with pytest.raises(ValueError, match="Invalid machine configuration"):
        tfc.MachineConfig(1, 15, tfc.AcceleratorType.NVIDIA_TESLA_T4, 4)
    with pytest.raises(ValueError, match="Invalid machine configuration"):
        tfc.MachineConfig(accelerator_type=tfc.AcceleratorType.TPU_V3)  # 1 core: tfc's test
    with pytest.raises(ValueError, match="Invalid accelerator key"):
        tfc.MachineConfig(accelerator_type="GTX1080")


def test_k80_is_gone_with_the_fix() -> None:
    """A deliberate difference: K80s reached end of support on 2024-05-01."""
    with pytest.raises(ValueError, match=r"end of support.*Fix: use --gpu-type T4"):
        tfc.MachineConfig(4, 15, tfc.AcceleratorType.NVIDIA_TESLA_K80, 4)
    with pytest.raises(ValueError, match=r"Fix: use COMMON_MACHINE_CONFIGS\['T4_1X'\]"):
        tfc.COMMON_MACHINE_CONFIGS["K80_1X"]


def test_p100_is_gone_with_the_fix() -> None:
    """A deliberate difference: P100s reached end of support on 2026-09-15 (TensorFlow Cloud's
    own integration calls use P100_1X)."""
    with pytest.raises(ValueError, match=r"2026-09-15.*Fix: use --gpu-type T4"):
        tfc.MachineConfig(8, 30, tfc.AcceleratorType.NVIDIA_TESLA_P100, 1)
    for name, fix in (("P100_1X", "T4_1X"), ("P100_4X", "T4_4X")):
        with pytest.raises(ValueError, match=rf"Fix: use COMMON_MACHINE_CONFIGS\['{fix}'\]"):
            tfc.COMMON_MACHINE_CONFIGS[name]


@pytest.mark.parametrize(
    ("config", "machine", "gpus", "gpu_type"),
    [
        (tfc.COMMON_MACHINE_CONFIGS["T4_4X"], "T4_4X", 4, "T4"),
        (tfc.COMMON_MACHINE_CONFIGS["V100_1X"], "V100_1X", 1, "V100"),
        (
            tfc.MachineConfig(8, 30, tfc.AcceleratorType.NVIDIA_TESLA_T4, 2),
            "n1-standard-8",
            2,
            "T4",
        ),
        (
            tfc.MachineConfig(16, 104, tfc.AcceleratorType.NO_ACCELERATOR, 0),
            "n1-highmem-16",
            0,
            None,
        ),
        (
            tfc.MachineConfig(16, 14.4, tfc.AcceleratorType.NVIDIA_TESLA_P4, 1),
            "n1-highcpu-16",
            1,
            "P4",
        ),
        (CPU, "CPU", 0, None),
    ],
)
def test_machine_configs_map_to_the_catalog(
    config: tfc.MachineConfig, machine: str, gpus: int, gpu_type: str | None
) -> None:
    got = machine_options(config)
    assert (got.machine, got.gpus, got.gpu_type) == (machine, gpus, gpu_type)


def test_a_gpu_chief_is_the_vertex_request_tfc_run_made(project: Path, settings: Any) -> None:
    """tfc.run's call_run_on_script_with_keras_fit_cloud_build example: 2 x T4 on n1-standard-8."""
    options = job_options(
        entry_point="train.py",
        chief_config=tfc.MachineConfig(8, 30, tfc.AcceleratorType.NVIDIA_TESLA_T4, 2),
        docker_config=tfc.DockerConfig(image_build_bucket="my-bucket"),
        backend="vertex",
        project="my-proj",
    )
    plan = Client(settings).plan_file("train.py", options)
    machine = plan.request()["body"]["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    assert machine == {
        "machineType": "n1-standard-8",
        "acceleratorType": "NVIDIA_TESLA_T4",
        "acceleratorCount": 2,
    }


def test_tpu_worker_is_one_tpu_host(project: Path) -> None:
    """tfc.run's TPU layout (a CPU chief + a TPU worker) is one TPU VM here (a difference)."""
    opts = job_options(chief_config=CPU, worker_config=TPU, worker_count=1)
    assert (opts.tpu, opts.workers) == ("v3-8", 0)


# ---------------------------------------------------------------- running
def test_run_a_script_with_arguments(project: Path) -> None:
    """The issue's line: job_id and docker_image come back, and the job saw its arguments."""
    result = tfc.run(
        entry_point="train.py", distribution_strategy=None, entry_point_args=["--epochs", "3"]
    )
    assert result is not None and set(result) == {"job_id", "docker_image"}
    assert result["docker_image"] is None  # the local backend builds no image
    record = result.job.wait(timeout=60)
    assert record.state is JobState.SUCCEEDED, record.error
    assert "ARGS ['--epochs', '3']" in result.job.logs()
    assert result["job_id"] == record.id


def test_run_is_a_no_op_inside_a_job(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_KERAS_RUNNING_REMOTELY", "1")
    assert tfc.remote() is True
    assert tfc.run(entry_point="nope.py", worker_count=-5) is None  # nothing is checked there


def test_script_syntax_error_names_the_file(project: Path, settings: Any) -> None:
    (project / "bad.py").write_text("x = 1\ndef f(:\n")
    with pytest.raises(TfcError, match=r"bad.py, line 2: .*Fix: fix the syntax$"):
        Client(settings).plan_file("bad.py")


def test_a_script_failure_names_its_line(project: Path) -> None:
    (project / "boom.py").write_text("print('start')\n\nraise ValueError('no data')\n")
    result = tfc.run(entry_point="boom.py")
    assert result is not None
    record = result.job.wait(timeout=60)
    assert record.state is JobState.FAILED
    assert record.error_location == "boom.py, line 3"
    assert "ValueError: no data" in (record.error or "")


def test_tensorflow_cloud_requirement_is_left_out(project: Path, settings: Any) -> None:
    (project / "requirements.txt").write_text("tensorflow-cloud\nnumpy\n")
    plan = Client(settings).plan_file("train.py", job_options(requirements_txt="requirements.txt"))
    assert plan.requirements == ["numpy"]
    assert any("tensorflow-cloud" in note for note in plan.script.requirements.notes)


def test_cli_runs_a_script_with_its_arguments(project: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", "run", "train.py", "--", "--lr", "0.1", "a b"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "[chief] ARGS ['--lr', '0.1', 'a b']" in proc.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", "run", "train.py", "--cell", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2 and "Fix: drop --cell" in bad.stderr


# ---------------------------------------------------------------- TensorFlow Cloud's examples
def _python(script: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, script.name],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.mark.slow
def test_tfc_multi_worker_custom_loop_example(tfc_env: Path) -> None:
    """call_run_on_script_with_keras_ctl: MultiWorkerMirroredStrategy made by the script,
    distribution_strategy=None, worker_count=1, tf-keras metrics reset every epoch (the
    example's era: TF_USE_LEGACY_KERAS=1). It runs to the end on both replicas."""
    proc = _python(
        EXAMPLES / "ctl" / "call_run_on_script_with_keras_ctl.py", {"TF_USE_LEGACY_KERAS": "1"}
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "chief + 1 worker(s)" in proc.stderr
    assert "[chief, worker-0] Number of devices: 2" in proc.stdout
    assert "[chief, worker-0] Epoch 2, Loss:" in proc.stdout
    assert ": succeeded after" in proc.stderr
    # Its metrics come back as the loop printed them, read as the code read them (no read of
    # the chief's own: that started the collective the worker never joined).
    printed = re.findall(
        r"Epoch (\d+), Loss: \S+, Accuracy: (\S+), Test Loss: (\S+), Test Accuracy: (\S+)",
        proc.stdout,
    )
    job_id = proc.stderr.split("Launched ", 1)[1].split()[0]
    rows = Client().job(job_id).metrics
    assert [r["epoch"] for r in rows] == [1, 2]
    for row, (_, accuracy, test_loss, test_accuracy) in zip(rows, printed, strict=True):
        assert row["train_accuracy"] * 100 == pytest.approx(float(accuracy))
        assert row["test_loss"] == pytest.approx(float(test_loss))
        assert row["test_accuracy"] * 100 == pytest.approx(float(test_accuracy))


@pytest.mark.slow
def test_tfc_fit_example_through_the_cli(tfc_env: Path) -> None:
    """testdata/mnist_example_using_fit.py as `tfc-jupyter run x.py --workers 1`: Keras fit
    under MultiWorkerMirroredStrategy, its LearningRateScheduler and PrintLR callbacks
    (``model.optimizer.lr``: tf-keras, the example's era)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfc_jupyter.cli",
            "run",
            "mnist_example_using_fit.py",
            "--workers=1",
        ],
        cwd=EXAMPLES / "fit",
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "TF_USE_LEGACY_KERAS": "1"},
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "[chief, worker-0] Learning rate for epoch 2 is 0.001" in proc.stdout


@pytest.mark.slow
def test_tfc_multi_file_example(tfc_env: Path) -> None:
    """multi_file_example: train_model.py imports create_model.py beside it; tfc.remote()
    picks 10 epochs in the job; requirements.txt names tensorflow-cloud (left out: the local
    backend would refuse a package this environment lacks)."""
    proc = _python(EXAMPLES / "multi_file" / "scale_model.py")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Epoch 10/10" in proc.stdout  # tfc.remote() is True in the job


@pytest.mark.slow
def test_run_within_a_script(tmp_path: Path, tfc_env: Path) -> None:
    """call_run_within_script_with_keras_fit's shape: tfc.run() halfway through a script, no
    entry point. Here the script stops after the launch; in the job it trains for real."""
    script = tmp_path / "within.py"
    script.write_text(
        (EXAMPLES / "within_script" / "call_run_within_script_with_keras_fit.py").read_text()
    )
    proc = _python(script)
    assert proc.returncode == 0, proc.stderr
    assert "local epochs: 1" in proc.stdout and "after run" not in proc.stdout
    job_id = proc.stderr.split("Launched ", 1)[1].split()[0]
    record = Client().job(job_id).wait(timeout=180)
    assert record.state is JobState.SUCCEEDED, record.error
    logs = Client().logs(job_id)
    assert "remote epochs: 2" in logs and "after run: evaluated" in logs


@pytest.mark.slow
def test_a_notebook_that_calls_run_in_a_cell(tmp_path: Path, tfc_env: Path) -> None:
    """A notebook cell calls tfc.run() (no entry point): the job is the cells above it, and
    tfc.remote() is True there; the kernel gets the job id back."""
    path = write_notebook(
        tmp_path / "colab_style.ipynb",
        "import numpy as np\nimport tensorflow as tf\nimport tfc_jupyter as tfc",
        "x = np.linspace(-1, 1, 64).astype('float32')[:, None]\ny = 3 * x + 1\n"
        "model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(1)])\n"
        "model.compile('sgd', 'mse')\n"
        "epochs = 4 if tfc.remote() else 1\n"
        "history = model.fit(x, y, epochs=epochs, verbose=2)\n"
        "print('remote' if tfc.remote() else 'local', len(history.history['loss']))",
        "info = tfc.run(stream_logs=True)\nprint('job', info['job_id'])",
        "print('after', info['docker_image'])",
    )
    nb = nbformat.read(path, as_version=4)
    os.environ["JPY_SESSION_NAME"] = str(path)  # the kernel's notebook, as Jupyter sets it
    try:
        nbclient.NotebookClient(
            nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        del os.environ["JPY_SESSION_NAME"]
    text = ["".join(o.get("text", "") for o in c.get("outputs", [])) for c in nb.cells]
    assert "local 1" in text[1]
    assert "[chief] remote 4" in text[2], text[2]
    job_id = text[2].split("job ", 1)[1].split()[0]
    assert Client().get(job_id).state is JobState.SUCCEEDED
    assert "after None" in text[3]


# ---------------------------------------------------------------- the REST API
def test_rest_api_runs_a_script_as_saved_or_as_edited(tmp_path: Path, tfc_env: Path) -> None:
    from tfc_jupyter.server.service import JobService

    (tmp_path / "train.py").write_text("import sys\nprint('saved', sys.argv[1:])\n")
    service = JobService(tmp_path)
    status, body = service.create({"path": "train.py", "options": {"args": "--lr 1"}})
    assert status == 201
    job = Client().job(body["job"]["id"])
    assert job.wait(timeout=60).state is JobState.SUCCEEDED
    assert "saved ['--lr', '1']" in job.logs()
    status, body = service.create(
        {"path": "train.py", "source": "print('edited')\n", "dirty": True, "options": {}}
    )
    assert status == 201 and any("unsaved edits" in w for w in body["plan"]["warnings"])
    job = Client().job(body["job"]["id"])
    assert job.wait(timeout=60).state is JobState.SUCCEEDED and "edited" in job.logs()
    for bad, words in (
        ({"path": "train.py", "cell": 2}, "'notebook' and 'cell' name notebook content"),
        ({"path": "../train.py"}, "outside the server's root folder"),
        ({"path": "x.txt"}, r"is not a notebook \(.ipynb\) or a Python script \(.py\)"),
        ({"path": "gone.py"}, "not found under the server's root folder"),
    ):
        with pytest.raises(TfcError, match=words):
            service.create({**bad, "options": {}})


# ---------------------------------------------------------------- every flag is a keyword
# Each %%tfc_run flag as words, and the run() keywords that say the same (tfc.run's own
# argument where tfc.run had one). Behaviour-only flags (not job options) are checked by
# their own tests below; the table names them so that a new flag without a keyword fails.
GCR = "us-docker.pkg.dev/my-proj/tfc/job:1"
T4_2 = tfc.MachineConfig(8, 30, tfc.AcceleratorType.NVIDIA_TESLA_T4, 2)
PAIRS: dict[str, tuple[list[str], dict[str, Any]]] = {
    "tpu": (["--tpu", "v3-8"], {"chief_config": CPU, "worker_config": TPU, "worker_count": 1}),
    "gpus": (
        ["--machine", "n1-standard-8", "--gpus", "2", "--gpu-type", "T4"],
        {"chief_config": T4_2},
    ),
    "gpu_type": (
        ["--machine", "n1-standard-8", "--gpus", "2", "--gpu-type", "T4"],
        {"chief_config": T4_2},
    ),
    "machine": (
        ["--machine", "n1-standard-8"],
        {"chief_config": tfc.MachineConfig(8, 30, tfc.AcceleratorType.NO_ACCELERATOR, 0)},
    ),
    "workers": (["--workers", "2"], {"worker_count": 2}),
    "worker_machine": (
        ["--workers", "1", "--worker-machine", "T4_1X"],
        {"worker_count": 1, "worker_config": T4},
    ),
    "ps": (["--ps", "1"], {"ps": 1}),
    "ps_machine": (
        ["--ps", "1", "--ps-machine", "n1-standard-8"],
        {"ps": 1, "ps_machine": "n1-standard-8"},
    ),
    "evaluator": (["--evaluator"], {"evaluator": ""}),
    "strategy": (["--strategy", "none"], {"distribution_strategy": None}),
    "backend": (["--backend", "docker"], {"backend": "docker"}),
    "requirements": (
        ["--requirements", "requirements.txt"],
        {"requirements_txt": "requirements.txt"},
    ),
    "name": (["--name", "my run"], {"name": "my run"}),
    "label": (
        ["--label", "team=vision", "--label", "stage=dev"],
        {"job_labels": {"team": "vision", "stage": "dev"}},
    ),
    "env": (["--env", "A=1", "--env", "B=two"], {"env": ["A=1", "B=two"]}),
    "notify": (
        ["--notify", "json://127.0.0.1:9/hook", "--notify", "mailto://me:pw@example.com"],
        {"notify": ["json://127.0.0.1:9/hook", "mailto://me:pw@example.com"]},
    ),
    "args": (["--args", "--epochs 3 'a b'"], {"entry_point_args": ["--epochs", "3", "a b"]}),
    "service_account": (
        ["--service-account", "t@my-proj.iam.gserviceaccount.com"],
        {"service_account": "t@my-proj.iam.gserviceaccount.com"},
    ),
    "region": (["--region", "europe-west4"], {"region": "europe-west4"}),
    "project": (["--project", "my-proj"], {"project": "my-proj"}),
    "include": (["--include", "data", "--include", "train.py"], {"include": ["data", "train.py"]}),
    "route": (["--route", "package"], {"route": "package"}),
    "image": (["--image", GCR], {"docker_config": tfc.DockerConfig(image=GCR)}),
    "parent_image": (
        ["--parent-image", GCR],
        {"docker_config": tfc.DockerConfig(parent_image=GCR)},
    ),
    "cache_from": (["--cache-from", GCR], {"docker_config": tfc.DockerConfig(cache_from=GCR)}),
    "build_bucket": (
        ["--build-bucket", "my-bucket"],
        {"docker_config": tfc.DockerConfig(image_build_bucket="my-bucket")},
    ),
    "timeout": (["--timeout", "2h"], {"timeout": "2h"}),
    "spot": (["--spot"], {"spot": True}),
    "flex_start": (["--flex-start", "6h"], {"flex_start": "6h"}),
    "restart_on_worker_restart": (
        ["--restart-on-worker-restart"],
        {"restart_on_worker_restart": True},
    ),
    "disable_retries": (["--disable-retries"], {"disable_retries": True}),
    "reservation": (["--reservation", "any"], {"reservation": "any"}),
    "persistent_resource": (
        ["--persistent-resource", "my-pool"],
        {"persistent_resource": "my-pool"},
    ),
    "boot_disk_type": (["--boot-disk-type", "pd-standard"], {"boot_disk_type": "pd-standard"}),
    "boot_disk_size": (["--boot-disk-size", "200"], {"boot_disk_size": 200}),
    "web_access": (["--web-access"], {"web_access": True}),
    "base_output_dir": (
        ["--base-output-dir", "gs://my-bucket/out"],
        {"base_output_dir": "gs://my-bucket/out"},
    ),
    "resume": (["--no-resume"], {"resume": False}),
    "tensorboard": (
        ["--tensorboard", "projects/p/locations/us-central1/tensorboards/7"],
        {"tensorboard": "projects/p/locations/us-central1/tensorboards/7"},
    ),
    "network": (
        ["--network", "projects/1/global/networks/vpc"],
        {"network": "projects/1/global/networks/vpc"},
    ),
    "psc_network_attachment": (
        ["--psc-network-attachment", "my-attachment"],
        {"psc_network_attachment": "my-attachment"},
    ),
    "sweep": (
        ["--sweep", "lr=[0.1, 0.01]", "--sweep", "units=int(8, 32, 8)"],
        {"sweep": ["lr=[0.1, 0.01]", "units=int(8, 32, 8)"]},
    ),
    "trials": (["--trials", "4"], {"trials": 4}),
    "parallel": (["--parallel", "2"], {"parallel": 2}),
    "metric": (["--metric", "val_accuracy"], {"metric": "val_accuracy"}),
    "goal": (["--goal", "max"], {"goal": "max"}),
    "method": (["--method", "grid"], {"method": "grid"}),
    "prune": (["--prune"], {"prune": True}),
}
BEHAVIOUR = {  # flags that are not part of the job: the test that checks each keyword
    "notebook": "test_the_notebook_flag_is_the_entry_point",
    "dry_run": "test_a_dry_run_sends_nothing_on_every_backend",
    "wait": "test_wait_and_verbose_follow_the_job_as_the_magic_does",
    "verbose": "test_wait_and_verbose_follow_the_job_as_the_magic_does",
    "interactive": "test_interactive_is_refused_with_the_magic_named",
}


def test_every_flag_has_a_run_keyword() -> None:
    from tfc_jupyter.job.options import all_fields

    fields = {f.name for f in all_fields()}  # portable, and the built-in backends' own
    missing = sorted(fields - set(PAIRS) - set(BEHAVIOUR))
    assert not missing, f"add each new flag's run() keyword to PAIRS: {missing}"
    assert not (set(PAIRS) | set(BEHAVIOUR)) - fields, "PAIRS names a flag that is gone"
    assert all(name in globals() for name in BEHAVIOUR.values())


@pytest.mark.parametrize("field", sorted(PAIRS))
def test_a_flag_and_its_keyword_mean_the_same(project: Path, field: str) -> None:
    from tfc_jupyter.job.options import JobOptions, all_fields

    words, kwargs = PAIRS[field]
    by_flag = JobOptions.from_words(words)
    by_keyword = job_options(entry_point="train.py", **kwargs)
    flag_value, keyword_value = by_flag.value(field), by_keyword.value(field)
    if field == "requirements":  # run() names the file it was given from the current folder
        flag_value = tuple(str(Path(p).resolve()) for p in flag_value)
    assert flag_value == keyword_value
    default = {f.name: f.default for f in all_fields()}[field]
    assert flag_value != default  # the pair says something


def test_the_notebook_flag_is_the_entry_point(project: Path) -> None:
    plan = tfc.run(entry_point="train.ipynb", dry_run=True)
    assert isinstance(plan, Plan) and plan.selection.notebook == project / "train.ipynb"
    with pytest.raises(ValueError, match=r"run\(\) takes tfc.run's entry_point for 'notebook'"):
        tfc.run(notebook="train.ipynb")


def test_a_dry_run_sends_nothing_on_every_backend(
    project: Path, vertex_server: VertexServer, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """``dry_run=True`` returns the plan (shown, with the backend's verdict) and launches
    nothing: no request reaches the Vertex AI server, no job is recorded, on any backend."""
    monkeypatch.setenv("TFC_VERTEX_ENDPOINT", vertex_server.url)
    store = Client().store
    for backend, extra in (
        ("local", {}),
        ("docker", {}),
        ("vertex", {"project": "test-project", "docker_config": tfc.DockerConfig(image=GCR)}),
        ("vertex", {"project": "test-project", "chief_config": T4, "spot": True}),
    ):
        plan = tfc.run(entry_point="train.py", backend=backend, dry_run=True, **extra)
        assert isinstance(plan, Plan) and plan.spec.backend.value == backend
        shown = capsys.readouterr().out
        assert plan.to_text().splitlines()[0] in shown
    assert vertex_server.requests == []
    assert store.list(limit=None) == []


def test_wait_and_verbose_follow_the_job_as_the_magic_does(project: Path, capsys: Any) -> None:
    """``wait=True`` follows the logs until the job ends (the magic's default), ``verbose``
    with the runtime's own lines; ``wait=False`` (tfc.run's default) returns at once."""
    result = tfc.run(entry_point="train.py", distribution_strategy=None, wait=True, verbose=True)
    assert isinstance(result, tfc.RunResult)
    assert result.job.record().state is JobState.SUCCEEDED  # it waited
    out = capsys.readouterr()
    assert "ARGS []" in out.out + out.err and "tfc_runtime" in out.out + out.err


def test_interactive_is_refused_with_the_magic_named(project: Path) -> None:
    with pytest.raises(ValueError, match=r"run\(\) does not open the launch panel.*--interactive"):
        tfc.run(entry_point="train.py", interactive=True)


@pytest.mark.slow
def test_tfc_tuner_tutorial_runs_as_keras_tuner_s_distributed_search(
    tfc_env: Path, tmp_path: Path
) -> None:
    """TensorFlow Cloud's CIFAR10 tuning tutorial (tests/tfcloud/tuner/, the import the change,
    data small and synthetic): CloudTuner with its Vizier-era arguments, and
    ``run_cloudtuner(num_jobs=2)`` as a chief oracle and two tuning workers sharing it."""
    script = tmp_path / "hp_tuning_cifar10.py"  # it writes its tuner folder beside itself
    script.write_text((EXAMPLES / "tuner" / script.name).read_text())
    proc = _python(script, {"NUM_JOBS": "2"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "chief + 2 worker(s), strategy none" in proc.stderr
    assert len(re.findall(r"Trial \d Complete", proc.stdout)) == 4, proc.stdout[-3000:]
    trained = re.findall(r"\[(worker-\d)\] \d+/\d+ \S+ .* val_accuracy", proc.stdout)
    assert sorted(set(trained)) == ["worker-0", "worker-1"] and len(trained) == 4, trained
    best = re.findall(r"\[([^\]]+)\] BEST (\[\('conv_blocks'.*)", proc.stdout)
    assert {r for who, _ in best for r in who.split(", ")} == {"chief", "worker-0", "worker-1"}
    # (a worker asks the oracle for the best trial when it runs out of trials: the chief, last,
    # when every trial has ended)


@pytest.mark.slow
def test_tfc_wide_and_deep_tuning_tutorial_runs_locally(tfc_env: Path, tmp_path: Path) -> None:
    """TensorFlow Cloud's wide-and-deep tuning tutorial (tests/tfcloud/tuner/: the import
    changed, data small and synthetic, Keras 3's renames): a functional model over a dict of
    string and numeric columns, CloudTuner with a HyperParameters object, and
    ``run_cloudtuner(num_jobs=2)``: three trials, all trained by the two tuning workers."""
    script = tmp_path / "hp_tuning_wide_and_deep.py"
    script.write_text((EXAMPLES / "tuner" / script.name).read_text())
    proc = _python(script, {"NUM_JOBS": "2"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "chief + 2 worker(s), strategy none" in proc.stderr
    assert len(re.findall(r"Trial \d Complete", proc.stdout)) == 3, proc.stdout[-3000:]
    trained = re.findall(r"\[(worker-\d)\] \d+/\d+ \S+ .* val_accuracy", proc.stdout)
    assert set(trained) <= {"worker-0", "worker-1"} and len(trained) == 3 * 2, trained  # 2 epochs
    # Every task prints the best values when the search ends; lines the replicas print alike
    # at once are shown once, with all their names ("[chief, worker-0, worker-1] BEST ...").
    assert re.search(r"\[chief(, [\w-]+)*\] BEST \[\('dropout_rate_0'", proc.stdout)


@pytest.mark.slow
def test_tfc_vizier_tuner_example_searches_in_the_kernel_with_shared_studies(
    tfc_env: Path, tmp_path: Path
) -> None:
    """TensorFlow Cloud's Vizier tuner example (tests/tfcloud/tuner/: the import changed, data
    small and synthetic): CloudTuner searching in the process that made it, then four tuners in
    threads sharing one ``study_id``, whose ``max_trials`` counts the study's trials as a
    Vizier study's did (6 in all, not 6 each)."""
    script = tmp_path / "ai_platform_vizier_tuner.py"
    script.write_text((EXAMPLES / "tuner" / script.name).read_text())
    proc = _python(script)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert "ONE TUNER 2" in proc.stdout
    shared = re.search(r"SHARED \[([\d, ]+)\]", proc.stdout)
    assert shared is not None, proc.stdout[-2000:]
    counts = [int(n) for n in shared.group(1).split(",")]
    assert sum(counts) == 6 and len(counts) == 4, counts


_TUNERS_IN_THREADS = """
import threading, time
import keras_tuner, numpy as np, tensorflow as tf
from tfc_jupyter import CloudTuner

x = np.zeros((8, 4), np.float32); y = np.zeros((8,), np.int64)

def build_model(hp):
    model = tf.keras.Sequential([tf.keras.Input((4,))])
    for _ in range(3):
        model.add(tf.keras.layers.Dense(hp.get("units")))
        time.sleep(0.5)  # the other thread's clear_session() lands here
    model.add(tf.keras.layers.Dense(2, activation="softmax"))
    model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model

hps = keras_tuner.HyperParameters()
hps.Int("units", 2, 4)
tuners = [CloudTuner(build_model, objective="accuracy", hyperparameters=hps, max_trials=4,
                     study_id="race", directory="tmp_dir") for _ in range(2)]
for i, t in enumerate(tuners):
    t.tuner_id = str(i)
def search(tuner, delay):
    time.sleep(delay)  # the other thread is mid-build when this one starts
    tuner.search(x, y, epochs=1, verbose=0)

threads = [threading.Thread(target=search, args=(t, 0.7 * i)) for i, t in enumerate(tuners)]
for t in threads: t.start()
for t in threads: t.join()
print("TRIALS", sorted(t.status for u in tuners for t in u.oracle.trials.values()))
print("IDS", sorted(i for u in tuners for i in u.oracle.trials))
import glob
print("FOLDERS", len(glob.glob("tmp_dir/race/trial_*/checkpoint.weights.h5")))
"""


@pytest.mark.slow
def test_cloud_tuners_in_threads_build_their_models_one_at_a_time(tmp_path: Path) -> None:
    """Keras Tuner clears Keras's session before each build, and Keras 3's clear_session()
    resets every thread's layer names: two CloudTuners searching in threads (the example's
    shape, without its two-second stagger) built models with two layers named ``dense``.
    Sharing a study and a directory, they also gave their first trials one id (``0``) and so one
    folder, where two threads saving the weights at once failed in HDF5: a trial's id is its
    number in the study, as Vizier's were."""
    script = tmp_path / "tuners_in_threads.py"
    script.write_text(_TUNERS_IN_THREADS)
    proc = _python(script)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "already the name of a layer" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert "TRIALS ['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED']" in proc.stdout, (
        proc.stdout[-2000:]
    )
    assert "IDS ['0', '1', '2', '3']" in proc.stdout, proc.stdout[-2000:]
    assert "FOLDERS 4" in proc.stdout, proc.stdout[-2000:]


@pytest.mark.slow
def test_cloud_oracle_reads_a_vizier_study_config() -> None:
    """TensorFlow Cloud's other way in: a Vizier study_config in place of objective and
    hyperparameters; both, or neither, is refused with its words."""
    study_config = {
        "metrics": [{"metric": "val_loss", "goal": "MINIMIZE"}],
        "parameters": [
            {"parameter": "lr", "type": "DOUBLE", "scale_type": "UNIT_LOG_SCALE",
             "double_value_spec": {"min_value": 1e-4, "max_value": 1e-1}},
            {"parameter": "units", "type": "INTEGER",
             "integer_value_spec": {"min_value": 8, "max_value": 64}},
            {"parameter": "act", "type": "CATEGORICAL",
             "categorical_value_spec": {"values": ["relu", "tanh"]}},
            {"parameter": "batch", "type": "DISCRETE",
             "discrete_value_spec": {"values": [16, 32]}},
        ],
    }  # fmt: skip
    oracle = tfc.CloudOracle("my-project", "us-central1", study_config=study_config, max_trials=3)
    assert (oracle.objective.name, oracle.objective.direction) == ("val_loss", "min")
    assert sorted(hp.name for hp in oracle.hyperparameters.space) == ["act", "batch", "lr", "units"]
    values = oracle.populate_space("t0")["values"]
    assert 1e-4 <= values["lr"] <= 1e-1 and values["act"] in ("relu", "tanh")
    assert values["batch"] in (16, 32) and 8 <= values["units"] <= 64
    with pytest.raises(ValueError, match="either study_config or"):
        tfc.CloudOracle("p", "r", objective="val_loss", study_config=study_config)
    with pytest.raises(ValueError, match="objective and hyperparameters must be set"):
        tfc.CloudOracle("p", "r")


TUNER_NOTEBOOKS = [
    "g3doc__tutorials__hp_tuning_cifar10_using_google_cloud.ipynb",
    "g3doc__tutorials__hp_tuning_wide_and_deep_model.ipynb",
    "src__python__tensorflow_cloud__tuner__tests__examples__ai_platform_vizier_tuner.ipynb",
]
CLOUD_CORPUS = Path(__file__).resolve().parent / "corpus" / "cloud"  # sources: its README


@pytest.mark.parametrize("name", TUNER_NOTEBOOKS)
def test_tfc_tuner_notebooks_plan_with_the_import_changed(
    tfc_env: Path, tmp_path: Path, name: str
) -> None:
    """TensorFlow Cloud's tuner tutorials and example, `tensorflow_cloud` swapped for
    `tfc_jupyter` and nothing else: each plans, and what the plan runs finds CloudTuner."""
    source = CLOUD_CORPUS / name
    assert source.is_file(), f"{source} is missing from tests/corpus"
    text = source.read_text().replace("import tensorflow_cloud as tfc", "import tfc_jupyter as tfc")
    nb = tmp_path / name
    nb.write_text(text.replace("from tensorflow_cloud import", "from tfc_jupyter import"))
    plan = Client().plan_file(str(nb), job_options(entry_point=str(nb), dry_run=True), how="test")
    import ast

    used = set()
    for node in ast.walk(ast.parse(plan.script.text)):
        if isinstance(node, ast.ImportFrom) and node.module == "tfc_jupyter":
            used |= {alias.name for alias in node.names}
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "tfc":
            used.add(node.attr)
    assert used and all(hasattr(tfc, name) for name in used), sorted(used)
