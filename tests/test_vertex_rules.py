"""Vertex AI's rules as Google documents them (issue 25): each case failed before its rule.

Machines and GPUs (N1 vCPU limits, G2 and N2 types), disks by machine family, field formats
(network, TensorBoard, base output folder), reservations with persistent resources, and the
prebuilt executors' end-of-availability dates. Every accepted request also parses strictly into
the real ``aiplatform_v1`` types.
"""

from __future__ import annotations

import datetime
import json
import shlex
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from tfc_jupyter.backends.vertex import prebuilt
from tfc_jupyter.config import Settings, load_settings
from tfc_jupyter.errors import SpecError
from tfc_jupyter.job import catalog, options, prices
from tfc_jupyter.notebook.capture import Selection
from tfc_jupyter.notebook.convert import Cell
from tfc_jupyter.planner.plan import make_plan

types = pytest.importorskip("google.cloud.aiplatform_v1.types")

VERTEX = "--backend vertex --project my-proj-1"
RESERVATION = "projects/my-proj-1/zones/us-central1-a/reservations/held"
SA = "trainer@my-proj-1.iam.gserviceaccount.com"


def _plan(settings: Settings, line: str) -> Any:
    sel = Selection(cells=[Cell(1, "print('hi')")], notebook=None, how="test")
    return make_plan(sel, options.parse_line(line), settings)


def _body(settings: Settings, line: str) -> dict[str, Any]:
    body: dict[str, Any] = _plan(settings, line).request()["body"]
    types.CustomJob.from_json(json.dumps(body))  # strict: an unknown field raises
    return body


@pytest.mark.parametrize(
    ("line", "words", "field"),
    [
        ("--gpus 1 --gpu-type V100 --machine n1-standard-32", "only as 4 or 8, not 1", "machine"),
        ("--gpus 1 --gpu-type T4 --machine n1-standard-96", "only as 4, not 1", "machine"),
        ("--gpus 2 --gpu-type T4 --machine n1-standard-64", "only as 4, not 2", "machine"),
        ("--gpus 1 --gpu-type T4 --machine n1-standard-32", "only as 2 or 4, not 1", "machine"),
        ("--gpus 1 --gpu-type T4 --machine n1-highcpu-32", "only as 2 or 4, not 1", "machine"),
        (f"{VERTEX} --network my-vpc", "not a network's resource name", "network"),
        (f"{VERTEX} --network projects/my-proj-1/global/networks/v", "resource name", "network"),
        (f"{VERTEX} --tensorboard 123", "not a TensorBoard instance", "tensorboard"),
        (
            f"{VERTEX} --tensorboard projects/p/locations/us-central1/tensorboards/123",
            "needs a service account",
            "service_account",
        ),
        (f"{VERTEX} --base-output-dir /tmp/out", "not in Cloud Storage", "base_output_dir"),
        (
            f"{VERTEX} --reservation any --persistent-resource my-pool-1",
            "--reservation with --persistent-resource",
            "reservation",
        ),
        (
            f"{VERTEX} --gpus 8 --gpu-type H200 --boot-disk-type pd-standard",
            "boot from Hyperdisk only",
            "boot_disk_type",
        ),
    ],
)
def test_what_vertex_ai_or_the_machine_would_refuse_is_refused_here(
    settings: Settings, line: str, words: str, field: str
) -> None:
    with pytest.raises(SpecError) as info:
        _plan(settings, line)
    assert words in str(info.value) and "Fix:" in str(info.value), str(info.value)
    assert info.value.field == field


@pytest.mark.parametrize(
    "line",
    [
        "--machine g2-standard-4",
        "--machine g2-standard-12",
        "--machine g2-standard-16",
        "--machine g2-standard-32",
        "--machine n2-standard-8",
        "--machine n2-highmem-16",
        "--gpus 4 --gpu-type T4 --machine n1-standard-96",
        "--gpus 1 --gpu-type V100 --machine n1-standard-8",
        "--network projects/123456789012/global/networks/my-vpc",
        f"--tensorboard projects/my-proj-1/locations/us-central1/tensorboards/123 "
        f"--service-account {SA} --base-output-dir gs://bkt/out",
        "--persistent-resource my-pool-1",
    ],
)
def test_what_vertex_ai_accepts_is_accepted_and_parses(settings: Settings, line: str) -> None:
    body = _body(settings, f"{VERTEX} {line}")
    assert body["jobSpec"]["workerPoolSpecs"]


