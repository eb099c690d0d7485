"""The launch panel (``%tfc_panel``, ``%%tfc_run --interactive``): plan, launch and watch a job.

- :mod:`.model`: the choices, their validation by the product's own code, the live summary;
- :mod:`.launcher`: launching in stages (one job per click) and watching a job's state and logs;
- :mod:`.memory`: the last choices made for a notebook, as a line in the panel's saved output;
- :mod:`.view`: the ipywidgets, imported only when a panel opens (``%load_ext`` imports none).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Settings
from ..errors import TfcError
from ..job.options import JobOptions
from ..notebook import capture
from ..store.records import JobStore
from .memory import ChoicesDisplay, saved_cell, saved_line
from .model import Choices, PanelModel, run_cells

if TYPE_CHECKING:
    from .view import LaunchPanel

__all__ = ["Choices", "ChoicesDisplay", "PanelModel", "build_model", "open_panel"]


def _remembered(notebook: Path | None) -> JobOptions | None:
    """The options of the line the notebook's saved panel output holds, if any."""
    if notebook is None:
        return None
    try:
        line = saved_line(capture.read_notebook(notebook))
        return JobOptions.from_line(line.removeprefix("%%tfc_run")) if line else None
    except TfcError:  # an unreadable notebook, or a line edited into nonsense: start afresh
        return None


def _remembered_cell(notebook: Path | None) -> tuple[int, JobOptions] | None:
    """The ``%%tfc_run`` cell the notebook's saved panel output had picked, and its line's
    options, while it is still a ``%%tfc_run`` cell of the notebook; None otherwise."""
    if notebook is None:
        return None
    try:
        nb = capture.read_notebook(notebook)
        number = saved_cell(nb)
        cells = {c.number: c for c in run_cells(nb)}
        if number is None or number not in cells or len(cells) < 2:
            return None
        return number, JobOptions.from_line(cells[number].line.removeprefix(capture.MAGIC))
    except TfcError:
        return None


def build_model(
    settings: Settings,
    *,
    select: Callable[[], capture.Selection],
    base: JobOptions | None = None,
    given: JobOptions | None = None,
    notebook: Path | None = None,
    remember: bool = True,
    pick_cell: bool | None = None,
) -> PanelModel:
    """The model a new panel starts from; its choices are remembered as the ``%%tfc_run``
    line in the panel's own output, saved with the notebook (see :mod:`.memory`).

    ``pick_cell`` (default: ``remember``, as ``%tfc_panel`` opens it) offers the saved
    notebook's ``%%tfc_run`` cells to choose from when it has several, starting from the one
    the saved panel output had picked (the memory keeps it beside the line); ``%%tfc_run
    --interactive`` (``remember=False``) runs its own cell.

    Pre-filled, first wins: the flags ``given`` now; with ``remember``, the line of the last
    panel saved in the notebook; then ``base`` (the cell's ``%%tfc_run`` line); then the
    configured defaults. ``%%tfc_run --interactive`` passes its flags as ``base`` and
    ``remember=False``: the cell says exactly what it wants.
    """
    base = base if base is not None else JobOptions()
    pick_cell = remember if pick_cell is None else pick_cell
    cell = _remembered_cell(notebook) if remember and pick_cell else None
    if cell is not None:  # the cell picked last: its line is the base
        base = cell[1]
    remembered = _remembered(notebook) if remember else None
    start = remembered if remembered is not None else base  # the whole line the panel showed
    choices = Choices.from_options(start, settings)
    full = given.over(base) if given is not None else base
    if given is not None:
        now = Choices.from_options(given.over(start), settings).to_dict()
        choices = choices.merged({d: now[d] for d in given.given if d in now})
    return PanelModel(
        settings,
        select=select,
        base=full,
        choices=choices,
        notebook=notebook,
        display=ChoicesDisplay(notebook),
        pick_cell=pick_cell,
        cell=cell[0] if cell is not None else None,
    )


def open_panel(
    settings: Settings,
    *,
    select: Callable[[], capture.Selection],
    store: JobStore,
    base: JobOptions | None = None,
    given: JobOptions | None = None,
    notebook: Path | None = None,
    remember: bool = True,
    pick_cell: bool | None = None,
) -> LaunchPanel:
    """A new panel (display it); arguments as :func:`build_model`, and the job records the
    panel launches into and lists."""
    from .view import LaunchPanel

    model = build_model(
        settings,
        select=select,
        base=base,
        given=given,
        notebook=notebook,
        remember=remember,
        pick_cell=pick_cell,
    )
    title = f"· {notebook.name}" if notebook else "· kernel history"
    return LaunchPanel(model, store, title=title)
