"""tf.estimator inside a job: RunConfig, TPUConfig and the TPU RunConfig, from the environment.

Estimator exists up to TensorFlow 2.15 (with tensorflow-estimator); on a newer TensorFlow every
function here raises a RuntimeError that says so. What the RunConfig document promises for chief,
worker, ps and evaluator tasks holds in our jobs because RunConfig reads a ``TF_CONFIG`` it
understands: Vertex AI's ``CLUSTER_SPEC`` (pools ``workerpool0..3``, which RunConfig rejects) is
translated first. Its checkpoint notes become errors and warnings here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, MutableMapping
from typing import Any

from tfc_runtime.built import current_strategy
from tfc_runtime.cluster import (
    ClusterInfo,
    cluster_info,
    ensure_tf_config,
    tf_config_from_cluster_spec,
)
from tfc_runtime.strategy import _say, _warn

#: Core counts a model replica may span (TPUConfig's rule).
CORES_PER_REPLICA = (1, 2, 4, 8, 16, 32, 64, 128)
_ITERATIONS = re.compile(r"^([1-9]\d*)([smh]?)$")
_INPUT_MODES = ("PER_SHARD_V1", "PER_HOST_V1", "PER_HOST_V2", "BROADCAST", "SLICED")


def estimator_api() -> Any:
    """``tf.estimator``, or RuntimeError naming the fix when this TensorFlow has none."""
    import tensorflow as tf

    try:
        api = tf.estimator
        api.RunConfig  # noqa: B018 (the lazy loader imports tensorflow_estimator here)
    except (AttributeError, ImportError):
        raise RuntimeError(
            f"tf.estimator is not in TensorFlow {tf.__version__}: Estimator was removed in "
            "TensorFlow 2.16; run Estimator code on TensorFlow 2.15 with tensorflow-estimator "
            "(tfc_jupyter plans a 2.15 image when it sees tf.estimator)"
        ) from None
    return api


def tpu_api() -> Any:
    """``tf.compat.v1.estimator.tpu`` (TPUConfig, RunConfig, InputPipelineConfig)."""
    import tensorflow as tf

    estimator_api()
    return tf.compat.v1.estimator.tpu


def training_tf_config(environ: MutableMapping[str, str] = os.environ) -> str:
    """Make ``TF_CONFIG`` one that RunConfig reads; returns where it came from.

    ``CLUSTER_SPEC`` alone is translated to ``TF_CONFIG``; a ``TF_CONFIG`` that uses Vertex's
    pool names (``workerpool0`` ...) is rewritten with chief/worker/ps/evaluator.
    """
    raw = environ.get("TF_CONFIG", "").strip()
    if raw:
        try:
            config = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise RuntimeError(
                f"TF_CONFIG is not valid JSON ({exc.msg} at char {exc.pos})"
            ) from None
        names = [*(config.get("cluster") or {}), str((config.get("task") or {}).get("type", ""))]
        if not any(name.startswith("workerpool") for name in names):
            return "TF_CONFIG"
        try:
            translated = tf_config_from_cluster_spec(config)
        except (ValueError, TypeError) as exc:
            raise RuntimeError(f"TF_CONFIG: {exc}") from None
        environ["TF_CONFIG"] = json.dumps(translated)
        return "TF_CONFIG, Vertex pool names translated"
    if environ.get("CLUSTER_SPEC", "").strip():
        ensure_tf_config(environ)
        return "CLUSTER_SPEC"
    return "single machine"


def _distributed(info: ClusterInfo, environ: Mapping[str, str]) -> bool:
    """More than one task: workers, parameter servers, or an evaluator (CLUSTER_SPEC pool 3)."""
    if info.task_type == "evaluator" or info.num_workers > 1 or info.cluster.get("ps"):
        return True
    try:  # TF_CONFIG leaves the evaluator out; Vertex's CLUSTER_SPEC lists it as pool 3
        pools = json.loads(environ.get("CLUSTER_SPEC") or "{}").get("cluster") or {}
    except (ValueError, AttributeError):
        return False
    return bool(isinstance(pools, dict) and pools.get("workerpool3"))


def _check_checkpoints(kwargs: Mapping[str, Any], distributed: bool) -> None:
    """RunConfig's checkpoint notes: steps and secs conflict; short retention in a cluster."""
    steps, secs = kwargs.get("save_checkpoints_steps"), kwargs.get("save_checkpoints_secs")
    if steps is not None and secs is not None:
        raise ValueError(
            f"save_checkpoints_steps={steps} and save_checkpoints_secs={secs} are both set; "
            "RunConfig takes one of them: keep save_checkpoints_steps (or _secs) only"
        )
    if distributed and secs and "keep_checkpoint_max" not in kwargs:
        keep = 5
        _warn(
            f"checkpoints every {secs} s with keep_checkpoint_max={keep} (the default) are "
            f"deleted after {keep * secs} s, and the evaluator, which starts asynchronously, "
            "may not find them; raise keep_checkpoint_max or save by steps"
        )


