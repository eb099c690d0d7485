"""``tfc_jupyter.run(...)``: TensorFlow Cloud's ``tfc.run`` call, on this product's backends.

``import tfc_jupyter as tfc`` in place of ``import tensorflow_cloud as tfc`` is the only change a
TensorFlow Cloud script or notebook needs: the signature, the defaults and the checks are
``tfc.run``'s (the same arguments refused, each with one line naming the fix), and the call
returns what ``tfc.run`` returned (``{"job_id": ..., "docker_image": ...}``) with the job's
handle as ``.job``. Where this differs on purpose (the default chief, no bucket for local runs,
Vertex AI, the TPU layout, K80s) the README's "From tfc.run" table says so, row by row.

The entry point is a ``.py`` script (run as it is, from its folder, ``entry_point_args`` as its
``sys.argv``), a notebook, or None: in a notebook the cells above the cell that calls ``run()``;
in a script, the script itself, and the local process exits once the job is launched (as
``tfc.run`` did, so the script does not go on to train here). Inside the job ``run()`` returns
None at once (:func:`remote` is true there), so ``if tfc.remote():`` idioms work.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import registry
from .errors import SpecError
from .tfc_types import (
    ConfigError,
    DockerConfig,
    MachineConfig,
    MachineOptions,
    is_tpu_config,
    machine_options,
)

if TYPE_CHECKING:
    from .client import Client
    from .job.options import JobOptions
    from .jobs import Job
    from .notebook.capture import Selection
    from .planner.plan import Plan
    from .trials.trials import Sweep

_MAPPED = {
    "tpu": "worker_config=tfc.COMMON_MACHINE_CONFIGS['TPU'], worker_count=1",
    "gpus": "chief_config=tfc.MachineConfig(...)",
    "gpu_type": "chief_config=tfc.MachineConfig(...)",
    "machine": "chief_config=",
    "worker_machine": "worker_config=",
    "workers": "worker_count=",
    "strategy": "distribution_strategy=",
    "requirements": "requirements_txt=",
    "args": "entry_point_args=",
    "label": "job_labels=",
    "image": "docker_config=tfc.DockerConfig(image=...)",
    "parent_image": "docker_config=tfc.DockerConfig(parent_image=...)",
    "cache_from": "docker_config=tfc.DockerConfig(cache_from=...)",
    "build_bucket": "docker_config=tfc.DockerConfig(image_build_bucket=...)",
    "notebook": "entry_point=",
}
"""Our option names that tfc.run's own arguments set: given as keywords they are refused."""
_LABEL = re.compile(r"[a-z0-9_-]+")
_SERVICE_ACCOUNT = re.compile(r"^.*@([a-z0-9\-]){6,30}\.iam\.gserviceaccount\.com$")


class UnknownArguments(SpecError, TypeError):
    """A keyword ``run()`` does not take: a ``TypeError``, as tfc.run raised."""


T = TypeVar("T")


def remote() -> bool:
    """True inside a job (as ``tfc.remote()``): ``run()`` then returns at once."""
    from tfc_runtime import remote as in_job

    return in_job()


def run_cloudtuner(num_jobs: int = 1, **kwargs: Any) -> RunResult | Plan | Sweep | None:
    """``tfc.run_cloudtuner``: :func:`run` for code that tunes with ``CloudTuner``. With
    ``num_jobs`` N above 1 the tuners share one oracle, as Keras Tuner's distributed search:
    the chief runs the oracle and N workers tune (``--workers N``). None inside a job."""
    if num_jobs < 1:
        raise ConfigError(f"num_jobs {num_jobs} is below 1", "pass num_jobs=1 or more")
    if num_jobs > 1:
        kwargs["worker_count"] = num_jobs
        kwargs.setdefault("worker_config", kwargs.get("chief_config", "auto"))
    return run(**kwargs)


