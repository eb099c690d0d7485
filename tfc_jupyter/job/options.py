"""The job's options: one typed :class:`JobOptions`, declared once, read from every way in.

Each field of :class:`JobOptions` is one ``%%tfc_run`` flag: its type, default, help and
metavar are declared on the field, and everything else is derived from that one table:

* the argparse parser of the magic (``%%tfc_run?`` lists every flag) and of the CLI;
* :meth:`JobOptions.from_line` / :meth:`from_words` (a cell's line, command-line words);
* :meth:`JobOptions.from_json` (the REST API's ``options`` object, the panel's memory) and
  :meth:`JobOptions.of` (Python keyword arguments): typed values, each checked on its own;
* :meth:`JobOptions.to_line` (the ``%%tfc_run`` line that reads back into the same options)
  and :meth:`JobOptions.to_json`;
* :meth:`JobOptions.over` (later flags over a cell's own), :meth:`JobOptions.to_spec` (the one
  place options become a :class:`~tfc_jupyter.job.spec.JobSpec`).

Nothing past these parsers sees an ``argparse.Namespace``.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .. import registry, words
from ..config import Settings
from ..errors import Fix, SpecError
from ..registry import DEFAULT
from ..sweep import methods
from ..sweep.spec import check_counts
from . import catalog
from .google_target import GoogleTarget
from .spec import (
    BackendName,
    Decisions,
    ImageSettings,
    JobSpec,
    parse_duration,
    parse_env,
    parse_labels,
)

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
HELP_HINT = "see %%tfc_run? (or tfc-jupyter plan --help) for the flags"


def _whole(text: str) -> int:
    """A whole number, any sign (a sweep's counts: their own check names the fix)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _count(text: str) -> int:
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


PATH_OPTIONS = ("include", "requirements")
"""Options whose values are file paths: each is checked by :func:`check_path_value`."""
PATH_MAX_BYTES = 1024  # a path option's value; with the notebook's folder, under PATH_MAX
NAME_MAX_BYTES = 255  # one name in a path (NAME_MAX)


def check_path_value(key: str, value: str) -> None:
    """Refuse a path option's value no file system can hold (NUL, a control character, a lone
    surrogate, over ``PATH_MAX_BYTES`` or a name over ``NAME_MAX_BYTES``): one line naming the
    option and the fix, never an ``OSError`` from the file system later (a 500 on the jobs API).

    Raises:
        SpecError: the value is not a usable path (``field`` is the option).
    """
    why = None
    if "\0" in value:
        why = "it holds a NUL byte"
    elif any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value):
        why = "it holds a control character"
    else:
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            why = "it holds a character that is not text (a lone surrogate)"
        else:
            if size > PATH_MAX_BYTES:
                why = f"it is {size} bytes long (at most {PATH_MAX_BYTES})"
            elif any(len(name.encode("utf-8")) > NAME_MAX_BYTES for name in value.split("/")):
                why = f"a name in it is over {NAME_MAX_BYTES} bytes"
    if why is None:
        return
    shown = value if len(value) <= 60 else value[:60] + "..."
    shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in shown)
    raise SpecError(
        f"--{key} '{shown}' is not a usable path: {why}",
        f"name a file or folder relative to the notebook by its real name (at most "
        f"{PATH_MAX_BYTES} bytes, names of at most {NAME_MAX_BYTES} bytes, no control "
        "characters)",
        field=key,
    )


def _typed_zero_trials(values: Mapping[str, Any]) -> None:
    """``--trials 0`` written (a flag, a keyword) runs no trial: refused with its fixes (it was
    taken as "not given"). A form's 0 is its empty box, the default (JSON keeps that reading).

    Raises:
        SpecError: with the fixes as data.
    """
    if values.get("trials") == 0 and not isinstance(values.get("trials"), bool):
        check_counts(0, 1)


@dataclass(frozen=True)
class Flag:
    """How one option is written as a flag (declared on its :class:`JobOptions` field)."""

    help: str
    metavar: str | None = None
    const: str | None = None  # the flag may be given without a value: it then means this
    name: str | None = None  # the flag when it is not ``--field-name`` (``--no-wait``)
    in_line: bool = True  # written by to_line (a dry run or the panel is not part of the job)
    in_json: bool = True  # taken from a REST request's options
    label: str | None = None  # its control's name in the panel and the form (None: it has none)
    neutral: str | None = None  # what leaving it out is there ("0", "none", "auto")
    group: str = "Job"  # the section of the panel and the form its control is in
    choices: str | None = None  # where its control's values come from (planner.fields.CHOICES)
    # ``{choices}`` in ``help`` is the words of those values, read as the help is: see LIVE_HELP
    placeholder: str = ""  # what its empty text box says
    separator: str = ","  # a list's items in one text box are split on this (" ": and commas)
    only_with: tuple[str, ...] = ()  # the panel and the form send it only when these are set
    only_without: tuple[str, ...] = ()  # ... and only when these are not (a TPU: no GPUs)
    signed: bool = False  # a count read as any whole number: the sweep checks it, with fixes


