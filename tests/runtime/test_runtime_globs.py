"""A pattern the job's code globs that matches nothing is one warning on stderr, once per
pattern, and the code gets the very result it would without us (``tfc_runtime.globs``)."""

from __future__ import annotations

import glob
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from runtime_helpers import job_env, run_runtime
from tfc_runtime import globs

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(globs, "_warned", set())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.tfrecord").write_text("r\n")


def test_a_pattern_that_matches_nothing_warns_once(capsys: pytest.CaptureFixture[str]) -> None:
    watched = globs.watched(glob.glob, "glob.glob", "pathname")
    assert watched("data/*.tfrecord") == ["data/a.tfrecord"]
    assert capsys.readouterr().err == ""
    result = watched("data/*.csv")
    assert result == []
    assert watched(pathname="data/*.csv") == []  # the same pattern: no second line
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(
        f"[tfc_runtime] warning: glob.glob('data/*.csv') matched nothing in {Path.cwd()}: "
    )
    assert watched(b"other/*") == []
    assert "glob.glob('other/*') matched nothing" in capsys.readouterr().err


def test_the_result_is_the_one_the_call_made(capsys: pytest.CaptureFixture[str]) -> None:
    made: list[object] = []

    def original(pattern: str) -> list[object]:
        made.append([])
        return made[-1]  # type: ignore[return-value]

    got = globs.watched(original, "tf.io.gfile.glob", "pattern")("data/*.x")
    assert got is made[0]
    assert "tf.io.gfile.glob('data/*.x')" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("/nowhere/*.csv",), {}),  # absolute: not the job's folder
        (("gs://bucket/*.tfrecord",), {}),
        (("~/data/*.csv",), {}),
        (("*.csv",), {"root_dir": "/nowhere"}),
        ((["data/*.csv", "more/*.csv"],), {}),  # a list of patterns (tf.io.gfile.glob)
    ],
)
def test_what_is_not_a_relative_pattern_is_quiet(
    capsys: pytest.CaptureFixture[str], args: tuple, kwargs: dict
) -> None:
    assert globs.watched(lambda *a, **k: [], "glob.glob", "pathname")(*args, **kwargs) == []
    assert capsys.readouterr().err == ""


def test_a_library_s_glob_is_its_own_business(capsys: pytest.CaptureFixture[str]) -> None:
    """A glob from an installed package, TensorFlow or the standard library says nothing."""
    watched = globs.watched(glob.glob, "glob.glob", "pathname")
    for name, file in (
        ("somelib.io", "/usr/lib/python3/site-packages/somelib/io.py"),
        ("tensorflow.python.training", "/opt/tf/training.py"),
        ("shutil", "/usr/lib/python3.11/shutil.py"),
    ):
        code = compile("result = find('nothing/*.csv')", file, "exec")
        scope = {"__name__": name, "find": watched}
        exec(code, scope)
        assert scope["result"] == []
    assert capsys.readouterr().err == ""
    helper = {"__name__": "helpers", "find": watched}  # a module next to the notebook: the code
    exec(compile("result = find('nothing/*.csv')", "/app/helpers.py", "exec"), helper)
    assert "glob.glob('nothing/*.csv') matched nothing" in capsys.readouterr().err


def test_an_iglob_warns_when_read_to_its_end_empty(capsys: pytest.CaptureFixture[str]) -> None:
    iglob = globs.watched_lazily(glob.iglob, "glob.iglob")
    assert list(iglob("data/*.tfrecord")) == ["data/a.tfrecord"]
    it = iglob("data/*.csv")
    assert isinstance(it, Iterator)
    assert capsys.readouterr().err == ""  # nothing read yet: nothing known
    assert list(it) == []
    assert "glob.iglob('data/*.csv') matched nothing" in capsys.readouterr().err


def test_wrapping_twice_wraps_once() -> None:
    once = globs.watched(glob.glob, "glob.glob", "pathname")
    assert globs.watched(once, "glob.glob", "pathname") is once
    lazy = globs.watched_lazily(glob.iglob, "glob.iglob")
    assert globs.watched_lazily(lazy, "glob.iglob") is lazy


SCRIPT = """\
import glob
found = glob.glob("data/*.tfrecord")
missing = glob.glob("data/*.csv")
again = sorted(glob.iglob("data/*.csv"))
import shutil  # the standard library's own globs say nothing
print("found", found, "missing", missing, again)
"""


def test_the_job_warns_on_stderr_and_computes_the_same(tmp_path: Path) -> None:
    """Through ``python -m tfc_runtime`` (``python -S``: no TensorFlow, as in a bare image)."""
    (tmp_path / "script.py").write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, "-S", "-m", "tfc_runtime", "--strategy", "none", "script.py"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PYTHONPATH": str(RUNTIME), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "found ['data/a.tfrecord'] missing [] []" in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if "matched nothing" in line]
    assert lines == [
        f"[tfc_runtime] warning: glob.glob('data/*.csv') matched nothing in {tmp_path}: the job "
        "has no such files, and a dataset of them is empty. Fix: put them next to the notebook "
        "before the run (the plan ships what the code reads there), pass --include, or read "
        "them from a bucket (gs://...)"
    ]


TF_SCRIPT = """\
import tensorflow as tf
files = tf.io.gfile.glob("data/*.tfrecord")
none = tf.io.gfile.glob("data/*.csv")
count = sum(1 for _ in tf.data.TFRecordDataset(none))
print("files", files, "none", none, "records", count)
"""


@pytest.mark.slow
def test_tf_io_gfile_glob_warns_in_the_job(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    (tmp_path / "script.py").write_text(TF_SCRIPT)
    done = run_runtime(["--strategy", "none", "script.py"], tmp_path, job_env(), timeout=180)
    assert done.returncode == 0, done.stderr
    assert "files ['data/a.tfrecord'] none [] records 0" in done.stdout
    lines = [line for line in done.stderr.splitlines() if "matched nothing" in line]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("[tfc_runtime] warning: tf.io.gfile.glob('data/*.csv') matched")
