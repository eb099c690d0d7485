"""The warm runtime: a local job that imports TensorFlow forks from a process that imported it
once, and sees what a cold start would have shown it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path
from typing import Any

import psutil
import pytest
from jobutil import run_job, wait_for, write_notebook

from tfc_jupyter.backends.local import warm
from tfc_jupyter.backends.local.forked import Base, import_env
from tfc_jupyter.store.records import JobState

ROOT = Path(__file__).resolve().parents[1]

# What the job saw: printed as one line its test reads back from the chief's log.
SEEN = textwrap.dedent("""\
    import sys
    _at_start = sorted(sys.modules)
    import json, os
    import numpy as np
    import tensorflow as tf
    _unseeded = float(np.random.random())
    tf.keras.utils.set_random_seed(0)
    x = np.random.normal(size=(256, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    loss = model.fit(x, y, epochs=3, verbose=0).history["loss"][-1]
    print("SEEN " + json.dumps({
        "env": dict(os.environ), "argv": sys.argv, "cwd": os.getcwd(), "path": sys.path,
        "at_start": _at_start, "after_import": sorted(sys.modules), "loss": loss,
        "unseeded": _unseeded, "pid": os.getpid(), "ppid": os.getppid(),
        "session": os.getsid(0) == os.getpid(),
    }))
""")
RUN = "%%tfc_run\nprint('done')"
PER_JOB = (
    "TFC_WARM_IDLE",
    "TFC_JOB_",
    "CLOUD_ML_JOB_ID",
    "TMPDIR",
    "AIP_",
    "TF_CONFIG",
    "CLUSTER_SPEC",
)


def _seen(record: Any) -> dict[str, Any]:
    log = (Path(record.job_dir) / "logs" / "chief.log").read_text()
    lines = [line for line in log.splitlines() if line.startswith("SEEN ")]
    assert record.state is JobState.SUCCEEDED and lines, log[-2000:]
    return json.loads(lines[-1][5:])


def _job(notebook: Path, home: Path, monkeypatch: pytest.MonkeyPatch, idle: str) -> Any:
    monkeypatch.setenv("TFC_WARM_IDLE", idle)
    return run_job(notebook, home)[1]


def _warm_up(notebook: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """This process launches jobs for a while, as a kernel or the server does: its first
    TensorFlow job starts cold and starts the warm runtime, ready for the next (waited for)."""
    monkeypatch.setattr(warm, "_keep", True)
    first = _job(notebook, home, monkeypatch, "600")
    assert not first.handle.get("warm") or warm.status() is not None, first.handle
    zygote = warm._zygote
    assert zygote is not None and zygote.wait_ready(time.monotonic() + 120), "no warm runtime"
    return first


@pytest.mark.slow
def test_a_warm_job_sees_what_a_cold_one_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = write_notebook(tmp_path / "seen.ipynb", SEEN, RUN)
    home = tmp_path / "home"
    cold_record = _job(notebook, home, monkeypatch, "0")
    assert not cold_record.handle.get("warm"), cold_record.handle
    _warm_up(notebook, home, monkeypatch)
    first = _job(notebook, home, monkeypatch, "600")  # forked at once
    second = _job(notebook, home, monkeypatch, "600")
    assert first.handle["warm"] == second.handle["warm"] == ["chief"], second.handle
    assert first.handle["warm_runtime"] == second.handle["warm_runtime"] == warm.status()["pid"]
    cold, hot = _seen(cold_record), _seen(second)

    def shared(env: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in env.items() if not k.startswith(PER_JOB)}

    assert shared(hot["env"]) == shared(cold["env"])
    assert set(hot["env"]) == set(cold["env"])
    assert hot["cwd"] == cold["cwd"] == str(tmp_path)
    assert [Path(a).name for a in hot["argv"]] == [Path(a).name for a in cold["argv"]]
    assert hot["path"][1:] == cold["path"][1:]
    assert f"{hot['loss']:.8f}" == f"{cold['loss']:.8f}"
    assert hot["session"] and cold["session"]  # its own session and process group
    assert hot["unseeded"] != _seen(first)["unseeded"]  # fresh entropy in every fork
    # The warm process holds only what importing TensorFlow imports anyway: a module the
    # notebook imports that TensorFlow does not (sqlite3: the supervisor's) is imported fresh.
    assert set(hot["at_start"]) <= set(cold["after_import"])
    assert "sqlite3" not in hot["at_start"]
    assert not [m for m in hot["at_start"] if m.startswith("tfc_jupyter")]


@pytest.mark.slow
def test_a_package_installed_between_two_jobs_starts_the_second_cold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(site))
    use = textwrap.dedent("""\
        import tensorflow as tf
        try:
            import tfc_fresh_package
            print("FRESH", tfc_fresh_package.VALUE)
        except ImportError:
            print("FRESH missing")
    """)
    notebook = write_notebook(tmp_path / "pip.ipynb", use, RUN)
    home = tmp_path / "home"
    _warm_up(notebook, home, monkeypatch)
    before = _job(notebook, home, monkeypatch, "600")
    assert "FRESH missing" in (Path(before.job_dir) / "logs" / "chief.log").read_text()
    old = before.handle["warm_runtime"]
    assert before.handle["warm"] == ["chief"] and old, before.handle
    _install(_wheel(tmp_path), site)  # %pip install, between the two jobs
    after = _job(notebook, home, monkeypatch, "600")
    assert "FRESH 42" in (Path(after.job_dir) / "logs" / "chief.log").read_text()
    assert not after.handle.get("warm"), after.handle  # cold: an interpreter of its own
    wait_for("the old warm runtime's end", lambda: _zombie(old), 15)
    status = warm.status()  # a new one, whose import saw the package, for the next job
    assert status is not None and status["pid"] != old


def _wheel(folder: Path) -> Path:
    """A one-module wheel: ``tfc_fresh_package`` (``VALUE = 42``)."""
    wheel = folder / "tfc_fresh_package-1.0-py3-none-any.whl"
    info = "tfc_fresh_package-1.0.dist-info"
    files = {
        "tfc_fresh_package/__init__.py": "VALUE = 42\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: tfc-fresh-package\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in {**files, f"{info}/RECORD": record}.items():
            zf.writestr(name, text)
    return wheel


def _install(wheel: Path, site: Path) -> None:
    """Install ``wheel`` into ``site`` with the installer this environment has (uv or pip)."""
    uv = shutil.which("uv")
    if uv:
        argv = [uv, "pip", "install", "-q", "--offline", "--no-deps", "--python", sys.executable]
    else:
        argv = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*argv, "--target", str(site), str(wheel)], check=True, timeout=120)


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


OWNER = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    from tfc_jupyter.backends.local import warm
    from tfc_jupyter.backends.local.backend import keep_warm
    keep_warm(Path(sys.argv[1]))
    zygote = warm._zygote
    assert zygote is not None and zygote.wait_ready(time.monotonic() + 120), "not ready"
    print(zygote.proc.pid, flush=True)
    time.sleep(float(sys.argv[2]))
""")


def _owner(home: Path, stay_s: float, idle: str) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "TFC_WARM_IDLE": idle, "TFC_JUPYTER_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(home), str(stay_s)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip().isdigit(), line
    return proc, int(line)


@pytest.mark.slow
def test_the_warm_runtime_ends_with_its_owner_and_after_its_idle_time(tmp_path: Path) -> None:
    owner, zygote = _owner(tmp_path, 600, "600")
    listed = warm.live(tmp_path)
    assert [z["pid"] for z in listed] == [zygote] and listed[0]["memory"] > 0
    owner.kill()  # the kernel, the server or the command ends, however it ends
    owner.wait(timeout=10)
    wait_for("the warm runtime's end with its owner", lambda: _zombie(zygote), 15)
    wait_for("its entry's removal", lambda: not warm.live(tmp_path), 5)
    owner, zygote = _owner(tmp_path, 600, "2")  # idle for 2 s: it ends by itself
    try:
        wait_for("the warm runtime's end after its idle time", lambda: _zombie(zygote), 20)
    finally:
        owner.kill()
        owner.wait(timeout=10)


MULTI = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    tf.keras.utils.set_random_seed(0)
    x = np.random.RandomState(0).normal(size=(256, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
        model.compile("sgd", "mse")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    print("LOSS %.8f" % model.fit(data, epochs=2, verbose=0).history["loss"][-1])
""")


@pytest.mark.slow
def test_a_multi_worker_job_of_warm_replicas_trains_as_a_cold_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = write_notebook(tmp_path / "multi.ipynb", MULTI, "%%tfc_run --workers 1\npass")
    home = tmp_path / "home"

    def losses(record: Any) -> list[str]:
        assert record.state is JobState.SUCCEEDED, record.error
        logs = Path(record.job_dir) / "logs"
        return [
            line
            for name in ("chief", "worker-0")
            for line in (logs / f"{name}.log").read_text().splitlines()
            if line.startswith("LOSS ")
        ]

    cold = _job(notebook, home, monkeypatch, "0")
    _warm_up(notebook, home, monkeypatch)
    hot = _job(notebook, home, monkeypatch, "600")
    assert hot.handle["warm"] == ["chief", "worker-0"] and not cold.handle.get("warm")
    assert losses(hot) == losses(cold) and len(losses(cold)) == 2


def test_a_variable_read_at_start_keeps_a_replica_cold() -> None:
    args = ["--strategy", "auto", "script.py"]
    reference = import_env({"PATH": "/bin", "TF_CPP_MIN_LOG_LEVEL": "1"}, args)
    base = Base(env=reference, modules=frozenset(), path=())
    job = {"TFC_JOB_ID": "j", "TF_CONFIG": "{}", "TF_CPP_MIN_LOG_LEVEL": "1"}
    assert base.mismatch({"PATH": "/bin", **job}, args, per_job=job) == []
    changed = {**job, "TF_CPP_MIN_LOG_LEVEL": "3"}
    assert base.mismatch({"PATH": "/bin", **changed}, args, changed) == ["TF_CPP_MIN_LOG_LEVEL"]
    assert base.mismatch({"PATH": "/usr/bin", **job}, args, job) == ["PATH"]  # %env PATH=...


def test_a_changed_environment_or_installed_package_is_another_key(tmp_path: Path) -> None:
    env = {"PATH": "/bin"}
    key = warm.environment_key(env)
    assert warm.environment_key(dict(env)) == key
    assert warm.environment_key({**env, "TFC_BACKEND": "local"}) != key
    sys.path.append(str(tmp_path))
    try:
        key = warm.environment_key(env)
        (tmp_path / "new_package").mkdir()  # a package installed: its code and its metadata
        (tmp_path / "new_package-1.0.dist-info").mkdir()
        assert warm.environment_key(env) != key
        key = warm.environment_key(env)  # upgraded (the same version reinstalled, too)
        (tmp_path / "new_package-1.0.dist-info").rename(tmp_path / "new_package-1.1.dist-info")
        assert warm.environment_key(env) != key
        key = warm.environment_key(env)
        os.utime(tmp_path / "new_package-1.1.dist-info", (time.time() + 5, time.time() + 5))
        assert warm.environment_key(env) != key
    finally:
        sys.path.remove(str(tmp_path))


def test_files_written_in_a_folder_on_the_path_keep_the_key(tmp_path: Path) -> None:
    """The notebook's folder, a checkout or /tmp on ``sys.path`` change all the time (a job's
    files, a test's cache): the warm runtime, which imported nothing from them, stays."""
    env = {"PATH": "/bin"}
    sys.path.insert(0, str(tmp_path))
    try:
        key = warm.environment_key(env)
        (tmp_path / "results.csv").write_text("a,b\n")
        (tmp_path / "mymodule.py").write_text("X = 1\n")  # the job imports it fresh
        os.utime(tmp_path, (time.time() + 5, time.time() + 5))
        assert warm.environment_key(env) == key
    finally:
        sys.path.remove(str(tmp_path))


def test_jobs_that_do_not_import_tensorflow_start_cold() -> None:
    assert warm.uses_tensorflow({"numpy", "tensorflow"})
    assert warm.uses_tensorflow({"keras"})
    assert not warm.uses_tensorflow({"numpy", "json"})


@pytest.mark.slow
def test_a_kernel_starts_it_once_its_notebook_imports_tensorflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tfc_jupyter

    monkeypatch.setenv("TFC_JUPYTER_HOME", str(tmp_path))
    monkeypatch.setenv("TFC_WARM_IDLE", "600")
    monkeypatch.setattr(tfc_jupyter, "_warm_started", False)
    warm.discard()  # one of another test's environment: this kernel's own starts
    shell = _shell()
    shell.run_cell("x = 1")
    if "tensorflow" not in sys.modules:
        assert warm.status() is None  # no TensorFlow in the notebook: nothing kept
    shell.run_cell("import tensorflow as tf")
    status = warm.status()
    assert status is not None, "no warm runtime after the cell that imported TensorFlow"
    wait_for("the warm runtime's entry", lambda: warm.live(tmp_path), 120)
    capsys.readouterr()
    shell.run_line_magic("tfc_jobs", "")
    said = capsys.readouterr().out
    assert f"Warm runtime (TensorFlow imported for local jobs): pid {status['pid']}" in said, said
    assert "warm_idle=0 turns it off" in said


def _shell() -> Any:
    from IPython.testing import globalipapp

    globalipapp.start_ipython()  # None when another module started it: the same shell
    shell = globalipapp.get_ipython()
    assert shell is not None
    shell.run_line_magic("load_ext", "tfc_jupyter")
    return shell


WARM_CHILDREN = """\
%%tfc_run --strategy none
import os, signal, subprocess, sys, time
import tensorflow as tf
sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
child = subprocess.Popen(sleeper)  # in the replica's group
hidden = subprocess.Popen(sleeper, env={{}}, start_new_session=True)  # a session of its own
with open({marker!r}, "w") as f:
    f.write(f"{{child.pid}} {{hidden.pid}}")
time.sleep(600)
"""


@pytest.mark.slow
def test_a_sigkilled_warm_supervisor_leaves_no_process_of_its_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guardian a warm supervisor forks ends the job's processes when the supervisor is
    killed, as the one a cold supervisor starts does (tests/test_faults.py)."""
    from jobutil import plan_for

    from tfc_jupyter.backends.local import guardian
    from tfc_jupyter.jobs import launch, store_for

    _warm_up(
        write_notebook(tmp_path / "tf.ipynb", "%%tfc_run\nimport tensorflow"),
        tmp_path / "home",
        monkeypatch,
    )
    marker = tmp_path / "children.pids"
    notebook = tmp_path / "kids.ipynb"
    write_notebook(notebook, WARM_CHILDREN.format(marker=str(marker)))
    store = store_for(tmp_path / "home")
    job = launch(plan_for(notebook), store=store)
    pids: list[int] = []
    try:
        wait_for("the job's children", lambda: len(_text(marker).split()) == 2, 150)
        time.sleep(2 * guardian.SNAPSHOT_S + 0.5)  # the guardian has seen them
        record = store.get(job.id)
        assert record.handle.get("warm") == ["chief"], record.handle
        supervisor = int(record.handle["watcher_pid"])
        pids = [supervisor, int(record.handle["replicas"]["chief"])]
        pids += [int(p) for p in marker.read_text().split()]
        os.kill(supervisor, signal.SIGKILL)
        wait_for("the end of every process of the job", lambda: all(map(_zombie, pids)), 15)
    finally:
        for pid in pids:
            if not _zombie(pid):
                os.kill(pid, signal.SIGKILL)
    assert job.wait(timeout=30).state is JobState.FAILED


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@pytest.mark.slow
def test_a_job_launched_while_it_imports_starts_cold_and_the_next_one_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launch never waits for the warm runtime's import, and takes it once it is ready,
    without anyone waiting for it."""
    from tfc_jupyter.backends.local.backend import keep_warm

    monkeypatch.setenv("TFC_WARM_IDLE", "600")
    monkeypatch.setenv("TFC_JUPYTER_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(warm, "_keep", False)
    warm.discard()
    notebook = write_notebook(tmp_path / "tf.ipynb", "%%tfc_run\nimport tensorflow")
    keep_warm(tmp_path / "home")  # as the kernel does after the cell that imported TensorFlow
    started = time.monotonic()
    first = run_job(notebook, tmp_path / "home")[1]
    if time.monotonic() - started < 2:  # it could not have imported TensorFlow by then
        assert not first.handle.get("warm"), first.handle
    wait_for("the warm runtime's import", lambda: warm.live(tmp_path / "home"), 120)
    second = run_job(notebook, tmp_path / "home")[1]
    assert second.handle.get("warm") == ["chief"], second.handle


@pytest.mark.slow
def test_the_warm_runtime_holds_no_secret_and_its_jobs_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape
    monkeypatch.setenv("MY_SERVICE_TOKEN", "s3cr3t-value-of-the-kernel")
    monkeypatch.setenv("HIDDEN_IN_VALUE", token)
    notebook = write_notebook(
        tmp_path / "secret.ipynb",
        "%%tfc_run\nimport os\nimport tensorflow\n"
        "print('GOT', os.environ['MY_SERVICE_TOKEN'], os.environ['HIDDEN_IN_VALUE'][:4])",
    )
    _warm_up(notebook, tmp_path / "home", monkeypatch)
    record = _job(notebook, tmp_path / "home", monkeypatch, "600")
    assert record.handle.get("warm") == ["chief"], record.handle
    log = (Path(record.job_dir) / "logs" / "chief.log").read_text()
    assert "GOT s3cr3t-value-of-the-kernel ghp_" in log, log
    zygote = record.handle["warm_runtime"]
    held = Path(f"/proc/{zygote}/environ").read_bytes()
    assert b"s3cr3t-value-of-the-kernel" not in held and token.encode() not in held
    assert b"MY_SERVICE_TOKEN=" not in held  # its name is said (withheld), its value is not
