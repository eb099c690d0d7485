"""A tuning trial's metric, written where Vertex AI reads it (standard library only).

On Vertex AI a HyperparameterTuningJob reads each trial's metric from the file Google's
``cloudml-hypertune`` package writes (``CLOUD_ML_HP_METRIC_FILE``, by default
``/tmp/hypertune/output.metrics``): one JSON object a line, ``{"global_step": "3",
"val_accuracy": "0.91", "timestamp": ..., "trial": "2"}``, the last 100 kept. With
``--hp-metric NAME`` the runtime writes that file from the epochs it already reports
(:mod:`tfc_runtime.results`): the notebook needs no code and no package for it.
"""

from __future__ import annotations

import collections
import json
import math
import os
import time
from typing import Any

DEFAULT_FILE = "/tmp/hypertune/output.metrics"
"""Where ``cloudml-hypertune`` writes, unless ``CLOUD_ML_HP_METRIC_FILE`` says otherwise."""
KEEP = 100
"""Entries the file keeps, as ``cloudml-hypertune`` does."""

_metric: str | None = None
_entries: collections.deque[dict[str, Any]] = collections.deque(maxlen=KEEP)


def install(metric: str) -> None:
    """Write ``metric``'s values to the tuning file from now on (the chief only), when the job
    is a tuning trial: Vertex AI sets ``CLOUD_ML_TRIAL_ID`` (or ``CLOUD_ML_HP_METRIC_FILE``)
    there. A sweep's trial on this machine writes nothing (its metric is read from its
    reports)."""
    global _metric
    if os.environ.get("CLOUD_ML_TRIAL_ID") or os.environ.get("CLOUD_ML_HP_METRIC_FILE"):
        _metric = metric
        _entries.clear()


def path() -> str:
    """The file Vertex AI reads the trial's metric from."""
    return os.environ.get("CLOUD_ML_HP_METRIC_FILE") or DEFAULT_FILE


def observe(event: dict[str, Any]) -> None:
    """Take one report (:func:`tfc_runtime.results.emit`): an epoch holding the metric, or a
    custom loop's round of it, is added to the file. A value that is not a finite number is
    left out (Vertex AI reads numbers)."""
    if _metric is None:
        return
    if event.get("event") == "epoch":
        metrics = event.get("metrics")
        value = metrics.get(_metric) if isinstance(metrics, dict) else None
        step = event.get("epoch")
    elif event.get("event") == "metric" and event.get("name") == _metric:
        value, step = event.get("value"), event.get("round")
    else:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return
    _entries.append(
        {
            "timestamp": time.time(),
            "trial": str(os.environ.get("CLOUD_ML_TRIAL_ID", "0")),
            _metric: str(float(value)),
            "global_step": str(int(step) if isinstance(step, (int, float)) else 0),
        }
    )
    _write()


def _write() -> None:
    """Rewrite the file whole (as ``cloudml-hypertune`` does), through a temporary file: a
    reader never sees half of it. Reporting never breaks the job."""
    target = path()
    try:
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        temporary = f"{target}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as out:
            for entry in _entries:
                out.write(json.dumps(entry, sort_keys=True) + "\n")
        os.replace(temporary, target)
    except OSError:
        pass
