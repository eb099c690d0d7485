"""Tests of the job-record store (tfc_jupyter.store.records)."""

from __future__ import annotations

import calendar
import contextlib
import itertools
import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfc_jupyter
from tfc_jupyter.errors import JobConflict, JobNotFound, TfcError
from tfc_jupyter.store.records import (
    JobRecord,
    JobState,
    JobStore,
    JobStoreError,
    default_home,
    new_job_id,
)

POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / "home" / "jobs.sqlite")


def make(job_id: str, **fields: Any) -> JobRecord:
    return JobRecord(id=job_id, name=fields.pop("name", "demo"), backend="local", **fields)


def full_record() -> JobRecord:
    return JobRecord(
        id="quickstart-20261121-110403-a1b2c3",
        name="quickstart",
        backend="vertex",
        state=JobState.RUNNING,
        spec={"strategy": "auto", "chief": {"machine": "n1-standard-8", "gpus": 2}, "x": [1.5]},
        handle={"resource": "projects/p/locations/us-central1/customJobs/42", "pids": [1, 2]},
        job_dir="/tmp/jobs/q",
        log_dir="/tmp/jobs/q/logs",
        notebook="/home/me/quickstart.ipynb",
        created_at=1700000000.25,
        updated_at=1700000010.5,
        started_at=1700000005.0,
        ended_at=1700000100.0,
        error="ZeroDivisionError: division by zero",
        error_location="cell 7, line 3",
        console_url="https://console.cloud.google.com/vertex-ai/training/custom-jobs/42",
        tensorboard_url="http://localhost:6006",
        owner_pid=4242,
    )


# -- states -------------------------------------------------------------------------------------


def test_states_and_terminal() -> None:
    assert [s.value for s in JobState] == [
        "queued",
        "pending",
        "running",
        "succeeded",
        "failed",
        "cancelling",
        "cancelled",
    ]
    assert {s for s in JobState if s.is_terminal()} == {
        JobState.SUCCEEDED,
        JobState.FAILED,
        JobState.CANCELLED,
    }
    assert JobState("running") is JobState.RUNNING
    assert JobState.RUNNING == "running"
    assert f"{JobState.CANCELLING}" == str(JobState.CANCELLING) == "cancelling"


@pytest.mark.parametrize(
    ("vertex", "state"),
    [
        ("JOB_STATE_UNSPECIFIED", JobState.QUEUED),
        ("JOB_STATE_QUEUED", JobState.QUEUED),
        ("JOB_STATE_PENDING", JobState.PENDING),
        ("JOB_STATE_RUNNING", JobState.RUNNING),
        ("JOB_STATE_SUCCEEDED", JobState.SUCCEEDED),
        ("JOB_STATE_FAILED", JobState.FAILED),
        ("JOB_STATE_CANCELLING", JobState.CANCELLING),
        ("JOB_STATE_CANCELLED", JobState.CANCELLED),
        ("JOB_STATE_PAUSED", JobState.CANCELLED),
        ("JOB_STATE_EXPIRED", JobState.FAILED),
        ("JOB_STATE_UPDATING", JobState.RUNNING),
        ("JOB_STATE_PARTIALLY_SUCCEEDED", JobState.FAILED),
        ("running", JobState.RUNNING),
        ("JobState.JOB_STATE_SUCCEEDED", JobState.SUCCEEDED),
        ("JOB_STATE_SOMETHING_NEW", JobState.QUEUED),
    ],
)
def test_from_vertex(vertex: str, state: JobState) -> None:
    assert JobState.from_vertex(vertex) is state


def test_from_vertex_accepts_enum_member() -> None:
    class Member:  # what aiplatform's proto enum looks like
        name = "JOB_STATE_EXPIRED"

    assert JobState.from_vertex(Member()) is JobState.FAILED  # type: ignore[arg-type]


# -- records ------------------------------------------------------------------------------------


def test_round_trip_every_field(store: JobStore) -> None:
    record = full_record()
    data = record.to_dict()
    assert set(data) == {f for f in JobRecord.__dataclass_fields__}
    assert data["state"] == "running"
    assert JobRecord.from_dict(json.loads(json.dumps(data))) == record
    store.create(record)
    assert store.get(record.id) == record