def test_g2_machines_carry_their_l4(settings: Settings) -> None:
    body = _body(settings, f"{VERTEX} --machine g2-standard-16")
    spec = body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    assert spec == {
        "machineType": "g2-standard-16",
        "acceleratorType": "NVIDIA_L4",
        "acceleratorCount": 1,
    }


@pytest.mark.parametrize(
    ("gpu", "machine"), [("H200", "a3-ultragpu-8g"), ("B200", "a4-highgpu-8g")]
)
def test_a3_ultra_and_a4_boot_from_hyperdisk(settings: Settings, gpu: str, machine: str) -> None:
    body = _body(settings, f"{VERTEX} --gpus 8 --gpu-type {gpu}")
    (pool,) = body["jobSpec"]["workerPoolSpecs"]
    assert pool["machineSpec"]["machineType"] == machine
    assert pool["diskSpec"]["bootDiskType"] == "hyperdisk-balanced"
    other = _body(settings, f"{VERTEX} --gpus 1 --gpu-type L4")
    assert other["jobSpec"]["workerPoolSpecs"][0]["diskSpec"]["bootDiskType"] == "pd-ssd"


def test_tensorflow_2_16_has_its_prebuilt_images() -> None:
    for gpu, kind in ((False, "cpu"), (True, "gpu")):
        found = prebuilt.executor("2.16.2", gpu=gpu, region="us-central1")
        assert found.uri == f"us-docker.pkg.dev/vertex-ai/training/tf-{kind}.2-16.py310:latest"


def test_an_executor_past_its_end_of_availability_is_said() -> None:
    ex = prebuilt.executor("2.17.1", gpu=False, region="europe-west4")
    assert ex.ended(datetime.date(2026, 7, 11)) is None  # the last day it is offered
    assert ex.ended(datetime.date(2026, 7, 12)) == "2026-07-11"
    note = ex.ended_note(datetime.date(2026, 11, 24))
    assert note and "end of availability on 2026-07-11" in note and "--route image" in note
    assert all(v in prebuilt.END_OF_AVAILABILITY for v, _ in prebuilt.IMAGES)
    added = prebuilt.executor("2.21", gpu=False, region="us-central1", extra="2.21=r.io/x/y:1")
    assert added.ended(datetime.date(2030, 1, 1)) is None  # a date we do not know


def test_the_n1_table_covers_every_n1_gpu() -> None:
    from tfc_jupyter.job import vertex_rules

    n1 = {g for g, (_, _, fams) in catalog.GPUS.items() if "n1" in fams} - set(catalog.RETIRED)
    table = {enum for row in vertex_rules.N1_GPUS.values() for enum in row}
    assert {catalog.GPUS[g][0] for g in n1} <= table
    assert set(vertex_rules.N1_GPUS) == {m for m in catalog.MACHINE_TYPES if m.startswith("n1-")}
    for gpu in n1:
        for count in catalog.GPUS[gpu][2]["n1"]:
            machine = catalog.gpu_machine(gpu, count)  # the usual machine takes the count
            enum = catalog.GPUS[gpu][0]
            assert count in vertex_rules.gpu_counts(machine.machine_type, enum), (gpu, count)


@pytest.mark.parametrize(
    "line",
    [
        "--label équipe=modèle --label 模型=版本-2 --label über=größe",
        "--project 123456789012",
    ],
    ids=["international-labels", "project-number"],
)
def test_what_vertex_ai_takes_and_was_refused_here(settings: Settings, line: str) -> None:
    from vertex_validate import validate

    body = _body(settings, f"--backend vertex --project my-proj-1 {line}")
    proto = types.CustomJob.from_json(json.dumps(body))
    sent = json.loads(types.CustomJob.to_json(proto, use_integers_for_enums=False))
    assert validate(sent) == []  # the test server's rules agree
    if "123456789012" in line:
        plan = _plan(settings, f"--backend vertex {line}")
        assert "/projects/123456789012/locations/us-central1/customJobs" in plan.request()["url"]


