"""The job's executed notebook: its cells with what each printed and showed, and the error at
the cell that failed, as ``executed.ipynb`` (nbformat 4.5).

The cells are those the source map lists (``cells``: the job's code cells as written); each
gets, as Jupyter would give it, its ``stdout`` and ``stderr`` (what Python code wrote through
``sys.stdout`` and ``sys.stderr`` while the cell ran: a C library's own writes are in the log
only), the run cell's rich outputs and ``Out[]`` (:mod:`tfc_runtime.runcell`), and, at the cell
that failed, its ``error`` output with the annotated traceback. Cells the job never reached keep
no outputs and no execution count.

Written by the chief when the script ends (well, with an error, or by ``sys.exit``): to the job
folder (``$TFC_JOB_DIR/executed.ipynb``), else under the base output folder beside the run
cell's names (Vertex AI: ``<base>/executed.ipynb``). The kernel reads it back through its
border (``tfc_jupyter/returns/executed.py``). Standard library only: the image may have no
nbformat.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from typing import IO, Any

FILE = "executed.ipynb"
"""The executed notebook's name, in the job folder and the base output folder."""
MAX_CELL_TEXT = 1 << 20
"""Characters of stream text one cell keeps (the rest is in the job's log)."""
MAX_TEXT = 16 << 20
"""Characters of stream text the notebook keeps in all."""
CUT = "\n[tfc_runtime] ... more in the job's log\n"


class _Book:
    """The cells and what they made so far."""

    def __init__(self, cells: tuple[tuple[int, str], ...], notebook: str) -> None:
        self.cells = cells
        self.notebook = notebook
        self.outputs: dict[int, list[dict[str, Any]]] = {c: [] for c, _ in cells}
        self.counts: dict[int, int] = {}
        self.cell: int | None = None
        self.text: dict[int, int] = {}  # stream characters kept per cell
        self.total = 0

    def stream(self, name: str, text: str) -> None:
        cell = self.cell
        if cell not in self.outputs or not text:
            return
        kept = self.text.get(cell, 0)
        room = min(MAX_CELL_TEXT - kept, MAX_TEXT - self.total)
        if room <= 0:
            return
        if len(text) > room:
            text = text[:room] + CUT
            room = 0
        self.text[cell] = kept + len(text)
        self.total += len(text)
        outs = self.outputs[cell]
        if outs and outs[-1].get("output_type") == "stream" and outs[-1]["name"] == name:
            outs[-1]["text"] += text
        else:
            outs.append({"output_type": "stream", "name": name, "text": text})


_book: _Book | None = None


class _Tee:
    """A text stream that also gives what is written to the cell running now."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        if _book is not None and isinstance(text, str):
            with contextlib.suppress(Exception):  # the record never fails the job's print
                _book.stream(self._name, text)
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def install(cells: tuple[tuple[int, str], ...], notebook: str, *, chief: bool) -> None:
    """Keep the executed notebook of these cells (the chief's: the job's results are its)."""
    global _book
    if not chief or not cells:
        return
    _book = _Book(cells, notebook)
    sys.stdout = _Tee(sys.stdout, "stdout")
    sys.stderr = _Tee(sys.stderr, "stderr")


def enter(cell: int) -> None:
    """A cell starts: what is printed from now on is its own; it is counted in the order run."""
    if _book is None:
        return
    _book.cell = cell
    if cell in _book.outputs and cell not in _book.counts:
        _book.counts[cell] = len(_book.counts) + 1


def output(output: dict[str, Any]) -> None:
    """A rich output of the cell running now (``display_data`` or ``execute_result``)."""
    if _book is None or _book.cell not in _book.outputs:
        return
    sys.stdout.flush()
    shown = dict(output)
    if shown.get("output_type") == "execute_result":
        shown["execution_count"] = _book.counts.get(_book.cell or 0)
    _book.outputs[_book.cell or 0].append(shown)


def error(exc: BaseException, cell: object, traceback_text: str) -> None:
    """The job failed in ``cell`` (None: before any cell, or where no cell is known: the last
    cell that ran): its ``error`` output."""
    if _book is None:
        return
    at = cell if isinstance(cell, int) and cell in _book.outputs else _book.cell
    if at not in _book.outputs:
        return
    _book.outputs[at].append(
        {
            "output_type": "error",
            "ename": type(exc).__name__,
            "evalue": str(exc)[:10_000],
            "traceback": traceback_text.splitlines()[-500:],
        }
    )


def notebook() -> dict[str, Any] | None:
    """The executed notebook as nbformat 4.5 JSON, or None (none kept)."""
    if _book is None:
        return None
    cells = []
    for position, source in _book.cells:
        cells.append(
            {
                "cell_type": "code",
                "execution_count": _book.counts.get(position),
                "id": f"cell-{position}",
                "metadata": {"tfc_jupyter": {"cell": position}},
                "outputs": _book.outputs[position],
                "source": source,
            }
        )
    kernelspec = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": kernelspec,
            "language_info": {"name": "python"},
            "tfc_jupyter": {"notebook": _book.notebook, "executed": time.time()},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write() -> str | None:
    """Write the executed notebook (see the module's docstring); where it went, or None. Never
    fails the job: a notebook that cannot be written is one line on stderr."""
    data = notebook()
    if data is None:
        return None
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    try:
        return _write(json.dumps(data, ensure_ascii=False, indent=1, default=str))
    except Exception as exc:  # our failure is not the job's
        print(f"[tfc_runtime] warning: the executed notebook was not written ({exc})",
              file=sys.__stderr__)  # fmt: skip
        return None


def _write(text: str) -> str | None:
    job_dir = os.environ.get("TFC_JOB_DIR")
    model_dir = os.environ.get("AIP_MODEL_DIR")
    if not job_dir and not model_dir:
        return None
    folder = job_dir or tempfile.mkdtemp(prefix="tfc-executed-")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".executed-", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:  # owner-only, as the rest of the folder
        f.write(text)
    path = os.path.join(folder, FILE)
    os.replace(tmp, path)
    where = path
    if not job_dir and model_dir:  # Vertex AI: beside the cell's names, <base>/executed.ipynb
        from tfc_runtime import giveback

        where = giveback.upload(folder, model_dir.rstrip("/").rsplit("/", 1)[0]) + "/" + FILE
    return where
