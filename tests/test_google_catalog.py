"""The catalog as Google documents it (issue 35): each case failed before its fix.

Google's facts live in one place (:mod:`tfc_jupyter.job.vertex_rules` and the catalog's machine
list, each with its source and date); the test server's validator (``vertex_validate``) checks
requests by the same tables. Where the space is large (machine x GPU x count, env values,
names) the cases are generated, and every accepted request parses into the real
``aiplatform_v1`` types and passes the server's checks.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vertex_validate import container_env, validate

from tfc_jupyter.backends.vertex import prebuilt
from tfc_jupyter.backends.vertex import request as vertex_request
from tfc_jupyter.config import Settings
from tfc_jupyter.errors import SpecError
from tfc_jupyter.job import catalog, options, vertex_rules
from tfc_jupyter.job.google_target import GoogleTarget
from tfc_jupyter.job.spec import MAX_ENV, JobSpec
from tfc_jupyter.notebook.capture import Selection
from tfc_jupyter.notebook.convert import Cell
from tfc_jupyter.planner.plan import make_plan

types = pytest.importorskip("google.cloud.aiplatform_v1.types")

VERTEX = "--backend vertex --project my-proj-1"
IMAGE = "us-docker.pkg.dev/my-proj-1/tfc/notebook:1"
RESERVATION = "projects/my-proj-1/zones/us-central1-a/reservations/h100s"


def _plan(settings: Settings, line: str) -> Any:
    sel = Selection(cells=[Cell(1, "print('hi')")], notebook=None, how="test")
    return make_plan(sel, options.parse_line(line), settings)


def _sent(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as the server reads it: strictly parsed into the real types, then JSON again."""
    job = types.CustomJob.from_json(json.dumps(body))  # an unknown field or enum raises
    sent: dict[str, Any] = json.loads(types.CustomJob.to_json(job, use_integers_for_enums=False))
    return sent


def _accepted(settings: Settings, line: str) -> dict[str, Any]:
    """The request of ``line``: parsed into the real types and passing the server's checks."""
    body: dict[str, Any] = _plan(settings, f"{VERTEX} {line}").request()["body"]
    assert validate(_sent(body)) == [], line
    return body


def _refused(settings: Settings, line: str, words: str, field: str) -> str:
    with pytest.raises(SpecError) as info:
        _plan(settings, f"{VERTEX} {line}")
    text = str(info.value)
    assert words in text and "Fix: " in text and "\n" not in text, text
    assert info.value.field == field, info.value.field
    return text


# ---------------------------------------------------------------- the training machine list
@pytest.mark.parametrize(
    "machine",
    [
        "n2-standard-2",
        "n2-standard-96",
        "n2-standard-128",
        "n2-highmem-96",
        "n2-highmem-128",
        "n2-highcpu-2",
        "n2-highcpu-4",
        "n2-highcpu-8",
        "n2-highcpu-96",
    ],
)
def test_machines_vertex_ai_does_not_train_on_are_refused(settings: Settings, machine: str) -> None:
    """Compute Engine types Vertex AI's training list does not name (were accepted)."""
    _refused(
        settings, f"--machine {machine}", "not on Vertex AI's training machine list", "machine"
    )


@pytest.mark.parametrize(
    "machine",
    [
        "n4-standard-8",
        "n4-highmem-32",
        "n4-highcpu-80",
        "c2-standard-4",
        "c2-standard-60",
        "e2-standard-32",
        "e2-highmem-2",
        "e2-highmem-16",
        "e2-highcpu-16",
        "e2-highcpu-32",
        "m1-ultramem-40",
        "m1-megamem-96",
        "n1-highmem-2",
        "n1-highmem-4",
        "n1-highmem-32",
        "n1-highmem-64",
        "n1-highmem-96",
        "n1-highcpu-64",
        "n1-highcpu-96",
        "a2-megagpu-16g",
        "g4-standard-48",
        "g4-standard-384",
    ],
)
def test_machines_on_vertex_ais_training_list_are_taken(settings: Settings, machine: str) -> None:
    """Machines Vertex AI lists for training (were refused as unknown)."""
    body = _accepted(settings, f"--machine {machine}")
    spec = body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    assert spec["machineType"] == machine
    assert (spec.get("acceleratorType"), spec.get("acceleratorCount")) == (
        vertex_rules.BUILT_IN_GPUS.get(machine, (None, None))
    )


