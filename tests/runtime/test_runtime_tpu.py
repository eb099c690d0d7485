"""TPU resolution from every source, up to the hardware boundary (this machine has no TPU).

A stand-in ``tf.distribute.Server`` on a loopback port plays the TPU worker: connecting to it
works, and initializing the TPU system fails, which must surface as our one-line message. With
nothing (or no gRPC server) listening, our deadline must fire instead of TensorFlow's endless wait.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import tfc_runtime
from runtime_helpers import free_ports, job_env, run_together
from tfc_runtime.tpu import (
    TpuTimeout,
    find_tpu,
    probe,
    timeout_s,
    tpu_in_environment,
    tpu_vm_evidence,
    within,
)

TPU_VARS = ("TPU_NAME", "TPU_CONFIG", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TFC_TPU_TIMEOUT")
NODE_CONFIG = json.dumps({"project": "proj-1", "zone": "us-central1-b", "tpu_node_name": "node-1"})


@pytest.fixture
def no_tpu_vars(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No TPU variable set; GCE metadata lookups go to a closed port (they fail at once)."""
    for name in TPU_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GCE_METADATA_HOST", f"127.0.0.1:{free_ports(1)[0]}")
    return monkeypatch


def tpu_env(**extra: str) -> dict[str, str]:
    """A job environment without TPU variables, plus ``extra``."""
    env = {k: v for k, v in job_env().items() if k not in TPU_VARS}
    return {**env, **extra}


@pytest.fixture(scope="module")
def standin_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A tf.distribute.Server job 'worker' on a free loopback port: a TPU worker minus the TPU."""
    (port,) = free_ports(1)
    log = tmp_path_factory.mktemp("standin") / "server.log"
    code = textwrap.dedent(f"""\
        import time, tensorflow as tf
        server = tf.distribute.Server({{"worker": ["127.0.0.1:{port}"]}}, job_name="worker",
                                      task_index=0, protocol="grpc", start=True)
        print("serving", flush=True)
        time.sleep(600)
    """)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT, env=tpu_env()
        )
    try:
        deadline = time.monotonic() + 60
        while "serving" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, "the stand-in server did not start in 60 s"
            time.sleep(0.2)
        yield port
    finally:
        proc.kill()  # TensorFlow ignores SIGTERM
        proc.wait()


def test_sources_are_taken_in_order(no_tpu_vars: pytest.MonkeyPatch) -> None:
    env = {
        "TPU_NAME": "grpc://10.0.0.2:8470",
        "TPU_CONFIG": NODE_CONFIG,
        "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS": "grpc://10.0.0.3:8470,grpc://10.0.0.4:8470",
    }
    assert find_tpu("local", env).describe() == "local (from argument)"
    assert find_tpu(None, env).describe() == "grpc://10.0.0.2:8470 (from TPU_NAME)"
    del env["TPU_NAME"]
    target = find_tpu(None, env)
    assert target.describe() == "node-1 (from TPU_CONFIG, project proj-1, zone us-central1-b)"
    assert target.endpoints == []  # a node name: the Cloud TPU API knows where it is
    del env["TPU_CONFIG"]
    gke = find_tpu(None, env)
    assert gke.source == "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS"
    assert gke.endpoints == [("10.0.0.3", 8470), ("10.0.0.4", 8470)]
    assert find_tpu("10.0.0.9:8470", {}).tpu == "grpc://10.0.0.9:8470"  # not a node name
    assert find_tpu("my-tpu", {}).tpu == "my-tpu"
    assert tpu_in_environment(env) and not tpu_in_environment({})


def test_no_tpu_anywhere_says_where_it_looked(no_tpu_vars: pytest.MonkeyPatch) -> None:
    on_vm, found = tpu_vm_evidence()
    assert not on_vm and "libtpu not installed" in found
    with pytest.raises(RuntimeError) as info:
        tfc_runtime.tpu_resolver()
    message = str(info.value)
    assert "\n" not in message
    for place in ("tpu argument (none)", "TPU_NAME (unset)", "TPU_CONFIG (unset)"):
        assert place in message
    assert "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS (unset)" in message and "/dev/accel" in message
    assert message.endswith("or pass tpu='grpc://HOST:8470'")


def test_malformed_tpu_config_and_timeout(no_tpu_vars: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match=r"^TPU_CONFIG is not valid JSON"):
        find_tpu(None, {"TPU_CONFIG": "{nope"})
    with pytest.raises(RuntimeError, match='must be a JSON object with "tpu_node_name"'):
        find_tpu(None, {"TPU_CONFIG": '{"project": "p"}'})
    assert timeout_s({}) == 300 and timeout_s({"TFC_TPU_TIMEOUT": "2.5"}) == 2.5
    for bad in ("soon", "0", "-1"):
        with pytest.raises(RuntimeError, match="TFC_TPU_TIMEOUT must be"):
            timeout_s({"TFC_TPU_TIMEOUT": bad})


def test_node_names_stop_at_the_cloud_tpu_api(no_tpu_vars: pytest.MonkeyPatch) -> None:
    no_tpu_vars.setenv("TPU_CONFIG", NODE_CONFIG)
    resolver = tfc_runtime.tpu_resolver()  # project and zone given: nothing asked yet
    with pytest.raises(RuntimeError) as info:
        tfc_runtime.tpu_strategy(resolver, deadline_s=10)
    message = str(info.value)
    assert message.startswith(
        "cannot resolve TPU node-1 (from TPU_CONFIG, project proj-1, zone us-central1-b): "
    )
    assert "cloud-tpu-client" in message
    no_tpu_vars.delenv("TPU_CONFIG")
    no_tpu_vars.setenv("TPU_NAME", "node-2")  # no project, zone: the GCE metadata server
    with pytest.raises(
        RuntimeError, match=r"^cannot resolve TPU node-2 \(from TPU_NAME\): URLError"
    ):
        tfc_runtime.tpu_resolver()


def test_within_bounds_a_slow_step() -> None:
    assert within(5, "adding", lambda: 1 + 1) == 2
    with pytest.raises(ZeroDivisionError):
        within(5, "dividing", lambda: 1 / 0)
    started = time.monotonic()
    with pytest.raises(TpuTimeout, match=r"^sleeping did not finish within 0.3 s"):
        within(0.3, "sleeping", lambda: time.sleep(5))
    assert time.monotonic() - started < 2


def test_probe_nothing_listening_is_bounded() -> None:
    (port,) = free_ports(1)
    started = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        probe("127.0.0.1", port, deadline_s=1.0)
    assert time.monotonic() - started < 3
    assert f"no TPU worker answers at 127.0.0.1:{port} (Connection refused)" in str(info.value)
    with pytest.raises(RuntimeError, match="after 2 attempts"):
        probe("127.0.0.1", port, deadline_s=30, attempts=2)  # the count bounds it too


def _listener(reply: bytes | None) -> tuple[socket.socket, int]:
    """A loopback listener that accepts and sends ``reply`` (None: stays silent)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            if reply is not None:
                conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    return server, int(server.getsockname()[1])


