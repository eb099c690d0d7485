"""Real notebooks from public projects: each converts, or is refused with one line naming a fix."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from tfc_jupyter.errors import TfcError
from tfc_jupyter.notebook.capture import read_notebook, select_cells
from tfc_jupyter.notebook.convert import convert

CORPUS = Path(__file__).resolve().parent / "corpus"  # sources and licences: its README
NOTEBOOKS = sorted(CORPUS.rglob("*.ipynb")) if CORPUS.is_dir() else []

# Every notebook of the corpus that is refused, with what in its error says why, and why a job
# truly cannot run it. Any other refusal fails the suite.
JUSTIFIED = {
    "cloud/src__python__tensorflow_cloud__tuner__tests__examples__cloud_fit.ipynb": (
        "is not a valid requirement",
        "pip installs a wheel by a local glob path the job does not have",
    ),
    "nbconvert/tests__files__notebook_jl.ipynb": ("julia", "a Julia notebook: a job runs Python"),
    "papermill/papermill__tests__notebooks__notimplemented_translator.ipynb": (
        "is a r notebook",
        "an R notebook: a job runs Python",
    ),
    "papermill/papermill__tests__notebooks__broken.ipynb": (
        "Missing parentheses in call to 'print'",
        "Python 2 code",
    ),
    "papermill/papermill__tests__notebooks__broken1.ipynb": (
        "Missing parentheses in call to 'print'",
        "Python 2 code",
    ),
    "papermill/papermill__tests__notebooks__broken2.ipynb": (
        "Missing parentheses in call to 'print'",
        "Python 2 code",
    ),
    "papermill/papermill__tests__notebooks__complex_parameters.ipynb": (
        "invalid syntax",
        "a line '= 2' that is no Python (papermill's broken-parameter fixture)",
    ),
    "papermill/papermill__tests__notebooks__line_magic_error.ipynb": (
        "%undefined-line-magic",
        "a magic that exists nowhere (it fails in Jupyter too)",
    ),
}
# `%pip install -r requirements.txt` where the corpus keeps the notebook but not the file.
_MISSING_FILE = re.compile(r"cannot read requirements file '.*': No such file")


def test_the_corpus_is_there() -> None:
    """The corpus is in the repository (tests/corpus): a clone alone tests against it."""
    assert len(NOTEBOOKS) >= 100, f"no notebook corpus at {CORPUS}"


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
        lines = str(result).splitlines()
        assert all("Fix:" in line and len(line) < 600 for line in lines), lines
        key = str(path.relative_to(CORPUS))
        if key in JUSTIFIED:
            assert JUSTIFIED[key][0] in str(result), str(result)
        else:
            assert all(_MISSING_FILE.search(line) for line in lines), f"unjustified: {lines}"
    else:
        tree = ast.parse(result)
        calls = {
            n.value.func.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Call)
            and isinstance(n.value.func, ast.Name)
        }
        assert "get_ipython" not in calls  # only called for its value (None in a job)


@pytest.mark.skipif(not NOTEBOOKS, reason=f"no notebook corpus at {CORPUS}")
def test_most_of_the_corpus_converts() -> None:
    converted = [p for p in NOTEBOOKS if isinstance(_outcome(p), str)]
    assert len(NOTEBOOKS) >= 50
    assert len(converted) > len(NOTEBOOKS) / 2, f"{len(converted)} of {len(NOTEBOOKS)} converted"
