"""The launch panel, driven in Python: its model, launcher, watch, memory, widgets and magics.

Jobs are real local jobs (small scripts, strategy ``none`` so TensorFlow is not imported); every
wait has a deadline. The memory: the panel's output holding its line, with a recorder and in a
real kernel (nbclient), saved and read back. The browser tests are tests/test_panel_browser.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jobutil import job_pids, wait_gone, write_notebook

from tfc_jupyter.config import Settings, load_settings
from tfc_jupyter.errors import TfcError
from tfc_jupyter.job import catalog, options, prices
from tfc_jupyter.job.spec import BackendName, Decisions, Strategy
from tfc_jupyter.jobs import Job, launch, store_for
from tfc_jupyter.notebook import capture
from tfc_jupyter.panel import PanelModel, build_model
from tfc_jupyter.panel.launcher import DOUBLE_CLICK_S, JobWatch, Launcher
from tfc_jupyter.panel.memory import MIME_TYPE, ChoicesDisplay
from tfc_jupyter.store.records import JobState

pytestmark = pytest.mark.usefixtures("tfc_env")

DEADLINE_S = 90
QUICK = "import os\nprint('hello from', os.environ['TFC_JOB_ID'], flush=True)"
STEPS = "import time\nfor i in range(6):\n    print(f'line {i}', flush=True)\n    time.sleep(0.4)"
SLEEPY = "import time\nprint('started', flush=True)\ntime.sleep(120)"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The job store's folder (the panel remembers choices there too)."""
    return tmp_path / "home"


def _model(
    tmp_path: Path, settings: Settings, *cells: str, name: str = "demo", **kwargs: Any
) -> PanelModel:
    """A panel model over a notebook of ``cells`` (the job: every cell, as %tfc_panel takes it)."""
    nb = write_notebook(tmp_path / f"{name}.ipynb", *cells).resolve()

    def select() -> capture.Selection:
        return capture.select_cells(capture.read_notebook(nb), path=nb, how="test")

    return build_model(settings, select=select, notebook=nb, **kwargs)


def _spec_error(line: str, settings: Settings) -> str:
    """The error the magic's own validation gives for a %%tfc_run line, in the panel's words."""
    with pytest.raises(TfcError) as info:
        from tfc_jupyter.job.spec import check_runnable

        check_runnable(options.to_spec(options.parse_line(line), settings))
    return info.value.ui_text()


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def watches() -> Iterator[list[JobWatch]]:
    """Watches to stop at teardown (a failing test must not leave threads polling)."""
    made: list[JobWatch] = []
    yield made
    for watch in made:
        watch.stop()
        watch.join(5)


# ---------------------------------------------------------------- choices and validation
def test_every_choice_comes_from_the_catalog(tmp_path: Path, settings: Settings) -> None:
    model = _model(tmp_path, settings, QUICK)
    values = {name: [o.value for o in model.options(name)] for name in ("backend", "strategy")}
    assert values["backend"] == [b.value for b in BackendName]
    assert values["strategy"] == [s.value for s in Strategy]
    machines = [o.value for o in model.options("machine")]
    presets = [m.name for m in catalog.catalog_rows() if not m.is_tpu]
    assert machines[0] == "" and machines[1 : 1 + len(presets)] == presets
    assert "n1-standard-16" in machines and not any(v.startswith("TPU") for v in machines)
    assert [o.value for o in model.options("gpu_type")][1:] == list(catalog.OFFERED_GPU_TYPES)
    assert [o.value for o in model.options("tpu")][1:] == list(catalog.TPU_TYPES)
    assert [o.value for o in model.options("gpus")] == [0, 1, 2, 4, 8, 16]  # 16: a2-megagpu-16g
    assert [o.value for o in model.options("worker_machine")][1:] == machines[1:]
    labels = {o.value: o.label for o in model.options("machine")}
    assert labels[""] == "default (CPU)"
    assert labels["H200_8X"] == (  # no H200 price read (tests/test_prices.py)
        f"H200_8X · {catalog.PRESETS['H200_8X'].describe()} · price not listed"
    )
    assert labels["T4_1X"].endswith(f"${catalog.PRESETS['T4_1X'].price_per_hour:,.2f}/h")
    assert labels["CPU"].endswith(f"${catalog.PRESETS['CPU'].price_per_hour:,.2f}/h")


