"""What the plan knows will fail is refused before anything starts (issue 34): a name nothing
in the job binds (a typo, a name only a left-out %%tfc_run or tagged cell binds, the kernel's
``_tfc_job``), and a ``from __future__`` import in a later cell is moved up, not refused."""

from __future__ import annotations

import builtins
import functools
import json
import keyword
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobutil import plan_for, run_plain, write_notebook

from tfc_jupyter.config import Settings
from tfc_jupyter.errors import ConversionError, ConversionErrors, TfcError
from tfc_jupyter.job import options
from tfc_jupyter.notebook.capture import Selection, read_notebook, select_cells
from tfc_jupyter.notebook.convert import Cell, convert
from tfc_jupyter.planner import prelaunch
from tfc_jupyter.planner.plan import Plan, make_plan
from tfc_jupyter.server.service import JobService

DATA = "import numpy as np\nx = np.ones((8, 2))\ny = x.sum(1)\nmodel = object()"


def _plan(*sources: str, settings: Settings) -> Plan:
    cells = [Cell(i, s) for i, s in enumerate(sources, 1)]
    runs = [c.index for c in cells if c.source.startswith("%%tfc_run")]
    selection = Selection(cells=cells, notebook=None, how="test", run_cell=(runs or [None])[-1])
    return make_plan(selection, options.parse_line(""), settings)


def _nb_plan(path: Path, settings: Settings, cell: int | None = None) -> Plan:
    selection = select_cells(read_notebook(path), path=path, how="test", cell_number=cell)
    return make_plan(selection, options.parse_line(selection.magic_line), settings)


# ---------------------------------------------------------------- undefined names
def test_a_typo_in_the_run_cell_is_refused_with_cell_line_and_the_fix(settings: Settings) -> None:
    with pytest.raises(ConversionError) as info:
        _plan(DATA, "print(x.shape)", "# train", "%%tfc_run\nmodle.fit(x, y)", settings=settings)
    assert str(info.value) == (
        "cell 4, line 2: name 'modle' is not defined. Fix: define it in a cell above, or "
        "correct the spelling (did you mean model?)"
    )
    assert (info.value.cell, info.value.line) == (4, 2)


def test_every_missing_name_is_a_line_of_one_refusal(settings: Settings) -> None:
    with pytest.raises(ConversionErrors) as info:
        _plan(
            "import os\nprint(os.sep, undefined_a)",
            "%%tfc_run\nprnt(undefined_b)",
            settings=settings,
        )
    lines = str(info.value).splitlines()
    assert [line.split(": ")[0] for line in lines] == [
        "cell 1, line 2",
        "cell 2, line 2",
        "cell 2, line 2",
    ]
    assert "did you mean print?" in lines[1]
    assert all("Fix: " in line for line in lines)


@pytest.mark.parametrize(
    ("code", "fix"),
    [
        ("print(os.sep)", "Fix: import os in a cell above"),
        ("print(np.ones(2))", "Fix: import numpy as np in a cell above"),
        ("print(a)\na = 1", "Fix: move the code that binds it (cell 1, line 2) above this line"),
    ],
)
def test_the_fix_says_what_is_missing(code: str, fix: str, settings: Settings) -> None:
    with pytest.raises(ConversionError, match="is not defined") as info:
        _plan(code, settings=settings)
    assert str(info.value).endswith(fix)


@pytest.mark.parametrize(
    "code",
    [
        "from os.path import *\nprint(join('a', 'b'), sep)",  # a star import may bind it
        "exec('late = 1')\nprint(late)",
        "globals()['late'] = 1\nprint(late)",
        "vars()['late'] = 1\nprint(late)",
        "import sys\nsetattr(sys.modules[__name__], 'late', 1)\nprint(late)",
        "%run helper.py\nprint(from_helper)",
        "__builtins__.__dict__['late'] = 1\nprint(late)",
    ],
)
def test_code_that_binds_names_unseen_is_not_refused(code: str, settings: Settings) -> None:
    plan = _plan(code, settings=settings)
    star = code.startswith("from")
    assert star or any("a checker cannot see" in w for w in plan.warnings), plan.warnings


