"""The launch form and the sidebar explain themselves at the widths they get (issue 51), in a real
JupyterLab driven through Debian chromium.

The form at 575 px and 800 px page widths: every field is in view without horizontal scrolling,
the longest machine choice included (its details in a hint under the select). Each error the
form meets that one change fixes (GPUs on this machine, a TPU on this machine, a label on Vertex
AI that Google Cloud refuses) offers that change as a button, in the form's words, and a click
makes the error go; a local job's label ``lr=0.01`` is no error. The sidebar at its default
width: every row shows its whole short id (the one ``%tfc_attach`` takes) and its state, names
give way with an ellipsis, a sweep's trials are numbered, and the last metrics are a tooltip.
A local sweep launched from the form's Sweep section runs and is followed in the sidebar
(issue 47).
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import (
    LabServer,
    lab_command,
    open_lab,
    open_notebook,
    screenshot,
    start_command,
    start_lab,
)
from jobutil import JOB_DEADLINE_S, stored_job, write_notebook

from tfc_jupyter.jobs import store_for
from tfc_jupyter.store.records import JobRecord, JobState

pytestmark = pytest.mark.slow

RUN_CELL = "%%tfc_run\nprint('run cell')"


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """JupyterLab as ``browser.lab_server`` starts it, on a machine with no GPU whatever this
    one has (``CUDA_VISIBLE_DEVICES`` empty: GPUs asked for here are refused)."""
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    try:
        server = start_lab(tmp_path_factory.mktemp("lab"))
    finally:
        if before is None:
            del os.environ["CUDA_VISIBLE_DEVICES"]
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before
    try:
        yield server
    finally:
        server.stop()


def _open_form(page: Any, server: LabServer, name: str) -> Any:
    write_notebook(server.root_dir / name, "x = 1", RUN_CELL)
    page.goto(f"{server.url}lab?reset&token={server.token}")
    page.locator(".jp-LabShell").wait_for()
    open_notebook(page, server, name)
    start_command(page, "tfc-jupyter:launch")  # it returns once the dialog closes
    form = page.locator(".jp-Dialog .tfc-LaunchForm")
    form.wait_for()
    _checked(form, "ok")
    return form


def _checked(form: Any, state: str) -> None:
    """Wait until the form's own dry run of its values says ``state`` (ok, error)."""
    form.locator(f".tfc-CheckState[data-state='{state}']").wait_for(timeout=30_000)


def _longest(select: Any) -> str:
    """The value of a select's option with the longest label."""
    return str(
        select.evaluate(
            "s => [...s.options].reduce((a, b) => b.text.length > a.text.length ? b : a).value"
        )
    )


# Every field's box against the dialog's, and each box from the form up to the dialog that
# scrolls sideways (its content wider than it).
_MEASURE = """() => {
  const dialog = document.querySelector('.jp-Dialog-content');
  const box = dialog.getBoundingClientRect();
  const out = {dialog: [box.left, box.right], outside: [], scrolls: []};
  for (const field of dialog.querySelectorAll('.tfc-LaunchForm [data-field]')) {
    const r = field.getBoundingClientRect();
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5) {
      out.outside.push(`${field.dataset.field}: ${r.left}-${r.right}`);
    }
  }
  for (let n = dialog.querySelector('.tfc-LaunchForm'); n; n = n.parentElement) {
    if (n.scrollWidth > n.clientWidth + 1 && getComputedStyle(n).overflowX !== 'visible') {
      out.scrolls.push(`${n.className}: ${n.scrollWidth} > ${n.clientWidth}`);
    }
    if (n === dialog) { break; }
  }
  const page = document.scrollingElement;
  if (page.scrollWidth > page.clientWidth + 1) { out.scrolls.push('the page'); }
  return out;
}"""


