"""What crosses from the product into a job, written once (standard library only).

The product (``tfc_jupyter``) imports this module to launch a job and to read what it reports;
the runtime reads the same names inside the job. Every backend uses it, so a backend only
chooses where replicas run and the addresses they reach each other at:

- the files a job's code travels in (:data:`SCRIPT`, :data:`SOURCE_MAP`, :data:`WORKDIR`);
- the runtime's command line (:class:`RuntimeArgs`: the product writes it, ``python -m
  tfc_runtime`` reads it, through the same type);
- each replica's cluster environment, as Vertex AI sets it (:func:`cluster_env`);
- the result channel (:data:`RESULTS_FILE`, :data:`RESULT_PREFIX`), strict JSON: NaN and infinity
  written as :data:`NONFINITE` names them (:func:`json_safe`); on a stream (Vertex AI) each report
  line is signed with the job's :data:`REPORT_KEY_ENV` (:func:`report_line`, :func:`read_report`),
  so a line the code prints is never taken for one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .params import Target, decode, encode

SCRIPT = "script.py"
"""The converted notebook, in the job folder or the image's :data:`WORKDIR`."""
SOURCE_MAP = "script.map.json"
"""Script lines to cells (or to the ``.py`` entry point), beside :data:`SCRIPT`."""
WORKDIR = "/app"
"""Where an image keeps the job's code (and its working directory)."""
RESULTS_FILE = "results.jsonl"
"""The job folder's file of reports, one JSON object a line (the chief's)."""
RESULT_PREFIX = "[tfc_runtime] result "
"""The start of a report on stderr, where the job has no job folder (Vertex AI)."""
OUTPUT_MARK = "[tfc_runtime] output "
"""The start of the line the chief writes after a rich output's report where its output is a
pipe (docker): the follower shows the output where this line is, after what was printed before
it (a log file gives its offset instead)."""
RUN_CELL_MARK = "[tfc_runtime] the run cell starts"
"""The line each replica writes on its stdout when the ``%%tfc_run`` cell's own code starts (the
cells above it ran first): the run cell in the kernel shows what the code printed from here on,
as Jupyter shows a cell's output (the cells above showed theirs where they ran). A job that
fails before it shows everything (what the cells above printed is the failure's context)."""
ONE_STREAM_ENV = "TFC_ONE_LOG_STREAM"
"""Set (``1``) by a backend whose replica's stdout and stderr are two pipes read apart (docker's
engine): the runtime makes its stderr the stdout pipe before anything is written, so the log
keeps the order the lines were written in, as a log file here does (the run cell's mark line
after the cells above's warnings). Taken out of the environment: the code never sees it."""
REPORT_KEY_ENV = "TFC_REPORT_KEY"
"""The job's report key (hex), made at launch where reports travel with the logs: the runtime
takes it out of its environment before the code runs (``tfc_runtime.reportkey``)."""
_SIGNATURE_HEX = 32


def output_mark(line: str) -> int | None:
    """The output number of an :data:`OUTPUT_MARK` line, else None."""
    rest = line.removeprefix(OUTPUT_MARK)
    return int(rest) if rest != line and rest.isdigit() and len(rest) < 10 else None


def report_line(text: str, key: str) -> str:
    """A report's line on a stream: :data:`RESULT_PREFIX`, the HMAC-SHA256 of ``text`` under
    ``key`` (hex, 32 digits), a space, ``text``; unsigned (the form before keys) without one."""
    if not key:
        return RESULT_PREFIX + text
    return f"{RESULT_PREFIX}{_signature(text, key)} {text}"


def read_report(line: str, key: str | None) -> str | None:
    """The report's JSON text in a log line signed with ``key``, else None (a line the code
    printed, however it looks). ``key`` None reads the unsigned form (a job launched before
    reports were signed). The report may follow a line the code left unfinished."""
    start = line.find(RESULT_PREFIX)
    if start < 0:
        return None
    rest = line[start + len(RESULT_PREFIX) :]
    if key is None:
        return rest
    signature, _, text = rest.partition(" ")
    if len(signature) != _SIGNATURE_HEX or not signature.isascii():
        return None  # (compare_digest takes ASCII text only)
    import hmac  # (OpenSSL's library loads with it: only where a line is signed)

    if not hmac.compare_digest(signature, _signature(text, key)):
        return None
    return text


