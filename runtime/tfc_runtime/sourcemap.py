"""Map lines of the converted script back to notebook cells.

File format (JSON)::

    {"version": 1, "notebook": "<path or name>", "lines": [[cell, line] | null, ...],
     "script": true,    # optional: the job is a .py entry point, its one "cell" the file
     "run_cell": 4,     # optional: the %%tfc_run cell's position (its names and outputs go back)
     "cells": [{"cell": 2, "source": "..."}]}  # optional: the job's code cells as written
                                              # (the executed notebook's, tfc_runtime.executed)

``lines[i]`` is the notebook location of script line ``i + 1``: ``cell`` is the 1-based position
of the cell in the notebook (markdown cells count), ``line`` the 1-based line in that cell's
source; ``null`` marks a generated line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

VERSION = 1


@dataclass(frozen=True)
class SourceMap:
    """Script line -> (cell, line) in the notebook."""

    notebook: str = ""
    lines: tuple[tuple[int, int] | None, ...] = field(default_factory=tuple)
    script: bool = False  # the job is a .py file: places read "train.py, line 3"
    run_cell: int | None = None  # the %%tfc_run cell (tfc_runtime.runcell)
    cells: tuple[tuple[int, str], ...] = ()  # (position, source) of the job's code cells

    def locate(self, script_line: int) -> tuple[int, int] | None:
        """The (cell, line) of 1-based ``script_line``, None for a generated or unknown line."""
        if 1 <= script_line <= len(self.lines):
            return self.lines[script_line - 1]
        return None

    def describe(self, script_line: int) -> str:
        """``cell 7, line 3``; ``script line 42`` when the line has no notebook location."""
        where = self.locate(script_line)
        if where is None:
            return f"script line {script_line}"
        if self.script:
            return f"{os.path.basename(self.notebook)}, line {where[1]}"
        return f"cell {where[0]}, line {where[1]}"


def _entry(item: object, index: int) -> tuple[int, int] | None:
    """One ``lines`` entry, validated."""
    if item is None:
        return None
    if (
        isinstance(item, list)
        and len(item) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in item)
    ):
        return (item[0], item[1])
    raise ValueError(f"source map lines[{index}] must be [cell, line] or null, got {item!r}")


def parse(data: object) -> SourceMap:
    """A SourceMap from the decoded JSON document; ValueError when it is malformed."""
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ValueError(f"not a version {VERSION} source map")
    lines = data.get("lines")
    if not isinstance(lines, list):
        raise ValueError("source map 'lines' must be a list")
    entries = tuple(_entry(v, i) for i, v in enumerate(lines))
    run_cell = data.get("run_cell")
    if run_cell is not None and (
        not isinstance(run_cell, int) or isinstance(run_cell, bool) or run_cell < 1
    ):
        raise ValueError(f"source map 'run_cell' must be a cell position, got {run_cell!r}")
    return SourceMap(
        str(data.get("notebook", "")),
        entries,
        data.get("script") is True,
        run_cell,
        _cells(data.get("cells")),
    )


def _cells(items: object) -> tuple[tuple[int, str], ...]:
    """The ``cells`` entries of the right shape (others are left out: the executed notebook is
    a record, never a reason for the job to fail)."""
    out: list[tuple[int, str]] = []
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict):
            cell, source = item.get("cell"), item.get("source")
            if isinstance(cell, int) and not isinstance(cell, bool) and isinstance(source, str):
                out.append((cell, source))
    return tuple(out)


def load(path: str | os.PathLike[str]) -> SourceMap:
    """Read a source map file; ValueError (naming the file) when it is not one."""
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{os.fspath(path)}: not JSON ({exc.msg})") from None
    try:
        return parse(data)
    except ValueError as exc:
        raise ValueError(f"{os.fspath(path)}: {exc}") from None
