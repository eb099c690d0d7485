"""make_plan: selection + flags -> a validated, explained Plan (no IPython involved)."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from tfc_jupyter.config import Settings
from tfc_jupyter.errors import ConversionError, RequirementsError, SpecError
from tfc_jupyter.image import names as images
from tfc_jupyter.job import catalog, options, prices
from tfc_jupyter.job.spec import Strategy
from tfc_jupyter.notebook.capture import Selection, read_notebook, select_cells
from tfc_jupyter.notebook.convert import Cell
from tfc_jupyter.planner.plan import Plan, job_name, make_plan

RUN_LINE = "--workers 1 --dry-run"
RUN_BODY = "result = build()\nprint(json.dumps(result))"


def _plan(train_nb: Path, settings: Settings, line: str = RUN_LINE) -> Plan:
    sel = select_cells(
        read_notebook(train_nb), path=train_nb, how="test", magic_line=RUN_LINE, body=RUN_BODY
    )
    return make_plan(sel, options.parse_line(line), settings)


def test_plan_of_the_fixture(train_nb: Path, settings: Settings) -> None:
    plan = _plan(train_nb, settings)
    assert plan.script.cells == [2, 3, 7, 8, 9]
    assert plan.requirements == ["tensorflow-datasets>=4.9", "pandas==2.2.2"]
    assert plan.spec.requirements == tuple(plan.requirements)
    assert plan.spec.name == "train"
    assert plan.spec.resolved_strategy() is Strategy.MULTI_WORKER_MIRRORED
    cpu = catalog.lookup("CPU")
    assert plan.pools() == [("chief", 1, cpu), ("worker", 1, cpu)]
    disk = prices.boot_disk_price("pd-ssd", 100) or 0.0  # each replica's boot disk counts
    assert plan.spec.cost_per_hour() == pytest.approx(2 * ((cpu.price_per_hour or 0) + disk))
    assert plan.warnings == ()


def test_a_plan_once_made_is_not_changed(train_nb: Path, settings: Settings) -> None:
    """A plan crosses from the planner to every edge and backend: none can change it under
    another (the client's verdict makes a new plan)."""
    plan = _plan(train_nb, settings)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.refused = None  # type: ignore[misc]
    with pytest.raises(AttributeError):
        plan.warnings.append("x")  # type: ignore[attr-defined]


def test_text_shows_every_part(train_nb: Path, settings: Settings) -> None:
    plan = _plan(train_nb, settings, "--workers 2 --gpus 1")
    text = plan.to_text()
    t4 = catalog.lookup("T4_1X")
    assert "cells: 2, 3, 7, 8, 9  (skipped by tag: 4, 6)" in text
    assert "strategy: multi_worker_mirrored (auto: " in text
    # a local job's pools in this machine's words: processes and their GPUs, no machine type
    assert "pool 0 chief x1: 1 process on this machine, 1 GPU each" in text
    assert "pool 1 worker x2: 2 processes on this machine, 1 GPU each" in text
    assert "T4" not in text.split("--- script.py ---")[0]
    assert t4.gpu_count == 1 and t4.price_per_hour  # Vertex AI's price of a T4 ...
    assert "cost: nothing billed (it runs on this machine)" in text  # ... is not this job's
    assert "price: " not in text and plan.summary()["prices"] == []
    assert "requirements: tensorflow-datasets>=4.9, pandas==2.2.2" in text
    assert "--- script.py ---" in text and "print(json.dumps(result))" in text
    # a local job's launch in its own words: each process, its command and its task
    shown = text.split("--- Processes on this machine ---", 1)[1]
    assert f"folder: {train_nb.parent}" in shown
    assert "TF_CONFIG: worker 1 of chief 127.0.0.1:<port 0>; worker 127.0.0.1:<port 1>, " in shown
    assert [r["name"] for r in plan.request()["replicas"]] == ["chief", "worker-0", "worker-1"]
    assert "--- script.py ---" not in plan.to_text(script=False)


def test_one_device_needs_no_strategy(train_nb: Path, settings: Settings) -> None:
    text = _plan(train_nb, settings, "").to_text()
    assert "strategy: none (auto: one device: no strategy, TensorFlow places the work" in text


def test_html_is_escaped_and_collapsible(tmp_path: Path, settings: Settings) -> None:
    sel = Selection(cells=[Cell(1, "x = '<script>alert(1)</script>'")], notebook=None, how="t")
    html = make_plan(sel, options.parse_line(""), settings)._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert html.count("<details>") >= 2 and "Processes on this machine" in html


def test_summary_is_json(train_nb: Path, settings: Settings) -> None:
    summary = json.loads(json.dumps(_plan(train_nb, settings).summary()))
    assert summary["notebook"] == str(train_nb)
    assert summary["cells"] == [2, 3, 7, 8, 9] and summary["skipped_cells"] == [4, 6]
    assert summary["strategy"] == "multi_worker_mirrored"
    assert summary["spec"]["worker_count"] == 1
    assert [r["name"] for r in summary["request"]["replicas"]] == ["chief", "worker-0"]


def test_requirements_file_is_merged_under_the_notebook(
    train_nb: Path, fixtures_dir: Path, settings: Settings
) -> None:
    plan = _plan(train_nb, settings, f"--requirements {fixtures_dir / 'requirements.txt'}")
    # the file pins pandas==2.1.0, the notebook's later %pip line asks for 2.2.2
    assert plan.requirements == ["numpy>=1.26", "pandas==2.2.2", "tensorflow-datasets>=4.9"]
    assert any("pandas==2.1.0" in n and "replaced" in n for n in plan.script.notes)
    relative = _plan(train_nb, settings, "--requirements requirements.txt")
    assert relative.requirements == plan.requirements  # found next to the notebook
    with pytest.raises(RequirementsError, match="check the path"):
        _plan(train_nb, settings, "--requirements nowhere.txt")


def test_vertex_without_a_project_warns(train_nb: Path, settings: Settings) -> None:
    plan = _plan(train_nb, settings, "--backend vertex")
    assert any("--project" in w for w in plan.warnings)
    assert "PROJECT" in plan.request()["url"]
    named = _plan(train_nb, settings, "--backend vertex --project my-proj-1 --region europe-west4")
    assert named.warnings == ()
    assert named.request()["url"] == (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/my-proj-1/locations/"
        "europe-west4/customJobs"
    )


def test_conversion_errors_reach_the_caller(settings: Settings) -> None:
    sel = Selection(cells=[Cell(1, "x = 1"), Cell(2, "%store x")], notebook=None, how="t")
    with pytest.raises(ConversionError, match="cell 2, line 1"):
        make_plan(sel, options.parse_line(""), settings)


@pytest.mark.parametrize(
    ("version", "line", "added"),
    [
        ("2.21.0", "--workers 1", "tf-keras~=2.21.0"),
        ("2.15.1", "--workers 1", None),
        ("2.21.0", "", None),
    ],
)
def test_keras_under_multi_worker_gets_tf_keras(
    monkeypatch: pytest.MonkeyPatch,
    settings: Settings,
    version: str,
    line: str,
    added: str | None,
) -> None:
    monkeypatch.setattr(images, "local_tensorflow_version", lambda: version)
    sel = Selection(
        cells=[Cell(1, "import keras\nmodel = keras.Sequential()")], notebook=None, how="t"
    )
    plan = make_plan(sel, options.parse_line(line), settings)
    if added:
        assert added in plan.requirements and added in plan.spec.requirements
        assert any("tf-keras" in n for n in plan.script.notes)
    else:
        assert not any(r.startswith("tf-keras") for r in plan.requirements)


def test_image_tag_follows_the_content(settings: Settings) -> None:
    def image(source: str, line: str = "") -> str:
        sel = Selection(cells=[Cell(1, source)], notebook=None, how="t")
        return make_plan(sel, options.parse_line(line), settings).image_uri

    first = image("x = 1")
    assert first == image("x = 1")
    assert first != image("x = 2")
    assert first != image("%pip install numpy\nx = 1")
    assert first.startswith("us-central1-docker.pkg.dev/PROJECT/tfc-jupyter/notebook:")
    assert image("x = 1", "--image gcr.io/p/mine:7") == "gcr.io/p/mine:7"


def test_parent_images(settings: Settings) -> None:
    sel = Selection(cells=[Cell(1, "x = 1")], notebook=None, how="t")

    def parent(line: str) -> str:
        return make_plan(sel, options.parse_line(line), settings).parent_image

    assert parent("").startswith("tensorflow/tensorflow:") and not parent("").endswith("-gpu")
    assert parent("--gpus 1").endswith("-gpu")
    assert parent("--workers 1 --machine CPU --worker-machine T4_1X").endswith("-gpu")
    assert parent("--tpu") == images.TPU_BASE  # with the TPU-VM wheel and libtpu on it
    assert parent("--parent-image python:3.11") == "python:3.11"
    spec = options.to_spec(options.parse_line(""), settings)
    assert images.parent_image(spec, "2.15.1") == "tensorflow/tensorflow:2.15.1"


def test_job_names_are_valid(tmp_path: Path) -> None:
    for stem, expected in [("train", "train"), ("My Notebook (copy 2)", "My Notebook -copy 2")]:
        sel = Selection(cells=[], notebook=tmp_path / f"{stem}.ipynb", how="t")
        assert job_name(sel) == expected
    assert job_name(Selection(cells=[], notebook=tmp_path / "!!!.ipynb", how="t")) == "notebook"
    assert job_name(Selection(cells=[], notebook=None, how="t")) == "notebook"


def test_the_core_imports_no_frontend() -> None:
    """plan.py is the core: it must not pull IPython, tornado or ipywidgets in by itself."""
    import subprocess

    code = (
        "import sys, tfc_jupyter.planner.plan, tfc_jupyter.cli\n"
        "heavy = ('IPython', 'tornado', 'ipywidgets', 'tensorflow')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_keras3_fit_under_multiworker_is_refused_before_launch(tmp_path: Path) -> None:
    from jobutil import plan_for, write_notebook

    from tfc_jupyter.errors import SpecError

    nb = write_notebook(
        tmp_path / "k3.ipynb",
        "import keras\nmodel = keras.Sequential([keras.layers.Dense(1)])",
        "%%tfc_run --workers 1\nmodel.fit([[1.0]], [[1.0]])",
    )
    with pytest.raises(SpecError) as info:
        plan_for(nb)
    assert "use tf.keras instead of keras" in str(info.value) and "\n" not in str(info.value)
    ok = write_notebook(
        tmp_path / "tfk.ipynb",
        "import tensorflow as tf\nmodel = tf.keras.Sequential()",
        "%%tfc_run --workers 1\nmodel.fit([[1.0]], [[1.0]])",
    )
    assert any(r.startswith("tf-keras") for r in plan_for(ok).requirements)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("--machine H200_8X", "Vertex AI recommends reserved capacity for a3-ultragpu-8g"),
        ("--machine B200_8X --workers 1", "Vertex AI recommends reserved capacity for a4-highgpu"),
        ("--gpus 1 --gpu-type H100", "offers a3-highgpu-1g only as Spot or flex-start"),
        ("--gpus 2 --gpu-type P4", "P4 is a 2016 Pascal GPU (on Google Cloud since 2018"),
    ],
)
def test_vertex_plans_warn_of_legacy_gpus_and_scarce_capacity(
    settings: Settings, line: str, words: str
) -> None:
    sel = Selection(cells=[Cell(1, "print('hi')")], notebook=None, how="test")
    vertex = "--backend vertex --project my-proj-1 "
    plan = make_plan(sel, options.parse_line(vertex + line), settings)
    assert [w for w in plan.warnings if words in w], plan.warnings
    assert sum(words in w for w in plan.warnings) == 1  # said once, however many pools
    # Held capacity answers the capacity warning; on this machine neither applies.
    if "capacity" in words or "Spot" in words:
        held = make_plan(sel, options.parse_line(vertex + line + " --spot"), settings)
        assert not [w for w in held.warnings if "Spot" in w or "capacity" in w], held.warnings
    local = make_plan(sel, options.parse_line(line), settings)
    assert not [w for w in local.warnings if words in w]


