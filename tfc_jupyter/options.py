"""The flags of ``%%tfc_run`` and ``tfc-jupyter plan``: declared once, read into a JobSpec.

The same table feeds IPython's ``magic_arguments`` (so ``%%tfc_run?`` lists every flag) and the
CLI's argparse parser, and :func:`spec_from_options` is the one place flags become a JobSpec.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from typing import Any, TypeVar

from . import catalog
from .config import Settings
from .errors import SpecError
from .spec import Backend, ImageSettings, JobSpec, parse_duration, parse_labels

F = TypeVar("F", bound=Callable[..., Any])


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


OPTIONS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (
        ("--tpu",),
        dict(
            nargs="?",
            const="v3-8",
            default=None,
            metavar="TYPE",
            help="Run on a TPU host: v2-8, v3-8 (default), v5e-1, v5e-4, v5e-8.",
        ),
    ),
    (
        ("--gpus",),
        dict(type=_count, default=None, metavar="N", help="GPUs per machine (chief and workers)."),
    ),
    (
        ("--gpu-type",),
        dict(
            default=None,
            metavar="TYPE",
            help=f"GPU type: {', '.join(catalog.GPU_TYPES)} (default T4).",
        ),
    ),
    (
        ("--machine",),
        dict(
            default=None,
            metavar="NAME",
            help="Chief machine: a catalog name (CPU, T4_1X, A100_8X ...) or a "
            "machine type (n1-standard-8). See %%tfc_machines.",
        ),
    ),
    (
        ("--workers",),
        dict(
            type=_count,
            default=0,
            metavar="N",
            help="Workers besides the chief (multi-worker training).",
        ),
    ),
    (
        ("--worker-machine",),
        dict(default=None, metavar="NAME", help="Worker machine (default: same as the chief)."),
    ),
    (
        ("--ps",),
        dict(
            type=_count,
            default=0,
            metavar="N",
            help="Parameter servers (tf.estimator training; Vertex AI pool 2).",
        ),
    ),
    (
        ("--ps-machine",),
        dict(default=None, metavar="NAME", help="Parameter server machine (default: CPU)."),
    ),
    (
        ("--evaluator",),
        dict(
            nargs="?",
            const="",
            default=None,
            metavar="MACHINE",
            help="Add an evaluator task (tf.estimator train_and_evaluate; Vertex AI pool 3), "
            "on MACHINE (default: the chief's).",
        ),
    ),
    (
        ("--strategy",),
        dict(
            default="auto",
            metavar="NAME",
            help="auto, one_device, mirrored, multi_worker_mirrored, tpu, none.",
        ),
    ),
    (
        ("--backend",),
        dict(default=None, metavar="NAME", help="local (this machine, default), docker or vertex."),
    ),
    (
        ("--requirements",),
        dict(
            action="append",
            default=[],
            metavar="FILE",
            help="A requirements.txt merged with the notebook's %%pip lines.",
        ),
    ),
    (
        ("--notebook",),
        dict(
            default=None,
            metavar="PATH",
            help="The notebook file (default: the kernel's own notebook).",
        ),
    ),
    (
        ("--name",),
        dict(default=None, metavar="NAME", help="Job display name (default: the notebook's name)."),
    ),
    (
        ("--label",),
        dict(action="append", default=[], metavar="KEY=VALUE", help="Job label; repeat for more."),
    ),
    (
        ("--args",),
        dict(
            default="",
            metavar="STRING",
            help="Arguments passed to the script (sys.argv), split like a shell.",
        ),
    ),
    (
        ("--service-account",),
        dict(default=None, metavar="EMAIL", help="Service account the Vertex AI job runs as."),
    ),
    (("--region",), dict(default=None, metavar="REGION", help="Vertex AI region.")),
    (("--project",), dict(default=None, metavar="PROJECT", help="Google Cloud project id.")),
    (
        ("--include",),
        dict(
            action="append",
            default=[],
            metavar="PATH",
            help="A file or folder (next to the notebook) the job needs, copied into the "
            "image; repeat for more. Secrets are always left out; .tfcignore applies.",
        ),
    ),
    (("--image",), dict(default=None, metavar="URI", help="Use this image; build nothing.")),
    (("--parent-image",), dict(default=None, metavar="URI", help="Base image of the build.")),
    (("--cache-from",), dict(default=None, metavar="URI", help="Image to use as build cache.")),
    (
        ("--build-bucket",),
        dict(
            default=None,
            metavar="BUCKET",
            help="GCS bucket: build with Cloud Build (no local Docker).",
        ),
    ),
    (("--timeout",), dict(default=None, metavar="DURATION", help="Job time limit: 90m, 2h, 1d.")),
    (("--spot",), dict(action="store_true", help="Use Spot VMs on Vertex AI (cheaper).")),
    (
        ("--base-output-dir",),
        dict(
            default=None,
            metavar="GS_URI",
            help="Model, checkpoints and TensorBoard logs go under it.",
        ),
    ),
    (
        ("--tensorboard",),
        dict(
            default=None,
            metavar="RESOURCE",
            help="Vertex AI TensorBoard instance to stream logs to.",
        ),
    ),
    (("--network",), dict(default=None, metavar="NETWORK", help="VPC network to peer with.")),
    (
        ("--no-wait",),
        dict(
            dest="wait",
            action="store_false",
            default=True,
            help="Return the job handle at once; the job goes on (default: wait, streaming "
            "the logs into the cell).",
        ),
    ),
    (
        ("--dry-run",),
        dict(
            action="store_true",
            help="Show the plan (cells, script, pools, cost, Vertex request); launch nothing.",
        ),
    ),
    (
        ("--interactive",),
        dict(
            action="store_true",
            help="Open the launch panel pre-filled with these flags: pick, launch and watch "
            "there (notebooks only; the CLI ignores it).",
        ),
    ),
]


def add_to_parser(parser: argparse.ArgumentParser) -> None:
    """Add every job flag to an argparse parser (the CLI)."""
    for args, kwargs in OPTIONS:
        parser.add_argument(*args, **kwargs)


def magic_decorate(func: F) -> F:
    """Apply the job flags as IPython ``magic_arguments`` to a magic function."""
    from IPython.core.magic_arguments import argument, magic_arguments

    for args, kwargs in reversed(OPTIONS):
        func = argument(*args, **kwargs)(func)
    return magic_arguments()(func)  # type: ignore[no-any-return,unused-ignore]


def _chief(ns: argparse.Namespace, settings: Settings) -> catalog.Machine:
    if ns.tpu is not None:
        if ns.gpus:
            raise SpecError(
                "--tpu and --gpus together: a TPU host has no GPUs",
                "drop --gpus, or drop --tpu",
                field="gpus",
            )
        if ns.machine:
            raise SpecError(
                "--tpu and --machine together",
                "drop --machine: --tpu picks the host",
                field="machine",
            )
        return catalog.tpu_machine(ns.tpu)
    machine = catalog.lookup(ns.machine or settings.get("machine") or "CPU")
    if machine.is_tpu and not ns.machine:
        return machine
    if ns.gpus:
        if machine.gpu_count and ns.machine and machine.gpu_count != ns.gpus:
            raise SpecError(
                f"--machine {ns.machine} has {machine.gpu_count} GPUs, not {ns.gpus}",
                "drop --gpus or pick a machine with that many",
                field="gpus",
            )
        gpu = ns.gpu_type or (catalog.GPU_BY_ENUM.get(machine.accelerator_type or "", "T4"))
        explicit_type = machine.machine_type if ns.machine else None
        return catalog.gpu_machine(gpu, ns.gpus, explicit_type)
    if ns.gpu_type and not machine.gpu_count:
        raise SpecError("--gpu-type without --gpus", "add --gpus N", field="gpu_type")
    return machine


def _ps_and_evaluator(ns: argparse.Namespace) -> dict[str, Any]:
    """JobSpec fields of ``--ps``, ``--ps-machine`` and ``--evaluator [MACHINE]``."""
    ps, ps_machine = getattr(ns, "ps", 0) or 0, getattr(ns, "ps_machine", None)
    evaluator = getattr(ns, "evaluator", None)
    if ps_machine and not ps:
        raise SpecError("--ps-machine without --ps", "add --ps N", field="ps_machine")
    return {
        "ps_count": ps,
        "ps_machine": catalog.lookup(ps_machine) if ps_machine else None,
        "evaluator": evaluator is not None,
        "evaluator_machine": catalog.lookup(evaluator) if evaluator else None,
    }


def spec_from_options(
    ns: argparse.Namespace,
    settings: Settings,
    *,
    name: str = "notebook",
    requirements: tuple[str, ...] = (),
    estimator: bool = False,
) -> JobSpec:
    """Build the JobSpec from parsed flags and the effective defaults.

    ``estimator`` says the script uses tf.estimator (planning detects it): such a job may have
    parameter servers or an evaluator without workers.

    Raises:
        SpecError: any invalid flag or combination, with the fix.
    """
    chief = _chief(ns, settings)
    worker = None
    if ns.worker_machine:
        worker = catalog.lookup(ns.worker_machine)
        if ns.gpus and not worker.gpu_count:
            worker = catalog.gpu_machine(ns.gpu_type or "T4", ns.gpus, worker.machine_type)
    try:
        entry_args = tuple(shlex.split(ns.args or ""))
    except ValueError as exc:
        raise SpecError(
            f"cannot split --args: {exc}", "check the quotes in --args", field="entry_args"
        ) from None
    timeout = parse_duration(ns.timeout)
    return JobSpec(
        name=ns.name or name,
        strategy=ns.strategy,
        chief=chief,
        worker=worker,
        worker_count=ns.workers,
        backend=Backend.parse(ns.backend or settings.get("backend") or "local"),
        image=ImageSettings(
            image=ns.image,
            parent_image=ns.parent_image,
            cache_from=ns.cache_from,
            build_bucket=ns.build_bucket or settings.get("build_bucket"),
            registry=settings.get("registry"),
            include=tuple(getattr(ns, "include", None) or ()),
        ),
        requirements=requirements,
        entry_args=entry_args,
        labels=parse_labels(ns.label),
        service_account=ns.service_account or settings.get("service_account"),
        region=ns.region or settings.get("region") or "us-central1",
        project=ns.project or settings.get("project"),
        timeout_s=timeout,
        scheduling="spot" if ns.spot else "standard",
        base_output_dir=ns.base_output_dir or settings.get("base_output_dir"),
        tensorboard=ns.tensorboard,
        network=ns.network,
        estimator=estimator,
        **_ps_and_evaluator(ns),
    )


def defaults_namespace() -> argparse.Namespace:
    """A namespace holding every flag's default (what an empty ``%%tfc_run`` line gives)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_to_parser(parser)
    return parser.parse_args([])


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise SpecError(message, "see %%tfc_run? (or tfc-jupyter plan --help) for the flags")


