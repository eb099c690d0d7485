"""The panel's and the form's fields, from the option table (issue 36): one list, one set of
words, and an option given a label appears on both."""

from __future__ import annotations

import json
from pathlib import Path

from tfc_jupyter.config import Settings
from tfc_jupyter.job.options import FIELDS
from tfc_jupyter.planner.fields import GROUPS, choices, fields_json, form_fields, sent

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


def test_the_panel_sends_a_field_by_the_rule_it_carries(settings: Settings) -> None:
    """A TPU host is the whole machine, and a GPU type goes only with GPUs: the rule is on the
    option table (``only_with``, ``only_without``), which the form's ``toOptions`` reads from
    /defaults and the panel's choices apply alike (it was the form's code alone)."""
    from tfc_jupyter.job.options import JobOptions
    from tfc_jupyter.panel.model import Choices

    by_name = {f.name: f for f in form_fields()}
    assert by_name["gpu_type"].only_with == ("gpus",)
    assert {n for n, f in by_name.items() if "tpu" in f.only_without} == {
        "machine",
        "gpus",
        "gpu_type",
    }
    tpu = Choices(tpu="v3-8", machine="T4_1X", gpus=1, gpu_type="T4", backend="vertex")
    ns = tpu.apply(JobOptions(), settings)
    assert (ns.tpu, ns.machine, ns.gpus or 0, ns.gpu_type) == ("v3-8", None, 0, None)
    assert "--gpus" not in ns.to_line() and "--machine" not in ns.to_line()
    no_gpus = Choices(gpu_type="A100", gpus=0).apply(JobOptions(), settings)
    assert no_gpus.gpu_type is None
    gpus = Choices(gpu_type="A100", gpus=2).apply(JobOptions(), settings)
    assert (gpus.gpu_type, gpus.gpus) == ("A100", 2)
    sent_values = sent({"gpus": 1, "gpu_type": "T4", "tpu": "v3-8"}, form_fields())
    assert sent_values == {"gpus": 0, "gpu_type": "", "tpu": "v3-8"}
