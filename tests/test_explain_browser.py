"""Issue 51, a UI that explains itself, in a real browser (JupyterLab, Debian chromium).

- The ipywidgets panel's log reads in JupyterLab's dark theme: the contrast of its text against
  its background, measured in the page (computed styles, WCAG relative luminance), is at least
  4.5 (the log box was a fixed light grey under the dark theme's light text).
- Compare, two real jobs of two notebooks: the view's first words name both notebooks, then the
  code says how the cells differ (a diff of the cells each job ran, from its folder through
  ``GET /jobs/ID/code``), then the options, labels as ``k=v``, then the curves.
- The sweep tab of a real 8-trial local sweep (one trial fails): parallel coordinates, one
  coloured polyline per trial with a metric, the failed one dashed and marked, and an
  importance bar per swept variable, Optuna's on the sweep's study.
"""

from __future__ import annotations

from typing import Any

import pytest
from browser import LabServer, lab_command, open_lab, open_notebook, screenshot
from jobutil import run_job, write_notebook

from tfc_jupyter.client import Client
from tfc_jupyter.config import load_settings
from tfc_jupyter.job.options import JobOptions
from tfc_jupyter.jobs import store_for
from tfc_jupyter.store.records import JobState
from tfc_jupyter.trials.trials import run_sweep

# The WCAG 2 contrast ratio of an element's text colour against the first opaque background
# under it (itself or an ancestor), from the computed styles.
CONTRAST = """(el) => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const lin = (v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  };
  let back = null;
  for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
    const c = rgb(getComputedStyle(node).backgroundColor);
    if (c.length >= 3 && (c.length === 3 || c[3] > 0.99)) { back = c; break; }
  }
  const text = rgb(getComputedStyle(el).color);
  const [hi, lo] = [lum(text), lum(back || [255, 255, 255])].sort((a, b) => b - a);
  return { ratio: (hi + 0.05) / (lo + 0.05), text, back };
}"""


@pytest.mark.slow
def test_the_panels_log_reads_in_the_dark_theme(lab_server: LabServer, browser_page: Any) -> None:
    """A real job's log attached in the panel, JupyterLab Dark: contrast ratio >= 4.5."""
    page = browser_page
    job_nb = write_notebook(
        lab_server.root_dir / "logged.ipynb", "%%tfc_run\nprint('a line of the job log')"
    )
    job, record = run_job(job_nb, lab_server.home)
    assert record.state is JobState.SUCCEEDED, record.error
    write_notebook(lab_server.root_dir / "dark_panel.ipynb", "%load_ext tfc_jupyter", "%tfc_panel")
    try:
        open_notebook(page, lab_server, "dark_panel.ipynb")
        lab_command(page, "apputils:change-theme", {"theme": "JupyterLab Dark"})
        page.wait_for_function(
            "() => document.body.dataset.jpThemeLight === 'false'", timeout=20_000
        )
        lab_command(page, "notebook:run-all-cells")
        jobs = page.locator(".tfc-panel .tfc-jobs select")
        jobs.wait_for(timeout=60_000)
        jobs.select_option(label=jobs.locator("option", has_text=job.id).inner_text().strip())
        page.locator(".tfc-panel button.tfc-attach").click()
        log = page.locator(".tfc-panel .tfc-log pre", has_text="a line of the job log")
        log.wait_for(timeout=30_000)
        measured = log.evaluate(CONTRAST)
        screenshot(page.locator(".tfc-panel"), "panel-dark-log.png")
        assert measured["ratio"] >= 4.5, measured
    except Exception:
        screenshot(page, "panel-dark-failure.png")
        raise
    finally:
        lab_command(page, "apputils:change-theme", {"theme": "JupyterLab Light"})


