"""Where this task sits in the job: TF_CONFIG, Vertex AI's CLUSTER_SPEC, or a single machine.

TensorFlow reads only ``TF_CONFIG``. Vertex AI sets ``CLUSTER_SPEC`` on every replica (pools
``workerpool0..3``) and usually ``TF_CONFIG`` too; the local and docker backends set the same
variables. This module reads either and translates CLUSTER_SPEC into TF_CONFIG when needed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from .protocol import POOL_ROLES as POOL_TO_TASK_TYPE

#: Job names always present in ``ClusterInfo.cluster`` (possibly empty).
CLUSTER_JOBS = ("chief", "worker", "ps")


@dataclass(frozen=True)
class ClusterInfo:
    """This task's place in the job, as read from the environment."""

    task_type: str = "chief"
    task_index: int = 0
    cluster: dict[str, list[str]] = field(default_factory=lambda: {j: [] for j in CLUSTER_JOBS})
    source: str = "none"

    @property
    def num_workers(self) -> int:
        """Training tasks in the job: chief plus workers (1 on a single machine)."""
        return max(1, len(self.cluster.get("chief", [])) + len(self.cluster.get("worker", [])))

    @property
    def is_multi_worker(self) -> bool:
        """True when more than one task trains (MultiWorkerMirroredStrategy territory)."""
        return self.num_workers > 1

    @property
    def is_chief(self) -> bool:
        """The chief task; worker 0 when the cluster has no chief; a single machine."""
        if self.task_type == "chief":
            return True
        has_chief = bool(self.cluster.get("chief"))
        return self.task_type == "worker" and self.task_index == 0 and not has_chief

    def describe(self) -> str:
        """One readable phrase, e.g. ``chief:0 of 2 workers (TF_CONFIG)``."""
        if self.source == "none":
            return "single machine"
        n = self.num_workers
        return f"{self.task_type}:{self.task_index} of {n} worker{'s' * (n != 1)} ({self.source})"


def _load_json(environ: Mapping[str, str], name: str) -> dict[str, Any] | None:
    """The JSON object in ``environ[name]``, None when unset or blank."""
    raw = environ.get(name, "")
    if not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"{name} is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(value, dict):
        raise RuntimeError(f"{name} must be a JSON object, got {type(value).__name__}")
    return value


