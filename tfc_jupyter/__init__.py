"""tfc_jupyter: take a TensorFlow notebook from a laptop to GPUs, TPUs and multi-worker clusters.

``%load_ext tfc_jupyter`` registers the magics and imports nothing heavy: no TensorFlow,
aiplatform, docker or nbconvert.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Client", "JobOptions", "__version__"]


def __getattr__(name: str) -> Any:
    """``tfc_jupyter.Client`` and ``tfc_jupyter.JobOptions``, imported when first used."""
    if name == "Client":
        from .client import Client

        return Client
    if name == "JobOptions":
        from .job.options import JobOptions

        return JobOptions
    raise AttributeError(f"module 'tfc_jupyter' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """Register the ``%%tfc_run`` family of magics (called by ``%load_ext tfc_jupyter``)."""
    from .magics import TfcMagics

    ipython.register_magics(TfcMagics)


def unload_ipython_extension(ipython: Any) -> None:
    """Nothing to undo beyond what IPython does itself."""


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The jupyter_server extension (the jobs API); its module is imported only by the server."""
    return [{"module": "tfc_jupyter.server"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt JupyterLab extension shipped in the package (the sidebar, the button)."""
    return [{"src": "labextension", "dest": "tfc-jupyter"}]