@pytest.mark.parametrize(
    ("code", "where"),
    [
        ("def later():\n    return never_bound\n", "in a function"),
        ("f = lambda: never_bound", "in a function"),
        ("class A:\n    def m(self):\n        return never_bound\n", "in a function"),
        ("import os\nif os.environ.get('NO'):\n    never_bound()", "in code that may not run"),
        ("try:\n    never_bound\nexcept Exception:\n    pass", "in code that may not run"),
        ("x = 0 or never_bound", "in code that may not run"),
        ("x: never_bound = 1", "in an annotation"),
    ],
)
def test_code_that_may_never_run_is_a_warning(code: str, where: str, settings: Settings) -> None:
    plan = _plan(code, "print('ok')", settings=settings)
    (warning,) = [w for w in plan.warnings if "never_bound" in w]
    assert warning.startswith("cell 1, line ") and f"is not defined, {where}" in warning


@pytest.mark.parametrize(
    "code",
    [
        "for i in range(3):\n    prnt(i)",
        "with open(__file__) as f:\n    prnt(f)",
        "if __name__ == '__main__':\n    prnt(1)",
        "class A:\n    size = prnt",
        "@prnt\ndef f():\n    pass",
        "def f(x=prnt):\n    pass",
        "print([prnt for _ in range(2)])",
    ],
)
def test_code_the_job_surely_runs_is_refused(code: str, settings: Settings) -> None:
    with pytest.raises(ConversionError, match=r"^cell 1, line \d+: name 'prnt' is not defined"):
        _plan(code, settings=settings)


def test_names_the_job_gives_are_not_refused(settings: Settings) -> None:
    """The script's header binds display and get_ipython; %%capture, %%bash --out and x = !cmd
    bind their names; __file__ and __name__ are the script's."""
    plan = _plan(
        "display(get_ipython(), __file__, __name__)",
        "%%capture cap\nprint(1)",
        "%%bash --out out\necho hi",
        "files = !ls\nprint(cap.stdout, out, files)",
        settings=settings,
    )
    assert not [w for w in plan.warnings if "not defined" in w]


def test_ipython_names_are_a_warning(settings: Settings) -> None:
    plan = _plan("1 + 1", "print(Out[1], _)", settings=settings)
    warned = [w for w in plan.warnings if "one of IPython's names" in w]
    assert [w.split(":")[0] for w in warned] == ["cell 2, line 1", "cell 2, line 1"]


