"""Real notebooks from public projects: each converts, or is refused with one line naming a fix."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tfc_jupyter.capture import read_notebook, select_cells
from tfc_jupyter.convert import convert
from tfc_jupyter.errors import TfcError

CORPUS = Path("/work/shared/corpus")
NOTEBOOKS = sorted(CORPUS.rglob("*.ipynb")) if CORPUS.is_dir() else []


@functools.cache
def _outcome(path: Path) -> str | TfcError:
    """The converted script, or the TfcError that refused the notebook."""
    try:
        nb = read_notebook(path)
        selection = select_cells(nb, path=path, how="corpus")
        return convert(selection.cells, base_dir=path.parent, notebook=path.name).text
    except TfcError as exc:
        return exc


@pytest.mark.skipif(not NOTEBOOKS, reason=f"no notebook corpus at {CORPUS}")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_converts_or_names_a_fix(path: Path) -> None:
    result = _outcome(path)
    if isinstance(result, TfcError):
        text = str(result)
        assert "\n" not in text and "Fix:" in text, text
        assert len(text) < 600
    else:
        ast.parse(result)
        assert "get_ipython" not in result


@pytest.mark.skipif(not NOTEBOOKS, reason=f"no notebook corpus at {CORPUS}")
def test_most_of_the_corpus_converts() -> None:
    converted = [p for p in NOTEBOOKS if isinstance(_outcome(p), str)]
    assert len(NOTEBOOKS) >= 50
    assert len(converted) > len(NOTEBOOKS) / 2, f"{len(converted)} of {len(NOTEBOOKS)} converted"
