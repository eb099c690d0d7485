"""Sweeps run here (``tfc_jupyter.trials.trials``): each trial a real local job, its values on the
notebook's lines, Optuna choosing, the folder keeping what ran. The trials report epochs
through the runtime's own channel (``tfc_runtime.results.emit``), so a trial's metric is a
known function of its values: the test can tell that the values reached the code."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import pytest

from tfc_jupyter import cli
from tfc_jupyter.client import Client
from tfc_jupyter.errors import JobConflict, SpecError
from tfc_jupyter.job.options import JobOptions
from tfc_jupyter.trials.trials import Sweep, _driving, run_sweep, sweep_folder

pytestmark = pytest.mark.usefixtures("tfc_env")

RUN = """%%tfc_run
import math
from tfc_runtime.results import emit
score = units / 100 - (math.log10(lr) + 2) ** 2
for epoch in (1, 2):
    emit({"event": "epoch", "fit": 0, "epoch": epoch,
          "metrics": {"loss": 1 - score, "val_score": score * epoch / 2}})
print("trained with", lr, units)
"""


def score(lr: float, units: int) -> float:
    """What a trial of :data:`RUN` reports last as val_score."""
    return units / 100 - (math.log10(lr) + 2) ** 2


def _notebook(folder: Path, run: str = RUN) -> Path:
    cells = [
        {
            "cell_type": "code",
            "metadata": {"tags": ["parameters"]},
            "source": "lr = 0.1  # the notebook's own\nunits = 8\n",
        },
        {"cell_type": "code", "metadata": {}, "source": run},
    ]
    for i, c in enumerate(cells):
        c.update(outputs=[], execution_count=None, id=f"c{i}")
    nb = folder / "sweep.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    return nb


SWEEP = ("--sweep", "lr=loguniform(1e-4,1)", "--sweep", "units=[8,16,32]", "--metric", "val_score")


def _plan(client: Client, nb: Path, *words: str):  # type: ignore[no-untyped-def]
    return client.plan_file(str(nb), JobOptions.from_words([*SWEEP, *words]), how="test")


def _sweep_jobs(client: Client, sweep: Sweep) -> list[str]:
    return [
        r.id for r in client.list(limit=None) if dict(r.spec["labels"]).get("tfc-sweep") == sweep.id
    ]


@pytest.mark.slow
def test_a_sweep_runs_each_trial_as_a_job_with_its_values(tmp_path: Path) -> None:
    client = Client()
    sweep = run_sweep(
        client, _plan(client, _notebook(tmp_path), "--trials", "6", "--parallel", "2")
    )
    assert len(sweep.trials) == 6 and {t.state for t in sweep.trials} == {"succeeded"}
    for trial in sweep.trials:  # the metric is what the code computed from the trial's values
        lr, units = trial.values["lr"], trial.values["units"]
        assert trial.metric == pytest.approx(score(lr, units)), trial
        assert f"[chief] trained with {lr} {units}" in client.job(trial.job_id).logs()
    assert sorted(_sweep_jobs(client, sweep)) == sorted(t.job_id for t in sweep.trials)
    best = max(sweep.trials, key=lambda t: t.metric or -math.inf)
    assert sweep.best_trial is best and sweep.best is not None and sweep.best.id == best.job_id
    lines = sweep.table_text().splitlines()
    assert lines[0].split() == ["#", "lr", "units", "state", "val_score", "time", "job"]
    assert len(lines) == 7 and sum("succeeded*" in line for line in lines) == 1
    frame = sweep.table()  # a DataFrame: Jupyter shows it rich, not as a quoted string
    assert list(frame.columns[:4]) == ["lr", "units", "state", "val_score"]
    assert frame.index.name == "trial" and list(frame.index) == [t.number for t in sweep.trials]
    assert frame["val_score"].dtype == float and frame["units"].dtype.kind == "i"
    assert frame.loc[frame["best"]].index.tolist() == [best.number]
    assert frame.loc[best.number, "job"] == best.job_id and "<table" in frame._repr_html_()
    svg = sweep._repr_html_()
    assert svg.count("<circle") == 6 * 3  # metric by trial, against lr, against units
    # The sweep tab's view (GET /sweeps/ID), read back from the trial jobs: the same trials.
    from tfc_jupyter.server.service import JobService

    shown = JobService(tmp_path).sweep(sweep.id.lower()[-63:])
    assert shown["summary"] == sweep.summary_line()
    assert (shown["metric"], shown["goal"], shown["names"]) == ("val_score", "max", ["lr", "units"])
    assert shown["best"] == best.number
    for got, trial in zip(shown["trials"], sweep.trials, strict=True):
        assert (got["number"], got["values"], got["state"], got["job_id"]) == (
            trial.number,
            trial.values,
            trial.state,
            trial.job_id,
        )
        assert got["metric"] == pytest.approx(trial.metric)
        assert got["seconds"] is not None and got["seconds"] >= 0  # a trial may take 0.0 s
    assert shown["svg"].count("<circle") == 6 * 3
    assert "currentColor" not in shown["svg"]  # an image: its ink is fixed, for any theme


@pytest.mark.slow
def test_a_stopped_sweep_goes_on_without_running_a_trial_twice(tmp_path: Path) -> None:
    """The driver is interrupted once 3 trials ended (as a kernel interrupt or death would):
    the trial still running goes on, and the same sweep run again ends with 6 trials in all,
    each value set run once."""
    client = Client()
    nb = _notebook(tmp_path)
    plan = _plan(client, nb, "--trials", "6", "--parallel", "2")

    def stop_after_three(sweep: Sweep) -> None:
        if sum(t.state == "succeeded" for t in sweep.trials) >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(client, plan, on_change=stop_after_three)
    again = run_sweep(client, _plan(client, nb, "--trials", "6", "--parallel", "2"))
    assert len(again.trials) == 6 and {t.state for t in again.trials} == {"succeeded"}
    jobs = _sweep_jobs(client, again)
    assert len(jobs) == 6 and sorted(jobs) == sorted(t.job_id for t in again.trials)
    more = run_sweep(client, _plan(client, nb, "--trials", "7"))  # more trials: the same sweep
    assert len(more.trials) == 7 and more.id == again.id


@pytest.mark.slow
def test_a_metric_the_trials_do_not_report_fails_them_and_says_what_they_did(
    tmp_path: Path,
) -> None:
    client = Client()
    nb = _notebook(tmp_path)
    plan = client.plan_file(
        str(nb),
        JobOptions.from_words([*SWEEP[:4], "--metric", "val_accuracy", "--trials", "6"]),
        how="test",
    )
    sweep = run_sweep(client, plan)
    assert [t.state for t in sweep.trials] == ["failed", "failed"]  # stopped at a third of 6
    assert sweep.trials[0].note == "it reported no val_accuracy (loss, val_score)"
    assert sweep.best is None


def test_one_process_drives_a_sweep_at_a_time(tmp_path: Path) -> None:
    client = Client()
    plan = _plan(client, _notebook(tmp_path))
    with _driving(sweep_folder(client, plan)), pytest.raises(JobConflict, match="another process"):
        run_sweep(client, plan)


@pytest.mark.slow
def test_the_cli_runs_a_sweep_and_prints_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = _notebook(tmp_path)
    code = cli.main(["run", str(nb), *SWEEP, "--trials", "2", "--method", "random"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines()[0].split()[:4] == ["#", "lr", "units", "state"]
    assert "trial 0 running: lr=" in err and "trial 1 succeeded: val_score " in err
    assert "of 2 trials (2 succeeded); best #" in err


def test_a_name_the_notebook_does_not_assign_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = _notebook(tmp_path)
    code = cli.main(["run", str(nb), "--sweep", "epochs=[1,2]"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip().splitlines() == [
        "tfc-jupyter: error: --sweep epochs: the job's cells never assign epochs at top level. "
        "Fix: set it once to a plain value (epochs = ...) in a cell tagged 'parameters' "
        "(Property Inspector, Cell Tags)"
    ]
    assert Client().list(limit=None) == []
    with pytest.raises(SpecError):
        _plan(Client(), nb, "--method", "grid")  # lr is a float range


def test_no_surface_launches_a_sweep_as_one_job(tmp_path: Path) -> None:
    """A plan with a sweep launched as one job would run the notebook's own values, once: the
    client refuses it. The jobs API dry-runs it, with the lines it replaces, as a sweep it
    would start (its driver: tests/test_server_sweep.py), launching no job itself."""
    from tfc_jupyter.server.service import JobService

    nb = _notebook(tmp_path)
    client = Client()
    with pytest.raises(SpecError, match="a sweep on this machine runs as trials that the"):
        client.submit(_plan(client, nb))
    service = JobService(tmp_path)
    options = {"sweep": ["lr=loguniform(1e-4,1)"], "metric": "val_score"}
    status, dry = service.create({"path": nb.name, "options": {**options, "dry_run": True}})
    assert status == 200
    assert dry["plan"]["sweep"]["params"] == [
        {
            "name": "lr",
            "space": "loguniform(0.0001, 1.0)",
            "replaces": "cell 1, line 1",
            "line": "lr = 0.1  # the notebook's own",
        }
    ]
    assert "sweep: 10 trials, 1 at once, bayes; best: highest val_score" in dry["text"]
    assert dry["plan"]["refused"] is None  # the API starts it as a sweep, not as one job
    assert dry["sweep"] == "it would run as a sweep: its trials are jobs of their own"
    assert client.list(limit=None) == []


def test_a_sweep_on_vertex_ai_plans_as_one_launchable_job(tmp_path: Path) -> None:
    """Vertex AI runs a sweep as its own tuning job (tests/test_vertex_tuning.py runs one):
    the plan is not refused, and the jobs API would launch it as one job."""
    flags = ("--backend", "vertex", "--project", "my-project", "--image", "registry.test/x:1")
    plan = _plan(Client(), _notebook(tmp_path), *flags)
    assert plan.sweep is not None  # made, not refused (here only for want of credentials)
    assert plan.refused is None or "credentials" in str(plan.refused)
    assert "/hyperparameterTuningJobs" in plan.preview().request["url"]


HP_RUN = """%%tfc_run
import tfc_jupyter
from tfc_runtime.results import emit
rate = tfc_jupyter.hp("rate", 0.5)
emit({"event": "epoch", "fit": 0, "epoch": 1, "metrics": {"val_score": rate * 10}})
print("rate", rate)
"""


@pytest.mark.slow
def test_code_that_reads_hp_gets_each_trial_s_value_and_the_kernel_its_default(
    tmp_path: Path,
) -> None:
    import tfc_jupyter

    assert tfc_jupyter.hp("rate", 0.5) == 0.5  # in the kernel: the default
    client = Client()
    nb = _notebook(tmp_path, HP_RUN)
    words = ["--sweep", "rate=[0.1, 0.2, 0.3]", "--metric", "val_score", "--method", "grid"]
    plan = client.plan_file(str(nb), JobOptions.from_words(words), how="test")
    assert plan.sweep is not None
    assert [r.describe() for r in plan.sweep.replaced] == [
        'rate: cell 2, line 4 (rate = tfc_jupyter.hp("rate", 0.5))'
    ]
    sweep = run_sweep(client, plan)
    assert sorted((t.values["rate"], t.metric) for t in sweep.trials) == [
        (0.1, 1.0),
        (0.2, 2.0),
        (0.3, 3.0),
    ]


@pytest.mark.slow
def test_a_sweep_whose_command_was_killed_goes_on_without_running_a_trial_twice(
    tmp_path: Path,
) -> None:
    """``tfc-jupyter run --sweep`` SIGKILLed once its third trial ended (as a dead kernel): the
    same command again waits for the trial still running and ends with 6 trials in all."""
    import os
    import signal
    import subprocess
    import sys

    nb = _notebook(tmp_path, RUN.replace("print(", "import time; time.sleep(0.5); print("))
    argv = [sys.executable, "-m", "tfc_jupyter.cli", "run", str(nb), *SWEEP]
    argv += ["--trials", "6", "--parallel", "2"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    ended = 0
    assert proc.stderr is not None
    for line in proc.stderr:
        ended += " succeeded: " in line
        if ended == 3:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert ended == 3
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "6 of 6 trials (6 succeeded)" in done.stderr
    started = [line for line in done.stderr.splitlines() if " running: " in line]
    assert len(started) <= 3, done.stderr  # only what was left, or was still running
    client = Client()
    trials = [
        dict(r.spec["labels"]).get("tfc-trial")
        for r in client.list(limit=None)
        if "tfc-sweep" in dict(r.spec["labels"])
    ]
    assert sorted(trials) == ["0", "1", "2", "3", "4", "5"]  # six jobs, none run twice


@pytest.mark.slow
def test_run_with_sweep_keywords_runs_the_sweep(tmp_path: Path) -> None:
    import tfc_jupyter as tfc

    nb = _notebook(tmp_path)
    sweep = tfc.run(
        entry_point=str(nb),
        sweep=["lr=loguniform(1e-4,1)", "units=[8,16,32]"],
        metric="val_score",
        trials=2,
    )
    assert isinstance(sweep, Sweep) and len(sweep.trials) == 2
    assert sweep.best is not None and sweep.best_trial is not None


@pytest.mark.parametrize(("trials", "parallel", "workers"), [(6, 2, 0), (5, 2, 1), (1, 1, 2)])
def test_the_plan_estimates_the_sweep_s_time_and_cost(
    tmp_path: Path, trials: int, parallel: int, workers: int
) -> None:
    """The dry run (text and JSON) says the trials, how many at once and in how many rounds,
    the hours in all where --timeout bounds a trial, and on Vertex AI the machine-hours and
    the cost of one trial times the trials; here, that nothing is billed."""
    from tfc_jupyter.server.service import JobService

    client = Client()
    nb = _notebook(tmp_path)
    counts = ["--trials", str(trials), "--parallel", str(parallel), "--timeout", "90m"]
    flags = ["--backend", "vertex", "--project", "my-project", "--workers", str(workers)]
    plan = _plan(client, nb, *flags, *counts, "--dry-run")
    rounds = math.ceil(trials / parallel)
    est = plan.summary()["sweep_estimate"]
    one = plan.cost_at_most()
    assert one is not None and est["cost"] == pytest.approx(one * trials)
    assert (est["trials"], est["parallel"], est["rounds"]) == (trials, parallel, rounds)
    assert est["machines_per_trial"] == 1 + workers and est["hours"] == 1.5 * rounds
    assert est["machine_hours"] == pytest.approx((1 + workers) * 1.5 * trials)
    assert est["text"] in plan.to_text(script=False).splitlines()
    assert est["text"].endswith(f"at most ${one:,.2f} a trial x {trials} = ${one * trials:,.2f}")
    assert (
        f"{rounds} round" in est["text"]
        and f"{est['machine_hours']:g} machine-hours" in est["text"]
    )

    here = _plan(client, nb, *counts, "--dry-run").summary()["sweep_estimate"]
    assert (here["billed"], here["cost"], here["machine_hours"]) == (False, None, None)
    assert here["text"].endswith(
        f"at most {1.5 * rounds:g} h in all; nothing billed (it runs on this machine)"
    )
    words = {"sweep": list(SWEEP[1::2][:2]), "metric": "val_score", "trials": trials,
             "parallel": parallel, "dry_run": True}  # fmt: skip
    status, dry = JobService(tmp_path).create({"path": nb.name, "options": words})
    assert status == 200 and dry["plan"]["sweep_estimate"]["rounds"] == rounds
    assert dry["plan"]["sweep_estimate"]["text"] in dry["text"]


def test_the_plan_prices_the_whole_sweep(tmp_path: Path) -> None:
    """Before launch: a billed sweep costs at most its trials times one trial's bound."""
    client = Client()
    nb = _notebook(tmp_path)
    words = ["--backend", "vertex", "--project", "my-project", "--dry-run", "--trials", "6"]
    plan = _plan(client, nb, *words, "--timeout", "2h")
    one = plan.cost_at_most()
    assert one is not None
    assert f"; the sweep: 6 trials, at most ${one * 6:,.2f}" in plan.to_text(script=False)
    here = _plan(client, nb, "--dry-run")
    assert "cost: nothing billed (it runs on this machine)" in here.to_text(script=False)


