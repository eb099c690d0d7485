"""Which line each swept name replaces (``tfc_jupyter.sweep.targets``), on notebooks written
by others (papermill's own, from the corpus) and on the cases the rule has to refuse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tfc_runtime import params as runtime_params

from tfc_jupyter.errors import SpecError
from tfc_jupyter.notebook.capture import _code_cells, read_notebook
from tfc_jupyter.notebook.convert import Cell, convert
from tfc_jupyter.sweep.spec import parse_param
from tfc_jupyter.sweep.targets import find_targets

PAPERMILL = Path(__file__).resolve().parent / "corpus" / "papermill"


def _targets(cells: list[Cell], *sweeps: str) -> list[str]:
    script = convert(cells)
    return [r.describe() for r in find_targets(script, cells, [parse_param(s) for s in sweeps])]


CORPUS = PAPERMILL.parent


def test_real_parameters_cells_are_found(tmp_path: Path) -> None:
    """Papermill's own example and a Kubeflow Fairing notebook: the tagged cell's names, with
    their comments; a name the notebook sets only inside an ``if`` is refused, naming where."""
    nb = read_notebook(PAPERMILL / "binder__cli-simple__simple_input.ipynb")
    assert _targets(_code_cells(nb), "msg=['hi']") == ["msg: cell 2, line 1 (msg = None)"]
    fairing = read_notebook(
        CORPUS / "fairing" / "examples__prediction__xgboost-high-level-apis.ipynb"
    )
    cells = _code_cells(fairing)
    (tmp_path / "requirements.txt").write_text("xgboost\n")  # its %pip -r line reads it
    script = convert(cells, base_dir=tmp_path)
    found = find_targets(script, cells, [parse_param("FAIRING_BACKEND=['KubeflowGKEBackend']")])
    assert [r.describe() for r in found] == [
        "FAIRING_BACKEND: cell 15, line 6 (FAIRING_BACKEND = 'KubeflowGKEBackend')"
    ]
    with pytest.raises(
        SpecError, match=r"DOCKER_REGISTRY: it is only set inside a block \(cell 16"
    ):
        find_targets(script, cells, [parse_param("DOCKER_REGISTRY=['gcr.io/x']")])


def test_a_trial_of_a_real_notebook_runs_its_values_in_place() -> None:
    """The runtime's replacement, on the script of papermill's report-mode notebook: the names
    read the trial's values, and every other statement is where it was."""
    nb = read_notebook(PAPERMILL / "papermill__tests__notebooks__report_mode_test.ipynb")
    cells = _code_cells(nb)
    script = convert(cells)
    found = find_targets(script, cells, [parse_param("a=uniform(0,5)"), parse_param("b=[1, 7]")])
    tree = ast.parse(script.text)
    before = [(type(n).__name__, n.lineno) for n in tree.body]
    runtime_params.override(tree, [r.target for r in found], {"a": 4.5, "b": 7})
    assert [(type(n).__name__, n.lineno) for n in tree.body] == before
    names: dict[str, object] = {}
    exec(compile(tree, "script.py", "exec"), names)  # the notebook's cells only print
    assert (names["a"], names["b"]) == (4.5, 7)


def test_without_a_parameters_cell_the_one_plain_assignment_is_taken() -> None:
    cells = [
        Cell(1, "import math\nLR = 0.01\nbase = 3\n"),
        Cell(3, "%%tfc_run\nunits = base * 32\nprint(LR, units)\n"),
    ]
    assert _targets(cells, "LR=[0.1]") == ["LR: cell 1, line 2 (LR = 0.01)"]
    with pytest.raises(SpecError, match=r"units: it is only computed \(cell 3, line 2"):
        _targets(cells, "units=[32]")
    with pytest.raises(SpecError, match="never assign epochs at top level"):
        _targets(cells, "epochs=[1]")


def test_a_name_set_twice_needs_the_tag_and_the_tag_decides() -> None:
    twice = [Cell(1, "lr = 0.1\n"), Cell(2, "lr = 0.2\nprint(lr)\n")]
    with pytest.raises(SpecError, match=r"set 2 times \(cell 1, line 1; cell 2, line 1\)"):
        _targets(twice, "lr=[1.0]")
    tagged = [Cell(1, "lr = 0.1\n", ("parameters",)), Cell(2, "lr = 0.2\nprint(lr)\n")]
    assert _targets(tagged, "lr=[1.0]") == ["lr: cell 1, line 1 (lr = 0.1)"]


@given(
    st.lists(st.sampled_from(["lr = 0.1", "lr = f(1)", "x = 1", "pass", "lr += 1"]), max_size=6),
    st.integers(0, 6),
)
def test_the_rule_picks_the_tagged_cell_s_last_else_the_one_plain_value(
    lines: list[str], tagged_at: int
) -> None:
    """Generated cells: whatever is found is the rule's pick; whatever is refused had no pick."""
    cells = [
        Cell(i + 1, f"{line}\n", ("parameters",) if i == tagged_at else ())
        for i, line in enumerate(lines)
    ]
    if not cells:
        return
    plain = [c.index for c in cells if c.source == "lr = 0.1\n"]
    assigned = [c.index for c in cells if c.source.startswith("lr = ")]
    in_tagged = [c for c in assigned if c == tagged_at + 1]
    try:
        found = find_targets(convert(cells), cells, [parse_param("lr=[1.0]")])
    except SpecError:
        assert not in_tagged and len(plain) != 1
        return
    place = found[0].place
    expected = in_tagged[-1] if in_tagged else plain[0]
    assert place == f"cell {expected}, line 1"
