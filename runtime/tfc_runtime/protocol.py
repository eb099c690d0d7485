"""What crosses from the product into a job, written once (standard library only).

The product (``tfc_jupyter``) imports this module to launch a job and to read what it reports;
the runtime reads the same names inside the job. Every backend uses it, so a backend only
chooses where replicas run and the addresses they reach each other at:

- the files a job's code travels in (:data:`SCRIPT`, :data:`SOURCE_MAP`, :data:`WORKDIR`);
- the runtime's command line (:func:`runtime_argv`; ``python -m tfc_runtime`` parses it);
- each replica's cluster environment, as Vertex AI sets it (:func:`cluster_env`);
- the result channel (:data:`RESULTS_FILE`, :data:`RESULT_PREFIX`), strict JSON: NaN and infinity
  written as :data:`NONFINITE` names them (:func:`json_safe`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

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


def runtime_argv(
    strategy: str,
    script: str,
    source_map: str,
    args: Sequence[str] = (),
    *,
    legacy_keras: bool = False,
    serve: bool = False,
) -> list[str]:
    """The arguments of ``python -m tfc_runtime`` that run ``script`` with ``args``."""
    flags = ["--strategy", strategy]
    if legacy_keras:
        flags.append("--legacy-keras")
    if serve:
        flags.append("--serve")
    return [*flags, "--source-map", source_map, script, *args]


def replica_name(role: str, index: int) -> str:
    """``chief``, ``worker-0``, ``ps-1``, ``evaluator-0``: a replica's log and process name."""
    return role if role == "chief" else f"{role}-{index}"


def cluster_env(
    counts: Sequence[int], addresses: Iterable[str], job_id: str
) -> list[tuple[str, dict[str, str]]]:
    """``(replica name, env)`` for every replica, as Vertex AI sets them.

    ``counts`` are the replicas of each role in :data:`ROLES` order (chief, workers, parameter
    servers, evaluator); ``addresses`` gives one ``host:port`` per replica in that order.
    ``CLUSTER_SPEC`` names the pools (``workerpool0``...); ``TF_CONFIG`` (set only when there is
    more than one replica, as on Vertex AI) names the roles and leaves the evaluator out of the
    training cluster.
    """
    addrs = iter(addresses)
    pools: dict[str, list[str]] = {}
    for i, count in enumerate(counts):
        if count:
            pools[f"workerpool{i}"] = [next(addrs) for _ in range(count)]
    role_of = POOL_ROLES
    tf_cluster = {role_of[p]: a for p, a in pools.items() if role_of[p] != "evaluator"}
    distributed = sum(counts) > 1
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
