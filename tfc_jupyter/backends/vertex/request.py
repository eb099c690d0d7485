"""JobSpec -> the exact Vertex AI ``CustomJob`` REST request (v1), without importing aiplatform.

The body is the JSON the aiplatform client sends over REST (``CustomJob.to_json`` form: camelCase,
int64 as strings), so a dry run shows exactly what a launch would send, and the Vertex backend
submits this same body.
"""

from __future__ import annotations

import itertools
import re
from typing import TYPE_CHECKING, Any

from tfc_runtime.protocol import REPORT_KEY_ENV, ROLES

from ...errors import Fix, SpecError
from ...job.catalog import Machine
from ...job.options import target_options
from ...job.replica import container_args
from ...job.spec import JOB_ENV, JobSpec
from ...registry import DEFAULT as DEFAULT_BACKEND
from ...registry import Preview
from . import scheduling
from .options import VERTEX_DEFAULTS, VertexOptions

if TYPE_CHECKING:
    from ...planner.plan import Plan
    from ...sweep.spec import Param, SweepSpec

PACKAGE_MODULE = "tfc_job.task"  # the package route's entry point (.wheel)


def parent_path(spec: JobSpec) -> str:
    """``projects/P/locations/R``."""
    return f"projects/{spec.google.project or 'PROJECT'}/locations/{spec.google.region}"


def endpoint(spec: JobSpec) -> str:
    """The regional API endpoint host."""
    return f"{spec.google.region}-aiplatform.googleapis.com"


def console_url(spec: JobSpec, job_id: str, *, tuning: bool = False) -> str:
    """The Google Cloud console page of a custom job (``tuning``: of a tuning job, its
    trials)."""
    return (
        f"https://console.cloud.google.com/vertex-ai/locations/{spec.google.region}/training/"
        f"{job_id}{'' if tuning else '/cpu'}?project={spec.google.project or 'PROJECT'}"
    )


def _machine_spec(machine: Machine) -> dict[str, Any]:
    spec: dict[str, Any] = {"machineType": machine.machine_type}
    if machine.tpu_topology:
        spec["tpuTopology"] = machine.tpu_topology
    elif machine.accelerator_type:
        spec["acceleratorType"] = machine.accelerator_type
        spec["acceleratorCount"] = machine.accelerator_count
    return spec


_EXPANDED = re.compile(r"\$(?=[$(])")


def literal(value: str) -> str:
    """``value`` as an ``EnvVar.value`` Vertex AI passes on unchanged: it expands ``$(NAME)`` and
    reduces ``$$`` to ``$`` (Kubernetes' rule, :data:`vertex_rules.ENV_EXPANSION_URL`), so each
    ``$`` before ``(`` or ``$`` is doubled. The job then sees what the local and docker
    backends give it: the text as written."""
    return _EXPANDED.sub("$$", value)


def _env(spec: JobSpec) -> list[dict[str, str]]:
    """The pool's variables: the job's own (:data:`JOB_ENV`) and --env, values kept literal."""
    own = dict(zip(JOB_ENV, (spec.name, "1"), strict=True))
    return [{"name": name, "value": literal(value)} for name, value in (*own.items(), *spec.env)]


def _pool(
    spec: JobSpec, machine: Machine, replicas: int, image_uri: str, package_uri: str | None
) -> dict[str, Any]:
    env = _env(spec)
    machine_spec = _machine_spec(machine)
    affinity = scheduling.reservation_affinity(spec, machine)
    if affinity is not None:
        machine_spec["reservationAffinity"] = affinity
    pool: dict[str, Any] = {"machineSpec": machine_spec, "replicaCount": str(replicas)}
    if package_uri:  # the package route: the code as a package on a prebuilt image
        pool["pythonPackageSpec"] = {
            "executorImageUri": image_uri,
            "packageUris": [package_uri],
            "pythonModule": PACKAGE_MODULE,
            "args": container_args(spec),
            "env": env,
        }
    else:
        pool["containerSpec"] = {
            "imageUri": image_uri,
            "command": ["python", "-m", "tfc_runtime"],
            "args": container_args(spec),
            "env": env,
        }
    if not machine.is_tpu:
        pool["diskSpec"] = scheduling.disk_spec(spec, machine.machine_type)
    return pool


def with_report_key(body: dict[str, Any], key: str) -> dict[str, Any]:
    """``body`` (a CustomJob's or a tuning job's) with the job's report key in every pool's
    environment: the runtime signs each report line with it (``tfc_runtime.reportkey``), so a
    line the code prints is never read as a report. Made at launch, it is not in the request a
    dry run shows."""
    out = {**body}
    place = "trialJobSpec" if "trialJobSpec" in body else "jobSpec"
    pools = []
    for pool in body[place]["workerPoolSpecs"]:
        pool = {**pool}
        for kind in ("containerSpec", "pythonPackageSpec"):
            if kind in pool:
                env = [e for e in pool[kind].get("env", []) if e.get("name") != REPORT_KEY_ENV]
                pool[kind] = {**pool[kind], "env": [*env, {"name": REPORT_KEY_ENV, "value": key}]}
        pools.append(pool)
    out[place] = {**body[place], "workerPoolSpecs": pools}
    return out