def test_impossible_choices_are_flagged_as_the_user_picks(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7")  # GPUs, as on a GPU machine
    model = _model(tmp_path, settings, QUICK)
    assert model.check.ok and model.check.error is None

    check = model.update(gpus=4, gpu_type="A100_80GB")
    assert check.ok
    check = model.update(gpu_type="P4", gpus=8)
    assert not check.ok and check.field == "gpus"
    assert check.error == _spec_error("--gpus 8 --gpu-type P4", settings)
    marked = {o.value: o.reason for o in model.options("gpu_type")}
    assert marked["V100"] is None and "P4" in marked  # V100 offers 8; P4 shown as it is named
    assert "K80" not in marked and "P100" not in marked  # retired, and legacy not named
    assert marked["T4"] == _spec_error("--gpus 8 --gpu-type T4", settings)

    check = model.update(gpus=0, gpu_type="", tpu="v3-8")
    assert check.field == "backend"
    assert check.error == _spec_error("--tpu v3-8", settings)  # the local backend has no TPU
    backends = {o.value: o for o in model.options("backend")}
    assert backends["vertex"].reason is None and backends["local"].reason
    assert backends["local"].label.startswith(
        "✗ local (this machine) — the local backend cannot run TPU jobs"
    )

    check = model.update(backend="vertex", workers=2)
    assert check.field == "workers"
    assert check.error == _spec_error("--tpu v3-8 --backend vertex --workers 2", settings)
    assert "set Workers to 0" in check.error and "--workers" not in check.error  # its words
    check = model.update(workers=0, strategy="mirrored")
    assert check.field == "strategy" and "cannot drive a TPU" in (check.error or "")
    check = model.update(tpu="", strategy="tpu")
    assert check.error == _spec_error("--strategy tpu --backend vertex", settings)

    check = model.update(strategy="auto", label="team=ml, Run=1")
    assert check.field == "label" and "label key 'Run'" in (check.error or "")
    check = model.update(label="team=ml, run=1", region="mars")
    assert check.field == "region"
    check = model.update(region="europe-west4", requirements="missing.txt")
    assert check.field == "requirements" and "missing.txt" in (check.error or "")
    check = model.update(requirements="")
    # What is left is what launching would refuse, said now, in the launch's words.
    assert check.field == "project" and model.summary() is not None
    assert (check.error or "").startswith("a Vertex AI job needs a Google Cloud project")


def test_a_spot_job_s_summary_says_from_its_floor(tmp_path: Path, settings: Settings) -> None:
    from tfc_jupyter.panel.view import LaunchPanel

    base = options.JobOptions.from_line("--spot")  # a %%tfc_run --spot line the panel starts from
    model = _model(tmp_path, settings, QUICK, base=base)
    model.update(backend="vertex", gpus=1, gpu_type="T4", project="my-proj-1")
    summary = model.summary()
    assert summary is not None and summary["cost_is_floor"]
    floor = prices.pool_price("n1-standard-8", "NVIDIA_TESLA_T4", 1, scheduling="spot")
    assert summary["cost_per_hour"] == pytest.approx(floor, abs=1e-6)
    shown = LaunchPanel(model, store_for(tmp_path / "home"))._summary_html()
    assert f"From ${floor:,.2f} per hour" in shown and "About $" not in shown


def test_summary_shows_strategy_pools_cost_and_the_equivalent_line(
    tmp_path: Path, settings: Settings
) -> None:
    model = _model(tmp_path, settings, QUICK)
    model.update(backend="vertex", workers=2, gpus=1, gpu_type="T4", label="team=ml")
    summary = model.summary()
    assert summary is not None
    assert summary["strategy"] == "multi_worker_mirrored (auto)"
    t4 = catalog.PRESETS["T4_1X"]
    assert [(p["role"], p["replicas"], p["machine"]) for p in summary["pools"]] == [
        ("chief", 1, "T4_1X"),
        ("worker", 2, "T4_1X"),
    ]
    disk = prices.boot_disk_price("pd-ssd", 100) or 0.0  # each replica's boot disk
    one = (t4.price_per_hour or 0) + disk
    assert summary["billed"] and summary["cost_per_hour"] == pytest.approx(3 * one, abs=1e-5)
    assert [p["cost_per_hour"] for p in summary["pools"]] == pytest.approx([one, 2 * one])
    line = summary["line"]
    assert line == "%%tfc_run --gpus 1 --gpu-type T4 --workers 2 --backend vertex --label team=ml"
    # Pasted into a cell, the line makes the very same job.
    pasted = options.to_spec(options.parse_line(line.removeprefix("%%tfc_run")), settings)
    assert model.check.spec is not None
    # (What planning decides from the code is not in the line: the same code decides it again.)
    assert pasted.decided == Decisions()
    decided = {"decided": pasted.to_dict()["decided"]}
    assert pasted.to_dict() == {**model.check.spec.to_dict(), "name": pasted.name, **decided}
    assert summary["cells"] == [1] and summary["notebook"] == "demo.ipynb"
    assert any("no Google Cloud project" in w for w in summary["warnings"])
    model.update(gpus=3)
    assert model.summary() is None  # no summary for a job that cannot be made
    # On this machine a job costs nothing, and says so (the Vertex AI price only as an aside).
    model.update(backend="local", gpus=0, gpu_type="", workers=0, machine="A100_8X")
    local = model.summary()
    assert local is not None and not local["billed"] and local["cost_per_hour"] == 0.0
    assert [p["cost_per_hour"] for p in local["pools"]] == [0.0]
    disk = prices.boot_disk_price("pd-ssd", 100) or 0.0  # the machine and its boot disk
    a100 = (catalog.PRESETS["A100_8X"].price_per_hour or 0) + disk
    assert local["vertex_cost_per_hour"] == pytest.approx(a100, abs=1e-5)
    model.update(machine="H100_8X")
    h100 = model.summary()
    assert h100 is not None and h100["cost_per_hour"] == 0.0
    expected = (catalog.PRESETS["H100_8X"].price_per_hour or 0) + disk
    assert h100["vertex_cost_per_hour"] == pytest.approx(expected, abs=1e-5)


def test_defaults_come_from_the_same_configuration_as_the_magic(
    tmp_path: Path, tfc_env: Path
) -> None:
    env = {"TFC_BACKEND": "vertex", "TFC_REGION": "europe-west4", "TFC_MACHINE": "T4_1X"}
    settings = load_settings(environ=env, include_server=False)
    model = _model(tmp_path, settings, QUICK)
    assert (model.choices.backend, model.choices.region) == ("vertex", "europe-west4")
    assert model.line() == "%%tfc_run"  # all defaults: the bare magic makes the same job
    summary = model.summary()
    assert summary is not None and summary["pools"][0]["machine"] == "T4_1X"
    assert model.options("machine")[0].label == "default (T4_1X)"
    model.update(backend="local")
    assert model.line() == "%%tfc_run --backend local"


def test_options_to_line_reads_back(settings: Settings) -> None:
    lines = [
        "",
        "--tpu v5e-4 --backend vertex --label a=1 --label b=2",
        "--workers 2 --gpus 1 --args '--epochs 3 --name \"x y\"' --no-wait --spot",
        "--requirements 'my reqs.txt' --timeout 2h --region europe-west4",
    ]
    for text in lines:
        ns = options.parse_line(text)
        line = ns.to_line()
        assert options.parse_line(line.removeprefix("%%tfc_run")) == ns, line
    assert options.parse_line("--dry-run --interactive").to_line() == "%%tfc_run"


# ---------------------------------------------------------------- pre-filling and memory
def _save_with_output(path: Path, bundle: dict[str, Any]) -> None:
    """Save the notebook as a frontend does after the panel showed ``bundle``: with the output."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nbformat.write(nb, path)


def test_choices_are_remembered_in_the_panels_saved_output(
    tmp_path: Path, settings: Settings
) -> None:
    model = _model(tmp_path, settings, QUICK)
    sent = _Published()
    model.display = ChoicesDisplay(model.notebook, publish=sent)
    model.display.show(model.line())
    model.update(workers=1, strategy="none", label="team=ml")
    line = "%%tfc_run --workers 1 --strategy none --label team=ml"
    assert sent[-1][0][MIME_TYPE]["line"] == line
    # Not saved yet: a new kernel (a new model over the same file) does not know them.
    assert _model(tmp_path, settings, QUICK).choices.workers == 0
    # Saved with the notebook: a new kernel's panel starts from them.
    nb = write_notebook(tmp_path / "demo.ipynb", QUICK)
    _save_with_output(nb, sent[-1][0])
    again = build_model(settings, select=lambda: _select(nb.resolve()), notebook=nb.resolve())
    assert (again.choices.workers, again.choices.strategy, again.choices.label) == (
        1,
        "none",
        "team=ml",
    )
    assert again.line() == line
    assert _model(tmp_path, settings, QUICK, name="other").choices.workers == 0
    # Flags given now win over memory; the cell's own --interactive flags replace it.
    given = options.JobOptions.from_words(["--workers", "3"])
    remembered = build_model(
        settings, select=lambda: _select(nb.resolve()), notebook=nb.resolve(), given=given
    )
    assert (remembered.choices.workers, remembered.choices.strategy) == (3, "none")
    cell = options.parse_line("--gpus 1")
    fresh = build_model(
        settings, select=lambda: _select(nb), notebook=nb, base=cell, remember=False
    )
    assert (fresh.choices.workers, fresh.choices.gpus, fresh.choices.strategy) == (0, 1, "auto")
    # A line edited into nonsense is ignored.
    _save_with_output(nb, {MIME_TYPE: {"version": 2, "notebook": None, "line": "%%tfc_run --x"}})
    assert build_model(settings, select=lambda: _select(nb), notebook=nb).choices.workers == 0


def _select(nb: Path) -> capture.Selection:
    return capture.select_cells(capture.read_notebook(nb), path=nb, how="test")


class _Published(list[tuple[dict[str, Any], str, bool]]):
    """What a :class:`ChoicesDisplay` sends: ``(bundle, display_id, update)``."""

    def __call__(self, bundle: dict[str, Any], display_id: str, update: bool) -> None:
        self.append((json.loads(json.dumps(bundle)), display_id, update))


def test_choice_changes_update_one_display_with_the_line(
    tmp_path: Path, settings: Settings
) -> None:
    from tfc_jupyter.panel.view import LaunchPanel

    model = _model(tmp_path, settings, QUICK)
    assert model.display is not None
    sent = _Published()
    model.display = ChoicesDisplay(model.notebook, publish=sent)
    model.update(workers=5)
    assert sent == []  # not displayed yet: nothing to update
    panel = LaunchPanel(model, store_for(tmp_path / "home"))
    try:
        model.display.show(model.line())  # as LaunchPanel._ipython_display_ does
        (bundle, display_id, update), *_ = sent
        assert display_id.startswith("tfc-panel-choices-") and update is False
        assert bundle[MIME_TYPE] == {
            "version": 2,
            "notebook": str(model.notebook),
            "line": "%%tfc_run --workers 5",
        }
        panel.controls["workers"].value = 2
        panel.controls["region"].value = "europe-west4"
        panel.controls["region"].value = "europe-west4"  # unchanged: nothing sent
        assert [(i, u) for _, i, u in sent] == [(display_id, False), *[(display_id, True)] * 2]
        line = "%%tfc_run --workers 2 --region europe-west4"
        assert sent[-1][0][MIME_TYPE]["line"] == line
        assert sent[-1][0]["text/plain"] == f"tfc_jupyter launch panel: {line}"
        # A broken publisher never breaks the panel.
        model.display = ChoicesDisplay(model.notebook, publish=_fail)
        model.display.shown = True
        assert model.update(workers=1).ok
    finally:
        panel.close()


def _fail(*_: Any) -> None:
    raise RuntimeError("no frontend")


NB_PANEL = ("%load_ext tfc_jupyter", "%tfc_panel")
NB_CHANGE = "c = _tfc_panel.controls\nc['workers'].value = 2\nc['region'].value = 'europe-west4'"


@pytest.mark.slow
def test_kernel_keeps_the_line_in_one_output_that_a_save_keeps(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    """A real kernel (nbclient): %tfc_panel shows one output with a display_id; a change made in
    another cell updates that output (update_display_data), no new output piles up; saved, the
    notebook is valid, nbconvert shows the text/plain line, and a new panel starts from it."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter, MarkdownExporter

    path = write_notebook(tmp_path / "nb.ipynb", *NB_PANEL, "x = 1", NB_CHANGE, "print('end')")
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    messages: list[tuple[int, str, str | None, dict[str, Any]]] = []

    class Client(NotebookClient):
        def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
            content = msg.get("content", {})
            if MIME_TYPE in content.get("data", {}):
                display_id = (content.get("transient") or {}).get("display_id")
                data = content["data"][MIME_TYPE]
                messages.append((cell_index, msg["msg_type"], display_id, data))
            return super().process_message(msg, cell, cell_index)

    nb = nbformat.read(path, as_version=4)
    Client(nb, timeout=DEADLINE_S, resources={"metadata": {"path": str(tmp_path)}}).execute()

    (cell, kind, display_id, data), *updates = messages
    assert (cell, kind) == (1, "display_data") and display_id
    assert data["notebook"] == str(path.resolve())
    assert [(c, k, i) for c, k, i, _ in updates] == [(3, "update_display_data", display_id)] * 2
    line = "%%tfc_run --workers 2 --region europe-west4"
    assert updates[-1][3]["line"] == line
    # Updated in place: the panel's cell holds one output, with the last line.
    ours = [o for c in nb.cells for o in c.get("outputs", []) if MIME_TYPE in o.get("data", {})]
    assert len(ours) == 1 and ours[0] in nb.cells[1].outputs
    assert ours[0].data[MIME_TYPE]["line"] == line
    assert nb.cells[3].outputs == [] and nb.cells[4].outputs[0].text == "end\n"
    # The kernel never writes the notebook file; saved (as a frontend saves), it is valid ...
    assert ours[0] not in nbformat.read(path, as_version=4).cells[1].outputs
    nbformat.validate(nb)
    nbformat.write(nb, path)
    text = f"tfc_jupyter launch panel: {line}"
    assert ours[0].data["text/plain"] == text
    for exporter in (HTMLExporter(), MarkdownExporter()):
        body, _ = exporter.from_notebook_node(nb)
        assert text in body
    # ... and the next panel for it, in any kernel, starts from the saved line.
    again = build_model(settings, select=lambda: _select(path), notebook=path)
    assert (again.choices.workers, again.choices.region) == (2, "europe-west4")


# ---------------------------------------------------------------- launch
@pytest.mark.slow
def test_a_double_click_launches_one_job(tmp_path: Path, settings: Settings) -> None:
    model = _model(tmp_path, settings, QUICK)
    model.update(strategy="none")
    store = store_for(tmp_path / "home")
    launcher = Launcher(model, store)
    assert launcher.click() is True
    assert launcher.click() is False  # the second click of a double click
    assert launcher.wait(DEADLINE_S) == "launched", launcher.error
    assert launcher.click() is False  # still within the double-click window
    assert len(store.list()) == 1 and launcher.launched == [store.list()[0].id]
    time.sleep(DOUBLE_CLICK_S)
    assert launcher.click() is True  # a later click is a new job
    assert launcher.wait(DEADLINE_S) == "launched"
    assert len(store.list()) == 2 and len(set(launcher.launched)) == 2
    for record in store.list():
        assert Job(record.id, store).wait(DEADLINE_S).state is JobState.SUCCEEDED


@pytest.mark.slow
def test_launch_stages_then_watch_to_success_per_replica(
    tmp_path: Path, settings: Settings, watches: list[JobWatch]
) -> None:
    model = _model(tmp_path, settings, STEPS)
    model.update(workers=1, strategy="none")
    store = store_for(tmp_path / "home")
    seen: list[tuple[str, ...]] = []
    launcher = Launcher(model, store)
    launcher.on_change = lambda: seen.append(tuple(s.status for s in launcher.stages))
    launcher.click()
    assert launcher.wait(DEADLINE_S) == "launched", launcher.error
    assert [(s.name, s.status) for s in launcher.stages] == [
        ("convert", "done"),
        ("build", "skipped"),
        ("push", "skipped"),
        ("submit", "done"),
    ]
    assert ("running", "pending", "pending", "pending") in seen  # converting, shown as it ran
    assert launcher.stage("build").detail == "local jobs run in this kernel's environment"
    assert launcher.job is not None and launcher.stage("submit").detail == launcher.job.id

    snapshots: list[tuple[JobState, int]] = []
    watch = JobWatch(
        launcher.job,
        on_update=lambda w: snapshots.append(
            (w.state, sum(x.startswith("line") for x in w.lines.get("chief", ())))
        ),
        poll_s=0.1,
    )
    watches.append(watch)
    watch.start()
    assert watch.join(DEADLINE_S), "the watch did not end with the job"
    assert watch.state is JobState.SUCCEEDED and watch.ended and not watch.running
    for replica in ("chief", "worker-0"):
        lines = [x for x in watch.lines[replica] if x.startswith("line")]
        assert lines == [f"line {i}" for i in range(6)]
    # All replicas: a line both printed alike once, the replicas named (each kept as printed).
    assert "[chief, worker-0] line 5" in watch.text(verbose=False)
    assert "[worker-0] line 5" in watch.text(verbose=True)
    # The runtime's start-up line is kept, and shown only when asked for.
    assert "[chief] [tfc_runtime] task" in watch.text(verbose=True)
    assert "[tfc_runtime] task" not in watch.text(verbose=False)
    assert "[tfc_runtime] task" not in watch.text("chief", verbose=False)
    # Lines arrived while the job ran, not all at the end.
    assert any(state is JobState.RUNNING and 0 < n < 6 for state, n in snapshots), snapshots
    assert watch.record.elapsed > 1.5


@pytest.mark.slow
def test_failures_are_shown_in_place_at_their_stage(tmp_path: Path, settings: Settings) -> None:
    # A conversion problem is flagged before launch, and again if launched anyway.
    model = _model(tmp_path, settings, "x = 1\n%store x")
    assert not model.check.ok and "%store cannot run in a job" in (model.check.error or "")
    launcher = Launcher(model, store_for(tmp_path / "home"))
    launcher.click()
    assert launcher.wait(DEADLINE_S) == "failed"
    assert launcher.stage("convert").status == "failed"
    assert launcher.error == model.check.error
    # Saving the fixed notebook is noticed (the file changed) and the job can be made.
    time.sleep(0.05)
    write_notebook(tmp_path / "demo.ipynb", "x = 1")
    assert model.update(strategy="none").ok

    # A requirement this kernel lacks: flagged before launch in the local backend's words,
    # and if launched anyway, refused at submit; nothing runs.
    model = _model(tmp_path, settings, "%pip install no-such-package-tfc==1.0\n" + QUICK)
    model.update(strategy="none")
    assert not model.check.ok and "lacks: no-such-package-tfc==1.0" in (model.check.error or "")
    launcher = Launcher(model, store_for(tmp_path / "home"))
    time.sleep(DOUBLE_CLICK_S)
    launcher.click()
    assert launcher.wait(DEADLINE_S) == "failed"
    assert [s.status for s in launcher.stages] == ["done", "skipped", "skipped", "failed"]
    assert launcher.error is not None
    assert "lacks: no-such-package-tfc==1.0" in launcher.error and "Fix:" in launcher.error
    assert launcher.error == model.check.error  # the same words before and at launch
    assert "\n" not in launcher.error and not store_for(tmp_path / "home").list()


# ---------------------------------------------------------------- watch, cancel, re-attach
@pytest.mark.slow
def test_cancel_from_the_panel_stops_every_process(
    tmp_path: Path, settings: Settings, watches: list[JobWatch]
) -> None:
    model = _model(tmp_path, settings, SLEEPY)
    model.update(workers=1, strategy="none")
    launcher = Launcher(model, store_for(tmp_path / "home"))
    launcher.click()
    assert launcher.wait(DEADLINE_S) == "launched", launcher.error
    assert launcher.job is not None
    watch = JobWatch(launcher.job, poll_s=0.1)
    watches.append(watch)
    watch.start()
    _wait(lambda: "started" in watch.lines.get("worker-0", ()), DEADLINE_S, "the job to start")
    record = watch.cancel()
    assert record is not None and record.state is JobState.CANCELLED
    assert watch.join(10) and watch.state is JobState.CANCELLED
    assert wait_gone(job_pids(launcher.job.record())) == []


@pytest.mark.slow
def test_reopened_panel_lists_earlier_jobs_and_attaches(
    tmp_path: Path, settings: Settings, watches: list[JobWatch]
) -> None:
    nb = write_notebook(tmp_path / "demo.ipynb", STEPS, "%%tfc_run --strategy none --workers 1")
    home = tmp_path / "home"
    # A kernel launches the job and dies at once (as a restarted kernel does).
    kernel = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from jobutil import plan_for
        from tfc_jupyter.jobs import launch, store_for
        job = launch(plan_for(Path({str(nb)!r})), store=store_for({str(home)!r}))
        print(job.id)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", kernel], capture_output=True, text=True, timeout=DEADLINE_S
    )
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip().splitlines()[-1]
    # The new kernel's panel lists it (from the records) and attaches while it runs.
    from tfc_jupyter.panel.view import LaunchPanel

    store = store_for(home)
    panel = LaunchPanel(_model(tmp_path, settings, STEPS), store)
    try:
        listed = dict((v, k) for k, v in panel.jobs.options)
        assert listed[job_id].startswith(f"• {job_id} · local · ")
        panel.jobs.value = job_id
        panel.attach_button.click()
        assert panel.watch is not None and panel.watch.job.id == job_id
        watches.append(panel.watch)
        assert panel.watch.join(DEADLINE_S)
        assert panel.watch.state is JobState.SUCCEEDED
        assert "line 5" in panel.watch.text("worker-0")
        assert "succeeded" in panel.state.value and "line 5" in panel.log.value
    finally:
        panel.close()