def option(default: Any, help: str, **flag: Any) -> Any:
    """Declare one option: a dataclass field with its flag's help (and :class:`Flag`'s other
    parts). :class:`JobOptions` declares the portable ones; a backend declares its own the
    same way, on the dataclass it names as its ``options`` (see :func:`backend_fields`)."""
    return field(default=default, metadata={"flag": Flag(help=help, **flag)})


_opt = option

LIVE_HELP: dict[str, Callable[[], str]] = {"methods": methods.help_words}
"""A ``choices`` source -> the words ``{choices}`` stands for in a help that names it, read
each time the help is (a sweep method registered later is listed too)."""


@dataclass(frozen=True)
class JobOptions:
    """Every option of a job, typed. ``given`` names the options set explicitly (a default
    left as is is not given: a later layer, or the configured default, may fill it)."""

    tpu: str | None = _opt(
        None,
        "Run on a TPU host: v2-8, v3-8 (default), v5e-1, v5e-4, v5e-8.",
        metavar="TYPE",
        const="v3-8",
        label="TPU",
        neutral="none",
        group="Machines",
        choices="tpus",
    )
    gpus: int | None = _opt(
        None,
        "GPUs per machine (chief and workers).",
        metavar="N",
        label="GPUs per machine",
        neutral="none",
        group="Machines",
        choices="gpu_counts",
        only_without=("tpu",),
    )
    gpu_type: str | None = _opt(
        None,
        f"GPU type: {', '.join(catalog.OFFERED_GPU_TYPES)} (default T4).",
        metavar="TYPE",
        label="GPU type",
        neutral="default",
        group="Machines",
        choices="gpu_types",
        only_with=("gpus",),
        only_without=("tpu",),
    )
    machine: str | None = _opt(
        None,
        "Chief machine: a catalog name (CPU, T4_1X, A100_8X ...) or a machine type "
        "(n1-standard-8). See %%tfc_machines.",
        metavar="NAME",
        label="Chief machine",
        neutral="CPU",
        group="Machines",
        choices="machines",
        only_without=("tpu",),  # a TPU host is the whole machine
    )
    workers: int = _opt(
        0,
        "Workers besides the chief (multi-worker training).",
        metavar="N",
        label="Workers",
        neutral="0",
        group="Machines",
    )
    worker_machine: str | None = _opt(
        None,
        "Worker machine (default: same as the chief).",
        metavar="NAME",
        label="Worker machine",
        group="Machines",
        choices="worker_machines",
    )
    ps: int = _opt(0, "Parameter servers (tf.estimator training; Vertex AI pool 2).", metavar="N")
    ps_machine: str | None = _opt(None, "Parameter server machine (default: CPU).", metavar="NAME")
    evaluator: str | None = _opt(
        None,
        "Add an evaluator task (tf.estimator train_and_evaluate; Vertex AI pool 3), on "
        "MACHINE (default: the chief's).",
        metavar="MACHINE",
        const="",
    )
    strategy: str = _opt(
        "auto",
        "auto, one_device, mirrored, multi_worker_mirrored, tpu, none.",
        metavar="NAME",
        label="Strategy",
        neutral="auto",
        group="Where",
        choices="strategies",
    )
    backend: str | None = _opt(
        None,
        "local (this machine, default), docker or vertex.",
        metavar="NAME",
        label="Backend",
        group="Where",
        choices="backends",
    )
    requirements: tuple[str, ...] = _opt(
        (),
        "A requirements.txt merged with the notebook's %%pip lines.",
        metavar="FILE",
        label="Requirements",
        placeholder="requirements.txt (next to the notebook)",
    )
    notebook: str | None = _opt(
        None,
        "The notebook file (default: the kernel's own notebook).",
        metavar="PATH",
        in_json=False,
    )
    name: str | None = _opt(
        None,
        "Job display name (default: the notebook's name).",
        metavar="NAME",
        label="Job name",
        placeholder="the notebook's name",
    )
    label: tuple[str, ...] = _opt(
        (),
        "Job label; repeat for more.",
        metavar="KEY=VALUE",
        label="Labels",
        placeholder="team=ml, run=3",
        separator=" ",
    )
    notify: tuple[str, ...] = _opt(
        (),
        "Say when the job ends: a webhook (json://host/path), e-mail (mailto://...), Slack "
        "(slack://...) or any URL apprise sends to; repeat for more (default: the notify "
        "setting). Sent from this machine, with no notebook open.",
        metavar="URL",
        label="Notify when it ends",
        placeholder="json://host/hook, mailto://me@example.com",
        separator=" ",
    )
    env: tuple[str, ...] = _opt(
        (),
        "An environment variable for every replica; repeat for more. Not for secrets (they "
        "are refused): use Secret Manager.",
        metavar="NAME=VALUE",
    )
    args: str = _opt(
        "",
        "Arguments passed to the script (sys.argv), split like a shell.",
        metavar="STRING",
        label="Script arguments",
        placeholder="--epochs 3",
    )
    sweep: tuple[str, ...] = _opt(
        (),
        "Sweep a variable the notebook assigns (in its cell tagged parameters, or once): "
        "NAME=SPACE, SPACE one of uniform(LOW,HIGH), loguniform(LOW,HIGH), "
        "int(LOW,HIGH[,STEP]) or [A,B,...]; repeat for more. Each trial is a job of its own.",
        metavar="NAME=SPACE",
        label="Swept variables",
        group="Sweep",
        placeholder="lr=loguniform(1e-4,1e-1); units=[64,128]",
        separator=";",
    )
    trials: int = _opt(
        0,
        "Sweep: trials in all (default 10, or the whole grid).",
        metavar="N",
        label="Trials",
        group="Sweep",
        neutral="0",
        signed=True,  # --trials 0 or -1 is refused with its fixes (sweep.spec.check_counts)
    )
    parallel: int = _opt(
        1,
        "Sweep: trials running at once (default 1).",
        metavar="N",
        label="Trials at once",
        group="Sweep",
        signed=True,
    )
    metric: str | None = _opt(
        None,
        "Sweep: the metric the job reports that ranks trials (a Keras log name; default val_loss).",
        metavar="NAME",
        label="Metric",
        group="Sweep",
        placeholder="val_loss",
    )
    goal: str | None = _opt(
        None,
        "Sweep: min or max (default: from the metric's name).",
        metavar="GOAL",
        label="Goal",
        group="Sweep",
        choices="goals",
    )
    method: str = _opt(
        methods.DEFAULT,
        "Sweep: {choices}: how the next values are chosen.",
        metavar="METHOD",
        label="Search",
        group="Sweep",
        choices="methods",
    )
    prune: bool = _opt(
        False,
        "Sweep: stop a trial whose metric falls behind the others' median at the same epoch.",
    )
    service_account: str | None = _opt(
        None, "Service account the Vertex AI job runs as.", metavar="EMAIL"
    )
    region: str | None = _opt(
        None,
        "Vertex AI region.",
        metavar="REGION",
        label="Region",
        group="Google Cloud",
        choices="regions",
    )
    project: str | None = _opt(
        None,
        "Google Cloud project id.",
        metavar="PROJECT",
        label="Project",
        group="Google Cloud",
        placeholder="Google Cloud project id (Vertex AI)",
    )
    include: tuple[str, ...] = _opt(
        (),
        "A file or folder (next to the notebook) the job needs, copied into the image; "
        "repeat for more. Secrets are always left out; .tfcignore applies.",
        metavar="PATH",
    )
    route: str = _opt(
        "auto",
        "Vertex AI: how the code gets there: auto (a package on a prebuilt TensorFlow image "
        "when nothing needs building, else an image), package, or image.",
        metavar="ROUTE",
    )
    image: str | None = _opt(None, "Use this image; build nothing.", metavar="URI")
    parent_image: str | None = _opt(None, "Base image of the build.", metavar="URI")
    cache_from: str | None = _opt(None, "Image to use as build cache.", metavar="URI")
    build_bucket: str | None = _opt(
        None, "GCS bucket: build with Cloud Build (no local Docker).", metavar="BUCKET"
    )
    timeout: str | None = _opt(None, "Job time limit: 90m, 2h, 1d.", metavar="DURATION")
    spot: bool = _opt(False, "Use Spot VMs on Vertex AI (cheaper).")
    base_output_dir: str | None = _opt(
        None, "Model, checkpoints and TensorBoard logs go under it.", metavar="GS_URI"
    )
    resume: bool = _opt(
        True,
        "Do not keep backups: a restarted replica trains its Keras fit (and a loop counted "
        "with tfc_runtime.epochs) from the start (default: it resumes after its last epoch).",
        name="--no-resume",
    )
    tensorboard: str | None = _opt(
        None, "Vertex AI TensorBoard instance to stream logs to.", metavar="RESOURCE"
    )
    network: str | None = _opt(
        None,
        "VPC network to peer with: projects/NUMBER/global/networks/NAME (not on H100 Mega, H200 "
        "or B200).",
        metavar="NETWORK",
    )
    wait: bool = _opt(
        True,
        "Return the job handle at once; the job goes on (default: wait, streaming the logs "
        "into the cell).",
        name="--no-wait",
        in_json=False,
    )
    verbose: bool = _opt(
        False,
        "Show every log line: TensorFlow's start-up chatter, the runtime's status lines, and "
        "each replica's copy of a line all replicas print (the job's log files keep them all).",
        in_line=False,
        in_json=False,
    )
    dry_run: bool = _opt(
        False,
        "Show the plan (cells, script, pools, cost, Vertex request); launch nothing.",
        in_line=False,
    )
    interactive: bool = _opt(
        False,
        "Open the launch panel pre-filled with these flags: pick, launch and watch there "
        "(notebooks only; the CLI ignores it).",
        in_line=False,
        in_json=False,
    )
    target: tuple[tuple[str, Any], ...] = ()
    """The options an installed backend declares (``(name, value)``, sorted by name): given
    only, read and written with the others (:func:`backend_fields`)."""
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.gpus == 0:  # no GPUs is no GPUs: one value, so the line says nothing of it
            object.__setattr__(self, "gpus", None)

    # ------------------------------------------------------------------ readers
    @classmethod
    def from_words(cls, words: Sequence[str], *, prog: str = "%%tfc_run") -> JobOptions:
        """Options from command-line words (``["--workers", "2"]``); only those given are set.

        Raises:
            SpecError: an unknown flag or a bad value, with the fix.
        """
        core = parser(prog=prog, only_given=True)
        _, unknown = core.parse_known_args(list(words))
        if unknown:  # an installed backend's flag, or a mistake: the full table says which
            core = parser(prog=prog, only_given=True, installed=True)
        parsed = vars(core.parse_args(list(words)))
        values: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in parsed.items()
        }
        _typed_zero_trials(values)
        return cls._made(values)

    @classmethod
    def _made(cls, values: Mapping[str, Any]) -> JobOptions:
        """Options from given values: the portable ones as fields, a backend's in ``target``;
        path options' values checked (:func:`check_path_value`)."""
        for key in PATH_OPTIONS:
            for item in values.get(key) or ():
                check_path_value(key, str(item))
        core = {k: v for k, v in values.items() if k in _CORE}
        target = tuple(sorted((k, v) for k, v in values.items() if k not in _CORE))
        return cls(**core, target=target, given=frozenset(core))

    @classmethod
    def from_line(cls, line: str) -> JobOptions:
        """Options from a ``%%tfc_run`` line (split like a shell, never run by one)."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise SpecError(
                f"cannot read the flags: {exc}", "check the quotes on the %%tfc_run line"
            ) from None
        return cls.from_words(words)

    @classmethod
    def from_json(cls, raw: Any) -> JobOptions:
        """Options from a JSON object (``{"workers": 1, "machine": "CPU"}``), each value checked
        on its own so an error names it (``field``). Numbers are taken for text options,
        ``true`` for a flag that may go without a value (``{"tpu": true}``), ``null`` for
        "not given", ``""`` for a text option's default and for an optional count's unset (given:
        it replaces a cell's value).

        Raises:
            SpecError: not an object, an unknown option or a value of the wrong type.
        """
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise SpecError(
                "'options' must be a JSON object", 'send {"workers": 1, ...}', field="options"
            )
        return cls._checked(raw, {f.name: f for f in all_fields() if f.flag.in_json})

    @classmethod
    def of(cls, **kwargs: Any) -> JobOptions:
        """Options from Python keyword arguments (``JobOptions.of(workers=2)``), checked as
        :meth:`from_json` checks JSON; ``wait``, ``notebook`` and ``interactive`` are taken."""
        _typed_zero_trials(kwargs)
        return cls._checked(kwargs, {f.name: f for f in all_fields()})

    @classmethod
    def _checked(cls, raw: Mapping[Any, Any], table: Mapping[str, OptionField]) -> JobOptions:
        """Options from ``{name: value}``: each name known to ``table``, each value coerced to
        its option's type (a SpecError naming it otherwise); ``None`` is "not given"."""
        values: dict[str, Any] = {}
        for key, value in raw.items():
            spec = table.get(key) if isinstance(key, str) else None
            if spec is None and isinstance(key, str):  # a backend's own option?
                spec = {f.name: f for f in backend_fields() if f.flag.in_json}.get(key)
            if spec is None:
                raise SpecError(
                    f"unknown option {key!r}",
                    f"use one of: {', '.join(sorted(table))}",
                    field=str(key),
                )
            if value is not None:
                values[key] = spec.coerce(value)
        return cls._made(values)

    # ------------------------------------------------------------------ combining
    def over(self, base: JobOptions, *, replace: bool = False) -> JobOptions:
        """``base`` with every option given here put over it: the CLI's and the REST request's
        flags over the cell's own line. Lists are extended, or with ``replace`` replaced (a
        form that shows the cell's options and sends them all back)."""
        values = {f.name: getattr(base, f.name) for f in FIELDS}
        for name in self.given:
            mine = getattr(self, name)
            extend = isinstance(mine, tuple) and not replace
            values[name] = (*values[name], *mine) if extend else mine
        target = tuple(sorted({**dict(base.target), **dict(self.target)}.items()))
        return JobOptions(**values, target=target, given=base.given | self.given)

    def replace(self, **changes: Any) -> JobOptions:
        """A copy with ``changes`` (values of the right type), each counted as given."""
        return dataclasses.replace(self, **changes, given=self.given | set(changes))

    def value(self, name: str) -> Any:
        """An option's value by name, an installed backend's too (None: that one not given)."""
        return getattr(self, name) if name in _CORE else dict(self.target).get(name)

    def with_values(self, **changes: Any) -> JobOptions:
        """:meth:`replace`, where an installed backend's options go to ``target`` (an empty
        value takes one out)."""
        out = self.replace(**{k: v for k, v in changes.items() if k in _CORE})
        other = {k: v for k, v in changes.items() if k not in _CORE}
        if not other:
            return out
        target = {**dict(out.target), **other}
        kept = tuple(sorted((k, v) for k, v in target.items() if v not in (None, "", ())))
        return dataclasses.replace(out, target=kept, given=out.given | set(other))

    # ------------------------------------------------------------------ writers
    def to_line(self, *, magic: str = "%%tfc_run") -> str:
        """The ``%%tfc_run`` line that :meth:`from_line` reads back into these options: only
        options that differ from their defaults, quoted like a shell, in declaration order
        (``--dry-run`` and ``--interactive`` never: they are not part of the job)."""
        words = [magic]
        for f in FIELDS:
            value = getattr(self, f.name)
            if f.flag.in_line and value != f.default:
                words += f.words(value)
        fields = {f.name: f for f in backend_fields()} if self.target else {}
        for name, value in self.target:
            if name in fields and value != fields[name].default:
                words += fields[name].words(value)
        return " ".join(words)

    def to_json(self) -> dict[str, Any]:
        """The job's options that differ from their defaults, JSON-ready (lists for repeated
        flags; ``dry_run`` is not part of the job); :meth:`from_json` reads it back."""
        out: dict[str, Any] = {}
        for f in FIELDS:
            value = getattr(self, f.name)
            if f.flag.in_json and f.flag.in_line and value != f.default:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        for name, value in self.target:
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def to_spec(
        self,
        settings: Settings,
        *,
        name: str = "notebook",
        requirements: tuple[str, ...] = (),
        estimator: bool = False,
    ) -> JobSpec:
        """The JobSpec: these options over the effective defaults (see :func:`to_spec`)."""
        return to_spec(self, settings, name=name, requirements=requirements, estimator=estimator)


@dataclass(frozen=True)
class OptionField:
    """One option as a flag: name, kind, default and :class:`Flag`; ``backend`` names the
    backend that declares it (None: a portable option of :class:`JobOptions`)."""

    name: str
    kind: str  # "count" | "text" | "list" | "switch"
    default: Any
    flag: Flag
    backend: str | None = None

    @property
    def option(self) -> str:
        """The flag as typed: ``--worker-machine``, ``--no-wait``."""
        return self.flag.name or "--" + self.name.replace("_", "-")

    @property
    def optional(self) -> bool:
        """An optional count (declared ``int | None = None``, with no ``choices``): unset is
        None, not 0, and an empty value (``""``: an empty box of the form or the panel) is
        unset. A count picked from a list (``--gpus``: "none" is 0) always has a value."""
        return self.kind == "count" and self.default is None and not self.flag.choices

    @property
    def help(self) -> str:
        """The flag's help, ``{choices}`` in it the words of the values it takes now
        (:data:`LIVE_HELP`: ``--method``'s lists every registered sweep method)."""
        words = LIVE_HELP.get(self.flag.choices or "")
        return self.flag.help.replace("{choices}", words()) if words else self.flag.help

    def argparse(self, *, only_given: bool) -> tuple[tuple[str], dict[str, Any]]:
        """``add_argument`` arguments for this flag."""
        help = self.help + (f" ({self.backend} backend)" if self.backend else "")
        kwargs: dict[str, Any] = {"dest": self.name, "help": help}
        if self.kind == "switch":
            kwargs["action"] = "store_false" if self.default else "store_true"
        else:
            kwargs["metavar"] = self.flag.metavar
            if self.kind == "list":
                kwargs["action"] = "append"
            if self.kind == "count":
                kwargs["type"] = _whole if self.flag.signed else _count
            if self.flag.const is not None:
                kwargs.update(nargs="?", const=self.flag.const)
        if not only_given:
            kwargs["default"] = list(self.default) if self.kind == "list" else self.default
        return (self.option,), kwargs

    def words(self, value: Any) -> list[str]:
        """The flag and its value as line words (quoted like a shell)."""
        if self.kind == "switch":
            return [self.option]
        if self.kind == "list":
            return [w for item in value for w in (self.option, shlex.quote(str(item)))]
        if self.flag.const == "" and value == "":
            return [self.option]
        return [self.option, shlex.quote(str(value))]

    def json_schema(self) -> dict[str, Any]:
        """This option in a JSON request as an OpenAPI 3.0 schema: what :meth:`coerce` takes
        (``null``: not given; a number for a text option; ``true`` for a flag that may go
        without a value)."""
        where = f" ({self.backend} backend)" if self.backend else ""
        about: dict[str, Any] = {
            "description": f"{self.option}: {self.help}{where}",
            "nullable": True,
        }
        text: list[dict[str, Any]] = [{"type": "string"}, {"type": "number"}]
        if self.kind == "switch":
            return {**about, "type": "boolean", "default": self.default}
        if self.kind == "list":
            items = {"type": "array", "items": {"oneOf": text}}
            return {**about, "oneOf": [items, {"type": "string"}]}
        if self.kind == "count":
            pattern = r"^\s*\d*\s*$" if self.optional else r"^\s*\d+\s*$"  # "": unset
            digits = {"type": "string", "pattern": pattern}
            return {
                **about,
                "oneOf": [{"type": "integer", "minimum": 0}, digits],
                "default": self.default,
            }
        if self.flag.const is not None:
            text.append({"type": "boolean", "enum": [True]})
        return {**about, "oneOf": text} | ({"default": self.default} if self.default else {})

    def coerce(self, value: Any) -> Any:
        """A JSON or Python value as this option's type, or a SpecError naming it."""
        key = self.name
        if self.kind == "switch":
            if not isinstance(value, bool):
                raise SpecError(
                    f"option {key!r} must be true or false", f"send {key}: true", field=key
                )
            return value
        if self.kind == "list":
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, (list, tuple)) or not all(
                isinstance(i, (str, int, float)) and not isinstance(i, bool) for i in items
            ):
                raise SpecError(
                    f"option {key!r} must be a list of strings", f'send {key}: ["..."]', field=key
                )
            return tuple(str(i) for i in items)
        if value is True and self.flag.const is not None:
            return self.flag.const
        if value == "" and self.kind == "text" and self.flag.const != "":
            return self.default  # "": the default, given (a form's "default" choice)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise SpecError(
                f"option {key!r} must be a string or a number", f'send {key}: "..."', field=key
            )
        if self.kind == "count":
            return self._count(value)
        return str(value)

    def _count(self, value: str | int | float) -> int | None:
        """A count from JSON or Python (a number, or its digits as text); an optional count's
        empty text is None (unset), and its bad value is refused with fixes as data (the form
        applies them; the panel says them with its labels)."""
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 2.0: JSON's number 2 as some clients write it
        text = str(value).strip()
        if self.optional and not text:
            return None
        try:
            return (_whole if self.flag.signed else _count)(text)
        except argparse.ArgumentTypeError as exc:
            if self.optional:
                fixes = (Fix.give(self.name, "N"), Fix.drop(self.name))
                raise SpecError(f"{self.option}: {exc}", fixes, field=self.name) from None
            key = self.name
            raise SpecError(f"option {key!r}: {exc}", f"send {key}: 1", field=key) from None


