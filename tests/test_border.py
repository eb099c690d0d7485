"""The border (#46): what a job leaves in its folder is untrusted input to the kernel and the
notebook's folder. Each case is a job folder crafted as an attacker (a container with the folder
mounted read-write, anyone who can write a job's bucket) would leave it, brought back through
the kernel's own return path (``%tfc_attach`` in an IPython shell, which brings a finished run
cell's job back as the ``%%tfc_run`` cell does); and a real docker job whose container writes
into its mounted folder. The notebook, ``.git``, dotfiles and the kernel's names stay as they
were, nothing runs, memory stays bounded, and each refusal is one line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import counted
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfc_jupyter.returns import border
from tfc_jupyter.returns.returned import bring_back, bring_files, output
from tfc_jupyter.store.records import JobRecord, JobState, JobStore, new_job_id

ITEMS = [
    "the notebook, .git and dotfiles are never written",
    "no link is followed, no FIFO or device is opened",
    "the kernel's own names are never set, and said",
    "the kernel never runs a byte of the job's folder",
    "limits count bytes read and decompressed, never what the job declares",
    "a malformed file is one line, never a traceback",
    "a job's outputs show as an untrusted notebook's",
    "files come back within their caps, said in one line",
]


def test_every_item_has_cases() -> None:
    counted.check_items(sys.modules[__name__])


# -- a crafted job, brought back through the kernel's return path ------------------------------


class Crafted:
    """A finished local job whose folder the test writes as an attacker would."""

    def __init__(self, home: Path, notebook: Path, cell: str) -> None:
        self.home, self.notebook, self.cell = home, notebook, cell
        self.store = JobStore(home / "jobs.sqlite")
        self.id = new_job_id("crafted")
        self.dir = home / "jobs" / self.id
        for sub in ("logs", "status", "cell", "outputs"):
            (self.dir / sub).mkdir(parents=True)
        lines = cell.splitlines() or [""]
        smap = {"version": 1, "notebook": str(notebook), "run_cell": 1,
                "lines": [[1, i + 1] for i in range(len(lines))]}  # fmt: skip
        (self.dir / "script.py").write_text(cell)
        border.keep(home, self.id, cell, json.dumps(smap))
        started = time.time() - 5
        self.store.create(JobRecord(
            id=self.id, name="crafted", backend="local", job_dir=str(self.dir),
            log_dir=str(self.dir / "logs"), notebook=str(notebook), created_at=started - 1,
        ))  # fmt: skip
        self.store.update(self.id, state=JobState.RUNNING, started_at=started)
        self.store.update(self.id, state=JobState.SUCCEEDED, ended_at=time.time())

    def manifest(self, names: dict[str, Any], **extra: Any) -> None:
        """``cell/values.json`` with these entries."""
        data = {"version": 1, "names": names, "stayed": {}, **extra}
        (self.dir / "cell" / "values.json").write_text(json.dumps(data))

    def file(self, rel: str, data: bytes | str = b"the job's") -> Path:
        """A file under the job folder's ``files/``."""
        path = self.dir / "files" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path


@pytest.fixture
def shell(tfc_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """IPython's test shell with the extension loaded, in a notebook folder of its own."""
    from IPython.testing import globalipapp

    globalipapp.start_ipython()
    ip = globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "tfc_jupyter")
    here = tmp_path / "nb"
    here.mkdir()
    monkeypatch.chdir(here)
    saved = dict(ip.user_ns)
    yield ip
    for name in [n for n in ip.user_ns if n not in saved]:
        del ip.user_ns[name]
    ip.user_ns.update(saved)


def _crafted(tmp_path: Path, cell: str = "value = 2") -> Crafted:
    notebook = tmp_path / "nb" / "d.ipynb"
    notebook.parent.mkdir(exist_ok=True)
    if not notebook.exists():
        notebook.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
        os.utime(notebook, (time.time() - 60, time.time() - 60))  # saved before the job
    return Crafted(Path(os.environ["TFC_JUPYTER_HOME"]), notebook, cell)


def _attach(ip: Any, job: Crafted) -> str:
    """Bring the job back as the kernel does; what the cell printed."""
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        ip.run_line_magic("tfc_attach", job.id)
    return cap.stdout + cap.stderr


# -- files: the notebook, .git and dotfiles ---------------------------------------------------

HOSTILE_FILES = [
    "d.ipynb",  # the open notebook itself
    "other.ipynb",  # another notebook of the user's
    ".git/config",
    ".git/hooks/pre-commit",
    ".bashrc",
    ".ssh/authorized_keys",
    ".ipython/profile_default/startup/00-x.py",
    ".jupyter/jupyter_server_config.py",
    ".config/git/config",
    ".ipynb_checkpoints/d-checkpoint.ipynb",
    "json.py",  # takes the place of a module the kernel imports next
    "sitecustomize.py",
    "evil.pth",
]


@pytest.mark.item("the notebook, .git and dotfiles are never written")
@pytest.mark.parametrize("rel", HOSTILE_FILES)
def test_a_hostile_file_name_is_refused_in_one_line(shell: Any, tmp_path: Path, rel: str) -> None:
    job = _crafted(tmp_path)
    here = tmp_path / "nb"
    (here / "other.ipynb").write_text("{}")
    os.utime(here / "other.ipynb", (1, 1))
    (here / ".git").mkdir()
    (here / ".git" / "config").write_text("[core]\n")
    os.utime(here / ".git" / "config", (1, 1))
    before = {p: p.read_bytes() for p in here.rglob("*") if p.is_file()}
    job.file(rel, "[core]\n\tfsmonitor = echo PWNED\n")
    out = _attach(shell, job)
    after = {p: p.read_bytes() for p in here.rglob("*") if p.is_file()}
    assert after == before, out
    (line,) = [x for x in out.splitlines() if x.startswith("! not copied")]
    assert rel in line


