"""Hearing when a job ends (issue 38): ``--notify URL`` and the ``notify`` setting, sent by
apprise over the wire to a webhook receiver on a loopback address, from the process that
records the job's end, once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobutil import JOB_DEADLINE_S, stored_job, write_notebook
from webhook import Receiver, closed_port_url

from tfc_jupyter import cli
from tfc_jupyter.jobs import job_dict, store_for
from tfc_jupyter.returns import notify
from tfc_jupyter.store.records import JobState


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    got = Receiver()
    yield got
    got.close()


def _ended(job_id: str, home: Path) -> Any:
    store = store_for(home)
    deadline = time.monotonic() + JOB_DEADLINE_S
    while True:
        record = store.get(job_id)
        told = record.handle.get(notify.NOTIFIED) or {}
        if record.state.is_terminal() and told.get("ok") is not None:
            return record
        assert time.monotonic() < deadline, f"job {job_id} {record.state.value}, told {told}"
        time.sleep(0.1)


def _job_id(home: Path) -> str:
    (record,) = store_for(home).list()
    return record.id


def test_a_job_that_ends_with_nobody_following_sends_one_webhook(
    tfc_env: Path, tmp_path: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run --no-wait``: nothing in this process follows the job; its supervisor says how it
    ended, once, with the job's name, id and outcome."""
    nb = write_notebook(tmp_path / "heard.ipynb", "print('trained')")
    assert cli.main(["run", str(nb), "--no-wait", "--notify", receiver.url]) == 0
    home = Path(store_for().path).parent
    job_id = _job_id(home)
    (body,) = receiver.wait_for(1)
    record = _ended(job_id, home)
    assert record.state is JobState.SUCCEEDED
    assert receiver.posts[0][0] == "/hook"
    assert body["type"] == "success", body
    assert body["title"] == "TensorFlow job heard succeeded", body
    assert f"heard ({job_id}): succeeded after" in body["message"], body
    assert "heard.ipynb" in body["message"], body
    assert record.handle[notify.NOTIFIED]["ok"] is True
    time.sleep(1.0)  # nothing else comes: the job was told once
    assert len(receiver.posts) == 1


def test_a_failed_job_is_told_with_its_error_from_the_setting(
    tfc_env: Path,
    tmp_path: Path,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No ``--notify``: the ``notify`` setting (``TFC_NOTIFY``) is where a job's end goes; a
    failure says the error and the cell it was raised in."""
    monkeypatch.setenv("TFC_NOTIFY", receiver.url)
    nb = write_notebook(tmp_path / "broken.ipynb", "x = 1", "raise ValueError('bad batch')")
    assert cli.main(["run", str(nb), "--no-wait"]) == 0
    home = Path(store_for().path).parent
    (body,) = receiver.wait_for(1)
    record = _ended(_job_id(home), home)
    assert record.state is JobState.FAILED
    assert body["type"] == "failure" and body["title"] == "TensorFlow job broken failed", body
    assert "ValueError: bad batch" in body["message"] and "cell 2" in body["message"], body


def test_a_webhook_that_is_down_loses_no_job(
    tfc_env: Path, tmp_path: Path, receiver: Receiver
) -> None:
    """A target that refuses: the job's outcome stands, the others are still told, and what
    went wrong is kept in the record."""
    nb = write_notebook(tmp_path / "fine.ipynb", "print('ok')")
    down = closed_port_url()
    argv = ["run", str(nb), "--no-wait", "--notify", down, "--notify", receiver.url]
    assert cli.main(argv) == 0
    home = Path(store_for().path).parent
    receiver.wait_for(1)
    record = _ended(_job_id(home), home)
    assert record.state is JobState.SUCCEEDED
    told = record.handle[notify.NOTIFIED]
    assert told["ok"] is False and told["said"], told


def test_a_job_is_claimed_once_whoever_sends(tfc_env: Path, receiver: Receiver) -> None:
    """Four senders at once (a watcher and servers): one message. The server's look for
    unsent ends sends a job whose watcher died, once, and leaves old jobs alone."""
    home = Path(store_for().path).parent
    store = store_for(home)
    stored_job(home, "20261127-000001-aaaaaa", "raced", spec={"notify": [receiver.url]})
    results: list[bool | None] = []
    senders = [
        threading.Thread(target=lambda: results.append(notify.send(store, "aaaaaa")))
        for _ in range(4)
    ]
    for t in senders:
        t.start()
    for t in senders:
        t.join(30)
    assert sorted(results, key=str) == [None, None, None, True], results
    assert notify.send_unsent(store) == 0
    stored_job(home, "20261127-000002-bbbbbb", "orphan", spec={"notify": [receiver.url]})
    stored_job(home, "20261125-000003-cccccc", "old", spec={"notify": [receiver.url]})
    store.update("cccccc", ended_at=time.time() - 3 * 24 * 3600)
    stored_job(home, "20261127-000004-dddddd", "quiet")
    assert notify.send_unsent(store) == 1
    assert notify.send_unsent(store) == 0
    bodies = receiver.wait_for(2)
    time.sleep(0.5)
    assert len(receiver.posts) == 2
    assert [b["title"] for b in bodies] == [
        "TensorFlow job raced succeeded",
        "TensorFlow job orphan succeeded",
    ]


def test_the_api_shows_where_a_job_is_told_with_no_password(tfc_env: Path) -> None:
    home = Path(store_for().path).parent
    urls = ["mailto://me:hunter2secret@example.com", "json://127.0.0.1:9/hook?token=abcdef123"]
    stored_job(home, "20261127-000005-eeeeee", "masked", spec={"notify": urls})
    shown = json.dumps(job_dict(store_for(home).get("eeeeee")))
    assert "hunter2secret" not in shown and "abcdef123" not in shown, shown
    assert "mailto://me:****@example.com" in shown and "json://127.0.0.1:9/***" in shown


@pytest.mark.parametrize("url", ["foo", "http//example.com", "nosuchscheme://x/y"])
def test_a_url_apprise_cannot_send_to_is_one_line(
    url: str, train_nb: Path, tfc_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["plan", str(train_nb), "--notify", url]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "is not a URL apprise can send to" in err and "json://host/path" in err, err


@settings(max_examples=60, deadline=None)
@given(
    password=st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=6, max_size=20),
    token=st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=6, max_size=24),
    scheme=st.sampled_from(["json", "jsons", "mailto"]),
)
def test_what_a_target_said_keeps_no_password(password: str, token: str, scheme: str) -> None:
    """What apprise said of a target that failed is served by the jobs API (the record's
    ``notified``): any part of the URL that the shown form hides is masked in it."""
    url = {
        "json": f"json://user:{password}@127.0.0.1:9/hook?token={token}",
        "jsons": f"jsons://u:{password}@127.0.0.1/hook?key={token}",
        "mailto": f"mailto://me:{password}@example.com",
    }[scheme]
    said = f"Failed to send to {url} (password {password}): refused"
    text = notify.masked(said, [url])
    assert password not in text and (token not in url or token not in text), text
    assert "refused" in text
