"""Sweep methods (issue 47): one class per method in ``tfc_jupyter.sweep.methods``, and a
registry every surface reads. A method defined here, in one place, is then on every surface:
``--method`` parses and its help lists it, the form offers it, the plan and its dry run show
it, and a local sweep asks its sampler; Vertex AI, which has no algorithm for it, refuses it
as the plan is made, in one line with the fix (never a KeyError)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jobutil import plan_for, write_notebook

from tfc_jupyter import cli, registry
from tfc_jupyter.backends.vertex import request as vertex_request
from tfc_jupyter.client import Client
from tfc_jupyter.errors import SpecError
from tfc_jupyter.job import options
from tfc_jupyter.job.options import JobOptions
from tfc_jupyter.planner import fields
from tfc_jupyter.server import handlers
from tfc_jupyter.sweep import methods
from tfc_jupyter.sweep.spec import sweep_spec
from tfc_jupyter.trials.trials import _optuna, _study

pytestmark = pytest.mark.usefixtures("tfc_env")

WORDS = ["--sweep", "lr=loguniform(1e-4,1e-1)", "--sweep", "units=[8,16]", "--metric", "val_loss"]
SWEEP = '--sweep "lr=loguniform(1e-4,1e-1)" --sweep "units=[8,16]" --metric val_loss'


@pytest.fixture
def sobol(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[methods.Method]]:
    """A new method, defined (and so registered) in this one place; the registry is restored
    after the test."""
    monkeypatch.setattr(methods, "METHODS", dict(methods.METHODS))

    class Sobol(methods.Method):
        """Quasi-random values that cover the space evenly (Optuna's QMC sampler)."""

        name = "sobol"
        about = "evenly spread"

        def sampler(self, sweep: methods.Sweep) -> Any:
            import optuna

            with warnings.catch_warnings():  # "experimental": a test's method may be
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.samplers.QMCSampler(qmc_type="sobol", seed=0)

    yield Sobol


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    return write_notebook(
        tmp_path / "sweep.ipynb",
        "lr = 1e-2\nunits = 8",
        "%%tfc_run\nprint(lr, units)",
        tags={0: ["parameters"]},
    )


def _study_in(folder: Path, spec: Any) -> Any:
    """The study a local sweep of ``spec`` makes in ``folder`` (no trial runs)."""
    folder.mkdir(parents=True)
    return _study(_optuna(), folder, spec)


def _method_field() -> options.OptionField:
    return next(f for f in options.FIELDS if f.name == "method")


def test_the_three_methods_are_registered_in_their_order_bayes_first() -> None:
    assert methods.names() == ["bayes", "random", "grid"]
    assert methods.DEFAULT == "bayes" == JobOptions().method == sweep_spec(["a=[1,2]"]).method
    assert _method_field().help == (
        "Sweep: bayes (default), random or grid: how the next values are chosen."
    )
    assert fields.choices("methods") == [
        ("bayes", "bayes (learns from the trials so far)"),
        ("random", "random"),
        ("grid", "grid (every combination)"),
    ]
    api = Path(handlers.__file__).with_name("openapi.yaml").read_text(encoding="utf-8")
    plan = yaml.safe_load(api)["components"]["schemas"]["Plan"]  # the file lists them too
    assert plan["properties"]["sweep"]["properties"]["method"]["enum"] == methods.names()


def test_the_three_methods_make_the_samplers_they_made(tmp_path: Path) -> None:
    # a grid's values are its own (Grid.next_values): its sampler is never asked
    samplers = {"bayes": "TPESampler", "random": "RandomSampler", "grid": "RandomSampler"}
    for name, sampler in samplers.items():
        spec = sweep_spec(["units=[8,16,32]", "layers=int(1,3)"], method=name, trials=9)
        study = _study_in(tmp_path / name, spec)
        assert type(study.sampler).__name__ == sampler
    tpe = _study_in(tmp_path / "tpe", sweep_spec(["a=[1,2]"], trials=30)).sampler
    assert tpe._n_startup_trials == 10


def test_a_new_method_is_on_every_surface(
    sobol: type[methods.Method], notebook: Path, tmp_path: Path
) -> None:
    # --method parses on the magic's line, and its help and the API's schema list it.
    assert JobOptions.from_line(f"{SWEEP} --method sobol").method == "sobol"
    assert options.parse_line("--method sobol").method == "sobol"
    assert _method_field().help == (
        "Sweep: bayes (default), random, grid or sobol: how the next values are chosen."
    )
    assert "grid or sobol" in " ".join(options.parser().format_help().split())
    schema = options.options_schema()["properties"]["method"]
    assert "grid or sobol" in schema["description"]

    # The form offers it, with its words.
    assert fields.choices("methods")[-1] == ("sobol", "sobol (evenly spread)")
    method = next(f for f in fields.fields_json() if f["name"] == "method")
    assert {"value": "sobol", "label": "sobol (evenly spread)"} in method["choices"]
    assert "sobol" in method["help"]

    # The jobs API documents it among a plan's sweep methods.
    plan_schema = yaml.safe_load(handlers.openapi_document())["components"]["schemas"]["Plan"]
    assert plan_schema["properties"]["sweep"]["properties"]["method"]["enum"][-1] == "sobol"

    # The plan, its summary and its dry run's text show it.
    plan = plan_for(notebook, f"{SWEEP} --method sobol")
    assert plan.sweep is not None and plan.sweep.spec.method == "sobol"
    assert plan.summary()["sweep"]["method"] == "sobol"
    assert "sobol" in plan.to_text()
    assert cli.main(["plan", str(notebook), *WORDS, "--method", "sobol", "--trials", "3"]) == 0

    # A local sweep asks its sampler for the values.
    study = _study_in(tmp_path / "study", plan.sweep.spec)
    assert type(study.sampler).__name__ == "QMCSampler"


def test_the_registry_is_restored_after_a_test_that_adds_a_method() -> None:
    assert "sobol" not in methods.METHODS
    with pytest.raises(SpecError, match="--method 'sobol' is unknown"):
        sweep_spec(["a=[1,2]"], method="sobol")


def test_vertex_ai_names_the_methods_it_runs_and_the_local_ones_run_every_one() -> None:
    assert registry.traits("vertex").sweep_methods == {"bayes", "random", "grid"}
    assert set(vertex_request.ALGORITHMS) == set(methods.names())
    assert registry.traits("local").sweep_methods is None
    assert registry.traits("docker").sweep_methods is None


VERTEX = "--backend vertex --project my-project --region us-central1 --image i:1".split()
REFUSAL = (
    "Vertex AI cannot run --method sobol. Fix: use --method bayes (or random or grid), or use "
    "--backend local"
)


@pytest.mark.parametrize("command", [["plan"], ["run", "--dry-run"]])
def test_vertex_ai_refuses_a_method_it_has_no_algorithm_for_in_one_line(
    sobol: type[methods.Method],
    notebook: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    words = [*command[:1], str(notebook), *command[1:], *WORDS, *VERTEX, "--method", "sobol"]
    assert cli.main(words) == 2
    out, err = capsys.readouterr()
    assert err.strip().splitlines() == [f"tfc-jupyter: error: {REFUSAL}"]
    assert "Traceback" not in out + err and "KeyError" not in out + err


def test_the_refusal_comes_as_the_plan_is_made_with_its_field(
    sobol: type[methods.Method], notebook: Path
) -> None:
    flags = f"{SWEEP} {' '.join(VERTEX)} --method sobol --dry-run"
    with pytest.raises(SpecError) as info:
        Client().plan_notebook(notebook, JobOptions.from_line(flags))
    assert str(info.value) == REFUSAL and info.value.field == "method"
    plan = plan_for(notebook, f"{SWEEP} {' '.join(VERTEX)} --method random --dry-run")
    assert plan.preview().request["body"]["studySpec"]["algorithm"] == "RANDOM_SEARCH"


def test_the_jobs_api_dry_run_refuses_it_as_a_request_error(
    sobol: type[methods.Method], notebook: Path
) -> None:
    from tfc_jupyter.server.service import JobService

    opts = {
        "sweep": ["lr=loguniform(1e-4,1e-1)"],
        "method": "sobol",
        "backend": "vertex",
        "project": "my-project",
        "image": "i:1",
        "dry_run": True,
    }
    with pytest.raises(SpecError) as info:  # the handler answers it as a 400, its fixes as data
        JobService(notebook.parent).create({"path": notebook.name, "options": opts})
    error = info.value.to_dict()
    assert info.value.http_status == 400 and error["field"] == "method", error
    assert [(f["action"], f["option"], f["value"]) for f in error["fixes"]] == [
        ("set", "method", "bayes"),
        ("set", "backend", "local"),
    ]


def test_a_tuning_job_of_a_method_vertex_ai_does_not_run_is_a_spec_error() -> None:
    spec = sweep_spec(["a=[1,2]"])
    with pytest.raises(SpecError, match="Vertex AI cannot run --method sobol"):
        vertex_request._algorithm("sobol")
    assert vertex_request._algorithm(spec.method) == "ALGORITHM_UNSPECIFIED"


def test_a_method_s_own_checks_are_its_own(sobol: type[methods.Method]) -> None:
    with pytest.raises(SpecError, match="a grid cannot list lr"):
        sweep_spec(["lr=uniform(0,1)"], method="grid")
    assert sweep_spec(["lr=uniform(0,1)"], method="sobol").trials == 10
    assert sweep_spec(["a=[1,2]"], method="sobol").trials == 2
    assert sweep_spec(["a=[1,2]"], method="sobol", trials=5).trials == 5  # repeats allowed
    with pytest.raises(SpecError, match="more than the grid's 2 combinations"):
        sweep_spec(["a=[1,2]"], method="grid", trials=5)