def test_a_machine_without_a_listed_price_says_so(settings: Settings) -> None:
    """No verified list price: the plan shows none and links the pricing page, not $0."""
    sel = Selection(cells=[Cell(1, "print('hi')")], notebook=None, how="test")
    line = "--backend vertex --project my-proj-1 --machine H200_8X --workers 1 --worker-machine CPU"
    plan = make_plan(sel, options.parse_line(line), settings)
    assert plan.spec.cost_per_hour() is None
    text = plan.to_text(script=False)
    assert "pool 0 chief x1: H200_8X" in text and "(price not listed)" in text
    assert "estimated cost: none; no verified list price for H200_8X" in text
    assert catalog.PRICING_URL in text and "$0.00" not in text
    assert catalog.PRICING_URL in plan._repr_html_()
    assert plan.summary()["cost_per_hour"] is None
    json.dumps(plan.summary())  # null in JSON


@pytest.mark.item("nothing beside the notebook runs instead of the runtime", suite="security")
@pytest.mark.parametrize("name", ["tfc_runtime.py", "tfc_runtime"])
def test_a_module_named_like_the_runtime_is_refused_with_the_fix(
    tmp_path: Path, settings: Settings, name: str
) -> None:
    """Issue 39: a ``tfc_runtime.py`` beside the notebook ran instead of the runtime (Python
    imports from the job's folder first), and the job read "succeeded after 0.0 s"."""
    write = tmp_path / name
    if name.endswith(".py"):
        write.write_text("print('not the runtime')\n")
    else:
        write.mkdir()
        (write / "__init__.py").write_text("")
    sel = Selection(cells=[Cell(1, "print(1)")], notebook=tmp_path / "nb.ipynb", how="t")
    with pytest.raises(SpecError, match=r"has the name of the job's runtime") as err:
        make_plan(sel, options.parse_line(""), settings)
    assert err.value.hint == f"rename {name} (and its imports)"
    (tmp_path / "tfc_runtime_notes.py").write_text("")  # a name that only starts like it
    if write.is_file():
        write.unlink()
    else:
        shutil.rmtree(write)
    assert make_plan(sel, options.parse_line(""), settings).spec.name == "nb"


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_job_here_is_not_priced_in_vertex_ai_s_words(settings: Settings, backend: str) -> None:
    """Issue 38: a local job's dry run said "estimated cost: $0.22 per hour" and "about
    $0.22/h" (Vertex AI's price of its machine); it bills nothing."""
    sel = Selection(cells=[Cell(1, "print('hi')")], notebook=None, how="t")
    plan = make_plan(sel, options.parse_line(f"--backend {backend}"), settings)
    label = {"local": "this machine", "docker": "Docker on this machine"}[backend]
    assert f"cost: nothing billed (it runs on {label})" in plan.to_text(script=False)
    assert "estimated cost" not in plan.to_text(script=False)
    assert "$" not in plan._repr_html_().split("cost:", 1)[1].split("</div>", 1)[0]


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_plan_here_names_no_cloud_machine_or_hourly_price(
    tmp_path: Path, settings: Settings, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 51: the CLI's local plan printed an Artifact Registry image, a 30-file image
    context and "$0.25/h" beside "nothing billed". A local job runs in this environment: no
    image, no context; a docker job runs its image here: the image, never a price."""
    from jobutil import write_notebook

    from tfc_jupyter import cli

    nb = write_notebook(tmp_path / "nb.ipynb", "import os\nprint(os.getcwd())")
    assert cli.main(["plan", str(nb), "--backend", backend, "--workers", "1"]) == 0
    text = capsys.readouterr().out.split("--- script.py ---", 1)[0]
    assert not re.search(r"\$\d|\d/h\b", text) and "n1-standard" not in text
    unit = {"local": "process", "docker": "container"}[backend]
    assert f"pool 0 chief x1: 1 {unit} on this machine" in text
    assert ("image:" in text) == (backend == "docker")
    assert ("image context:" in text) == (backend == "docker")
    assert cli.main(["plan", str(nb), "--backend", backend, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["image"] is None) == (backend == "local")
    assert (summary["context"] is None) == (backend == "local")
    html = make_plan(
        Selection(cells=[Cell(1, "x = 1")], notebook=None, how="t"),
        options.parse_line(f"--backend {backend}"),
        settings,
    )._repr_html_()
    assert ("image: <code>" in html) == (backend == "docker")
    assert not re.search(r"\$\d", html)