def _distribution(kwargs: dict[str, Any]) -> str:
    """Set train/eval_distribute from the job's strategy where Estimator supports it."""
    strategy = current_strategy()
    if strategy is None:
        return "no strategy"
    name = type(strategy).__name__
    if {"train_distribute", "eval_distribute", "experimental_distribute"} & set(kwargs):
        return f"distribution as given ({name} not applied)"
    if name == "MirroredStrategy":
        kwargs["train_distribute"] = kwargs["eval_distribute"] = strategy
        return "train and eval under MirroredStrategy"
    if name in ("CollectiveAllReduceStrategy", "MultiWorkerMirroredStrategy"):
        kwargs["train_distribute"] = strategy
        return "train under MultiWorkerMirroredStrategy"
    if name.startswith("TPUStrategy"):
        return "TPUStrategy is not for Estimator: use TPUEstimator with tpu_run_config()"
    return f"{name} left out (Estimator runs on one device by itself)"


def run_config(**overrides: Any) -> Any:
    """``tf.estimator.RunConfig`` for this task of the job.

    ``model_dir`` defaults to ``AIP_MODEL_DIR`` (else the job folder's ``model``), shared by
    every task; ``train_distribute`` / ``eval_distribute`` come from the job's strategy where
    Estimator supports it (Mirrored, MultiWorkerMirrored); ``TF_CONFIG`` is made readable by
    RunConfig first. Any RunConfig argument may be given and wins.

    Raises:
        RuntimeError: no tf.estimator in this TensorFlow; a malformed cluster variable.
        ValueError: both ``save_checkpoints_steps`` and ``save_checkpoints_secs`` are set.
    """
    api = estimator_api()
    source = training_tf_config()
    info = cluster_info()
    _check_checkpoints(overrides, _distributed(info, os.environ))
    kwargs = dict(overrides)
    if kwargs.get("model_dir") is None:
        from tfc_runtime.paths import model_dir

        kwargs["model_dir"] = model_dir()
    how = _distribution(kwargs)
    config = api.RunConfig(**kwargs)
    _say(
        f"RunConfig: {config.task_type}:{config.task_id} ({source}), "
        f"{config.num_worker_replicas} worker(s), {config.num_ps_replicas} ps, "
        f"model_dir {config.model_dir}, {how}"
    )
    return config


def _iterations(value: int | str) -> int | str:
    """``iterations_per_loop``: a positive step count, or a time such as ``60s``/``5m``/``1h``."""
    if isinstance(value, bool) or not _ITERATIONS.match(str(value).strip()):
        raise ValueError(
            f"iterations_per_loop must be a positive step count (100) or a time like 60s, 5m, "
            f"1h; got {value!r}"
        )
    text = str(value).strip()
    return int(text) if text.isdigit() else text


def _input_mode(value: bool | int | str, what: str, allowed: tuple[str, ...]) -> bool | int:
    """An InputPipelineConfig value from True/False, its number or its name."""
    if isinstance(value, bool):
        return value
    modes = tpu_api().InputPipelineConfig
    numbers = {name: getattr(modes, name) for name in allowed}
    if isinstance(value, str) and value.strip().upper() in numbers:
        return int(numbers[value.strip().upper()])
    if isinstance(value, int) and value in numbers.values():
        return value
    raise ValueError(f"{what} must be one of {', '.join(allowed)} (or True/False); got {value!r}")


def _tpu_cores(resolver: Any) -> int:
    """Total TPU cores behind ``resolver``: cores per host (num_accelerators) x hosts."""
    from tfc_runtime.tpu import hard_deadline, reachable_master, target_of, timeout_s

    deadline = timeout_s()
    if target_of(resolver).tpu != "local":
        reachable_master(resolver, deadline)
    with hard_deadline(deadline, "counting TPU cores"):
        per_host = int(resolver.num_accelerators().get("TPU", 0))
    spec = resolver.cluster_spec()
    jobs = spec.as_dict() if spec else {}
    hosts = len(jobs.get(resolver.get_job_name() or "worker", [])) or 1
    return per_host * hosts