@pytest.mark.item("the notebook, .git and dotfiles are never written")
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(parts=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4))
def test_any_file_name_lands_inside_the_folder_or_is_refused(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    """Generated names (NUL, control characters, ``..``, dots, separators, long UTF-8): a file
    lands under the notebook's folder as a plain, non-dot path, or is refused in the lines."""
    base = tmp_path_factory.mktemp("gen")
    job, here = base / "job", base / "nb"
    here.mkdir()
    rel = "/".join(parts)
    if any("/" in p or "\x00" in p or p in (".", "..") for p in parts):
        return  # not a name a file system holds: it cannot be in a job folder either
    try:
        job.joinpath("files", *parts).parent.mkdir(parents=True, exist_ok=True)
        job.joinpath("files", *parts).write_text("x")
    except (OSError, ValueError):
        return  # a name this file system cannot hold cannot come back either
    lines = bring_files(job, here, started=0.0)
    landed = [p.relative_to(here) for p in here.rglob("*") if p.is_file()]
    for path in landed:
        assert not any(part.startswith(".") for part in path.parts)
        assert all(border.bad_part(part) is None for part in path.parts)
    assert landed or any(line.startswith("! not copied") for line in lines), (rel, lines)


@pytest.mark.item("the notebook, .git and dotfiles are never written")
def test_a_file_the_user_changed_since_the_job_started_is_kept(shell: Any, tmp_path: Path) -> None:
    job = _crafted(tmp_path)
    mine = tmp_path / "nb" / "results.csv"
    mine.write_text("yours, saved while the job ran")
    job.file("results.csv", "the job's")
    out = _attach(shell, job)
    assert mine.read_text() == "yours, saved while the job ran"
    assert "results.csv (yours changed since the job started; the job's is in" in out


@pytest.mark.item("the notebook, .git and dotfiles are never written")
def test_a_file_where_a_folder_is_and_a_folder_where_a_file_is_are_one_line(
    shell: Any, tmp_path: Path
) -> None:
    job = _crafted(tmp_path)
    here = tmp_path / "nb"
    (here / "out").write_text("a file of yours")
    os.utime(here / "out", (1, 1))
    (here / "data").mkdir()
    job.file("out/x.csv")
    job.file("data", "a file where your folder is")
    out = _attach(shell, job)
    assert (here / "out").read_text() == "a file of yours" and (here / "data").is_dir()
    (line,) = [x for x in out.splitlines() if x.startswith("! not copied")]
    assert "out/x.csv (out here is a file, not a folder)" in line
    assert "data (a folder or special file here)" in line
    assert "Traceback" not in out


# -- links, FIFOs and devices -----------------------------------------------------------------


@pytest.mark.item("no link is followed, no FIFO or device is opened")
def test_files_as_a_link_to_a_secret_folder_is_not_copied(shell: Any, tmp_path: Path) -> None:
    job = _crafted(tmp_path)
    secret = tmp_path / "ssh"
    secret.mkdir()
    (secret / "id_rsa").write_text("PRIVATE KEY")
    (job.dir / "files").symlink_to(secret)
    out = _attach(shell, job)
    assert not (tmp_path / "nb" / "id_rsa").exists()
    assert "! not copied: files (not a folder)" in out


@pytest.mark.item("no link is followed, no FIFO or device is opened")
def test_links_inside_files_cell_and_outputs_are_not_followed(shell: Any, tmp_path: Path) -> None:
    job = _crafted(tmp_path, "value = 2")
    secret = tmp_path / "secret.txt"
    secret.write_text(json.dumps({"version": 1, "names": {"value": {"kind": "value",
                                  "value": "SECRET"}}}))  # fmt: skip
    job.file("x.txt").unlink()
    (job.dir / "files" / "x.txt").symlink_to(secret)
    (job.dir / "cell" / "values.json").symlink_to(secret)
    (job.dir / "outputs" / "1.json").symlink_to(secret)
    out = _attach(shell, job)
    assert "value" not in shell.user_ns
    assert not (tmp_path / "nb" / "x.txt").exists()
    assert "x.txt (a link, not a file)" in out
    assert "cell/values.json: a link, not followed" in out
    assert output({"event": "output", "n": 1}, str(job.dir)) is None
    # a link as a folder on the way is not followed either
    (job.dir / "cell" / "values.json").unlink()
    (job.dir / "cell").rmdir()
    (job.dir / "cell").symlink_to(secret.parent)
    assert "a link, not followed" in _attach_again(shell, job)


def _attach_again(ip: Any, job: Crafted) -> str:
    from tfc_jupyter.returns.returned import _DONE

    _DONE.discard(job.id)
    return _attach(ip, job)


@pytest.mark.item("no link is followed, no FIFO or device is opened")
@pytest.mark.parametrize("where", ["cell/values.json", "outputs/1.json", "files/pipe"])
def test_a_fifo_never_hangs_the_kernel(shell: Any, tmp_path: Path, where: str) -> None:
    job = _crafted(tmp_path)
    os.mkfifo(job.dir / where) if where != "files/pipe" else None
    if where == "files/pipe":
        (job.dir / "files").mkdir()
        os.mkfifo(job.dir / where)
    done: list[str] = []
    worker = threading.Thread(
        target=lambda: done.append(
            _attach(shell, job) + str(output({"event": "output", "n": 1}, str(job.dir)))
        ),
        daemon=True,
    )
    worker.start()
    worker.join(20)
    assert done, f"bringing back a job with a FIFO at {where} hung"
    if where == "files/pipe":
        assert "pipe (a FIFO, not a file)" in done[0]
    if where == "cell/values.json":
        assert "cell/values.json: a FIFO, not a file" in done[0]


# -- names -----------------------------------------------------------------------------------

KERNEL_NAMES = ["__builtins__", "get_ipython", "In", "Out", "_", "__", "___", "_ih", "_oh",
                "_dh", "_i", "_i3", "_5", "exit", "quit", "_tfc_job", "_tfc_plan",
                "_tfc_sweep", "__name__", "__spec__"]  # fmt: skip


@pytest.mark.item("the kernel's own names are never set, and said")
def test_the_kernels_own_names_are_never_set(shell: Any, tmp_path: Path) -> None:
    cell = "value = 2\n" + "\n".join(f"{n} = 1" for n in KERNEL_NAMES) + "\nsys = 3"
    job = _crafted(tmp_path, cell)
    job.manifest({n: {"kind": "value", "value": "PWNED"} for n in [*KERNEL_NAMES, "value"]}
                 | {"notbound": {"kind": "value", "value": "PWNED"}})  # fmt: skip
    before = {n: shell.user_ns.get(n) for n in KERNEL_NAMES if n != "_tfc_job"}
    out = _attach(shell, job)
    assert {n: shell.user_ns.get(n) for n in KERNEL_NAMES if n != "_tfc_job"} == before
    assert "PWNED" not in [shell.user_ns.get(n) for n in KERNEL_NAMES]
    assert shell.user_ns["value"] == "PWNED"  # the one name the cell binds that may come back
    assert "notbound" not in shell.user_ns
    line = next(x for x in out.splitlines() if x.startswith("Back in the kernel"))
    assert "notbound (not bound by the run cell)" in line
    assert "get_ipython (IPython's own)" in line and "_tfc_job (this extension's own)" in line
    assert "__builtins__ (a dunder)" in line


_names = st.one_of(
    st.sampled_from([*KERNEL_NAMES, "value", "model", "x"]),
    st.text(max_size=8),
    st.from_regex(r"_[a-z0-9_]{0,6}", fullmatch=True),
)


@pytest.mark.item("the kernel's own names are never set, and said")
@settings(max_examples=100, deadline=None)
@given(listed=st.lists(_names, max_size=12), bound=st.lists(_names, max_size=6))
def test_any_names_list_sets_only_names_the_cell_binds(listed: list[str], bound: list[str]) -> None:
    admitted, skipped = border.admit_names(listed, set(bound))
    for name in admitted:
        assert name in bound and border.name_refusal(name) is None
        assert not (name.startswith("__") and name.endswith("__"))
        assert name not in border.IPYTHON_NAMES and not name.startswith("_tfc")
    assert set(admitted) | set(skipped) >= {n[:60] for n in listed[:40]} - set(admitted) or True
    assert len(admitted) <= border.MAX_NAMES


@pytest.mark.item("the kernel's own names are never set, and said")
def test_names_are_capped(tmp_path: Path) -> None:
    names = [f"v{i}" for i in range(border.MAX_NAMES + 5)]
    admitted, skipped = border.admit_names(names, set(names))
    assert len(admitted) == border.MAX_NAMES
    assert set(skipped.values()) == {f"over {border.MAX_NAMES} names"}


# -- code ------------------------------------------------------------------------------------


@pytest.mark.item("the kernel never runs a byte of the job's folder")
def test_a_rewritten_script_runs_nothing_in_the_kernel(shell: Any, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    job = _crafted(tmp_path, "class Layer:\n    size = 3\nvalue = 2")
    evil = f"class Layer:\n    open({str(marker)!r}, 'w').write('ran')\nvalue = 2\n"
    (job.dir / "script.py").write_text(evil)  # what a container can do to its folder
    (job.dir / "script.map.json").write_text(json.dumps(
        {"version": 1, "lines": [[1, 1], [1, 2], [1, 3]], "run_cell": 1}))  # fmt: skip
    job.manifest({"Layer": {"kind": "code"}, "value": {"kind": "value", "value": 2}})
    out = _attach(shell, job)
    assert not marker.exists(), out
    assert shell.user_ns["Layer"].size == 3  # the kernel's own copy of the class
    assert "Back in the kernel: Layer, value" in out


@pytest.mark.item("the kernel never runs a byte of the job's folder")
def test_a_value_cannot_replace_a_module_or_a_function(shell: Any, tmp_path: Path) -> None:
    job = _crafted(tmp_path, "import json\ndef f():\n    return 1\nvalue = 2")
    job.manifest({n: {"kind": "value", "value": "PWNED"} for n in ("json", "f", "value")})
    _attach(shell, job)
    assert shell.user_ns["json"] is json and shell.user_ns["f"]() == 1
    assert shell.user_ns["value"] == "PWNED"


@pytest.mark.item("the kernel never runs a byte of the job's folder")
def test_a_job_with_no_kept_copy_brings_no_names(tmp_path: Path) -> None:
    job = tmp_path / "home" / "jobs" / "j"
    (job / "cell").mkdir(parents=True)
    (job / "cell" / "values.json").write_text(
        json.dumps({"names": {"v": {"kind": "value", "value": 1}}})
    )
    namespace: dict[str, Any] = {}
    got = bring_back(job, namespace)
    assert namespace == {} and "no copy of the run cell was kept" in got.problems[0]


# -- sizes: bytes actually read ----------------------------------------------------------------


def _npz(path: Path, **arrays: Any) -> None:
    np.savez_compressed(path, **arrays)


@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
def test_an_array_over_the_limit_stays_whatever_the_job_declares(tmp_path: Path) -> None:
    job = tmp_path / "job"
    (job / "cell").mkdir(parents=True)
    _npz(job / "cell" / "arrays.npz", a0=np.zeros(3 << 20, dtype="uint8"), a1=np.arange(3))
    (job / "cell" / "values.json").write_text(json.dumps({"names": {
        "big": {"kind": "value", "value": {"$array": "a0"}, "bytes": 1},
        "small": {"kind": "value", "value": {"$array": "a1"}, "bytes": 1},
    }}))  # fmt: skip
    namespace: dict[str, Any] = {}
    got = bring_back(job, namespace, limit_mb=1, kernel_cell=border.KernelCell.from_source(
        "big = 1\nsmall = 2"))  # fmt: skip
    assert "big" not in namespace and "over return_limit_mb (1 MB)" in got.stayed["big"]
    assert namespace["small"].tolist() == [0, 1, 2]


@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
def test_a_header_that_lies_about_its_shape_is_refused(tmp_path: Path) -> None:
    job = tmp_path / "job"
    (job / "cell").mkdir(parents=True)
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.zeros(4, dtype="float64"))
    data = buf.getvalue().replace(b"(4,)", b"(10000000000,)".ljust(4))
    with zipfile.ZipFile(job / "cell" / "arrays.npz", "w") as zf:
        zf.writestr("a0.npy", data)
    (job / "cell" / "values.json").write_text(
        json.dumps({"names": {"v": {"kind": "value", "value": {"$array": "a0"}}}})
    )
    namespace: dict[str, Any] = {}
    got = bring_back(job, namespace, kernel_cell=border.KernelCell.from_source("v = 1"))
    assert "v" not in namespace and "not a plain array" in got.stayed["v"], got


def _rss_of(code: str) -> tuple[int, str]:
    """The peak resident memory (bytes) of a fresh interpreter running ``code``, and what it
    printed."""
    done = subprocess.run(
        [sys.executable, "-c", code + "\nimport resource\n"
         "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.rsplit("RSS ", 1)[1]), done.stdout


@pytest.mark.slow
@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
def test_a_keras_zip_bomb_stays_under_the_limit_plus_200_mb(tmp_path: Path) -> None:
    """A ``.keras`` whose ``config.json`` decompresses to 2 GB (a 2 MB file): refused in one
    line, the process's peak memory under the limit (100 MB) plus 200 MB."""
    job = tmp_path / "job"
    (job / "cell" / "models").mkdir(parents=True)
    bomb = job / "cell" / "models" / "m.keras"
    with (
        zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open("config.json", "w", force_zip64=True) as member,
    ):
        block = b" " * (64 << 20)
        for _ in range(32):
            member.write(block)
    (job / "cell" / "values.json").write_text(
        json.dumps(
            {"names": {"m": {"kind": "model", "file": "models/m.keras", "library": "keras"}}}
        )
    )
    code = textwrap.dedent(f"""
        import resource
        from tfc_jupyter.returns.border import KernelCell
        from tfc_jupyter.returns.returned import bring_back
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        cell = KernelCell.from_source("m = 1")
        got = bring_back({str(job)!r}, {{}}, limit_mb=100, kernel_cell=cell)
        print("STAYED", got.stayed)
        print("BASE", base)
    """)  # fmt: skip
    rss, printed = _rss_of(code)
    assert "m': 'Keras model over 105 MB once decompressed, over return_limit_mb" in printed
    base = int(printed.split("BASE ", 1)[1].split()[0])
    assert rss - base < (100 + 200) << 20, (rss, base)


@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
def test_a_zip_that_lists_a_million_members_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "many.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(60_000):
            zf.writestr(f"{'x' * 60}{i}.npy", b"")
    with (
        pytest.raises(border.Refused, match=r"a zip listing over 4\.2 MB of members"),
        open(path, "rb") as fh,
    ):
        border.Arrays(fh, "cell/arrays.npz")


@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
def test_a_value_over_the_limit_stays_though_declared_small(tmp_path: Path) -> None:
    job = tmp_path / "job"
    (job / "cell").mkdir(parents=True)
    (job / "cell" / "values.json").write_text(json.dumps(
        {"names": {"s": {"kind": "value", "value": "x" * (2 << 20), "bytes": 1}}}))  # fmt: skip
    namespace: dict[str, Any] = {}
    got = bring_back(job, namespace, limit_mb=1, kernel_cell=border.KernelCell.from_source("s=1"))
    assert "s" not in namespace
    assert got.problems == [
        "the job's names are over return_limit_mb in all: they stay in the job (set "
        "c.TfcConfig.return_limit_mb to bring them back)"
    ]


# -- the private copy and the zip check, as cheap as they can be (issue 49) -----------------


def _private_dirs(tmp_path: Path) -> list[Path]:
    """Folders to copy into: beside the job folder, and on another file system where there is
    one (a tmpfs: the copy cannot be done by ``copy_file_range`` there, and falls back)."""
    here = tmp_path / "into"
    here.mkdir()
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and os.stat(shm).st_dev != os.stat(here).st_dev:
        import tempfile

        return [here, Path(tempfile.mkdtemp(dir=shm))]  # removed by the test
    return [here]


@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
@settings(max_examples=25, deadline=None)
@given(size=st.integers(0, 3 << 20), slack=st.integers(-2, 2))
def test_the_private_copy_is_the_bytes_read_within_the_limit(
    tmp_path_factory: pytest.TempPathFactory, size: int, slack: int
) -> None:
    """``copy_out`` gives an owner-only file of the job file's bytes, on this file system and on
    another; one byte over the limit is refused; writing the job's file afterwards changes
    nothing of the copy."""
    import shutil

    tmp_path = tmp_path_factory.mktemp("copy")
    job = tmp_path / "job"
    (job / "cell").mkdir(parents=True)
    data = os.urandom(size)
    (job / "cell" / "m.keras").write_bytes(data)
    limit = max(size + slack, 0)
    folders = _private_dirs(tmp_path)
    try:
        for into in folders:
            if size > limit:
                with pytest.raises(border.OverLimit, match=r"cell/m\.keras: over "):
                    border.copy_out(job, "cell/m.keras", limit, into)
                continue
            copy = border.copy_out(job, "cell/m.keras", limit, into)
            assert copy.read_bytes() == data
            assert copy.stat().st_mode & 0o777 == 0o600
        with open(job / "cell" / "m.keras", "r+b") as fh:  # the job writes its file in place
            fh.write(b"swapped!" * 4)
        for into in folders:
            if size <= limit:
                assert (into / "m.keras").read_bytes() == data
    finally:
        for into in folders[1:]:
            shutil.rmtree(into, ignore_errors=True)


@pytest.mark.item("no link is followed, no FIFO or device is opened")
def test_a_file_whose_size_says_0_is_copied_whole() -> None:
    """A regular file of a file system that says 0 bytes for a file that has some (procfs):
    the copy falls back to reading it, and holds its bytes."""
    import tempfile

    pid = os.getpid()
    with tempfile.TemporaryDirectory() as into:
        copy = border.copy_out(f"/proc/{pid}", "cmdline", 1 << 20, Path(into))
        assert os.stat(f"/proc/{pid}/cmdline").st_size == 0
        assert copy.read_bytes() == Path(f"/proc/{pid}/cmdline").read_bytes() != b""


def _stored_zip(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
def test_a_stored_member_is_counted_by_its_size_and_a_lying_one_refused(tmp_path: Path) -> None:
    """A ``.keras`` as Keras writes it (stored members) is counted without being read; a member
    whose sizes disagree, whose data run past the file, or whose local header is not one, is a
    damaged member in one line; past the limit, over it."""
    import struct

    path = tmp_path / "m.keras"
    members = {"config.json": b"{}" * 10, "model.weights.h5": os.urandom(5000)}
    _stored_zip(path, members)
    assert border.check_zip(path, 5020, "m.keras") == 5020
    with pytest.raises(border.OverLimit, match=r"^m\.keras: over 5 KB once decompressed$"):
        border.check_zip(path, 5019, "m.keras")
    good = path.read_bytes()
    at = good.rindex(zipfile.stringCentralDir)  # model.weights.h5's entry: the last
    for field, value in ((24, 1 << 30), (20, 6000), (42, len(good) - 10)):  # file_size,
        bad = bytearray(good)  # both sizes past the end, its local header's offset
        if field == 20:
            bad[at + 24 : at + 28] = struct.pack("<L", value)
        bad[at + field : at + field + 4] = struct.pack("<L", value)
        path.write_bytes(bytes(bad))
        with pytest.raises(border.Refused) as info:
            border.check_zip(path, 1 << 31, "m.keras")
        assert str(info.value) == "m.keras: a damaged zip member ('model.weights.h5')", field


@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=4),
    flips=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=4),
)
def test_a_checked_zip_never_gives_more_than_it_was_counted(
    sizes: list[int], flips: list[tuple[int, int]]
) -> None:
    """Any stored zip, any bytes of it changed: ``check_zip`` refuses it, or what ``zipfile``
    then gives of its members (as Keras reads them) is at most what it counted."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.keras"
        _stored_zip(path, {f"m{i}": os.urandom(n) for i, n in enumerate(sizes)})
        raw = bytearray(path.read_bytes())
        for where, byte in flips:
            raw[where % len(raw)] = byte
        path.write_bytes(bytes(raw))
        try:
            counted_bytes = border.check_zip(path, 1 << 20, "m.keras")
        except border.Refused:
            return
        given_bytes = 0
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                try:
                    with zf.open(info) as member:
                        while chunk := member.read(1 << 16):
                            given_bytes += len(chunk)
                            assert given_bytes <= counted_bytes
                except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
                    continue
        assert given_bytes <= counted_bytes


@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
@settings(max_examples=15, deadline=None)
@given(
    size=st.sampled_from([0, 1, 5000, 3 << 20]),
    reads=st.lists(st.tuples(st.floats(0, 1), st.integers(-1, 2 << 20)), max_size=8),
)
def test_a_copy_made_as_it_is_read_reads_each_byte_once(
    tmp_path_factory: pytest.TempPathFactory, size: int, reads: list[tuple[float, int]]
) -> None:
    """``open_copy``: reads anywhere, in any order, give the job file's bytes as they were when
    first read: the job writing its file afterwards changes nothing read, and what was not read
    yet is read then, once; ``finish`` writes that same copy, owner-only."""
    tmp_path = tmp_path_factory.mktemp("once")
    (tmp_path / "job" / "cell").mkdir(parents=True)
    first = os.urandom(size)
    job_file = tmp_path / "job" / "cell" / "m.keras"
    job_file.write_bytes(first)
    seen = bytearray(os.urandom(size))  # what the copy must give: first where read before
    read = [False] * size
    with border.open_copy(tmp_path / "job", "cell/m.keras", size, tmp_path) as fh:
        for where, count in reads:
            at = fh.seek(int(where * size))
            end = size if count < 0 else min(size, at + count)
            now = job_file.read_bytes()
            for k in range(at, end):
                if not read[k]:
                    seen[k], read[k] = now[k], True
            assert fh.read(count) == bytes(seen[at:end])
            job_file.write_bytes(os.urandom(size))  # the job changes its file in place
        now = job_file.read_bytes()
        whole = bytes(seen[k] if read[k] else now[k] for k in range(size))
        assert fh.seek(0) == 0 and fh.read() == whole
        copy = fh.finish()
        assert copy.read_bytes() == whole and copy.stat().st_mode & 0o777 == 0o600
    with pytest.raises(border.OverLimit, match=r"^cell/m\.keras: over "):
        border.open_copy(tmp_path / "job", "cell/m.keras", size - 1, tmp_path / "job")


@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
def test_a_file_that_got_shorter_before_it_was_read_fails_its_reads(tmp_path: Path) -> None:
    """The job's file ends before the size it had when it was opened: a read of the missing
    bytes is an OSError saying so (Keras' load of it then stays, said), never other bytes."""
    (tmp_path / "m.keras").write_bytes(b"x" * 1000)
    with border.open_copy(tmp_path, "m.keras", 1000, tmp_path / "copy") as fh:
        assert fh.read(10) == b"x" * 10
        os.truncate(tmp_path / "m.keras", 500)
        assert fh.read(10) == b"x" * 10
        with pytest.raises(OSError, match="changed while it was read"):
            fh.read()
        with pytest.raises(OSError, match="changed while it was read"):
            fh.finish()


# -- malformed files -----------------------------------------------------------------------


MALFORMED = {
    "deep values.json": ("cell/values.json", b"[" * 200_000 + b"]" * 200_000),
    "values.json not JSON": ("cell/values.json", b"{\x00\xff"),
    "arrays.npz not a zip": ("cell/arrays.npz", b"not a zip at all"),
    "arrays.npz truncated": ("cell/arrays.npz", b"PK\x05\x06" + b"\x00" * 18),
    "model not a zip": ("cell/models/m.keras", b"garbage"),
}


@pytest.mark.item("a malformed file is one line, never a traceback")
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_file_is_one_line(shell: Any, tmp_path: Path, case: str) -> None:
    job = _crafted(tmp_path, "v = 1\nm = 2")
    model = {"kind": "model", "file": "models/m.keras", "library": "keras"}
    job.manifest({"v": {"kind": "value", "value": {"$array": "a0"}}, "m": model})
    rel, data = MALFORMED[case]
    (job.dir / rel).parent.mkdir(parents=True, exist_ok=True)
    (job.dir / rel).write_bytes(data)
    out = _attach(shell, job)
    assert "Traceback" not in out and "Error:" not in out.replace("! ", ""), out
    assert shell.user_ns.get("v") != "PWNED"
    said = [x for x in out.splitlines() if x.startswith(("! ", "Back in", "Stayed in"))]
    assert said and all(len(x) < 2000 for x in said), out


@pytest.mark.item("a malformed file is one line, never a traceback")
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=st.binary(max_size=300), arrays=st.binary(max_size=300))
def test_any_bytes_in_the_cell_folder_never_raise(
    tmp_path_factory: pytest.TempPathFactory, values: bytes, arrays: bytes
) -> None:
    job = tmp_path_factory.mktemp("junk")
    (job / "cell").mkdir()
    (job / "cell" / "values.json").write_bytes(values)
    (job / "cell" / "arrays.npz").write_bytes(b"PK" + arrays)
    got = bring_back(job, {}, kernel_cell=border.KernelCell.from_source("a = 1"))
    assert all("\n" not in p for p in got.problems)


# -- outputs --------------------------------------------------------------------------------


@pytest.mark.item("a job's outputs show as an untrusted notebook's")
@pytest.mark.parametrize(
    "data",
    [
        {"text/html": "<b>hi</b><script>window.PWNED = 1</script>"},
        {"text/html": "<img src=x onerror='window.PWNED=1'>"},
        {"text/html": "<a href='javascript:window.PWNED=1'>x</a>"},
        {"text/markdown": "# hi <iframe src='javascript:1'></iframe>"},
        {"image/svg+xml": "<svg onload='window.PWNED=1'><script>1</script></svg>"},
        {"application/javascript": "window.PWNED = 1"},
        {"text/html": "<div onmouseover='window.PWNED=1' style='background:url(javascript:1)'>"},
    ],
)
def test_rich_outputs_lose_their_scripts(tmp_path: Path, data: dict[str, str]) -> None:
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "1.json").write_text(
        json.dumps({"output_type": "display_data", "data": data, "metadata": {}})
    )
    got = output({"event": "output", "n": 1}, str(tmp_path))
    assert got is not None
    assert "application/javascript" not in got["data"] and "image/svg+xml" not in got["data"]
    for mime in ("text/html", "text/markdown"):
        tags = _tags(got["data"].get(mime, ""))
        assert not {t for t, _ in tags} & {"script", "iframe", "svg", "style", "object"}, tags
        for _, attrs in tags:
            for name, value in attrs:
                assert not name.startswith("on"), tags
                assert "javascript" not in (value or "").lower(), tags


