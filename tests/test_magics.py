"""The magics in a real IPython shell: load, dry run, help, config, machines, bad input."""

from __future__ import annotations

import collections
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from tfc_jupyter.config import KEYS
from tfc_jupyter.job import catalog, options
from tfc_jupyter.job.spec import Strategy
from tfc_jupyter.notebook.convert import RULES

pytestmark = pytest.mark.usefixtures("tfc_env")

RUN_LINE = "--workers 1 --dry-run"
RUN_BODY = "result = build()\nprint(json.dumps(result))"  # train.ipynb's cell 9


@pytest.fixture(scope="module")
def ip() -> Iterator[Any]:
    """The test IPython shell with the extension loaded."""
    from IPython.testing import globalipapp

    globalipapp.start_ipython()  # None when another module started it: the same shell
    shell = globalipapp.get_ipython()
    assert shell is not None
    shell.run_line_magic("load_ext", "tfc_jupyter")
    yield shell


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch, train_nb: Path) -> Path:
    """The kernel's notebook is train.ipynb."""
    monkeypatch.setenv("JPY_SESSION_NAME", str(train_nb))
    return train_nb


def _dry_run(ip: Any, line: str, body: str = RUN_BODY) -> tuple[str, str]:
    """(text/plain, text/html) of a %%tfc_run dry run."""
    with capture_output() as cap:
        ip.run_cell_magic("tfc_run", line, body)
    (shown,) = [o.data for o in cap.outputs if "text/plain" in o.data]
    return shown["text/plain"], shown["text/html"]


def _usage_error(ip: Any, line: str, body: str = RUN_BODY) -> str:
    with capture_output(), pytest.raises(UsageError) as info:
        ip.run_cell_magic("tfc_run", line, body)
    text = str(info.value)
    assert text.strip() and "\n" not in text, text
    return text


# ---------------------------------------------------------------- loading
def test_load_ext_imports_nothing_heavy() -> None:
    code = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "tfc_jupyter")
heavy = ("tensorflow", "google.cloud.aiplatform", "vertexai", "docker", "nbconvert")
print(json.dumps({
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in heavy
                     or m.startswith("google.cloud.aiplatform")),
    "cell": sorted(ip.magics_manager.magics["cell"]),
    "line": sorted(ip.magics_manager.magics["line"]),
}))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    assert "tfc_run" in result["cell"]
    assert {"tfc_config", "tfc_machines"} <= set(result["line"])


def test_load_ext_imports_only_what_registering_the_magics_needs() -> None:
    """``%load_ext tfc_jupyter`` imports the magics' module and what it stands on, nothing a
    cell without ``%%tfc_run`` does not need: no option table, planner, runtime or results
    (each is imported by the magic that uses it; ``%%tfc_run?`` builds its help when asked)."""
    code = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
before = set(sys.modules)
ip.run_line_magic("load_ext", "tfc_jupyter")
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith("tfc"))))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [
        "tfc_jupyter",
        "tfc_jupyter.errors",
        "tfc_jupyter.events",
        "tfc_jupyter.magics",
        "tfc_jupyter.notebook",
        "tfc_jupyter.notebook.executed",
    ]


# ---------------------------------------------------------------- dry run
def test_dry_run_shows_the_whole_plan(ip: Any, session: Path) -> None:
    text, html = _dry_run(ip, RUN_LINE)
    assert "Plan for 'train.ipynb' (this kernel's notebook, as saved)" in text
    assert "cells: 2, 3, 7, 8, 9  (skipped by tag: 4, 6)" in text
    assert "requirements: tensorflow-datasets>=4.9, pandas==2.2.2" in text
    assert "strategy: multi_worker_mirrored (auto: " in text
    assert "pool 0 chief x1: 1 process on this machine" in text  # no cloud machine here
    assert "pool 1 worker x1: 1 process on this machine" in text and "image:" not in text
    assert "cost: nothing billed (it runs on this machine)" in text  # a local job: no price
    script = text.split("--- script.py ---")[1].split("--- Processes on this machine ---")[0]
    assert "_tfc.system('echo data > data.txt')" in script and "get_ipython" not in script
    launch = text.split("--- Processes on this machine ---", 1)[1]
    assert "TF_CONFIG: chief 0 of chief" in launch and "TF_CONFIG: worker 0 of" in launch
    # the notebook view: the script and the launch are collapsible
    assert "<details><summary>script.py" in html and "Processes on this machine</summary>" in html
    assert ip.user_ns["_tfc_plan"].spec.worker_count == 1


def test_dry_run_with_tpu_and_gpus(ip: Any, session: Path) -> None:
    text, _ = _dry_run(ip, "--tpu v5e-4 --dry-run --backend vertex --project my-proj-1")
    assert "strategy: tpu (auto: " in text and "ct5lp-hightpu-4t" in text
    text, _ = _dry_run(ip, "--gpus 4 --gpu-type V100 --dry-run")
    assert "strategy: mirrored (auto: " in text and "1 process on this machine, 4 GPUs each" in text


