"""The jupyter_server extension: the jobs API under ``/tfc-jupyter/`` for the JupyterLab sidebar.

Enabled on install by ``jupyter-config/jupyter_server_config.d/tfc_jupyter.json`` (shipped in the
wheel as ``etc/jupyter/jupyter_server_config.d/tfc_jupyter.json``); check it with
``jupyter server extension list``, enable it by hand with
``jupyter server extension enable tfc_jupyter``. Imported only by the server, never by
``%load_ext tfc_jupyter``.
"""

from __future__ import annotations

from typing import Any


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register the REST handlers (called by jupyter_server at start-up)."""
    from .handlers import NAMESPACE, setup_handlers
    from .service import JobService

    service = JobService(serverapp.root_dir)
    setup_handlers(serverapp.web_app, service)
    serverapp.log.info(
        "tfc_jupyter: jobs API at %s%s/ (job records in %s)",
        serverapp.base_url,
        NAMESPACE,
        service.store().path,
    )


# The name jupyter_server 1.x looked for.
load_jupyter_server_extension = _load_jupyter_server_extension
