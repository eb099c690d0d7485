"""Which notebook and which cells: JPY_SESSION_NAME, --notebook, history; selection; bad files."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from tfc_jupyter.errors import CaptureError
from tfc_jupyter.notebook import capture
from tfc_jupyter.notebook.convert import convert

pytestmark = pytest.mark.usefixtures("tfc_env")

RUN_BODY = "result = build()\nprint(json.dumps(result))"  # the body of train.ipynb's cell 9
RUN_LINE = "--workers 1 --dry-run"


def _one_line(err: CaptureError) -> str:
    text = str(err)
    assert "\n" not in text and "\x00" not in text and "Fix:" in text, text
    return text


def test_fixtures_are_up_to_date(fixtures_dir: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_fixtures", fixtures_dir / "make_fixtures.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, text in module.texts().items():
        assert (fixtures_dir / name).read_text(encoding="utf-8") == text, (
            f"{name} is stale: run python tests/fixtures/make_fixtures.py"
        )


# ---------------------------------------------------------------- finding the notebook
def test_explicit_notebook(train_nb: Path) -> None:
    path, how, warnings = capture.find_notebook(str(train_nb), environ={})
    assert (path, how, warnings) == (train_nb.resolve(), "--notebook", [])


def test_explicit_notebook_wins_over_the_session(train_nb: Path, fixtures_dir: Path) -> None:
    env = {"JPY_SESSION_NAME": str(fixtures_dir / "v3.ipynb")}
    assert capture.find_notebook(str(train_nb), environ=env)[0] == train_nb.resolve()


def test_missing_explicit_notebook(tmp_path: Path) -> None:
    with pytest.raises(CaptureError) as info:
        capture.find_notebook(str(tmp_path / "gone.ipynb"), environ={})
    assert "--notebook" in _one_line(info.value)


def test_session_name_absolute(train_nb: Path) -> None:
    path, how, warnings = capture.find_notebook(environ={"JPY_SESSION_NAME": str(train_nb)})
    assert (path, how, warnings) == (train_nb.resolve(), "JPY_SESSION_NAME", [])


def test_session_name_relative_to_a_server_root_above_cwd(
    train_nb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server runs in tmp_path; the kernel runs in the notebook's own folder."""
    folder = tmp_path / "projects" / "mnist"
    folder.mkdir(parents=True)
    shutil.copy(train_nb, folder / "train.ipynb")
    monkeypatch.chdir(folder)
    env = {"JPY_SESSION_NAME": "projects/mnist/train.ipynb"}
    path, how, _ = capture.find_notebook(environ=env)
    assert (path, how) == ((folder / "train.ipynb").resolve(), "JPY_SESSION_NAME")