def _fields(declared: type = JobOptions, backend: str | None = None) -> list[OptionField]:
    out = []
    for f in dataclasses.fields(declared):
        if "flag" not in f.metadata:
            continue
        kind = (
            "switch"
            if "bool" in str(f.type)
            else "list"
            if "tuple" in str(f.type)
            else "count"
            if "int" in str(f.type)
            else "text"
        )
        out.append(OptionField(f.name, kind, f.default, f.metadata["flag"], backend))
    return out


def _say_in_the_ui(fields: list[OptionField]) -> None:
    """Teach :mod:`tfc_jupyter.words` the labels (and neutral values) of ``fields``: a fix that
    says ``drop --workers`` reads ``set Workers to 0`` in the panel and the form."""
    for f in fields:
        if f.flag.label:
            words.LABELS[f.option] = f.flag.label
            if f.flag.neutral:
                words.DROPPED[f.option] = f"set {f.flag.label} to {f.flag.neutral}"


FIELDS: list[OptionField] = _fields()
_say_in_the_ui(FIELDS)
"""Every portable option, in declaration order: the one flag table."""
_CORE = frozenset(f.name for f in FIELDS)
DEFAULTS = JobOptions()


def backend_fields() -> list[OptionField]:
    """The options backends declare for themselves, built-in ones first: a backend class's
    ``options`` is a frozen dataclass whose fields are declared with :func:`option` (Vertex
    AI's in ``backends/vertex/options.py``), and its flags then work on every edge (the magic's
    line, the CLI and its help, ``run()``, the jobs API, the form and the panel), kept in
    :attr:`JobOptions.target`; the backend reads them with :func:`target_options`, and another
    backend refuses them. A backend whose options class has ``google(spot=...)`` puts them into
    ``JobSpec.google`` that way (Vertex AI's scheduling, reservation, boot disk ...); the Google
    Cloud settings other backends use too (region, project ...) are portable fields.

    Raises:
        SpecError: a backend declares an option another option already has.
    """
    out: list[OptionField] = []
    for name in registry.names():
        declared = getattr(registry.load(name), "options", None)
        if declared is None:
            continue
        for f in _fields(declared, name):
            if f.name in _CORE or any(f.name == o.name for o in out):
                raise SpecError(
                    f"the {name} backend declares --{f.name.replace('_', '-')}, which another "
                    "option has",
                    f"rename that option in the {name} backend's package",
                    field="backend",
                )
            out.append(f)
    _say_in_the_ui(out)
    return out


