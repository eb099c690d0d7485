"""One option table drives every surface (issue 36): an option added to ``JobOptions`` alone is
a flag of the magic and the CLI, a ``run()`` keyword, a jobs API option (in its served OpenAPI
schema too), a field of the JupyterLab form and of the ipywidgets panel (one label), and
reaches the launched job's folder and its backend (``plan.options``).

The test adds one to a copy of the package, changing that one file, and asks each surface
from a fresh process that imports the copy.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from jobutil import write_notebook

PACKAGE = Path(__file__).resolve().parents[1] / "tfc_jupyter"

ADDED = """
    priority: int = _opt(
        0,
        "How urgent the job is (0: as any other).",
        metavar="N",
        label="Priority",
        neutral="0",
        group="Job",
    )
"""
"""The new option, declared as every option is (after ``workers``)."""

CHECK = textwrap.dedent(
    """
    import json, subprocess, sys
    from pathlib import Path

    import tfc_jupyter
    assert tfc_jupyter.__file__.startswith(sys.argv[1]), tfc_jupyter.__file__  # the copy
    from IPython.core.oinspect import getdoc

    from tfc_jupyter.config import load_settings
    from tfc_jupyter.job import options
    from tfc_jupyter.job.options import JobOptions
    from tfc_jupyter.magics import TfcMagics
    from tfc_jupyter.panel import build_model
    from tfc_jupyter.panel.view import LaunchPanel
    from tfc_jupyter.planner.fields import fields_json
    from tfc_jupyter.jobs import store_for
    from tfc_jupyter.store.records import JobStore
    from tfc_jupyter.notebook import capture
    from tfc_jupyter.run_api import job_options
    from tfc_jupyter.server.service import JobService
    from tfc_jupyter.words import ui_words

    nb = Path(sys.argv[2])
    seen = {}
    # The magic: its line, its help (%%tfc_run?).
    line = JobOptions.from_line("--priority 3 --workers 1")
    seen["line"] = [line.priority, "priority" in line.given, line.to_line()]
    seen["magic help"] = "--priority N" in " ".join(str(getdoc(TfcMagics(None).tfc_run)).split())
    # The CLI's parser and help, run() and the jobs API's JSON.
    seen["cli help"] = "--priority N" in options.parser(installed=True).format_help()
    seen["run()"] = job_options(entry_point=str(nb), priority=4).priority
    seen["json"] = JobOptions.from_json({"priority": "5"}).priority
    # The form (GET /defaults) and the panel: one field, one label.
    (field,) = [f for f in fields_json() if f["name"] == "priority"]
    seen["form"] = [field["label"], field["group"], field["control"]]
    served = JobService(nb.parent).defaults()["fields"]
    seen["served"] = [f for f in served if f["name"] == "priority"] == [field]
    settings = load_settings(include_server=False)
    select = lambda: capture.select_cells(capture.read_notebook(nb), path=nb, how="test")
    model = build_model(settings, select=select, notebook=nb, remember=False)
    panel = LaunchPanel(model, JobStore(Path(sys.argv[3]) / "panel.db"))
    seen["panel"] = panel.controls["priority"].description
    model.update(priority=6)
    seen["panel line"] = model.line()
    seen["ui words"] = ui_words("drop --priority")
    status, body = JobService(nb.parent).create(
        {"path": nb.name, "options": {"priority": 8, "dry_run": True}}
    )
    seen["api"] = [status, body["plan"]["options"].get("priority")]
    import yaml
    from tfc_jupyter.server.handlers import openapi_document
    document = yaml.safe_load(openapi_document())
    schema = document["components"]["schemas"]["CreateJob"]["properties"]["options"]
    seen["openapi"] = schema["properties"]["priority"]["description"]
    # A job launched with it: the job folder keeps it (its backend read plan.options).
    run = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", "run", str(nb), "--priority", "9"],
        capture_output=True, text=True, timeout=120,
    )
    seen["run"] = [run.returncode, run.stdout.strip(), run.stderr.strip()[-300:]]
    (record,) = store_for().list(limit=None)
    kept = json.loads((Path(record.job_dir) / "job.json").read_text())
    seen["job folder"] = [record.state.value, kept["options"].get("priority")]
    print(json.dumps(seen))
    """
)


def _copy_with(root: Path, edits: dict[str, tuple[str, str]]) -> Path:
    """A copy of the package with each file of ``edits`` (``{path: (anchor, added)}``) given
    ``added`` after its one ``anchor``; returns the copy's parent. Checks that those files are
    the only ones that differ."""
    copy = root / "tfc_jupyter"
    shutil.copytree(
        PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "labextension", "*.pyc")
    )
    for path, (anchor, added) in edits.items():
        text = (copy / path).read_text()
        assert text.count(anchor) == 1, path
        (copy / path).write_text(text.replace(anchor, anchor + added))
    differ: list[str] = []

    def walk(cmp: filecmp.dircmp[str], where: Path) -> None:
        differ.extend(str(where / name) for name in cmp.diff_files + cmp.left_only)
        for name, sub in cmp.subdirs.items():
            walk(sub, where / name)

    walk(filecmp.dircmp(copy, PACKAGE, ignore=["__pycache__", "labextension"]), Path())
    assert sorted(differ) == sorted(edits), differ
    return root


def _check(
    tmp_path: Path, root: Path, script: str, cell: str = "%%tfc_run\nprint('hello', 6 * 7)"
) -> dict[str, Any]:
    """What ``script`` saw of the copy under ``root``, run in a fresh process with a notebook
    of one ``%%tfc_run`` cell (``cell``) and a job home of its own."""
    (tmp_path / "work").mkdir()
    nb = write_notebook(tmp_path / "work" / "nb.ipynb", cell)
    home = tmp_path / "home"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
        "TFC_JUPYTER_HOME": str(home),
    }
    done = subprocess.run(
        [sys.executable, "-c", script, str(root), str(nb), str(home)],
        capture_output=True,
        text=True,
        env=env,
        cwd=nb.parent,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


@pytest.mark.slow
def test_an_option_added_to_the_table_alone_is_on_every_surface(tmp_path: Path) -> None:
    anchor = '        label="Workers",\n        neutral="0",\n        group="Machines",\n    )\n'
    root = _copy_with(tmp_path / "pkg", {"job/options.py": (anchor, ADDED)})
    seen = _check(tmp_path, root, CHECK)
    assert seen["line"] == [3, True, "%%tfc_run --workers 1 --priority 3"]
    assert seen["magic help"] and seen["cli help"]
    assert (seen["run()"], seen["json"]) == (4, 5)
    assert seen["form"] == ["Priority", "Job", "count"] and seen["served"]
    assert seen["panel"] == "Priority"  # the form's label, on the panel's control
    assert "--priority 6" in seen["panel line"]
    assert seen["ui words"] == "set Priority to 0"
    assert seen["api"] == [200, 8]
    assert seen["openapi"] == "--priority: How urgent the job is (0: as any other)."
    code, out, err = seen["run"]
    assert code == 0 and "hello 42" in out, err
    assert seen["job folder"] == ["succeeded", 9]


OPTIONAL_ADDED = """
    seed: int | None = _opt(
        None,
        "The job's random seed (default: none, each run draws its own).",
        metavar="N",
        label="Seed",
        placeholder="none: each run draws its own",
        group="Job",
    )