@pytest.mark.parametrize("width", [575, 800])
def test_every_form_field_is_in_view_without_scrolling_sideways(
    lab_server: LabServer, browser_page: Any, width: int
) -> None:
    page = browser_page
    try:
        page.set_viewport_size({"width": width, "height": 900})
        form = _open_form(page, lab_server, f"wide{width}.ipynb")
        machine = form.locator("select[name=machine]")
        longest = _longest(machine)
        machine.select_option(longest)
        form.locator("select[name=worker_machine]").select_option(longest)
        form.locator("input[name=workers]").fill("1")
        page.wait_for_timeout(500)  # the form's check of the values, then its answer
        form.locator(".tfc-CheckState:not([data-state='checking'])").wait_for(timeout=30_000)
        hint = form.locator(".tfc-FieldHint[data-hint=machine]")
        label = machine.locator(f"option[value='{longest}']").inner_text()
        assert hint.inner_text() == label.split(" · ", 1)[1], (hint.inner_text(), label)
        seen = page.evaluate(_MEASURE)
        fields = form.locator("[data-field]").count()
        assert fields >= 10 and not seen["outside"] and not seen["scrolls"], (width, seen)
        for name in ("workers", "gpus"):
            assert form.locator(f"[data-field={name}]").is_visible()
        screenshot(page, f"form-{width}.png")
    except Exception:
        screenshot(page, f"form-{width}-failure.png")
        raise


def _refusal(form: Any) -> str:
    _checked(form, "error")
    text = str(form.locator(".tfc-Error").first.inner_text())
    assert "--" not in text, text  # the form's words: no flags
    return text


def _click_fix(form: Any, words: str) -> None:
    buttons = form.locator(".tfc-FixButton")
    texts = buttons.all_inner_texts()
    assert any(t.startswith(words) for t in texts), texts
    assert not any("--" in t for t in texts), texts
    buttons.filter(has_text=words).first.click()


def test_each_error_one_change_fixes_offers_that_change_as_a_button(
    lab_server: LabServer, browser_page: Any
) -> None:
    page = browser_page
    try:
        form = _open_form(page, lab_server, "fixes.ipynb")
        # GPUs asked of this machine, which has none.
        form.locator("select[name=gpus]").select_option("1")
        assert "asked for, and this machine has none" in _refusal(form)
        _click_fix(form, "Set GPUs per machine to none")
        _checked(form, "ok")
        assert form.locator("select[name=gpus]").input_value() in ("", "0")
        # A TPU on this machine.
        tpu = form.locator("select[name=tpu]")
        tpu.select_option(index=1)
        assert "cannot run TPU jobs" in _refusal(form)
        _click_fix(form, "Set TPU to none")
        _checked(form, "ok")
        assert tpu.input_value() == ""
        # A local job's label is any printable text; Vertex AI takes Google Cloud's rules.
        form.locator("input[name=label]").fill("lr=0.01 Team=ML")
        _checked(form, "ok")
        form.locator("select[name=backend]").select_option("vertex")
        form.locator("input[name=project]").fill("my-project-1")
        assert "not allowed on Google Cloud" in _refusal(form)
        _click_fix(form, "Set Labels to lr=0_01 team=ml")
        form.locator(".tfc-CheckState:not([data-state='checking'])").wait_for(timeout=30_000)
        page.wait_for_timeout(500)
        form.locator(".tfc-CheckState:not([data-state='checking'])").wait_for(timeout=30_000)
        assert form.locator("input[name=label]").input_value() == "lr=0_01 team=ml"
        errors = " ".join(form.locator(".tfc-Error").all_inner_texts())
        assert "label" not in errors, errors
        screenshot(page, "form-fixed.png")
    except Exception:
        screenshot(page, "form-fixes-failure.png")
        raise