def all_fields() -> list[OptionField]:
    """The portable options, then every backend's own (:func:`backend_fields`)."""
    return [*FIELDS, *backend_fields()]


def options_schema() -> dict[str, Any]:
    """The JSON Schema of a request's ``options`` object (the jobs API's ``CreateJob``),
    from the option table: every portable option a request may send, then every installed
    backend's; any other name is refused."""
    fields = [f for f in all_fields() if f.flag.in_json]
    return {
        "type": "object",
        "properties": {f.name: f.json_schema() for f in fields},
        "additionalProperties": False,
    }


def target_options(options: JobOptions, declared: type[T]) -> T:
    """A backend's own options, typed: its ``options`` dataclass from what was given (each
    other field at its default)."""
    names = {f.name for f in dataclasses.fields(declared)}  # type: ignore[arg-type]
    return declared(**{k: v for k, v in options.target if k in names})


def arguments(
    *, only_given: bool = False, installed: bool = False
) -> Iterator[tuple[tuple[str], dict[str, Any]]]:
    """``add_argument`` arguments of every portable job flag, and with ``installed`` the
    installed backends' too (reading which packages are installed costs every launch time: it
    is asked only when a flag is not a portable one)."""
    for f in all_fields() if installed else FIELDS:
        yield f.argparse(only_given=only_given)