"""
"""An optional count: unset (None) is not 0, so an empty box must stay unset."""

OPTIONAL_CHECK = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path

    import tfc_jupyter
    assert tfc_jupyter.__file__.startswith(sys.argv[1]), tfc_jupyter.__file__  # the copy
    import jsonschema
    import yaml

    from tfc_jupyter.config import load_settings
    from tfc_jupyter.errors import TfcError
    from tfc_jupyter.job.options import JobOptions
    from tfc_jupyter.notebook import capture
    from tfc_jupyter.panel import build_model
    from tfc_jupyter.panel.view import LaunchPanel
    from tfc_jupyter.planner.fields import fields_json
    from tfc_jupyter.server.handlers import openapi_document
    from tfc_jupyter.server.service import JobService
    from tfc_jupyter.store.records import JobStore

    nb = Path(sys.argv[2])  # its one cell: %%tfc_run --seed 5
    seen = {}
    unset, zero = JobOptions.from_line("--workers 1"), JobOptions.from_line("--seed 0")
    seen["line"] = [unset.seed, unset.to_line(), zero.seed, zero.to_line()]
    seen["json"] = [JobOptions.from_json({"seed": v}).seed for v in ("", " ", "3", 4)]
    seen["given"] = "seed" in JobOptions.from_json({"seed": ""}).given

    def dry(options, replace=True):
        try:  # the handler answers a TfcError with its status and to_dict()
            status, body = JobService(nb.parent).create(
                {"path": nb.name, "options": {**options, "dry_run": True}, "replace": replace}
            )
        except TfcError as exc:
            status, body = exc.http_status, exc.to_dict()
        return [status, body["plan"]["options"].get("seed", "unset") if status == 200 else
                [body["field"], body["ui_message"], [f["action"] for f in body["fixes"]]]]

    seen["api"] = {
        "empty": dry({"seed": ""}), "empty, no replace": dry({"seed": ""}, replace=False),
        "three": dry({"seed": "3"}), "absent": dry({}), "letters": dry({"seed": "x"}),
    }
    document = yaml.safe_load(openapi_document())
    schema = document["components"]["schemas"]["CreateJob"]["properties"]["options"]
    seen["schema"] = {}
    for value in ("", " 3 ", 3, "x", -1):
        try:
            jsonschema.validate({"seed": value}, schema)
            seen["schema"][repr(value)] = True
        except jsonschema.ValidationError:
            seen["schema"][repr(value)] = False
    by_name = {f["name"]: f for f in fields_json()}
    seen["form"] = {n: [by_name[n]["control"], by_name[n]["optional"], by_name[n]["default"]]
                    for n in ("seed", "workers", "gpus")}
    settings = load_settings(include_server=False)
    select = lambda: capture.select_cells(capture.read_notebook(nb), path=nb, how="test")
    panels = {}
    for start in ("", "--seed 5"):
        model = build_model(settings, select=select, notebook=nb, remember=False,
                            base=JobOptions.from_line(start))
        panel = LaunchPanel(model, JobStore(Path(sys.argv[3]) / "panel.db"))
        shown = [panel.controls["seed"].value, model.line()]
        panel.controls["workers"].value = 1  # another field changed: the seed untouched
        shown.append(model.line())
        for typed in (" 4 ", "", "x"):
            panel.controls["seed"].value = typed
            error = panel.errors["seed"].value
            shown.append([model.line() if not error else error, panel.launch_button.disabled])
        panels[start] = shown
    seen["panel"] = panels
    print(json.dumps(seen))
    """
)


