"""The dry run's CustomJob request, loaded with the real aiplatform client types."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from test_sweep_spec import params

from tfc_jupyter.backends.vertex import request as vertex_request
from tfc_jupyter.config import Settings
from tfc_jupyter.errors import SpecError
from tfc_jupyter.job import options
from tfc_jupyter.notebook.capture import Selection
from tfc_jupyter.notebook.convert import Cell
from tfc_jupyter.planner.plan import make_plan
from tfc_jupyter.sweep.spec import Param

types = pytest.importorskip("google.cloud.aiplatform_v1.types")

SA = "trainer@my-proj-1.iam.gserviceaccount.com"


def _job(settings: Settings, line: str) -> tuple[Any, dict[str, Any]]:
    """(CustomJob, request) of a one-cell notebook with these flags, as Vertex AI would get it
    (the request a ``--backend vertex`` dry run shows)."""
    sel = Selection(cells=[Cell(1, "print('hi')")], notebook=None, how="test")
    plan = make_plan(sel, options.parse_line(line), settings)
    request = vertex_request.custom_job_request(
        plan.spec,
        plan.image_uri,
        package_uri=plan.package_uri,
        own=vertex_request.own_options(plan),
    )
    if "--backend vertex" in line:
        assert request == plan.request()
    job = types.CustomJob.from_json(json.dumps(request["body"]))
    return job, request


def test_chief_only(settings: Settings) -> None:
    job, request = _job(settings, "--backend vertex --project my-proj-1")
    assert request["method"] == "POST"
    assert request["url"].endswith("/v1/projects/my-proj-1/locations/us-central1/customJobs")
    (pool,) = job.job_spec.worker_pool_specs
    assert pool.replica_count == 1
    assert pool.machine_spec.machine_type == "n1-standard-4"
    assert pool.machine_spec.accelerator_count == 0
    assert pool.container_spec.command == ["python", "-m", "tfc_runtime"]
    args = list(pool.container_spec.args)
    assert args[args.index("--strategy") + 1] == "none"  # one device: as in Jupyter
    assert pool.disk_spec.boot_disk_size_gb > 0
    assert job.display_name == "notebook"


def test_workers_go_in_pool_1(settings: Settings) -> None:
    job, _ = _job(settings, "--workers 3 --gpus 2 --gpu-type V100")
    chief, workers = job.job_spec.worker_pool_specs
    assert chief.replica_count == 1 and workers.replica_count == 3
    for pool in (chief, workers):
        spec = pool.machine_spec
        assert spec.machine_type == "n1-standard-16"
        assert spec.accelerator_type == types.AcceleratorType.NVIDIA_TESLA_V100
        assert spec.accelerator_count == 2
        args = list(pool.container_spec.args)
        assert args[args.index("--strategy") + 1] == "multi_worker_mirrored"
    assert chief.container_spec.image_uri == workers.container_spec.image_uri
    assert not job.job_spec.scheduling.restart_job_on_worker_restart


def test_worker_machine_differs_from_the_chief(settings: Settings) -> None:
    job, _ = _job(settings, "--workers 2 --machine CPU --worker-machine A100_1X")
    chief, workers = job.job_spec.worker_pool_specs
    assert chief.machine_spec.machine_type == "n1-standard-4"
    assert workers.machine_spec.machine_type == "a2-highgpu-1g"
    assert workers.machine_spec.accelerator_type == types.AcceleratorType.NVIDIA_TESLA_A100


def test_tpu_v3_8(settings: Settings) -> None:
    job, _ = _job(settings, "--tpu v3-8 --backend vertex")
    (pool,) = job.job_spec.worker_pool_specs
    assert pool.machine_spec.machine_type == "cloud-tpu"
    assert pool.machine_spec.accelerator_type == types.AcceleratorType.TPU_V3
    assert pool.machine_spec.accelerator_count == 8
    assert pool.replica_count == 1
    args = list(pool.container_spec.args)
    assert args[args.index("--strategy") + 1] == "tpu"


@pytest.mark.parametrize(
    ("tpu", "machine_type", "topology"),
    [
        ("v5e-1", "ct5lp-hightpu-1t", "1x1"),
        ("v5e-4", "ct5lp-hightpu-4t", "2x2"),
        ("v5e-8", "ct5lp-hightpu-8t", "2x4"),
    ],
)
def test_tpu_v5e(settings: Settings, tpu: str, machine_type: str, topology: str) -> None:
    job, _ = _job(settings, f"--tpu {tpu}")
    (pool,) = job.job_spec.worker_pool_specs
    assert pool.machine_spec.machine_type == machine_type
    assert pool.machine_spec.tpu_topology == topology
    assert pool.machine_spec.accelerator_count == 0


def test_labels_account_scheduling_and_outputs(settings: Settings) -> None:
    job, _ = _job(
        settings,
        f"--label team=ml --label run=7 --service-account {SA} --timeout 90m --spot "
        "--base-output-dir gs://bucket/out --network projects/1/global/networks/n "
        "--name resnet --args '--epochs 3'",
    )
    assert dict(job.labels) == {"team": "ml", "run": "7", "tfc-jupyter": "1"}
    assert job.job_spec.service_account == SA
    assert job.job_spec.scheduling.timeout.total_seconds() == 90 * 60
    assert job.job_spec.scheduling.strategy == types.Scheduling.Strategy.SPOT
    assert job.job_spec.base_output_directory.output_uri_prefix == "gs://bucket/out"
    assert job.job_spec.network == "projects/1/global/networks/n"
    assert job.display_name == "resnet"
    (pool,) = job.job_spec.worker_pool_specs
    assert list(pool.container_spec.args)[-2:] == ["--epochs", "3"]
    env = {e.name: e.value for e in pool.container_spec.env}
    assert env["TFC_JOB_NAME"] == "resnet"


def test_disable_retries_is_vertex_ai_s_own_flag(settings: Settings) -> None:
    """``--disable-retries`` is declared by the Vertex AI backend (``backends/vertex/options.py``),
    not the portable table: the request's ``scheduling.disableRetries``, as Google's types read
    it; left out, Vertex AI's default (retries) stands; on another backend it is refused."""
    line = "--backend vertex --project my-proj-1 --disable-retries"
    job, request = _job(settings, line)
    assert request["body"]["jobSpec"]["scheduling"] == {"disableRetries": True}
    assert job.job_spec.scheduling.disable_retries is True
    assert options.parse_line(line).target == (("disable_retries", True),)
    plain, _ = _job(settings, "--backend vertex --project my-proj-1")
    assert "scheduling" not in plain.job_spec and not plain.job_spec.scheduling.disable_retries
    with pytest.raises(SpecError) as refused:
        _job(settings, "--disable-retries")
    assert refused.value.field == "disable_retries"
    assert "on the local backend it would mean nothing" in str(refused.value)
    assert "disable_retries" not in {f.name for f in options.FIELDS}  # not a portable option