def add_to_parser(parser: argparse.ArgumentParser) -> None:
    """Add every job flag, installed backends' included, to an argparse parser (a help)."""
    for args, kwargs in arguments(installed=True):
        parser.add_argument(*args, **kwargs)


def magic_decorate(func: F) -> F:
    """Apply the job flags as IPython ``magic_arguments`` to a magic function (for its help;
    the magic reads its line with :meth:`JobOptions.from_line`)."""
    from IPython.core.magic_arguments import argument, magic_arguments

    for args, kwargs in reversed(list(arguments())):
        func = argument(*args, **kwargs)(func)
    return magic_arguments()(func)  # type: ignore[no-any-return,unused-ignore]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise SpecError(" ".join(message.split()), HELP_HINT)


def parser(
    *, only_given: bool = False, prog: str = "%%tfc_run", installed: bool = False
) -> argparse.ArgumentParser:
    """A parser of the job flags that raises SpecError instead of exiting; with
    ``only_given``, only the flags actually given appear in its namespace; with ``installed``,
    the installed backends' flags too."""
    kwargs: dict[str, Any] = {"argument_default": argparse.SUPPRESS} if only_given else {}
    p = _Parser(prog=prog, add_help=False, **kwargs)
    for args, options in arguments(only_given=only_given, installed=installed):
        p.add_argument(*args, **options)
    return p