def test_probe_tells_grpc_from_a_silent_listener() -> None:
    settings = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # an HTTP/2 SETTINGS frame: gRPC's greeting
    server, port = _listener(settings)
    with server:
        assert probe("127.0.0.1", port, deadline_s=5) == 1
    server, port = _listener(None)  # accepts, never answers: TensorFlow would hang on it
    with server:
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="accepts connections but sends no gRPC"):
            probe("127.0.0.1", port, deadline_s=1.0)
        assert time.monotonic() - started < 3
    server, port = _listener(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    with server, pytest.raises(RuntimeError, match="reply is not gRPC"):
        probe("127.0.0.1", port, deadline_s=0.5)


def test_unreachable_address_fails_by_the_deadline(no_tpu_vars: pytest.MonkeyPatch) -> None:
    (port,) = free_ports(1)
    no_tpu_vars.setenv("TPU_NAME", f"grpc://127.0.0.1:{port}")
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=f"^no TPU worker answers at 127.0.0.1:{port}"):
        tfc_runtime.tpu_strategy(deadline_s=1.5)
    assert time.monotonic() - started < 10  # TensorFlow alone would wait forever here


def test_hard_deadline_ends_a_stuck_job_with_its_reason(tmp_path: Path) -> None:
    code = textwrap.dedent("""\
        import time
        from tfc_runtime.tpu import hard_deadline
        with hard_deadline(5, "quick step"):
            pass
        with hard_deadline(0.5, "connecting to TPU grpc://x:8470 (from TPU_NAME)"):
            time.sleep(30)  # a C call that never returns, as far as anyone can tell
    """)
    env = tpu_env(TFC_REMOTE="1", TFC_JOB_DIR=str(tmp_path))
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=20
    )
    assert time.monotonic() - started < 15
    assert done.returncode == 1
    assert "connecting to TPU grpc://x:8470 (from TPU_NAME) (deadline 0.5 s)" in done.stderr
    record = json.loads((tmp_path / "errors" / "chief-0.json").read_text())
    assert record["type"] == "TpuTimeout"
    assert record["message"].startswith("connecting to TPU grpc://x:8470 (from TPU_NAME) did not")
    assert sorted(os.listdir(tmp_path / "errors")) == ["chief-0.json"]  # the quick step's is gone


@pytest.mark.slow
def test_every_grpc_source_connects_then_fails_at_initialization(
    standin_worker: int, tmp_path: Path
) -> None:
    address = f"127.0.0.1:{standin_worker}"
    (tmp_path / "explicit.py").write_text(
        f"import tfc_runtime\ntfc_runtime.tpu_strategy(tfc_runtime.tpu_resolver('{address}'))\n"
    )
    (tmp_path / "noop.py").write_text("print('never runs')\n")
    jobs = [
        (["--strategy", "none", "explicit.py"], tpu_env()),
        (["--strategy", "tpu", "noop.py"], tpu_env(TPU_NAME=f"grpc://{address}")),
        (
            ["--strategy", "auto", "noop.py"],  # auto picks TPUStrategy when a TPU is named
            tpu_env(KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS=f"grpc://{address}"),
        ),
    ]
    results = run_together(jobs, tmp_path, deadline=120)
    for (_, _), done, source in zip(
        jobs, results, ("argument", "TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS"), strict=True
    ):
        assert done.returncode == 1, done.stderr
        assert f"[tfc_runtime] TPU: grpc://{address} (from {source})" in done.stdout
        expected = (
            f"connected to grpc://{address} (from {source}), but it has no TPU: initializing "
            "the TPU system failed (NotFoundError); check that this address is a TPU worker"
        )
        assert expected in done.stderr, done.stderr
        assert "never runs" not in done.stdout


@pytest.mark.slow
def test_a_tpu_vm_resolver_on_this_machine_finds_no_tpu(tmp_path: Path) -> None:
    (tmp_path / "vm.py").write_text(
        "import tfc_runtime\ntfc_runtime.tpu_strategy(tfc_runtime.tpu_resolver('local'))\n"
    )
    (done,) = run_together([(["--strategy", "none", "vm.py"], tpu_env())], tmp_path, deadline=60)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("[tfc_runtime] job failed at script line 2: RuntimeError: connected ")
    assert "to local (from argument), but it has no TPU" in last
    assert "TPU VM image with libtpu" in last