def test_a_script_entry_point_is_checked_too(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "train.py"
    path.write_text("import json\n\nprint(jsn.dumps({}))\n")
    selection = Selection(
        cells=[Cell(1, path.read_text(), label="train.py")],
        notebook=path,
        how="test",
        run_cell=1,
        script=True,
    )
    with pytest.raises(ConversionError) as info:
        make_plan(selection, options.parse_line(""), settings)
    assert str(info.value) == (
        "train.py, line 3: name 'jsn' is not defined. Fix: define it above this line, or "
        "correct the spelling (did you mean json?)"
    )


_IDENTIFIERS = st.from_regex(r"[a-z][a-z0-9_]{2,10}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and n not in dir(builtins) and not n.startswith("_tfc")
)


@given(name=_IDENTIFIERS, cells=st.integers(1, 4))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_name_bound_above_passes_and_a_changed_one_is_named(name: str, cells: int) -> None:
    """Any identifier: bound in cell 1 and read in the last cell, nothing is said; read with a
    letter added, the refusal names the last cell's line and suggests the bound name."""
    above = [f"{name} = 1", *["pass"] * (cells - 1)]
    good = [Cell(i, s) for i, s in enumerate([*above, f"print({name})"], 1)]
    assert prelaunch.check(convert(good), Selection(cells=good, notebook=None, how="t")) == []
    typo = f"{name}q"
    bad = [Cell(i, s) for i, s in enumerate([*above, f"x = 2\nprint({typo})"], 1)]
    with pytest.raises(ConversionError) as info:
        prelaunch.check(convert(bad), Selection(cells=bad, notebook=None, how="t"))
    assert str(info.value).startswith(f"cell {cells + 1}, line 2: name {typo!r} is not defined")
    assert f"did you mean {name}?" in str(info.value)


# ---------------------------------------------------------------- what the notebook leaves out
def test_a_name_only_a_left_out_run_cell_binds_is_refused(
    tmp_path: Path, settings: Settings
) -> None:
    """Two %%tfc_run cells; the job is the second: the cell between them reads what only the
    first binds (in the kernel it came back when the first job ended)."""
    path = write_notebook(
        tmp_path / "two.ipynb",
        DATA,
        "import matplotlib.pyplot as plt",
        "%%tfc_run\nhistory = model.fit(x, y)",
        "plt.plot(history.history['loss'])",
        "%%tfc_run\nmodel.fit(x, y)",
    )
    with pytest.raises(ConversionError) as info:
        _nb_plan(path, settings, cell=5)
    assert str(info.value) == (
        "cell 4, line 1: history is bound only by the %%tfc_run cell 3, which this job leaves "
        "out. Fix: tag cell 4 tfc-local-only, or move the code into one %%tfc_run cell"
    )
    # The plot cell tagged local-only: the second job plans.
    tagged = write_notebook(
        tmp_path / "tagged.ipynb",
        DATA,
        "import matplotlib.pyplot as plt",
        "%%tfc_run\nhistory = model.fit(x, y)",
        "plt.plot(history.history['loss'])",
        "%%tfc_run\nmodel.fit(x, y)",
        tags={3: ["tfc-local-only"]},
    )
    assert _nb_plan(tagged, settings, cell=5).script.cells == [1, 2, 5]


def test_the_second_run_cell_itself_reading_the_first_ones_name(
    tmp_path: Path, settings: Settings
) -> None:
    path = write_notebook(
        tmp_path / "two.ipynb",
        DATA,
        "%%tfc_run\nhistory = model.fit(x, y)",
        "%%tfc_run\nprint(history.history)",
    )
    with pytest.raises(ConversionError) as info:
        _nb_plan(path, settings, cell=3)
    assert str(info.value) == (
        "cell 3, line 2: history is bound only by the %%tfc_run cell 2, which this job leaves "
        "out. Fix: bind it in a cell above, or move the code into one %%tfc_run cell"
    )


def test_a_name_only_a_tagged_cell_binds_is_refused(tmp_path: Path, settings: Settings) -> None:
    path = write_notebook(
        tmp_path / "tags.ipynb",
        DATA,
        "def show(values):\n    print(values)",
        "%%tfc_run\nshow(x)",
        tags={1: ["tfc-skip"]},
    )
    with pytest.raises(ConversionError) as info:
        _nb_plan(path, settings)
    assert str(info.value) == (
        "cell 3, line 2: show is bound only by cell 2, which is tagged tfc-skip. Fix: remove the "
        "tag from cell 2"
    )


def test_reading_the_kernels_job_handle_is_refused(settings: Settings) -> None:
    with pytest.raises(ConversionError) as info:
        _plan(DATA, "print(_tfc_job.metrics)", "%%tfc_run\nmodel.fit(x, y)", settings=settings)
    assert str(info.value) == (
        "cell 2, line 1: _tfc_job is the handle of an earlier %%tfc_run job, which only the "
        "kernel has. Fix: tag cell 2 tfc-local-only"
    )
    own = _plan("_tfc_job = 'mine'\nprint(_tfc_job)", settings=settings)  # its own variable
    assert not [w for w in own.warnings if "_tfc_job" in w]


# ---------------------------------------------------------------- every way in
def test_the_cli_refuses_without_importing_tensorflow(tmp_path: Path) -> None:
    """`tfc-jupyter plan` and `run` stop on the typo with one line, before anything starts:
    TensorFlow is never imported and no job is recorded."""
    path = write_notebook(tmp_path / "typo.ipynb", DATA, "%%tfc_run\nmodle.fit(x, y)")
    code = f"""
import json, sys
from tfc_jupyter import cli
codes = [cli.main(["plan", {str(path)!r}]), cli.main(["run", {str(path)!r}])]
print(json.dumps([codes, "tensorflow" in sys.modules]))
"""
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**_clean_env(), "TFC_JUPYTER_HOME": str(home)},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [[2, 2], False]
    errors = proc.stderr.strip().splitlines()
    assert (
        errors
        == [
            "tfc-jupyter: error: cell 2, line 2: name 'modle' is not defined. Fix: define it in a "
            "cell above, or correct the spelling (did you mean model?)"
        ]
        * 2
    )
    assert not list(home.rglob("*.json"))  # no job record


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("TFC_", "JPY_"))}


def test_the_jobs_api_refuses_it(tmp_path: Path, tfc_env: Path) -> None:
    write_notebook(tmp_path / "typo.ipynb", DATA, "%%tfc_run\nmodle.fit(x, y)")
    with pytest.raises(ConversionError, match=r"cell 2, line 2: name 'modle' is not defined"):
        JobService(tmp_path).create({"path": "typo.ipynb", "options": {"dry_run": True}})


