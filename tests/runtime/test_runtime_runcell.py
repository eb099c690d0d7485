"""The run cell inside the job (tfc_runtime.runcell): the names it binds (checked against
Python's own symbol table over real notebooks' cells), its Out[], its displays and figures,
cell by cell as a kernel runs them."""

from __future__ import annotations

import ast
import json
import os
import symtable
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tfc_runtime import results, runcell
from tfc_runtime.sourcemap import SourceMap

CORPUS = Path(__file__).resolve().parents[1] / "corpus"  # sources and licences: its README


def _python_binds(code: str) -> set[str]:
    """The module-level names Python binds in ``code`` (its compiler's symbol table), less
    an ``except ... as e`` name (deleted when the handler ends) and ``del``-only names."""
    table = symtable.symtable(code, "<cell>", "exec")
    tree = ast.parse(code)
    handlers = {h.name for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler) and h.name}
    deleted = {
        t.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Delete)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    stored = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    out = set()
    for sym in table.get_symbols():
        if sym.is_imported() or sym.is_assigned() or sym.is_namespace():
            name = sym.get_name()
            if name in handlers and name not in stored:
                continue
            if name in deleted and name not in stored and not sym.is_imported():
                continue
            out.add(name)
    return out


def _corpus_cells() -> list[str]:
    cells = []
    for path in sorted(CORPUS.rglob("*.ipynb")):
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            text = "".join(source) if isinstance(source, list) else str(source)
            try:
                ast.parse(text)
                symtable.symtable(text, "<cell>", "exec")
            except (SyntaxError, ValueError):
                continue  # magics: the converted script is what the job binds from
            cells.append(text)
    return cells


CELLS = _corpus_cells()


def test_bound_names_agree_with_python_on_every_corpus_cell() -> None:
    assert len(CELLS) > 200, f"no notebook corpus at {CORPUS}"
    for code in CELLS:
        tree = ast.parse(code)
        ours = set(runcell.bound_names(tree.body))
        assert ours == _python_binds(code), code


@pytest.mark.parametrize(
    ("code", "names"),
    [
        ("a, (b, *c) = 1, (2, 3)", ["a", "b", "c"]),
        ("x: int", []),
        ("x: int = 3\nx += 1", ["x"]),
        ("for i, j in []:\n    k = i\nelse:\n    e = 1", ["i", "j", "k", "e"]),
        ("with open('f') as (f, g):\n    pass", ["f", "g"]),
        ("import a.b.c\nimport d as e\nfrom f import g as h, i", ["a", "e", "h", "i"]),
        ("def f():\n    inner = 1\nclass C:\n    attr = 2", ["f", "C"]),
        ("if (n := 3) > 2:\n    print([m := 1 for _ in 'x'])", ["n", "m"]),
        (
            "match p:\n    case [a, *rest]:\n        pass\n    case {'k': v, **kw}:\n"
            "        pass\n    case Point(x=q) as whole:\n        pass",
            ["a", "rest", "v", "kw", "q", "whole"],
        ),
        ("try:\n    t = 1\nexcept E as err:\n    u = 2\nfinally:\n    w = 3", ["t", "u", "w"]),
    ],
)
def test_bound_names_of_each_statement_kind(code: str, names: list[str]) -> None:
    assert sorted(runcell.bound_names(ast.parse(code).body)) == sorted(names)


# -- a script with its marks, run here ---------------------------------------------------------


@pytest.fixture
def job_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A job folder, and the run cell's state as a new job has it."""
    monkeypatch.setenv("TFC_JOB_DIR", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")  # install() sets it: never for later kernels
    monkeypatch.setattr(runcell, "_state", runcell._State())
    runcell.install(chief=True)
    yield tmp_path
    pyplot = __import__("sys").modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")


def _run(cells: dict[int, str], run_cell: int | None) -> dict[str, Any]:
    """Run cells as one script with its source map, as the runtime does; its globals."""
    lines: list[str] = []
    where: list[tuple[int, int] | None] = []
    for index, code in cells.items():
        for n, line in enumerate(textwrap.dedent(code).split("\n"), start=1):
            lines.append(line)
            where.append((index, n))
    text = "\n".join(lines)
    smap = SourceMap("nb.ipynb", tuple(where), run_cell=run_cell)
    tree = runcell.transform(ast.parse(text), smap, text)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(tree, "script.py", "exec"), namespace)
    return namespace


def _events(job_dir: Path) -> list[dict[str, Any]]:
    path = job_dir / "results.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def _outputs(job_dir: Path) -> list[dict[str, Any]]:
    found = []
    for event in _events(job_dir):
        if event["event"] == "output":
            found.append(json.loads((job_dir / "outputs" / f"{event['n']}.json").read_text()))
    return found


def test_the_last_expression_is_out_unless_silenced(job_dir: Path) -> None:
    _run({1: "a = 1", 2: "b = a + 1\nb * 10"}, run_cell=2)
    (shown,) = _outputs(job_dir)
    assert shown["output_type"] == "execute_result" and shown["data"]["text/plain"] == "20"
    manifest = json.loads((job_dir / "cell" / "values.json").read_text())
    assert manifest["out"] == {"value": 20} and list(manifest["names"]) == ["b"]


@pytest.mark.parametrize("last", ["b * 10;", "b * 10 ; # quiet", "None", "print(b)", "c = b"])
def test_no_out_where_jupyter_shows_none(job_dir: Path, last: str) -> None:
    _run({1: "a = 1", 2: f"b = a + 1\n{last}"}, run_cell=2)
    assert not [o for o in _outputs(job_dir) if o["output_type"] == "execute_result"]


