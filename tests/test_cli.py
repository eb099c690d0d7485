"""``tfc-jupyter plan|machines|config``: the same core as the magic, for terminals and CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfc_jupyter import cli
from tfc_jupyter.config import KEYS
from tfc_jupyter.job import catalog

pytestmark = pytest.mark.usefixtures("tfc_env")


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse's own exits
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    code, out, err = _main(capsys, "plan", *argv, "--json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_plan_json_with_workers(capsys: pytest.CaptureFixture[str], train_nb: Path) -> None:
    plan = _plan_json(capsys, str(train_nb), "--workers", "1")
    # the first %%tfc_run cell (5) says --gpus 2; the command line adds a worker
    assert plan["cells"] == [2, 3, 5] and plan["skipped_cells"] == [4]
    assert plan["found_by"] == "command line"
    assert plan["strategy"] == "multi_worker_mirrored"
    spec = plan["spec"]
    assert isinstance(spec, dict)
    assert spec["worker_count"] == 1
    assert spec["chief"]["accelerator_count"] == 2 == spec["worker"]["accelerator_count"]
    assert catalog.lookup("T4_2X").price_per_hour  # Vertex AI's price of it (derived) ...
    assert plan["prices"] == [] and not plan["cost_is_floor"]  # ... but this job bills nothing
    assert plan["requirements"] == ["tensorflow-datasets>=4.9", "pandas==2.2.2"]
    assert any("3 %%tfc_run cells" in w for w in plan["warnings"])  # type: ignore[union-attr]
    request = plan["request"]  # the processes a local launch starts
    assert isinstance(request, dict) and plan["request_title"] == "Processes on this machine"
    assert [r["name"] for r in request["replicas"]] == ["chief", "worker-0"]


def test_flags_override_the_cells_own_line(
    capsys: pytest.CaptureFixture[str], train_nb: Path
) -> None:
    own = _plan_json(capsys, str(train_nb))
    assert own["spec"]["chief"]["accelerator_count"] == 2  # type: ignore[index]
    assert own["strategy"] == "mirrored"
    overridden = _plan_json(capsys, str(train_nb), "--gpus", "1", "--label", "team=ml")
    assert overridden["spec"]["chief"]["accelerator_count"] == 1  # type: ignore[index]
    assert overridden["strategy"] == "none"  # one GPU: no strategy, as in Jupyter
    assert overridden["spec"]["labels"] == {"team": "ml"}  # type: ignore[index]


def test_cell_option(capsys: pytest.CaptureFixture[str], train_nb: Path) -> None:
    plan = _plan_json(capsys, str(train_nb), "--cell", "9", "--workers", "3")
    assert plan["cells"] == [2, 3, 7, 8, 9]
    assert plan["spec"]["worker_count"] == 3  # type: ignore[index]
    tpu = _plan_json(capsys, str(train_nb), "--cell", "11")
    assert tpu["strategy"] == "tpu" and 10 in tpu["cells"]  # type: ignore[operator]


def test_text_plan(capsys: pytest.CaptureFixture[str], train_nb: Path) -> None:
    code, out, _ = _main(capsys, "plan", str(train_nb), "--cell", "9")
    assert code == 0
    assert "Plan for 'train.ipynb' (the file named on the command line)" in out
    assert "--- script.py ---" in out and "--- Processes on this machine ---" in out
    code, out, _ = _main(capsys, "plan", str(train_nb), "--cell", "9", "--no-script")
    assert code == 0 and "--- script.py ---" not in out


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "missing.ipynb"],
        ["plan", "{nb}", "--gpus", "3"],
        ["plan", "{nb}", "--gpus", "many"],
        ["plan", "{nb}", "--cell", "3"],
        ["plan", "{nb}", "--cell", "x"],
        ["plan", "{nb}", "--frobnicate"],
        ["plan", "{nb}", "--cell", "9", "--strategy", "mirrored"],
        ["plan", "{fixtures}/v3.ipynb", "--requirements", "nowhere.txt"],
        ["plan", "{fixtures}/requirements.txt"],
        ["plan"],
        ["frobnicate"],
        ["machines", "--extra"],
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], train_nb: Path, fixtures_dir: Path, argv: list[str]
) -> None:
    argv = [a.format(nb=train_nb, fixtures=fixtures_dir) for a in argv]
    code, out, err = _main(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tfc-jupyter") and "error:" in lines[0] and "Fix:" in lines[0]


def test_machines(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _main(capsys, "machines")
    assert code == 0
    for machine in catalog.catalog_rows():
        assert any(
            line.split()[:2] == [machine.name, machine.machine_type] for line in out.splitlines()
        )


def test_config(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "gcp-proj-1")
    code, out, _ = _main(capsys, "config")
    assert code == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert list(rows) == list(KEYS)
    assert rows["project"] == ["project", "gcp-proj-1", "env", "GOOGLE_CLOUD_PROJECT"]


def test_the_installed_command(train_nb: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfc_jupyter.cli",
            "plan",
            str(train_nb),
            "--workers",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["spec"]["worker_count"] == 1
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfc_jupyter.cli",
            "plan",
            str(train_nb),
            "--cell",
            "9",
            "--tpu",
            "v9",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "v3-8" in bad.stderr


def test_a_local_run_imports_nothing_heavy(tmp_path: Path) -> None:
    """`tfc-jupyter run` of a local job reads the notebook, plans, launches and follows it to
    the end without nbformat (and its JSON schema machinery), traitlets, importlib.metadata,
    packaging, detect-secrets, docker, aiplatform or TensorFlow: each costs every launch time
    (issue 27: a launch at the speed of Python); nor psutil, our Google modules (prices are
    Vertex AI's) or the runtime's modules a job imports (issue 48)."""
    nb = tmp_path / "notf.ipynb"
    cell = {"cell_type": "code", "metadata": {}, "source": 'print("FIRST")', "outputs": []}
    cell["execution_count"] = None
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [cell]}))
    code = f"""
import json, sys
from tfc_jupyter import cli
status = cli.main(["run", {str(nb)!r}])
heavy = ("nbformat", "jsonschema", "traitlets", "packaging", "detect_secrets", "docker",
         "tensorflow", "importlib.metadata", "google.cloud.aiplatform", "google.auth",
         "psutil", "tfc_jupyter.backends.vertex.google", "tfc_runtime.estimator",
         "tfc_runtime.resume")
print(json.dumps([status, sorted(m for m in sys.modules if m.startswith(heavy))]))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "[chief] FIRST" in proc.stdout and "succeeded" in proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [0, []]


@pytest.mark.item("a .py entry point runs as python train.py runs it", suite="bad input")
def test_a_py_entry_point_runs_as_python_runs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: ``__file__`` and ``sys.argv[0]`` were the job folder's ``script.py``, so a
    script that opens ``config.json`` beside itself failed, and argparse named script.py."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "config.json").write_text('{"lr": 0.5}')
    (folder / "train.py").write_text(
        "import argparse, json, os, sys\n"
        "here = os.path.dirname(os.path.abspath(__file__))\n"
        "print('CONFIG', json.load(open(os.path.join(here, 'config.json')))['lr'])\n"
        "print('FILE', os.path.basename(__file__), 'ARGV0', sys.argv[0], 'ARGS', sys.argv[1:])\n"
        "print('PATH0', sys.path[0] == here)\n"
        "print('PROG', argparse.ArgumentParser().prog)\n"
    )
    assert cli.main(["run", str(folder / "train.py"), "--", "--epochs", "2"]) == 0
    out = capsys.readouterr().out
    assert "[chief] CONFIG 0.5" in out
    assert "[chief] FILE train.py ARGV0 train.py ARGS ['--epochs', '2']" in out
    assert "[chief] PATH0 True" in out and "[chief] PROG train.py" in out


@pytest.mark.item("Ctrl-C at any moment of a run is one line", suite="bad input")
def test_a_handled_ctrl_c_keeps_the_command_s_status(tmp_path: Path) -> None:
    """CI, issue 39: a Ctrl-C that landed while a @dataclass was being made (an ``exec`` of a
    string) made CPython kill the command with SIGINT at exit (status -2), after it had printed
    its one line and chosen its status."""
    script = (
        "import os, signal, sys\n"
        "sys.argv = ['tfc-jupyter', 'jobs']\n"
        "from tfc_jupyter import cli\n"
        "signal.signal(signal.SIGINT, cli._on_interrupt)  # as main() sets it\n"
        "try:\n"
        "    exec('import os, signal; os.kill(os.getpid(), signal.SIGINT)')\n"
        "except KeyboardInterrupt:\n"
        "    print('caught', flush=True)\n"
        "cli.command()\n"
    )
    env = {**os.environ, "TFC_JUPYTER_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.stdout.splitlines()[0] == "caught", done.stderr
    assert done.returncode == 0, done.stderr


@pytest.mark.item("Ctrl-C at any moment of a run is one line", suite="bad input")
@pytest.mark.slow
@pytest.mark.parametrize("launch", ["module", "console script"])
@pytest.mark.parametrize("after_s", [0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0])
def test_ctrl_c_at_any_moment_of_a_run_is_one_line(
    tmp_path: Path, after_s: float, launch: str
) -> None:
    """Issue 39: Ctrl-C of `tfc-jupyter run` at 8 moments of its launch printed 6 tracebacks.
    At any moment once the command's module runs (not while Python itself starts) it is one
    line with status 130 (or 1: the followed job was cancelled); a job it launched is not left
    running or queued. CI: on a loaded machine the command's own imports take 200 ms, and an
    interrupt there was a traceback."""
    import os
    import signal
    import time

    from tfc_jupyter.jobs import store_for

    nb = tmp_path / "slow.ipynb"
    source = "%%tfc_run\nimport time\nprint('go', flush=True)\ntime.sleep(60)\n"
    cell = {"cell_type": "code", "metadata": {}, "source": source, "outputs": []}
    cell["execution_count"] = None
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [cell]}))
    exe = Path(sys.executable)
    argv = [str(exe.parent / "tfc-jupyter")] if launch == "console script" else [str(exe), "-m"]
    proc = subprocess.Popen(
        [*argv, *(["tfc_jupyter.cli"] if launch == "module" else []), "run", str(nb)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    time.sleep(after_s)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert proc.returncode in (0, 1, 130), err
    assert err.strip(), "silent"
    deadline = time.monotonic() + 30
    store = store_for()
    while time.monotonic() < deadline:
        left = [r for r in store.list(limit=None) if not r.state.is_terminal()]
        if not left:
            break
        time.sleep(0.3)
    assert left == [], [(r.id, r.state.value) for r in left]
