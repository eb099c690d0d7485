"""The sweep spec (``tfc_jupyter.sweep.spec``): every parameter reads back as written, and any
other text is one error naming the fix."""

from __future__ import annotations

import keyword
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfc_jupyter.errors import SpecError
from tfc_jupyter.sweep.spec import Param, default_goal, parse_param, sweep_spec

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n)
)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
scalars = st.one_of(
    st.integers(-(10**12), 10**12),
    finite,
    # any printable code point, quotes included (a control character is refused: its own test)
    st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=12),
    st.booleans(),
)


def _unique(values: list[object]) -> bool:
    """No two values alike: equal strings, or numbers equal as numbers (1, 1.0, True)."""
    return all(
        not any(
            (type(a) is type(b) or str not in (type(a), type(b))) and a == b for b in values[:i]
        )
        for i, a in enumerate(values)
    )


@st.composite
def params(draw: st.DrawFn) -> Param:
    name = draw(names)
    kind = draw(st.sampled_from(["uniform", "loguniform", "int", "choice"]))
    if kind == "choice":
        values = draw(st.lists(scalars, min_size=1, max_size=6).filter(_unique))
        return Param(name, "choice", choices=tuple(values))
    if kind == "int":
        low = draw(st.integers(-1000, 1000))
        step = draw(st.integers(1, 50))
        high = low + step * draw(st.integers(1, 40))
        return Param(name, "int", float(low), float(high), step)
    positive = kind == "loguniform"
    low = draw(st.floats(1e-300 if positive else -1e300, 1e300))
    high = draw(st.floats(low, 1e300).filter(lambda h: h > low))
    return Param(name, kind, low, high)


@given(params())
def test_each_parameter_reads_back_as_written(param: Param) -> None:
    assert parse_param(param.text()) == param


@given(st.text(max_size=60))
def test_any_other_text_is_one_line_naming_the_fix(text: str) -> None:
    try:
        param = parse_param(text)
    except SpecError as exc:
        message = str(exc)
        assert "\n" not in message and "Fix: " in message, message
    else:  # what did read is a parameter that writes back the same
        assert parse_param(param.text()) == param


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("lr", "has no values"),
        ("lr=", "has no values"),
        ("1lr=[1]", "is not a Python name"),
        ("class=[1]", "is not a Python name"),
        ("lr=loguniform(0, 1)", "a log scale starts above 0"),
        ("lr=uniform(1, 1)", "LOW must be below HIGH"),
        ("lr=uniform(0, inf)", "is not a number"),
        ("lr=uniform(0, 1e999)", "both finite"),
        ("units=int(1, 10, 4)", "HIGH is not LOW plus a number of STEPs"),
        ("units=int(1.5, 10)", "whole numbers"),
        ("units=[64, 64]", "lists 64 twice"),
        ("units=[]", "lists no values"),
        ("units=[x]", "'x' is not a number, string or boolean"),
        ("lr=normal(0, 1)", "unknown range 'normal'"),
        ("lr=uniform(low=0, high=1)", "is not a range or a list"),
        ("lr=__import__('os')", "unknown range"),
    ],
)
def test_a_wrong_parameter_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(SpecError, match="Fix: ") as caught:
        parse_param(text)
    assert says in str(caught.value)


def test_numbers_and_strings_that_look_alike_stay_apart() -> None:
    """``[1, 'a', True, '1']`` are four values: each keeps its type, as the notebook reads it."""
    param = parse_param("x=[1, 'a', False, '1']")
    assert [type(c) for c in param.choices] == [int, str, bool, str]
    assert param.value_kind == "any"
    assert parse_param("x=[1, 2.5]").value_kind == "float"
    assert parse_param("x=['a', 'b']").value_kind == "str"
    assert parse_param("x=int(1, 9, 2)").grid() == (1, 3, 5, 7, 9)