def test_rtx_pro_6000_runs_on_g4(settings: Settings) -> None:
    body = _accepted(settings, "--gpus 2 --gpu-type rtx-pro-6000")
    pool = body["jobSpec"]["workerPoolSpecs"][0]
    assert pool["machineSpec"] == {
        "machineType": "g4-standard-96",
        "acceleratorType": "NVIDIA_RTX_PRO_6000",
        "acceleratorCount": 2,
    }
    assert pool["diskSpec"]["bootDiskType"] == "hyperdisk-balanced"  # G4 boots from Hyperdisk


def test_the_server_and_the_catalog_read_one_machine_list() -> None:
    from vertex_validate import MACHINE_TYPES

    assert set(catalog.MACHINE_TYPES) == MACHINE_TYPES
    assert set(vertex_rules.N1_GPUS) | set(vertex_rules.BUILT_IN_GPUS) <= MACHINE_TYPES
    assert set(vertex_rules.TPU_HOSTS) <= MACHINE_TYPES


# ---------------------------------------------------------------- the GPU-by-machine table
_GPU_MACHINES = sorted(set(vertex_rules.N1_GPUS) | set(vertex_rules.BUILT_IN_GPUS))
_LIVE_GPUS = [g for g in catalog.GPUS if g not in catalog.RETIRED]


def _machine_spec(gpu: str, count: int, machine_type: str) -> tuple[bool, dict[str, Any]]:
    """Whether the catalog takes ``count`` x ``gpu`` on ``machine_type``, and the request's
    machineSpec (the one it makes, else the one it would have sent)."""
    try:
        machine = catalog.gpu_machine(gpu, count, machine_type)
    except SpecError:
        enum = catalog.GPUS[gpu][0]
        return False, {
            "machineType": machine_type,
            "acceleratorType": enum,
            "acceleratorCount": count,
        }
    spec = JobSpec(chief=machine, backend="vertex", google=GoogleTarget(project="my-proj-1"))  # type: ignore[arg-type]
    body = vertex_request.custom_job_body(spec, IMAGE)
    return True, body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]


def test_every_gpu_count_on_every_gpu_machine_agrees_with_the_server() -> None:
    """Machine x GPU x count, all of it: the catalog takes a shape exactly when Vertex AI's table
    (and so the test server) does; T4 x1 on 32 vCPUs and the like were taken before."""
    taken = 0
    for machine_type in _GPU_MACHINES:
        if machine_type == "a4x-highgpu-4g":
            continue  # ARM: refused here with B200 as the fix (test_catalog)
        for gpu in _LIVE_GPUS:
            enum = catalog.GPUS[gpu][0]
            for count in (1, 2, 3, 4, 8, 16):
                ok, spec = _machine_spec(gpu, count, machine_type)
                body = {
                    "displayName": "x",
                    "jobSpec": {
                        "workerPoolSpecs": [
                            {
                                "machineSpec": spec,
                                "replicaCount": "1",
                                "containerSpec": {"imageUri": IMAGE},
                            }
                        ]
                    },
                }
                server_ok = validate(_sent(body)) == []
                table_ok = count in vertex_rules.gpu_counts(machine_type, enum)
                assert ok == table_ok == server_ok, (machine_type, gpu, count, ok, server_ok)
                taken += ok
    assert taken > 60


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("--gpus 1 --gpu-type T4 --machine n1-standard-32", "only as 2 or 4, not 1"),
        ("--gpus 1 --gpu-type T4 --machine n1-highmem-32", "only as 2 or 4, not 1"),
        ("--gpus 2 --gpu-type V100 --machine n1-highmem-32", "only as 4 or 8, not 2"),
        ("--gpus 4 --gpu-type P100 --machine n1-standard-64", "end of support"),
    ],
)
def test_gpu_counts_vertex_ai_refuses_on_n1(settings: Settings, line: str, words: str) -> None:
    field = "gpu_type" if "P100" in line else "machine"
    _refused(settings, line, words, field)


