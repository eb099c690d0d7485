"""Conversion of notebooks written the way public TensorFlow notebooks are (issue 12).

Each case comes from a pattern seen in real notebooks: cells indented as a whole, comments after
pip lines, pip options, automagic (``ls``, ``cd`` with no ``%``), TensorFlow's multi-worker
tutorials starting workers with ``%%bash --bg`` and stopping them with ``%killbgscripts``,
``%%capture`` objects, Colab's ``%tensorflow_version`` and ``get_ipython()`` checks. The
translated scripts run under plain ``python`` with IPython made unimportable.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import nbformat
import pytest
from jobutil import plan_for, run_plain, write_notebook

from tfc_jupyter.backends.local.backend import LocalBackend
from tfc_jupyter.errors import BackendError, CaptureError, ConversionError, ConversionErrors
from tfc_jupyter.image.context import dockerfile
from tfc_jupyter.jobs import store_for
from tfc_jupyter.notebook.capture import read_notebook, select_cells
from tfc_jupyter.notebook.convert import Cell, Script, convert


def script_of(*sources: str) -> Script:
    return convert([Cell(i, s) for i, s in enumerate(sources, 1)])


def run(script: Script, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_plain(script.text, cwd)


def test_a_cell_indented_as_a_whole_runs(tmp_path: Path) -> None:
    done = run(script_of("  x = 2\n  if x:\n      print('indented', x)"), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "indented 2\n"


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("!pip install pyyaml  # for YAML", ["pyyaml"]),
        ("%pip install -q pyyaml # for YAML", ["pyyaml"]),
        ("!pip install 'a-pkg==1.0'  # pinned, see #12", ["a-pkg==1.0"]),
        (
            "!pip install git+https://github.com/org/tool.git#egg=tool",
            ["git+https://github.com/org/tool.git#egg=tool"],
        ),
        (
            "!pip install --use-deprecated=legacy-resolver six",
            ["--use-deprecated=legacy-resolver", "six"],
        ),
        ("!pip install --no-deps tf-models-official", ["--no-deps tf-models-official"]),
    ],
)
def test_pip_lines_as_pip_reads_them(line: str, want: list[str]) -> None:
    assert script_of(line).requirements.lines == want


def test_pip_options_reach_the_image() -> None:
    reqs = script_of(
        "!pip install --use-deprecated=legacy-resolver six",
        "!pip install --no-deps tf-models-official",
    ).requirements.lines
    text = dockerfile("python:3.11", apt=[], requirements=reqs, ca=False, declared=False)
    assert "pip install --root /tfc-deps --use-deprecated=legacy-resolver -r" in text
    assert "--no-deps -r /tmp/tfc/requirements-no-deps.txt" in text


def test_pip_options_that_cannot_apply_are_refused_with_why() -> None:
    with pytest.raises(ConversionError, match=r"--target is not supported in a job"):
        script_of("!pip install --target ./libs six")


@pytest.mark.parametrize(
    ("line", "call"),
    [
        ("ls ./data/", "_tfc.system('ls ./data/')"),
        ("ls -la", "_tfc.system('ls -la')"),
        ("cd /tmp", "_tfc.cd('/tmp')"),
        ("pip install six", "pass"),
        ("  mkdir -p out", "_tfc.system('mkdir -p out')"),
    ],
)
def test_automagic_lines_become_their_magic(line: str, call: str) -> None:
    script = script_of(line)
    assert call in script.text


@pytest.mark.parametrize(
    "source",
    ["ls = 3\nprint(ls)", "def ls(*a):\n    return a\nls -1", "cd: int = 1", "env.get('x')"],
)
def test_python_that_uses_magic_names_stays_python(source: str) -> None:
    script = script_of(source)
    assert "_tfc" not in script.text


def test_bash_bg_workers_start_and_killbgscripts_stops_them(tmp_path: Path) -> None:
    """TensorFlow's multi-worker tutorial: workers in %%bash --bg, stopped by %killbgscripts."""
    script = script_of(
        "%%bash --bg --proc worker\nexec sleep 30",
        "import time\ntime.sleep(0.3)\nprint('running:', worker.poll() is None)",
        "%killbgscripts",
        "print('stopped:', worker.poll() is not None)",
    )
    done = run(script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Starting job # 0 in a separate thread.",
        "running: True",
        "All background processes were killed.",
        "stopped: True",
    ]