@pytest.mark.parametrize(
    ("metric", "goal"),
    [
        ("val_loss", "min"),
        ("loss", "min"),
        ("val_mean_absolute_error", "min"),
        ("val_accuracy", "max"),
        ("sparse_categorical_accuracy", "max"),
        ("auc", "max"),
        ("val_f1_score", "max"),
        ("val_mape", "min"),  # a percentage error, though "map" is a score
        ("mean_absolute_percentage_error", "min"),
        ("val_map", "max"),
        ("mAP_50", "max"),
        ("auc_1", "max"),
        ("top_k_categorical_accuracy", "max"),
        ("val_categoricalaccuracy", "max"),
        ("val_msle", "min"),
        ("kl_divergence", "min"),
        ("step_time", "min"),
        ("throughput", None),
        ("mapping_size", None),
    ],
)
def test_the_goal_follows_from_the_metric_s_name(metric: str, goal: str | None) -> None:
    assert default_goal(metric) == goal


def test_a_sweep_checks_its_parts_together() -> None:
    spec = sweep_spec(["lr=loguniform(1e-4,1e-1)", "units=[64,128,256]"], metric="val_accuracy")
    assert (spec.goal, spec.method, spec.trials, spec.parallel) == ("max", "bayes", 10, 1)
    assert spec.names == ("lr", "units")
    grid = sweep_spec(["units=[64,128,256]", "layers=int(1,2)"], method="grid")
    assert (grid.trials, grid.metric, grid.goal) == (6, "val_loss", "min")
    assert sweep_spec(["units=[1,2]"], trials=5, parallel=8).parallel == 5
    for kwargs, says in [
        ({"method": "grid"}, "a grid cannot list lr"),
        ({"metric": "throughput"}, "cannot tell whether 'throughput' should go up or down"),
        ({"goal": "up"}, "--goal 'up' is not min or max"),
        ({"method": "tpe"}, "--method 'tpe' is unknown"),
        ({"trials": 0}, "--trials 0 runs no trial"),
        ({"trials": -2}, "--trials -2 runs no trial"),
        ({"trials": 10**6}, "--trials 1000000 is over 10,000"),
        ({"parallel": 0}, "--parallel 0 runs no trial at once"),
        ({"parallel": -1}, "--parallel -1 runs no trial at once"),
        ({"parallel": 10**12}, "--parallel 1000000000000 is over 10,000"),
        ({"metric": "val loss"}, "is not a metric name"),
    ]:
        with pytest.raises(SpecError, match="Fix: ") as caught:
            sweep_spec(["lr=uniform(0,1)"], **kwargs)  # type: ignore[arg-type]
        assert says in str(caught.value), (kwargs, str(caught.value))
    with pytest.raises(SpecError, match="names 'lr' twice"):
        sweep_spec(["lr=[1]", "lr=[2]"])
    with pytest.raises(SpecError, match="more than the grid's 2 combinations"):
        sweep_spec(["units=[1,2]"], method="grid", trials=3)
    assert math.isclose(parse_param("lr=loguniform(1e-4, 0.1)").high or 0, 0.1)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        ("--trials 5", "--trials is"),
        ("--parallel 2 --metric val_acc", "--parallel, --metric are"),
        ("--goal max", "--goal is"),
        ("--method grid", "--method is"),
        ("--prune", "--prune is"),
    ],
)
def test_a_sweeps_flags_without_sweep_are_refused_with_the_fixes(
    tmp_path: Path, flags: str, named: str
) -> None:
    """They were ignored: one job ran where the user asked for trials."""
    from jobutil import plan_for, write_notebook

    from tfc_jupyter.errors import TfcError

    nb = write_notebook(tmp_path / "s.ipynb", "lr = 0.1", f"%%tfc_run {flags}\nprint(lr)")
    with pytest.raises(TfcError) as info:
        plan_for(nb)
    assert str(info.value).startswith(f"{named} for a sweep, and no --sweep is given. Fix: drop")
    assert "add --sweep NAME=SPACE" in str(info.value)
    assert [f.option for f in info.value.fixes][-1] == "sweep"


def test_a_control_character_in_a_swept_value_is_refused() -> None:
    """A NUL (or a line break) in a value passed the plan and stopped the sweep."""
    for text in ("act=['re\\x00lu', 'tanh']", "act=['a\\nb']"):
        with pytest.raises(SpecError, match="holds a control character"):
            parse_param(text)


def test_a_sweep_bigger_than_its_space_or_this_machine_is_warned(tmp_path: Path) -> None:
    import os

    from jobutil import plan_for, write_notebook

    cores = os.cpu_count() or 1
    nb = write_notebook(
        tmp_path / "s.ipynb",
        "units = 8",
        f"%%tfc_run --sweep units=[8,16] --trials 50 --parallel {cores + 3}\nprint(units)",
    )
    warnings = plan_for(nb).warnings
    assert any(w.startswith("the swept values make 2 combinations: 50 trials") for w in warnings)
    assert any(w.startswith(f"--parallel {cores + 3} runs") for w in warnings), warnings