def test_from_dict_ignores_unknown_keys_and_copies() -> None:
    data = full_record().to_dict() | {"added_in_v9": {"x": 1}, "priority": 3}
    record = JobRecord.from_dict(data)
    assert record == full_record()
    data["spec"]["strategy"] = "mirrored"
    assert record.spec["strategy"] == "auto"


def test_from_dict_requires_identity() -> None:
    with pytest.raises(ValueError, match="backend"):
        JobRecord.from_dict({"id": "a", "name": "a"})


def test_defaults_and_elapsed(monkeypatch: pytest.MonkeyPatch) -> None:
    record = JobRecord(id="a", name="a", backend="local", state="pending")  # type: ignore[arg-type]
    assert record.state is JobState.PENDING
    assert record.spec == {} and record.handle == {} and record.error is None
    record.created_at, record.started_at, record.ended_at = 100.0, 110.0, 160.0
    assert record.elapsed == 50.0
    record.started_at = None
    assert record.elapsed == 60.0
    record.ended_at = None
    monkeypatch.setattr(time, "time", lambda: 130.0)
    assert record.elapsed == 30.0


# -- ids ----------------------------------------------------------------------------------------

ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def test_new_job_id_shape_and_uniqueness() -> None:
    ids = [new_job_id("Quick Start!") for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    match = re.fullmatch(r"quick-start-(\d{8}-\d{6})-([0-9a-f]{6})", ids[0])
    assert match, ids[0]
    stamp = calendar.timegm(time.strptime(match.group(1), "%Y%m%d-%H%M%S"))
    assert abs(stamp - time.time()) < 120  # UTC, to the second


def test_new_job_id_sorts_by_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    early = new_job_id("x")
    monkeypatch.setattr(time, "time", lambda: 1_800_000_001.0)
    late = new_job_id("x")
    assert early < late


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("job", "job"),
        ("", "job"),
        ("!!!", "job"),
        ("MNIST  Keras_v2.ipynb", "mnist-keras-v2-ipynb"),
        ("Café résumé", "cafe-resume"),
        ("---a---b---", "a-b"),
        ("x" * 29 + "-yz", "x" * 29),
        ("日本語", "job"),
    ],
)
def test_new_job_id_slug(name: str, slug: str) -> None:
    assert new_job_id(name).rsplit("-", 3)[0] == slug


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_new_job_id_any_name_is_safe(name: str) -> None:
    job_id = new_job_id(name)
    assert ID_RE.match(job_id), job_id
    assert "--" not in job_id
    slug = job_id.rsplit("-", 3)[0]
    assert 1 <= len(slug) <= 30
    assert len(job_id) <= 30 + len("-20261121-110403-a1b2c3")


# -- store: basic operations --------------------------------------------------------------------


def test_default_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TFC_JUPYTER_HOME", str(tmp_path / "tfc"))
    assert default_home() == tmp_path / "tfc"
    assert JobStore().path == tmp_path / "tfc" / "jobs.sqlite"
    monkeypatch.delenv("TFC_JUPYTER_HOME")
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    assert default_home() == tmp_path / "data" / "tfc_jupyter"


def test_create_get_list_delete(store: JobStore) -> None:
    assert store.list() == []
    for i in range(5):
        backend = "docker" if i % 2 else "local"
        state = JobState.SUCCEEDED if i < 2 else JobState.RUNNING
        record = JobRecord(
            id=f"job-{i}", name="n", backend=backend, state=state, created_at=1000.0 + i
        )
        assert store.create(record) == record
    assert [r.id for r in store.list()] == ["job-4", "job-3", "job-2", "job-1", "job-0"]
    assert [r.id for r in store.list(limit=2)] == ["job-4", "job-3"]
    assert [r.id for r in store.list(limit=None, backend="docker")] == ["job-3", "job-1"]
    assert [r.id for r in store.list(states=[JobState.SUCCEEDED])] == ["job-1", "job-0"]
    assert [r.id for r in store.list(states=["running"], backend="local")] == ["job-4", "job-2"]
    assert store.list(states=[]) == []
    with pytest.raises(JobConflict, match="exists already"):
        store.create(make("job-1"))
    store.delete("job-1")
    with pytest.raises(JobNotFound):
        store.get("job-1")
    with pytest.raises(JobNotFound):
        store.delete("job-1")
    assert len(store.list()) == 4