def worker_pools(
    spec: JobSpec, image_uri: str, package_uri: str | None = None
) -> list[dict[str, Any]]:
    """Pools by position: 0 chief, 1 workers, 2 parameter servers, 3 evaluator (each runs the
    image, or with ``package_uri`` that package on the prebuilt image ``image_uri``).

    Position is meaning on Vertex AI (TF_CONFIG names tasks by it): an unused pool before a used
    one stays as ``{}``, unused pools at the end are left out.
    """
    used = {pool.role: pool for pool in spec.pools()}
    pools = [
        _pool(spec, used[role].machine, used[role].replicas, image_uri, package_uri)
        if role in used
        else {}
        for role in ROLES
    ]
    while pools and not pools[-1]:
        pools.pop()
    return pools


def custom_job_body(
    spec: JobSpec,
    image_uri: str,
    display_name: str | None = None,
    package_uri: str | None = None,
    own: VertexOptions = VERTEX_DEFAULTS,
) -> dict[str, Any]:
    """The ``CustomJob`` resource the job is created with (``package_uri``: the package route,
    ``image_uri`` then the prebuilt image it runs on; ``own``: the options Vertex AI's backend
    declares, from the plan's options)."""
    job_spec: dict[str, Any] = {"workerPoolSpecs": worker_pools(spec, image_uri, package_uri)}
    when: dict[str, Any] = {}
    if spec.timeout_s:
        when["timeout"] = f"{spec.timeout_s}s"
    if spec.google.scheduling != "standard":
        when["strategy"] = spec.google.scheduling.upper()
    if spec.google.max_wait_s is not None:
        when["maxWaitDuration"] = f"{spec.google.max_wait_s}s"
    if spec.replica_count > 1 or spec.google.restart_on_worker_restart:
        when["restartJobOnWorkerRestart"] = spec.google.restart_on_worker_restart
    if own.disable_retries:
        when["disableRetries"] = True
    if when:
        job_spec["scheduling"] = when
    if spec.google.persistent_resource:
        job_spec["persistentResourceId"] = spec.google.persistent_resource
    if spec.google.web_access:
        job_spec["enableWebAccess"] = True
    if spec.google.service_account:
        job_spec["serviceAccount"] = spec.google.service_account
    if spec.google.network:
        job_spec["network"] = spec.google.network
    if spec.google.psc_network_attachment:
        job_spec["pscInterfaceConfig"] = {"networkAttachment": spec.google.psc_network_attachment}
    if spec.base_output_dir:
        job_spec["baseOutputDirectory"] = {"outputUriPrefix": spec.base_output_dir}
    if spec.google.tensorboard:
        job_spec["tensorboard"] = spec.google.tensorboard
    body: dict[str, Any] = {"displayName": display_name or spec.name, "jobSpec": job_spec}
    labels = dict(spec.labels)
    if len(labels) < 64:  # Vertex allows 64 labels; ours only when there is room
        labels.setdefault("tfc-jupyter", "1")
    body["labels"] = labels
    return body


def custom_job_request(
    spec: JobSpec,
    image_uri: str,
    display_name: str | None = None,
    package_uri: str | None = None,
    own: VertexOptions = VERTEX_DEFAULTS,
) -> dict[str, Any]:
    """Method, URL and body of the create request, as a dry run shows it."""
    return {
        "method": "POST",
        "url": f"https://{endpoint(spec)}/v1/{parent_path(spec)}/customJobs",
        "body": custom_job_body(spec, image_uri, display_name, package_uri, own),
    }


def own_options(plan: Plan) -> VertexOptions:
    """The options Vertex AI's backend declares, as the plan's options set them."""
    return own_options_of(plan.options)


def own_options_of(options: Any) -> VertexOptions:
    """The options Vertex AI's backend declares, as ``options`` (a ``JobOptions``) set them."""
    return target_options(options, VertexOptions)


ALGORITHMS = {"bayes": "ALGORITHM_UNSPECIFIED", "random": "RANDOM_SEARCH", "grid": "GRID_SEARCH"}
"""Sweep method (``--method``, :mod:`tfc_jupyter.sweep.methods`) -> Vertex AI's algorithm
(unspecified is Vizier's Bayesian optimization): the methods this backend runs (its traits'
``sweep_methods``); the plan refuses the others."""


def _algorithm(method: str) -> str:
    """Vertex AI's algorithm for a sweep method.

    Raises:
        SpecError: a method Vertex AI does not run (the plan refuses it first).
    """
    if method not in ALGORITHMS:
        raise SpecError(
            f"Vertex AI cannot run --method {method}",
            f"use --method {' or '.join(ALGORITHMS)}, or --backend local",
            field="method",
        )
    return ALGORITHMS[method]


DISCRETE_MAX = 1_000
"""The most values of a ``DiscreteValueSpec`` (StudySpec.ParameterSpec)."""
DISCRETE_GAP = 1e-10
"""A ``DiscreteValueSpec``'s values are in increasing order, at least this far apart."""


