"""tfc_runtime: what a training script may call inside a tfc_jupyter job.

Everything here also works outside a job (a notebook, a plain ``python script.py``): the
strategy is then TensorFlow's default, the task is a single-machine chief and the output
folders live under the current directory. Importing this package does not import TensorFlow.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

# The submodules `cluster` and `strategy` share their names with the functions below. Import
# them first, so that the functions (defined later) are what `tfc_runtime.cluster` and
# `tfc_runtime.strategy` name; code reaching the modules uses `from tfc_runtime.strategy import`.
from tfc_runtime import strategy as _strategy_module  # noqa: F401  (the module first)
from tfc_runtime.built import current_strategy
from tfc_runtime.cluster import ClusterInfo, cluster_info

if TYPE_CHECKING:
    from tfc_runtime.estimator import run_config, tpu_config, tpu_run_config
    from tfc_runtime.paths import (
        checkpoint_dir,
        job_dir,
        model_dir,
        task_save_path,
        tensorboard_dir,
    )
    from tfc_runtime.resume import epochs
    from tfc_runtime.tpu import tpu_resolver, tpu_strategy

_LAZY = {
    **dict.fromkeys(("run_config", "tpu_config", "tpu_run_config"), "estimator"),
    **dict.fromkeys(
        ("checkpoint_dir", "job_dir", "model_dir", "task_save_path", "tensorboard_dir"), "paths"
    ),
    "epochs": "resume",
    **dict.fromkeys(("tpu_resolver", "tpu_strategy"), "tpu"),
}
"""Names imported from their module when first asked for: the kernel imports this package for
``tfc_runtime.protocol`` on every launch, and needs none of them."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tfc_runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tfc_runtime.{module}"), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "ClusterInfo",
    "__version__",
    "checkpoint_dir",
    "cluster",
    "epochs",
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
