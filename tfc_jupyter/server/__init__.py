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
    from ..registry import keep_resident
    from .handlers import NAMESPACE, setup_handlers
    from .service import JobService

    keep_resident()  # the server launches jobs for a while: the next ones start warm
    service = JobService(serverapp.root_dir, kernel_pid=_kernel_pids(serverapp))
    setup_handlers(serverapp.web_app, service)
    _tell_unsent(service)
    serverapp.log.info(
        "tfc_jupyter: jobs API at %s%s/ (job records in %s)",
        serverapp.base_url,
        NAMESPACE,
        service.store().path,
    )


def _kernel_pids(serverapp: Any) -> Any:
    """``kernel id -> its process id`` for the kernels this server runs: 0 for an id it runs no
    more (shut down), None where its process cannot be told (a remote kernel)."""

    def pid(kernel_id: str) -> int | None:
        manager = serverapp.kernel_manager
        if kernel_id not in manager:
            return 0
        provisioner = getattr(manager.get_kernel(kernel_id), "provisioner", None)
        found = getattr(provisioner, "pid", None)
        return found if isinstance(found, int) else None

    return pid


UNSENT_EVERY_S = 30.0
"""How often the server looks for ended jobs whose ``--notify`` nobody sent."""


def _tell_unsent(service: Any) -> None:
    """Now and then, off the event loop, send the ends of jobs whose watcher died before it
    could (``tfc_jupyter.returns.notify.send_unsent``): one look at a time."""
    import asyncio

    from tornado.ioloop import PeriodicCallback

    from ..returns import notify

    busy: list[asyncio.Future[int]] = []

    def look() -> None:
        if busy and not busy[0].done():
            return
        busy[:] = [asyncio.ensure_future(asyncio.to_thread(notify.send_unsent, service.store()))]

    PeriodicCallback(look, UNSENT_EVERY_S * 1000).start()


# The name jupyter_server 1.x looked for.
load_jupyter_server_extension = _load_jupyter_server_extension