# ---------------------------------------------------------------- P100 end of support
def test_p100_is_past_its_end_of_support(settings: Settings) -> None:
    """Google: "NVIDIA P100 GPUs reach end of support on September 15, 2026" (was planned)."""
    text = _refused(settings, "--gpus 1 --gpu-type P100", "on 2026-09-15", "gpu_type")
    assert "Fix: use --gpu-type T4" in text
    assert "P100" not in catalog.PRESETS and "P100_1X" not in catalog.PRESETS
    server = {
        "displayName": "x",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {
                        "machineType": "n1-standard-8",
                        "acceleratorType": "NVIDIA_TESLA_P100",
                        "acceleratorCount": 1,
                    },
                    "replicaCount": "1",
                    "containerSpec": {"imageUri": IMAGE},
                }
            ]
        },
    }
    assert any("end of support" in m for _, m in validate(_sent(server)))


# TensorFlow Cloud's integration calls on P100 (tensorflow_cloud/core/tests/integration: the
# fit, ctl, within-script, multi-file, docker-config and tuner calls), by the shape they take.
_TFC_P100_CALLS = [
    {"chief_config": "P100_1X"},
    {"chief_config": "P100_1X", "worker_count": 0},
    {"chief_config": "CPU", "worker_config": "P100_1X", "worker_count": 1},
    {"chief_config": "P100_1X", "worker_config": "P100_1X", "worker_count": 1},
    {"chief_config": "P100_4X"},
    {"chief_config": "P100_1X", "distribution_strategy": None},
    {"chief_config": "P100_1X", "stream_logs": True},
    {"chief_config": "T4_1X", "worker_config": "P100_1X", "worker_count": 2},
]


@pytest.mark.parametrize("call", _TFC_P100_CALLS)
def test_tensorflow_clouds_p100_calls_are_refused_with_the_fix(call: dict[str, Any]) -> None:
    import tfc_jupyter as tfc

    with pytest.raises(ValueError, match=r"P100 GPUs reached end of support.*2026-09-15") as info:
        {k: tfc.COMMON_MACHINE_CONFIGS[v] if k.endswith("config") else v for k, v in call.items()}
    assert "Fix: use COMMON_MACHINE_CONFIGS['T4_" in str(info.value)
    with pytest.raises(ValueError, match=r"end of support.*Fix: use --gpu-type T4"):
        tfc.MachineConfig(8, 30, tfc.AcceleratorType.NVIDIA_TESLA_P100, 1)


# ---------------------------------------------------------------- private networking
NET = "--network projects/123456789012/global/networks/my-vpc"


@pytest.mark.parametrize("gpu", ["H100_MEGA", "H200", "B200"])
def test_vpc_peering_is_refused_where_vertex_ai_refuses_it(settings: Settings, gpu: str) -> None:
    text = _refused(settings, f"--gpus 8 --gpu-type {gpu} {NET}", "VPC peering", "network")
    assert "Fix: use --psc-network-attachment" in text
    # the server refuses the same request (built by hand: the product no longer sends it)
    body = _accepted(settings, f"--gpus 8 --gpu-type {gpu} --spot")
    body["jobSpec"]["network"] = NET.split()[1]
    assert any(f == "job_spec.network" for f, _ in validate(_sent(body)))
    _accepted(settings, f"--gpus 8 --gpu-type H100 {NET}")  # A3 High peers


@pytest.mark.parametrize(
    "attachment",
    ["my-attachment", "projects/my-proj-1/regions/us-central1/networkAttachments/my-attachment"],
)
@pytest.mark.parametrize("gpu", ["H200", "B200", "T4"])
def test_a_private_service_connect_interface_is_sent(
    settings: Settings, attachment: str, gpu: str
) -> None:
    count = 1 if gpu == "T4" else 8
    body = _accepted(
        settings, f"--gpus {count} --gpu-type {gpu} --spot --psc-network-attachment {attachment}"
    )
    assert body["jobSpec"]["pscInterfaceConfig"] == {"networkAttachment": attachment}
    assert "network" not in body["jobSpec"]
    beta = pytest.importorskip("google.cloud.aiplatform_v1beta1.types")
    beta.CustomJob.from_json(json.dumps(body))