def _parameter(param: Param) -> dict[str, Any]:
    """One swept name as a Vertex AI ``ParameterSpec``, as Vizier takes it: a discrete spec's
    values in increasing order (the notebook's order was sent), at least 1e-10 apart and at
    most 1,000; a categorical spec's values each once as text.

    Raises:
        SpecError: values Vertex AI would refuse, with the fixes as data.
    """
    spec: dict[str, Any] = {"parameterId": param.name}
    if param.kind in ("uniform", "loguniform"):
        spec["doubleValueSpec"] = {"minValue": param.low, "maxValue": param.high}
        spec["scaleType"] = "UNIT_LOG_SCALE" if param.kind == "loguniform" else "UNIT_LINEAR_SCALE"
    elif param.kind == "int" and param.step == 1:
        spec["integerValueSpec"] = {"minValue": str(int(param.low or 0)),
                                    "maxValue": str(int(param.high or 0))}  # fmt: skip
        spec["scaleType"] = "UNIT_LINEAR_SCALE"
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in param.grid() or ()):
        spec["discreteValueSpec"] = {"values": _discrete(param)}
    else:  # strings, booleans, mixed: the trial reads each back as the notebook wrote it
        spec["categoricalValueSpec"] = {"values": _categories(param)}
    return spec


def _refused(param: Param, why: str) -> SpecError:
    """Vertex AI's refusal of a swept name's values, with the fixes as data."""
    return SpecError(
        f"--sweep {param.name}: {why}",
        [
            Fix.give("sweep", f"{param.name}=[...]", after=" with values Vertex AI takes"),
            Fix.set("backend", DEFAULT_BACKEND, verb="use", after=" (Optuna takes them)"),
        ],
        field="sweep",
    )


def _discrete(param: Param) -> list[float]:
    """A discrete spec's values, increasing; refused over 1,000 or closer than 1e-10."""
    values = sorted(float(v) for v in param.grid() or ())
    if len(values) > DISCRETE_MAX:
        raise _refused(
            param, f"{len(values):,} values; Vertex AI takes at most {DISCRETE_MAX:,} in a list"
        )
    for low, high in itertools.pairwise(values):
        if high - low < DISCRETE_GAP:
            raise _refused(
                param,
                f"{low!r} and {high!r} are closer than {DISCRETE_GAP:g}, which Vertex AI refuses",
            )
    return values


def _categories(param: Param) -> list[str]:
    """A categorical spec's values as text, each once (``1`` and ``'1'`` are one category)."""
    out: list[str] = []
    for value in param.choices:
        text = str(value)
        if text in out:
            raise _refused(
                param, f"Vertex AI reads {text!r} twice among the categories {param.space}"
            )
        out.append(text)
    return out


def check_study(sweep: SweepSpec) -> None:
    """Refuse, as Vertex AI would, a sweep's study: each parameter's values (the plan's check,
    a dry run's too, before a request is shown or sent).

    Raises:
        SpecError: one line, with the fixes as data.
    """
    for param in sweep.params:
        _parameter(param)


def tuning_job_body(
    spec: JobSpec,
    sweep: SweepSpec,
    image_uri: str,
    package_uri: str | None = None,
    own: VertexOptions = VERTEX_DEFAULTS,
) -> dict[str, Any]:
    """The ``HyperparameterTuningJob`` of a sweep: Vizier's study (the metric and its goal,
    the parameters, the algorithm) over trials that each run the very CustomJobSpec one job of
    this plan would send (its runtime writes the metric file Vizier reads; the trial's values
    come as ``--NAME=VALUE`` arguments, which the runtime puts on the notebook's lines)."""
    single = custom_job_body(spec, image_uri, package_uri=package_uri, own=own)
    goal = "MAXIMIZE" if sweep.goal == "max" else "MINIMIZE"
    return {
        "displayName": single["displayName"],
        "studySpec": {
            "metrics": [{"metricId": sweep.metric, "goal": goal}],
            "parameters": [_parameter(p) for p in sweep.params],
            "algorithm": _algorithm(sweep.method),
            "measurementSelectionType": "LAST_MEASUREMENT",
        },
        "maxTrialCount": sweep.trials,
        "parallelTrialCount": sweep.parallel,
        "maxFailedTrialCount": sweep.max_failed,
        "trialJobSpec": single["jobSpec"],
        "labels": single["labels"],
    }


def preview(plan: Plan) -> Preview:
    """The dry run's view of ``plan`` on Vertex AI: the exact CustomJob create request (a
    sweep's: the HyperparameterTuningJob create request)."""
    if plan.sweep is not None:
        return Preview(
            "Vertex AI request (a hyperparameter tuning job)",
            {
                "method": "POST",
                "url": f"https://{endpoint(plan.spec)}/v1/{parent_path(plan.spec)}"
                "/hyperparameterTuningJobs",
                "body": tuning_job_body(
                    plan.spec, plan.sweep.spec, plan.image_uri, plan.package_uri, own_options(plan)
                ),
            },
        )
    return Preview(
        "Vertex AI request",
        custom_job_request(
            plan.spec, plan.image_uri, package_uri=plan.package_uri, own=own_options(plan)
        ),
    )
