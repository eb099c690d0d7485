"""JobSpec: the whole job in one frozen value, validated when it is made.

A JobSpec that exists is a job that can be planned: every rule that Vertex AI or TensorFlow would
enforce later (machine shapes, strategies, labels, service accounts, regions) is checked here,
before anything is launched, with a message that names the fix.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Any, ClassVar, NamedTuple

from .. import registry
from ..errors import Fix, SpecError
from ..registry import DEFAULT, BackendName
from . import prices, vertex_rules
from .catalog import Machine
from .google_target import GoogleTarget
from .parts import SpecPart


class Strategy(str, Enum):
    """Distribution strategies a job can ask for (the names `tfc_runtime` builds)."""

    AUTO = "auto"
    ONE_DEVICE = "one_device"
    MIRRORED = "mirrored"
    MULTI_WORKER_MIRRORED = "multi_worker_mirrored"
    TPU = "tpu"
    NONE = "none"

    @classmethod
    def parse(cls, text: str) -> Strategy:
        """Accept the names above and tf.distribute class names (``MirroredStrategy``)."""
        key = re.sub(r"(?<!^)(?=[A-Z])", "_", text.strip()).lower().replace("-", "_")
        key = key.removesuffix("_strategy").replace("__", "_")
        aliases = {
            "multiworker_mirrored": "multi_worker_mirrored",
            "mwms": "multi_worker_mirrored",
            "onedevice": "one_device",
            "tpustrategy": "tpu",
            "t_p_u": "tpu",
        }
        key = aliases.get(key, key)
        try:
            return cls(key)
        except ValueError:
            names = ", ".join(s.value for s in cls)
            raise SpecError(
                f"unknown strategy {text!r}", f"use one of {names}", field="strategy"
            ) from None


def _label_char(c: str) -> bool:
    """A lowercase letter, an international (caseless) letter, a digit, ``_`` or ``-``."""
    return c in "_-" or c.isdigit() or (c.isalpha() and not (c.isupper() or c.istitle()))


def _label_text(text: str, *, key: bool) -> bool:
    """Google Cloud's label rule: at most 63 characters of lowercase letters (international
    ones too), digits, ``_`` and ``-``; a key starts with a letter ("Labels overview",
    Resource Manager, 2026-11)."""
    if len(text) > 63 or not all(_label_char(c) for c in text):
        return False
    return not key or (bool(text) and _label_char(text[0]) and text[0].isalpha())


_HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
"""Unicode categories kept out of names: control, format (bidi overrides, zero-width), surrogate,
private-use and unassigned characters, line and paragraph separators."""


def _name_ok(name: str) -> bool:
    """A job's name is Vertex AI's display name: "up to 128 characters long and can consist of
    any UTF-8 characters" (:data:`vertex_rules.DISPLAY_NAME_MAX`), here without hidden or control
    characters and not blank at either end; ids, folders and images use its ASCII slug."""
    return (
        0 < len(name) <= vertex_rules.DISPLAY_NAME_MAX
        and name == name.strip()
        and not any(unicodedata.category(c) in _HIDDEN for c in name)
    )


# An image reference (registry/path:tag@digest): no spaces or line breaks ever reach a Dockerfile.
_IMAGE_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}")
MAX_LABELS = 64
MAX_LABEL_TEXT = 256
"""The longest label key or value this product keeps (Google Cloud's 63 apply where the job
goes to Google)."""
MAX_WORKERS = 256


@dataclass(frozen=True)
class ImageSettings:
    """How the job's container image is made (tfc.run's ``docker_config``)."""

    image: str | None = None
    parent_image: str | None = None
    cache_from: str | None = None
    build_bucket: str | None = None
    registry: str | None = None
    include: tuple[str, ...] = ()  # files and folders (relative to the notebook) in the image

    def __post_init__(self) -> None:
        object.__setattr__(self, "include", tuple(self.include))  # JSON gives a list


def parse_duration(text: str | int | float | None) -> int | None:
    """``"90m"``, ``"2h"``, ``"3600"``, ``"1d"`` -> seconds; None stays None."""
    if text is None or text == "":
        return None
    if isinstance(text, int | float):
        seconds = int(text)
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(text).lower())
        if not match:
            raise SpecError(
                f"cannot read the duration {text!r}",
                "write it like 3600, 90m, 2h or 1d",
                field="timeout",
            )
        unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
        seconds = int(float(match.group(1)) * unit)
    if seconds <= 0:
        raise SpecError("the timeout must be positive", "write it like 90m or 2h", field="timeout")
    if seconds > 30 * 86400:
        raise SpecError(
            "the timeout is over 30 days", "Vertex AI allows at most 30 days", field="timeout"
        )
    return seconds


def _pairs(
    items: Iterable[str] | Mapping[str, str], *, flag: str, example: str, field: str, strip: bool
) -> tuple[tuple[str, str], ...]:
    """``["k=v", ...]`` or a mapping -> sorted ``(key, value)`` pairs, the last of a key
    winning; a value keeps what follows the first '=' (stripped when ``strip``)."""
    if isinstance(items, Mapping):
        return tuple(sorted((str(k), str(v)) for k, v in items.items()))
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SpecError(f"{flag} {item!r} has no '='", f"write {flag} {example}", field=field)
        pairs[key.strip()] = value.strip() if strip else value
    return tuple(sorted(pairs.items()))


def parse_labels(items: Iterable[str] | Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``["team=ml", "run=1"]`` or a mapping -> sorted pairs (validated by JobSpec)."""
    return _pairs(items, flag="--label", example="key=value", field="labels", strip=True)