@pytest.mark.parametrize(
    ("line", "words", "field"),
    [
        (
            "--psc-network-attachment projects/p/regions/europe-west4/networkAttachments/a",
            "is in europe-west4",
            "psc_network_attachment",
        ),
        (
            "--psc-network-attachment My_Attachment",
            "not a network attachment",
            "psc_network_attachment",
        ),
        (f"--psc-network-attachment a1 {NET}", "one way", "network"),
    ],
)
def test_a_psc_interface_vertex_ai_would_refuse_is_refused(
    settings: Settings, line: str, words: str, field: str
) -> None:
    _refused(settings, line, words, field)


def test_a_psc_interface_is_vertex_ais_only(settings: Settings) -> None:
    with pytest.raises(SpecError, match="--psc-network-attachment") as info:
        _plan(settings, "--psc-network-attachment my-attachment")
    assert info.value.field == "psc_network_attachment"


# ---------------------------------------------------------------- environment variables
def test_at_most_100_variables_reach_a_container(settings: Settings) -> None:
    """Vertex AI takes 100 a container; the job sets two itself (102 were sent)."""
    most = " ".join(f"--env V{i}=x" for i in range(MAX_ENV))
    body = _accepted(settings, most)
    pools = body["jobSpec"]["workerPoolSpecs"]
    assert all(len(p["containerSpec"]["env"]) == vertex_rules.MAX_ENV_VARS for p in pools)
    text = _refused(settings, most + " --env ONE=more", f"{MAX_ENV + 1} --env variables", "env")
    assert f"use at most {MAX_ENV}" in text
    over = json.loads(json.dumps(body))
    over["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"].append({"name": "X", "value": ""})
    assert any("Maximum limit is 100" in m for _, m in validate(_sent(over)))
    _refused(settings, "--env PYTHONUNBUFFERED=0", "set by the job itself", "env")


_PIECES = st.sampled_from(["$", "$$", "(", ")", "$(", "HOME", "$(HOME)", "$(NOPE)", "x", " "])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_PIECES | st.text(max_size=3).filter(lambda t: "\0" not in t), max_size=12).map(
        "".join
    )
)
def test_env_values_reach_a_vertex_job_as_written(value: str) -> None:
    """``$(VAR)`` and ``$$`` in --env values: Vertex AI expands them, the local and docker
    backends do not; the request escapes them so the job sees the text as written."""
    spec = JobSpec(
        backend="vertex", google=GoogleTarget(project="my-proj-1"), env=(("MODE", value),)
    )  # type: ignore[arg-type]
    body = vertex_request.custom_job_body(spec, IMAGE)
    env = body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
    seen = container_env([{"name": "HOME", "value": "/root"}, *env])
    assert seen["MODE"] == value
    assert seen["TFC_JOB_NAME"] == spec.name


@pytest.mark.parametrize("value", ["$(HOME)/data", "price$$5", "$$(HOME)", "a$(b", "$"])
def test_env_values_with_dollars(settings: Settings, value: str) -> None:
    body = _accepted(settings, f"--env MODE={shlex.quote(value)}")
    env = body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
    assert container_env([{"name": "HOME", "value": "/root"}, *env])["MODE"] == value


