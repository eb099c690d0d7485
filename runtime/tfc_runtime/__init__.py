"""tfc_runtime: what a training script may call inside a tfc_jupyter job.

Everything here also works outside a job (a notebook, a plain ``python script.py``): the
strategy is then TensorFlow's default, the task is a single-machine chief and the output
folders live under the current directory. Importing this package does not import TensorFlow.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

# The submodules `cluster` and `strategy` share their names with the functions below. Import
# them first, so that the functions (defined later) are what `tfc_runtime.cluster` and
# `tfc_runtime.strategy` name; code reaching the modules uses `from tfc_runtime.strategy import`.
from tfc_runtime.cluster import ClusterInfo, cluster_info
from tfc_runtime.estimator import run_config, tpu_config, tpu_run_config
from tfc_runtime.strategy import current_strategy
from tfc_runtime.tpu import tpu_resolver, tpu_strategy

__version__ = "0.1.0"

__all__ = [
    "ClusterInfo",
    "__version__",
    "checkpoint_dir",
    "cluster",
    "is_chief",
    "job_dir",
    "model_dir",
    "remote",
    "run_config",
    "strategy",
    "task_save_path",
    "tensorboard_dir",
    "tpu_config",
    "tpu_resolver",
    "tpu_run_config",
    "tpu_strategy",
]


def strategy() -> Any:
    """The strategy the runtime built for this job, else ``tf.distribute.get_strategy()``."""
    built = current_strategy()
    if built is not None:
        return built
    import tensorflow as tf

    return tf.distribute.get_strategy()


def cluster() -> ClusterInfo:
    """This task's place in the job (TF_CONFIG, CLUSTER_SPEC, or a single machine)."""
    return cluster_info(os.environ)


def is_chief() -> bool:
    """True on the chief task (and on a single machine): the task whose saves are kept."""
    return cluster().is_chief


def remote() -> bool:
    """True inside a job: ``TFC_REMOTE=1`` or ``TF_KERAS_RUNNING_REMOTELY`` set (as tfc.run)."""
    return os.environ.get("TFC_REMOTE") == "1" or bool(os.environ.get("TF_KERAS_RUNNING_REMOTELY"))


def job_dir() -> str | None:
    """The job's own folder (``TFC_JOB_DIR``), None when not set."""
    return os.environ.get("TFC_JOB_DIR") or None


def _output_dir(aip_var: str, leaf: str) -> str:
    """``$aip_var``, else ``<job_dir>/<leaf>``, else ``./<leaf>``; local folders are created."""
    path = os.environ.get(aip_var) or os.path.join(job_dir() or os.getcwd(), leaf)
    if "://" not in path:
        os.makedirs(path, exist_ok=True)
    return path


def model_dir() -> str:
    """Where to save the trained model (``AIP_MODEL_DIR`` on Vertex AI)."""
    return _output_dir("AIP_MODEL_DIR", "model")


def checkpoint_dir() -> str:
    """Where to write checkpoints (``AIP_CHECKPOINT_DIR`` on Vertex AI)."""
    return _output_dir("AIP_CHECKPOINT_DIR", "checkpoints")


def tensorboard_dir() -> str:
    """Where to write TensorBoard logs (``AIP_TENSORBOARD_LOG_DIR`` on Vertex AI)."""
    return _output_dir("AIP_TENSORBOARD_LOG_DIR", "logs")


def task_save_path(path: str) -> str:
    """``path`` on the chief; on any other task a private path under the temporary directory.

    In multi-worker training every task must save (saving runs collectives), but only the
    chief's copy is kept: others write to ``<tmp>/tfc-task-<type>-<index>/<basename>``.
    """
    info = cluster()
    if info.is_chief:
        return path
    folder = os.path.join(tempfile.gettempdir(), f"tfc-task-{info.task_type}-{info.task_index}")
    os.makedirs(folder, exist_ok=True)
    name = os.path.basename(path.rstrip("/")) or "save"
    return os.path.join(folder, name)