def _signature(text: str, key: str) -> str:
    import hashlib
    import hmac

    digest = hmac.new(key.encode(), text.encode("utf-8", "surrogatepass"), hashlib.sha256)
    return digest.hexdigest()[:_SIGNATURE_HEX]


NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
"""How a report writes a value JSON cannot hold (JavaScript's own words for them)."""


def json_safe(value: Any) -> Any:
    """``value`` with each NaN or infinity written as :data:`NONFINITE` names it (a report, or
    what the jobs API sends a browser: ``JSON.parse`` takes no bare ``NaN``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


ROLES = ("chief", "worker", "ps", "evaluator")
"""Replica roles, in Vertex AI's worker pool order (pool 0 to 3)."""

POOL_ROLES = {f"workerpool{i}": role for i, role in enumerate(ROLES)}
"""Vertex AI's worker pool names (``CLUSTER_SPEC``, task names ``workerpool1-0``) -> the role:
the one pool/role table, read by the runtime's cluster module and the Vertex AI watcher."""


@dataclass(frozen=True)
class RuntimeArgs:
    """The command line of ``python -m tfc_runtime``, typed on both sides of the process
    boundary: the product writes it (:meth:`to_argv`), the runtime reads it (:meth:`from_argv`),
    and ``from_argv(a.to_argv()) == a`` for every ``a``."""

    script: str
    """The converted notebook (or entry point) to run."""
    strategy: str = "auto"
    """The ``tf.distribute`` strategy's name (``tfc_runtime.strategy.STRATEGIES``)."""
    source_map: str | None = None
    """The JSON map of script lines to notebook cells."""
    args: tuple[str, ...] = ()
    """The script's own arguments (its ``sys.argv[1:]``), passed through untouched."""
    legacy_keras: bool = False
    """Keras fit under the code's own MultiWorkerMirroredStrategy: use tf-keras."""
    serve: bool = False
    """The code's ParameterServerStrategy: worker and ps tasks run ``tf.distribute.Server``."""
    gpus: int | None = None
    """GPUs to mirror over (``None``: all)."""
    params: tuple[Target, ...] = ()
    """A sweep trial's variables: their values come among ``args`` (``--lr=0.01``), as
    Vertex AI passes a tuning trial's (:mod:`tfc_runtime.params`)."""
    hp_metric: str | None = None
    """A Vertex AI tuning trial: the metric the chief writes to the tuning file
    (:mod:`tfc_runtime.hypertune`)."""
    keras_tuner: bool = False
    """Keras Tuner's distributed search: each replica gets its ``KERASTUNER_*`` variables (the
    chief runs the oracle at its cluster address, the workers tune)."""

    def to_argv(self) -> list[str]:
        """The arguments after ``python -m tfc_runtime``."""
        flags = _valued("--strategy", self.strategy)
        if self.gpus is not None:
            flags += _valued("--gpus", str(self.gpus))
        if self.legacy_keras:
            flags.append("--legacy-keras")
        if self.serve:
            flags.append("--serve")
        if self.keras_tuner:
            flags.append("--keras-tuner")
        if self.source_map is not None:
            flags += _valued("--source-map", self.source_map)
        if self.params:
            flags += _valued("--params", encode(self.params))
        if self.hp_metric is not None:
            flags += _valued("--hp-metric", self.hp_metric)
        if self.script.startswith("-"):
            flags.append("--")  # a script named like an option
        return [*flags, self.script, *self.args]

    @classmethod
    def from_argv(cls, argv: Sequence[str]) -> RuntimeArgs:
        """Read the runtime's command line: its options (``--opt value`` or ``--opt=value``),
        then SCRIPT (after ``--`` where it reads like an option), then the script's own
        arguments, each kept as written (``--strategy`` after SCRIPT is the script's).

        Raises:
            ValueError: an unknown option, a missing value or script, ``--gpus`` not a number,
                or ``--params`` not ``NAME:KIND:LINE,...``.
        """
        values: dict[str, str] = {}
        switches: set[str] = set()
        i = 0
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
            name, eq, value = argv[i].partition("=")
            if argv[i] == "--":
                i += 1
                break
            if name in _VALUED and not eq:
                if i + 1 == len(argv):
                    raise ValueError(f"{name} needs a value")
                i, value = i + 1, argv[i + 1]
            elif name not in _VALUED and (name not in _SWITCHES or eq):
                raise ValueError(f"unknown option {argv[i]!r} (options: {', '.join(_OPTIONS)})")
            if name in _VALUED:
                values[name] = value
            else:
                switches.add(name)
            i += 1
        if i == len(argv):
            raise ValueError("no script to run")
        gpus = values.get("--gpus")
        if gpus is not None and not gpus.lstrip("-").isdigit():
            raise ValueError(f"--gpus takes a number, not {gpus!r}")
        return cls(
            script=argv[i],
            strategy=values.get("--strategy", "auto"),
            source_map=values.get("--source-map"),
            args=tuple(argv[i + 1 :]),
            legacy_keras="--legacy-keras" in switches,
            serve="--serve" in switches,
            gpus=None if gpus is None else int(gpus),
            params=decode(values.get("--params", "")),
            hp_metric=values.get("--hp-metric"),
            keras_tuner="--keras-tuner" in switches,
        )