def test_unsaved_edits_are_reported(ip: Any, session: Path) -> None:
    text, html = _dry_run(ip, RUN_LINE, "result = build()\nprint('changed since saved')")
    assert "does not hold the %%tfc_run cell as you ran it" in text
    assert "changed since saved" in text
    assert "&#9888;" in html


def test_stale_session_falls_back_to_history(
    ip: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "renamed-away.ipynb"))
    ip.run_cell("history_value = 40", store_history=True)
    ip.run_cell("%%writefile /dev/null\nnot python", store_history=True)
    with capture_output() as cap:
        ip.run_cell("%%tfc_run --dry-run\nprint(history_value + 2)", store_history=True)
    (shown,) = [o.data["text/plain"] for o in cap.outputs if "text/plain" in o.data]
    found = "(this kernel's input history (no notebook file found))"
    assert f"Plan for 'kernel history' {found}" in shown
    assert "renamed-away.ipynb" in shown and "--notebook PATH" in shown
    script = shown.split("--- script.py ---")[1].split("--- Processes on this machine ---")[0]
    assert "history_value = 40" in script and "_tfc.writefile('/dev/null'" in script
    assert script.rstrip().endswith("print(history_value + 2)")
    assert "get_ipython" not in script


def test_explicit_notebook_flag(ip: Any, fixtures_dir: Path) -> None:
    text, _ = _dry_run(ip, f"--notebook {fixtures_dir / 'v3.ipynb'} --dry-run", "print(value)")
    assert "Plan for 'v3.ipynb' (the notebook --notebook names)" in text
    assert "value = 41 + 1" in text


@pytest.mark.parametrize(
    ("line", "fix"),
    [
        ("--gpus 3 --dry-run", "1, 2, 4"),
        ("--workers 1 --strategy one_device --dry-run", "multi_worker_mirrored"),
        ("--tpu --workers 2 --dry-run", "drop --workers"),
        ("--machine T4_1 --dry-run", "did you mean T4_1X?"),
        ("--gpus many --dry-run", "gpus"),
        ("--label Bad=1 --backend vertex --dry-run", "lowercase"),
        ("--notebook /nonexistent/x.ipynb --dry-run", "--notebook"),
        ("--requirements nowhere.txt --dry-run", "check the path"),
        ("--frobnicate --dry-run", "unrecognized"),
    ],
)
def test_mistakes_are_one_line_usage_errors(ip: Any, session: Path, line: str, fix: str) -> None:
    assert fix in _usage_error(ip, line)


