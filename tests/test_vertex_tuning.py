"""A sweep on Vertex AI (issue 37): one HyperparameterTuningJob, against the local Vertex server.

The backend creates the tuning job through Vertex AI's REST API; the server parses it into
``aiplatform_v1.HyperparameterTuningJob`` strictly, plays Vizier and runs each trial's custom job
for real (:mod:`vertex_tuning`): the trial spec is the single job's, the trial's values come as
``--NAME=VALUE`` arguments, and the metric is read from the file the runtime writes. Nothing of
tfc_jupyter is patched.
"""

from __future__ import annotations

import json
import re
import shlex
import textwrap
from pathlib import Path

import pytest
from google.cloud.aiplatform_v1.types import HyperparameterTuningJob
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobutil import plan_for, write_notebook
from test_vertex_backend import FLAGS, image_folder
from test_vertex_backend import home as home  # a fixture: the server's endpoints, fast polls
from vertex_server import Fault, VertexServer, unsigned
from vertex_tuning import check_study

from tfc_jupyter.backends.vertex import request as vertex_request
from tfc_jupyter.client import Client
from tfc_jupyter.errors import BackendError, SpecError
from tfc_jupyter.jobs import launch, store_for
from tfc_jupyter.store.records import JobState
from tfc_jupyter.trials.trials import run_sweep
from tfc_jupyter.trials.tuned import read_trials