def test_a_job_with_64_labels_of_its_own_is_still_ours(settings: Settings) -> None:
    from tfc_jupyter.backends.vertex.backend import _ours

    labels = " ".join(f"--label k{i}=v" for i in range(64))
    body = _body(settings, f"{VERTEX} {labels}")
    assert len(body["labels"]) == 64 and "tfc-jupyter" not in body["labels"]
    assert _ours(types.CustomJob.from_json(json.dumps(body)))
    other = {**body, "jobSpec": {"workerPoolSpecs": [{"containerSpec": {"imageUri": "x"}}]}}
    assert not _ours(types.CustomJob.from_json(json.dumps(other)))


def test_an_evaluator_on_a_gpu_machine_gets_a_gpu_image(settings: Settings) -> None:
    sel = Selection(
        cells=[Cell(1, "import tensorflow as tf\nprint(tf.estimator)")], notebook=None, how="t"
    )
    line = f"{VERTEX} --workers 1 --evaluator T4_1X --route image"
    plan = make_plan(sel, options.parse_line(line), settings)
    assert plan.spec.evaluator_machine is not None and plan.spec.evaluator_machine.gpu_count == 1
    assert plan.parent_image.endswith("-gpu"), plan.parent_image  # was the CPU image


def test_the_plan_says_what_the_job_costs_for_its_timeout(settings: Settings) -> None:
    # CPU: n1-standard-4 and its 100 GB pd-ssd boot disk (T4 has no listed price)
    rate = (catalog.lookup("CPU").price_per_hour or 0) + (
        prices.boot_disk_price("pd-ssd", 100) or 0
    )
    plan = _plan(settings, f"{VERTEX} --machine CPU --timeout 2h")
    assert plan.cost_at_most() == round(2 * rate, 2)
    assert f"at most ${2 * rate:,.2f} if it runs its whole --timeout of 2h" in plan.to_text()
    assert plan.summary()["cost_at_most"] == plan.cost_at_most()
    open_ended = _plan(settings, f"{VERTEX} --machine CPU")
    assert open_ended.cost_at_most() is None
    assert "no --timeout: it bills until it ends" in open_ended.to_text()
    assert "bills" not in _plan(settings, "--machine CPU --timeout 2h").to_text()


def _matrix() -> list[str]:
    """Flag lines for every request shape a plan can make: each offered GPU type at each count,
    each TPU, CPU presets; pools; scheduling; reservations; disks; env; both routes."""
    from tfc_jupyter.backends.vertex.scheduling import FLEX_START_GPUS, HYPERDISK_ONLY

    machines: list[tuple[str, str, bool, bool]] = []  # (flags, kind, flex, hyperdisk)
    for gpu in catalog.OFFERED_GPU_TYPES:
        enum, _, families = catalog.GPUS[gpu]
        for count in sorted({n for counts in families.values() for n in counts}):
            machine = catalog.gpu_machine(gpu, count)
            hyper = machine.machine_type.startswith(HYPERDISK_ONLY)
            flags = f"--gpus {count} --gpu-type {gpu}"
            machines.append((flags, "gpu", enum in FLEX_START_GPUS, hyper))
    machines += [(f"--tpu {tpu}", "tpu", False, False) for tpu in catalog.TPU_TYPES]
    machines += [
        ("--machine CPU", "cpu", False, False),
        ("--machine n2-standard-8", "cpu", False, False),
        ("--machine n4-standard-8", "cpu", False, True),
        ("--machine c2-standard-16", "cpu", False, False),
        ("--machine e2-highmem-8", "cpu", False, False),
        ("--machine m1-ultramem-40", "cpu", False, False),
        ("--machine n1-highmem-32 --gpus 2", "gpu", False, False),
        ("--machine n1-highcpu-96 --gpus 8 --gpu-type V100", "gpu", False, False),
    ]
    pools = ["", "--workers 2", "--workers 1 --ps 1 --evaluator"]
    extras = [
        "",
        "--spot",
        "--flex-start 2h",
        "--reservation any",
        "--persistent-resource team-pool",
        "--boot-disk-type pd-standard --boot-disk-size 200",
        "--env MODE=train --label team=vision --timeout 3h --restart-on-worker-restart",
        f"--reservation {RESERVATION}",
        "--psc-network-attachment my-attachment --env 'PATHS=$(HOME)/a:$$b'",
        "--network projects/123456789012/global/networks/my-vpc --base-output-dir gs://bkt/run",
    ]
    lines = []
    for i, (machine, kind, flex, hyper) in enumerate(machines):
        for j, pool in enumerate(pools):
            extra = extras[(i + j) % len(extras)]
            if kind == "tpu" and pool:
                continue  # a TPU job is one host
            if kind == "tpu" and extra.startswith(("--boot", "--flex", "--env")):
                extra = "--spot"
            if extra.startswith("--flex") and (not flex or "--ps" in pool):  # one GPU machine
                extra = "--spot"
            if extra.startswith("--boot") and hyper:
                extra = "--boot-disk-size 200"
            if extra.startswith("--network") and any(
                t in machine for t in ("MEGA", "H200", "B200")
            ):
                extra = "--psc-network-attachment my-attachment"  # no VPC peering there
            route = "--route image" if (i + j) % 2 or kind == "tpu" else "--route package"
            lines.append(f"{machine} {pool} {extra} {route}".replace("  ", " ").strip())
    return lines


