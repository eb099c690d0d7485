"""A sweep trial's values (``tfc_runtime.params``): taken from the script's arguments as Vertex
AI passes them, put in place of the notebook's assignments, on the same lines."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from runtime_helpers import job_env, run_runtime
from tfc_runtime import params
from tfc_runtime.params import Target
from tfc_runtime.protocol import RuntimeArgs

idents = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
targets = st.builds(Target, idents, st.sampled_from(params.KINDS), st.integers(1, 10**6))


@given(st.lists(targets, max_size=5))
def test_the_targets_cross_the_command_line_as_they_are(ts: list[Target]) -> None:
    assert params.decode(params.encode(ts)) == tuple(ts)
    args = RuntimeArgs("script.py", params=tuple(ts), args=("--lr=1",))
    assert RuntimeArgs.from_argv(args.to_argv()) == args


@given(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(10**15), 10**15))
def test_a_value_written_as_an_argument_reads_back_the_same(value: float, whole: int) -> None:
    assert params.read(params.argument("lr", value).split("=", 1)[1], "float") == value
    assert params.read(str(whole), "int") == whole
    assert params.read(f"{whole}.0", "int") == whole  # Vertex AI may write 64 as 64.0


@given(
    st.lists(st.text(max_size=8).filter(lambda a: not a.startswith("--lr")), max_size=6),
    st.integers(0, 6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
)
def test_the_values_are_taken_and_the_script_keeps_its_own_arguments(
    own: list[str], at: int, value: float, joined: bool
) -> None:
    at = min(at, len(own))
    if at and own[at - 1].startswith("--") and "=" not in own[at - 1]:
        own[at - 1] += "=x"  # the script's own option would take our flag as its value
    mine = [f"--lr={value}"] if joined else ["--lr", str(value)]
    values, rest = params.take([*own[:at], *mine, *own[at:]], [Target("lr", "float", 3)])
    assert values == {"lr": value}
    assert rest == own


@pytest.mark.parametrize(
    ("args", "says"),
    [(["--lr=abc"], "--lr: could not convert"), (["--lr"], "--lr has no value")],
)
def test_a_value_that_does_not_read_is_named(args: list[str], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        params.take(args, [Target("lr", "float", 1)])


def test_the_assignment_is_replaced_on_its_own_line() -> None:
    source = "import math\nlr = 1e-3  # default\nunits: int = 64\nprint(lr, units)\n"
    tree = ast.parse(source)
    ts = [Target("lr", "float", 2), Target("units", "int", 3)]
    params.override(tree, ts, {"lr": 0.5, "units": 128})
    seen: dict[str, object] = {}
    exec(compile(tree, "s.py", "exec"), seen)
    assert (seen["lr"], seen["units"]) == (0.5, 128)
    assert [n.lineno for n in tree.body] == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="line 4 of the script does not assign lr"):
        params.override(ast.parse(source), [Target("lr", "float", 4)], {"lr": 1.0})


JOB = """\
import sys
lr = 1e-3  # the notebook's default
units = 64
act = 'relu'
print('values', repr(lr), repr(units), repr(act))
print('argv', sys.argv[1:])
print(undefined_name)
"""


def test_a_trial_runs_with_its_values_and_tracebacks_keep_their_lines(tmp_path: Path) -> None:
    """End to end: the values come as Vertex AI passes them (``--lr=0.25``, with the script's
    own arguments around them); the script sees only its own; the error's line is the cell's."""
    (tmp_path / "job.py").write_text(JOB)
    smap = {"version": 1, "notebook": "nb.ipynb", "lines": [[2, i] for i in range(1, 8)]}
    (tmp_path / "job.map.json").write_text(json.dumps(smap))
    ts = (Target("lr", "float", 2), Target("units", "int", 3), Target("act", "str", 4))
    args = RuntimeArgs(
        "job.py",
        strategy="none",
        source_map="job.map.json",
        params=ts,
        args=("--epochs", "3", "--lr=0.25", "--units", "128.0", "--act=tanh"),
    )
    env = job_env(TFC_JOB_DIR=str(tmp_path / "jobdir"))
    done = run_runtime(args.to_argv(), tmp_path, env)
    out = done.stdout.splitlines()
    assert "[tfc_runtime] trial values: lr=0.25, units=128, act='tanh'" in out
    assert "values 0.25 128 'tanh'" in out
    assert "argv ['--epochs', '3']" in out
    assert done.stderr.splitlines()[-1].startswith("[tfc_runtime] job failed at cell 2, line 7:")


def test_a_trial_value_that_does_not_read_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(JOB)
    args = RuntimeArgs("job.py", strategy="none", params=(Target("lr", "float", 2),))
    done = run_runtime([*args.to_argv(), "--lr=fast"], tmp_path, job_env())
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith("python -m tfc_runtime: error: --lr: ")


REPORTS = """\
from tfc_runtime.results import emit
for epoch in range(1, 121):
    emit({"event": "epoch", "fit": 0, "epoch": epoch,
          "metrics": {"loss": 1 / epoch, "val_score": epoch / 200}})
emit({"event": "epoch", "fit": 0, "epoch": 121, "metrics": {"val_score": float("nan")}})
"""


def test_a_tuning_trial_s_metric_is_written_as_vertex_ai_reads_it(tmp_path: Path) -> None:
    """``--hp-metric``: the chief writes the metric file cloudml-hypertune writes (one JSON
    object a line, values as strings, the last 100 kept), where Vertex AI says
    (``CLOUD_ML_HP_METRIC_FILE``), from the epochs the runtime reports; NaN is left out."""
    (tmp_path / "job.py").write_text(REPORTS)
    metrics = tmp_path / "hypertune" / "output.metrics"
    env = job_env(
        TFC_JOB_DIR=str(tmp_path), CLOUD_ML_HP_METRIC_FILE=str(metrics), CLOUD_ML_TRIAL_ID="4"
    )
    args = RuntimeArgs("job.py", strategy="none", hp_metric="val_score")
    done = run_runtime(args.to_argv(), tmp_path, env)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert len(lines) == 100
    assert {k for line in lines for k in line} == {"timestamp", "trial", "val_score", "global_step"}
    assert lines[-1]["val_score"] == "0.6" and lines[-1]["global_step"] == "120"
    assert lines[0]["global_step"] == "21" and {line["trial"] for line in lines} == {"4"}
    plain = RuntimeArgs("job.py", strategy="none")  # no --hp-metric: no file
    metrics.unlink()
    assert run_runtime(plain.to_argv(), tmp_path, env).returncode == 0
    assert not metrics.exists()
