"""A run cell continues an earlier one: what the earlier run cell brought back into the kernel
is sent into the job (issue 49).

A job leaves the ``%%tfc_run`` cells above its own out (each ran as a job; running it again
would train again), so a later run cell (or a plain cell between them) that reads a name only
an earlier run cell bound was refused before launch, though the kernel holds the trained
model. :func:`carry` replaces each such earlier run cell, in the job, by a cell that receives
those names from the kernel (``tfc_runtime.received``), after that cell's own ``import``,
``def`` and ``class`` lines; at launch :func:`send` writes the kernel's values for the job with
the same codecs that bring names back (a Keras model with its optimizer's state).
"""

from __future__ import annotations

import ast
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import ConversionError, TfcError
from .capture import Selection, is_run_cell, split_run_cell
from .convert import Cell, convert

_KERNELS_OWN = frozenset({"In", "Out", "get_ipython", "exit", "quit", "display"})
"""IPython's names, never sent."""
RECEIVE = '__import__("tfc_runtime.received", fromlist=["load"]).load'
"""The call a receiving cell binds its names with (no name of ours in the notebook's
namespace)."""


def _parsed(cells: Iterable[Cell]) -> list[ast.stmt]:
    """The statements of cells converted alone (magics made Python); [] when they do not
    convert or parse."""
    try:
        return ast.parse(convert(list(cells)).text).body
    except (TfcError, SyntaxError, ValueError):
        return []


def carry(selection: Selection, namespace: dict[str, Any]) -> None:
    """Replace, in ``selection``, each earlier run cell whose names a later cell of the job
    reads, and the kernel holds, by a cell that receives them (see the module's docstring);
    ``selection.carried`` maps each name to that cell."""
    from tfc_runtime.runcell import CODE, bound_names, read_names

    if selection.script:
        return
    for earlier in [c for c in selection.left_out if is_run_cell(c.source)]:
        _, body = split_run_cell(earlier.source)
        statements = _parsed([Cell(earlier.index, body, (), earlier.label)])
        code = [n for n in statements if isinstance(n, CODE)]
        code_names = set(bound_names(code))
        later = [c for c in selection.cells if c.index > earlier.index]
        reads = set(read_names(_parsed(later)))
        names = [
            n
            for n in bound_names(statements)
            if n in reads
            and n in namespace
            and n not in code_names
            and not n.startswith("_")
            and n not in _KERNELS_OWN
        ]
        if not names:
            continue
        lines = [ast.unparse(n) for n in code]
        targets = ", ".join(names) + ("," if len(names) == 1 else "")
        call = ", ".join(repr(n) for n in names)
        lines.append(f"{targets} = {RECEIVE}({call})  # from the kernel: what this cell made")
        cell = Cell(earlier.index, "\n".join(lines), (), earlier.label)
        selection.left_out.remove(earlier)
        selection.cells = sorted([*selection.cells, cell], key=lambda c: c.index)
        selection.carried.update(dict.fromkeys(names, earlier.index))
        selection.notes.append(
            f"{earlier.place} (%%tfc_run): {', '.join(names)} come from the kernel, as that "
            "cell brought them back"
        )


def send(selection: Selection, namespace: dict[str, Any], home: Path) -> Path | None:
    """Write the carried names' values for the job (a folder under ``home`` the launch moves
    into the job folder); None when nothing is carried.

    Raises:
        ConversionError: a name that cannot be sent (what it is), with the fix.
    """
    if not selection.carried:
        return None
    from tfc_runtime import received

    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="received-", dir=home))
    stayed = received.write(str(folder), namespace, list(selection.carried))
    if stayed:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        name, why = next(iter(stayed.items()))
        cell = selection.carried[name]
        raise ConversionError(
            f"{name} (from the %%tfc_run cell {cell}) cannot be sent to the job: {why}",
            "bind it in a cell above that the job runs, or move the code that reads it into "
            f"the %%tfc_run cell {cell}",
            cell=cell,
        )
    return folder