def hp(name: str, default: T) -> T:
    """A value a sweep may set, for code that prefers a call to a plain assignment:
    ``lr = tfc_jupyter.hp("lr", 1e-3)``. In the kernel (and in a job that is no sweep trial)
    it is ``default``; in a trial of ``--sweep "lr=..."``, the trial's value."""
    if not remote():
        return default
    from tfc_runtime.params import hp as trial_value

    return cast(T, trial_value(name, cast(Any, default)))


class RunResult(dict[str, Any]):
    """What ``tfc.run`` returned, ``{"job_id": ..., "docker_image": ...}`` (None on the local
    backend, which builds no image), with the job's handle as :attr:`job` (``wait()``,
    ``follow()``, ``metrics``, ``load_model()``, ``cancel()``)."""

    def __init__(self, job: Job, docker_image: str | None) -> None:
        super().__init__(job_id=job.id, docker_image=docker_image)
        self.job = job


def run(
    entry_point: str | os.PathLike[str] | None = None,
    requirements_txt: str | os.PathLike[str] | None = None,
    docker_config: DockerConfig | str = "auto",
    distribution_strategy: str | None = "auto",
    chief_config: MachineConfig | str = "auto",
    worker_config: MachineConfig | str = "auto",
    worker_count: int = 0,
    entry_point_args: Sequence[str] | None = None,
    stream_logs: bool = False,
    job_labels: Mapping[str, str] | None = None,
    service_account: str | None = None,
    **kwargs: Any,
) -> RunResult | Plan | Sweep | None:
    """Run TensorFlow code as a job, as ``tfc.run`` did (see the module docstring).

    Args:
        entry_point: a ``.py`` script or an ``.ipynb`` notebook; None: this notebook's cells
            above the calling cell, or the running script.
        requirements_txt: a requirements file, merged with the notebook's ``%pip`` lines.
        docker_config: ``"auto"`` or a :class:`DockerConfig`.
        distribution_strategy: ``"auto"`` (the code decides, see the README) or None (none).
        chief_config: ``"auto"`` (this machine on the local backend, the configured default
            on Vertex AI) or a :class:`MachineConfig`.
        worker_config: ``"auto"`` (the chief's machine) or a :class:`MachineConfig`; a TPU
            config with ``worker_count=1`` is a TPU job.
        worker_count: workers besides the chief.
        entry_point_args: the script's arguments (``sys.argv[1:]``).
        stream_logs: follow the job and print its logs until it ends.
        job_labels: labels (at most 64; keys and values lowercase-first, ``[a-z0-9_-]``).
        service_account: the Vertex AI job's service account email.
        **kwargs: ``tfc.run``'s ``docker_image_bucket_name`` / ``docker_base_image``, and any
            ``%%tfc_run`` option by name (``backend="docker"``, ``project=``, ``region=``,
            ``env=[...]``, ``include=[...]``, ``timeout="2h"`` ...).

    Every ``%%tfc_run`` flag is a keyword of the same meaning: ``dry_run=True`` shows the plan
    and returns it, launching nothing; ``wait=True`` follows the job's logs until it ends (as
    ``stream_logs=True``), ``verbose=True`` with every line.

    Returns:
        ``{"job_id", "docker_image"}`` with ``.job``; the :class:`~tfc_jupyter.planner.plan.Plan`
        for ``dry_run=True``; with ``sweep=[...]``, the ended
        :class:`~tfc_jupyter.trials.trials.Sweep` (``.best`` is the best trial's job); None inside
        a job.

    Raises:
        ValueError: an argument tfc.run refused (a :class:`~tfc_jupyter.errors.TfcError` too).
        TfcError: the job cannot be planned or launched, with the fix.
        SweepFailed: a sweep stopped as its trials failed, or its tuning job failed
            (:class:`~tfc_jupyter.trials.trial_table.SweepFailed`; ``.sweep`` is the sweep).
    """
    if remote():
        return None
    shell = _shell()
    options = job_options(
        entry_point=entry_point,
        requirements_txt=requirements_txt,
        docker_config=docker_config,
        distribution_strategy=distribution_strategy,
        chief_config=chief_config,
        worker_config=worker_config,
        worker_count=worker_count,
        entry_point_args=entry_point_args,
        stream_logs=stream_logs,
        job_labels=job_labels,
        service_account=service_account,
        **kwargs,
    )
    if options.interactive:
        raise ConfigError(
            "run() does not open the launch panel",
            "use %%tfc_run --interactive in a notebook cell, or %tfc_panel",
            field="interactive",
        )
    client = _client(shell)
    plan = plan_entry(client, entry_point, options, shell)
    if options.dry_run:  # the plan, with the backend's verdict as launching would say it
        _show(plan, shell)
        if entry_point is None and shell is None:
            sys.exit(0)  # as a launch: the script does not go on to train here
        return plan
    if plan.refused is not None:
        raise plan.refused
    for warning in plan.warnings:
        print(f"! {warning}", file=sys.stderr)
    if plan.sweep is not None:  # sweep=[...]: its trials, to the end (tfc_jupyter.trials.trials)
        return _sweep(client, plan)
    follow = stream_logs or ("wait" in options.given and options.wait)  # the magic's wait=True
    result = _launch(client, plan, follow=follow, verbose=options.verbose, shell=shell)
    if entry_point is None and shell is None:
        sys.exit(0)  # as tfc.run: the script's own process does not go on to train here
    return result