def test_store_reopens_and_returns_copies(store: JobStore) -> None:
    created = store.create(make("a", handle={"pids": [1]}))
    created.handle["pids"].append(2)
    again = JobStore(store.path)
    assert again.get("a").handle == {"pids": [1]}
    assert repr(again) == f"JobStore({str(store.path)!r})"


def test_get_by_prefix(store: JobStore) -> None:
    store.create(make("train-20261121-110403-aaaaaa"))
    store.create(make("train-20261121-110403-abcdef"))
    store.create(make("eval-20261121-110403-000000"))
    store.create(make("train"))  # an exact id wins over being a prefix
    assert store.get("eval").id == "eval-20261121-110403-000000"
    assert store.get("train-20261121-110403-ab").id == "train-20261121-110403-abcdef"
    assert store.get("train").id == "train"
    assert store.get("  eval-2026 ").id == "eval-20261121-110403-000000"
    with pytest.raises(JobConflict, match="several jobs") as info:
        store.get("train-2026")
    assert "train-20261121-110403-aaaaaa" in str(info.value)
    assert "more characters" in str(info.value)
    store.update("train-20261121-110403-ab", error="x")
    assert store.get("train-20261121-110403-abcdef").error == "x"


def test_get_by_the_short_id_the_sidebar_shows(store: JobStore) -> None:
    """The end of an id (4 characters or more) names a job too, when no id starts with it."""
    store.create(make("train-20261121-110403-25829a"))
    store.create(make("train-20261121-110404-77829a"))
    assert store.get("25829a").id == "train-20261121-110403-25829a"
    with pytest.raises(JobConflict, match="several jobs"):
        store.get("829a")
    for bad in ("9a", "25829A", "%29a", "_5829a"):  # too short, case, LIKE's own characters
        with pytest.raises(JobNotFound):
            store.get(bad)


def test_unknown_id_names_the_fix(store: JobStore) -> None:
    for bad in ("nope", "", "TRAIN", "%", "_"):
        with pytest.raises(JobNotFound) as info:
            store.get(bad)
        assert "%tfc_jobs" in str(info.value)
        assert info.value.http_status == 404
    store.create(make("abc"))
    for pattern in ("%", "_", "a%", "a_c", "ABC"):  # no LIKE wildcards, case-sensitive
        with pytest.raises(JobNotFound):
            store.get(pattern)


# -- store: updates and transitions -------------------------------------------------------------


def test_update_fields_and_timestamps(store: JobStore) -> None:
    store.create(make("a", created_at=100.0, updated_at=100.0))
    record = store.update("a", state=JobState.PENDING, console_url="https://c")
    assert record.state is JobState.PENDING and record.console_url == "https://c"
    assert record.updated_at > 100.0
    assert record.started_at is None and record.ended_at is None
    running = store.update("a", state="running")
    assert running.state is JobState.RUNNING and running.started_at is not None
    again = store.update("a", state=JobState.RUNNING)
    assert again.started_at == running.started_at
    done = store.update("a", state=JobState.FAILED, error="boom", error_location="cell 2")
    assert done.ended_at is not None and done.ended_at >= done.started_at  # type: ignore[operator]
    assert store.get("a") == done
    with pytest.raises(TypeError, match="no field 'colour'"):
        store.update("a", colour="red")
    with pytest.raises(ValueError, match="cannot change"):
        store.update("a", id="b")
    with pytest.raises(ValueError):
        store.update("a", state="paused")
    assert store.get("a") == done  # failed updates change nothing