def parser(*, suppress_defaults: bool = False, prog: str = "%%tfc_run") -> argparse.ArgumentParser:
    """A parser of the job flags that raises SpecError instead of exiting.

    With ``suppress_defaults`` only the flags actually given appear in the namespace (the CLI
    uses it to override the flags written on a notebook's ``%%tfc_run`` line).
    """
    kwargs: dict[str, Any] = {"argument_default": argparse.SUPPRESS} if suppress_defaults else {}
    p = _Parser(prog=prog, add_help=False, **kwargs)
    for args, options in OPTIONS:
        if suppress_defaults:
            options = {k: v for k, v in options.items() if k != "default"}
        p.add_argument(*args, **options)
    return p


def parse_line(line: str) -> argparse.Namespace:
    """Parse a ``%%tfc_run`` argument line (shell-like quoting, never executed)."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise SpecError(
            f"cannot read the flags: {exc}", "check the quotes on the %%tfc_run line"
        ) from None
    return parser().parse_args(words)


def overlay(base: argparse.Namespace, override: argparse.Namespace) -> argparse.Namespace:
    """``base`` with every flag present in ``override`` replaced (lists are extended)."""
    merged = argparse.Namespace(**vars(base))
    for key, value in vars(override).items():
        current = getattr(merged, key, None)
        setattr(merged, key, [*current, *value] if isinstance(current, list) else value)
    return merged


_NOT_IN_LINE = frozenset({"dry_run", "interactive"})


def to_line(ns: argparse.Namespace, *, magic: str = "%%tfc_run") -> str:
    """The ``%%tfc_run`` line that :func:`parse_line` reads back into ``ns``.

    Only flags that differ from their defaults are written (``--dry-run`` and ``--interactive``
    never are), quoted like a shell, in the order of :data:`OPTIONS`.
    """
    defaults = vars(defaults_namespace())
    words = [magic]
    for args, kwargs in OPTIONS:
        flag = args[0]
        dest = kwargs.get("dest") or flag.lstrip("-").replace("-", "_")
        value = getattr(ns, dest, defaults.get(dest))
        if dest in _NOT_IN_LINE or value == defaults.get(dest):
            continue
        action = kwargs.get("action")
        if action in ("store_true", "store_false"):
            words.append(flag)
        elif action == "append":
            words += [w for item in value or () for w in (flag, shlex.quote(str(item)))]
        elif value == kwargs.get("const") and kwargs.get("nargs") == "?" and value == "":
            words.append(flag)
        else:
            words += [flag, shlex.quote(str(value))]
    return " ".join(words)
