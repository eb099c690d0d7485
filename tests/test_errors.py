"""A fix as data (``tfc_jupyter.errors.Fix``): each surface words it in its own terms, the flags
for the magic and the CLI, the option table's labels for the panel and the form, and the jobs
API sends it as data the form applies."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jobutil import write_notebook

from tfc_jupyter import words
from tfc_jupyter.config import Settings
from tfc_jupyter.errors import Fix, SpecError, TfcError
from tfc_jupyter.job.options import FIELDS, JobOptions, OptionField
from tfc_jupyter.server.handlers import error_body
from tfc_jupyter.server.service import JobService
from tfc_jupyter.words import fix_in_ui, ui_words

LABELLED = [f for f in FIELDS if f.flag.label and f.flag.name is None]
VALUES = st.text(string.ascii_lowercase + string.digits + "-", min_size=1, max_size=12).filter(
    lambda v: not v.startswith("-")
)


@pytest.mark.parametrize("field", LABELLED, ids=lambda f: f.name)
def test_a_dropped_option_is_said_as_its_text_is_said(field: OptionField) -> None:
    """The data and the text of the same fix read the same in the UI, for every option with a
    control (the data path needs no regular expression)."""
    fix = Fix.drop(field.name)
    assert fix.in_flags() == f"drop {field.option}"
    assert fix_in_ui(fix) == ui_words(fix.in_flags())
    assert field.option not in fix_in_ui(fix)  # its label


@settings(max_examples=150, deadline=None)
@given(field=st.sampled_from([f for f in LABELLED if f.kind in ("text", "count")]), value=VALUES)
def test_a_set_option_is_said_as_its_text_is_said(field: OptionField, value: str) -> None:
    """The data is said right for any value; the text's reading guesses, and a value that is an
    English word ("--tpu instead") reads as prose there: hypothesis found it."""
    fix = Fix.set(field.name, value)
    assert fix.in_flags() == f"pass {field.option} {value}"
    assert fix_in_ui(fix) == f"set {field.flag.label} to {value}"
    if value not in words._WORDS:
        assert ui_words(fix.in_flags()) == fix_in_ui(fix)


@settings(max_examples=150, deadline=None)
@given(
    field=st.sampled_from([f for f in FIELDS if f.kind == "count" and f.flag.const is None]),
    value=st.integers(0, 10_000),
)
def test_the_flags_of_a_fix_read_back_as_its_data(field: OptionField, value: int) -> None:
    """What the magic's user types from a fix's words is what the form applies from its data
    (a sweep's counts start at 1: ``--trials 0`` is refused, so no fix sets it)."""
    assume(value > 0 or field.name not in ("trials", "parallel"))
    fix = Fix.set(field.name, value)
    line = fix.in_flags().removeprefix("pass ")
    assert JobOptions.from_line(line).value(fix.option) == (
        value or None if fix.option == "gpus" else value
    )


def test_an_option_with_no_control_keeps_its_flag() -> None:
    assert fix_in_ui(Fix.drop("include")) == "drop --include"
    assert fix_in_ui(Fix.give("ps", "N", verb="add")) == "add --ps N"


def test_an_error_with_fixes_says_them_everywhere(settings: Settings) -> None:
    with pytest.raises(SpecError) as caught:
        JobOptions.from_line("--tpu v3-8 --gpus 2").to_spec(settings)
    error = caught.value
    assert error.fixes == (Fix.drop("gpus"), Fix.drop("tpu"))
    assert str(error).endswith("Fix: drop --gpus, or drop --tpu")  # the words as before
    body = error.to_dict()
    assert body["ui_hint"] == "set GPUs per machine to none, or set TPU to none"
    assert [(f["action"], f["option"], f["value"]) for f in body["fixes"]] == [
        ("drop", "gpus", None),
        ("drop", "tpu", None),
    ]
    assert error.ui_text().endswith("Fix: set GPUs per machine to none, or set TPU to none")
    text = TfcError("no notebook", "pass --notebook PATH")
    assert (text.fixes, text.to_dict()["fixes"]) == ((), [])  # a hint in words stays words


def test_the_jobs_api_sends_the_fix_as_data(tmp_path: Path, settings: Settings) -> None:
    write_notebook(tmp_path / "nb.ipynb", "%%tfc_run\nprint('hi')")
    with pytest.raises(SpecError) as caught:
        JobService(tmp_path).create({"path": "nb.ipynb", "options": {"gpu_type": "L4"}})
    status, body = error_body(caught.value, 500)  # the server's one error mapping
    assert status == 400
    (fix,) = body["fixes"]
    assert (fix["action"], fix["option"], fix["value"]) == ("set", "gpus", None)
    assert (fix["text"], fix["ui_text"]) == ("add --gpus N", "set GPUs per machine")
    assert body["ui_hint"] == "set GPUs per machine"