def test_update_mutate_in_place_and_by_return(store: JobStore) -> None:
    store.create(make("a", handle={"n": 0}))

    def bump(record: JobRecord) -> dict[str, Any]:
        return {"handle": {**record.handle, "n": record.handle["n"] + 1}}

    def in_place(record: JobRecord) -> None:
        record.handle["n"] += 10
        record.notebook = "nb.ipynb"

    assert store.update("a", mutate=bump).handle == {"n": 1}
    record = store.update("a", mutate=in_place, log_dir="/logs")
    assert record.handle == {"n": 11} and record.notebook == "nb.ipynb"
    assert record.log_dir == "/logs"

    def fails(record: JobRecord) -> None:
        record.handle["n"] = -1
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        store.update("a", mutate=fails)
    assert store.get("a").handle == {"n": 11}  # rolled back


def test_transition_cannot_leave_terminal_state(store: JobStore) -> None:
    store.create(make("a"))
    running = store.transition("a", JobState.RUNNING, owner_pid=7)
    assert running.started_at is not None and running.owner_pid == 7
    later = store.transition("a", JobState.RUNNING)
    assert later.started_at == running.started_at
    done = store.transition("a", JobState.SUCCEEDED)
    assert done.ended_at is not None
    for state in (JobState.FAILED, JobState.RUNNING, JobState.CANCELLING, JobState.CANCELLED):
        assert store.transition("a", state, error="late") == done
    assert store.get("a") == done
    # update is the unguarded tool, but never moves the first end time.
    assert store.update("a", state=JobState.FAILED).ended_at == done.ended_at


def test_terminal_state_without_running(store: JobStore) -> None:
    store.create(make("a", created_at=50.0))
    record = store.transition("a", JobState.CANCELLED)
    assert record.started_at is None and record.ended_at is not None
    assert record.elapsed == record.ended_at - 50.0


# -- files --------------------------------------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@POSIX
def test_permissions(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "a" / "b" / "jobs.sqlite")
    store.create(make("x"))
    assert mode(store.path.parent) == 0o700
    assert mode(store.path) == 0o600
    for suffix in ("-wal", "-shm"):
        sidecar = Path(f"{store.path}{suffix}")
        if sidecar.exists():
            assert mode(sidecar) == 0o600


@POSIX
def test_permissions_tightened_on_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o755)
    JobStore(home / "jobs.sqlite").create(make("x"))
    assert mode(home) == 0o755  # an explicit path's existing folder is the caller's
    os.chmod(home / "jobs.sqlite", 0o644)
    monkeypatch.setenv("TFC_JUPYTER_HOME", str(home))
    store = JobStore()
    assert store.path == home / "jobs.sqlite"
    assert mode(home) == 0o700
    assert mode(store.path) == 0o600
    assert store.get("x").id == "x"


