"""How much each swept parameter matters to a sweep's metric, for the sweep tab.

Where the sweep's Optuna journal is in its folder (a sweep this machine drove), Optuna's
:func:`optuna.importance.get_param_importances` on its study says it. The journal is copied
(through the border, bounded) into a temporary folder and read there: the sweep's own study
and lock are never touched. The study also tells which trials its pruner stopped.

Otherwise (a Vertex AI tuning job, a sweep whose folder is gone, Optuna not installed or the
study too small to say), the importances come from the trials' values and metrics: for a
numeric parameter the squared rank (Spearman) correlation with the metric, for a choice of
words the correlation ratio (the share of the metric's variance between its values), scaled
to sum to 1. ``by`` says which.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..returns import border
from .trial_table import Trial
from .trials import JOURNAL

JOURNAL_BYTES = 64 << 20


def study_facts(folder: Path, names: Sequence[str]) -> tuple[dict[str, float], set[int]] | None:
    """Optuna's importances of ``names`` on the study in ``folder``'s journal, and the numbers
    of the trials its pruner stopped; None where there is no study to ask (or it cannot say)."""
    try:
        data = border.read_bytes(folder, JOURNAL, JOURNAL_BYTES)
        import optuna
    except (border.Refused, OSError, ImportError):
        return None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="tfc-study-") as tmp:
        copy = Path(tmp) / JOURNAL
        copy.write_bytes(data)
        storages: Any = optuna.storages  # (its journal module is not in its stubs)
        storage = storages.JournalStorage(storages.journal.JournalFileBackend(str(copy)))
        try:
            study = optuna.load_study(study_name="sweep", storage=storage)
            pruned = {
                t.number
                for t in study.get_trials(deepcopy=False)
                if t.state is optuna.trial.TrialState.PRUNED
            }
            found = optuna.importance.get_param_importances(study)
        except (ValueError, RuntimeError, KeyError):  # too few trials, no study of that name
            return None
    return {n: float(found.get(n, 0.0)) for n in names}, pruned


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):  # ties share their mean rank
        k = i
        while k + 1 < len(order) and values[order[k + 1]] == values[order[i]]:
            k += 1
        for j in range(i, k + 1):
            ranks[order[j]] = (i + k) / 2
        i = k + 1
    return ranks


def _spearman_sq(xs: Sequence[float], ys: Sequence[float]) -> float:
    with contextlib.suppress(statistics.StatisticsError):
        return statistics.correlation(_ranks(xs), _ranks(ys)) ** 2
    return 0.0  # a constant value or metric says nothing


def _eta_sq(groups: Sequence[Any], ys: Sequence[float]) -> float:
    mean = statistics.fmean(ys)
    total = sum((y - mean) ** 2 for y in ys)
    if total == 0:
        return 0.0
    by: dict[str, list[float]] = {}
    for g, y in zip(groups, ys, strict=True):
        by.setdefault(repr(g), []).append(y)
    between = sum(len(v) * (statistics.fmean(v) - mean) ** 2 for v in by.values())
    return between / total


def from_trials(trials: Sequence[Trial], names: Sequence[str]) -> dict[str, float] | None:
    """Importances of ``names`` from the trials that reported the metric (see the module);
    None with fewer than two such trials."""
    done = [t for t in trials if t.metric is not None]
    if len(done) < 2:
        return None
    ys = [float(t.metric or 0.0) for t in done]
    raw: dict[str, float] = {}
    for name in names:
        xs = [t.values.get(name) for t in done]
        numeric = all(isinstance(x, int | float) and not isinstance(x, bool) for x in xs)
        if numeric:
            raw[name] = _spearman_sq([float(x) for x in xs if isinstance(x, int | float)], ys)
        else:
            raw[name] = _eta_sq(xs, ys)
    total = sum(raw.values())
    return {n: (v / total if total else 0.0) for n, v in raw.items()}


def importance(folder: Path, trials: Sequence[Trial], names: Sequence[str]) -> dict[str, Any]:
    """The sweep tab's ``importance``: ``values`` (parameter -> share, summing to 1; None when
    too few trials say), ``by`` (``optuna`` or ``trials``), ``how`` (in words) and ``pruned``
    (the trial numbers the study's pruner stopped)."""
    facts = study_facts(folder, names)
    if facts is not None:
        values, pruned = facts
        how = "Optuna's get_param_importances on the sweep's study"
        return {"by": "optuna", "how": how, "values": values, "pruned": sorted(pruned)}
    how = "the trials' values and metrics (rank correlation; correlation ratio for choices)"
    values_or_none = from_trials(trials, names)
    return {"by": "trials", "how": how, "values": values_or_none, "pruned": []}
