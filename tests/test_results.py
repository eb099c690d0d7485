"""Reading a job's reported results back from its chief's log, the plot, the UI's words.

The lines written here are the runtime's report format (``tests/runtime/test_runtime_results.py``
makes them with real Keras training); these tests are about reading them safely and once.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tfc_runtime.protocol import RESULT_PREFIX as PREFIX
from tfc_runtime.protocol import report_line

from tfc_jupyter.returns.plot import svg
from tfc_jupyter.returns.results import LOOP, Results, job_results, loss_name, parse
from tfc_jupyter.words import ui_words


def _line(**event: object) -> str:
    return PREFIX + json.dumps(event) + "\n"


def _epoch(fit: int, epoch: int, **metrics: float) -> str:
    return _line(event="epoch", fit=fit, epoch=epoch, time=1.0, metrics=metrics)


def test_only_well_formed_reports_count() -> None:
    assert parse("Epoch 1/3") is None
    assert parse(PREFIX + "{not json") is None
    assert parse(PREFIX + "[1, 2]") is None
    assert parse(PREFIX + '{"no": "event"}') is None
    results = Results()
    assert results.add_line(_epoch(0, 1, loss=0.5, accuracy=0.7).strip())
    # Strings other than the runtime's words for NaN and infinity, and booleans, are dropped.
    bad = {"event": "epoch", "fit": 0, "epoch": 2, "metrics": {"loss": "nan", "ok": True, "x": 1}}
    assert results.add(bad)
    assert results.epochs[-1]["metrics"] == {"x": 1.0}
    assert results.names == ["loss", "accuracy", "x"]
    assert results.last == {"x": 1.0}
    assert not results.add({"event": "saved", "path": 3})  # a path must be a string
    assert results.model_dir is None


def test_nan_and_infinity_are_kept_and_said_where_they_began() -> None:
    """The runtime writes NaN and infinity as ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (a
    report is strict JSON): read back as floats, kept, and flagged at their first epoch, with
    the fit call named when the code made several, and a custom loop's round."""
    results = Results()
    results.add_line(_epoch(0, 1, loss=2.0, accuracy=0.5).strip())
    results.add_line(_epoch(0, 2, loss="Infinity", accuracy=0.5).strip())  # type: ignore[arg-type]
    results.add_line(_epoch(0, 3, loss="NaN", accuracy="-Infinity").strip())  # type: ignore[arg-type]
    assert [e["metrics"]["loss"] for e in results.epochs][:2] == [2.0, float("inf")]
    assert results.flags == ["loss is inf from epoch 2", "accuracy is -inf from epoch 3"]
    results.add_line(_epoch(1, 1, loss=1.0).strip())
    results.add({"event": "metric", "name": "train_loss", "round": 4, "value": "NaN"})
    assert results.flags == [
        "loss is inf from epoch 2 of fit 1",
        "accuracy is -inf from epoch 3 of fit 1",
        "train_loss is NaN from round 4",
    ]
    drawn = svg(results)
    assert drawn is not None and "loss is inf from epoch 2 of fit 1" in drawn
    ET.fromstring(drawn)  # still a well-formed image


def test_a_custom_loops_rounds_become_epochs(tmp_path: Path) -> None:
    """Each metric's Nth round joins the Nth loop epoch, made when first seen; bad rounds are
    dropped; what job_results hands out is a copy the cache never changes under it."""
    log = tmp_path / "chief.log"
    lines = [
        _line(event="metric", name="train_loss", round=1, value=2.5, time=1.0),
        _line(event="metric", name="train_accuracy", round=1, value=0.5, time=1.1),
        _line(event="metric", name="train_loss", round=2, value=1.25, time=2.0),
        _line(event="metric", name="train_loss", round=0, value=9.0),  # no round 0
        _line(event="metric", name="test_loss", round=2, value="nan"),  # not a number
        _line(event="metric", name=7, round=3, value=1.0),  # a name must be a string
    ]
    log.write_text("".join(lines[:3]))
    first = job_results(tmp_path, in_logs=True)
    assert [(e["fit"], e["epoch"]) for e in first.epochs] == [(LOOP, 1), (LOOP, 2)]
    assert first.epochs[0]["metrics"] == {"train_loss": 2.5, "train_accuracy": 0.5}
    assert first.last == {"train_loss": 1.25}
    with log.open("a") as out:
        out.write("".join(lines[3:]))
        out.write(_line(event="metric", name="train_accuracy", round=2, value=0.75))
    again = job_results(tmp_path, in_logs=True)
    assert again.last == {"train_loss": 1.25, "train_accuracy": 0.75}
    assert first.last == {"train_loss": 1.25}  # the earlier copy is unchanged
    assert again.names == ["train_loss", "train_accuracy"]
    assert "<svg" in (svg(again) or "")