def test_conversion_refusal_through_the_magic(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _usage_error(ip, f"--notebook {FIXTURES / 'train.ipynb'} --dry-run", "%store x")
    # an unsaved cell stands in for the closest saved %%tfc_run cell: its body starts on line 2
    assert re.match(r"cell \d+, line 2: the magic %store", text) and "tfc-skip" in text


def test_inside_a_job_the_cell_is_plain_code(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFC_REMOTE", "1")
    ip.run_cell_magic("tfc_run", "--gpus 99 --no-such-flag", "remote_value = 41 + 1")
    assert ip.user_ns["remote_value"] == 42


# ---------------------------------------------------------------- help, config, machines
def test_help_lists_flags_and_rules(ip: Any) -> None:
    with capture_output() as cap:
        ip.run_cell("%%tfc_run?")
    text = cap.stdout  # the test shell's pager prints
    for f in options.FIELDS:
        assert f.option in text, f.option
    for what, effect in RULES:
        assert what in text and effect in text
    assert "tfc-skip" in text and "--dry-run" in text


def test_tfc_config_shows_values_and_sources(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFC_PROJECT", "env-proj-1")
    ip.config.TfcConfig.region = "europe-west4"
    try:
        with capture_output() as cap:
            ip.run_line_magic("tfc_config", "")
    finally:
        del ip.config.TfcConfig["region"]
    rows = {line.split()[0]: line for line in cap.stdout.splitlines()[1:]}
    assert list(rows) == list(KEYS)
    assert rows["project"].split() == ["project", "env-proj-1", "env", "TFC_PROJECT"]
    assert "europe-west4" in rows["region"] and "ipython_config" in rows["region"]
    assert rows["backend"].split()[-1] == "default"


def test_tfc_machines_lists_the_catalog(ip: Any) -> None:
    with capture_output() as cap:
        ip.run_line_magic("tfc_machines", "")
    names = {line.split()[0] for line in cap.stdout.splitlines()[1:-1]}
    assert names == {m.name for m in catalog.catalog_rows()}
    assert {"CPU", "T4_1X", "V100_8X", "A100_80GB_1X", "H100_8X", "TPU", "TPU_V5E_4"} <= names
    assert "ct5lp-hightpu-4t" in cap.stdout and "TPU 2x2" in cap.stdout
    h200 = next(line for line in cap.stdout.splitlines() if line.startswith("H200_8X "))
    assert h200.split()[-1] == "-" and "no verified list price" in cap.stdout.splitlines()[-1]


# ---------------------------------------------------------------- every argument string
def test_unbalanced_quotes_are_a_usage_error(ip: Any, session: Path) -> None:
    assert _outcome(ip, '--dry-run --name "unclosed') == "error"


def _outcome(ip: Any, line: str) -> str:
    """'plan' or 'error'; any other exception fails the test."""
    with capture_output() as cap:
        try:
            ip.run_cell_magic("tfc_run", line, RUN_BODY)
        except UsageError as exc:
            text = str(exc)
            lines = text.split("\n")  # a notebook's refusals: one line each, naming the cell
            assert text.strip() and (
                len(lines) == 1 or all(line.startswith("cell ") for line in lines)
            ), repr(text)
            return "error"
    assert any("Plan for" in o.data.get("text/plain", "") for o in cap.outputs)
    return "plan"


_LINE_TEXT = st.text(
    alphabet=st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)),
    max_size=80,
)
_MACHINES = st.sampled_from(
    [*catalog.PRESETS, "n1-standard-8", "a2-highgpu-2g", "cloud-tpu", "V100_2X", "T4_8X", "x"]
)
_FLAGS: dict[str, st.SearchStrategy[str] | None] = {
    "--tpu": st.sampled_from(["", "v2-8", "v3-8", "v5e-1", "v5e-4", "v5e-8", "v4-32"]),
    "--gpus": st.one_of(st.integers(-1, 16).map(str), st.sampled_from(["two", "1.5", ""])),
    "--gpu-type": st.sampled_from([*catalog.GPU_TYPES, "t4", "nvidia-tesla-v100", "X"]),
    "--machine": _MACHINES,
    "--workers": st.integers(-1, 300).map(str),
    "--worker-machine": _MACHINES,
    "--strategy": st.sampled_from([*(s.value for s in Strategy), "MirroredStrategy", "ps"]),
    "--backend": st.sampled_from(["local", "docker", "vertex", "k8s"]),
    "--requirements": st.sampled_from(
        [
            str(FIXTURES / "requirements.txt"),
            "requirements.txt",
            "missing.txt",
            str(FIXTURES / "train.ipynb"),
            str(FIXTURES),
        ]
    ),
    "--notebook": st.sampled_from(
        [
            str(FIXTURES / "train.ipynb"),
            str(FIXTURES / "v3.ipynb"),
            str(FIXTURES / "no_run_cell.ipynb"),
            "missing.ipynb",
            str(FIXTURES),
            str(FIXTURES / "requirements.txt"),
        ]
    ),
    "--name": _LINE_TEXT,
    "--label": st.one_of(st.sampled_from(["team=ml", "Team=ml", "novalue", "=x"]), _LINE_TEXT),
    "--args": _LINE_TEXT,
    "--service-account": st.sampled_from(
        ["trainer@my-proj-1.iam.gserviceaccount.com", "me@gmail.com", ""]
    ),
    "--region": st.sampled_from(["us-central1", "europe-west4", "mars", ""]),
    "--project": st.sampled_from(["my-proj-1", "My Project", "x", ""]),
    "--image": _LINE_TEXT,
    "--parent-image": _LINE_TEXT,
    "--build-bucket": _LINE_TEXT,
    "--timeout": st.sampled_from(["90m", "2h", "0", "31d", "soon", "1e9", "-1"]),
    "--base-output-dir": _LINE_TEXT,
    "--spot": None,
}


@st.composite
def _flag_lines(draw: st.DrawFn) -> str:
    words = ["--dry-run"]  # first, so that no string can launch a job
    for flag in draw(st.lists(st.sampled_from(sorted(_FLAGS)), max_size=6)):
        values = _FLAGS[flag]
        words.append(flag)
        if values is not None:
            value = draw(values)
            words.append(shlex.quote(value) if draw(st.booleans()) else value)
    return " ".join(words)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=_LINE_TEXT)
def test_random_argument_strings(ip: Any, session: Path, text: str) -> None:
    _outcome(ip, f"--dry-run {text}")


def test_combinations_of_real_flags(ip: Any, session: Path) -> None:
    seen: collections.Counter[str] = collections.Counter()

    @settings(max_examples=200, deadline=None)
    @given(line=_flag_lines())
    def check(line: str) -> None:
        seen[_outcome(ip, line)] += 1

    check()
    assert seen["plan"] > 0 and seen["error"] > 0, seen


