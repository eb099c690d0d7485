"""The launch panel (``%tfc_panel``, ``%%tfc_run --interactive``): plan, launch and watch a job.

- :mod:`.model`: the choices, their validation by the product's own code, the live summary;
- :mod:`.launcher`: launching in stages (one job per click) and watching a job's state and logs;
- :mod:`.memory`: the last choices made for each notebook (its metadata, and a fallback file);
- :mod:`.view`: the ipywidgets, imported only when a panel opens (``%load_ext`` imports none).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import capture
from ..config import Settings
from ..errors import TfcError
from ..options import JobOptions
from ..records import JobStore
from .memory import ChoiceMemory, ChoicesDisplay, newest, notebook_choices
from .model import DEST_FIELD, Choices, PanelModel

if TYPE_CHECKING:
    from .view import LaunchPanel

__all__ = ["ChoiceMemory", "Choices", "ChoicesDisplay", "PanelModel", "build_model", "open_panel"]


def _metadata_choices(notebook: Path | None) -> dict[str, object] | None:
    if notebook is None:
        return None
    try:
        return notebook_choices(capture.read_notebook(notebook))
    except TfcError:
        return None


def build_model(
    settings: Settings,
    *,
    select: Callable[[], capture.Selection],
    store: JobStore,
    base: JobOptions | None = None,
    given: JobOptions | None = None,
    notebook: Path | None = None,
    remember: bool = True,
) -> PanelModel:
    """The model a new panel starts from; the choices made in it are remembered in the notebook's
    metadata (through the frontend, see :mod:`.memory`) and next to ``store``.

    Pre-filled, first wins: the flags ``given`` now (only those present in the namespace); with
    ``remember``, the choices last made for this notebook (the saved notebook's
    ``metadata.tfc_jupyter.panel``, or this machine's ``panel_choices.json`` when newer); then
    ``base`` (a parsed ``%%tfc_run`` line); then the configured defaults.
    ``%%tfc_run --interactive`` passes its flags as ``base`` and ``remember=False``: the cell
    says exactly what it wants.
    """
    memory = ChoiceMemory(store.path.parent / "panel_choices.json")
    base = base if base is not None else JobOptions()
    full = given.over(base) if given is not None else base
    choices = Choices.from_options(base, settings)
    if remember:
        choices = choices.merged(newest(_metadata_choices(notebook), memory.entry(notebook)))
    if given is not None:
        now = Choices.from_options(full, settings).to_dict()
        choices = choices.merged(
            {DEST_FIELD[d]: now[DEST_FIELD[d]] for d in given.given if d in DEST_FIELD}
        )
    return PanelModel(
        settings,
        select=select,
        base=full,
        choices=choices,
        notebook=notebook,
        memory=memory,
        display=ChoicesDisplay(notebook),
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
) -> LaunchPanel:
    """A new panel (display it); arguments as :func:`build_model`."""
    from .view import LaunchPanel

    model = build_model(
        settings,
        select=select,
        store=store,
        base=base,
        given=given,
        notebook=notebook,
        remember=remember,
    )
    title = f"· {notebook.name}" if notebook else "· kernel history"
    return LaunchPanel(model, store, title=title)