# ---------------------------------------------------------------- the widgets
def test_widgets_show_choices_reasons_and_block_launch(tmp_path: Path, settings: Settings) -> None:
    from tfc_jupyter.panel.view import LaunchPanel

    store = store_for(tmp_path / "home")
    panel = LaunchPanel(_model(tmp_path, settings, QUICK), store)
    try:
        assert not panel.launch_button.disabled
        assert "<code class='tfc-line'" in panel.summary.value
        panel.controls["tpu"].value = "v5e-4"
        error = panel.model.check.error or ""
        assert panel.launch_button.disabled and error.startswith("the local backend cannot")
        assert error.replace("'", "&#x27;") in panel.errors["backend"].value
        assert "Cannot launch" in panel.message.value
        local = dict(panel.controls["backend"].options)
        assert any(label.startswith("✗ local") for label in local)
        panel.controls["backend"].value = "vertex"
        assert panel.errors["backend"].value == ""  # Vertex AI takes the TPU ...
        assert "tpu (auto)" in panel.summary.value and "--tpu v5e-4" in panel.summary.value
        # ... and launching it needs a project: said before Launch, as the launch would say it
        assert panel.launch_button.disabled and "project" in (panel.model.check.error or "")
        panel.controls["workers"].value = 1
        assert panel.launch_button.disabled and panel.errors["workers"].value
    finally:
        panel.close()