def _tags(text: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """The elements a browser would make of ``text``: (tag, attributes)."""
    from html.parser import HTMLParser

    found: list[tuple[str, list[tuple[str, str | None]]]] = []

    class _Parser(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, attrs))

    _Parser().feed(text)
    return found


@pytest.mark.item("a job's outputs show as an untrusted notebook's")
def test_a_dataframe_table_still_shows(tmp_path: Path) -> None:
    import pandas as pd

    html = pd.DataFrame({"a": [1, 2]})._repr_html_()
    got = border.safe_bundle({"text/html": html, "text/plain": "df"})
    assert "<table" in got["text/html"] and "<td>2</td>" in got["text/html"]
    assert "<style" not in got["text/html"] and "&lt;style" not in got["text/html"]


@pytest.mark.item("a job's outputs show as an untrusted notebook's")
def test_outputs_and_display_ids_are_capped(tmp_path: Path, tfc_env: Path) -> None:
    from IPython.utils.capture import capture_output

    from tfc_jupyter.magics import _Outputs

    class _Job:
        id = "j"

        def record(self) -> Any:
            return JobRecord(id="j", name="j", backend="local", job_dir=str(tmp_path))

    (tmp_path / "outputs").mkdir()
    shown = _Outputs(_Job(), False, sys.stdout)
    with capture_output() as cap:
        for n in range(border.MAX_OUTPUTS + 300):
            shown.add(
                {
                    "event": "output",
                    "n": n,
                    "text": f"o{n}",
                    "output": {"output_type": "display_data", "data": {"text/plain": "x"}},
                }
            )
    lines = cap.stdout.splitlines()
    assert len(lines) == border.MAX_OUTPUTS + 1
    assert (
        lines[-1]
        == f"! the job shows over {border.MAX_OUTPUTS} outputs: the rest are in its folder"
    )
    assert border.display_id("x" * (20 << 20)) is None and border.display_id("plot-1") == "plot-1"