def test_cells_above_show_nothing_and_their_figures_close_at_their_end(job_dir: Path) -> None:
    ns = _run(
        {
            1: "import matplotlib.pyplot as plt\nfrom tfc_runtime.nb import display\n"
            "display({'above': 1})\nplt.plot([1, 2])",
            2: "n_before = len(plt.get_fignums())\nplt.plot([3, 1, 2])\ndisplay({'k': 1})\n"
            "import pandas as pd\ndisplay(pd.DataFrame({'a': [1]}))",
        },
        run_cell=2,
    )
    assert ns["n_before"] == 0  # as in Jupyter: cell 1's figure was shown and closed
    shown = _outputs(job_dir)
    assert [o["output_type"] for o in shown] == ["display_data"] * 3
    assert shown[0]["data"]["text/plain"] == "{'k': 1}"
    assert "text/html" in shown[1]["data"] and "<table" in shown[1]["data"]["text/html"]
    assert shown[2]["data"]["image/png"].startswith("iVBORw0KGgo")  # the figure, at the end
    assert (job_dir / "outputs" / "3.png").read_bytes().startswith(b"\x89PNG")


def test_plt_show_sends_the_figure_at_once_and_closes_it(job_dir: Path) -> None:
    _run(
        {1: "import matplotlib.pyplot as plt", 2: "plt.plot([1])\nplt.show()\nprint('after')"},
        run_cell=2,
    )
    shown = _outputs(job_dir)
    assert len(shown) == 1 and "image/png" in shown[0]["data"]


def test_names_and_what_stayed(job_dir: Path) -> None:
    _run(
        {
            1: "import numpy as np",
            2: "arr = np.arange(3)\ngen = (i for i in arr)\ndef f():\n    return 1\n"
            "import json\nlabel = 'ü'",
        },
        run_cell=2,
    )
    manifest = json.loads((job_dir / "cell" / "values.json").read_text())
    assert manifest["names"]["f"] == {"kind": "code"}
    assert manifest["names"]["json"] == {"kind": "code"}
    assert manifest["names"]["label"]["value"] == "ü"
    assert manifest["stayed"] == {"gen": "generator"}
    assert os.stat(job_dir / "cell" / "values.json").st_mode & 0o777 == 0o600
    assert os.stat(job_dir / "cell").st_mode & 0o777 == 0o700
    (cell,) = [e for e in _events(job_dir) if e["event"] == "cell"]
    assert cell["names"] == ["arr", "f", "json", "label"]


def test_a_cell_that_raises_sends_no_names(job_dir: Path) -> None:
    with pytest.raises(ZeroDivisionError):
        _run({1: "a = 1", 2: "b = 2\n1 / 0"}, run_cell=2)
    assert not (job_dir / "cell").exists()


def test_no_run_cell_marks_only_where_cells_start(job_dir: Path) -> None:
    text = "a = 1\na"
    script = runcell.transform(ast.parse(text), SourceMap("x.py", ((1, 1), (1, 2)), True), text)
    assert ast.dump(script) == ast.dump(ast.parse(text))  # a .py job: no marks
    notebook = runcell.transform(ast.parse(text), SourceMap("x.ipynb", ((1, 1), (2, 1))), text)
    calls = [ast.unparse(n) for n in notebook.body if "__tfc_cell__" in ast.unparse(n)]
    assert calls == ["__tfc_cell__.enter(1)", "__tfc_cell__.enter(2)", "__tfc_cell__.end()"]
    # no Out[], no finish: the last cell's figures shown at the end


def test_no_run_cell_shows_every_cells_figures(job_dir: Path) -> None:
    ns = _run(
        {
            1: "import matplotlib.pyplot as plt\nplt.plot([1])\nplt.show()",
            2: "plt.figure()\nplt.plot([2])",
            3: "n_before = len(plt.get_fignums())\nplt.plot([3])\nplt.close()",
            4: "plt.plot([4])",
        },
        run_cell=None,
    )
    assert ns["n_before"] == 0  # cell 2's figure was shown and closed at its end
    shown = _outputs(job_dir)
    assert len(shown) == 3 and all("image/png" in o["data"] for o in shown)
    pngs = sorted(p.name for p in (job_dir / "outputs").glob("*.png"))
    assert pngs == ["1.png", "2.png", "3.png"]


def test_a_py_job_keeps_matplotlibs_own_show(job_dir: Path) -> None:
    text = "import matplotlib.pyplot as plt\nplt.plot([1])\nplt.show()\nn = len(plt.get_fignums())"
    smap = SourceMap("x.py", ((1, 1), (1, 2), (1, 3), (1, 4)), True)
    namespace: dict[str, Any] = {}
    exec(compile(runcell.transform(ast.parse(text), smap, text), "x.py", "exec"), namespace)
    assert namespace["n"] == 1 and not _outputs(job_dir)  # Agg's show: nothing, still open


def test_a_future_import_stays_first(job_dir: Path) -> None:
    ns = _run({1: "from __future__ import annotations\ndef f(x: Undefined): pass", 2: "y = 1"},
              run_cell=2)  # fmt: skip
    assert ns["f"].__annotations__ == {"x": "Undefined"}


def test_other_tasks_show_nothing(job_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runcell._state.chief = False
    _run({1: "from tfc_runtime.nb import display", 2: "display('x')\n1"}, run_cell=2)
    assert not _outputs(job_dir) and "x" not in capsys.readouterr().out
    assert results.emit is not None  # the chief alone reports