def tf_config_from_cluster_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Translate Vertex AI's CLUSTER_SPEC into TF_CONFIG, as Vertex itself does.

    Pool 0 -> chief, 1 -> worker, 2 -> ps, 3 -> evaluator. The evaluator is not listed in
    ``cluster`` (it is no part of the training cluster). ``environment`` and ``task.trial`` are
    kept. Raises ValueError on an unknown pool name or a malformed spec.
    """
    pools = spec.get("cluster") or {}
    task = spec.get("task") or {}
    if not isinstance(pools, Mapping) or not isinstance(task, Mapping):
        raise ValueError("CLUSTER_SPEC needs 'cluster' and 'task' objects")
    cluster: dict[str, list[str]] = {}
    for pool, hosts in pools.items():
        task_type = POOL_TO_TASK_TYPE.get(pool)
        if task_type is None:
            raise ValueError(f"unknown worker pool {pool!r} (expected workerpool0..workerpool3)")
        if not isinstance(hosts, list):
            raise ValueError(f"worker pool {pool!r} must list host:port addresses")
        if hosts and task_type != "evaluator":
            cluster[task_type] = [str(h) for h in hosts]
    pool = str(task.get("type", "workerpool0"))
    if pool not in POOL_TO_TASK_TYPE:
        raise ValueError(f"unknown task type {pool!r} (expected workerpool0..workerpool3)")
    tf_task: dict[str, Any] = {"type": POOL_TO_TASK_TYPE[pool], "index": int(task.get("index", 0))}
    if "trial" in task:
        tf_task["trial"] = task["trial"]
    config: dict[str, Any] = {"cluster": cluster, "task": tf_task}
    if "environment" in spec:
        config["environment"] = spec["environment"]
    return config


def _from_tf_config(config: Mapping[str, Any], source: str) -> ClusterInfo:
    """ClusterInfo from a parsed TF_CONFIG dict."""
    raw_cluster = config.get("cluster") or {}
    task = config.get("task") or {}
    if not isinstance(raw_cluster, Mapping) or not isinstance(task, Mapping):
        raise RuntimeError(f"{source} needs 'cluster' and 'task' objects")
    cluster: dict[str, list[str]] = {job: [] for job in CLUSTER_JOBS}
    for job, hosts in raw_cluster.items():
        if isinstance(hosts, Mapping):  # TF also accepts {index: address}
            hosts = [hosts[k] for k in sorted(hosts, key=int)]
        if not isinstance(hosts, list):
            raise RuntimeError(f"{source}: cluster[{job!r}] must be a list of host:port")
        cluster[str(job)] = [str(h) for h in hosts]
    try:
        index = int(task.get("index", 0))
    except (TypeError, ValueError):
        raise RuntimeError(f"{source}: task.index must be an integer") from None
    return ClusterInfo(str(task.get("type", "chief")), index, cluster, source)


def cluster_info(environ: Mapping[str, str] = os.environ) -> ClusterInfo:
    """This task's ClusterInfo: from TF_CONFIG, else CLUSTER_SPEC, else a single machine.

    Raises RuntimeError (one line, naming the variable) when the variable is malformed.
    """
    tf_config = _load_json(environ, "TF_CONFIG")
    if tf_config is not None:
        return _from_tf_config(tf_config, "TF_CONFIG")
    spec = _load_json(environ, "CLUSTER_SPEC")
    if spec is not None:
        try:
            translated = tf_config_from_cluster_spec(spec)
        except (ValueError, TypeError) as exc:
            raise RuntimeError(f"CLUSTER_SPEC: {exc}") from None
        return _from_tf_config(translated, "CLUSTER_SPEC")
    return ClusterInfo()


def ensure_tf_config(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set TF_CONFIG from CLUSTER_SPEC when only CLUSTER_SPEC is set (TF reads only TF_CONFIG).

    Not for a one-replica job: Vertex AI sets no TF_CONFIG there, and a TF_CONFIG naming a
    one-task cluster breaks one-process code (a MultiWorkerMirroredStrategy built after
    TensorFlow started: "Collective ops must be configured at program startup").
    """
    if environ.get("TF_CONFIG", "").strip():
        return
    spec = _load_json(environ, "CLUSTER_SPEC")
    if spec is None:
        return
    try:
        config = tf_config_from_cluster_spec(spec)
    except (ValueError, TypeError) as exc:
        raise RuntimeError(f"CLUSTER_SPEC: {exc}") from None
    pools = spec.get("cluster") or {}
    if sum(len(hosts) for hosts in pools.values() if isinstance(hosts, list)) > 1:
        environ["TF_CONFIG"] = json.dumps(config)


def keras_tuner_env(info: ClusterInfo) -> dict[str, str]:
    """The ``KERASTUNER_*`` variables of Keras Tuner's distributed search for this task: the
    chief runs the oracle at its own cluster address (``KERASTUNER_TUNER_ID=chief``), each
    worker is a tuner (``tuner0``, ``tuner1`` ...) that asks it for trials. Empty on a single
    machine (Keras Tuner then searches alone)."""
    chief = info.cluster.get("chief") or []
    if not chief or not info.cluster.get("worker"):
        return {}
    host, _, port = chief[0].rpartition(":")
    tuner = "chief" if info.is_chief else f"tuner{info.task_index}"
    return {
        "KERASTUNER_ORACLE_IP": host,
        "KERASTUNER_ORACLE_PORT": port,
        "KERASTUNER_TUNER_ID": tuner,
    }