@pytest.mark.slow
def test_widgets_double_click_launch_watch_and_close(
    tmp_path: Path, settings: Settings, watches: list[JobWatch]
) -> None:
    from tfc_jupyter.panel.view import LaunchPanel

    store = store_for(tmp_path / "home")
    panel = LaunchPanel(_model(tmp_path, settings, STEPS), store)
    try:
        panel.controls["strategy"].value = "none"
        panel.controls["workers"].value = 1
        panel.launch_button.click()
        panel.launch_button.click()
        assert panel.launch_button.disabled or panel.launcher.state == "launched"
        assert panel.launcher.wait(DEADLINE_S) == "launched"
        _wait(lambda: panel.watch is not None, 10, "the panel to watch the job")
        assert panel.watch is not None
        watches.append(panel.watch)
        assert len(store.list()) == 1
        _wait(lambda: "line 0" in panel.log.value, DEADLINE_S, "the first lines in the log view")
        assert panel.watch.running  # still going: the view updated while the job ran
        panel.replicas.value = "worker-0"
        assert "[chief]" not in panel.log.value
        assert panel.progress.value == 100 and "✓ submit" in panel.stages.value
        assert panel.watch.join(DEADLINE_S) and "succeeded" in panel.state.value
        assert panel.replicas.options == ("all", "chief", "worker-0")
        assert any(job.state is JobState.SUCCEEDED for job in store.list())
        assert "succeeded" in dict((v, k) for k, v in panel.jobs.options)[store.list()[0].id]
    finally:
        panel.close()
    assert panel.watch is not None and not panel.watch.running


