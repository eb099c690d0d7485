"""Vertex AI's scheduling and placement flags: each validated as Vertex AI validates it, shown in
the dry run, parsed by the real aiplatform client and accepted by the test server's validation;
refused off Vertex AI."""

from __future__ import annotations

import json
from typing import Any

import pytest
from vertex_validate import validate

from tfc_jupyter.config import Settings
from tfc_jupyter.errors import SpecError
from tfc_jupyter.job import options
from tfc_jupyter.notebook.capture import Selection
from tfc_jupyter.notebook.convert import Cell
from tfc_jupyter.planner.plan import make_plan

types = pytest.importorskip("google.cloud.aiplatform_v1.types")

RESERVATION = "projects/my-proj-1/zones/us-central1-a/reservations/team-a100"


def _request(settings: Settings, line: str) -> dict[str, Any]:
    """The dry run's create request for a one-cell notebook, checked by the real client's
    types and by the test server's validation (which must find nothing)."""
    sel = Selection(cells=[Cell(1, "print('hi')")], notebook=None, how="test")
    plan = make_plan(
        sel, options.parse_line(f"--backend vertex --project my-proj-1 {line}"), settings
    )
    body = plan.request()["body"]
    job = types.CustomJob.from_json(json.dumps(body))
    again = json.loads(types.CustomJob.to_json(job, use_integers_for_enums=False))
    assert validate(again) == [], validate(again)
    return dict(body)


def _refused(settings: Settings, line: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        options.to_spec(options.parse_line(line), settings)
    return info.value


def test_flex_start_waits_for_its_gpus(settings: Settings) -> None:
    body = _request(settings, "--gpus 1 --gpu-type A100 --workers 1 --flex-start 6h")
    assert body["jobSpec"]["scheduling"] == {
        "strategy": "FLEX_START",
        "maxWaitDuration": "21600s",
        "restartJobOnWorkerRestart": False,
    }
    # Without a value: Vertex AI's default wait; 0: no limit.
    assert (
        "maxWaitDuration"
        not in _request(settings, "--gpus 1 --gpu-type L4 --flex-start")["jobSpec"]["scheduling"]
    )
    body = _request(settings, "--gpus 8 --gpu-type H100 --flex-start 0")
    assert body["jobSpec"]["scheduling"]["maxWaitDuration"] == "0s"
    # H200 and B200 too, as Vertex AI's Dynamic Workload Scheduler guide lists them.
    for machine in ("H200_8X", "B200_8X", "H100_MEGA_8X", "H100_1X"):
        body = _request(settings, f"--machine {machine} --flex-start 2h")
        assert body["jobSpec"]["scheduling"]["strategy"] == "FLEX_START", machine


@pytest.mark.parametrize(
    ("line", "words", "field"),
    [
        ("--backend vertex --flex-start", "the chief have no GPU", "scheduling"),
        ("--backend vertex --gpus 1 --gpu-type T4 --flex-start", "NVIDIA_TESLA_T4", "scheduling"),
        (
            "--backend vertex --gpus 1 --gpu-type A100 --workers 1 --worker-machine "
            "A100_2X --flex-start",
            "the same machine in every pool",
            "scheduling",
        ),
        (
            "--backend vertex --gpus 1 --gpu-type L4 --flex-start --timeout 8d",
            "at most 7 days",
            "timeout",
        ),
        ("--backend vertex --gpus 1 --gpu-type L4 --flex-start --spot", "together", "scheduling"),
        ("--backend vertex --gpus 1 --gpu-type L4 --flex-start soon", "maximum wait", "max_wait_s"),
        ("--gpus 1 --gpu-type L4 --flex-start", "Vertex AI setting", "flex_start"),
        ("--backend docker --web-access", "Vertex AI setting", "web_access"),
        ("--boot-disk-size 200", "Vertex AI setting", "boot_disk_size"),
        ("--backend vertex --boot-disk-size 50", "out of range", "boot_disk_gb"),
        ("--backend vertex --boot-disk-type ssd", "not a boot disk type", "boot_disk_type"),
        ("--backend vertex --tpu v3-8 --boot-disk-size 200", "own boot disk", "boot_disk_gb"),
        ("--backend vertex --reservation mine", "not a reservation", "reservation"),
        ("--backend vertex --reservation any --spot", "capacity you hold", "reservation"),
        ("--backend vertex --persistent-resource P_1", "not a persistent", "persistent_resource"),
    ],
)
def test_impossible_settings_are_refused_with_the_fix(
    settings: Settings, line: str, words: str, field: str
) -> None:
    error = _refused(settings, line)
    assert words in str(error) and "Fix:" in str(error) and error.field == field, str(error)


def test_placement_restart_disk_and_web_access_reach_the_request(settings: Settings) -> None:
    # (a reservation and a persistent resource never go together: Vertex AI refuses it, and
    # test_vertex_rules.py shows the refusal)
    pooled = _request(settings, "--workers 2 --persistent-resource team-pool")
    assert pooled["jobSpec"]["persistentResourceId"] == "team-pool"
    body = _request(
        settings,
        f"--workers 2 --reservation {RESERVATION} --restart-on-worker-restart "
        "--boot-disk-type pd-standard --boot-disk-size 500 --web-access",
    )
    spec = body["jobSpec"]
    assert spec["scheduling"]["restartJobOnWorkerRestart"] is True
    assert spec["enableWebAccess"] is True
    for pool in spec["workerPoolSpecs"]:
        assert pool["machineSpec"]["reservationAffinity"] == {
            "reservationAffinityType": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": [RESERVATION],
        }
        assert pool["diskSpec"] == {"bootDiskType": "pd-standard", "bootDiskSizeGb": 500}
    body = _request(settings, "--reservation any")
    affinity = body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["reservationAffinity"]
    assert affinity == {"reservationAffinityType": "ANY_RESERVATION"}


def test_defaults_send_what_they_sent_before(settings: Settings) -> None:
    body = _request(settings, "")
    (pool,) = body["jobSpec"]["workerPoolSpecs"]
    assert pool["diskSpec"] == {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100}
    assert "reservationAffinity" not in pool["machineSpec"]
    assert not {"scheduling", "persistentResourceId", "enableWebAccess"} & set(body["jobSpec"])


def test_the_flags_read_back_from_their_line(settings: Settings) -> None:
    line = (
        "%%tfc_run --backend vertex --gpus 1 --gpu-type L4 --flex-start 2h "
        "--boot-disk-size 300 --web-access"
    )
    ns = options.JobOptions.from_line(line.removeprefix("%%tfc_run "))
    assert options.JobOptions.from_line(ns.to_line().removeprefix("%%tfc_run ")) == ns
    spec = options.to_spec(ns, settings)
    assert (spec.google.scheduling, spec.google.max_wait_s, spec.google.boot_disk_gb) == (
        "flex_start",
        7200,
        300,
    )
