"""The panel's and the form's fields, from the option table (issue 36): one list, one set of
words, and an option given a label appears on both."""

from __future__ import annotations

import json
from pathlib import Path

from tfc_jupyter.job.options import FIELDS
from tfc_jupyter.planner.fields import GROUPS, fields_json, form_fields

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
