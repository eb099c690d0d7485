"""tfc_jupyter: take a TensorFlow notebook from a laptop to GPUs, TPUs and multi-worker clusters.

``%load_ext tfc_jupyter`` registers the magics and imports nothing heavy: no TensorFlow,
aiplatform, docker or nbconvert.

``import tfc_jupyter as tfc`` is a drop-in for ``import tensorflow_cloud as tfc``: ``tfc.run``,
``tfc.remote``, ``tfc.MachineConfig``, ``tfc.AcceleratorType``, ``tfc.COMMON_MACHINE_CONFIGS``
and ``tfc.DockerConfig`` (see :mod:`tfc_jupyter.run_api`), and its tuner: ``tfc.CloudTuner``,
``tfc.CloudOracle``, ``tfc.run_cloudtuner`` (:mod:`tfc_jupyter.trials.tuner`).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

__version__ = "0.1.0"
_LAZY = {
    "Client": "client",
    "JobOptions": "job.options",
    "run": "run_api",
    "remote": "run_api",
    "hp": "run_api",
    "run_cloudtuner": "run_api",
    "CloudTuner": "trials.tuner",
    "CloudOracle": "trials.tuner",
    "RunResult": "run_api",
    "MachineConfig": "tfc_types",
    "AcceleratorType": "tfc_types",
    "COMMON_MACHINE_CONFIGS": "tfc_types",
    "DockerConfig": "tfc_types",
    "is_tpu_config": "tfc_types",
}
__all__ = sorted([*_LAZY, "__version__"])


def __getattr__(name: str) -> Any:
    """The public API (``Client``, ``JobOptions``, ``run`` and tfc.run's types), imported
    when first used: loading the extension imports none of it."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tfc_jupyter' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


def load_ipython_extension(ipython: Any) -> None:
    """Register the ``%%tfc_run`` family of magics (called by ``%load_ext tfc_jupyter``)."""
    from .events import JOB_ENDED
    from .magics import TfcMagics, names_back_on_wait
    from .notebook import executed

    ipython.register_magics(TfcMagics)
    executed.watch(ipython)  # each cell's code as run, by cell id: the job runs what ran
    ipython.events.register("post_run_cell", _warm_once_tensorflow_is_imported)
    if names_back_on_wait not in JOB_ENDED:  # job.wait() sets a run cell's names here
        JOB_ENDED.append(names_back_on_wait)


_warm_started = False


def _warm_once_tensorflow_is_imported(*_: Any) -> None:
    """After a cell: once the notebook has imported TensorFlow, start the warm runtime of its
    local jobs (``registry.start_resident``), so that the first of them starts warm."""
    global _warm_started
    if _warm_started or "tensorflow" not in sys.modules:
        return
    _warm_started = True
    try:
        from pathlib import Path

        from .jobs import store_for
        from .registry import start_resident

        start_resident(Path(store_for().path).parent)
    except Exception:  # (a job then starts it, or starts cold: never a cell's error)
        pass


def unload_ipython_extension(ipython: Any) -> None:
    """Stop recording the cells run (IPython itself undoes the rest)."""
    from .events import JOB_ENDED
    from .magics import names_back_on_wait
    from .notebook import executed

    executed.unwatch(ipython)
    with contextlib.suppress(ValueError):
        ipython.events.unregister("post_run_cell", _warm_once_tensorflow_is_imported)
    if names_back_on_wait in JOB_ENDED:
        JOB_ENDED.remove(names_back_on_wait)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The jupyter_server extension (the jobs API); its module is imported only by the server."""
    return [{"module": "tfc_jupyter.server"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt JupyterLab extension shipped in the package (the sidebar, the button)."""
    return [{"src": "labextension", "dest": "tfc-jupyter"}]