def parse_env(items: Iterable[str] | Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``["MODE=fast", "SEED=1"]`` or a mapping -> sorted pairs (validated by JobSpec; a value
    keeps its spaces and may hold '=')."""
    return _pairs(items, flag="--env", example="NAME=VALUE", field="env", strip=False)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_ENV_OURS = (
    "TFC_",
    "AIP_",
    "CLOUD_ML_",
    "CLUSTER_SPEC",
    "TF_CONFIG",
    "TF_KERAS_RUNNING_REMOTELY",
    "PYTHONUNBUFFERED",
)
_ENV_SECRET = re.compile(
    r"(?i)secret|passw(or)?d|passphrase|token|api_?key|private_?key|credential|access_?key|"
    r"(^|_)auth(_|$)|session_?key|signing_?key"
)
JOB_ENV = ("TFC_JOB_NAME", "PYTHONUNBUFFERED")
"""Variables every Vertex AI pool gets besides --env (vertex_request)."""
MAX_ENV = vertex_rules.MAX_ENV_VARS - len(JOB_ENV)
"""--env variables a job may have: Vertex AI takes 100 a container, the job sets two itself."""
_SECRET_FIX = (
    "keep secrets out of the job's request, records and image: store it in Secret Manager and "
    "read it in the code (google-cloud-secret-manager) as the job's --service-account"
)


def _check_env(env: tuple[tuple[str, str], ...]) -> None:
    """Names a process can have, none the job sets itself, and nothing that looks secret (by
    name, or by value through the secret scanner): ``--env`` is written into the job's
    request, its records and its dry run."""
    from ..util.secretscan import scan_text

    if len(env) > MAX_ENV:
        raise SpecError(
            f"{len(env)} --env variables given; Vertex AI takes {vertex_rules.MAX_ENV_VARS} a "
            f"container and the job sets {len(JOB_ENV)} itself",
            f"use at most {MAX_ENV}",
            field="env",
        )
    for name, value in env:
        if not _ENV_NAME.fullmatch(name):
            raise SpecError(
                f"--env name {name!r} is not a variable name",
                "use letters, digits and '_', not starting with a digit",
                field="env",
            )
        if name.startswith(_ENV_OURS):
            raise SpecError(
                f"--env {name} is set by the job itself (its cluster and folders)",
                "choose another name",
                field="env",
            )
        if _ENV_SECRET.search(name):
            raise SpecError(f"--env {name} looks like a secret", _SECRET_FIX, field="env")
        found = scan_text(value)
        if found is not None:
            raise SpecError(
                f"--env {name} holds what looks like a secret ({found.what})",
                _SECRET_FIX,
                field="env",
            )
        if "\0" in value or len(value) > 32768:
            raise SpecError(
                f"--env {name} has a value of {len(value)} characters or a NUL",
                "pass at most 32768 characters, no NUL",
                field="env",
            )


_DEFAULT_BACKEND = BackendName(DEFAULT)


class Pool(NamedTuple):
    """One worker pool of a job: its role (``chief``, ``worker``, ``ps``, ``evaluator``: the
    task type of ``TF_CONFIG``, :data:`tfc_runtime.protocol.ROLES`), replicas and machine."""

    role: str
    replicas: int
    machine: Machine


@dataclass(frozen=True)
class Decisions(SpecPart):
    """What planning decided from the notebook's code, never from a flag: the job's own typed
    part beside what the user asked (:class:`JobSpec`'s other fields). Empty: nothing decided
    (a spec made by hand: :meth:`JobSpec.resolved_strategy` then goes by the machine shape)."""

    KEY: ClassVar[str] = "decided"
    FLAT: ClassVar[Mapping[str, str]] = {"strategy": "decided_strategy"}  # a flat record's name

    estimator: bool = False  # the script uses tf.estimator: TensorFlow <= 2.15
    strategy: str = ""  # the strategy the code's shape calls for (see choose.py)
    strategy_reason: str = ""  # why, in the plan's words
    route: str = ""  # Vertex AI: "package" (a prebuilt image) or "image" (one built)
    legacy_keras: bool = False  # Keras fit under MultiWorkerMirroredStrategy: tf-keras
    serve: bool = False  # the code's ParameterServerStrategy: workers and ps serve
    keras_tuner: bool = False  # Keras Tuner's distributed search (the runtime's env)
    swept: str = ""  # a sweep's variables and the lines they replace (tfc_runtime.params.encode)
    sweep_metric: str = ""  # a sweep's metric: a Vertex AI tuning trial writes it for Vizier

    def __post_init__(self) -> None:
        if self.strategy:
            Strategy(self.strategy)  # a name the runtime knows (ValueError otherwise)


@dataclass(frozen=True)
class JobSpec:
    """The whole job, in three typed parts: what the user asked (strategy, machines, backend,
    image, requirements, arguments, labels, env, timeout ...: the fields here), what only
    Vertex AI reads (:attr:`google`) and what planning decided from the code (:attr:`decided`).

    Construction validates everything; an invalid combination raises :class:`SpecError` whose
    message names the fix. Use :meth:`resolved_strategy` for the strategy ``auto`` stands for.
    """

    name: str = "notebook"
    strategy: Strategy = Strategy.AUTO
    chief: Machine = field(default_factory=lambda: _default_chief())
    worker: Machine | None = None
    worker_count: int = 0
    backend: BackendName = _DEFAULT_BACKEND
    image: ImageSettings = field(default_factory=ImageSettings)
    requirements: tuple[str, ...] = ()
    entry_args: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    timeout_s: int | None = None
    base_output_dir: str | None = None
    resume: bool = True  # a restarted replica resumes its training (tfc_runtime.resume)
    ps_count: int = 0  # parameter servers (Vertex pool 2), for tf.estimator training
    ps_machine: Machine | None = None  # default: the CPU preset
    evaluator: bool = False  # one evaluator task (Vertex pool 3), for train_and_evaluate
    evaluator_machine: Machine | None = None  # default: the chief's machine
    google: GoogleTarget = field(default_factory=GoogleTarget)  # read by Vertex AI only
    decided: Decisions = field(default_factory=Decisions)  # by planning, not flags
    notify: tuple[str, ...] = ()  # apprise URLs told when the job ends (tfc_jupyter.returns.notify)

    def __post_init__(self) -> None:
        # Accept plain strings for the enums, so callers (CLI, REST) can pass JSON values.
        if not isinstance(self.strategy, Strategy):
            object.__setattr__(self, "strategy", Strategy.parse(str(self.strategy)))
        if not isinstance(self.backend, BackendName):
            object.__setattr__(self, "backend", BackendName.parse(str(self.backend)))
        if self.worker_count and self.worker is None:
            object.__setattr__(self, "worker", self.chief)
        if self.ps_count and self.ps_machine is None:
            object.__setattr__(self, "ps_machine", _default_chief())
        if self.evaluator and self.evaluator_machine is None:
            object.__setattr__(self, "evaluator_machine", self.chief)
        object.__setattr__(self, "requirements", tuple(self.requirements))
        object.__setattr__(self, "entry_args", tuple(self.entry_args))
        object.__setattr__(self, "labels", tuple(sorted(dict(self.labels).items())))
        object.__setattr__(self, "env", tuple(sorted(dict(self.env).items())))
        _validate(self)

    # ----------------------------------------------------------------- derived values
    def resolved_strategy(self) -> Strategy:
        """The strategy the runtime builds: what planning decided from the code, else what
        ``auto`` stands for by the machine shape (one device: none, as in Jupyter)."""
        if self.decided.strategy:
            return Strategy(self.decided.strategy)
        if self.strategy is not Strategy.AUTO:
            return self.strategy
        if self.chief.is_tpu:
            return Strategy.TPU
        if self.ps_count > 0:  # tf.estimator places variables on the ps: no strategy
            return Strategy.NONE
        if self.worker_count > 0:
            return Strategy.MULTI_WORKER_MIRRORED
        if self.chief.gpu_count > 1:
            return Strategy.MIRRORED
        return Strategy.NONE

    @property
    def replica_count(self) -> int:
        """Processes in the job: the chief, its workers, parameter servers and evaluator."""
        return 1 + self.worker_count + self.ps_count + int(self.evaluator)

    @property
    def uses_gpus(self) -> bool:
        """Some pool's machine has GPUs (its image is then a GPU build: the evaluator's too)."""
        return any(machine.gpu_count for _, _, machine in self.pools())

    def pools(self) -> list[Pool]:
        """Each worker pool the job has: ``chief``, then ``worker``, ``ps`` and ``evaluator``
        when it has them (their machines are set then). Its role is the name ``TF_CONFIG``
        gives its tasks; every backend counts replicas from here."""
        rows: list[tuple[str, int, Machine | None]] = [("chief", 1, self.chief)]
        if self.worker_count:
            rows.append(("worker", self.worker_count, self.worker))
        if self.ps_count:
            rows.append(("ps", self.ps_count, self.ps_machine))
        if self.evaluator:
            rows.append(("evaluator", 1, self.evaluator_machine))
        return [Pool(role, n, m) for role, n, m in rows if m is not None]

    def pool_cost_per_hour(
        self, machine: Machine, replicas: int, book: prices.Book | None = None
    ) -> float | None:
        """A pool's estimated Vertex AI price an hour: its machines, accelerators and boot
        disks at the rates of this job's scheduling (on demand, Spot or flex-start), from
        Google's list as :mod:`.prices` holds it (``book``: current rates that stand in); None
        when a part has no listed rate."""
        return prices.pool_price(
            machine.machine_type,
            machine.accelerator_type,
            machine.accelerator_count,
            replicas=replicas,
            scheduling=self.google.scheduling,
            boot_disk_type=self.google.boot_disk_type,
            boot_disk_gb=self.google.boot_disk_gb,
            book=book,
        )

    def cost_per_hour(self, book: prices.Book | None = None) -> float | None:
        """Estimated price per hour of all pools (:meth:`pool_cost_per_hour`, list prices of
        ``catalog.PRICES_AS_OF``); None when a part of one has no listed price."""
        parts = [self.pool_cost_per_hour(m, n, book) for _, n, m in self.pools()]
        if any(part is None for part in parts):
            return None
        return round(sum(part or 0.0 for part in parts), 6)

    def evolve(self, **changes: Any) -> JobSpec:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def on_google(self, **settings: Any) -> JobSpec:
        """A copy with some of its :class:`GoogleTarget` settings changed (validated again)."""
        return replace(self, google=replace(self.google, **settings))

    def decide(self, **decided: Any) -> JobSpec:
        """A copy with some of planning's :class:`Decisions` made (validated again)."""
        return replace(self, decided=replace(self.decided, **decided))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, for job records, the REST API and the job folder."""
        data = asdict(self)
        data["strategy"] = self.strategy.value
        data["resolved_strategy"] = self.resolved_strategy().value
        data["backend"] = self.backend.value
        data["labels"] = dict(self.labels)
        data["env"] = dict(self.env)
        data["chief"] = self.chief.to_dict()
        data["worker"] = self.worker.to_dict() if self.worker else None
        for key in ("ps_machine", "evaluator_machine"):
            machine = getattr(self, key)
            data[key] = machine.to_dict() if machine else None
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobSpec:
        """Inverse of :meth:`to_dict`; unknown keys are ignored."""
        values = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        if "chief" in values:
            values["chief"] = Machine.from_dict(values["chief"])
        for key in ("worker", "ps_machine", "evaluator_machine"):
            if values.get(key):
                values[key] = Machine.from_dict(values[key])
        if "image" in values and isinstance(values["image"], Mapping):
            values["image"] = ImageSettings(**values["image"])
        if "labels" in values:
            values["labels"] = parse_labels(values["labels"])
        if "env" in values:
            values["env"] = parse_env(values["env"])
        if "notify" in values:
            values["notify"] = tuple(values["notify"] or ())
        values["decided"] = Decisions.of_spec(data)
        values["google"] = GoogleTarget.of_spec(data)
        return cls(**values)


def _default_chief() -> Machine:
    from .catalog import PRESETS

    return PRESETS["CPU"]


def _check_labels(labels: tuple[tuple[str, str], ...]) -> None:
    """The product's own label rules, on every backend: at most :data:`MAX_LABELS` labels, a
    key, and keys and values of printable text (no control or hidden characters) of at most
    :data:`MAX_LABEL_TEXT` characters. Google Cloud's stricter rules apply only where the job
    goes to Google (:func:`check_google_labels`)."""
    if len(labels) > MAX_LABELS:
        raise SpecError(f"{len(labels)} labels given", f"use at most {MAX_LABELS}", field="labels")
    for key, value in labels:
        if not key:
            raise SpecError(
                f"label ={value!r} has no key", "write --label KEY=VALUE", field="labels"
            )
        for what, text in (("key", key), ("value", value)):
            hidden = [c for c in text if unicodedata.category(c) in _HIDDEN]
            if len(text) > MAX_LABEL_TEXT or hidden:
                why = f"{len(text)} characters" if not hidden else f"holds {hidden[0]!r}"
                raise SpecError(
                    f"label {what} {text[:40]!r} (key {key[:40]!r}) is not allowed: {why}",
                    f"write at most {MAX_LABEL_TEXT} printable characters (no control or "
                    "hidden ones)",
                    field="labels",
                )


def google_label(text: str, *, key: bool) -> str:
    """``text`` as Google Cloud takes it in a label: lowercase, each other character ``_``, at
    most 63 characters; a key starts with a letter and not with ``goog`` (else ``l-`` is put
    first). ``lr=0.01`` -> ``lr=0_01``."""
    out = "".join(c if _label_char(c) else "_" for c in text.lower())
    if key and (not out[:1].isalpha() or out.startswith("goog")):
        out = "l-" + out
    return out[:63]


def _google_problem(key: str, value: str) -> str:
    """What Google Cloud's label rules refuse of one label ("" when nothing)."""
    if not _label_text(key, key=True):
        return (
            f"label key {key!r} is not allowed on Google Cloud: keys start with a lowercase (or "
            "international) letter and hold at most 63 lowercase letters, digits, _ and -"
        )
    if key.startswith("goog") or key.startswith("aiplatform.googleapis.com"):
        return f"label key {key!r} is reserved by Google Cloud: no key starts with 'goog'"
    if not _label_text(value, key=False):
        return (
            f"label value {value!r} (key {key!r}) is not allowed on Google Cloud: values hold "
            "at most 63 lowercase (or international) letters, digits, _ and -"
        )
    return ""


def check_google_labels(labels: tuple[tuple[str, str], ...]) -> None:
    """Google Cloud's label rules ("Labels overview", Resource Manager, 2026-11), for a job
    that goes to Google: the first label they refuse is said with its rule, and the labels
    converted by :func:`google_label` offered as the fix (when no two keys become one).

    Raises:
        SpecError: the label and the rule, with the converted labels as :class:`Fix` data.
    """
    for key, value in labels:
        problem = _google_problem(key, value)
        if not problem:
            continue
        converted = {google_label(k, key=True): google_label(v, key=False) for k, v in labels}
        if len(converted) < len(labels):  # two keys became one: the user picks
            raise SpecError(problem, "rename the labels by Google Cloud's rules", field="labels")
        items = [f"{k}={v}" for k, v in sorted(converted.items())]
        raise SpecError(problem, Fix.set_items("label", items, verb="use"), field="labels")


def _check_args(args: tuple[str, ...]) -> None:
    """The script's arguments go into the request, records and dry run as ``--env`` does: a
    value that looks secret is refused the same way."""
    from ..util.secretscan import scan_text

    found = scan_text("\n".join(args)) if args else None
    if found is not None:
        raise SpecError(
            f"--args holds what looks like a secret ({found.what}, argument {found.line})",
            _SECRET_FIX,
            field="args",
        )


def _validate_image(image: ImageSettings) -> None:
    """Image references and the bucket: full matches, so no line break reaches a Dockerfile."""
    flags = {
        "image": "--image",
        "parent_image": "--parent-image",
        "cache_from": "--cache-from",
        "registry": "registry",
    }
    for key, flag in flags.items():
        value = getattr(image, key)
        if value is not None and (not _IMAGE_REF.fullmatch(value) or ".." in value):
            raise SpecError(
                f"{flag} {value!r} is not an image reference",
                f"write {flag} like us-docker.pkg.dev/PROJECT/REPO/NAME:TAG (no spaces or line "
                "breaks)",
                field=key,
            )
    name, problem = vertex_rules.bucket_given(image.build_bucket or "")
    if image.build_bucket is not None and problem:
        raise SpecError(
            f"--build-bucket {image.build_bucket!r}: {name or 'the name'} {problem}",
            "write it like gs://my-bucket or my-bucket (a-z 0-9 - _ ., no goog/google: "
            f"{vertex_rules.BUCKET_NAMING_URL})",
            field="build_bucket",
        )


def _validate(spec: JobSpec) -> None:
    chief, worker, n = spec.chief, spec.worker, spec.worker_count
    strategy = spec.strategy
    _validate_image(spec.image)
    _check_env(spec.env)
    _check_args(spec.entry_args)
    if not _name_ok(spec.name):
        raise SpecError(
            f"job name {spec.name!r} is not allowed",
            f"use 1 to {vertex_rules.DISPLAY_NAME_MAX} characters of any script, without control "
            "or hidden characters and with no space at either end",
            field="name",
        )
    if n < 0 or n > MAX_WORKERS:
        raise SpecError(
            f"--workers {n} is out of range",
            f"use 0 to {MAX_WORKERS} (the chief is not counted)",
            field="worker_count",
        )
    if chief.is_tpu:
        if n:
            raise SpecError(
                "a TPU job runs on one TPU host and takes no extra workers",
                Fix.drop("workers", after=" (the TPU's cores are the replicas)"),
                field="worker_count",
            )
        if strategy not in (Strategy.AUTO, Strategy.TPU, Strategy.NONE):
            raise SpecError(
                f"strategy {strategy.value} cannot drive a TPU",
                Fix.set("strategy", "tpu", verb="use", after=" (or auto)"),
                field="strategy",
            )
    elif strategy is Strategy.TPU:
        raise SpecError(
            "strategy tpu needs a TPU machine",
            Fix.set("tpu", "v3-8", verb="add", after=" (or another TPU type)"),
            field="strategy",
        )
    _check_ps_and_evaluator(spec)
    if worker is not None and worker.is_tpu:
        raise SpecError(
            "workers cannot be TPU hosts",
            "use --tpu for the chief and drop --workers",
            field="worker",
        )
    if n and strategy in (Strategy.ONE_DEVICE, Strategy.MIRRORED):
        raise SpecError(
            f"--workers {n} with strategy {strategy.value}: that strategy uses one machine only",
            (
                Fix.set("strategy", "multi_worker_mirrored", verb="use", after=" (or auto)"),
                Fix.drop("workers"),
            ),
            field="strategy",
        )
    if strategy is Strategy.MIRRORED and chief.gpu_count <= 1 and n == 0:
        raise SpecError(
            "strategy mirrored with one device mirrors nothing",
            "ask for --gpus 2 or more, or use --strategy one_device (or auto)",
            field="strategy",
        )
    if spec.timeout_s is not None:
        parse_duration(spec.timeout_s)
    _check_labels(spec.labels)
    check_target(spec)


def check_target(spec: JobSpec) -> None:
    """The job's Google Cloud part on its backend: a setting the backend does not take is
    refused (:meth:`GoogleTarget.check_backend`), a backend that runs in Google Cloud needs
    what it needs there, and the backend's own rules run (its class's ``check_spec``:
    Vertex AI's flex-start, reservations, disks and networks against the job's machines).

    Raises:
        SpecError: with the flag at fault and the fix.
    """
    traits = registry.traits(spec.backend)
    spec.google.check_backend(spec.backend.value, traits)
    if traits.needs_project:
        check_google_labels(spec.labels)
        _check_cloud(spec)
    rules = getattr(registry.load(spec.backend), "check_spec", None)
    if rules is not None:
        rules(spec)


def _check_cloud(spec: JobSpec) -> None:
    """What a job in Google Cloud needs of its settings: a TensorBoard is written by a service
    account, and its outputs go to Cloud Storage (it has no folder of this machine)."""
    if spec.google.tensorboard is not None and not spec.google.service_account:
        raise SpecError(
            "a job that writes to a Vertex AI TensorBoard needs a service account",
            "pass --service-account NAME@PROJECT.iam.gserviceaccount.com (one with "
            "roles/aiplatform.user and roles/storage.admin)",
            field="service_account",
        )
    base = spec.base_output_dir
    if base is not None and not base.startswith("gs://"):
        raise SpecError(
            f"--base-output-dir {base!r} is not in Cloud Storage",
            "write gs://BUCKET/PATH (a Vertex AI job has no folder of this machine)",
            field="base_output_dir",
        )
    bucket = vertex_rules.GCS_PREFIX.fullmatch(base or "")
    name = bucket.group("bucket") if bucket else ""
    problem = vertex_rules.bucket_problem(name) if bucket else ""
    if base is not None and problem:
        raise SpecError(
            f"--base-output-dir {base!r} names no Cloud Storage bucket: {name or 'the name'} "
            f"{problem}",
            "write gs://BUCKET/PATH, BUCKET 3-63 of a-z 0-9 - _ . (starting and ending with a "
            f"letter or digit; no goog/google: {vertex_rules.BUCKET_NAMING_URL})",
            field="base_output_dir",
        )


def _check_ps_and_evaluator(spec: JobSpec) -> None:
    """Parameter servers and an evaluator: for workers or tf.estimator, never on a TPU job."""
    if spec.ps_count < 0 or spec.ps_count > MAX_WORKERS:
        raise SpecError(
            f"--ps {spec.ps_count} is out of range", f"use 0 to {MAX_WORKERS}", field="ps_count"
        )
    if not spec.ps_count and not spec.evaluator:
        return
    parts = ["parameter servers"] if spec.ps_count else []
    parts += ["an evaluator"] if spec.evaluator else []
    extra = " and ".join(parts)
    if spec.chief.is_tpu:
        raise SpecError(
            "a TPU job runs on one TPU host: it takes no parameter servers and no evaluator",
            "drop --ps and --evaluator (the TPU's cores are the replicas)",
            field="ps_count" if spec.ps_count else "evaluator",
        )
    for role, machine in (
        ("parameter servers", spec.ps_machine),
        ("the evaluator", spec.evaluator_machine),
    ):
        if machine is not None and machine.is_tpu:
            raise SpecError(
                f"{role} cannot run on a TPU host",
                "give --ps-machine / --evaluator a CPU or GPU machine (CPU, n1-highmem-8 ...)",
                field="ps_machine" if role.startswith("param") else "evaluator_machine",
            )
    if not spec.worker_count and not spec.decided.estimator:
        raise SpecError(
            f"{extra} without workers: they serve multi-worker or tf.estimator training",
            "add --workers N, or use them from tf.estimator code (train_and_evaluate)",
            field="ps_count" if spec.ps_count else "evaluator",
        )
    if spec.ps_count and spec.strategy not in (Strategy.AUTO, Strategy.NONE):
        raise SpecError(
            f"--ps with strategy {spec.strategy.value}: parameter servers are driven by "
            "tf.estimator, not by a tf.distribute strategy",
            (Fix.set("strategy", "auto", verb="use", after=" (or none)"), Fix.drop("ps")),
            field="strategy",
        )


def check_runnable(spec: JobSpec) -> None:
    """Refuse, before launch, what the chosen backend cannot run (dry runs skip this)."""
    traits = registry.traits(spec.backend)
    if spec.chief.is_tpu and not traits.tpus:
        why = ": this machine has no TPU" if traits.on_this_machine else ""
        tpu_backends = registry.offering("tpus")
        raise SpecError(
            f"the {spec.backend.value} backend cannot run TPU jobs{why}",
            (
                *(Fix.set("backend", n, verb="use", after=" to run it") for n in tpu_backends),
                Fix.drop("tpu", after=" to train on CPUs"),
            ),
            field="backend",
        )