GRID_RUN = """%%tfc_run
import time
from tfc_runtime.results import emit
time.sleep(1)
emit({"event": "epoch", "fit": 0, "epoch": 1, "metrics": {"val_score": units + lr}})
"""


@pytest.mark.slow
def test_a_grid_runs_each_point_once_though_a_trial_was_stopped(tmp_path: Path) -> None:
    """A 2-point grid, 2 at once; the user stops the first trial (the sidebar's cancel): the
    trial that replaces it runs the stopped point, not the other one again (Optuna's grid
    sampler counted the stopped point as done and ran a done one twice). It stops at the
    grid's 2 points, and running it again runs nothing more."""
    client = Client()
    nb = _notebook(tmp_path, GRID_RUN)
    words = ["--sweep", "units=[8,16]", "--sweep", "lr=[0.5]", "--metric", "val_score"]
    plan = client.plan_file(
        str(nb), JobOptions.from_words([*words, "--method", "grid", "--parallel", "2"]), how="test"
    )
    assert plan.sweep is not None and plan.sweep.spec.trials == 2
    stopped: list[int] = []

    def stop_the_first(sweep: Sweep) -> None:
        for trial in sweep.trials:
            if trial.number == 0 and trial.state == "running" and not stopped:
                assert trial.job_id is not None
                stopped.append(trial.values["units"])
                client.job(trial.job_id).cancel()

    sweep = run_sweep(client, plan, on_change=stop_the_first)
    ran = sorted((t.values["units"], t.state) for t in sweep.trials)
    assert ran == sorted([(8, "succeeded"), (16, "succeeded"), (stopped[0], "stopped")]), ran
    for trial in sweep.trials:  # each trial ran its own values
        assert trial.state == "stopped" or trial.metric == trial.values["units"] + 0.5
    again = run_sweep(client, plan)  # the grid is covered: the same sweep runs nothing more
    assert len(again.trials) == 3 and len(_sweep_jobs(client, again)) == 3