def _sweep(client: Client, plan: Plan) -> Sweep:
    """Run ``plan``'s sweep to its end, its summary line on stderr.

    Raises:
        SweepFailed: its trials stopped it, or its tuning job failed.
    """
    from .trials.trial_table import SweepFailed
    from .trials.trials import run_sweep

    sweep = run_sweep(client, plan)
    print(sweep.summary_line(), file=sys.stderr)
    if sweep.failure:  # its trials stopped it, or its tuning job failed
        raise SweepFailed(sweep)
    return sweep


def _launch(client: Client, plan: Plan, *, follow: bool, verbose: bool, shell: Any) -> RunResult:
    """Submit ``plan``, say so on stderr, and with ``follow`` print the job's logs to its end."""
    job = client.submit(plan)
    spec = plan.spec
    print(
        f"Launched {job.id} on {spec.backend.value}: chief"
        + (f" + {spec.worker_count} worker(s)" if spec.worker_count else "")
        + f", strategy {spec.resolved_strategy().value}.",
        file=sys.stderr,
    )
    result = RunResult(job, plan.image_uri if registry.traits(spec.backend).runs_image else None)
    if follow:
        job.follow(verbose=verbose)
        print(job.summary_line(), file=sys.stderr)
        if shell is not None:  # in a kernel: what the job gave back is set (events.JOB_ENDED),
            job.wait()  # a failed job's names made before its failure too (partial_names)
    return result