@pytest.mark.slow
def test_closing_the_panel_stops_watching_but_not_the_job(
    tmp_path: Path, settings: Settings
) -> None:
    from tfc_jupyter.panel.view import LaunchPanel

    nb = write_notebook(tmp_path / "demo.ipynb", SLEEPY, "%%tfc_run --strategy none")
    store = store_for(tmp_path / "home")
    from jobutil import plan_for

    job = launch(plan_for(nb), store=store)
    try:
        panel = LaunchPanel(_model(tmp_path, settings, SLEEPY), store)
        watch = panel.attach(job)
        _wait(lambda: "started" in watch.text(), DEADLINE_S, "the job to print")
        panel.close()
        assert watch.join(5) and not watch.running
        assert not job.record().state.is_terminal()
    finally:
        job.cancel()
    assert wait_gone(job_pids(job.record())) == []


# ---------------------------------------------------------------- the magics
MAGICS = """
import json, os, sys
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.error import UsageError
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "tfc_jupyter")
out = {"widgets_at_load": "ipywidgets" in sys.modules,
       "line": sorted(ip.magics_manager.magics["line"])}
ip.run_line_magic("tfc_panel", "--workers 1 --backend vertex")
m = ip.user_ns["_tfc_panel"].model
out["panel"] = [m.choices.workers, m.choices.backend, m.line(), m.summary()["cells"]]
ip.run_cell_magic("tfc_run", "--interactive --strategy none --workers 2", "print('body')")
m = ip.user_ns["_tfc_panel"].model
out["interactive"] = [m.choices.workers, m.choices.strategy, m.summary()["cells"]]
try:
    ip.run_line_magic("tfc_panel", "--gpus 3 --no-such-flag")
except UsageError as exc:
    out["bad"] = str(exc)
print(json.dumps(out))
"""