MATRIX = _matrix()


def test_the_matrix_covers_the_catalog() -> None:
    assert len(MATRIX) >= 60
    needed_flags = (
        "--tpu v5e-8",
        "--gpu-type H200",
        "--gpu-type B200",
        "--gpu-type RTX_PRO_6000",
        "--flex-start",
        "--spot",
        f"--reservation {RESERVATION}",
        "--psc-network-attachment",
        "--network",
        "$(HOME)",
        "n4-standard-8",
    )
    for needed in needed_flags:
        assert any(needed in line for line in MATRIX), needed
    assert any("--route package" in line for line in MATRIX)


@pytest.mark.parametrize("line", MATRIX)
def test_every_request_of_the_matrix_parses_into_the_real_types(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    from vertex_validate import container_env, validate

    from tfc_jupyter.config import load_settings
    from tfc_jupyter.image.names import local_tensorflow_version

    version = ".".join(str(local_tensorflow_version() or "2.17").split(".")[:2])
    uri = "us-docker.pkg.dev/vertex-ai/training/tf-{}.{}.py310:latest"
    extra = f"{version}={uri.format('cpu', version)},{version}-gpu={uri.format('gpu', version)}"
    monkeypatch.setenv("TFC_PREBUILT_IMAGES", extra)
    monkeypatch.setenv("TFC_BUILD_BUCKET", "my-bucket")
    code = "import tensorflow as tf\nprint(tf.__version__)"
    sel = Selection(cells=[Cell(1, code)], notebook=None, how="matrix")
    plan = make_plan(
        sel, options.parse_line(f"{VERTEX} {line}"), load_settings(include_server=False)
    )
    body = plan.request()["body"]
    job = types.CustomJob.from_json(json.dumps(body))  # strict: unknown fields and enums raise
    assert validate(json.loads(types.CustomJob.to_json(job, use_integers_for_enums=False))) == [], (
        line
    )
    beta = pytest.importorskip("google.cloud.aiplatform_v1beta1.types")
    beta.CustomJob.from_json(json.dumps(body))
    for pool in (p for p in body["jobSpec"]["workerPoolSpecs"] if p):
        run = pool.get("containerSpec") or pool["pythonPackageSpec"]
        seen = container_env([{"name": "HOME", "value": "/root"}, *run["env"]])
        assert {k: seen[k] for k, _ in plan.spec.env} == dict(plan.spec.env), line  # as written
    if "--route package" in line:
        pools = body["jobSpec"]["workerPoolSpecs"]
        assert all("pythonPackageSpec" in p for p in pools if p), line


@pytest.mark.parametrize(
    ("name", "image"),
    [
        ("Modèle d'été", "modele-d-ete"),
        ("Modèle été", "modele-ete"),
        ("модель 1", "1"),
        ("训练 任务", None),
        ("run #3 (lr: 0.1) a/b", "run-3-lr-0-1-a-b"),  # '#', '(', ':' and '/' were refused
        ("_lead", "lead"),
        ("x" * 128, None),
    ],
)
def test_display_names_in_any_script(settings: Settings, name: str, image: str | None) -> None:
    from vertex_validate import validate

    from tfc_jupyter.store.records import new_job_id

    line = f"{VERTEX} --name {shlex.quote(name)}"
    body = _body(settings, line)
    assert body["displayName"] == name  # was refused: "use at most 128 letters, digits, ..."
    sent = types.CustomJob.to_json(types.CustomJob.from_json(json.dumps(body)))
    assert validate(json.loads(sent)) == []
    plan = _plan(settings, line + " --route image")
    tail = plan.image_uri.rsplit("/", 1)[1].split(":")[0]
    assert tail.isascii() and (image is None or tail == image)  # images and ids stay ASCII
    assert new_job_id(name).isascii()


def test_hidden_and_control_characters_stay_out_of_names(settings: Settings) -> None:
    for name in ("\u202eevil", "a\u200bb", "tab\there", " lead", "line\u2028break", "x" * 129):
        with pytest.raises(SpecError, match="job name"):
            _plan(settings, f"{VERTEX} --name {shlex.quote(name)}")


def test_the_plan_says_what_a_restart_does(settings: Settings) -> None:
    from tfc_jupyter.job.replica import job_env

    spot = _plan(settings, f"{VERTEX} --spot")
    assert any(w.startswith("--spot without --base-output-dir") for w in spot.warnings)
    assert "trains from the start: pass --base-output-dir" in spot.restarts()
    kept = _plan(settings, f"{VERTEX} --spot --base-output-dir gs://bkt/run")
    assert not any("--spot without" in w for w in kept.warnings)
    assert kept.restarts().startswith("Spot VMs can be preempted; Vertex AI restarts a replica")
    assert "the job resumes: each Keras fit after its last finished epoch" in kept.restarts()
    assert "gs://bkt/run/checkpoints/" in kept.restarts()
    assert f"restarts: {kept.restarts()}" in kept.to_text()
    assert kept.summary()["restarts"] == kept.restarts()
    here = _plan(settings, "")
    assert "restarted, up to 5 times, as on Vertex AI" in here.restarts()
    assert "TFC_RESUME" not in job_env(here.spec, "j", "/tmp/j")
    off = _plan(settings, "--no-resume")
    assert off.spec.resume is False and "--no-resume it trains from the start" in off.restarts()
    assert job_env(off.spec, "j", "/tmp/j")["TFC_RESUME"] == "0"
    assert "nothing restarts it" in _plan(settings, "--backend docker").restarts()


# ------------------------------------------------------------------ bucket names (issue 50)
GOOGLISH = st.sampled_from(["google", "g00gle", "goo-gle", "gogle", "googel", "goog1e", "go0gle"])
PLAIN = st.text(alphabet="abcdefhijkmnprstuvwxyz0123456789-", min_size=0, max_size=12)
BUCKET_OPTIONS = st.sampled_from(
    [
        ("--base-output-dir gs://{}/runs", "base_output_dir"),
        ("--build-bucket {}", "build_bucket"),
        ("--build-bucket gs://{}", "build_bucket"),
    ]
)


@examples(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.sampled_from(["b", "goog"]), PLAIN, GOOGLISH, PLAIN, BUCKET_OPTIONS)
def test_a_bucket_named_for_google_is_refused_by_every_option_that_takes_one(
    tfc_env: Any, first: str, before: str, google: str, after: str, option: tuple[str, str]
) -> None:
    """Cloud Storage refuses a bucket name that begins with "goog" or contains "google" or a
    close misspelling ("g00gle"): every option that takes a bucket refuses it at the plan, in
    one line naming the rule, by one rule (``vertex_rules.bucket_problem``)."""
    name = f"{first}{before}{google}{after}1"
    flag, field = option
    with pytest.raises(SpecError) as info:
        _plan(load_settings(environ={}, include_server=False), f"{VERTEX} {flag.format(name)}")
    text = str(info.value)
    assert info.value.field == field and "\n" not in text and "Fix:" in text
    assert "google" in text and "no goog/google" in text
    from tfc_jupyter.backends.vertex import cloudbuild

    with pytest.raises(SpecError):
        cloudbuild.bucket_name(name)


@examples(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.from_regex(r"[a-z0-9][a-z0-9_-]{1,40}[a-z0-9]", fullmatch=True))
def test_a_bucket_name_without_google_is_taken(tfc_env: Any, name: str) -> None:
    """The rule refuses no name for a google it does not hold: only the names with "goog" in
    them (read with their digits as letters) can be refused."""
    from tfc_jupyter.job import vertex_rules

    normal = name.translate(str.maketrans("013", "ole")).replace("-", "").replace("_", "")
    if "gog" in normal or "goo" in normal:
        return
    assert vertex_rules.bucket_problem(name) == ""
    plan = _plan(
        load_settings(environ={}, include_server=False),
        f"{VERTEX} --base-output-dir gs://{name}/runs",
    )
    assert plan.spec.base_output_dir == f"gs://{name}/runs"


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("goog-runs", 'begins with "goog"'),
        ("my-google-runs", 'contains "google"'),
        ("runs-g00gle", 'contains "google"'),
        ("192.168.5.4", "an IP address"),
        ("ab", "is not a Cloud Storage bucket name"),
    ],
)
def test_each_bucket_rule_says_which(settings: Settings, name: str, words: str) -> None:
    with pytest.raises(SpecError) as info:
        _plan(settings, f"{VERTEX} --base-output-dir gs://{name}/x")
    assert words in str(info.value) and "storage/docs/buckets#naming" in str(info.value)