# ---------------------------------------------------------------- reservations, ids, buckets
def test_a_named_reservation_goes_only_on_pools_of_its_machine(settings: Settings) -> None:
    """A reservation holds the chief's machine shape; the CPU parameter servers cannot use it."""
    line = f"--gpus 8 --gpu-type H100 --workers 1 --ps 1 --evaluator --reservation {RESERVATION}"
    pools = _accepted(settings, line)["jobSpec"]["workerPoolSpecs"]
    held = [bool(p["machineSpec"].get("reservationAffinity")) for p in pools]
    assert held == [True, True, False, True], held  # chief, workers, ps (CPU), evaluator
    assert pools[2]["machineSpec"]["machineType"] == "n1-standard-4"
    # the server refuses a specific reservation on pools of different shapes
    pools[2]["machineSpec"]["reservationAffinity"] = pools[0]["machineSpec"]["reservationAffinity"]
    body = {"displayName": "x", "jobSpec": {"workerPoolSpecs": pools}}
    assert any("one machine shape" in m for _, m in validate(_sent(body)))
    anyone = _accepted(settings, "--gpus 1 --gpu-type L4 --ps 1 --workers 1 --reservation any")
    assert all(
        p["machineSpec"]["reservationAffinity"] for p in anyone["jobSpec"]["workerPoolSpecs"]
    )


@pytest.mark.parametrize("resource", ["a", "p1", "abc", "pool", "pool1", "my-pool-1", "a" * 63])
def test_persistent_resource_ids_of_1_to_63_characters(settings: Settings, resource: str) -> None:
    body = _accepted(settings, f"--persistent-resource {resource}")
    assert body["jobSpec"]["persistentResourceId"] == resource


@pytest.mark.parametrize("resource", ["1a", "a-", "Pool", "a_b", "a" * 64])
def test_persistent_resource_ids_vertex_ai_refuses(settings: Settings, resource: str) -> None:
    _refused(
        settings,
        f"--persistent-resource {resource}",
        "not a persistent resource id",
        "persistent_resource",
    )


@pytest.mark.parametrize(
    "uri", ["gs://", "gs:///out", "gs://b/out", "gs://-bucket/x", "gs://Bkt/x"]
)
def test_an_output_folder_names_a_bucket(settings: Settings, uri: str) -> None:
    """``gs://`` with no (valid) bucket was accepted and sent."""
    _refused(
        settings, f"--base-output-dir {uri}", "names no Cloud Storage bucket", "base_output_dir"
    )
    body = _accepted(settings, "--base-output-dir gs://bkt/out")
    body["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"] = uri
    assert validate(_sent(body)), uri


# ---------------------------------------------------------------- images and their dates
def test_tensorflow_2_13_and_2_14_end_of_availability() -> None:
    """Google's supported-frameworks list: 2.13 on 2025-07-05, 2.14 on 2025-09-26 (both said
    2025-11-14, 2.15's date)."""
    import datetime

    assert prebuilt.END_OF_AVAILABILITY["2.13"] == "2025-07-05"
    assert prebuilt.END_OF_AVAILABILITY["2.14"] == "2025-09-26"
    ex = prebuilt.executor("2.14.1", gpu=True, region="us-central1")
    assert ex.ended(datetime.date(2025, 10, 1)) == "2025-09-26"


def test_the_docs_prebuilt_image_example_is_one_google_lists() -> None:
    """The example in docs/backends.md (the Vertex AI backend's package route)."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "backends.md").read_text()
    examples = re.findall(r'prebuilt_images = "([^"]+)"', page)
    assert examples
    listed = {
        f"{host}/vertex-ai/training/{name}:latest"
        for name in prebuilt.IMAGES.values()
        for host in ("us-docker.pkg.dev", "europe-docker.pkg.dev", "asia-docker.pkg.dev")
    }
    for example in examples:
        for version, uri in prebuilt.extra_images(example).items():
            assert uri in listed, uri
            assert uri.endswith(f"{prebuilt.IMAGES[version]}:latest"), (version, uri)


def test_a_tpu_job_on_a_parent_image_without_the_tpu_runtime_is_warned(
    settings: Settings,
) -> None:
    plan = _plan(settings, f"{VERTEX} --tpu v5e-4 --parent-image tensorflow/tensorflow:2.15.0")
    assert [w for w in plan.warnings if "names no TPU build" in w and "libtpu" in w], plan.warnings
    ready = _plan(settings, f"{VERTEX} --tpu v5e-4 --parent-image us-docker.pkg.dev/p/r/tf-tpu:1")
    assert not [w for w in ready.warnings if "names no TPU build" in w]