def job_options(
    *,
    entry_point: Any = None,
    requirements_txt: Any = None,
    docker_config: Any = "auto",
    distribution_strategy: Any = "auto",
    chief_config: Any = "auto",
    worker_config: Any = "auto",
    worker_count: Any = 0,
    entry_point_args: Any = None,
    stream_logs: Any = False,
    job_labels: Any = None,
    service_account: Any = None,
    **kwargs: Any,
) -> JobOptions:
    """tfc.run's arguments, checked in tfc.run's order, as one :class:`JobOptions`.

    Raises:
        ConfigError: what tfc.run refused (a ``ValueError``), one line naming the fix.
    """
    from .job.options import JobOptions, backend_fields

    _check_files(entry_point, requirements_txt)
    if isinstance(worker_count, str) and worker_count.strip().isdigit():
        worker_count = int(worker_count)  # tfc.run took int(worker_count): "2" is 2
    if distribution_strategy not in ("auto", None):
        raise ConfigError(
            f"Invalid `distribution_strategy` {distribution_strategy!r}: expected 'auto' or None",
            "pass distribution_strategy='auto' (the code decides) or None (the code makes "
            "its own strategy), or strategy='mirrored' ... to force one",
            field="distribution_strategy",
        )
    machines = _cluster(chief_config, worker_config, worker_count)
    labels = _labels(job_labels)
    region = kwargs.get("region")
    if region is not None and not isinstance(region, str):
        raise ConfigError(
            f"Invalid `region` {region!r}: expected None or a string", "pass region='us-central1'"
        )
    if entry_point_args is not None and not isinstance(entry_point_args, (list, tuple)):
        raise ConfigError(
            f"Invalid `entry_point_args` {entry_point_args!r}: expected None or a list",
            "pass a list of strings, e.g. entry_point_args=['--epochs', '3']",
            field="entry_point_args",
        )
    if not isinstance(stream_logs, bool):
        raise ConfigError(
            f"Invalid `stream_logs` {stream_logs!r}: expected a boolean",
            "pass stream_logs=True or False",
            field="stream_logs",
        )
    if service_account is not None and not (
        isinstance(service_account, str) and _SERVICE_ACCOUNT.match(service_account)
    ):
        raise ConfigError(
            f"Invalid service_account {service_account!r}",
            "pass an email like NAME@PROJECT-ID.iam.gserviceaccount.com",
            field="service_account",
        )
    values: dict[str, Any] = {**machines, **_docker(docker_config, kwargs)}
    known = {f.name for f in dataclasses.fields(JobOptions) if f.name not in ("given", "target")}
    unknown = sorted(k for k in kwargs if k not in known)
    if unknown:  # an installed backend's own option?
        known |= {f.name for f in backend_fields()}
        unknown = sorted(k for k in kwargs if k not in known)
    if unknown:
        raise UnknownArguments(
            f"Unknown keyword arguments: {', '.join(unknown)}",
            "pass tfc.run's arguments, or %%tfc_run options by name: "
            + ", ".join(sorted(known - set(_MAPPED))),
            field=unknown[0],
        )
    for key in kwargs:
        if key in _MAPPED:
            raise ConfigError(
                f"run() takes tfc.run's {_MAPPED[key].split('=')[0]} for {key!r}",
                f"pass {_MAPPED[key]} instead of {key}=",
                field=key,
            )
    values.update(kwargs)
    if distribution_strategy is None:
        values["strategy"] = "none"
    if requirements_txt is not None:
        values["requirements"] = (os.fspath(Path(requirements_txt).resolve()),)
    if entry_point_args:
        values["args"] = shlex.join(str(a) for a in entry_point_args)
    if labels:
        values["label"] = tuple(f"{k}={v}" for k, v in labels.items())
    if service_account is not None:
        values["service_account"] = service_account
    try:
        return JobOptions.of(**values)
    except SpecError as exc:
        raise ConfigError(exc.message, exc.hint, field=exc.field) from None


def _check_files(entry_point: Any, requirements_txt: Any) -> None:
    for name, value in (("entry_point", entry_point), ("requirements_txt", requirements_txt)):
        if value is None:
            continue
        try:
            found = Path(os.fspath(value)).is_file()
        except OSError as exc:  # a folder on the way this user may not read
            raise ConfigError(
                f"Invalid `{name}` {os.fspath(value)!r}: {exc.strerror or exc}",
                "check its permissions and its folders' (each must be readable by you)",
                field=name,
            ) from None
        if not found:
            raise ConfigError(
                f"Invalid `{name}` {os.fspath(value)!r}: no such file (from {os.getcwd()})",
                f"pass {name} as a path to an existing file, relative to the current folder",
                field=name,
            )
    if entry_point is not None and not os.fspath(entry_point).endswith(("py", "ipynb")):
        raise ConfigError(
            f"Invalid `entry_point` {os.fspath(entry_point)!r}: expected a Python file or a "
            "notebook",
            "pass a .py script or an .ipynb notebook",
            field="entry_point",
        )