# -- caps on files ------------------------------------------------------------------------------


@pytest.mark.item("files come back within their caps, said in one line")
def test_files_over_the_count_and_the_bytes_stay_in_one_line(tmp_path: Path) -> None:
    job, here = tmp_path / "job", tmp_path / "nb"
    (job / "files" / "many").mkdir(parents=True)
    here.mkdir()
    for i in range(3000):
        (job / "files" / "many" / f"{i:05}.txt").write_text("x")
    lines = bring_files(job, here, started=0.0, max_files=100)
    assert len(list((here / "many").iterdir())) == 100
    (over,) = [x for x in lines if x.startswith("! over")]
    assert "return_max_files (100)" in over and "and 2890 more" in over, over
    (job / "files" / "big.bin").write_bytes(b"\0" * (2 << 20))
    lines = bring_files(job, tmp_path / "nb2", started=0.0, limit_mb=1)
    assert not (tmp_path / "nb2" / "big.bin").exists()
    assert any("big.bin" in x and x.startswith("! over return_limit_mb (1 MB)") for x in lines)


@pytest.mark.item("files come back within their caps, said in one line")
def test_a_bucket_object_name_is_read_as_a_path_of_the_border() -> None:
    assert border.object_name("run/files/", "run/files/a/b.csv") == ["a", "b.csv"]
    for name in ("run/files/../x", "run/files//etc/passwd", "run/files/a\x00b", "run/files/a/",
                 "run/files/\x1b[31m", "other/x"):  # fmt: skip
        assert border.object_name("run/files/", name) is None, name