_VALUED = ("--strategy", "--gpus", "--source-map", "--params", "--hp-metric")
_SWITCHES = ("--legacy-keras", "--serve", "--keras-tuner")
_OPTIONS = (*_VALUED, *_SWITCHES)
USAGE = (
    "usage: python -m tfc_runtime [--strategy NAME] [--gpus N] [--source-map FILE] "
    "[--params NAME:KIND:LINE,...] [--hp-metric NAME] [--legacy-keras] [--serve] "
    "[--keras-tuner] [--] SCRIPT [ARGS...]"
)
"""The runtime's command line, for its usage errors."""


def _valued(flag: str, value: str) -> list[str]:
    """``[flag, value]``; ``[flag=value]`` where the value reads like an option."""
    return [f"{flag}={value}"] if value.startswith("-") else [flag, value]


def replica_name(role: str, index: int) -> str:
    """``chief``, ``worker-0``, ``ps-1``, ``evaluator-0``: a replica's log and process name."""
    return role if role == "chief" else f"{role}-{index}"


def cluster_env(
    replicas: Mapping[str, int], addresses: Iterable[str], job_id: str
) -> list[tuple[str, dict[str, str]]]:
    """``(replica name, env)`` for every replica, as Vertex AI sets them.

    ``replicas`` counts the replicas of each role by its name (``{"chief": 1, "worker": 2}``:
    the names ``TF_CONFIG`` gives tasks, :data:`ROLES`); ``addresses`` gives one ``host:port``
    per replica in :data:`ROLES` order (chief, workers, parameter servers, evaluator).
    ``CLUSTER_SPEC`` names the pools (``workerpool0``...); ``TF_CONFIG`` (set only when there is
    more than one replica, as on Vertex AI) names the roles and leaves the evaluator out of the
    training cluster.
    """
    unknown = set(replicas) - set(ROLES)
    if unknown:
        raise ValueError(f"no replica role {sorted(unknown)[0]!r}: the roles are {ROLES}")
    addrs = iter(addresses)
    pools: dict[str, list[str]] = {}
    for pool, role in POOL_ROLES.items():
        if replicas.get(role):
            pools[pool] = [next(addrs) for _ in range(replicas[role])]
    role_of = POOL_ROLES
    tf_cluster = {role_of[p]: a for p, a in pools.items() if role_of[p] != "evaluator"}
    distributed = sum(replicas.values()) > 1
    out = []
    for pool, members in pools.items():
        role = role_of[pool]
        for index in range(len(members)):
            job = {"job_id": job_id}
            cluster_spec = {
                "cluster": pools,
                "environment": "cloud",
                "task": {"type": pool, "index": index, "trial": ""},
                "job": job,
            }
            env = {"CLUSTER_SPEC": json.dumps(cluster_spec)}
            if distributed:
                tf_config = {
                    "cluster": tf_cluster,
                    "environment": "cloud",
                    "task": {"type": role, "index": index, "trial": ""},
                    "job": job,
                }
                env["TF_CONFIG"] = json.dumps(tf_config)
            out.append((replica_name(role, index), env))
    return out
