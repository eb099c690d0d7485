"""pip lines in cells -> the job's requirements; requirements files merged; refusals."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tfc_jupyter.errors import ConversionError, RequirementsError
from tfc_jupyter.notebook.convert import Cell, convert
from tfc_jupyter.notebook.requirements import (
    Requirements,
    canonical_name,
    parse_pip_args,
    shell_pip_args,
)


def _reqs(*sources: str, base_dir: Path | str = ".") -> tuple[list[str], str]:
    """Requirements and script of cells made of ``sources``."""
    script = convert([Cell(i, s) for i, s in enumerate(sources, 1)], base_dir=base_dir)
    ast.parse(script.text)
    return script.requirements.lines, script.text


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("%pip install numpy", ["numpy"]),
        ("!pip install numpy==1.26.4", ["numpy==1.26.4"]),
        (
            "%pip install -q 'pandas>=2,<3' tensorflow-datasets",
            ["pandas>=2,<3", "tensorflow-datasets"],
        ),
        ('%pip install "apache-beam[gcp]>=2.50"', ["apache-beam[gcp]>=2.50"]),
        ("!pip install -U --quiet scikit-learn", ["scikit-learn"]),
        ("!pip install -qU keras-tuner", ["keras-tuner"]),
        ("!pip3 install --upgrade --user tf-keras~=2.16.0", ["tf-keras~=2.16.0"]),
        ("!python -m pip install requests", ["requests"]),
        ("!python3 -m pip install -q six", ["six"]),
        ("!{sys.executable} -m pip install attrs", ["attrs"]),
        (
            "!pip install git+https://github.com/tensorflow/cloud.git",
            ["git+https://github.com/tensorflow/cloud.git"],
        ),
        (
            "%pip install https://example.org/pkg-1.0-py3-none-any.whl",
            ["https://example.org/pkg-1.0-py3-none-any.whl"],
        ),
        (
            "%pip install --index-url https://pypi.example.org/simple private-pkg",
            ["--index-url https://pypi.example.org/simple", "private-pkg"],
        ),
        (
            "!pip install -e git+https://github.com/x/y.git#egg=y",
            ["git+https://github.com/x/y.git#egg=y"],
        ),
        ("%pip install --timeout=60 --no-cache-dir tqdm", ["tqdm"]),
    ],
)
def test_pip_lines_become_requirements(line: str, expected: list[str]) -> None:
    reqs, text = _reqs(f"import os\n{line}\nx = 1")
    assert reqs == expected
    assert "pip" not in text.split("# %% cell 1", 1)[1]
    assert "get_ipython" not in text


def test_pip_inside_a_block_keeps_the_block_valid() -> None:
    reqs, text = _reqs("if True:\n    !pip install numpy\nelse:\n    %pip install pandas")
    assert reqs == ["numpy", "pandas"]
    ast.parse(text)


def test_pip_list_and_show_are_dropped_with_a_note() -> None:
    script = convert([Cell(1, "%pip list\n!pip show numpy\n!pip freeze")])
    assert script.requirements.lines == []
    assert any("pip list dropped" in n for n in script.notes)
    assert any("pip show dropped" in n for n in script.notes)


def test_dash_r_reads_the_file_next_to_the_notebook(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(
        "# comment\nnumpy>=1.26  # pinned\n-r extra.txt\n--extra-index-url https://x.org/simple\n"
    )
    (tmp_path / "extra.txt").write_text("pandas\n\n")
    reqs, _ = _reqs("%pip install -r requirements.txt -q", base_dir=tmp_path)
    assert reqs == ["numpy>=1.26", "pandas", "--extra-index-url https://x.org/simple"]


def test_later_lines_win_for_the_same_package(tmp_path: Path) -> None:
    user_file = tmp_path / "requirements.txt"
    user_file.write_text("Pandas==2.1.0\nnumpy\n")
    merged = Requirements()
    merged.add_file(user_file, " (requirements.txt)")
    script = convert(
        [Cell(1, "%pip install pandas==2.2.2 tqdm"), Cell(2, "!pip install 'NumPy>=2'")],
        extra_requirements=merged,
    )
    assert script.requirements.lines == ["pandas==2.2.2", "NumPy>=2", "tqdm"]
    assert script.requirements.names() == {"pandas", "numpy", "tqdm"}
    assert any("'Pandas==2.1.0' replaced by 'pandas==2.2.2'" in n for n in script.notes)


def test_duplicates_are_kept_once() -> None:
    reqs, _ = _reqs("%pip install numpy", "!pip install numpy")
    assert reqs == ["numpy"]


@pytest.mark.parametrize(
    ("line", "fix"),
    [
        ("%pip install $PACKAGE", "write the package names literally"),
        ("!pip install {pkg}", "write the package names literally"),
        ("%pip install -e .", "install from a URL"),
        ("!pip install --editable ./mylib", "install from a URL"),
        ("!pip install numpy && echo done", "put the pip install on a line of its own"),
        ("!pip install numpy; ls", "put the pip install on a line of its own"),
        ("!pip install numpy | tail -1", "put the pip install on a line of its own"),
        ("%pip install -c constraints.txt numpy", "put the pins in a requirements file"),
        ("%pip install --frobnicate numpy", "remove it"),
        ("%pip install numpy==", "NAME==VERSION"),
        ("%pip install -r", "-r requirements.txt"),
        ("%pip install -r missing.txt", "check the path"),
        ("%conda install numpy", "%pip install"),
    ],
)
def test_refusals_name_cell_line_and_fix(line: str, fix: str) -> None:
    with pytest.raises(ConversionError) as info:
        convert([Cell(1, "x = 1"), Cell(4, f"import os\n{line}")])
    text = str(info.value)
    assert text.startswith("cell 4, line 2: ")
    assert fix in text and "Fix:" in text and "\n" not in text
    assert (info.value.cell, info.value.line) == (4, 2)


def test_unreadable_requirements_files(tmp_path: Path) -> None:
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    for path in (binary, tmp_path / "missing.txt", tmp_path):
        with pytest.raises(RequirementsError) as info:
            Requirements().add_file(path)
        assert "Fix:" in str(info.value)
    bad = tmp_path / "bad.txt"
    bad.write_text("numpy\nnot a requirement!\n")
    with pytest.raises(RequirementsError, match="not a valid requirement"):
        Requirements().add_file(bad)


def test_parse_pip_args_returns_the_subcommand(tmp_path: Path) -> None:
    reqs = Requirements()
    assert parse_pip_args("uninstall -y numpy", tmp_path, reqs) == "uninstall"
    assert parse_pip_args("", tmp_path, reqs) == ""
    assert parse_pip_args("install --upgrade-strategy eager x", tmp_path, reqs) == "install"
    assert reqs.lines == ["x"]


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("pip install x", "install x"),
        ("pip3.11 install x", "install x"),
        ("/usr/local/bin/pip install x", "install x"),
        ("sudo -H pip install x", "install x"),
        ("python3 -m pip install x", "install x"),
        ("$PYTHON -m pip install x", "install x"),
        ("ls -l", None),
        ("echo pip install x", None),
        ("pipenv install x", None),
    ],
)
def test_shell_pip_recognition(command: str, args: str | None) -> None:
    assert shell_pip_args(command) == args


@pytest.mark.parametrize(
    ("requirement", "name"),
    [
        ("Tensorflow_Datasets>=4", "tensorflow-datasets"),
        ("zope.interface", "zope-interface"),
        ("apache-beam[gcp]", "apache-beam"),
        ("git+https://x/y.git#egg=My_Pkg", "my-pkg"),
        ("https://x.org/a.whl", None),
        ("--index-url https://x", None),
    ],
)
def test_canonical_names(requirement: str, name: str | None) -> None:
    assert canonical_name(requirement) == name