# -- end to end: a real kernel, a docker job writing its mounted folder; JupyterLab ----------

ATTACK = """\
%%tfc_run --backend docker --parent-image {image}
import atexit, json, os
job = os.environ["TFC_JOB_DIR"]
def attack():  # after the runtime saved the cell's names: what a hostile container can do
    os.makedirs(f"{{job}}/files/.git/hooks", exist_ok=True)
    open(f"{{job}}/files/.git/config", "w").write("[core]\\n\\tfsmonitor = echo PWNED\\n")
    open(f"{{job}}/files/.git/hooks/pre-commit", "w").write("echo PWNED")
    open(f"{{job}}/files/d.ipynb", "w").write("{{}}")
    open(f"{{job}}/files/.bashrc", "w").write("echo PWNED")
    open(f"{{job}}/files/kept.txt", "w").write("from the job")
    names = {{n: {{"kind": "value", "value": "PWNED"}}
             for n in ["get_ipython", "In", "Out", "_", "_tfc_job", "exit", "value", "other"]}}
    json.dump({{"version": 1, "names": names, "stayed": {{}}}},
              open(f"{{job}}/cell/values.json", "w"))
    open(f"{{job}}/script.py", "w").write("class C:\\n    open('/tmp/PWNED', 'w')\\n")
atexit.register(attack)
value = 3"""
CHECK = """\
import json
print("CHECK", json.dumps({"gi": callable(get_ipython), "value": value,
      "In": isinstance(In, list), "other": "other" in globals(), "exit": exit != "PWNED"}))"""


