"""The public API user code calls inside (and outside) a job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import tfc_runtime
from runtime_helpers import clear_job_vars


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """This process's environment without any job variable."""
    return clear_job_vars(monkeypatch)


def test_importing_the_runtime_does_not_import_tensorflow() -> None:
    code = (
        "import sys, tfc_runtime, tfc_runtime.nb, tfc_runtime.cluster, tfc_runtime.strategy, "
        "tfc_runtime.sourcemap, tfc_runtime.__main__\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
        "assert 'tfc_jupyter' not in sys.modules\n"
        "assert callable(tfc_runtime.strategy) and callable(tfc_runtime.cluster)\n"
        "print(tfc_runtime.__version__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0.1.0\n"


def test_the_kernel_imports_the_protocol_alone_and_every_name_is_there() -> None:
    """The kernel imports ``tfc_runtime.protocol`` on every launch: the package brings no
    estimator, paths, resume or TPU module with it (issue 48); each public name is there when
    asked for (``from tfc_runtime import *`` too), and ``tfc_runtime.cluster`` and
    ``tfc_runtime.strategy`` stay the functions once their modules are imported."""
    code = (
        "import sys, tfc_runtime.protocol\n"
        "lazy = ['tfc_runtime.' + m for m in ('estimator', 'paths', 'resume', 'hooks', 'tpu')]\n"
        "assert not [m for m in lazy if m in sys.modules], sys.modules.keys()\n"
        "ns = {}\n"
        "exec('from tfc_runtime import *', ns)\n"
        "import tfc_runtime, tfc_runtime.estimator, tfc_runtime.strategy, tfc_runtime.cluster\n"
        "missing = [n for n in tfc_runtime.__all__ if n not in ns]\n"
        "assert not missing, missing\n"
        "assert ns['epochs'] is sys.modules['tfc_runtime.resume'].epochs\n"
        "assert callable(tfc_runtime.strategy) and callable(tfc_runtime.cluster)\n"
        "assert tfc_runtime.cluster().source == 'none'\n"
        "print(sorted(n for n in tfc_runtime.__all__ if not callable(ns[n])))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_CONFIG", "CLUSTER_SPEC"))}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "['__version__']\n"


def test_outside_a_job(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.chdir(tmp_path)
    assert not tfc_runtime.remote()
    assert tfc_runtime.job_dir() is None
    assert tfc_runtime.is_chief()
    assert tfc_runtime.cluster().source == "none"
    assert tfc_runtime.model_dir() == str(tmp_path / "model")
    assert tfc_runtime.checkpoint_dir() == str(tmp_path / "checkpoints")
    assert tfc_runtime.tensorboard_dir() == str(tmp_path / "tensorboard")
    assert all((tmp_path / d).is_dir() for d in ("model", "checkpoints", "tensorboard"))
    assert tfc_runtime.task_save_path("out/model.keras") == "out/model.keras"


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("TFC_REMOTE", "1", True),
        ("TFC_REMOTE", "0", False),
        ("TF_KERAS_RUNNING_REMOTELY", "1", True),
    ],
)
def test_remote(clean_env: pytest.MonkeyPatch, name: str, value: str, expected: bool) -> None:
    clean_env.setenv(name, value)
    assert tfc_runtime.remote() is expected


def test_dirs_from_job_dir_and_vertex(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("TFC_JOB_DIR", str(tmp_path / "job"))
    assert tfc_runtime.job_dir() == str(tmp_path / "job")
    assert tfc_runtime.model_dir() == str(tmp_path / "job" / "model")
    assert (tmp_path / "job" / "model").is_dir()
    clean_env.setenv("AIP_MODEL_DIR", "gs://bucket/base/model/")
    clean_env.setenv("AIP_CHECKPOINT_DIR", str(tmp_path / "ckpt"))
    assert tfc_runtime.model_dir() == "gs://bucket/base/model/"
    assert tfc_runtime.checkpoint_dir() == str(tmp_path / "ckpt")
    assert (tmp_path / "ckpt").is_dir()
    assert tfc_runtime.tensorboard_dir() == str(tmp_path / "job" / "tensorboard")


def test_task_save_path_per_task(clean_env: pytest.MonkeyPatch) -> None:
    cluster = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]}
    for task, index in (("chief", 0), ("worker", 1)):
        config = {"cluster": cluster, "task": {"type": task, "index": index}}
        clean_env.setenv("TF_CONFIG", json.dumps(config))
        saved = tfc_runtime.task_save_path("gs://bucket/model/")
        if task == "chief":
            assert tfc_runtime.is_chief() and saved == "gs://bucket/model/"
        else:
            folder = os.path.join(tempfile.gettempdir(), "tfc-task-worker-1")
            assert not tfc_runtime.is_chief()
            assert saved == os.path.join(folder, "model")
            assert os.path.isdir(folder)
