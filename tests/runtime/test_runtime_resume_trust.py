"""Resume trusts nothing it finds (issue 39): a backup that is not this user's plain files is
not restored, and no read of it waits on a FIFO. (No TensorFlow here: the checks run before
Keras reads a backup; tests/runtime/test_runtime_resume.py covers the restores.)"""

from __future__ import annotations

import os
import types
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import clear_job_vars
from tfc_runtime import resume


class _Backup:
    """Stands in for Keras' BackupAndRestore subclass: records what it was given."""

    tfc_needs_built = False

    def __init__(self, number: int, folder: str, history: str, chief: bool) -> None:
        self.folder, self.history = folder, history


_KERAS = types.SimpleNamespace(callbacks=types.SimpleNamespace())


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clear_job_vars(monkeypatch)
    monkeypatch.setenv("CLOUD_ML_JOB_ID", "j-1")
    monkeypatch.setenv("AIP_CHECKPOINT_DIR", str(tmp_path / "ckpt"))
    monkeypatch.setattr(resume, "_fits", 0)
    return Path(resume.root())


@pytest.mark.item("resume restores only this user's plain files of a fit in range", suite="faults")
@pytest.mark.timeout(20)
@pytest.mark.parametrize("where", ["folder", "inside", "history"])
def test_a_fifo_planted_as_a_backup_is_not_restored_nor_waited_on(
    job: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fit = job / "fit-1"
    if where == "folder":
        os.mkfifo(fit)
    else:
        fit.mkdir()
        os.mkfifo(fit / "latest.weights.h5" if where == "inside" else f"{fit}.history.json")
    made: Any = resume._callback_for(_KERAS, object(), None, _Backup)
    assert made.folder == str(fit)
    assert "backup is not restored" in capsys.readouterr().err
    assert not fit.exists() or not any(fit.iterdir())
    assert resume._read_json(str(fit) + ".history.json") is None


@pytest.mark.item("resume restores only this user's plain files of a fit in range", suite="faults")
def test_a_backup_of_plain_files_is_kept(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fit = job / "fit-1"
    fit.mkdir()
    (fit / "latest.weights.h5").write_bytes(b"weights")
    Path(f"{fit}.history.json").write_text('[{"loss": 1.0}]')
    resume._callback_for(_KERAS, object(), None, _Backup)
    assert capsys.readouterr().err == ""
    assert (fit / "latest.weights.h5").read_bytes() == b"weights"
    assert resume._read_json(f"{fit}.history.json") == [{"loss": 1.0}]


@pytest.mark.item("resume restores only this user's plain files of a fit in range", suite="faults")
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_another_user_s_backup_is_not_restored(
    job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shared --base-output-dir: a backup swapped in by another user is never restored."""
    fit = job / "fit-1"
    fit.mkdir()
    (fit / "latest.weights.h5").write_bytes(b"theirs")
    os.chown(fit / "latest.weights.h5", 4242, 4242)
    resume._callback_for(_KERAS, object(), None, _Backup)
    assert "belongs to another user" in capsys.readouterr().err
    assert not (fit / "latest.weights.h5").exists()