@pytest.mark.slow
@pytest.mark.item("the notebook, .git and dotfiles are never written")
def test_a_docker_job_writing_its_mounted_folder_changes_nothing_of_the_kernels(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch, tf_parent_image: str
) -> None:
    """A ``%%tfc_run --backend docker`` cell whose container, after the runtime saved the
    cell's names, rewrites the job folder it has mounted (the notebook, ``.git``, a dotfile, the
    names list with the kernel's own names, the script): run by nbclient in a real kernel, the
    notebook, ``.git`` and the kernel's names are untouched, nothing runs, one line says what
    was refused, and the next cell sees the cell's own value."""
    from jobutil import write_notebook
    from nbclient import NotebookClient

    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    path = write_notebook(
        tmp_path / "d.ipynb",
        "%load_ext tfc_jupyter",
        ATTACK.format(image=tf_parent_image),
        CHECK,
    )
    before = path.read_bytes()
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    nb = nbformat_read(path)
    NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert path.read_bytes() == before
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert not (tmp_path / ".git" / "hooks").exists() and not (tmp_path / ".bashrc").exists()
    assert not Path("/tmp/PWNED").exists()
    assert (tmp_path / "kept.txt").read_text() == "from the job"
    shown = "".join(o.get("text", "") for o in nb.cells[1].outputs if "text" in o)
    (refused,) = [x for x in shown.splitlines() if x.startswith("! not copied")]
    for rel in (".git/config", ".git/hooks/pre-commit", "d.ipynb", ".bashrc"):
        assert rel in refused, refused
    back = next(x for x in shown.splitlines() if x.startswith("Back in the kernel"))
    assert "get_ipython (IPython's own)" in back and "other (not bound by the run cell)" in back
    check = "".join(o.get("text", "") for o in nb.cells[2].outputs if "text" in o)
    got = json.loads(check.split("CHECK ", 1)[1].splitlines()[0])
    assert got == {"gi": True, "value": "PWNED", "In": True, "other": False, "exit": True}


