"""The panel's and the form's fields, from the option table (issue 36): one list, one set of
words, and an option given a label appears on both."""

from __future__ import annotations

import json
from pathlib import Path

from tfc_jupyter.job.options import FIELDS
from tfc_jupyter.planner.fields import GROUPS, choices, fields_json, form_fields

FIXTURE = Path(__file__).resolve().parents[1] / "labextension/src/__tests__/fields.json"


def test_every_labelled_option_is_a_field_once_in_its_section() -> None:
    made = form_fields()
    labelled = [f.name for f in FIELDS if f.flag.label]
    assert sorted(f.name for f in made) == sorted(labelled)
    assert len({f.label for f in made}) == len(made)  # no two fields called the same
    sections = [f.group for f in made]
    assert sections == sorted(sections, key=GROUPS.index)  # each section in one piece
    assert {"sweep", "trials", "parallel", "metric", "goal", "method"} <= {
        f.name for f in made if f.group == "Sweep"
    }


def test_the_form_s_jest_fixture_is_what_the_server_sends() -> None:
    """labextension/src/__tests__/fields.json is what GET /defaults sends (default machine
    CPU); regenerate it with the line below when the option table changes."""
    fresh = fields_json("CPU")
    assert json.loads(FIXTURE.read_text()) == json.loads(json.dumps(fresh)), (
        'python -c "import json; from tfc_jupyter.planner.fields import fields_json; '
        "open('labextension/src/__tests__/fields.json','w').write(json.dumps(fields_json("
        "'CPU'), indent=1, ensure_ascii=False)+'\\n')\""
    )


def test_each_choice_offers_values_with_labels() -> None:
    for field in fields_json():
        if field["control"] in ("choice", "suggest"):
            assert field["choices"], field["name"]
            assert all(isinstance(c["label"], str) and c["label"] for c in field["choices"])
        else:
            assert field["choices"] is None


def test_what_leaving_an_option_out_is_named_as_its_field_offers_it() -> None:
    """A refusal's fix in the UI's words ("set GPUs per machine to none") names a value the
    field offers, as the field words it (the list said "none" where the fix said "0")."""
    from tfc_jupyter import words
    from tfc_jupyter.job import options

    checked = 0
    for field in form_fields():
        (option,) = [f for f in options.FIELDS if f.name == field.name]
        if not field.neutral:
            continue
        assert words.DROPPED[option.option] == f"set {field.label} to {field.neutral}"
        if field.choices:
            labels = [label for _, label in choices(field.choices)]
            assert any(
                label == field.neutral or label.startswith(field.neutral + " ") for label in labels
            ), (field.name, field.neutral, labels)
        else:
            assert field.control == "count" and field.neutral.isdigit(), field
        checked += 1
    assert checked >= 6