def tpu_config(
    *,
    iterations_per_loop: int | str = 2,
    num_cores_per_replica: int | None = None,
    per_host_input_for_training: bool | int | str = True,
    tpu_job_name: str | None = None,
    initial_infeed_sleep_secs: int | None = None,
    input_partition_dims: list[Any] | None = None,
    eval_training_input_configuration: int | str = "PER_HOST_V1",
    experimental_host_call_every_n_steps: int = 1,
    num_shards: int | None = None,
    resolver: Any = None,
) -> Any:
    """``TPUConfig`` with validated fields and ``num_shards`` derived from the TPU's cores.

    ``iterations_per_loop`` is steps or a time (``60s``); ``num_cores_per_replica`` one of
    1, 2, 4, ..., 128; input modes may be given by name (``"PER_HOST_V2"``). ``num_shards`` is
    total cores // cores per replica, counted with ``resolver.num_accelerators()`` (the job's
    TPU when there is one); left unset, with a note, when no TPU core is seen.
    """
    api = tpu_api()
    iterations = _iterations(iterations_per_loop)
    if num_cores_per_replica is not None and num_cores_per_replica not in CORES_PER_REPLICA:
        raise ValueError(
            f"num_cores_per_replica must be one of {', '.join(map(str, CORES_PER_REPLICA))}; "
            f"got {num_cores_per_replica!r}"
        )
    per_host = _input_mode(
        per_host_input_for_training, "per_host_input_for_training", _INPUT_MODES[:4]
    )
    eval_mode = _input_mode(
        eval_training_input_configuration,
        "eval_training_input_configuration",
        ("PER_HOST_V1", "SLICED"),
    )
    v2 = api.InputPipelineConfig.PER_HOST_V2
    if input_partition_dims is not None and (per_host != v2 or num_cores_per_replica is None):
        raise ValueError(
            "input_partition_dims needs per_host_input_for_training='PER_HOST_V2' and "
            "num_cores_per_replica"
        )
    if num_shards is None:
        num_shards = _derived_shards(resolver, num_cores_per_replica or 1)
    return api.TPUConfig(
        iterations_per_loop=iterations,
        num_shards=num_shards,
        num_cores_per_replica=num_cores_per_replica,
        per_host_input_for_training=per_host,
        tpu_job_name=tpu_job_name,
        initial_infeed_sleep_secs=initial_infeed_sleep_secs,
        input_partition_dims=input_partition_dims,
        eval_training_input_configuration=eval_mode,
        experimental_host_call_every_n_steps=experimental_host_call_every_n_steps,
    )


_tpu_config = tpu_config  # tpu_run_config's argument of the same name hides the function


def _derived_shards(resolver: Any, per_replica: int) -> int | None:
    """Model replicas on the TPU (cores // cores per replica), None when no core is seen."""
    from tfc_runtime.tpu import tpu_in_environment, tpu_resolver

    if resolver is None:
        if not tpu_in_environment():
            _say("TPUConfig: no TPU in this environment; num_shards left unset")
            return None
        resolver = tpu_resolver()
    cores = _tpu_cores(resolver)
    if cores == 0:
        _say("TPUConfig: the resolver sees no TPU cores; num_shards left unset")
        return None
    if cores % per_replica:
        raise ValueError(
            f"num_cores_per_replica={per_replica} does not divide the TPU's {cores} cores; "
            "use a divisor of the core count"
        )
    return cores // per_replica


def tpu_run_config(*, resolver: Any = None, tpu_config: Any = None, **overrides: Any) -> Any:
    """``tf.compat.v1.estimator.tpu.RunConfig`` bound to the job's TPU resolver.

    ``resolver`` defaults to :func:`tfc_runtime.tpu_resolver` (the job's TPU), ``tpu_config``
    to :func:`tpu_config` derived from it, ``model_dir`` as in :func:`run_config`. Other
    RunConfig arguments pass through.
    """
    api = tpu_api()
    source = training_tf_config()
    _check_checkpoints(overrides, _distributed(cluster_info(), os.environ))
    if resolver is None:
        from tfc_runtime.tpu import tpu_resolver

        resolver = tpu_resolver()
    if tpu_config is None:
        tpu_config = _tpu_config(resolver=resolver)
    kwargs = dict(overrides)
    if kwargs.get("model_dir") is None:
        from tfc_runtime.paths import model_dir

        kwargs["model_dir"] = model_dir()
    config = api.RunConfig(cluster=resolver, tpu_config=tpu_config, **kwargs)
    _say(
        f"TPU RunConfig: master {config.master or 'local'} ({source}), "
        f"iterations_per_loop {tpu_config.iterations_per_loop}, "
        f"num_shards {tpu_config.num_shards}, model_dir {config.model_dir}"
    )
    return config