@pytest.mark.slow
def test_compare_names_the_notebooks_first(lab_server: LabServer, browser_page: Any) -> None:
    """Two jobs of two notebooks, compared: the notebooks first, then code, options, curves."""
    page = browser_page
    ids = []
    for name, rate in (("first_nb", "0.1"), ("second_nb", "0.5")):
        path = write_notebook(
            lab_server.root_dir / f"{name}.ipynb",
            f"%%tfc_run --label run={name}\nrate = {rate}\nprint('rate', rate)",
        )
        job, record = run_job(path, lab_server.home)
        assert record.state is JobState.SUCCEEDED, record.error
        ids.append(job.id)
    code = lab_server.api("GET", f"tfc-jupyter/jobs/{ids[1]}/code")
    assert code["notebook"].endswith("second_nb.ipynb"), code
    assert any("rate = 0.5" in c["source"] for c in code["cells"]), code
    try:
        open_lab(page, lab_server)
        lab_command(page, "tfc-jupyter:show-jobs")
        for job_id in ids:
            box = page.locator(f".tfc-Sidebar .tfc-JobRow[data-job-id='{job_id}'] .tfc-JobRow-pick")
            box.wait_for(timeout=20_000)
            box.check()
        page.locator(".tfc-CompareButton", has_text="Compare 2").click()
        view = page.locator(f".tfc-Compare[data-jobs='{' '.join(ids)}']")
        view.locator(".tfc-Compare-diff").wait_for(timeout=20_000)
        first = view.inner_text().strip().split("\n")[0]
        assert "first_nb.ipynb" in first and "second_nb.ipynb" in first, first
        assert "Different notebooks" in first, first
        headings = view.locator("h3.tfc-Compare-heading").all_inner_texts()
        assert headings == ["Code", "Options that differ", "Curves"], headings
        diff = view.locator(".tfc-Compare-diff").inner_text()
        assert "- rate = 0.1" in diff and "+ rate = 0.5" in diff, diff
        labels = view.locator(".tfc-Compare-options tr[data-option='labels'] td")
        assert labels.all_inner_texts()[1:] == ["run=first_nb", "run=second_nb"], (
            labels.all_inner_texts()
        )
        screenshot(page, "compare-notebooks.png")
    except Exception:
        screenshot(page, "compare-notebooks-failure.png")
        raise


SWEPT = (
    "%%tfc_run\n"
    "from tfc_runtime.results import emit\n"
    "if units == 4 and lr == 0.1:\n"
    "    raise ValueError('this pair diverges')\n"
    "for epoch in (1, 2):\n"
    "    emit({'event': 'epoch', 'fit': 0, 'epoch': epoch,\n"
    "          'metrics': {'val_score': units * epoch + lr}})\n"
)


@pytest.mark.slow
def test_the_sweep_tab_compares_trials(lab_server: LabServer, browser_page: Any) -> None:
    """8 real trials: parallel coordinates (a line per trial with a metric) and importance."""
    page = browser_page
    path = write_notebook(
        lab_server.root_dir / "swept8.ipynb",
        "lr = 0.1\nunits = 8",
        SWEPT,
        tags={0: ["parameters"]},
    )
    client = Client(load_settings(include_server=False), store_for(lab_server.home))
    words = ["--sweep", "units=[4,8,16,32]", "--sweep", "lr=[0.01,0.1]", "--method", "grid"]
    words += ["--metric", "val_score", "--goal", "max", "--parallel", "4"]
    plan = client.plan_file(str(path), JobOptions.from_words(words), how="test")
    sweep = run_sweep(client, plan)
    states = sorted(t.state for t in sweep.trials)
    assert states == ["failed"] + ["succeeded"] * 7, sweep.table_text()
    label = sweep.id.lower()[-63:]
    served = lab_server.api("GET", f"tfc-jupyter/sweeps/{label}")["importance"]
    assert served["by"] == "optuna" and set(served["values"]) == {"units", "lr"}, served
    assert abs(sum(served["values"].values()) - 1) < 1e-6, served
    scored = sorted(str(t.number) for t in sweep.trials if t.metric is not None)
    failed = next(t for t in sweep.trials if t.state == "failed")
    try:
        open_lab(page, lab_server)
        lab_command(page, "tfc-jupyter:show-jobs")
        row = page.locator(f".tfc-SweepRow[data-sweep='{label}']")
        row.wait_for(timeout=20_000)
        row.locator(".tfc-SweepRow-open").click()
        view = page.locator(".tfc-SweepView")
        view.locator("svg.tfc-Parallel-plot").wait_for(timeout=20_000)
        lines = view.locator("polyline.tfc-Parallel-line")
        assert sorted(lines.evaluate_all("ls => ls.map(l => l.dataset.trial)")) == scored
        colours = lines.evaluate_all("ls => ls.map(l => l.getAttribute('stroke'))")
        assert len(set(colours)) > 1, colours  # coloured by the metric
        axes = view.locator(".tfc-Parallel-axis").evaluate_all("gs => gs.map(g => g.dataset.axis)")
        assert axes == [*sweep.spec.names, "val_score"], axes
        dashed = view.locator("polyline.tfc-Parallel-unscored")
        assert dashed.count() == 1 and dashed.get_attribute("data-state") == "failed"
        assert dashed.get_attribute("data-trial") == str(failed.number)
        assert f"#{failed.number} failed" in view.locator(".tfc-Parallel").inner_text()
        bars = view.locator(".tfc-Importance-bar").evaluate_all(
            "gs => gs.map(g => g.dataset.param)"
        )
        assert sorted(bars) == ["lr", "units"], bars
        assert "Optuna" in view.locator(".tfc-Importance").inner_text()
        screenshot(page, "sweep-parallel.png")
    except Exception:
        screenshot(page, "sweep-parallel-failure.png")
        raise
