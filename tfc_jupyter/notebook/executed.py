"""What this kernel ran, by cell id: the job runs the cells above ``%%tfc_run`` as they ran.

IPython (8 and later) hands each ``pre_run_cell`` handler an ``ExecutionInfo`` whose ``cell_id``
ipykernel fills from the execute request's ``metadata.cellId``: JupyterLab and Notebook 7 send the
cell's nbformat id there (nbclient and the classic Notebook send none). ``%load_ext tfc_jupyter``
registers :func:`watch`, which keeps the last code each cell id ran (one dict entry per cell,
nothing parsed or copied), so a cell edited and run but not saved is taken as it ran
(``capture.select_cells``).

This module is imported when the extension loads: the standard library only.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Ran:
    """One cell's last run: its code (``%%tfc_run`` line included), ``In [count]``, when."""

    code: str
    count: int | None
    at: float


@dataclass
class Executed:
    """What the kernel ran: the last run of each cell id since the extension loaded, the
    kernel's inputs (``In``, for the cells that ran before it), and the ``In`` number the
    extension was loaded at."""

    ran: dict[str, Ran] = field(default_factory=dict)
    history: Sequence[str] = ()
    loaded_at: int | None = None


_RAN: dict[str, Ran] = {}
_LOADED_AT: list[int | None] = [None]
_WATCHING: dict[int, Any] = {}  # id(shell) -> its registered handler


def _count(shell: Any) -> int | None:
    """The ``In [n]`` of the cell starting now: IPython stores its input after
    ``pre_run_cell`` (and counts it before, from 9.0, after, in 8.x: the history is the same)."""
    try:
        return len(shell.history_manager.input_hist_raw)
    except (AttributeError, TypeError):
        return None


def watch(shell: Any) -> None:
    """Record each cell ``shell`` runs from now on by its cell id (once per shell), and the
    cell running now (``%load_ext tfc_jupyter``'s own, from the kernel's request)."""
    if id(shell) in _WATCHING or getattr(shell, "events", None) is None:
        return

    def pre_run_cell(info: Any) -> None:
        cell_id = getattr(info, "cell_id", None)
        if cell_id and isinstance(info.raw_cell, str):
            count = _count(shell) if getattr(info, "store_history", True) else None
            _RAN[str(cell_id)] = Ran(info.raw_cell, count, time.time())

    shell.events.register("pre_run_cell", pre_run_cell)
    _WATCHING[id(shell)] = pre_run_cell
    now = _count(shell)  # the loading cell's input is stored already
    _LOADED_AT[0] = now - 1 if now else None
    try:  # the cell loading the extension ran before the handler was there
        parent = shell.kernel.get_parent("shell")
        cell_id = (parent.get("metadata") or {}).get("cellId")
        code = (parent.get("content") or {}).get("code")
    except Exception:  # not an ipykernel kernel (terminal IPython, tests), or an old one
        return
    if cell_id and isinstance(code, str):
        _RAN[str(cell_id)] = Ran(code, _LOADED_AT[0], time.time())


def unwatch(shell: Any) -> None:
    """Stop recording ``shell``'s cells (``%unload_ext tfc_jupyter``); the record is kept."""
    handler = _WATCHING.pop(id(shell), None)
    if handler is not None:
        with contextlib.suppress(ValueError):  # already gone
            shell.events.unregister("pre_run_cell", handler)


def snapshot(shell: Any) -> Executed:
    """What ``shell`` ran: a copy of the record, and its input history."""
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if not history:
        history = (getattr(shell, "user_ns", None) or {}).get("In") or []
    return Executed(dict(_RAN), tuple(str(x) for x in history), _LOADED_AT[0])