@pytest.mark.parametrize(
    ("names", "loss"),
    [
        (["accuracy", "loss", "val_loss"], "loss"),
        (["test_loss", "train_loss", "train_accuracy"], "train_loss"),
        (["val_loss", "test_loss"], "test_loss"),
        (["accuracy"], None),
        ([], None),
    ],
)
def test_the_loss_a_listing_shows(names: list[str], loss: str | None) -> None:
    assert loss_name(names) == loss


def test_a_log_is_read_once_and_a_report_being_written_waits(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    chief = logs / "chief.log"
    chief.write_text("hello\n" + _epoch(0, 1, loss=0.9) + _epoch(0, 2, loss=0.5)[:20])
    assert [e["epoch"] for e in job_results(logs, in_logs=True).epochs] == [1]
    with chief.open("a") as f:  # the rest of the line, then a save
        f.write(_epoch(0, 2, loss=0.5)[20:] + _line(event="saved", path="/m.keras", how="save"))
    results = job_results(logs, in_logs=True)
    assert [e["epoch"] for e in results.epochs] == [1, 2] and results.last == {"loss": 0.5}
    assert results.model_dir == "/m.keras"
    # A copy: what the caller changes is not the cache.
    results.epochs.clear()
    assert len(job_results(logs, in_logs=True).epochs) == 2
    # A log replaced by a shorter one is read again from its start.
    chief.write_text(_epoch(0, 1, loss=0.1))
    assert job_results(logs, in_logs=True).last in (None, {"loss": 0.1})
    assert job_results(logs, in_logs=True).last == {"loss": 0.1}
    # The worker's log is not the job's: only the chief's is read.
    (logs / "worker-0.log").write_text(_epoch(0, 1, loss=9.0))
    assert job_results(logs, in_logs=True).last == {"loss": 0.1}
    assert job_results(tmp_path / "missing", in_logs=True).epochs == []


def test_the_plot_is_a_safe_svg_of_every_metric() -> None:
    results = Results()
    assert svg(results) is None  # nothing before the first epoch
    hostile = "<script>alert(1)</script>"
    for i in range(1, 4):
        results.add(json.loads(_epoch(0, i, loss=1 / i, val_loss=1.2 / i)[len(PREFIX) :]))
    for i in range(1, 4):
        results.add({"event": "epoch", "fit": 1, "epoch": i, "metrics": {hostile: i / 10}})
    results.add({"event": "fit", "fit": 1, "epochs": 3})
    image = svg(results)
    assert image is not None
    root = ET.fromstring(image)  # well-formed XML
    assert root.tag.endswith("svg")
    assert "<script" not in image and "&lt;script&gt;" in image
    texts = "".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    assert "loss" in texts and "metrics" in texts and "epoch 3/3" in texts
    assert "epoch 3/3" not in (svg(results, done=True) or "")
    # Two fit calls: a dashed line where the second starts.
    assert image.count('stroke-dasharray="3,3"') == 2  # one per panel


def _contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two ``#rrggbb`` colours."""

    def luminance(colour: str) -> float:
        channels = [int(colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_plot_reads_on_a_light_and_a_dark_theme() -> None:
    """Issue 38: the curves were a white rectangle in JupyterLab's dark theme. The image has no
    background of its own, every colour it draws with (text, frame, curves, the NaN alert) is at
    least 3:1 against a light theme's white and a dark theme's #212121, and it shrinks to a
    narrow cell."""
    results = Results()
    names = ["loss", "val_loss", "accuracy", "val_accuracy", "auc", "precision", "recall"]
    names += ["top_k", "mae"]
    for i in range(1, 4):
        metrics = {n: (float("nan") if n == "mae" and i == 3 else 1 / i) for n in names}
        results.add({"event": "epoch", "fit": 0, "epoch": i, "metrics": metrics})
    image = svg(results)
    assert image is not None
    root = ET.fromstring(image)
    assert not [e for e in root.iter() if e.tag.endswith("rect") and e.get("fill") not in ("none",)]
    assert "max-width:100%" in (root.get("style") or "")
    colours = {
        value
        for e in root.iter()
        for key in ("fill", "stroke")
        if (value := e.get(key)) and value != "none"
    }
    assert len(colours) >= 8  # ink, the frame, the alert and the curves' colours
    for colour in colours:
        assert re.fullmatch(r"#[0-9a-f]{6}", colour), colour
        for background in ("#ffffff", "#212121"):
            assert _contrast(colour, background) >= 3.0, (colour, background)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("drop --workers (the TPU's cores are the replicas)", "set Workers to 0 (the TPU's"),
        ("add --gpus N", "set GPUs per machine"),
        ("pass --project PROJECT_ID, or set GOOGLE_CLOUD_PROJECT", "set Project, or set"),
        ("use --backend vertex for GPUs", "set Backend to vertex for GPUs"),
        ("add --tpu v3-8 (or another TPU type)", "set TPU to v3-8 (or another"),
        ("use --tpu for the chief and drop --workers", "set TPU for the chief and set Workers"),
        ("--tpu and --gpus together", "TPU and GPUs per machine together"),
        ("pass --include PATH to ship it anyway", "pass --include PATH to ship it anyway"),
        ("no flags here", "no flags here"),
    ],
)
def test_fixes_are_said_in_the_uis_words(text: str, words: str) -> None:
    import tfc_jupyter.job.options  # noqa: F401  (the option table teaches words its labels)

    assert ui_words(text).startswith(words)


@pytest.mark.slow
def test_a_model_saved_under_gs_is_downloaded_and_loaded(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Vertex AI job saves to ``gs://`` (its AIP_MODEL_DIR): ``job.model_dir`` names it, and
    ``job.load_model()`` downloads it through our Cloud Storage client (here from the test
    storage server, over the wire) and loads it: a ``.keras`` file it reported saving, and a
    SavedModel folder under ``--base-output-dir``."""
    import numpy as np
    import tensorflow as tf
    from gcp_server import GcpServer

    from tfc_jupyter.jobs import Job, store_for
    from tfc_jupyter.store.records import JobRecord, JobState

    server = GcpServer(buckets=("models",)).start()
    for name, value in {
        "TFC_CLOUDBUILD_ENDPOINT": server.url,
        "TFC_CLOUDBUILD_BACKOFF": "0.05",
        "TFC_CLOUDBUILD_RETRY_TOTAL": "5",
        "TFC_CLOUDBUILD_TIMEOUT": "10",
    }.items():
        monkeypatch.setenv(name, value)
    try:
        model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
        x = np.array([[1.0, 2.0], [3.0, -1.0]], dtype="float32")
        want = model.predict(x, verbose=0)
        model.save(tmp_path / "model.keras")
        server.put("models", "run1/model/model.keras", (tmp_path / "model.keras").read_bytes())
        model.export(str(tmp_path / "saved"))  # a SavedModel folder with a serve() function
        for file in (tmp_path / "saved").rglob("*"):
            if file.is_file():
                name = f"run2/model/{file.relative_to(tmp_path / 'saved').as_posix()}"
                server.put("models", name, file.read_bytes())
        store = store_for(tmp_path / "home")
        for job_id, base, saved in (
            ("vx-keras", "gs://models/run1", "gs://models/run1/model/model.keras"),
            ("vx-saved", "gs://models/run2", None),
        ):
            job_dir = tmp_path / "home" / "jobs" / job_id
            (job_dir / "logs").mkdir(parents=True)
            report = {"event": "saved", "path": saved, "how": "save", "library": "keras"}
            (job_dir / "logs" / "chief.log").write_text(
                "Epoch 1/1\n" + (_line(**report) if saved else "")
            )
            store.create(
                JobRecord(
                    id=job_id,
                    name=job_id,
                    backend="vertex",
                    state=JobState.SUCCEEDED,
                    spec={"project": "proj", "base_output_dir": base},
                    job_dir=str(job_dir),
                    log_dir=str(job_dir / "logs"),
                )
            )
        keras_job = Job("vx-keras", store)
        assert keras_job.model_dir == "gs://models/run1/model/model.keras"
        assert keras_job.load_model().predict(x, verbose=0) == pytest.approx(want)
        saved_job = Job("vx-saved", store)
        assert saved_job.model_dir == "gs://models/run2/model/"
        loaded = saved_job.load_model()
        assert np.asarray(loaded.serve(tf.constant(x))) == pytest.approx(want)
    finally:
        server.stop()


_EVENTS = st.dictionaries(
    st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=20)), max_size=3
).map(lambda d: {**d, "event": "epoch"})


@pytest.mark.item("printed look-alikes of reports are only lines", suite="security")
@settings(max_examples=300, deadline=None)
@given(
    event=_EVENTS,
    key=st.text("0123456789abcdef", min_size=32, max_size=32),
    other=st.text("0123456789abcdef", min_size=32, max_size=32),
    before=st.text(max_size=20).filter(lambda t: "\n" not in t),
    cut=st.integers(0, 200),
    char=st.characters(),
)
def test_a_signed_report_reads_only_with_its_key_and_unchanged(
    event: dict[str, Any], key: str, other: str, before: str, cut: int, char: str
) -> None:
    """A report line signed with the job's key (Vertex AI's reports, which come with the logs)
    reads back with that key, after whatever the code left unfinished on the line; with
    another key, unsigned, or with any one character of it changed, it is only a line."""
    text = json.dumps(event, ensure_ascii=False)
    line = before + report_line(text, key)
    assert parse(line, key) == event
    assert parse(before + PREFIX + text, key) is None  # unsigned: what printed look-alikes are
    if other != key:
        assert parse(line, other) is None
    at = len(before) + len(PREFIX) + cut % (len(line) - len(before) - len(PREFIX))
    changed = line[:at] + char + line[at + 1 :]
    if changed != line:
        assert parse(changed, key) is None, (line, changed)