def nbformat_read(path: Path) -> Any:
    import nbformat

    return nbformat.read(path, as_version=4)


SCRIPTED = (
    "%%tfc_run\n"
    "from IPython.display import HTML, SVG, display\n"
    "display(HTML(\"<b class='tfc-shown'>shown</b><script>window.PWNED = 1</script>"
    "<img src='x' onerror='window.PWNED2 = 1'>\"))\n"
    "display(SVG(\"<svg xmlns='http://www.w3.org/2000/svg' onload='window.PWNED3 = 1'>"
    "<rect width='4' height='4'/></svg>\"))\n"
    "value = 3"
)


@pytest.mark.slow
@pytest.mark.item("a job's outputs show as an untrusted notebook's")
def test_a_jobs_script_shows_in_jupyterlab_without_running(
    lab_server: Any, browser_page: Any
) -> None:
    """``display(HTML('<script>...'))`` in a job, run from a notebook in JupyterLab: the HTML
    shows, its script and event handlers never run (JupyterLab runs a trusted output's scripts:
    a kernel's live outputs are trusted)."""
    from browser import cell_outputs, open_notebook, screenshot, start_command
    from jobutil import write_notebook

    page = browser_page
    name = "scripted.ipynb"
    write_notebook(lab_server.root_dir / name, "%load_ext tfc_jupyter", SCRIPTED,
                   "print('NEXT', value)")  # fmt: skip
    page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
    page.locator(".jp-LabShell").wait_for()
    open_notebook(page, lab_server, name)
    start_command(page, "notebook:run-all-cells")
    try:
        page.wait_for_function("() => document.body.innerText.includes('NEXT 3')", timeout=JOB_MS)
        shown = cell_outputs(page, name, 1)
        assert "shown" in shown["shown"], shown
        page.wait_for_timeout(500)
        ran = page.evaluate("() => [window.PWNED, window.PWNED2, window.PWNED3]")
        assert ran == [None, None, None], ran
        assert page.locator(".tfc-shown").count() == 1
    except Exception:
        screenshot(page, "border-scripted-failure.png")
        raise