@pytest.fixture(scope="module")
def ip() -> Iterator[Any]:
    from IPython.testing import globalipapp

    globalipapp.start_ipython()  # None when another module started it: the same shell
    shell = globalipapp.get_ipython()
    assert shell is not None
    shell.run_line_magic("load_ext", "tfc_jupyter")
    yield shell


def test_the_magic_refuses_it(
    ip: Any, tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.error import UsageError

    path = write_notebook(tmp_path / "typo.ipynb", DATA, "%%tfc_run --dry-run\nmodle.fit(x, y)")
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    with pytest.raises(UsageError) as info:
        ip.run_cell_magic("tfc_run", "--dry-run", "modle.fit(x, y)")
    assert str(info.value).startswith("cell 2, line 2: name 'modle' is not defined")
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- from __future__ in a later cell
def test_a_future_import_in_a_later_cell_moves_to_the_top(tmp_path: Path) -> None:
    script = convert(
        [
            Cell(1, "def f(x: int): pass\nprint('cell 1', f.__annotations__)"),
            Cell(
                3,
                '"""Typed."""\nfrom __future__ import annotations  # for Python 3.9\n'
                "def g(x: Undefined): pass\nprint('cell 3', g.__annotations__)",
            ),
            Cell(4, "from __future__ import (\n    generator_stop,\n)\nprint('cell 4')"),
        ]
    )
    lines = script.text.splitlines()
    assert lines[1:5] == [
        "from __future__ import annotations",
        "from __future__ import (",
        "    generator_stop,",
        ")",
    ]
    # The moved lines keep their places; their old lines are comments, so the rest keep theirs.
    assert [script.locate(n) for n in (2, 3, 4, 5)] == [(3, 2), (4, 1), (4, 2), (4, 3)]
    for n, text in enumerate(lines, 1):
        if text.startswith("print('cell 3'"):
            assert script.locate(n) == (3, 4)
        if text.startswith("# (moved to the top of the script) from __future__ import annot"):
            assert script.locate(n) == (3, 2) and text.endswith("# for Python 3.9")
    assert [n.split(": ")[0] for n in script.notes] == ["cell 3, line 2", "cell 4, line 1"]
    assert "applies to the cells above it too" in script.notes[0]
    done = run_plain(script.text, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "cell 1 {'x': 'int'}",  # the accepted approximation: the whole script is one module
        "cell 3 {'x': 'Undefined'}",
        "cell 4",
    ]


def test_a_future_import_in_the_first_cell_comes_before_the_header(tmp_path: Path) -> None:
    """A first cell's future import went after the header's imports: a SyntaxError."""
    script = convert([Cell(1, "from __future__ import annotations\n!echo hi\ndisplay('shown')")])
    assert script.text.splitlines()[1] == "from __future__ import annotations"
    assert script.notes == []
    done = run_plain(script.text, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["hi", "shown"]


def test_a_future_import_sharing_its_line_keeps_the_rest(tmp_path: Path) -> None:
    script = convert(
        [Cell(1, "x = 1"), Cell(2, "from __future__ import annotations; import os\nprint(os.sep)")]
    )
    assert "import os" in script.text.splitlines() and "pass" not in script.text
    assert run_plain(script.text, tmp_path).stdout.strip() == "/"


def test_a_future_import_after_code_is_still_refused() -> None:
    """Jupyter refuses it too: only the cell's first statements may be future imports."""
    with pytest.raises(ConversionError, match=r"cell 2, line 2: from __future__ imports must"):
        convert([Cell(1, "x = 1"), Cell(2, "y = 2\nfrom __future__ import annotations")])


@given(
    before=st.integers(0, 3),
    after=st.integers(0, 3),
    features=st.lists(
        st.sampled_from(["annotations", "division", "generator_stop", "print_function"]),
        min_size=1,
        max_size=3,
    ),
)
@settings(max_examples=30, deadline=None)
def test_future_imports_anywhere_at_a_cells_top_compile(
    before: int, after: int, features: list[str]
) -> None:
    """A cell opening with future imports, anywhere in the job: the script compiles, each moved
    line sits at the top with its cell and line, and every other line keeps its place."""
    future = "\n".join(f"from __future__ import {f}" for f in features)
    sources = [f"a{i} = {i}" for i in range(before)]
    sources += [f"{future}\nb = 1", *[f"c{i} = b + {i}" for i in range(after)]]
    cells = [Cell(i, s) for i, s in enumerate(sources, 1)]
    script = convert(cells)
    compile(script.text, "script.py", "exec", dont_inherit=True)
    lines = script.text.splitlines()
    k = before + 1
    assert [script.locate(n) for n in range(2, 2 + len(features))] == [
        (k, line) for line in range(1, len(features) + 1)
    ]
    for n, text in enumerate(lines, 1):
        if text == "b = 1":
            assert script.locate(n) == (k, len(features) + 1)
        if text.startswith(("a", "c")) and "=" in text:
            cell = next(c for c in cells if c.source == text)
            assert script.locate(n) == (cell.index, 1)


# ---------------------------------------------------------------- the corpus
CORPUS = Path(__file__).resolve().parent / "corpus"  # sources and licences: its README
NOTEBOOKS = sorted(CORPUS.rglob("*.ipynb")) if CORPUS.is_dir() else []
# The corpus notebooks refused for a name, each read by hand: the name is really read at the top
# level and bound nowhere, so the notebook fails at that line in a fresh kernel too.
REFUSED = {
    "cloud/g3doc__tutorials__overview.ipynb": (
        "cell 12, line 17: name 'os' is not defined",
        "os.path.join(...) at the top level of cell 12; no cell imports os",
    ),
    "fairing/examples__mnist__mnist_e2e_on_prem.ipynb": (
        "cell 11, line 41: name 'yaml' is not defined",
        "yaml.safe_load(pv_yaml) at the top level of cell 11; no cell imports yaml",
    ),
    "nbconvert/tests__files__notebook2.ipynb": (
        "cell 5, line 1: name 'ip' is not defined",
        "ip.display_formatter... : an IPython 2 profile's name; no cell binds ip",
    ),
}


@functools.cache
def _converted(path: Path) -> tuple[Any, Selection] | None:
    try:
        selection = select_cells(read_notebook(path), path=path, how="corpus")
        return convert(selection.cells, base_dir=path.parent, notebook=path.name), selection
    except TfcError:
        return None  # refused before this check: tests/test_corpus.py says why


@pytest.mark.skipif(not NOTEBOOKS, reason=f"no notebook corpus at {CORPUS}")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_corpus_is_refused_only_for_names_really_missing(path: Path) -> None:
    converted = _converted(path)
    if converted is None:
        return
    key = str(path.relative_to(CORPUS))
    try:
        prelaunch.check(*converted)
    except ConversionError as exc:
        assert key in REFUSED, f"refused: {exc}"
        assert str(exc).startswith(REFUSED[key][0]) and "\n" not in str(exc)
    else:
        assert key not in REFUSED


POLLUTED = """
import json, sys
from IPython.testing.globalipapp import start_ipython
start_ipython()  # puts ip and _ip in this process's builtins, as a test shell does
from pathlib import Path
from tfc_jupyter.notebook.capture import read_notebook, select_cells
from tfc_jupyter.notebook.convert import convert
from tfc_jupyter.planner import prelaunch
path = Path(sys.argv[1])
selection = select_cells(read_notebook(path), path=path, how="test")
try:
    said = prelaunch.check(convert(selection.cells, base_dir=path.parent), selection)
except Exception as exc:
    said = str(exc)
sys.stdout.write(json.dumps(said) + "\\n")
"""


def test_names_a_library_put_in_this_process_s_builtins_are_not_the_job_s(tmp_path: Path) -> None:
    """CI, under two test processes: IPython's test shell (``start_ipython``, used by another
    test in the same process) puts ``ip`` in the builtins of the process, and pyflakes, when
    imported after it, took ``ip`` for a builtin: a notebook reading ``ip`` that nothing binds
    was planned. Planning reads names as the job's own interpreter will."""
    nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run\nip.display_formatter\nprint(len([]))")
    done = subprocess.run(
        [sys.executable, "-c", POLLUTED, str(nb)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(said, str) and said.startswith("cell 1, line 2: name 'ip' is not defined")


def test_a_typo_next_to_a_star_import_is_warned(tmp_path: Path) -> None:
    """``from math import *`` binds what pyflakes cannot see: a name math lacks is a warning
    with the close name (the job would stop there with NameError), never a refusal."""
    path = write_notebook(tmp_path / "star.ipynb", "from math import *\nprint(sqrtt(4))")
    warnings = plan_for(path).warnings
    assert any(
        "cell 1, line 2: name 'sqrtt' is not defined, nor in math (imported with *)" in w
        and "did you mean sqrt?" in w
        for w in warnings
    ), warnings
    fine = write_notebook(tmp_path / "fine.ipynb", "from math import *\nprint(sqrt(4))")
    assert not [w for w in plan_for(fine).warnings if "import *" in w]
