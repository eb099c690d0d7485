"""A job's replicas as every backend starts them: the runtime's arguments and the cluster
environment, from the spec, through the runtime's protocol (:mod:`tfc_runtime.protocol`).

A backend chooses only where its replicas run and the ``host:port`` each is reached at.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from typing import Any

from tfc_runtime import params, protocol

from .spec import JobSpec


def runtime_args(spec: JobSpec, script: str, source_map: str) -> list[str]:
    """Arguments of ``python -m tfc_runtime`` for ``script``, on every backend."""
    return protocol.RuntimeArgs(
        script=script,
        strategy=spec.resolved_strategy().value,
        source_map=source_map,
        args=tuple(spec.entry_args),
        legacy_keras=spec.decided.legacy_keras,
        serve=spec.decided.serve,
        params=params.decode(spec.decided.swept),
        hp_metric=spec.decided.sweep_metric or None,
        keras_tuner=spec.decided.keras_tuner,
    ).to_argv()


def container_args(spec: JobSpec) -> list[str]:
    """Arguments of ``python -m tfc_runtime`` in every replica of an image."""
    return runtime_args(spec, protocol.SCRIPT, protocol.SOURCE_MAP)


def counts(spec: JobSpec) -> dict[str, int]:
    """Replicas of each role the job has, by the role's name (:meth:`JobSpec.pools`)."""
    return {pool.role: pool.replicas for pool in spec.pools()}


def replica_env(
    spec: JobSpec, job_id: str, addresses: Iterable[str]
) -> list[tuple[str, dict[str, str]]]:
    """``(replica name, CLUSTER_SPEC/TF_CONFIG env)`` of every replica, as Vertex AI sets them,
    with ``addresses`` (one ``host:port`` a replica, chief first)."""
    return protocol.cluster_env(counts(spec), addresses, job_id)


def job_env(spec: JobSpec, job_id: str, job_dir: str) -> dict[str, str]:
    """What every replica of the job gets besides its cluster variables, on every backend:
    ``--env``, the job's name, id and folder, and, with ``--base-output-dir``, the ``AIP_*``
    folders Vertex AI sets."""
    env = {
        **dict(spec.env),  # --env (never a name the job sets: the spec refuses those)
        "TFC_JOB_NAME": spec.name,
        "TFC_JOB_ID": job_id,
        "TFC_JOB_DIR": job_dir,
        "CLOUD_ML_JOB_ID": job_id,
        "PYTHONUNBUFFERED": "1",
    }
    if not spec.resume:  # --no-resume: the runtime keeps no backups (tfc_runtime.resume)
        env["TFC_RESUME"] = "0"
    if spec.base_output_dir:
        base = spec.base_output_dir.rstrip("/")
        env.update(
            {
                "AIP_MODEL_DIR": f"{base}/model/",
                "AIP_CHECKPOINT_DIR": f"{base}/checkpoints/",
                "AIP_TENSORBOARD_LOG_DIR": f"{base}/logs/",
            }
        )
    return env


JOB_ID, JOB_DIR = "<job id>", "<job folder>"
"""What a dry run shows for the values a launch makes: the job's id and folder."""


def launch_preview(
    spec: JobSpec, command: Iterable[str], *, script: str, source_map: str, **where: object
) -> dict[str, object]:
    """What a backend that runs replicas on this machine starts, as a dry run shows it: each
    replica's command and own variables (its cluster, on loopback ports chosen at launch),
    the variables every replica gets, and ``where`` (the folder, the image ...)."""
    addresses = [f"127.0.0.1:<port {i}>" for i in range(spec.replica_count)]
    argv = [*command, *runtime_args(spec, script, source_map)]
    return {
        **where,
        "replicas": [
            {"name": name, "command": argv, "env": env}
            for name, env in replica_env(spec, JOB_ID, addresses)
        ],
        "env": job_env(spec, JOB_ID, JOB_DIR),
        "timeout_s": spec.timeout_s,
    }


def launch_text(request: dict[str, Any]) -> str:
    """:func:`launch_preview` as lines to read: where, then each replica's command and task,
    then the variables every replica gets (the request's JSON holds them all)."""
    where = [f"{k}: {v}" for k, v in request.items() if k not in ("replicas", "env")]
    lines = [", ".join(w for w in where if not w.endswith(": None"))]
    width = max(len(r["name"]) for r in request["replicas"])
    for rep in request["replicas"]:
        lines.append(f"{rep['name']:<{width}}  {shlex.join(rep['command'])}")
        config = rep["env"].get("TF_CONFIG")
        if config:
            data = json.loads(config)
            cluster = "; ".join(f"{k} {', '.join(v)}" for k, v in data["cluster"].items())
            task = data["task"]
            lines.append(f"{'':<{width}}  TF_CONFIG: {task['type']} {task['index']} of {cluster}")
    shared = " ".join(f"{k}={shlex.quote(v)}" for k, v in request["env"].items())
    lines.append(f"every replica: {shared}")
    return "\n".join(lines)