def test_session_name_relative_to_an_explicit_server_root(
    train_nb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    (root / "nb").mkdir(parents=True)
    shutil.copy(train_nb, root / "nb" / "train.ipynb")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    env = {"JPY_SESSION_NAME": "nb/train.ipynb", "JUPYTER_SERVER_ROOT": str(root)}
    assert capture.find_notebook(environ=env)[0] == (root / "nb" / "train.ipynb").resolve()


def test_stale_session_name_after_a_rename(
    train_nb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(train_nb, tmp_path / "renamed.ipynb")
    monkeypatch.chdir(tmp_path)
    path, how, warnings = capture.find_notebook(environ={"JPY_SESSION_NAME": "train.ipynb"})
    assert (path, how) == (None, "kernel history")
    (warning,) = warnings
    assert "'train.ipynb'" in warning and "--notebook PATH" in warning and "\n" not in warning


def test_session_name_that_is_not_a_notebook(tmp_path: Path) -> None:
    (tmp_path / "console.py").write_text("x = 1")
    env = {"JPY_SESSION_NAME": str(tmp_path / "console.py")}
    path, _, warnings = capture.find_notebook(environ=env)
    assert path is None and warnings


def test_no_session_at_all_falls_back_quietly() -> None:
    assert capture.find_notebook(environ={}) == (None, "kernel history", [])


# ---------------------------------------------------------------- selecting cells
def _select(path: Path, **kwargs: object) -> capture.Selection:
    nb = capture.read_notebook(path)
    return capture.select_cells(nb, path=path, how="test", **kwargs)  # type: ignore[arg-type]


def test_cells_above_plus_the_run_cell(train_nb: Path) -> None:
    sel = _select(train_nb, magic_line=RUN_LINE, body=RUN_BODY)
    # 1 markdown, 4 tfc-skip, 5 another %%tfc_run, 6 tfc-local-only; 10 and 11 are below
    assert [c.index for c in sel.cells] == [2, 3, 7, 8, 9]
    assert sel.skipped == [4, 6]
    assert (sel.run_cell, sel.magic_line, sel.warnings) == (9, RUN_LINE, [])
    assert sel.name == "train.ipynb" and sel.base_dir == train_nb.parent
    script = convert(sel.cells, base_dir=sel.base_dir)
    assert "first run cell" not in script.text and "below the run cell" not in script.text
    assert "not in the job" not in script.text and "LOCAL_ONLY" not in script.text
    assert script.text.rstrip().endswith("print(json.dumps(result))")
    assert script.cells == [2, 3, 7, 8, 9]


def test_the_first_run_cell(train_nb: Path) -> None:
    sel = _select(train_nb, magic_line="--gpus 2", body="print('first run cell')")
    assert [c.index for c in sel.cells] == [2, 3, 5]
    assert sel.run_cell == 5 and sel.skipped == [4]


def test_unsaved_edits_use_the_cell_as_run_and_say_so(train_nb: Path) -> None:
    edited = "result = build()\nprint('edited, not saved')"
    sel = _select(train_nb, magic_line="--workers 2", body=edited)
    assert [c.index for c in sel.cells] == [2, 3, 7, 8, 9]
    (warning,) = sel.warnings
    assert "does not hold the %%tfc_run cell as you ran it" in warning
    assert "in place of cell 9" in warning and "Save the notebook" in warning
    assert sel.magic_line == "--workers 2"
    script = convert(sel.cells)
    assert "print('edited, not saved')" in script.text
    assert "print(json.dumps(result))" not in script.text


def test_whitespace_differences_are_not_edits(train_nb: Path) -> None:
    sel = _select(train_nb, magic_line=RUN_LINE, body=RUN_BODY.replace("\n", "   \n") + "\n\n")
    assert sel.warnings == [] and sel.run_cell == 9


def test_no_run_cell_saved(fixtures_dir: Path) -> None:
    with pytest.raises(CaptureError) as info:
        _select(fixtures_dir / "no_run_cell.ipynb", magic_line="", body="x = 2")
    text = _one_line(info.value)
    assert "no %%tfc_run cell" in text and "save the notebook" in text


def test_no_run_cell_from_the_command_line_takes_every_cell(fixtures_dir: Path) -> None:
    sel = _select(fixtures_dir / "no_run_cell.ipynb")
    assert [c.index for c in sel.cells] == [1, 2] and sel.run_cell is None


def test_cell_number(train_nb: Path) -> None:
    sel = _select(train_nb, cell_number=11)
    assert [c.index for c in sel.cells] == [2, 3, 7, 8, 10, 11]
    assert sel.magic_line == "--tpu v3-8"
    with pytest.raises(CaptureError) as info:
        _select(train_nb, cell_number=3)
    assert "5, 9, 11" in _one_line(info.value)


def test_first_of_several_run_cells_is_used_with_a_warning(train_nb: Path) -> None:
    sel = _select(train_nb)
    assert sel.run_cell == 5
    assert any("3 %%tfc_run cells" in w and "--cell" in w for w in sel.warnings)


def test_identical_run_cells(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("a = 1"),
        nbformat.v4.new_code_cell("%%tfc_run\nprint(a)"),
        nbformat.v4.new_code_cell("b = 2"),
        nbformat.v4.new_code_cell("%%tfc_run\nprint(a)"),
    ]
    path = tmp_path / "twice.ipynb"
    nbformat.write(nb, path)
    sel = _select(path, magic_line="", body="print(a)")
    assert sel.run_cell == 2 and "2 identical" in sel.warnings[0]


def test_run_cell_detection() -> None:
    assert capture.is_run_cell("%%tfc_run")
    assert capture.is_run_cell("\n%%tfc_run --gpus 1\nx = 1")
    assert not capture.is_run_cell("%%tfc_runner\nx")
    assert not capture.is_run_cell("x = 1\n%%tfc_run")
    assert capture.split_run_cell("\n%%tfc_run  --tpu \nbody\nmore") == ("--tpu", "body\nmore")


# ---------------------------------------------------------------- kernel history
def test_history_fallback() -> None:
    inputs = [
        "import os",
        "x = 1",
        "x = 1",  # re-run: kept once
        "get_ipython().run_line_magic('load_ext', 'tfc_jupyter')",
        "%tfc_config",
        "",
        "get_ipython().system('echo hi')",
        "get_ipython().run_cell_magic('writefile', 'a.txt', 'hello\\n')",
        "get_ipython().run_cell_magic('tfc_run', '--dry-run', 'print(1)\\n')",
    ]
    sel = capture.from_history(inputs, "--gpus 1", "print(x)")
    assert sel.how == "kernel history" and sel.notebook is None
    assert sel.name == "kernel history"
    assert [c.index for c in sel.cells] == [1, 2, 4, 7, 8, 10]
    assert all(c.label == "In" for c in sel.cells)
    assert sel.run_cell == 10 and sel.magic_line == "--gpus 1"
    assert "--notebook PATH" in sel.warnings[0]
    script = convert(sel.cells)
    assert "get_ipython" not in script.text
    assert "_tfc.writefile('a.txt', 'hello\\n')" in script.text
    assert script.text.rstrip().endswith("print(x)")
    assert "print(1)" not in script.text


# ---------------------------------------------------------------- reading files
def test_v3_notebook_is_upgraded(fixtures_dir: Path) -> None:
    nb = capture.read_notebook(fixtures_dir / "v3.ipynb")
    assert nb.nbformat == 4
    sel = capture.select_cells(
        nb, path=fixtures_dir / "v3.ipynb", how="test", magic_line="--dry-run", body="print(value)"
    )
    assert [c.index for c in sel.cells] == [2, 3] and sel.warnings == []
    script = convert(sel.cells)
    assert "_tfc.system('echo old')" in script.text and "value = 41 + 1" in script.text


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"{not json", "not a readable notebook"),
        (b"", "not a readable notebook"),
        (b"[]", "not a readable notebook"),
        (b'{"cells": [\x00]}', "not a readable notebook"),
        (b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}}', "not a readable notebook"),
        (b'{"nbformat": 9, "nbformat_minor": 0, "cells": []}', "not a readable notebook"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "binary file"),
        ("{}".encode("utf-16"), "binary file"),
    ],
)
def test_broken_files_give_one_line(tmp_path: Path, content: bytes, what: str) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_bytes(content)
    with pytest.raises(CaptureError) as info:
        capture.read_notebook(path)
    text = _one_line(info.value)
    assert what in text and "broken.ipynb" in text