def test_bash_out_err_and_no_raise_error(tmp_path: Path) -> None:
    script = script_of(
        "%%bash --out out --err err\necho to-out\necho to-err >&2",
        "print(repr(out), repr(err))",
        "%%bash --no-raise-error\nexit 3",
        "print('went on')",
    )
    done = run(script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["'to-out\\n' 'to-err\\n'", "went on"]


def test_bash_flag_values_must_be_names() -> None:
    with pytest.raises(ConversionError, match="--out needs a variable name"):
        script_of("%%bash --out 'x;import os'\necho hi")


def test_capture_holds_the_text(tmp_path: Path) -> None:
    script = script_of(
        "%%capture cap\nprint('hello from the cell')\ndisplay('a display')",
        "print('captured:', cap.stdout.strip().upper(), cap.outputs)\ncap.show()",
    )
    done = run(script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "captured: HELLO FROM THE CELL ['a display']",
        "hello from the cell",
        "a display",
    ]


@pytest.mark.parametrize("arg", ["print;open('x','w');x", "1x", "a b", "class"])
def test_capture_argument_must_be_an_identifier(arg: str) -> None:
    with pytest.raises(ConversionError, match="is not a variable name"):
        script_of(f"%%capture {arg}\nprint(1)")


def test_colab_idioms(tmp_path: Path) -> None:
    script = script_of(
        "%tensorflow_version 2.x",
        "try:\n  %tensorflow_version 2.x\nexcept Exception:\n  pass",
        "IN_COLAB = 'google.colab' in str(get_ipython())\nprint('colab:', IN_COLAB)",
        "print('ipython:', get_ipython())",
    )
    assert any("%tensorflow_version" in n for n in script.notes)
    done = run(script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["colab: False", "ipython: None"]


def test_ipython_shell_use_is_refused() -> None:
    with pytest.raises(ConversionError, match="IPython's shell"):
        script_of("get_ipython().events.register('post_run_cell', print)")


def test_every_refusal_in_one_run() -> None:
    with pytest.raises(ConversionErrors) as info:
        script_of("x = 1", "%store x", "print('ok')", "%%bigquery df\nSELECT 1", "def (:")
    lines = str(info.value).splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "cell 2, line 1",
        "cell 4, line 1",
        "cell 5, line 1",
    ]
    assert all("Fix:" in line for line in lines)


def test_no_run_cell_says_every_code_cell_is_used(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "plain.ipynb", "import os", "print(os.sep)")
    plan = plan_for(nb)
    assert any("no %%tfc_run cell: the job is every code cell" in w for w in plan.warnings)


def test_any_tensorflow_satisfies_tensorflow(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "tf.ipynb", "%pip install tensorflow\nimport tensorflow as tf")
    LocalBackend(store_for(tmp_path / "home")).check(plan_for(nb).spec)
    pinned = write_notebook(tmp_path / "old.ipynb", "%pip install tensorflow==1.15.0")
    with pytest.raises(BackendError) as info:
        LocalBackend(store_for(tmp_path / "home")).check(plan_for(pinned).spec)
    assert "tensorflow==1.15.0" in str(info.value) and "two in one environment" in str(info.value)
    assert "%pip install" not in str(info.value)


def test_url_requirements_are_checked_by_name(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "url.ipynb",
        "!pip install 'pytest @ git+https://github.com/pytest-dev/pytest'\n"
        "!pip install git+https://github.com/pytest-dev/pytest.git#egg=pytest\n"
        "!pip install git+https://github.com/org/anonymous.git",
    )
    plan = plan_for(nb)
    LocalBackend(store_for(tmp_path / "home")).check(plan.spec)  # pytest is installed here
    assert any("cannot check git+https://github.com/org/anonymous.git" in w for w in plan.warnings)


@pytest.mark.parametrize(
    "code",
    [
        "import tensorflow.compat.v1 as tf1\nconfig = tf1.estimator.RunConfig()",
        "import tensorflow as tf\nconfig = tf.compat.v1.estimator.RunConfig()",
        "from tensorflow import estimator\nconfig = estimator.RunConfig()",
    ],
)
def test_estimator_through_aliases(tmp_path: Path, code: str) -> None:
    nb = write_notebook(tmp_path / "est.ipynb", f"%%tfc_run --dry-run --backend docker\n{code}")
    assert plan_for(nb).spec.decided.estimator


def test_unattended_code_is_warned_about(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "colab.ipynb",
        "from google.colab import drive\ndrive.mount('/content/drive')",
        "name = input('Your name? ')",
    )
    warnings = " ".join(plan_for(nb).warnings)
    assert "google.colab at cell 1, line 1 exists only in Colab" in warnings
    assert "input() at cell 2, line 1 waits for a person" in warnings


def test_a_notebook_in_another_language_is_refused(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "julia-1.9", "language": "julia", "display_name": "Julia"}
    nb.cells.append(nbformat.v4.new_code_cell("println(1 + 1)"))
    path = tmp_path / "jl.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(CaptureError, match="is a julia notebook"):
        select_cells(read_notebook(path), path=path, how="test")


@pytest.mark.parametrize("language", ["python", "Python 3", "py", "ipython3", ""])
def test_a_python_notebook_is_taken_whatever_it_calls_python(tmp_path: Path, language: str) -> None:
    """Python named in any of these ways (``py``, its files' extension, too) is Python: none
    is refused as another language."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": language, "display_name": "P"}
    nb.cells.append(nbformat.v4.new_code_cell("print(1 + 1)"))
    path = tmp_path / "py.ipynb"
    nbformat.write(nb, path)
    assert [c.source for c in select_cells(read_notebook(path), path=path, how="t").cells] == [
        "print(1 + 1)"
    ]


def test_notebook_name_with_a_newline_stays_a_comment() -> None:
    script = convert([Cell(1, "x = 1")], notebook="evil\nimport os; os.system('id')\n.ipynb")
    assert script.text.splitlines()[0].startswith("# Generated by tfc_jupyter from evil import os")
    assert "\nimport os" not in script.text
    assert textwrap.dedent(script.text).count("\n") >= 2
