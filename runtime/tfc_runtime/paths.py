"""Where a job writes: its folder, the model, checkpoints and TensorBoard logs (``AIP_*`` on
Vertex AI, the job folder on this machine, else the current directory)."""

from __future__ import annotations

import os
import tempfile

from tfc_runtime.cluster import cluster_info


def job_dir() -> str | None:
    """The job's own folder (``TFC_JOB_DIR``), None when not set."""
    return os.environ.get("TFC_JOB_DIR") or None


def _output_dir(aip_var: str, leaf: str, make: bool = True) -> str:
    """``$aip_var``, else ``<job_dir>/<leaf>``, else ``./<leaf>``; local folders are created
    (unless ``make`` is False)."""
    given = os.environ.get(aip_var)
    path = given or os.path.join(job_dir() or os.getcwd(), leaf)
    if make and "://" not in path:
        # in the job's own folder: owner-only, as the rest of it (it may hold what was trained)
        os.makedirs(path, mode=0o777 if given or not job_dir() else 0o700, exist_ok=True)
    return path


def model_dir() -> str:
    """Where to save the trained model (``AIP_MODEL_DIR`` on Vertex AI)."""
    return _output_dir("AIP_MODEL_DIR", "model")


def checkpoint_dir(*, make: bool = True) -> str:
    """Where to write checkpoints (``AIP_CHECKPOINT_DIR`` on Vertex AI); ``make=False`` only
    names it."""
    return _output_dir("AIP_CHECKPOINT_DIR", "checkpoints", make)


def tensorboard_dir() -> str:
    """Where to write TensorBoard logs (``AIP_TENSORBOARD_LOG_DIR`` on Vertex AI; else
    ``tensorboard/``, beside, not in, the job folder's own ``logs/``)."""
    return _output_dir("AIP_TENSORBOARD_LOG_DIR", "tensorboard")


def task_save_path(path: str) -> str:
    """``path`` on the chief; on any other task a private path under the temporary directory.

    In multi-worker training every task must save (saving runs collectives), but only the
    chief's copy is kept: others write to ``<tmp>/tfc-task-<type>-<index>/<basename>``.
    """
    info = cluster_info(os.environ)
    if info.is_chief:
        return path
    folder = os.path.join(tempfile.gettempdir(), f"tfc-task-{info.task_type}-{info.task_index}")
    os.makedirs(folder, exist_ok=True)
    name = os.path.basename(path.rstrip("/")) or "save"
    return os.path.join(folder, name)