def test_corrupt_database(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(TfcError) as info:
        JobStore(path)
    assert isinstance(info.value, JobStoreError)
    text = str(info.value)
    assert str(path) in text and "Fix:" in text and "mv " in text
    assert isinstance(info.value.__cause__, sqlite3.DatabaseError)


def test_corrupt_row_is_reported_and_skipped_in_list(store: JobStore) -> None:
    store.create(make("good"))
    store.create(make("bad"))
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE jobs SET record = '{\"id\": \"bad\"' WHERE id = 'bad'")
    conn.close()
    with pytest.raises(JobStoreError, match="'bad'"):
        store.get("bad")
    assert [r.id for r in store.list()] == ["good"]


def test_unwritable_location(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(JobStoreError, match="cannot be created"):
        JobStore(blocker / "jobs.sqlite")


# -- concurrency --------------------------------------------------------------------------------


def run_threads(count: int, target: Callable[[int], None]) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def body(i: int) -> None:
        try:
            barrier.wait()
            target(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    return errors


def bump(record: JobRecord) -> dict[str, Any]:
    return {"handle": {**record.handle, "n": record.handle.get("n", 0) + 1}}


@pytest.mark.timeout(120)
def test_threads_update_one_record_atomically(store: JobStore) -> None:
    store.create(make("shared", handle={"n": 0}))
    threads, rounds = 8, 25

    def work(i: int) -> None:
        for j in range(rounds):
            store.update("shared", mutate=bump, error=f"thread {i} round {j}")

    assert run_threads(threads, work) == []
    record = store.get("shared")
    assert record.handle["n"] == threads * rounds
    assert record.error is not None and record.error.startswith("thread ")


@pytest.mark.item("the job store loses no update to threads and stores", suite="faults")
@pytest.mark.timeout(120)
def test_a_store_per_request_loses_no_update(store: JobStore) -> None:
    """The Jupyter server's pattern: each request opens its own JobStore, on threads of one
    process. Opening one must not drop the locks another thread's connection holds (closing
    any descriptor of a file drops all of the process's POSIX locks on it, SQLite's too)."""
    store.create(make("shared", handle={"n": 0}))
    threads, rounds = 8, 25

    def work(i: int) -> None:
        for j in range(rounds):
            mine = JobStore(store.path)  # one per request
            if j % 5 == 0:
                mine.create(make(f"t{i}-{j}"))
            mine.update("shared", mutate=bump)

    assert run_threads(threads, work) == []
    assert store.get("shared").handle["n"] == threads * rounds
    assert len(store.list(limit=500)) == 1 + threads * rounds // 5
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


LOCK_PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:  # SQLite's shared-lock bytes of the database file (its os_unix.c SHARED_FIRST, 510 bytes)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 510, 0x40000002, 0)
    print("free")
except OSError:
    print("held")
"""


@pytest.mark.item("the job store loses no update to threads and stores", suite="faults")
@pytest.mark.skipif(os.name != "posix", reason="POSIX record locks")
def test_opening_a_store_keeps_the_locks_of_this_process_s_connections(store: JobStore) -> None:
    """Issue 39: ``JobStore()`` opened and closed the database file outside SQLite, and closing
    any descriptor of a file drops every POSIX lock the process holds on it: another thread's
    connection lost its lock, and another process (a job's supervisor) could then checkpoint or
    delete the WAL under it ("disk I/O error", "database disk image is malformed")."""

    def probe() -> str:
        argv = [sys.executable, "-c", LOCK_PROBE, str(store.path)]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()

    with contextlib.closing(sqlite3.connect(store.path)) as conn:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        assert probe() == "held"
        JobStore(store.path)  # another request's store, in this process
        assert probe() == "held"
    assert probe() == "free"


@pytest.mark.timeout(120)
def test_racing_monitors_first_terminal_state_wins(store: JobStore) -> None:
    store.create(make("race", state=JobState.RUNNING))
    terminal = [JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED] * 4
    results: list[JobRecord] = []
    errors = run_threads(
        len(terminal), lambda i: results.append(store.transition("race", terminal[i]))
    )
    assert errors == []
    final = store.get("race")
    assert final.state.is_terminal()
    assert {r.state for r in results} == {final.state}
    assert {r.ended_at for r in results} == {final.ended_at}


WRITER = """
import sys, time
from pathlib import Path
from tfc_jupyter.store.records import JobRecord, JobStore

path, tag, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
store = JobStore(path)
while not go.exists():
    time.sleep(0.001)
for i in range(count):
    store.create(JobRecord(id=f"{tag}-{i:03d}", name=tag, backend="local",
                           spec={"tag": tag, "i": i}, handle={"pid": i}))
    store.update("counter", mutate=lambda r: {"handle": {"n": r.handle["n"] + 1}})
print("done", tag)
"""


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_processes_create_and_update_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    store = JobStore(path)
    store.create(make("counter", handle={"n": 0}))
    go = tmp_path / "go"
    root = str(Path(tfc_jupyter.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), tag, "100", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for tag in ("p1", "p2")
    ]
    stop = threading.Event()
    bumps = [0, 0]

    def thread_work(i: int) -> None:  # threads of this process join the fight
        while not stop.is_set():
            store.update("counter", mutate=bump)
            bumps[i] += 1
            store.list(limit=10)

    time.sleep(0.5)  # let both writers start and wait on the go file
    go.touch()
    thread_errors: list[BaseException] = []
    helper = threading.Thread(target=lambda: thread_errors.extend(run_threads(2, thread_work)))
    helper.start()
    try:
        outputs = [p.communicate(timeout=150) for p in procs]
    finally:
        stop.set()
        for p in procs:
            if p.poll() is None:
                p.kill()
        helper.join(timeout=60)
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
        assert out.startswith("done"), (out, err)
    assert thread_errors == []

    records = {r.id: r for r in JobStore(path).list(limit=None)}
    assert len(records) == 201
    for tag in ("p1", "p2"):
        for i in range(100):
            record = records[f"{tag}-{i:03d}"]
            assert (record.name, record.spec, record.handle) == (
                tag,
                {"tag": tag, "i": i},
                {"pid": i},
            )
    assert records["counter"].handle["n"] == 200 + sum(bumps)  # no increment lost


def test_an_older_records_watcher_pid_is_found(tmp_path: Path) -> None:
    old = JobRecord(id="j-old", name="n", backend="local", handle={"supervisor_pid": 4242})
    assert old.handle["watcher_pid"] == 4242
    assert JobRecord.from_dict(old.to_dict()).handle["watcher_pid"] == 4242


def test_job_dict_costs_priced_unpriced_and_foreign_records(tmp_path: Path) -> None:
    """The jobs API's cost: the list price times time on Vertex AI; null where a machine has no
    verified price (never a made-up $0); an older record without a spec adds up what it holds."""
    from tfc_jupyter import jobs
    from tfc_jupyter.config import load_settings
    from tfc_jupyter.job import catalog, options, prices
    from tfc_jupyter.job.spec import JobSpec

    def record(spec: dict[str, Any], backend: str = "vertex") -> JobRecord:
        now = time.time()
        return JobRecord(
            id="j1", name="n", backend=backend, spec=spec, created_at=now - 7200,
            started_at=now - 3600, log_dir=str(tmp_path),
        )  # fmt: skip

    def spec_of(line: str) -> dict[str, Any]:
        built = options.to_spec(
            options.parse_line(line), load_settings(environ={}, include_server=False)
        )
        assert isinstance(built, JobSpec)
        return built.to_dict()

    # CPU: n1-standard-4 and its 100 GB pd-ssd boot disk, for each replica
    cpu = (catalog.lookup("CPU").price_per_hour or 0) + (prices.boot_disk_price("pd-ssd", 100) or 0)
    priced = jobs.job_dict(record(spec_of("--backend vertex --machine CPU --workers 1")))
    assert priced["cost_per_hour"] == pytest.approx(2 * cpu, abs=1e-5)
    assert priced["cost_estimate"] == pytest.approx(2 * cpu * priced["elapsed"] / 3600, rel=1e-3)
    unpriced = jobs.job_dict(record(spec_of("--backend vertex --machine H200_8X")))
    assert unpriced["cost_per_hour"] is None and unpriced["cost_estimate"] is None
    local = jobs.job_dict(record(spec_of("--machine H200_8X"), backend="local"))
    assert local["cost_per_hour"] is None and local["cost_estimate"] == 0.0
    # A record whose spec no longer rebuilds: the stored prices, the worker priced as the chief.
    foreign = {"chief": {"price_per_hour": 1.5}, "worker_count": 2, "strategy": "nonsense"}
    assert jobs.job_dict(record(foreign))["cost_per_hour"] == pytest.approx(4.5)
    assert jobs.job_dict(record({"chief": {"price_per_hour": None}}))["cost_per_hour"] is None


def test_ids_made_in_one_second_differ_before_their_last_character() -> None:
    """The short id (the 6-character suffix) is what tells rows apart and what %tfc_attach
    takes: ids made together differ in more than their last character, and are not a run of
    neighbours (a counter made 823911, 823912)."""
    ids = [new_job_id("sweep") for _ in range(2000)]
    by_second: dict[str, list[str]] = {}
    for job_id in ids:
        stamp, suffix = job_id.rsplit("-", 2)[1], job_id[-6:]
        by_second.setdefault(stamp, []).append(suffix)
    for suffixes in by_second.values():
        assert len({s[:5] for s in suffixes}) == len(suffixes)
    values = [int(s[-6:], 16) for s in ids]
    steps = [b - a for a, b in itertools.pairwise(values)]
    assert sum(1 for step in steps if step == 1) < 5  # random, not counted
