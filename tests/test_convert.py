"""Cells -> a plain Python script: translations, refusals, source map, and real runs."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RUNTIME_DIR
from hypothesis import given, settings
from hypothesis import strategies as st
from jobutil import run_plain

from tfc_jupyter.errors import ConversionError
from tfc_jupyter.notebook.convert import RULES, Cell, Script, convert


def _script(*sources: str, **kwargs: object) -> Script:
    script = convert([Cell(i, s) for i, s in enumerate(sources, 1)], **kwargs)  # type: ignore[arg-type]
    ast.parse(script.text)
    assert "get_ipython" not in script.text
    lines = script.text.rstrip("\n").split("\n")
    assert len(script.source_map) >= len(lines)
    return script


def _body(script: Script) -> list[str]:
    """Script lines that come from the notebook (generated header and separators left out)."""
    return [
        line for line, loc in zip(script.text.split("\n"), script.source_map, strict=False) if loc
    ]


# ---------------------------------------------------------------- translations
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("!ls -l", "_tfc.system('ls -l')"),
        ("!echo $HOME {x}", "_tfc.system('echo $HOME {x}')"),
        ("files = !ls", "files = _tfc.getoutput('ls')"),
        ("out = %sx date", "out = _tfc.getoutput('date')"),
        ("%system uname", "_tfc.system('uname')"),
        ("%env TF_CPP_MIN_LOG_LEVEL=2", "_tfc.env('TF_CPP_MIN_LOG_LEVEL=2')"),
        ("%env", "_tfc.env('')"),
        ("%cd /tmp", "_tfc.cd('/tmp')"),
        ("%mkdir -p out", "_tfc.system('mkdir -p out')"),
        ("%run helper.py --fast", "_tfc.run_path('helper.py --fast')"),
        ("here = %pwd", "here = __import__('os').getcwd()"),
        ("y = %time 1 + 2", "y = (1 + 2)"),
    ],
)
def test_line_translations(source: str, expected: str) -> None:
    script = _script(f"x = 1\n{source}")
    assert _body(script) == ["x = 1", expected]
    assert "from tfc_runtime import nb as _tfc" in script.text.split("# %%")[0] or (
        "_tfc." not in expected
    )


def test_time_line_magic_times_the_statement() -> None:
    (line,) = _body(_script("%time model = 3 * 2"))
    tree = ast.parse(line)
    calls = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert calls[0] == "_tfc.time_start()" and calls[-1] == "_tfc.time_end()"
    assert "model = 3 * 2" in line


@pytest.mark.parametrize(
    ("cell", "calls"),
    [
        (
            "%%writefile data/train.csv\na,b\n1,2",
            ["_tfc.writefile('data/train.csv', 'a,b\\n1,2\\n')"],
        ),
        ("%%writefile -a log.txt\nmore", ["_tfc.writefile('-a log.txt', 'more\\n')"]),
        ("%%bash\necho hi\nls", ["_tfc.run_script('bash', 'echo hi\\nls', '')"]),
        ("%%sh -e\necho hi", ["_tfc.run_script('sh', 'echo hi', '-e')"]),
        ("%%script bash\necho hi", ["_tfc.run_script('bash', 'echo hi', '')"]),
        ("%%time\nx = 1\n!ls", ["_tfc.time_start()", "_tfc.system('ls')", "_tfc.time_end("]),
        ("%%timeit -n 10\nx = 1", ["_tfc.time_start()", "_tfc.time_end("]),
    ],
)
def test_cell_magic_translations(cell: str, calls: list[str]) -> None:
    text = "\n".join(_body(_script(cell)))
    for call in calls:
        assert call in text
    assert not re.search(r"^\s*%", text, re.M)


def test_capture_runs_its_body_into_an_object() -> None:
    script = _script("%%capture out\nvalue = 1")
    body = _body(script)
    assert body[0] == "out = _tfc.capture_start()" and "value = 1" in body
    assert body[-1] == "_tfc.capture_end(out)"


def test_ipython_transformers_not_regexes() -> None:
    """Only a tokenizer tells a shell line from a string that looks like one."""
    source = 'text = """\n!rm -rf /\n%env SECRET=1\n"""\nprint("!ls", "%cd x")\nx = 5 % 3\n'
    script = _script(source)
    assert "_tfc" not in script.text
    assert _body(script) == source.split("\n")


def test_shell_lines_inside_blocks() -> None:
    script = _script("def f():\n    !echo one\n    files = !ls\n    return files")
    tree = ast.parse(script.text)
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    assert [ast.unparse(s) for s in func.body] == [
        "_tfc.system('echo one')",
        "files = _tfc.getoutput('ls')",
        "return files",
    ]


def test_nbconvert_style_calls_are_translated() -> None:
    """Code that already holds get_ipython() calls (kernel history, nbconvert output)."""
    script = _script(
        "get_ipython().system('echo hi')\n"
        "get_ipython().run_line_magic('env', 'A=1')\n"
        "get_ipython().run_cell_magic('writefile', 'a.txt', 'hello\\n')"
    )
    text = "\n".join(_body(script))
    assert "_tfc.system('echo hi')" in text
    assert "_tfc.env('A=1')" in text
    assert "_tfc.writefile('a.txt', 'hello\\n')" in text


@pytest.mark.parametrize(
    "source",
    [
        "%matplotlib inline",
        "%load_ext tensorboard",
        "%reload_ext autoreload",
        "%autoreload 2",
        "%tensorboard --logdir logs",
        "%config InlineBackend.figure_format = 'retina'",
        "model?",
        "model.fit??",
        "%who",
        "%tfc_machines",
    ],
)
def test_display_only_line_magics_are_dropped(source: str) -> None:
    script = _script(f"a = 1\n{source}\nb = 2")
    assert _body(script) == ["a = 1", "pass", "b = 2"]
    assert script.notes and "dropped" in script.notes[0]


@pytest.mark.parametrize("magic", ["html", "markdown", "javascript", "latex", "svg"])
def test_display_only_cell_magics_are_dropped(magic: str) -> None:
    script = _script("a = 1", f"%%{magic}\n<b>hello</b>")
    assert _body(script) == ["a = 1"]
    assert script.cells == [1, 2]


@pytest.mark.parametrize(
    ("source", "line", "what"),
    [
        ("x = 1\n%store x", 2, "%store"),
        ("%undefined-line-magic", 1, "%undefined-line-magic"),
        ("import os\n\nrows = %sql select 1", 3, "%sql"),
        ("%%bigquery df\nSELECT 1", 1, "%%bigquery"),
        ("\n%%sql\nselect 1", 2, "%%sql"),
        ("%%time\nx = 1\n%store x", 3, "%store"),
        ('x = 1\nget_ipython().events.register("pre_run_cell", f)', 2, "get_ipython"),
        ("%%script\necho hi", 1, "%%script"),
    ],
)
def test_unknown_magics_are_refused_with_cell_line_and_fix(
    source: str, line: int, what: str
) -> None:
    with pytest.raises(ConversionError) as info:
        convert([Cell(2, "a = 1"), Cell(7, source)])
    err = info.value
    assert (err.cell, err.line) == (7, line)
    text = str(err)
    assert text.startswith(f"cell 7, line {line}: ")
    assert what in text and "Fix:" in text and "\n" not in text
    if what != "%%script":
        assert "tfc-skip" in text


def test_history_inputs_are_named_as_such() -> None:
    with pytest.raises(ConversionError) as info:
        convert([Cell(3, "%store x", label="In")])
    assert str(info.value).startswith("In 3, line 1: ")


@pytest.mark.parametrize(
    ("source", "line", "fix"),
    [
        ("x = 1\ny = (", 2, "fix the syntax"),
        ("print 'python 2'", 1, "fix the syntax"),
        ("x = 1\nyield 3", 2, "fix the syntax"),
    ],
)
def test_syntax_errors_name_cell_and_line(source: str, line: int, fix: str) -> None:
    with pytest.raises(ConversionError) as info:
        convert([Cell(1, "a = 1"), Cell(4, source)])
    assert (info.value.cell, info.value.line) == (4, line)
    assert fix in str(info.value)


def test_top_level_await_runs_in_a_notebook_not_in_a_python_file() -> None:
    """IPython runs a cell's top-level ``await`` (the job runs the script in an event loop);
    ``python train.py`` refuses one, and so does the plan of a ``.py`` file."""
    script = convert([Cell(1, "import asyncio\nawait asyncio.sleep(0)")])
    assert "await asyncio.sleep(0)" in script.text
    with pytest.raises(ConversionError) as info:
        convert([Cell(1, "import asyncio\nawait asyncio.sleep(0)", label="train.py")])
    assert "asyncio.run" in str(info.value)


def test_tags_and_empty_cells() -> None:
    script = convert(
        [
            Cell(1, "a = 1"),
            Cell(2, "%store a", ("tfc-skip",)),
            Cell(3, "   \n"),
            Cell(4, "%matplotlib inline\nlocal = True", ("tfc-local-only", "other")),
            Cell(5, "b = a + 1", ("other",)),
        ]
    )
    assert script.cells == [1, 5]
    assert "local = True" not in script.text and "b = a + 1" in script.text


def test_display_is_provided_by_the_runtime() -> None:
    script = _script("display('hello')")
    assert "from tfc_runtime.nb import display" in script.text
    assert (
        "from tfc_runtime.nb import display"
        not in _script("from IPython.display import display\ndisplay(1)").text
    )


def test_rules_cover_every_kind_of_line() -> None:
    text = " ".join(what for what, _ in RULES)
    for form in ("%pip install", "!cmd", "%env", "%cd", "%%writefile", "%%time", "%time"):
        assert form in text
    for form in ("%%bash", "%%sh", "%matplotlib", "%tensorboard", "%config", "tfc-skip"):
        assert form in text


# ---------------------------------------------------------------- source map
SOURCE_MAP_CELLS = [
    Cell(1, "import os\nm_1_2 = 2\n!echo a \\\n   b \\\n   c\nm_1_6 = 6\n%env K=1\nm_1_8 = 8"),
    Cell(2, "%%time\nm_2_2 = 2\n%cd .\nm_2_4 = 4"),
    Cell(4, "%%tfc_run --workers 1\nm_4_2 = 2\nfiles = !ls \\\n  -l\nm_4_5 = 5"),
    Cell(5, "%%capture out\n\nm_5_3 = 3"),
    Cell(6, "x = (1 +\n     2)\n%time m_6_3 = 3\nm_6_4 = 4\ndef f():\n    !echo hi\n    m_6_7 = 7"),
    Cell(7, "%pip install -q numpy \\\n    pandas\n%matplotlib inline\nm_7_4 = 4"),
]
_MARK = re.compile(r"\bm_(\d+)_(\d+)\b")


def _check_markers(script: Script) -> int:
    seen = 0
    for n, line in enumerate(script.text.split("\n"), start=1):
        for cell, row in _MARK.findall(line):
            assert script.locate(n) == (int(cell), int(row)), (n, line)
            seen += 1
    return seen


def test_every_line_maps_to_its_cell_and_line() -> None:
    script = _script(*(c.source for c in SOURCE_MAP_CELLS))  # parse check
    script = convert(SOURCE_MAP_CELLS)
    assert _check_markers(script) == sum(len(_MARK.findall(c.source)) for c in SOURCE_MAP_CELLS)
    where = {line.strip(): script.locate(n) for n, line in enumerate(script.text.split("\n"), 1)}
    assert where["_tfc.system('echo a  b  c')"] == (1, 3)
    assert where["_tfc.env('K=1')"] == (1, 7)
    assert where["_tfc.cd('.')"] == (2, 3)
    assert where["files = _tfc.getoutput('ls  -l')"] == (4, 3)
    assert where["_tfc.system('echo hi')"] == (6, 6)
    assert script.requirements.lines == ["numpy", "pandas"]
    assert script.locate(1) is None and script.locate(10_000) is None
    data = script.source_map_json("train.ipynb")
    assert data["notebook"] == "train.ipynb" and len(data["lines"]) == len(script.source_map)  # type: ignore[arg-type]


_KINDS = {
    "code": lambda c, r: [f"m_{c}_{r} = {r}"],
    "shell": lambda c, r: ["!echo hi"],
    "shell_cont": lambda c, r: ["!echo a \\", "    b"],
    "shell_cont3": lambda c, r: ["files = !ls \\", "  -a \\", "  -l"],
    "env": lambda c, r: ["%env A=1"],
    "pip": lambda c, r: ["%pip install -q numpy"],
    "pip_cont": lambda c, r: ["!pip install numpy \\", "    pandas"],
    "drop": lambda c, r: ["%matplotlib inline"],
    "help": lambda c, r: ["os.path?"],
    "time": lambda c, r: [f"%time m_{c}_{r} = {r}"],
    "blank": lambda c, r: [""],
    "block": lambda c, r: ["if True:", f"    m_{c}_{r + 1} = 1", "    !echo in-block"],
}


@st.composite
def _cells(draw: st.DrawFn) -> list[Cell]:
    cells = []
    for c in range(1, draw(st.integers(1, 4)) + 1):
        head = draw(st.sampled_from(["", "%%time", "%%capture", "%%tfc_run --dry-run"]))
        lines = [head] if head else []
        for kind in draw(st.lists(st.sampled_from(sorted(_KINDS)), min_size=1, max_size=8)):
            lines += _KINDS[kind](c, len(lines) + 1)
        cells.append(Cell(c, "\n".join(lines)))
    return cells


@settings(max_examples=60, deadline=None)
@given(_cells())
def test_source_map_property(cells: list[Cell]) -> None:
    script = convert(cells)
    ast.parse(script.text)
    assert "get_ipython" not in script.text
    expected = sum(len(_MARK.findall(c.source)) for c in cells)
    assert _check_markers(script) == expected


# ---------------------------------------------------------------- real runs under python
def _run_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(RUNTIME_DIR), "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.fixture(scope="module")
def runtime_nb() -> None:
    """Skip when tfc_runtime.nb (written alongside these tests) cannot be imported yet."""
    proc = subprocess.run(
        [sys.executable, "-c", "import tfc_runtime.nb"],
        env=_run_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(f"tfc_runtime.nb is not importable yet ({last})")


def _run(script: Script, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_plain(script.text, cwd)


RUNNABLE = [
    "%pip install -q requests\n%matplotlib inline\nimport os\n%env GREETING=hello",
    "%%writefile data.txt\nline one\nline two",
    "%%writefile helper.py\nVALUE = 7",
    "%run helper.py\nassert VALUE == 7",
    "%mkdir -p out\n%cd out\n!echo $GREETING > greeting.txt\nfiles = !ls\n"
    "assert files == ['greeting.txt'], files\n%cd ..",
    "%%bash\necho from-bash\ntest -f data.txt",
    "%%sh\necho from-sh",
    "%%time\ntotal = sum(range(10))",
    "%time doubled = total * 2\nassert doubled == 90\nhere = %pwd\n"
    "assert not here.endswith('out'), here",
    "!echo joined \\\n   line \\\n   parts",
    "%%capture captured\nprint('captured-print')",
    "display('shown')\nlisting = %sx echo sx-works\nassert listing == ['sx-works'], listing",
    "print('DONE')",
]


def test_converted_script_runs_under_plain_python(runtime_nb: None, tmp_path: Path) -> None:
    script = _script(*RUNNABLE)
    proc = _run(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for text in ("from-bash", "from-sh", "CPU times", "Wall time", "joined line parts", "shown"):
        assert text in out
    assert out.rstrip().endswith("DONE")
    assert (tmp_path / "data.txt").read_text() == "line one\nline two\n"
    assert (tmp_path / "out" / "greeting.txt").read_text().strip() == "hello"
    assert script.requirements.lines == ["requests"]


def test_an_error_in_the_job_maps_back_to_its_cell_and_line(
    runtime_nb: None, tmp_path: Path
) -> None:
    script = _script(
        "import os\n!echo a \\\n  b\n%env X=1",
        "%%time\nvalue = 1",
        "x = 1\n%cd .\n!true \\\n  --flag\nraise RuntimeError('boom')",
    )
    proc = _run(script, tmp_path)
    assert proc.returncode != 0 and "RuntimeError: boom" in proc.stderr
    lines = [int(n) for n in re.findall(r'script\.py", line (\d+)', proc.stderr)]
    assert script.locate(lines[-1]) == (3, 5)


def test_shell_failure_does_not_stop_the_job_but_a_script_cell_does(
    runtime_nb: None, tmp_path: Path
) -> None:
    ok = _run(_script("!exit 3\nprint('after')"), tmp_path)
    assert ok.returncode == 0 and "after" in ok.stdout
    bad = _run(_script("%%bash\nexit 4"), tmp_path)
    assert bad.returncode != 0 and "CalledProcessError" in bad.stderr


@pytest.mark.item("terminal escapes and markup in a job stay inert", suite="bad input")
def test_a_notebook_name_s_escapes_stay_out_of_the_script() -> None:
    """Issue 39: a file name holding OSC 52 (a clipboard write) reached the script's header."""
    script = convert([Cell(1, "x = 1")], notebook="evil\x1b]52;c;SGVsbG8=\x07\u2028.ipynb")
    header = script.text.splitlines()[0]
    assert header.startswith("# Generated by tfc_jupyter from evil") and header.isprintable()


def test_timing_binds_no_name_of_ours() -> None:
    """``%time`` and ``%%time`` keep their start in the runtime: the notebook's namespace gets
    no ``_tfc_t`` (it leaked into the user's names, and back into the kernel)."""
    script = _script("%time y = 2\n", "%%time\nx = 1")
    assert "_tfc_t" not in script.text
    assert not {"_tfc_t"} & {
        t.id
        for n in ast.walk(ast.parse(script.text))
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
