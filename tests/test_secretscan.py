"""Secrets by content, in whole files, with a planted corpus of the forms people leak.

Every form is written under a neutral file name (so only its content can give it away), found,
and placed at its line. Counted (tests/counted.py): the run prints forms tried and held.
"""

from __future__ import annotations

import sys
from pathlib import Path

import counted
import pytest
from jobutil import plan_for, write_notebook
from secret_corpus import ARCHIVE_FORMS, AWS_SECRET, CLEAN, CONTENT_FORMS, NAME_FORMS, SA

from tfc_jupyter import secretscan
from tfc_jupyter.image.context import SecretInFile

ITEMS = [
    "content forms are found at their line",
    "archives are opened",
    "secret file names",
    "no false alarm on ordinary files",
    "a file the job needs that holds a secret stops the plan",
    "a home folder packs no tool state and none of ours",
]


def test_every_item_has_cases() -> None:
    counted.check_items(sys.modules[__name__])


@pytest.mark.item("content forms are found at their line")
@pytest.mark.parametrize(("form", "content", "line"), CONTENT_FORMS, ids=lambda v: str(v)[:40])
def test_content_forms_are_found_at_their_line(
    tmp_path: Path, form: str, content: str | bytes, line: int
) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    found = secretscan.scan_file(path)
    assert found is not None, form
    assert found.line == line, (form, found)


@pytest.mark.item("archives are opened")
@pytest.mark.parametrize(("form", "data"), ARCHIVE_FORMS, ids=lambda v: str(v)[:40])
def test_archives_are_opened(tmp_path: Path, form: str, data: bytes) -> None:
    path = tmp_path / "bundle.zip"
    path.write_bytes(data)
    found = secretscan.scan_file(path)
    assert found is not None and "in the archive" in found.what, form


@pytest.mark.item("secret file names")
@pytest.mark.parametrize("name", NAME_FORMS)
def test_names_are_secrets(name: str) -> None:
    assert secretscan.secret_reason(f"project/{name}") is not None


def test_the_corpus_has_forty_forms() -> None:
    assert len(CONTENT_FORMS) + len(ARCHIVE_FORMS) + len(NAME_FORMS) >= 40


@pytest.mark.item("no false alarm on ordinary files")
@pytest.mark.parametrize("content", CLEAN, ids=range(len(CLEAN)))
def test_no_false_alarm_on_ordinary_files(tmp_path: Path, content: str) -> None:
    path = tmp_path / "file.txt"
    path.write_text(content)
    assert secretscan.scan_file(path) is None
    assert (
        secretscan.secret_reason("env.py") is None
        and secretscan.secret_reason(".env.example") is None
    )


@pytest.mark.item("a file the job needs that holds a secret stops the plan")
def test_a_named_file_with_a_secret_stops_the_plan(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(f"bucket: b\naws_secret_access_key: {AWS_SECRET}\n")
    nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    with pytest.raises(SecretInFile) as info:
        plan_for(nb, "--include config.yaml")
    text = str(info.value)
    assert "config.yaml, line 2 holds a secret (an AWS secret access key)" in text
    assert AWS_SECRET not in text and "Fix:" in text


@pytest.mark.item("a file the job needs that holds a secret stops the plan")
def test_a_file_the_code_reads_with_a_secret_stops_the_plan(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(SA)
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "%%tfc_run --backend docker --dry-run\nimport json\ncfg = json.load(open('settings.json'))",
    )
    with pytest.raises(SecretInFile, match=r"settings\.json, line 1 holds a secret"):
        plan_for(nb)


@pytest.mark.item("a home folder packs no tool state and none of ours")
def test_a_home_folder_packs_no_state_of_tools_or_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    jobs = home / ".local" / "share" / "jupyter" / "tfc_jupyter"
    (jobs / "jobs" / "j1").mkdir(parents=True)
    (jobs / "jobs" / "j1" / "launch.json").write_text('{"env": {}}')
    (home / ".cache" / "pip").mkdir(parents=True)
    (home / ".cache" / "pip" / "x").write_text("cache")
    own = home / "tfc-home"
    own.mkdir()
    (own / "jobs.sqlite").write_bytes(b"SQLite format 3\0")
    (home / "train.csv").write_text("a\n1\n")
    monkeypatch.setenv("TFC_JUPYTER_HOME", str(own))
    nb = write_notebook(home / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    plan = plan_for(nb, "--include .")
    assert plan.context is not None
    names = {e.arcname for e in plan.context.entries}
    assert "app/train.csv" in names
    assert not any(n.startswith(("app/.local", "app/.cache", "app/tfc-home")) for n in names)
    left = dict(plan.context.left_out)
    assert left[".local/"].startswith("tools' state") and left["tfc-home/"].startswith(
        "tfc_jupyter"
    )