def test_an_optional_count_left_empty_stays_unset_on_every_surface(tmp_path: Path) -> None:
    """Issue 47: an optional count (``int | None = None``, with a label) declared in the
    option table alone is unset when its box is empty: the magic's line without it, the jobs
    API's ``""`` (over the cell's own value, with ``replace`` or not), the panel's untouched or
    emptied field; the form's field says it is optional. 0 stays 0 where it is typed."""
    anchor = '        label="Workers",\n        neutral="0",\n        group="Machines",\n    )\n'
    root = _copy_with(tmp_path / "pkg", {"job/options.py": (anchor, OPTIONAL_ADDED)})
    seen = _check(tmp_path, root, OPTIONAL_CHECK, cell="%%tfc_run --seed 5\nprint('hi')")
    assert seen["line"] == [None, "%%tfc_run --workers 1", 0, "%%tfc_run --seed 0"]
    assert seen["json"] == [None, None, 3, 4] and seen["given"]
    api = seen["api"]
    assert api["empty"] == api["empty, no replace"] == [200, "unset"]
    assert api["three"] == [200, 3] and api["absent"] == [200, 5]  # the cell's own
    status, (field, message, fixes) = api["letters"]
    assert (status, field) == (400, "seed") and "Seed" in message and "drop" in fixes, message
    assert seen["schema"] == {"''": True, "' 3 '": True, "3": True, "'x'": False, "-1": False}
    assert seen["form"] == {
        "seed": ["count", True, ""],
        "workers": ["count", False, "0"],
        "gpus": ["choice", False, ""],  # a choice always has a value: "none" is 0
    }
    untouched, cell_s = seen["panel"][""], seen["panel"]["--seed 5"]
    assert untouched[:3] == ["", "%%tfc_run", "%%tfc_run --workers 1"]
    assert cell_s[:3] == ["5", "%%tfc_run --seed 5", "%%tfc_run --workers 1 --seed 5"]
    for shown in (untouched, cell_s):
        four, empty, letters = shown[3:]
        assert four == ["%%tfc_run --workers 1 --seed 4", False]
        assert empty == ["%%tfc_run --workers 1", False]
        assert "Seed" in letters[0] and "whole number" in letters[0] and letters[1], letters


VERTEX_ADDED = """
    dashboard_access: bool = option(
        False,
        "Vertex AI: open the training dashboard of the chief's container in the console.",
        label="Dashboard access",
        group="Google Cloud",
    )
"""
"""A Vertex AI option, declared in that backend's folder (its ``options.py``)."""
VERTEX_READ = """
    if own.dashboard_access:
        job_spec["enableDashboardAccess"] = True
"""
"""... and read by its request (``request.py``), after the web access it is like."""

