"""tfc_runtime.nb: the stand-ins for IPython magics and shell lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tfc_runtime import nb
from tfc_runtime.nb import _format_time, expand


def call_in(namespace: dict[str, Any], func: str, *args: Any) -> Any:
    """Call ``nb.<func>(*args)`` from a frame whose globals are ``namespace`` (like a script)."""
    glob = {**namespace, "_tfc": nb}
    exec("def _caller(*_a):\n    return getattr(_tfc, _a[0])(*_a[1:])\n", glob)
    return glob["_caller"](func, *args)


class Box:
    """An object with an attribute, for ``$box.size``."""

    size = 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("echo $x", "echo 5"),
        ("echo $box.size and {x * 2}", "echo 3 and 10"),
        ("echo {name.upper()}-{x}", "echo DATA-5"),
        ("echo $$x", "echo $x"),  # $$ -> literal $
        ("echo {{x}}", "echo {x}"),  # literal braces
        ("echo ${x}", "echo $5"),  # IPython: "$" then the {x} field
        ("echo '$x'", "echo '$x'"),  # single-quoted: left for the shell
        ("echo $HOME", "echo $HOME"),  # unknown Python name: left as is
        ("echo $x $nope", "echo $x $nope"),  # IPython leaves the whole line when one fails
        ("echo {1/0}", "echo {1/0}"),
    ],
)
def test_expand_follows_ipython(text: str, expected: str) -> None:
    assert call_in({"x": 5, "box": Box(), "name": "data"}, "expand", text) == expected


def test_expand_sees_the_callers_locals() -> None:
    def inner() -> str:
        local_only = "here"  # noqa: F841  (read through the frame by expand)
        return expand("at $local_only")

    assert inner() == "at here"


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="$x{}'. a1:[]!", max_size=14))
def test_expand_matches_ipython_dollar_formatter(text: str) -> None:
    text_mod = pytest.importorskip("IPython.utils.text")
    namespace = {"x": 5, "a": "s", "a1": [1, 2]}
    try:
        expected = text_mod.DollarFormatter().vformat(text, [], namespace)
    except Exception:
        expected = text
    assert call_in(namespace, "expand", text) == expected


def test_system_streams_output_and_returns_the_status(capfd: pytest.CaptureFixture[str]) -> None:
    assert call_in({"n": 7}, "system", "echo out $n; echo err >&2") == 0
    assert call_in({}, "system", "echo before; exit 3") == 3
    out, err = capfd.readouterr()
    assert out.splitlines() == ["out 7", "err", "before"]  # stderr merged, as in a notebook
    assert "exited with status 3" in err


def test_getoutput_returns_lines() -> None:
    lines = call_in({"word": "b c"}, "getoutput", 'printf "a\\n%s\\n" "$word"; echo e >&2')
    assert lines == ["a", "b c", "e"]


def test_cd_changes_and_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub dir").mkdir()
    call_in({"d": "sub dir"}, "cd", '"$d"')
    assert Path.cwd() == tmp_path / "sub dir"
    call_in({}, "cd", "-")
    assert Path.cwd() == tmp_path
    call_in({}, "cd", "-q ~")
    assert Path.cwd() == Path.home()
    assert capsys.readouterr().out.splitlines() == [str(tmp_path / "sub dir"), str(tmp_path)]


def test_env_forms(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("TFC_T_A", "TFC_T_B", "TFC_T_TOKEN"):
        monkeypatch.setenv(name, "old")  # restored after the test
    call_in({"v": "vee"}, "env", "TFC_T_A=1=2")
    call_in({"v": "vee"}, "env", "TFC_T_B $v")
    assert (os.environ["TFC_T_A"], os.environ["TFC_T_B"]) == ("1=2", "vee")
    call_in({}, "env", "TFC_T_B")
    call_in({}, "env", "")
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["env: TFC_T_A=1=2", "env: TFC_T_B=vee", "vee"]
    assert "'TFC_T_TOKEN': '<hidden>'" in out[3] and "'TFC_T_A': '1=2'" in out[3]
    with pytest.raises(KeyError, match="TFC_T_MISSING"):
        nb.env("TFC_T_MISSING")


def test_writefile_and_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    call_in({"f": "notes.txt"}, "writefile", "$f", "one\n")
    call_in({}, "writefile", "notes.txt", "two\n")
    call_in({}, "writefile", "-a notes.txt", "three\n")
    call_in({}, "writefile", "--append new.txt", "x\n")
    assert (tmp_path / "notes.txt").read_text() == "two\nthree\n"
    assert (tmp_path / "new.txt").read_text() == "x\n"
    assert capsys.readouterr().out.splitlines() == [
        "Writing notes.txt",
        "Overwriting notes.txt",
        "Appending to notes.txt",
        "Writing new.txt",
    ]


def test_run_script_streams_and_raises(capfd: pytest.CaptureFixture[str]) -> None:
    call_in({"who": "world"}, "run_script", "bash", 'echo "hi $1"\n', "-s $who")
    with pytest.raises(subprocess.CalledProcessError) as caught:
        nb.run_script("bash", "echo out; echo err >&2; exit 4\n")
    assert caught.value.returncode == 4
    out, err = capfd.readouterr()
    assert out.splitlines() == ["hi world", "out"]
    assert err.splitlines() == ["err"]
    nb.run_script(sys.executable, "print(6 * 7)\n", "-")
    assert capfd.readouterr().out == "42\n"


def test_time_output_shape(capsys: pytest.CaptureFixture[str]) -> None:
    nb.time_start()
    sum(range(10000))
    nb.time_end("%%time")
    lines = capsys.readouterr().out.splitlines()
    unit = r"[\d.e+-]+ (s|ms|[uμ]s|ns)"
    assert re.fullmatch(f"CPU times: user {unit}, sys: {unit}, total: {unit}", lines[0])
    assert re.fullmatch(f"Wall time: {unit}", lines[1])
    assert len(lines) == 2


@pytest.mark.parametrize("seconds", [0.0, 2.5e-9, 4.2e-7, 0.0123, 1.5, 59.9, 75.0, 3725.0, 90061.0])
def test_format_time_matches_ipython(seconds: float) -> None:
    execution = pytest.importorskip("IPython.core.magics.execution")
    assert _format_time(seconds) == execution._format_time(seconds)


def test_run_path_runs_as_main_and_shares_its_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "helper.py"
    script.write_text(
        "import sys\nprint(__name__, sys.argv[1:])\ndef twice(v):\n    return 2 * v\n"
    )
    namespace: dict[str, Any] = {"arg": "b c"}
    saved_argv = list(sys.argv)
    call_in(namespace, "run_path", f'{script} a "$arg"')
    assert sys.argv == saved_argv
    assert capsys.readouterr().out == "__main__ ['a', 'b c']\n"
    glob = {"_tfc": nb}
    exec(f"_tfc.run_path({str(tmp_path / 'helper')!r})\nresult = twice(21)", glob)
    assert glob["result"] == 42  # %run leaves the script's names behind, ".py" is optional


def test_display_prints(capsys: pytest.CaptureFixture[str]) -> None:
    nb.display("text", [1, "a"], {"k": 2})
    assert capsys.readouterr().out == "text\n[1, 'a']\n{'k': 2}\n"


def test_run_a_notebook_runs_its_code_cells(tmp_path: Path) -> None:
    """``%run ./setup.ipynb``: the notebook's code cells run (its JSON is not Python), their
    names reach the caller, and IPython-only lines are left out, said on stderr."""
    import json

    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# setup"]},
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": [
                "%matplotlib inline\n",
                "SETTING = {'on': True, 'none': None}\n",
                "def twice(x):\n",
                "    return 2 * x",
            ],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": "!ls\nAFTER = twice(21)",
        },
    ]
    (tmp_path / "setup.ipynb").write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    script = tmp_path / "job.py"
    script.write_text(
        "from tfc_runtime import nb as _tfc\n"
        "_tfc.run_path('./setup.ipynb')\n"
        "print(SETTING, AFTER)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(nb.__file__).parent.parent)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'on': True, 'none': None} 42"
    assert "'%matplotlib inline' needs IPython, left out" in done.stderr
    assert "'!ls' needs IPython, left out" in done.stderr
