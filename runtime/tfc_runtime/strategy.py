"""Build the job's tf.distribute strategy from the real devices and cluster, inside the job.

TensorFlow is imported lazily: ``prepare_keras`` must run before anything imports it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from tfc_runtime.built import set_current
from tfc_runtime.cluster import ClusterInfo, cluster_info

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu", "none")

# The strategy build_strategy made last (None: none built, or "none" asked for).


def _say(message: str) -> None:
    """One runtime status line on stdout."""
    print(f"[tfc_runtime] {message}", flush=True)


def _warn(message: str) -> None:
    """One runtime warning line on stderr."""
    sys.stdout.flush()
    print(f"[tfc_runtime] warning: {message}", file=sys.stderr, flush=True)


def _check_name(name: str) -> str:
    """``name`` normalised, or ValueError listing the valid names."""
    key = name.strip().lower().replace("-", "_")
    if key not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; valid strategies: {', '.join(STRATEGIES)}")
    return key


def parameter_server_cluster(info: ClusterInfo) -> bool:
    """True when the cluster has parameter servers: tf.estimator's between-graph training."""
    return bool(info.cluster.get("ps"))


def _trains_multi_worker(info: ClusterInfo) -> bool:
    """True when this task trains in a multi-worker all-reduce cluster: not a ps or evaluator
    task, and no parameter servers (tf.estimator drives those without a strategy)."""
    in_training = info.task_type in ("chief", "worker")
    return info.is_multi_worker and in_training and not parameter_server_cluster(info)