def _cluster(chief: Any, worker: Any, count: Any) -> dict[str, Any]:
    """chief_config / worker_config / worker_count as options, checked as tfc.run did."""
    if chief != "auto" and not isinstance(chief, MachineConfig):
        raise ConfigError(
            f"Invalid `chief_config` {chief!r}: expected 'auto' or a MachineConfig",
            "pass chief_config=tfc.COMMON_MACHINE_CONFIGS['T4_1X'] or tfc.MachineConfig(...)",
            field="chief_config",
        )
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ConfigError(
            f"Invalid `worker_count` {count!r}: expected 0 or more",
            "pass worker_count=0 (the chief alone) or more",
            field="worker_count",
        )
    if count > 0 and worker != "auto" and not isinstance(worker, MachineConfig):
        raise ConfigError(
            f"Invalid `worker_config` {worker!r}: expected 'auto' or a MachineConfig",
            "pass worker_config=tfc.COMMON_MACHINE_CONFIGS['T4_1X'] or tfc.MachineConfig(...)",
            field="worker_config",
        )
    if is_tpu_config(chief):
        raise ConfigError(
            "Invalid `chief_config`: it cannot be a TPU config",
            "pass the TPU as worker_config=tfc.COMMON_MACHINE_CONFIGS['TPU'] with worker_count=1",
            field="chief_config",
        )
    if is_tpu_config(worker):
        if count != 1:
            raise ConfigError(
                f"Invalid `worker_count` {count}: a TPU worker_config takes worker_count=1",
                "pass worker_count=1 (the TPU host's 8 cores are the replicas)",
                field="worker_count",
            )
        return {"tpu": machine_options(worker).tpu}  # the TPU VM is the host: one replica
    out: dict[str, Any] = {"workers": count}
    mine = machine_options(chief) if isinstance(chief, MachineConfig) else MachineOptions()
    out.update(_as_chief(mine))
    if count and isinstance(worker, MachineConfig) and worker != chief:
        out["worker_machine"] = _as_worker(machine_options(worker), mine)
    return out


def _as_chief(machine: MachineOptions) -> dict[str, Any]:
    """The chief's options: a preset name (``T4_1X`` carries its GPUs), or an n1 machine type
    with its GPUs as ``gpus`` and ``gpu_type``."""
    out: dict[str, Any] = {}
    if machine.machine:
        out["machine"] = machine.machine
        if machine.gpus and "_" not in machine.machine:  # n1-standard-8 + 2 x T4
            out["gpus"], out["gpu_type"] = machine.gpus, machine.gpu_type
    return out


def _as_worker(worker: MachineOptions, chief: MachineOptions) -> str:
    """The worker's machine name; refused where the options cannot say it (a worker whose
    GPUs differ from the chief's on a host that is not a preset's)."""
    name = worker.machine or "CPU"
    preset = "_" in name or name == "CPU"
    chief_gpus_apply = chief.gpus and "_" not in (chief.machine or "_")
    if preset and not (chief_gpus_apply and name == "CPU"):
        return name
    if not preset and (worker.gpus, worker.gpu_type) == (chief.gpus, chief.gpu_type):
        return name
    raise ConfigError(
        "this worker_config beside this chief_config has no Vertex AI pool shape here",
        "use tfc.COMMON_MACHINE_CONFIGS entries for both, or the same machine for both",
        field="worker_config",
    )


def _labels(labels: Any) -> dict[str, str]:
    """job_labels, checked as tfc.run did (our spec checks Vertex AI's rules after)."""
    if labels is None:
        return {}
    if not isinstance(labels, Mapping):
        raise ConfigError(
            f"Invalid job labels {labels!r}: expected a dict of str to str",
            "pass job_labels={'team': 'vision'}",
            field="job_labels",
        )
    if len(labels) > 64:
        raise ConfigError(
            f"Invalid job labels: {len(labels)} labels, at most 64",
            "drop some labels",
            field="job_labels",
        )
    for key, value in labels.items():
        for what, text in (("key", key), ("value", value)):
            if not isinstance(text, str) or not text or not text[0].islower():
                raise ConfigError(
                    f"Invalid job labels: label {what} {text!r} must start with a lowercase letter",
                    f"write the {what} in lowercase letters, digits, '_' and '-'",
                    field="job_labels",
                )
            if len(text) > 63:
                raise ConfigError(
                    f"Invalid job labels: label {what} {text[:20]!r}... is {len(text)} "
                    "characters, at most 63",
                    f"shorten the {what}",
                    field="job_labels",
                )
            if not _LABEL.fullmatch(text):
                raise ConfigError(
                    f"Invalid job labels: label {what} {text!r} may hold only lowercase letters, "
                    "digits, _ and -",
                    f"rewrite the {what}",
                    field="job_labels",
                )
    return dict(labels)