TUNING = r"/hyperparameterTuningJobs"
DATA = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], dtype="float32") > 0).astype("float32")
""")
FIT = textwrap.dedent("""\
    %%tfc_run
    print(f"trained with lr={lr!r} units={units!r}")
    tf.keras.utils.set_random_seed(1)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(units),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    model.compile(tf.keras.optimizers.Adam(lr), "binary_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, epochs=2, validation_split=0.25, verbose=0)
    print("VAL", repr(history.history["val_accuracy"][-1]))
""")
SWEEP = (
    '--sweep "lr=loguniform(1e-3,3e-1)" --sweep "units=[2,4,16]" --trials 4 --parallel 2 '
    "--metric val_accuracy"
)


def _notebook(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_notebook(
        folder / "sweep.ipynb",
        "lr = 1e-2\nunits = 8",
        DATA,
        FIT,
        tags={0: ["parameters"]},
    )


@pytest.mark.slow
def test_a_sweep_runs_on_vertex_ai_as_one_tuning_job_of_the_single_job_s_spec(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    nb = _notebook(tmp_path / "nb")
    plan = plan_for(nb, f"{FLAGS} --workers 1 --gpus 1 {SWEEP}")
    image_folder(vertex_server, plan, tmp_path / "image")
    changes: list[str] = []
    sweep = run_sweep(
        Client(store=store_for(home)), plan, on_change=lambda s: changes.append(s.summary_line())
    )

    # One tuning job, parsed strictly by the server: the trial spec is the single job's.
    created = vertex_server.received("POST", TUNING + "$")
    assert len(created) == 1 and not vertex_server.received("POST", r"/customJobs$")
    body = created[0].body
    HyperparameterTuningJob.from_json(json.dumps(body), ignore_unknown_fields=False)
    single = vertex_request.custom_job_body(plan.spec, str(plan.spec.image.image))
    assert unsigned(body)["trialJobSpec"] == single["jobSpec"]  # and each pool's report key
    assert len(body["trialJobSpec"]["workerPoolSpecs"]) == 2
    assert body["studySpec"]["metrics"] == [{"metricId": "val_accuracy", "goal": "MAXIMIZE"}]

    # The job succeeded with four trials, each trained with the values Vertex AI passed.
    record = sweep.job.record() if sweep.job else None
    assert record is not None and record.state is JobState.SUCCEEDED, record
    assert sweep.state == "succeeded" and len(sweep.trials) == 4, sweep.summary_line()
    tuning = vertex_server.tuning_job(record.handle["resource_name"]).snapshot()
    logs = Path(record.log_dir)
    for trial in sweep.trials:
        assert trial.state == "succeeded", (trial, sweep.summary_line())
        chief = (logs / f"trial-{trial.number}.chief.log").read_text()
        assert (logs / f"trial-{trial.number}.worker-0.log").exists()
        ran = re.search(r"trained with lr=(\S+) units=(\S+)", chief)
        assert ran is not None, chief
        assert float(ran.group(1)) == pytest.approx(trial.values["lr"], rel=1e-12)
        assert int(ran.group(2)) == trial.values["units"] and trial.values["units"] in (2, 4, 16)
        # The metric Vizier read is the runtime's file's: the last epoch's val_accuracy.
        printed = float(re.findall(r"VAL (\S+)", chief)[-1])
        assert trial.metric == pytest.approx(printed, rel=1e-6)
        assert [m for _, m in trial.curve][-1] == trial.metric and len(trial.curve) == 2
        served = next(t for t in tuning["trials"] if t["id"] == str(trial.number))
        assert served["finalMeasurement"]["metrics"][0]["value"] == trial.metric
    assert len({t.values["lr"] for t in sweep.trials}) > 1
    best = max(sweep.trials, key=lambda t: (t.metric or 0.0, -t.number))
    assert sweep.best_trial is best and sweep.best is None  # the trials are Vertex AI's jobs
    assert f"best #{best.number} val_accuracy" in sweep.summary_line()
    assert changes and re.search(r"job \S+ (queued|pending|running)", changes[0]), changes
    assert read_trials(logs.parent, sweep.spec)[0].number == 1

    # Running the same sweep again follows the same job: nothing is created twice.
    again = run_sweep(Client(store=store_for(home)), plan)
    assert again.job_id == sweep.job_id and len(vertex_server.received("POST", TUNING + "$")) == 1


def test_cancelling_a_sweep_s_job_cancels_its_trials(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    nb = _notebook(tmp_path / "nb")
    plan = plan_for(nb, f"{FLAGS} {SWEEP}")
    image_folder(vertex_server, plan, tmp_path / "image")
    vertex_server.provision_delay = 30.0  # the trials wait to start: cancelled before they do
    job = launch(plan, store=store_for(home))
    tuning = vertex_server.tuning_job(job.record().handle["resource_name"])
    record = job.cancel()
    assert record.state is JobState.CANCELLED, record
    assert tuning.state() == "JOB_STATE_CANCELLED"
    assert vertex_server.received("POST", TUNING + r"/\d+:cancel$")
    for run in tuning.runs.values():
        assert run.state() == "JOB_STATE_CANCELLED"


def test_a_refused_tuning_job_is_one_line_and_a_transient_error_is_retried(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    """Google's quota refusal of the create is the one line with its fix, never retried; a
    503 is retried and the tuning job is created once."""
    nb = _notebook(tmp_path / "nb")
    plan = plan_for(nb, f"{FLAGS} {SWEEP}")
    image_folder(vertex_server, plan, tmp_path / "image")
    vertex_server.inject(Fault.quota(match=TUNING))
    with pytest.raises(BackendError) as info:
        launch(plan, store=store_for(home))
    assert "quota" in str(info.value) and "\n" not in str(info.value) and "Fix: " in str(info.value)
    assert len(vertex_server.received("POST", TUNING + "$")) == 1
    vertex_server.inject(Fault.unavailable(match=TUNING))
    job = launch(plan, store=store_for(home))
    assert job.record().handle["api_retries"] == 1
    assert len(vertex_server.received("POST", TUNING + "$")) == 3
    assert len(vertex_server.tuning_jobs) == 1
    job.cancel()


@pytest.mark.slow
def test_a_failing_trial_is_infeasible_and_too_many_fail_the_job_with_its_cell(
    vertex_server: VertexServer, home: Path, tmp_path: Path
) -> None:
    """Vizier's rule: a trial whose job fails is infeasible; as many as maxFailedTrialCount
    fail the tuning job. The error says which trial failed where in the notebook."""
    nb = _notebook(tmp_path / "nb")
    cells = nb.read_text().replace(
        'print(f\\"trained', 'assert units < 16, \\"too wide\\"\\nprint(f\\"trained'
    )
    nb.write_text(cells)
    flags = '--sweep "units=[2,16]" --method grid --trials 2 --metric val_accuracy'
    plan = plan_for(nb, f"{FLAGS} {flags}")
    assert plan.sweep is not None and plan.sweep.spec.trials == 2
    image_folder(vertex_server, plan, tmp_path / "image")
    sweep = run_sweep(Client(store=store_for(home)), plan)
    assert [(t.number, t.values, t.state) for t in sweep.trials] == [
        (1, {"units": 2}, "succeeded"),
        (2, {"units": 16}, "failed"),
    ]
    assert "exited with a non-zero status of 1" in sweep.trials[1].note
    assert sweep.state == "failed" and sweep.best_trial is sweep.trials[0]
    assert sweep.error.startswith(
        "trial 2 chief exited with status 1 at cell 3, line 2: AssertionError: too wide"
    )


def test_a_sweep_launched_with_no_wait_goes_on(
    vertex_server: VertexServer, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tfc-jupyter run --no-wait` of a Vertex AI sweep returns once its tuning job is
    created, saying how to follow it; the job goes on (and is cancelled here)."""
    from tfc_jupyter import cli

    nb = _notebook(tmp_path / "nb")
    plan = plan_for(nb, f"{FLAGS} {SWEEP}")
    image_folder(vertex_server, plan, tmp_path / "image")
    vertex_server.provision_delay = 30.0
    flags = [*FLAGS.split(), *shlex.split(SWEEP), "--no-wait"]
    assert cli.main(["run", str(nb), *flags]) == 0
    err = capsys.readouterr().err
    (tuning,) = vertex_server.tuning_jobs.values()
    assert tuning.state() in ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING")
    said = re.search(r"the sweep's job goes on: tfc-jupyter logs -f (\S+)", err)
    assert said is not None, err
    record = Client(store=store_for(home)).job(said.group(1)).cancel()
    assert record.state is JobState.CANCELLED and tuning.state() == "JOB_STATE_CANCELLED"


def _dry(nb: Path, *swept: str) -> dict:  # type: ignore[type-arg]
    flags = " ".join(f"--sweep {shlex.quote(s)}" for s in swept)
    plan = plan_for(nb, f"{FLAGS} {flags} --metric val_accuracy --dry-run")
    return plan.request()["body"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.one_of(st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False)),
        min_size=1,
        max_size=12,
        unique_by=float,
    ).filter(lambda v: all(abs(a - b) >= 1e-10 for i, a in enumerate(v) for b in v[:i]))
)
def test_a_listed_number_sweep_is_sent_in_increasing_order(tmp_path: Path, values: list) -> None:  # type: ignore[type-arg]
    """Vizier takes a DISCRETE spec's values in increasing order (the notebook's order was
    sent, which Vertex AI refuses): the fake server's rules, over any list of numbers."""
    nb = _notebook(tmp_path / "nb")
    body = _dry(nb, f"units=[{', '.join(repr(v) for v in values)}]")
    (param,) = [p for p in body["studySpec"]["parameters"] if p["parameterId"] == "units"]
    assert param["discreteValueSpec"]["values"] == sorted(float(v) for v in values)
    assert check_study(body) == []
    HyperparameterTuningJob.from_json(json.dumps(body), ignore_unknown_fields=False)