VERTEX_CHECK = textwrap.dedent(
    """
    import json, subprocess, sys
    from pathlib import Path

    import tfc_jupyter
    assert tfc_jupyter.__file__.startswith(sys.argv[1]), tfc_jupyter.__file__  # the copy
    from google.cloud.aiplatform_v1.types import CustomJob
    from IPython.core.oinspect import getdoc

    from tfc_jupyter.config import load_settings
    from tfc_jupyter.job import options
    from tfc_jupyter.job.options import JobOptions
    from tfc_jupyter.magics import TfcMagics
    from tfc_jupyter.panel import build_model
    from tfc_jupyter.panel.view import LaunchPanel
    from tfc_jupyter.planner.fields import fields_json
    from tfc_jupyter.store.records import JobStore
    from tfc_jupyter.notebook import capture
    from tfc_jupyter.run_api import job_options
    from tfc_jupyter.server.service import JobService
    from tfc_jupyter.words import ui_words

    nb = Path(sys.argv[2])
    seen = {}
    line = JobOptions.from_line("--backend vertex --dashboard-access")
    seen["line"] = [list(map(list, line.target)), line.to_line()]
    magic_help = " ".join(str(getdoc(TfcMagics(None).tfc_run)).split())
    seen["magic help"] = "--dashboard-access" in magic_help
    seen["cli help"] = "--dashboard-access" in options.parser(installed=True).format_help()
    seen["run()"] = list(map(list, job_options(entry_point=str(nb), dashboard_access=True).target))
    seen["json"] = list(map(list, JobOptions.from_json({"dashboard_access": True}).target))
    (field,) = [f for f in fields_json() if f["name"] == "dashboard_access"]
    seen["form"] = [field["label"], field["group"], field["control"]]
    served = JobService(nb.parent).defaults()["fields"]
    seen["served"] = [f for f in served if f["name"] == "dashboard_access"] == [field]
    settings = load_settings(include_server=False)
    select = lambda: capture.select_cells(capture.read_notebook(nb), path=nb, how="test")
    model = build_model(settings, select=select, notebook=nb, remember=False)
    panel = LaunchPanel(model, JobStore(Path(sys.argv[3]) / "panel.db"))
    seen["panel"] = panel.controls["dashboard_access"].description
    model.update(backend="vertex", dashboard_access=True)
    seen["panel line"] = model.line()
    seen["ui words"] = ui_words("drop --dashboard-access")
    status, body = JobService(nb.parent).create({"path": nb.name, "options": {
        "backend": "vertex", "project": "my-proj-1", "dashboard_access": True, "dry_run": True}})
    request = body["plan"]["request"]
    job = CustomJob.from_json(json.dumps(request["body"]), ignore_unknown_fields=False)
    seen["api"] = [status, job.job_spec.enable_dashboard_access]
    import yaml
    from tfc_jupyter.server.handlers import openapi_document
    document = yaml.safe_load(openapi_document())
    schema = document["components"]["schemas"]["CreateJob"]["properties"]["options"]
    seen["openapi"] = schema["properties"]["dashboard_access"]["description"]
    cli = [sys.executable, "-m", "tfc_jupyter.cli", "plan", str(nb), "--dashboard-access"]
    local = subprocess.run(cli, capture_output=True, text=True, timeout=120)
    seen["on local"] = [local.returncode, local.stderr.strip()]
    vertex = subprocess.run(
        [*cli, "--backend", "vertex", "--project", "my-proj-1", "--json"],
        capture_output=True, text=True, timeout=120,
    )
    seen["plan"] = json.loads(vertex.stdout)["request"]["body"]["jobSpec"]
    print(json.dumps(seen))
    """
)


@pytest.mark.slow
def test_a_vertex_option_added_in_its_backend_s_folder_alone_is_on_every_surface(
    tmp_path: Path,
) -> None:
    """Issue 36: a backend-only option is a change to its backend's folder. Vertex AI's
    ``enableDashboardAccess`` (a real ``CustomJobSpec`` field we do not offer) is added to a copy
    of the package, in ``backends/vertex/`` only: every surface takes it, the dry run's request
    carries it as Google's types read it, and another backend refuses it."""
    root = _copy_with(
        tmp_path / "pkg",
        {
            "backends/vertex/options.py": (
                '        "retries it by default).",\n    )\n',
                VERTEX_ADDED,
            ),
            "backends/vertex/request.py": (
                '        job_spec["enableWebAccess"] = True\n',
                VERTEX_READ,
            ),
        },
    )
    seen = _check(tmp_path, root, VERTEX_CHECK)
    assert seen["line"] == [
        [["dashboard_access", True]],
        "%%tfc_run --backend vertex --dashboard-access",
    ]
    assert seen["magic help"] and seen["cli help"]
    assert seen["run()"] == seen["json"] == [["dashboard_access", True]]
    assert seen["form"] == ["Dashboard access", "Google Cloud", "switch"] and seen["served"]
    assert seen["panel"] == "Dashboard access"
    assert "--dashboard-access" in seen["panel line"]
    assert seen["ui words"] == "clear Dashboard access"
    assert seen["api"] == [200, True]
    assert "(vertex backend)" in seen["openapi"]
    code, err = seen["on local"]
    assert code == 2 and "--dashboard-access is a Vertex AI setting" in err, err
    assert seen["plan"]["enableDashboardAccess"] is True
