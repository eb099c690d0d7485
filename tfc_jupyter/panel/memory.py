"""The panel's memory: its choices as the ``%%tfc_run`` line, in the panel's own output.

The panel shows one display output of MIME type :data:`MIME_TYPE` (:class:`ChoicesDisplay`),
with a ``display_id``, holding the ``%%tfc_run`` line its choices stand for (and, in a notebook
with several ``%%tfc_run`` cells, the one picked), and updates it in place on every change (one
output, never a pile of them). An output is part of the notebook:
every frontend (JupyterLab, Notebook, VS Code, nbclient) saves it with the notebook, so a new
panel for that notebook, in a new kernel too, starts from the line in the saved file
(:func:`saved_line`), read by the same parser as a cell's line.

Nothing else is written: no notebook metadata set by a frontend, no file beside the job records,
no timestamps to choose between copies. Choices not saved are not remembered, like any unsaved
edit; clearing the outputs forgets them. The bundle carries a ``text/plain`` line too, so a
frontend without tfc_jupyter's extension shows the line as text.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

MIME_TYPE = "application/vnd.tfc-jupyter.panel-choices+json"
BUNDLE_VERSION = 2


def choices_bundle(
    line: str | None, *, notebook: Path | None, cell: int | None = None
) -> dict[str, Any]:
    """The display bundle of the panel's memory: ``{MIME_TYPE: {"version", "notebook",
    "line"[, "cell"]}, "text/plain": ...}``; ``line`` is None before the user chose anything,
    ``cell`` the ``%%tfc_run`` cell picked (1-based position) when the notebook has several."""
    text = f"tfc_jupyter launch panel: {line}" if line else "tfc_jupyter launch panel"
    data: dict[str, Any] = {
        "version": BUNDLE_VERSION,
        "notebook": str(notebook) if notebook else None,
        "line": line,
    }
    if cell is not None:
        data["cell"] = cell
        text += f" (cell {cell})"
    return {MIME_TYPE: data, "text/plain": text}


def _saved_bundle(nb: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The last panel memory saved in a notebook that holds a ``%%tfc_run`` line."""
    found = None
    for cell in nb.get("cells") or []:
        if not isinstance(cell, Mapping):
            continue
        for output in cell.get("outputs") or []:
            data = output.get("data") if isinstance(output, Mapping) else None
            bundle = data.get(MIME_TYPE) if isinstance(data, Mapping) else None
            if isinstance(bundle, Mapping) and bundle.get("version") == BUNDLE_VERSION:
                line = bundle.get("line")
                if isinstance(line, str) and line.startswith("%%tfc_run"):
                    found = bundle
    return found


def saved_line(nb: Mapping[str, Any]) -> str | None:
    """The line the last panel shown in a saved notebook remembers (its last output of
    :data:`MIME_TYPE`), or None."""
    bundle = _saved_bundle(nb)
    return str(bundle["line"]) if bundle is not None else None


def saved_cell(nb: Mapping[str, Any]) -> int | None:
    """The ``%%tfc_run`` cell the last panel saved in a notebook had picked, or None."""
    bundle = _saved_bundle(nb)
    cell = bundle.get("cell") if bundle is not None else None
    return cell if isinstance(cell, int) and not isinstance(cell, bool) and cell > 0 else None


Publish = Callable[[dict[str, Any], str, bool], None]


def _ipython_publish(bundle: dict[str, Any], display_id: str, update: bool) -> None:
    from IPython.display import display

    display(bundle, raw=True, display_id=display_id, update=update)


class ChoicesDisplay:
    """The panel's line as one display output, updated in place (see the module docstring).

    Args:
        notebook: the notebook the choices are for (None: the kernel does not know its file).
        publish: sends ``(bundle, display_id, update)``; default IPython's ``display``.
    """

    def __init__(self, notebook: Path | None, *, publish: Publish | None = None) -> None:
        self.notebook = notebook
        self.display_id = f"tfc-panel-choices-{uuid.uuid4().hex}"
        self.shown = False
        self.line: str | None = None
        self.cell: int | None = None
        self._publish = _ipython_publish if publish is None else publish
        self._lock = threading.Lock()

    def bundle(self) -> dict[str, Any]:
        """The bundle as last sent."""
        return choices_bundle(self.line, notebook=self.notebook, cell=self.cell)

    def show(self, line: str | None = None, cell: int | None = None) -> None:
        """Display the output (in the cell that shows the panel), holding ``line`` (and the
        ``%%tfc_run`` cell picked, when there is a choice)."""
        with self._lock:
            self.line, self.cell = line, cell
            self._publish(self.bundle(), self.display_id, False)
            self.shown = True

    def update(self, line: str, cell: int | None = None) -> bool:
        """Update the output in place with a new line (and cell); False when not shown or
        unchanged."""
        with self._lock:
            if not self.shown or (line, cell) == (self.line, self.cell):
                return False
            self.line, self.cell = line, cell
            self._publish(self.bundle(), self.display_id, True)
            return True