def test_truncated_notebook(tmp_path: Path, train_nb: Path) -> None:
    path = tmp_path / "cut.ipynb"
    path.write_bytes(train_nb.read_bytes()[:700])
    with pytest.raises(CaptureError) as info:
        capture.read_notebook(path)
    assert len(_one_line(info.value)) < 400


def test_unreadable_path(tmp_path: Path) -> None:
    with pytest.raises(CaptureError) as info:
        capture.read_notebook(tmp_path)
    assert "cannot read" in _one_line(info.value)


@pytest.mark.item("broken and hostile notebooks get one line", suite="bad input")
def test_a_nul_character_in_a_cell_is_refused_naming_the_cell(tmp_path: Path) -> None:
    """Issue 39: a NUL inside a cell was removed silently and the code ran, where IPython
    refuses to run it. The plan refuses it in one line naming cell and line."""
    from tfc_jupyter.errors import ConversionError
    from tfc_jupyter.notebook.convert import convert

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("y = 0\nx = '1\u0000'")])
    nb.cells.append(nbformat.v4.new_code_cell("%%tfc_run\nprint(x)"))
    path = tmp_path / "nul.ipynb"
    nbformat.write(nb, path)
    sel = _select(path, magic_line="", body="print(x)")
    with pytest.raises(ConversionError) as info:
        convert(sel.cells, base_dir=tmp_path, notebook=sel.name)
    assert _one_line(info.value).startswith("cell 1, line 2: holds a NUL character")
    assert "Fix: delete it from the cell" in _one_line(info.value)


def test_notebook_from_a_frontend_model(train_nb: Path) -> None:
    import json

    model = json.loads(train_nb.read_text())
    nb = capture.notebook_from_model(model)
    sel = capture.select_cells(nb, path=None, how="frontend", magic_line=RUN_LINE, body=RUN_BODY)
    assert sel.run_cell == 9 and [c.index for c in sel.cells] == [2, 3, 7, 8, 9]