# For each row of the sidebar: its state and short id as shown, whether either is cut (wider
# than its box, or past the row's or the visible sidebar's edge), and whether its name is.
_ROWS = """() => {
  // what shows of the sidebar: its box, clipped by the left area's (the panel may be wider)
  const own = document.querySelector('.tfc-Sidebar').getBoundingClientRect();
  const area = document.querySelector('#jp-left-stack').getBoundingClientRect();
  const bar = {left: Math.max(own.left, area.left), right: Math.min(own.right, area.right)};
  bar.width = bar.right - bar.left;
  return [...document.querySelectorAll('.tfc-Sidebar .tfc-JobRow')].map(row => {
    const box = row.getBoundingClientRect();
    const cut = el => !el || el.scrollWidth > el.clientWidth + 0.5
      || el.getBoundingClientRect().right > Math.min(box.right, bar.right) + 0.5
      || el.getBoundingClientRect().left < bar.left - 0.5;
    const badge = row.querySelector('.tfc-StateBadge');
    const id = row.querySelector('.tfc-JobRow-id');
    const name = row.querySelector('.tfc-JobRow-name');
    const trial = row.querySelector('.tfc-JobRow-trial');
    return {
      job: row.dataset.jobId, state: badge?.innerText, id: id?.innerText,
      cut: [cut(badge) && 'state', cut(id) && 'id', trial && cut(trial) && 'trial'].filter(Boolean),
      trial: trial?.innerText ?? null, title: row.title,
      nameCut: name.scrollWidth > name.clientWidth, ellipsis: getComputedStyle(name).textOverflow,
      sidebar: bar.width,
    };
  });
}"""


def test_sidebar_rows_show_their_whole_short_id_and_state_at_the_default_width(
    lab_server: LabServer, browser_page: Any
) -> None:
    page = browser_page
    home = lab_server.home
    long_name = "a-notebook-with-a-rather-long-name-for-a-sidebar-row"
    epochs = [{"loss": 0.51234, "accuracy": 0.8}, {"loss": 0.035, "accuracy": 0.98765}]
    stored_job(home, f"{long_name}-20261129-120000-a1b2c3", long_name, epochs=epochs)
    stored_job(home, "short-20261129-120001-d4e5f6", "short")
    ended = time.time()
    for state, tail, error in (
        (JobState.FAILED, "f00bad", "ZeroDivisionError: division by zero at cell 4, line 5"),
        (JobState.CANCELLED, "c0ffee", None),
    ):
        store_for(home).create(  # a job that ran two hours, as its record says
            JobRecord(
                id=f"{long_name}-20261129-100000-{tail}",
                name=f"{long_name}-{state.value}",
                backend="local",
                state=state,
                started_at=ended - 7260,
                ended_at=ended,
                error=error,
            )
        )
    sweep = "lr-search-with-a-long-name-20261129-120002-abcdef"
    for number in range(3):
        labels = {"tfc-sweep": sweep, "tfc-trial": str(number)}
        stored_job(
            home,
            f"{long_name}-trial{number}-20261129-12001{number}-0{number}f0{number}e",
            f"{long_name}-trial-{number}",
            spec={"labels": labels},
            epochs=epochs[: number + 1],
        )
    try:
        open_lab(page, lab_server)
        lab_command(page, "tfc-jupyter:show-jobs")
        sidebar = page.locator(".tfc-Sidebar")
        sidebar.locator(".tfc-SweepRow-summary").first.wait_for(timeout=20_000)
        sidebar.locator(".tfc-SweepRow-summary").first.click()  # its trials, under it
        page.locator(".tfc-Sidebar .tfc-JobRow").nth(6).wait_for(timeout=20_000)
        rows = page.evaluate(_ROWS)
        assert len(rows) == 7, rows
        states = {"f00bad": "failed", "c0ffee": "cancelled"}
        for row in rows:
            assert row["id"] == row["job"][-6:], row
            assert row["state"] == states.get(row["id"], "succeeded"), row
            assert not row["cut"], row
        assert rows[0]["sidebar"] < 300, rows[0]  # the default width, about 250 px
        named = [r for r in rows if long_name in r["title"]]
        assert all(r["nameCut"] and r["ellipsis"] == "ellipsis" for r in named), named
        trials = [r for r in rows if r["trial"] is not None]
        assert [r["trial"] for r in trials] == ["#0", "#1", "#2"], trials
        first = next(r for r in rows if r["job"].endswith("a1b2c3"))
        assert "last: loss 0.035 · accuracy 0.988" in first["title"], first["title"]
        cancelled = next(r for r in rows if r["id"] == "c0ffee")
        assert "ran 2 h 01 min" in cancelled["title"], cancelled["title"]
        screenshot(sidebar, "sidebar-narrow.png")
    except Exception:
        screenshot(page, "sidebar-narrow-failure.png")
        raise