def parse_line(line: str) -> JobOptions:
    """The options of a ``%%tfc_run`` line (:meth:`JobOptions.from_line`)."""
    return JobOptions.from_line(line)


# ---------------------------------------------------------------------- options -> JobSpec


def _chief(ns: JobOptions, settings: Settings) -> catalog.Machine:
    if ns.tpu is not None:
        if ns.gpus:
            raise SpecError(
                "--tpu and --gpus together: a TPU host has no GPUs",
                (Fix.drop("gpus"), Fix.drop("tpu")),
                field="gpus",
            )
        if ns.machine:
            raise SpecError(
                "--tpu and --machine together",
                Fix.drop("machine", after=": --tpu picks the host"),
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
        raise SpecError(
            "--gpu-type without --gpus", Fix.give("gpus", "N", verb="add"), field="gpu_type"
        )
    return machine


def _ps_and_evaluator(ns: JobOptions) -> dict[str, Any]:
    """JobSpec fields of ``--ps``, ``--ps-machine`` and ``--evaluator [MACHINE]``."""
    ps, ps_machine, evaluator = ns.ps, ns.ps_machine, ns.evaluator
    if ps_machine and not ps:
        raise SpecError(
            "--ps-machine without --ps", Fix.give("ps", "N", verb="add"), field="ps_machine"
        )
    return {
        "ps_count": ps,
        "ps_machine": catalog.lookup(ps_machine) if ps_machine else None,
        "evaluator": evaluator is not None,
        "evaluator_machine": catalog.lookup(evaluator) if evaluator else None,
    }


def to_spec(
    ns: JobOptions,
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
    backend = BackendName.parse(ns.backend or settings.get("backend") or DEFAULT)
    _check_target(ns, backend.value)
    return JobSpec(
        name=ns.name or name,
        strategy=ns.strategy,  # type: ignore[arg-type]  # JobSpec parses the name
        chief=chief,
        worker=worker,
        worker_count=ns.workers,
        backend=backend,
        image=ImageSettings(
            image=ns.image,
            parent_image=ns.parent_image,
            cache_from=ns.cache_from,
            build_bucket=ns.build_bucket or settings.get("build_bucket"),
            registry=settings.get("registry"),
            include=ns.include,
        ),
        requirements=requirements,
        entry_args=entry_args,
        labels=parse_labels(list(ns.label)),
        notify=tuple(ns.notify or (settings.get("notify") or "").split()),
        env=parse_env(list(ns.env)),
        timeout_s=timeout,
        base_output_dir=ns.base_output_dir or settings.get("base_output_dir"),
        resume=ns.resume,
        google=_google(ns, settings, backend.value),
        decided=Decisions(estimator=estimator),
        **_ps_and_evaluator(ns),
    )


def _google(ns: JobOptions, settings: Settings, backend: str) -> GoogleTarget:
    """The job's Google Cloud settings, from its flags over the effective defaults: the
    portable ones, then those its backend declares and puts here (``options.google``:
    Vertex AI's scheduling, reservation, boot disk ...)."""
    declared: Any = getattr(registry.load(backend), "options", None) if ns.target else None
    own = target_options(ns, declared).google(spot=ns.spot) if hasattr(declared, "google") else {}
    return GoogleTarget(
        service_account=ns.service_account or settings.get("service_account"),
        region=ns.region or settings.get("region") or "us-central1",
        project=ns.project or settings.get("project"),
        tensorboard=ns.tensorboard,
        network=ns.network,
        **{"scheduling": "spot" if ns.spot else "standard", **own},
    )


def _check_target(ns: JobOptions, backend: str) -> None:
    """Refuse a backend's own option on another backend (or one no installed backend has)."""
    if not ns.target:
        return
    owners = {f.name: f for f in backend_fields()}
    for name, _ in ns.target:
        owner = owners.get(name)
        if owner is None:
            raise SpecError(
                f"unknown option {name!r}: no installed backend has it",
                "install the backend's package, or drop it",
                field=name,
            )
        if owner.backend != backend:
            raise SpecError(
                f"{owner.option} is a {registry.traits(str(owner.backend)).label} setting; on the "
                f"{backend} backend it would mean nothing",
                (Fix.drop(name), Fix.set("backend", owner.backend, verb="use")),
                field=name,
            )


def with_script_args(options: JobOptions, script_args: Sequence[str]) -> JobOptions:
    """``options`` with the words after ``--`` as the script's arguments (over any
    ``--args``)."""
    if not script_args:
        return options
    return JobOptions.of(args=shlex.join(script_args)).over(options)


def split_script_args(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(job flags, script arguments)``: everything after the first ``--`` is the script's."""
    words = list(words)
    if "--" in words:
        k = words.index("--")
        return words[:k], words[k + 1 :]
    return words, []