def test_standard_scheduling_sends_no_strategy(settings: Settings) -> None:
    job, request = _job(settings, "")
    assert "scheduling" not in request["body"]["jobSpec"]
    assert job.job_spec.scheduling.strategy == types.Scheduling.Strategy.STRATEGY_UNSPECIFIED


def test_sixty_four_labels_leave_no_room_for_ours(settings: Settings) -> None:
    labels = " ".join(f"--label k{i}=v" for i in range(64))
    job, _ = _job(settings, labels)
    assert len(job.labels) == 64 and "tfc-jupyter" not in job.labels


def test_body_round_trips_through_the_client(settings: Settings) -> None:
    _, request = _job(settings, f"--workers 1 --gpus 1 --timeout 2h --spot --service-account {SA}")
    job = types.CustomJob.from_json(json.dumps(request["body"]))
    again = json.loads(types.CustomJob.to_json(job))
    assert again["jobSpec"]["workerPoolSpecs"][1]["replicaCount"] == "1"
    assert again["jobSpec"]["scheduling"]["timeout"] == "7200s"
    assert again["labels"] == request["body"]["labels"]


def test_console_url_and_endpoint(settings: Settings) -> None:
    spec = options.to_spec(
        options.parse_line("--project my-proj-1 --region europe-west4"), settings
    )
    assert vertex_request.endpoint(spec) == "europe-west4-aiplatform.googleapis.com"
    url = vertex_request.console_url(spec, "123")
    assert "locations/europe-west4" in url and "project=my-proj-1" in url


