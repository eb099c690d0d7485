"""The panel's memory: the last choices made for each notebook.

They belong in the notebook itself, ``metadata.tfc_jupyter.panel``, but the kernel must not write
the ``.ipynb`` the user has open: JupyterLab keeps its own copy of the notebook, and a file changed
behind its back makes its next save (autosave included) stop on a "File Changed" dialog, where
"Overwrite" drops what the kernel wrote. So the frontend writes them, into the live notebook:

- the panel shows a display output of MIME type :data:`MIME_TYPE` (:class:`ChoicesDisplay`), with a
  ``display_id``, and updates it in place on every change (one output, never a pile of them);
- tfc_jupyter's JupyterLab extension (also loaded by Notebook 7) sees that output arrive from the
  notebook's kernel and sets ``metadata.tfc_jupyter.panel`` in the notebook's live model: the
  user's next save stores it with their other edits, and no unsaved edit is ever overwritten;
- the bundle carries a ``text/plain`` line too, so nbconvert, nbclient and frontends without the
  extension show one line of text.

A frontend without the extension (VS Code, an old Jupyter) never writes the metadata, so the
choices are also kept next to the job records (``<TFC_JUPYTER_HOME>/panel_choices.json``,
:class:`ChoiceMemory`), keyed by the notebook's absolute path, written atomically under a lock.
A new panel starts from the newer of the two (:func:`newest`; ties go to the notebook): with the
extension, the notebook's once it is saved; without it, this machine's file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_NOTEBOOKS = 500
NO_NOTEBOOK = "(kernel history)"
MIME_TYPE = "application/vnd.tfc-jupyter.panel-choices+json"
BUNDLE_VERSION = 1
SAVED_AT = "saved_at"  # in metadata.tfc_jupyter.panel: when the choices were made (epoch seconds)


def notebook_key(notebook: Path | None) -> str:
    """The memory key of a notebook: its absolute path, or one key for "no notebook file"."""
    return str(Path(notebook).resolve()) if notebook else NO_NOTEBOOK


class ChoiceMemory:
    """Last panel choices per notebook in one small JSON file (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def load(self, notebook: Path | None) -> dict[str, Any] | None:
        """The choices saved for ``notebook``, or None."""
        entry = self.entry(notebook)
        return entry[0] if entry else None

    def entry(self, notebook: Path | None) -> tuple[dict[str, Any], float] | None:
        """The choices saved for ``notebook`` and when (epoch seconds), or None."""
        entry = self._read().get(notebook_key(notebook))
        if not isinstance(entry, dict) or not isinstance(entry.get("choices"), dict):
            return None
        return dict(entry["choices"]), _stamp(entry.get("saved_at"))

    def save(
        self, notebook: Path | None, choices: dict[str, Any], *, saved_at: float | None = None
    ) -> None:
        """Remember ``choices`` for ``notebook`` (keeps the newest :data:`MAX_NOTEBOOKS`)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._lock():
            data = self._read()
            data[notebook_key(notebook)] = {
                "saved_at": time.time() if saved_at is None else saved_at,
                "choices": dict(choices),
            }
            if len(data) > MAX_NOTEBOOKS:
                newest = sorted(data, key=lambda k: _stamp(data[k].get("saved_at")), reverse=True)
                data = {k: data[k] for k in newest[:MAX_NOTEBOOKS]}
            fd, tmp = tempfile.mkstemp(prefix=".panel_choices.", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(data, fh, indent=1, sort_keys=True)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # nothing saved yet, or a damaged file: start afresh
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(v, dict)}

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """An exclusive lock between processes (POSIX ``flock``; none elsewhere)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _stamp(value: Any) -> float:
    """A ``saved_at`` value as epoch seconds (0 when absent or not a number)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return 0.0


def notebook_choices(nb: Any) -> dict[str, Any] | None:
    """The choices a notebook carries in ``metadata.tfc_jupyter.panel`` (an nbformat node)."""
    meta = (nb.get("metadata") or {}).get("tfc_jupyter") or {}
    panel = meta.get("panel") if isinstance(meta, dict) else None
    return dict(panel) if isinstance(panel, dict) else None


def newest(
    metadata: Mapping[str, Any] | None, remembered: tuple[dict[str, Any], float] | None
) -> dict[str, Any] | None:
    """The choices a new panel starts from: the notebook's (``metadata.tfc_jupyter.panel``)
    unless this machine remembers newer ones for it (a frontend that did not write them, or a
    notebook not saved since); choices written by hand, with no ``saved_at``, count as oldest."""
    if remembered is None:
        return dict(metadata) if metadata is not None else None
    if metadata is None or remembered[1] > _stamp(metadata.get(SAVED_AT)):
        return remembered[0]
    return dict(metadata)


def choices_bundle(
    choices: Mapping[str, Any] | None, *, notebook: Path | None, saved_at: float | None = None
) -> dict[str, Any]:
    """The display bundle that carries the choices to the frontend (see the module docstring).

    ``{MIME_TYPE: {"version", "notebook", "panel"}, "text/plain": ...}``: ``panel`` is what
    goes into ``metadata.tfc_jupyter.panel`` (the choices and ``saved_at``), or None before the
    user chose anything; ``notebook`` the notebook's absolute path as the kernel knows it (None
    when it does not), so the frontend writes only into that notebook.
    """
    panel = None if choices is None else {**choices, SAVED_AT: saved_at}
    if choices is None:
        text = "tfc_jupyter panel choices: none made yet"
    else:
        shown = ", ".join(
            f"{k}={v}" for k, v in choices.items() if v not in ("", 0, None) or k == "workers"
        )
        text = f"tfc_jupyter panel choices: {shown}"
    return {
        MIME_TYPE: {
            "version": BUNDLE_VERSION,
            "notebook": str(notebook) if notebook else None,
            "panel": panel,
        },
        "text/plain": text,
    }


Publish = Callable[[dict[str, Any], str, bool], None]


def _ipython_publish(bundle: dict[str, Any], display_id: str, update: bool) -> None:
    from IPython.display import display

    display(bundle, raw=True, display_id=display_id, update=update)


class ChoicesDisplay:
    """The panel's choices as one display output, updated in place (see the module docstring).

    Args:
        notebook: the notebook the choices are for (None: the kernel does not know its file).
        publish: sends ``(bundle, display_id, update)``; default IPython's ``display``.
    """

    def __init__(self, notebook: Path | None, *, publish: Publish | None = None) -> None:
        self.notebook = notebook
        self.display_id = f"tfc-panel-choices-{uuid.uuid4().hex}"
        self.shown = False
        self.sent: dict[str, Any] | None = None
        self._saved_at: float | None = None
        self._publish = _ipython_publish if publish is None else publish
        self._lock = threading.Lock()

    def bundle(self) -> dict[str, Any]:
        """The bundle as last sent (no choices before the first change)."""
        return choices_bundle(self.sent, notebook=self.notebook, saved_at=self._saved_at)

    def show(self) -> None:
        """Display the output (in the cell that shows the panel)."""
        with self._lock:
            self._publish(self.bundle(), self.display_id, False)
            self.shown = True

    def update(self, choices: Mapping[str, Any], saved_at: float) -> bool:
        """Update the output in place with new choices; False when not shown or unchanged."""
        with self._lock:
            if not self.shown or dict(choices) == self.sent:
                return False
            self.sent, self._saved_at = dict(choices), saved_at
            self._publish(self.bundle(), self.display_id, True)
            return True