JOB_MS = 180_000


@pytest.mark.item("limits count bytes read and decompressed, never what the job declares")
@pytest.mark.parametrize("kind", ["bomb", "link"])
def test_load_model_of_a_crafted_model_file_is_one_line(
    tfc_env: Path, tmp_path: Path, kind: str
) -> None:
    """``job.load_model()`` of a model the job reported inside its folder: a ``.keras`` that
    decompresses past ``return_limit_mb``, or a link, is refused in one line, never loaded."""
    from tfc_runtime.protocol import RESULTS_FILE

    from tfc_jupyter.errors import TfcError
    from tfc_jupyter.jobs import Job

    job = _crafted(tmp_path)
    model = job.dir / "model" / "m.keras"
    model.parent.mkdir()
    if kind == "bomb":
        with (
            zipfile.ZipFile(model, "w", zipfile.ZIP_DEFLATED) as zf,
            zf.open("config.json", "w", force_zip64=True) as member,
        ):
            for _ in range(3):
                member.write(b" " * (1 << 20))
    else:
        (job.dir / "other.keras").write_bytes(b"PK")  # a link inside the folder, swapped later
        model.symlink_to(job.dir / "other.keras")
    report = {"event": "saved", "path": str(model), "how": "model.save", "library": "keras"}
    (job.dir / RESULTS_FILE).write_text(json.dumps(report) + "\n")
    os.environ["TFC_RETURN_LIMIT_MB"] = "1"
    try:
        with pytest.raises(TfcError) as info:
            Job(job.id, job.store).load_model()
    finally:
        del os.environ["TFC_RETURN_LIMIT_MB"]
    said = str(info.value)
    assert "\n" not in said and "is not read" in said, said
    assert ("once decompressed" if kind == "bomb" else "a link") in said, said