def _docker(config: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """docker_config (and tfc.run's older docker_image_bucket_name / docker_base_image)."""
    if config == "auto" or config is None:
        config = DockerConfig()
    if not isinstance(config, DockerConfig):
        raise ConfigError(
            f"Invalid `docker_config` {config!r}: expected 'auto' or a DockerConfig",
            "pass docker_config=tfc.DockerConfig(parent_image=...)",
            field="docker_config",
        )
    bucket = kwargs.pop("docker_image_bucket_name", None) or config.image_build_bucket
    parent = kwargs.pop("docker_base_image", None) or config.parent_image
    out = {
        "image": config.image,
        "parent_image": parent,
        "cache_from": config.cache_from,
        "build_bucket": bucket,
    }
    return {k: v for k, v in out.items() if v is not None}


def _show(plan: Plan, shell: Any) -> None:
    """A dry run's plan: displayed in a notebook (text and HTML), printed elsewhere."""
    if shell is None:
        print(plan.to_text())
        return
    from IPython.display import display

    display({"text/plain": plan.to_text(), "text/html": plan._repr_html_()}, raw=True)


# ---------------------------------------------------------------------- planning the entry point
def _shell() -> Any:
    """The running IPython shell, or None (a plain Python process)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    get = getattr(ipython, "get_ipython", None)
    return get() if get else None


def _client(shell: Any) -> Client:
    from .client import Client
    from .config import load_settings

    return Client(load_settings(getattr(shell, "config", None)) if shell is not None else None)


def plan_entry(client: Client, entry_point: Any, options: JobOptions, shell: Any) -> Plan:
    """The plan of the entry point: a file, this notebook's cells above the calling cell, or
    the running script."""
    if entry_point is not None:
        return client.plan_file(Path(os.fspath(entry_point)), options, how="entry_point")
    if shell is not None:
        return client.plan(_cells_above(shell, options), options)
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if not script or not str(script).endswith(".py"):
        raise ConfigError(
            "entry_point=None names the running script or notebook, and this is neither",
            "pass entry_point='train.py' (or a notebook)",
            field="entry_point",
        )
    return client.plan_script(Path(script), options, how="the running script")


def _cells_above(shell: Any, options: JobOptions) -> Selection:
    """This notebook's cells above the one calling run() (the kernel's history without one)."""
    from .notebook import capture
    from .notebook.convert import Cell

    ns = getattr(shell, "user_ns", {}) or {}
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    inputs = list(history or ns.get("In") or [""])
    current = inputs[-1] if len(inputs) > 1 else ""
    path, how, warnings = capture.find_notebook(options.notebook, user_ns=ns)
    if path is None and current.strip():  # nbconvert, papermill: the kernel's folder's notebook
        started = ns.get("_dh") or [None]
        folders = [Path(str(f)) for f in (started[0], os.getcwd()) if f]
        path, found = capture.folder_notebook(folders, current, inputs[1:-1])
        how, warnings = (capture.FOLDER_HOW if path is not None else how), warnings + found
    if path is not None:
        nb = capture.read_notebook(path)
        selection = capture.select_above(nb, path=path, how=how, source=current)
    else:
        cells = [
            Cell(n, text, (), label="In")
            for n, text in enumerate(inputs[1:-1], start=1)
            if text.strip() and not text.lstrip().startswith(("%load_ext", "%tfc"))
        ]
        selection = capture.Selection(cells=cells, notebook=None, how="kernel history")
        warnings.append(
            f"no notebook file found: used this kernel's input history ({len(cells)} inputs) "
            "above this cell; pass notebook='PATH.ipynb' to use the notebook"
        )
    selection.warnings[:0] = warnings
    return selection
