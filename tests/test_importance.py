"""The sweep tab's parameter importance (``tfc_jupyter/trials/importance.py``, issue 51).

From a study's journal it is Optuna's own answer on that study (a real journal, written by
Optuna), with its pruned trials; the study's journal file is left as it was. Without a study
it comes from the trials: shares in [0, 1] summing to 1, the variable the metric follows
ranked first (hypothesis over the values and metrics).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tfc_jupyter.trials.importance import from_trials, importance
from tfc_jupyter.trials.trial_table import Trial
from tfc_jupyter.trials.trials import JOURNAL

optuna = pytest.importorskip("optuna")


def _journal_study(folder: Path) -> object:
    storages = optuna.storages
    storage = storages.JournalStorage(storages.journal.JournalFileBackend(str(folder / JOURNAL)))
    study = optuna.create_study(study_name="sweep", storage=storage)
    for i in range(10):
        trial = study.ask()
        lr = trial.suggest_float("lr", 1e-3, 1.0, log=True)
        units = trial.suggest_int("units", 4, 64)
        if i == 9:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, lr * 5 + units * 0.001)
    return study


def test_a_sweeps_study_gives_optunas_importances_and_its_pruned_trials(tmp_path: Path) -> None:
    study = _journal_study(tmp_path)
    before = (tmp_path / JOURNAL).read_bytes()
    found = importance(tmp_path, [], ["lr", "units"])
    assert found["by"] == "optuna" and found["pruned"] == [9]
    expected = optuna.importance.get_param_importances(study)
    assert found["values"] == pytest.approx(dict(expected))
    assert (tmp_path / JOURNAL).read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [JOURNAL]  # no lock, no copy left


def test_without_a_study_the_trials_say_and_fewer_than_two_say_nothing(tmp_path: Path) -> None:
    one = [Trial(0, {"lr": 0.1}, "succeeded", metric=1.0)]
    found = importance(tmp_path, one, ["lr"])
    assert found == {"by": "trials", "how": found["how"], "values": None, "pruned": []}


values = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    xs=st.lists(values, min_size=3, max_size=12, unique=True),
    words=st.lists(st.sampled_from(["sgd", "adam", "rms"]), min_size=12, max_size=12),
    noise=st.lists(values, min_size=12, max_size=12),
)
def test_from_trials_shares_sum_to_one_and_follow_the_metric(
    xs: list[float], words: list[str], noise: list[float]
) -> None:
    assume(len({2 * x + 1 for x in xs}) == len(xs))  # distinct metrics (1 + 2e-37 == 1.0)
    trials = [
        Trial(i, {"lr": x, "opt": words[i], "noise": noise[i]}, "succeeded", metric=2 * x + 1)
        for i, x in enumerate(xs)
    ]
    trials.append(Trial(99, {"lr": 0.5, "opt": "sgd", "noise": 0.0}, "failed"))  # no metric
    shares = from_trials(trials, ["lr", "opt", "noise"])
    assert shares is not None and set(shares) == {"lr", "opt", "noise"}
    assert all(0 <= v <= 1 + 1e-9 for v in shares.values()), shares
    assert math.isclose(sum(shares.values()), 1.0), shares
    # the metric follows lr exactly: its rank correlation is 1, nothing ranks above it
    assert shares["lr"] == max(shares.values()), shares
