"""The panel's memory: the last choices made for each notebook.

Where they live, and why not in the ``.ipynb`` itself: the kernel cannot safely write the notebook
file the user has open. JupyterLab keeps its own copy of the notebook; a file changed behind its
back makes its next save (autosave included) stop on a "File Changed" dialog, and choosing
"Overwrite" drops what the kernel wrote. So the choices are kept next to the job records
(``<TFC_JUPYTER_HOME>/panel_choices.json``), keyed by the notebook's absolute path, written
atomically under a lock (several kernels may save at once). A notebook may also carry defaults in
its own metadata, ``metadata.tfc_jupyter.panel`` (added by hand or by a frontend that owns the
live notebook); they are used when nothing is remembered for it on this machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_NOTEBOOKS = 500
NO_NOTEBOOK = "(kernel history)"


def notebook_key(notebook: Path | None) -> str:
    """The memory key of a notebook: its absolute path, or one key for "no notebook file"."""
    return str(Path(notebook).resolve()) if notebook else NO_NOTEBOOK


class ChoiceMemory:
    """Last panel choices per notebook in one small JSON file (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def load(self, notebook: Path | None) -> dict[str, Any] | None:
        """The choices saved for ``notebook``, or None."""
        entry = self._read().get(notebook_key(notebook))
        choices = entry.get("choices") if isinstance(entry, dict) else None
        return dict(choices) if isinstance(choices, dict) else None

    def save(self, notebook: Path | None, choices: dict[str, Any]) -> None:
        """Remember ``choices`` for ``notebook`` (keeps the newest :data:`MAX_NOTEBOOKS`)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._lock():
            data = self._read()
            data[notebook_key(notebook)] = {"saved_at": time.time(), "choices": dict(choices)}
            if len(data) > MAX_NOTEBOOKS:
                newest = sorted(data, key=lambda k: data[k].get("saved_at", 0), reverse=True)
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


def notebook_choices(nb: Any) -> dict[str, Any] | None:
    """Defaults a notebook carries in ``metadata.tfc_jupyter.panel`` (an nbformat node)."""
    meta = (nb.get("metadata") or {}).get("tfc_jupyter") or {}
    panel = meta.get("panel") if isinstance(meta, dict) else None
    return dict(panel) if isinstance(panel, dict) else None