@pytest.mark.parametrize(
    ("swept", "says"),
    [
        ("units=int(0, 2002, 2)", "--sweep units: 1,002 values; Vertex AI takes at most 1,000"),
        (f"units=[{', '.join(map(str, range(1001)))}]", "1,001 values"),
        ("units=[1.0, 1.00000000000001, 2]", "are closer than 1e-10"),
        ("units=[1, '1', 'a']", "Vertex AI reads '1' twice among the categories"),
        ("units=['True', True]", "reads 'True' twice"),
    ],
)
def test_values_vertex_ai_would_refuse_are_refused_as_the_plan_is_made(
    tmp_path: Path, swept: str, says: str
) -> None:
    """Over 1,000 discrete values, two closer than 1e-10, two categories that read alike as
    text: refused before the request, a dry run's too, with the fixes as data; the local
    backend takes them (Optuna keeps each as the notebook wrote it)."""
    nb = _notebook(tmp_path / "nb")
    with pytest.raises(SpecError) as info:
        _dry(nb, swept)
    said = str(info.value)
    assert says in said and "\n" not in said, said
    assert [f.in_flags() for f in info.value.fixes] == [
        "pass --sweep units=[...] with values Vertex AI takes",
        "use --backend local (Optuna takes them)",
    ]
    assert info.value.field == "sweep"
    local = plan_for(nb, f"--sweep {shlex.quote(swept)} --metric val_accuracy --dry-run")
    assert local.sweep is not None and local.refused is None