def test_a_grid_larger_than_its_trials_is_refused_with_the_fix(tmp_path: Path) -> None:
    """--trials over a grid's points is refused with the fix: the grid stops at its size."""
    from tfc_jupyter.errors import TfcError

    client = Client()
    words = ["--sweep", "units=[8,16]", "--metric", "val_score", "--method", "grid"]
    with pytest.raises(TfcError) as info:
        client.plan_file(
            str(_notebook(tmp_path)), JobOptions.from_words([*words, "--trials", "5"]), how="t"
        )
    assert [f.in_flags() for f in info.value.fixes] == ["pass --trials 2 or fewer"]


FAILING_RUN = """%%tfc_run
from tfc_runtime.results import emit
score = 1 / units
emit({"event": "epoch", "fit": 0, "epoch": 1, "metrics": {"val_score": score}})
"""
FAILING = ["--sweep", "units=[0, 1, 2]", "--method", "grid", "--metric", "val_score"]


def _stopped_line(text: str) -> None:
    """The end says why the sweep stopped and what it did not run."""
    assert (
        "sweep stopped: 1 of 3 trials failed (trial 0: chief exited with status 1 at cell 2, "
        "line 3: ZeroDivisionError: division by zero); 2 trials not run"
    ) in text, text


@pytest.mark.slow
def test_a_sweep_stopped_by_its_failed_trials_says_why_and_fails_as_a_job_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A third of 3 trials failed (units=0 divides by zero): the sweep stops. It said only
    "1 of 3 trials (1 failed)" and the cell went on as if it ran; now its end line says why and
    what was not run, the cell raises as a failed job's does, run() too, and the CLI exits 1."""
    from IPython.testing import globalipapp

    import tfc_jupyter as tfc
    from tfc_jupyter.trials.trial_table import SweepFailed

    nb = _notebook(tmp_path, FAILING_RUN)
    assert cli.main(["run", str(nb), *FAILING]) == 1
    _stopped_line(capsys.readouterr().err)

    with pytest.raises(SweepFailed) as raised:
        tfc.run(entry_point=str(nb), sweep=["units=[0, 1, 2]"], method="grid", metric="val_score")
    _stopped_line(str(raised.value))
    assert [t.state for t in raised.value.sweep.trials] == ["failed"]

    globalipapp.start_ipython()
    ip = globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "tfc_jupyter")
    monkeypatch.setenv("JPY_SESSION_NAME", str(nb))
    body = FAILING_RUN.partition("\n")[2]
    with pytest.raises(SweepFailed) as in_cell:
        ip.run_cell_magic("tfc_run", " ".join(shlex.quote(w) for w in FAILING), body)
    shown = in_cell.value._render_traceback_()
    assert len(shown) == 2 and shown[0].startswith("\x1b[31mSweep "), shown
    _stopped_line(shown[0])
    assert f"%tfc_logs {in_cell.value.sweep.trials[0].job_id}" in shown[1]
    assert ip.user_ns["_tfc_sweep"] is in_cell.value.sweep