def test_magics_open_prefilled_panels_and_load_no_widgets(tmp_path: Path, tfc_env: Path) -> None:
    nb = write_notebook(
        tmp_path / "nb.ipynb", "x = 1", "%tfc_panel", "y = 2", "%%tfc_run --workers 1\nprint(x)"
    )
    env = {**__import__("os").environ, "JPY_SESSION_NAME": str(nb)}
    out = subprocess.run(
        [sys.executable, "-c", MAGICS],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["widgets_at_load"] is False and "tfc_panel" in result["line"]
    # %tfc_panel: the notebook's first %%tfc_run cell and those above, flags given win.
    assert result["panel"] == [1, "vertex", "%%tfc_run --workers 1 --backend vertex", [1, 2, 3, 4]]
    # %%tfc_run --interactive: the cell's flags; no job is launched.
    assert result["interactive"] == [2, "none", [1, 2, 3, 4]]
    assert "unrecognized arguments: --no-such-flag" in result["bad"]
    assert store_for(__import__("os").environ["TFC_JUPYTER_HOME"]).list() == []


def test_a_sweep_picked_in_the_panel_makes_the_cells_flags_and_can_launch(
    tmp_path: Path, settings: Settings
) -> None:
    """The Sweep section's fields make the cell's --sweep flags; on this machine a sweep is
    trials a driver launches (tests/test_panel_sweep.py launches one), so Launch is offered."""
    model = _model(tmp_path, settings, "lr = 0.1\nprint(lr)")
    check = model.update(sweep="lr=[0.1, 0.2]; ", metric="loss", trials=2)
    assert check.ok and check.plan is not None and check.plan.sweep is not None, check
    assert model.line() == "%%tfc_run --sweep 'lr=[0.1, 0.2]' --trials 2 --metric loss"