def test_env_reaches_every_pool_as_given(settings: Settings) -> None:
    """--env goes into each pool's containerSpec.env, beside the job's own variables, and the
    dry run shows it (the real client parses it)."""
    job, request = _job(
        settings, "--workers 1 --env MODE=fast --env 'GREETING=hello, world=1' --dry-run"
    )
    for pool in job.job_spec.worker_pool_specs:
        env = {e.name: e.value for e in pool.container_spec.env}
        assert env["MODE"] == "fast" and env["GREETING"] == "hello, world=1"
        assert env["PYTHONUNBUFFERED"] == "1"
    assert {"name": "MODE", "value": "fast"} in (
        request["body"]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
    )


def test_a_sweep_on_vertex_ai_is_one_tuning_job_running_the_single_job_spec(
    settings: Settings,
) -> None:
    """Issue 37: the plan of a sweep on Vertex AI is a HyperparameterTuningJob (parsed strictly
    into aiplatform_v1's type) whose trialJobSpec is the CustomJobSpec one job of the same plan
    sends, multi-worker and GPUs included; its runtime writes the metric file Vizier reads."""
    cells = [
        Cell(1, "lr = 1e-3\nunits = 64\nact = 'relu'\nlayers = 2\n", ("parameters",)),
        Cell(2, "%%tfc_run\nprint(lr, units)\n"),
    ]
    sel = Selection(cells=cells, notebook=None, how="test")
    line = (
        '--sweep "lr=loguniform(1e-4,1e-1)" --sweep "units=[64,128,256]" --sweep '
        "\"act=['relu','tanh']\" --sweep \"layers=int(1,3)\" --trials 6 --parallel 2 "
        "--metric val_accuracy --backend vertex --project my-proj-1 --workers 1 --gpus 1 "
        "--image us-docker.pkg.dev/my-proj-1/r/i:1 --dry-run"
    )
    plan = make_plan(sel, options.parse_line(line), settings)
    request = plan.request()
    assert request["url"].endswith("/v1/projects/my-proj-1/locations/us-central1/"
                                   "hyperparameterTuningJobs")  # fmt: skip
    job = types.HyperparameterTuningJob.from_json(json.dumps(request["body"]))
    single = vertex_request.custom_job_body(plan.spec, plan.image_uri)
    assert request["body"]["trialJobSpec"] == single["jobSpec"]
    assert len(job.trial_job_spec.worker_pool_specs) == 2
    args = list(job.trial_job_spec.worker_pool_specs[0].container_spec.args)
    assert args[args.index("--hp-metric") + 1] == "val_accuracy"
    assert args[args.index("--params") + 1].split(",")[0].startswith("lr:float:")
    study = job.study_spec
    assert [(m.metric_id, m.goal.name) for m in study.metrics] == [("val_accuracy", "MAXIMIZE")]
    lr, units, act, layers = study.parameters
    assert (lr.double_value_spec.min_value, lr.scale_type.name) == (1e-4, "UNIT_LOG_SCALE")
    assert list(units.discrete_value_spec.values) == [64, 128, 256]
    assert list(act.categorical_value_spec.values) == ["relu", "tanh"]
    assert (layers.integer_value_spec.min_value, layers.integer_value_spec.max_value) == (1, 3)
    assert (job.max_trial_count, job.parallel_trial_count, job.max_failed_trial_count) == (6, 2, 2)
    assert study.algorithm.name == "ALGORITHM_UNSPECIFIED"  # Vizier's Bayesian optimization
    launched = make_plan(sel, options.parse_line(line.replace(" --dry-run", "")), settings)
    assert launched.sweep is not None and launched.refused is None  # Vertex AI runs it


@given(params())
def test_every_swept_space_is_a_parameter_spec_vertex_ai_takes(param: Param) -> None:
    spec = vertex_request._parameter(param)
    parsed = types.StudySpec.ParameterSpec.from_json(json.dumps(spec))
    assert parsed.parameter_id == param.name
    if param.kind == "choice" and parsed.categorical_value_spec.values:
        assert list(parsed.categorical_value_spec.values) == [str(c) for c in param.choices]