def test_reading_a_v4_notebook_imports_no_nbformat(train_nb: Path) -> None:
    """nbformat's schema machinery takes over a second to import: a v4 notebook is read
    without it (every CLI call and the first %%tfc_run of a kernel would pay it), and reads as
    nbformat reads it."""
    import subprocess
    import sys

    import nbformat

    code = (
        "import sys; from pathlib import Path; from tfc_jupyter.notebook import capture; "
        f"nb = capture.read_notebook(Path({str(train_nb)!r})); "
        "print(len(nb.cells), 'nbformat' in sys.modules, 'jsonschema' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    expected = nbformat.read(train_nb, as_version=4)
    assert out == [str(len(expected.cells)), "False", "False"]
    ours = capture.read_notebook(train_nb)
    assert [c.source for c in ours.cells] == [c.source for c in expected.cells]
    assert [c.cell_type for c in ours.cells] == [c.cell_type for c in expected.cells]


# ---------------------------------------------------------------- our reader, against nbformat
CORPUS = Path(__file__).resolve().parent / "corpus"  # sources and licences: its README
CORPUS_NOTEBOOKS = sorted(CORPUS.rglob("*.ipynb")) if CORPUS.is_dir() else []


def _what_a_job_reads(nb: object) -> list[tuple[str, str, list[str]]]:
    """Each cell's type, source and tags: what selection and conversion read of a notebook."""
    return [
        (c["cell_type"], c.get("source", ""), list(c.get("metadata", {}).get("tags", []) or []))
        for c in nb["cells"]  # type: ignore[index]
    ]


@pytest.mark.skipif(not CORPUS_NOTEBOOKS, reason=f"no notebook corpus at {CORPUS}")
@pytest.mark.parametrize("path", CORPUS_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_reader_reads_the_corpus_as_nbformat_does(path: Path) -> None:
    """Every real notebook (v4.0 to v4.5, broken ones included) reads as nbformat reads and
    validates it: the same cells, sources and tags, and the same kernel metadata; a notebook
    nbformat cannot read or validate is refused in one line, never with a traceback."""
    import warnings

    text = path.read_bytes().decode("utf-8", errors="replace")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = nbformat.reads(text, as_version=4)
            nbformat.validate(expected)
    except Exception:  # nbformat refuses it: ours may read what it can, or refuse in one line
        expected = None
    try:
        ours = capture.read_notebook(path)
    except CaptureError as exc:
        assert expected is None, f"nbformat reads it, ours refuses: {exc}"
        _one_line(exc)
        return
    if expected is not None:
        assert _what_a_job_reads(ours) == _what_a_job_reads(expected)
        for key in ("kernelspec", "language_info"):
            assert ours.metadata.get(key) == expected.metadata.get(key)


@pytest.mark.parametrize(
    ("nb", "what"),
    [
        ({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": {}}, "'cells' is missing"),
        ({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": ["x"]}, "cell 1 has no"),
        ({"nbformat": 4, "metadata": {}, "cells": [{"source": "x"}]}, "cell 1 has no cell_type"),
        ({"nbformat": 4, "metadata": {}, "cells": [{"cell_type": 3}]}, "cell 1 has no cell_type"),
        (
            {"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "code", "source": 7}]},
            "cell 1's source is not text",
        ),
        (
            {"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "code", "source": ["a", 1]}]},
            "cell 1's source is not text",
        ),
        (
            {"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "code", "metadata": []}]},
            "cell 1's metadata is not an object",
        ),
        ({"nbformat": 4, "metadata": [], "cells": []}, "'metadata' is not an object"),
        ({"nbformat": 3}, "not a readable notebook"),  # nbformat's own message, in one line
    ],
)
def test_the_reader_refuses_a_broken_structure_in_one_line(
    tmp_path: Path, nb: dict[str, object], what: str
) -> None:
    import json

    path = tmp_path / "odd.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(CaptureError) as info:
        capture.read_notebook(path)
    text = _one_line(info.value)
    assert what in text and "odd.ipynb is not a readable notebook" in text, text


def test_the_reader_joins_multi_line_sources_as_nbformat_does() -> None:
    import json

    data = {
        "nbformat": 4,
        "nbformat_minor": 4,
        "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# a\n", "title"]},
            {
                "cell_type": "code",
                "metadata": {"tags": ["tfc-skip"]},
                "source": ["x = 1\n", "print(x)"],
                "outputs": [],
                "execution_count": None,
            },
            {"cell_type": "code", "source": ""},
        ],
    }
    text = json.dumps(data)
    ours = capture.parse_notebook(text)
    assert [c.source for c in ours.cells] == ["# a\ntitle", "x = 1\nprint(x)", ""]
    assert ours.cells[1].metadata.tags == ["tfc-skip"] and ours.nbformat == 4
    data["cells"] = data["cells"][:2]  # type: ignore[index]  # nbformat wants the rest
    expected = nbformat.reads(json.dumps(data), as_version=4)
    assert _what_a_job_reads(ours)[:2] == _what_a_job_reads(expected)


def test_only_an_old_notebook_imports_nbformat(fixtures_dir: Path, train_nb: Path) -> None:
    """nbformat (and its schema machinery) is imported to upgrade a v3 notebook, never to read
    a v4 one; the v3 notebook reads as nbformat upgrades it."""
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from tfc_jupyter.notebook import capture; "
        "capture.read_notebook(Path(sys.argv[1])); v4 = 'nbformat' in sys.modules; "
        "capture.read_notebook(Path(sys.argv[2])); print(v4, 'nbformat' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(train_nb), str(fixtures_dir / "v3.ipynb")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert out == ["False", "True"]
    ours = capture.read_notebook(fixtures_dir / "v3.ipynb")
    expected = nbformat.read(fixtures_dir / "v3.ipynb", as_version=4)
    assert _what_a_job_reads(ours) == _what_a_job_reads(expected)