def will_be_multi_worker(strategy_name: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``strategy_name`` will build MultiWorkerMirroredStrategy in this environment."""
    key = _check_name(strategy_name)
    if key == "multi_worker_mirrored":
        return True
    return key == "auto" and _trains_multi_worker(cluster_info(environ))


def legacy_keras_installed() -> bool:
    """Whether tf-keras can be imported here (what a multi-worker job's tf.keras becomes)."""
    return importlib.util.find_spec("tf_keras") is not None


def keras_env(
    strategy_name: str, environ: Mapping[str, str], *, legacy: bool = False
) -> dict[str, str]:
    """The variables :func:`prepare_keras` adds to ``environ`` before TensorFlow is imported
    (none, or ``TF_USE_LEGACY_KERAS=1``), without saying anything: what a warm runtime that
    imported TensorFlow ahead of the job must have had in its environment."""
    multi = legacy or will_be_multi_worker(strategy_name, environ)
    if multi and "TF_USE_LEGACY_KERAS" not in environ and legacy_keras_installed():
        return {"TF_USE_LEGACY_KERAS": "1"}
    return {}


def prepare_keras(
    strategy_name: str, environ: MutableMapping[str, str] = os.environ, *, legacy: bool = False
) -> None:
    """Pick tf-keras for multi-worker jobs. Call BEFORE tensorflow is imported.

    Keras 3's ``model.fit`` fails under MultiWorkerMirroredStrategy on TF >= 2.16
    ("Attempt to convert a value (PerReplica...)"); tf-keras (``TF_USE_LEGACY_KERAS=1``) works.
    ``legacy``: the plan found Keras fit under the code's own MultiWorkerMirroredStrategy.
    Leaves a user's own TF_USE_LEGACY_KERAS alone.
    """
    multi = legacy or will_be_multi_worker(strategy_name, environ)
    if not multi or "TF_USE_LEGACY_KERAS" in environ:
        return
    if legacy_keras_installed():
        environ["TF_USE_LEGACY_KERAS"] = "1"
        _say("multi-worker job: TF_USE_LEGACY_KERAS=1, tf.keras is tf-keras (Keras 3 fit fails)")
    else:
        _warn(
            "tf-keras is not installed: Keras 3 model.fit will fail under "
            "MultiWorkerMirroredStrategy; pip install tf-keras (custom loops with "
            "strategy.run still work)"
        )


def _gpus() -> list[str]:
    """Names of the local GPUs, e.g. ``['/gpu:0', '/gpu:1']``."""
    import tensorflow as tf

    return [f"/gpu:{i}" for i in range(len(tf.config.list_physical_devices("GPU")))]


def _pick_gpus(gpus: int | None) -> list[str]:
    """The first ``gpus`` local GPUs (all when None); RuntimeError when too few exist."""
    found = _gpus()
    if gpus is None:
        return found
    if gpus < 0:
        raise ValueError(f"gpus must be >= 0, got {gpus}")
    if gpus > len(found):
        raise RuntimeError(
            f"{gpus} GPUs requested but TensorFlow sees {len(found)}; check the machine's "
            "accelerators and that the image has a GPU build of TensorFlow"
        )
    return found[:gpus]


def _build_one_device(gpus: int | None = None) -> Any:
    """OneDeviceStrategy on /gpu:0 when a GPU exists (and gpus != 0), else /cpu:0."""
    import tensorflow as tf

    device = "/gpu:0" if gpus != 0 and _gpus() else "/cpu:0"
    return tf.distribute.OneDeviceStrategy(device)


def _build_mirrored(gpus: int | None = None) -> Any:
    """MirroredStrategy over the local GPUs (or the first ``gpus``); /cpu:0 without any."""
    import tensorflow as tf

    devices = _pick_gpus(gpus)
    if not devices:
        _warn("no GPU found: MirroredStrategy mirrors over /cpu:0 only (1 replica)")
        devices = ["/cpu:0"]
    return tf.distribute.MirroredStrategy(devices)


LEADER_WAIT_S = 120.0  # how long a task waits for the leader's port before going on regardless


def wait_for_leader(info: ClusterInfo, deadline_s: float = LEADER_WAIT_S) -> bool:
    """In a task other than the chief (the leader of MultiWorkerMirroredStrategy's collectives),
    wait until the chief's port accepts a connection: True once it does (or on the chief).

    A task that asks the leader for its group before the leader's server listens is refused,
    and gRPC tries again only after its reconnect backoff, a whole second: a local job's first
    line came 1 s late whenever a worker finished importing TensorFlow before the chief. A
    connection made and closed every 10 ms costs nothing; past ``deadline_s`` (the chief never
    came) the strategy is built anyway, and waits as TensorFlow waits.
    """
    if info.is_chief:
        return True
    leaders = info.cluster.get("chief") or info.cluster.get("worker") or []
    host, _, port = (leaders[0] if leaders else "").rpartition(":")
    if not host or not port.isdigit():
        return False
    import socket

    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=1.0):
                return True
        except OSError:
            time.sleep(0.01)
    return False


def _build_multi_worker() -> Any:
    """MultiWorkerMirroredStrategy over the cluster in TF_CONFIG (local devices per task)."""
    import tensorflow as tf

    wait_for_leader(cluster_info())
    return tf.distribute.MultiWorkerMirroredStrategy()


def _build_tpu() -> Any:
    """TPUStrategy over the job's TPU, found, connected and initialized under deadlines."""
    from tfc_runtime.tpu import tpu_strategy

    return tpu_strategy()


def _build_auto(gpus: int | None) -> Any:
    """tfc.run's rules, CPU-aware: TPU, else multi-worker, else Mirrored for >1 GPU, else none
    (one device: TensorFlow's own placement, as in Jupyter)."""
    from tfc_runtime.tpu import tpu_in_environment

    info = cluster_info()
    if info.task_type in ("chief", "worker") and tpu_in_environment():
        return _build_tpu()
    if _trains_multi_worker(info):
        return _build_multi_worker()
    if len(_pick_gpus(gpus)) > 1:
        return _build_mirrored(gpus)
    return None


def build_strategy(name: str, *, gpus: int | None = None) -> Any:
    """Build strategy ``name`` and make it the program's default strategy.

    Returns the ``tf.distribute.Strategy``, or None for ``none`` (TensorFlow is then not even
    imported). Unknown names raise ValueError listing the valid ones.
    """
    key = _check_name(name)
    if key == "auto" and parameter_server_cluster(cluster_info()):
        _say(
            "parameter servers in the cluster: no tf.distribute strategy; tf.estimator places "
            "variables on the ps tasks (tfc_runtime.run_config())"
        )
        key = "none"
    if key == "none":
        set_current(None)
        if "tensorflow" in sys.modules:  # drop an earlier default; never import TF for "none"
            sys.modules["tensorflow"].distribute.experimental_set_strategy(None)
        return None
    if key == "auto":
        strategy = _build_auto(gpus)
        if strategy is None:
            set_current(None)
            return None
    elif key == "one_device":
        strategy = _build_one_device(gpus)
    elif key == "mirrored":
        strategy = _build_mirrored(gpus)
    elif key == "multi_worker_mirrored":
        strategy = _build_multi_worker()
    else:
        strategy = _build_tpu()
    import tensorflow as tf

    tf.distribute.experimental_set_strategy(strategy)
    set_current(strategy)
    return strategy


def describe(strategy: Any) -> str:
    """``OneDeviceStrategy on /cpu:0, 1 replica``-style summary of a strategy (or None)."""
    if strategy is None:
        return "none (TensorFlow's default)"
    import tensorflow as tf

    n = int(strategy.num_replicas_in_sync)
    name = type(strategy).__name__
    name = "MultiWorkerMirroredStrategy" if name == "CollectiveAllReduceStrategy" else name
    text = f"{name}, {n} replica{'s' * (n != 1)}"
    devices = list(getattr(strategy.extended, "worker_devices", ()))
    if devices and n == len(devices):
        specs = [tf.DeviceSpec.from_string(d) for d in devices]
        text += " on " + ", ".join(f"/{s.device_type.lower()}:{s.device_index}" for s in specs)
    return text