# ------------------------------------------------------------------ options given together
def test_disable_retries_with_restart_on_worker_restart_is_warned(settings: Settings) -> None:
    """Vertex AI's Scheduling.disableRetries "overrides restart_job_on_worker_restart to false":
    the plan says so when both are given (issue 50), and says nothing of either alone."""
    both = _plan(settings, f"{VERTEX} --workers 2 --disable-retries --restart-on-worker-restart")
    (note,) = [w for w in both.warnings if "--disable-retries" in w]
    assert "--restart-on-worker-restart does nothing" in note and "drop one" in note
    assert f"! {note}" in both.to_text()
    body = both.request()["body"]["jobSpec"]["scheduling"]
    assert body["disableRetries"] is True and body["restartJobOnWorkerRestart"] is True
    for alone in ("--disable-retries", "--restart-on-worker-restart"):
        plan = _plan(settings, f"{VERTEX} --workers 2 {alone}")
        assert not [w for w in plan.warnings if "--disable-retries" in w], alone


HYPERDISK_MACHINES = [
    "--gpus 8 --gpu-type H200",
    "--gpus 8 --gpu-type B200",
    "--machine n4-standard-8",
]


@pytest.mark.parametrize("machine", HYPERDISK_MACHINES)
def test_an_explicit_pd_ssd_on_a_hyperdisk_machine_is_refused(
    settings: Settings, machine: str
) -> None:
    """Issue 50: --boot-disk-type pd-ssd on a machine that boots from Hyperdisk only became
    hyperdisk-balanced without a word: refused in one line, the fix as data; left out, the
    plan chooses hyperdisk-balanced and says so."""
    with pytest.raises(SpecError) as info:
        _plan(settings, f"{VERTEX} {machine} --boot-disk-type pd-ssd")
    text = str(info.value)
    assert "--boot-disk-type pd-ssd" in text and "boot from Hyperdisk only" in text
    assert "Fix: pass --boot-disk-type hyperdisk-balanced" in text and "\n" not in text
    assert info.value.field == "boot_disk_type"
    first = info.value.fixes[0]
    assert (first.action, first.option, first.value) == (
        "set",
        "boot_disk_type",
        "hyperdisk-balanced",
    )
    chosen = _plan(settings, f"{VERTEX} {machine}")
    assert any(w.startswith("boot disk: hyperdisk-balanced for ") for w in chosen.warnings)
    pools = chosen.request()["body"]["jobSpec"]["workerPoolSpecs"]
    assert {p["diskSpec"]["bootDiskType"] for p in pools if p} == {"hyperdisk-balanced"}
    asked = _plan(settings, f"{VERTEX} {machine} --boot-disk-type hyperdisk-balanced")
    assert not [w for w in asked.warnings if w.startswith("boot disk:")]


def test_an_explicit_pd_ssd_elsewhere_is_taken(settings: Settings) -> None:
    plan = _plan(settings, f"{VERTEX} --gpus 1 --gpu-type T4 --boot-disk-type pd-ssd")
    assert not [w for w in plan.warnings if w.startswith("boot disk:")]
    pools = plan.request()["body"]["jobSpec"]["workerPoolSpecs"]
    assert pools[0]["diskSpec"]["bootDiskType"] == "pd-ssd"