# ---------------------------------------------------------------- what a running job shows
SAME = (
    "import sys, tfc_runtime\n"
    "print('I0000 00:00:1795467289.817563       1 port.cc:153] oneDNN custom operations are on.')\n"
    "print('WARNING: All log messages before absl::InitializeLog() is called are written to "
    "STDERR', file=sys.stderr)\n"
    "print('epoch 1 loss 0.5', flush=True)\n"
    "print('I am', 'chief' if tfc_runtime.is_chief() else 'the worker', flush=True)\n"
)


def _run_job_cell(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, body: str):  # type: ignore[no-untyped-def]
    nb = tmp_path / "job.ipynb"
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(f"%%tfc_run {line}\n{body}")]
    nbformat.write(notebook, nb)
    monkeypatch.setenv("JPY_SESSION_NAME", str(nb))
    with capture_output() as cap:
        result = ip.run_cell(f"%%tfc_run {line}\n{body}")
    return result, cap.stdout


@pytest.mark.slow
def test_the_cell_shows_what_the_code_printed_once(
    ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TensorFlow's C++ chatter and the runtime's start-up line are not shown; a line both
    replicas print is shown once, naming both; each replica's own lines as they are."""
    result, out = _run_job_cell(ip, tmp_path, monkeypatch, "--workers 1 --strategy none", SAME)
    assert result.error_in_exec is None, out
    lines = out.splitlines()
    assert "[chief, worker-0] epoch 1 loss 0.5" in lines, out
    assert "[chief] I am chief" in lines and "[worker-0] I am the worker" in lines, out
    assert "oneDNN" not in out and "absl::InitializeLog" not in out, out
    assert "[tfc_runtime] task" not in out, out
    result, out = _run_job_cell(
        ip, tmp_path, monkeypatch, "--workers 1 --strategy none --verbose", SAME
    )
    assert "oneDNN" in out and "[worker-0] epoch 1 loss 0.5" in out, out


@pytest.mark.slow
def test_a_failed_job_is_shown_once_and_is_not_a_usage_error(
    ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfc_jupyter.magics import JobFailed

    body = "import json\nvalue = json.loads('{bad')"
    result, out = _run_job_cell(ip, tmp_path, monkeypatch, "--strategy none", body)
    assert isinstance(result.error_in_exec, JobFailed), out  # the cell ends in error
    rendered = "\n".join(result.error_in_exec._render_traceback_())
    assert (
        "failed\x1b[0m: chief exited with status 1 at cell 1, line 3: JSONDecodeError" in rendered
    )
    assert "UsageError" not in out and "[tfc_runtime] job failed" not in out, out
    # the job's own traceback (its last lines), then the one line: not six times, as before
    assert out.count("Expecting property name") == 2, out
    assert out.splitlines()[-2].startswith("\x1b[31mJob "), out


def test_line_magic_runs_a_script_with_its_arguments(
    ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``%tfc_run train.py [flags] -- args``: the script runs as itself, and follows in the cell."""
    (tmp_path / "train.py").write_text("import sys\nprint('ARGS', sys.argv[1:])\n")
    monkeypatch.chdir(tmp_path)
    with capture_output() as cap:
        ip.run_line_magic("tfc_run", "train.py --name from-line -- --epochs 3 'a b'")
    assert "[chief] ARGS ['--epochs', '3', 'a b']" in cap.stdout
    job = ip.user_ns["_tfc_job"]
    assert job.record().name == "from-line" and job.state.value == "succeeded"
    with pytest.raises(UsageError, match=r"names the file to run first. Fix:"):
        ip.run_line_magic("tfc_run", "--workers 1")
    with pytest.raises(UsageError, match=r"entry point 'nope.py' not found. Fix:"):
        ip.run_line_magic("tfc_run", "nope.py")


def test_an_interrupt_stops_following_never_the_job(
    ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JupyterLab's Restart Kernel interrupts the kernel first: the cell stops following, and
    the job goes on (a real SIGINT to this process while the cell follows)."""
    import os
    import signal
    import threading

    from jobutil import wait_state, write_notebook

    from tfc_jupyter.store.records import JobState

    body = "print('started', flush=True)\ntime.sleep(120)"
    nb = write_notebook(tmp_path / "slow.ipynb", "import time", f"%%tfc_run\n{body}")
    monkeypatch.setenv("JPY_SESSION_NAME", str(nb))
    timer = threading.Timer(4, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with capture_output() as cap:
            ip.run_cell_magic("tfc_run", "", body)
    finally:
        timer.cancel()
    job = ip.user_ns["_tfc_job"]
    try:
        assert f"Stopped following {job.id}; the job goes on." in cap.stdout
        assert wait_state(job, {JobState.RUNNING}, timeout=30).state is JobState.RUNNING
    finally:
        job.cancel()
