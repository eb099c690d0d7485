"""The runtime's command line as a typed contract: what the product writes, the runtime reads."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tfc_runtime.protocol import RuntimeArgs

from tfc_jupyter.job.replica import container_args
from tfc_jupyter.job.spec import JobSpec

_WORDS = st.text(
    st.characters(blacklist_characters="\x00"), min_size=1, max_size=12
) | st.sampled_from(
    ["--", "-", "--strategy", "--gpus", "-h", "--help", "--serve", "--source-map=x", "script.py"]
)


@given(
    script=_WORDS,
    strategy=st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True),
    source_map=st.none() | _WORDS,
    args=st.lists(_WORDS | st.just(""), max_size=5).map(tuple),
    legacy_keras=st.booleans(),
    serve=st.booleans(),
    gpus=st.none() | st.integers(-3, 64),
    hp_metric=st.none() | _WORDS,
    keras_tuner=st.booleans(),
)
def test_what_the_product_writes_the_runtime_reads(
    script: str,
    strategy: str,
    source_map: str | None,
    args: tuple[str, ...],
    legacy_keras: bool,
    serve: bool,
    gpus: int | None,
    hp_metric: str | None,
    keras_tuner: bool,
) -> None:
    """Any value, options among the script's arguments and names like options included."""
    sent = RuntimeArgs(
        script,
        strategy,
        source_map,
        args,
        legacy_keras,
        serve,
        gpus,
        hp_metric=hp_metric,
        keras_tuner=keras_tuner,
    )
    assert RuntimeArgs.from_argv(sent.to_argv()) == sent


def test_a_job_s_replicas_are_started_with_the_typed_line() -> None:
    spec = JobSpec(name="j", entry_args=("--epochs", "3"))
    line = container_args(spec)
    read = RuntimeArgs.from_argv(line)
    assert (read.script, read.source_map, read.args) == (
        "script.py",
        "script.map.json",
        ("--epochs", "3"),
    )
    assert read.strategy == spec.resolved_strategy().value


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--strat", "none", "s.py"], "unknown option '--strat'"),
        (["--serve=1", "s.py"], "unknown option '--serve=1'"),
        (["--strategy"], "--strategy needs a value"),
        (["--gpus", "two", "s.py"], "--gpus takes a number, not 'two'"),
        (["--strategy", "none"], "no script to run"),
        ([], "no script to run"),
    ],
)
def test_a_wrong_line_names_what_is_wrong(argv: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=re.escape(error)):
        RuntimeArgs.from_argv(argv)