@given(
    st.lists(
        st.one_of(st.integers(-3, 3), st.sampled_from([0.0, 1.0, 2.0, -1.0]), st.booleans()),
        min_size=2,
        max_size=5,
    )
)
def test_values_equal_as_numbers_are_refused_with_the_fix(values: list[object]) -> None:
    """``[1, 1.0, 2]``: Optuna records 1.0 (and True) as the 1 listed first, so a trial of
    1.0 ran 1 again and 1.0 never ran; a list with two values equal as numbers is refused."""
    text = f"x=[{', '.join(repr(v) for v in values)}]"
    equal = any(a == b for i, a in enumerate(values) for b in values[:i])
    if not equal:
        assert list(parse_param(text).choices) == values
        return
    with pytest.raises(SpecError) as caught:
        parse_param(text)
    said = str(caught.value)
    assert "\n" not in said and ("equal as numbers" in said or "twice" in said), said
    assert said.endswith("Fix: list each value once"), said


@pytest.mark.parametrize(
    ("flags", "says", "fixes"),
    [
        ("--trials 0", "--trials 0 runs no trial", ["drop --trials", "pass --trials N"]),
        ("--trials -3", "--trials -3 runs no trial", ["drop --trials", "pass --trials N"]),
        ("--trials 20000", "--trials 20000 is over 10,000", ["pass --trials 10000 or fewer"]),
        ("--parallel 0", "--parallel 0 runs no trial", ["drop --parallel", "pass --parallel N"]),
        ("--parallel -4", "--parallel -4 runs no trial", ["drop --parallel", "pass --parallel N"]),
        ("--parallel 99999", "--parallel 99999 is over 10,000", ["pass --parallel 2 or fewer"]),
        ("--goal up", "--goal 'up' is not min or max", ["pass --goal max", "pass --goal min"]),
        ("--method tpe", "--method 'tpe' is unknown", ["use --method bayes"]),
        ("--metric 'val loss'", "is not a metric name", ["pass --metric NAME"]),
        ("--method grid --sweep 'lr=uniform(0,1)'", "a grid cannot list lr",
         ["use --method random", "use --method bayes"]),
        ("--method grid --trials 3", "more than the grid's 2 combinations",
         ["pass --trials 2 or fewer"]),
    ],
)  # fmt: skip
def test_each_sweep_flag_s_bad_value_is_refused_with_its_fixes_as_data(
    tmp_path: Path, flags: str, says: str, fixes: list[str]
) -> None:
    """``--trials 0`` became the default (10 trials); each bad sweep flag is one line with its
    fixes as data (errors.Fix), which the form applies."""
    from jobutil import plan_for, write_notebook

    from tfc_jupyter.errors import TfcError

    run = f"%%tfc_run --sweep units=[8,16] {flags} --metric val_loss\nprint(units)"
    if "--metric" in flags:
        run = run.replace(" --metric val_loss", "")
    nb = write_notebook(tmp_path / "s.ipynb", "units = 8\nlr = 0.1", run)
    with pytest.raises(TfcError) as info:
        plan_for(nb)
    said = str(info.value)
    assert "\n" not in said and says in said, said
    texts = [f.in_flags() for f in info.value.fixes]
    assert all(any(t.startswith(f) for t in texts) for f in fixes), (texts, said)
    assert info.value.field in {f.option for f in info.value.fixes}


def test_trials_0_from_a_form_is_its_empty_box_and_from_python_a_refusal() -> None:
    """The launch form sends every count, 0 for an empty box: JSON's 0 is the default. A flag
    or a keyword (run(trials=0)) was typed: refused."""
    from tfc_jupyter.job.options import JobOptions

    assert JobOptions.from_json({"trials": 0, "sweep": ["units=[1,2]"]}).trials == 0
    for make in (lambda: JobOptions.of(trials=0), lambda: JobOptions.from_words(["--trials", "0"])):
        with pytest.raises(SpecError, match=r"--trials 0 runs no trial\. Fix: drop --trials"):
            make()