def test_the_built_extension_is_this_checkouts(lab_server: LabServer) -> None:
    """The server serves the labextension built here (a worktree sharing its environment with
    another checkout tests its own build)."""
    built = Path(__file__).resolve().parents[1] / "tfc_jupyter" / "labextension"
    if not (built / "package.json").is_file():
        pytest.skip("no labextension built in this checkout: the environment's copy serves")
    load = json.loads((built / "package.json").read_text())["jupyterlab"]["_build"]["load"]
    with urllib.request.urlopen(lab_server.lab_url(), timeout=10) as response:
        page = response.read().decode()
    assert load in page  # the page loads this build's entry point


SWEEP_RUN = """%%tfc_run
from tfc_runtime.results import emit
emit({"event": "epoch", "fit": 0, "epoch": 1, "metrics": {"loss": lr * 10}})
print("trained with", lr)"""


def _set(form: Any, name: str, value: str) -> None:
    """Set a form field the way a user does: pick a choice, or type into a box."""
    field = form.locator(f"[name={name}]")
    if field.evaluate("f => f.tagName") == "SELECT":
        field.select_option(value)
    else:
        field.fill(value)


def test_a_local_sweep_launched_from_the_form_runs_and_is_followed_in_the_sidebar(
    lab_server: LabServer, browser_page: Any
) -> None:
    """Issue 47: the form's Sweep section launches a local sweep (its driver a process of its
    own, each trial a job) and the sidebar follows it as one row whose trials all succeed. The
    run cell is TensorFlow-free: it reports a loss from ``lr`` through the runtime's channel."""
    page = browser_page
    write_notebook(lab_server.root_dir / "form-sweep.ipynb", "lr = 0.5", SWEEP_RUN)
    try:
        page.goto(f"{lab_server.url}lab?reset&token={lab_server.token}")
        page.locator(".jp-LabShell").wait_for()
        open_notebook(page, lab_server, "form-sweep.ipynb")
        start_command(page, "tfc-jupyter:launch")
        form = page.locator(".jp-Dialog .tfc-LaunchForm")
        form.wait_for()
        _checked(form, "ok")
        for name, value in (
            ("sweep", "lr=[0.1,0.01]"), ("trials", "2"), ("parallel", "1"),
            ("metric", "loss"), ("goal", "min"), ("method", "grid"),
        ):  # fmt: skip
            _set(form, name, value)
        _checked(form, "ok")
        assert "--sweep" in form.locator(".tfc-PlanPreview .tfc-PlanLine").inner_text()
        page.locator(".jp-Dialog .jp-mod-accept").click()
        page.locator(
            ".jp-Notification-Toast, .Toastify__toast", has_text="Started sweep"
        ).first.wait_for(timeout=60_000)
        lab_command(page, "tfc-jupyter:show-jobs")
        row = page.locator(".tfc-Sidebar .tfc-SweepRow", has_text="form-sweep").first
        row.wait_for(timeout=60_000)
        done = row.locator(".tfc-SweepRow-count", has_text="2 trials: 2 succeeded")
        done.wait_for(timeout=JOB_DEADLINE_S * 1000)
        row.locator(".tfc-SweepRow-summary").click()  # its two trials, under it
        trials = row.locator(".tfc-JobRow")
        trials.nth(1).wait_for(timeout=20_000)
        assert trials.count() == 2
        screenshot(page, "form-sweep.png")
    except Exception:
        screenshot(page, "form-sweep-failure.png")
        raise
