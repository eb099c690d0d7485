"""tfc_runtime.strategy, in this process, with real TensorFlow (CPU only here)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator

import pytest
import tfc_runtime
from runtime_helpers import clear_job_vars
from tfc_runtime.strategy import build_strategy, describe, prepare_keras

TWO_WORKERS = json.dumps(
    {"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}, "task": {"type": "chief"}}
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """This process's environment without any job variable."""
    return clear_job_vars(monkeypatch)


@pytest.fixture
def reset_strategy() -> Iterator[None]:
    """Leave TensorFlow's default strategy (and the runtime's record of it) as found."""
    yield
    build_strategy("none")  # forgets ours, clears TensorFlow's default


def test_auto_on_a_cpu_machine(clean_env: pytest.MonkeyPatch, reset_strategy: None) -> None:
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        pytest.skip("this test describes a CPU-only machine")
    # One device: no strategy, TensorFlow's own placement, as the code gets in Jupyter.
    assert build_strategy("auto") is None
    assert not tf.distribute.has_strategy()
    strategy = build_strategy("one_device")
    assert isinstance(strategy, tf.distribute.OneDeviceStrategy)
    assert tf.distribute.get_strategy() is strategy
    assert tfc_runtime.strategy() is strategy
    assert describe(strategy) == "OneDeviceStrategy, 1 replica on /cpu:0"


def test_mirrored_without_gpus_warns(
    reset_strategy: None, capsys: pytest.CaptureFixture[str]
) -> None:
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        pytest.skip("this test describes a CPU-only machine")
    strategy = build_strategy("Mirrored")
    assert isinstance(strategy, tf.distribute.MirroredStrategy)
    assert strategy.num_replicas_in_sync == 1
    assert "no GPU found" in capsys.readouterr().err
    with pytest.raises(RuntimeError, match="2 GPUs requested but TensorFlow sees 0"):
        build_strategy("mirrored", gpus=2)


def test_none_tpu_and_unknown(reset_strategy: None) -> None:
    import tensorflow as tf

    build_strategy("one_device")
    assert build_strategy("none") is None
    assert not tf.distribute.has_strategy()  # "none" also drops an earlier default
    assert tfc_runtime.strategy() is tf.distribute.get_strategy()
    with pytest.raises(RuntimeError, match=r"^no TPU found: looked at the tpu argument"):
        build_strategy("tpu")
    with pytest.raises(ValueError, match="valid strategies: auto, one_device, mirrored"):
        build_strategy("horovod")


@pytest.mark.parametrize(
    ("name", "env", "legacy"),
    [
        ("multi_worker_mirrored", {}, "1"),
        ("auto", {"TF_CONFIG": TWO_WORKERS}, "1"),
        ("auto", {}, None),  # a single machine keeps Keras 3
        ("mirrored", {"TF_CONFIG": TWO_WORKERS}, None),
        ("auto", {"TF_CONFIG": TWO_WORKERS, "TF_USE_LEGACY_KERAS": "0"}, "0"),  # user's choice
    ],
)
def test_prepare_keras(
    name: str, env: dict[str, str], legacy: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    if importlib.util.find_spec("tf_keras") is None:
        pytest.skip("tf-keras is not installed")
    environ = dict(env)
    prepare_keras(name, environ)
    assert environ.get("TF_USE_LEGACY_KERAS") == legacy
    said = capsys.readouterr().out
    assert ("TF_USE_LEGACY_KERAS=1" in said) is (legacy == "1" and "TF_USE_LEGACY_KERAS" not in env)


def test_prepare_keras_without_tf_keras(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "tf_keras" else real(n, *a)
    )
    environ = {"TF_CONFIG": TWO_WORKERS}
    prepare_keras("auto", environ)
    assert "TF_USE_LEGACY_KERAS" not in environ
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "model.fit will fail under MultiWorkerMirroredStrategy" in err
    assert "pip install tf-keras" in err


def test_a_worker_waits_for_the_chief_to_listen_before_joining() -> None:
    """A worker builds MultiWorkerMirroredStrategy once the chief's port answers (asking
    before costs gRPC's one-second reconnect backoff); the chief does not wait; an address it
    cannot use, or a chief that never comes by the deadline, lets the strategy be built as
    TensorFlow would."""
    import socket
    import threading
    import time

    from tfc_runtime.cluster import ClusterInfo
    from tfc_runtime.strategy import wait_for_leader

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    cluster = {"chief": [f"127.0.0.1:{port}"], "worker": ["127.0.0.1:1"]}
    worker = ClusterInfo("worker", 0, cluster, "TF_CONFIG")
    listening = threading.Timer(0.3, server.listen)
    listening.start()
    try:
        began = time.monotonic()
        assert wait_for_leader(worker, deadline_s=30) is True
        assert time.monotonic() - began >= 0.25  # it waited for listen(), not the deadline
    finally:
        listening.cancel()
        server.close()
    assert wait_for_leader(ClusterInfo("chief", 0, cluster, "TF_CONFIG"), deadline_s=0) is True
    assert wait_for_leader(ClusterInfo("worker", 0, {"chief": ["nohost"]}, "x"), 30) is False
    assert wait_for_leader(worker, deadline_s=0.2) is False  # the port is closed now
