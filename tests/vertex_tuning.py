"""Vertex AI's HyperparameterTuningJob in the test server, Vizier played here.

``POST /v1/{parent}/hyperparameterTuningJobs``, ``GET /v1/{name}``, ``GET`` the list (``filter``,
``pageSize``) and ``POST /v1/{name}:cancel``. A body parses strictly
(``HyperparameterTuningJob.from_json``), its ``trialJobSpec`` is checked as a CustomJob's
``jobSpec`` is (:mod:`vertex_validate`), and the study as Vertex AI checks it: one metric with a
goal, parameters with one value spec each, trial counts, a grid only over countable values.

Each trial runs as a custom job of its own (:class:`vertex_runner.JobRun`): the trial spec with
the trial's values appended to every pool's arguments (``--lr=0.0031``, as Vertex AI passes
them) and ``CLOUD_ML_TRIAL_ID`` set. Its metric is read from the file ``cloudml-hypertune``
writes (``CLOUD_ML_HP_METRIC_FILE``, set to a file of the trial's own so that trials running as
processes side by side do not share one): each new line is a measurement, and the last one (or
the best, with ``measurementSelectionType`` ``BEST_MEASUREMENT``) is the trial's final
measurement. A trial whose job fails, or that reported no value of the metric, is
``INFEASIBLE``; more than ``maxFailedTrialCount`` of them fail the tuning job. Values are drawn at
random (seeded by the job) over each parameter's space, or walk the grid for ``GRID_SEARCH``:
Vizier's Bayesian optimization is Google's and is not reproduced. A trial's log entries carry the
tuning job's id, and the trial's in the label ``ml.googleapis.com/trial_id``.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vertex_runner import TERMINAL, JobRun, Lifecycle, Running, rfc3339

TRIAL_LABEL = "ml.googleapis.com/trial_id"
_VALUE_SPECS = ("doubleValueSpec", "integerValueSpec", "discreteValueSpec", "categoricalValueSpec")


def check_study(body: dict[str, Any]) -> list[tuple[str, str]]:
    """What Vertex AI refuses in a tuning job's study and counts: ``(field, message)`` pairs."""
    problems: list[tuple[str, str]] = []
    study = body.get("studySpec") or {}
    metrics = study.get("metrics") or []
    if len(metrics) != 1:
        problems.append(("study_spec.metrics", "exactly one metric is supported"))
    for i, metric in enumerate(metrics):
        if not metric.get("metricId") or metric.get("goal") not in ("MAXIMIZE", "MINIMIZE"):
            problems.append((f"study_spec.metrics[{i}]", "a metric needs a metric_id and a goal"))
    params = study.get("parameters") or []
    if not params:
        problems.append(("study_spec.parameters", "at least one parameter is required"))
    for i, param in enumerate(params):
        specs = [k for k in _VALUE_SPECS if k in param]
        at = f"study_spec.parameters[{i}]"
        if len(specs) != 1:
            problems.append((at, "a parameter needs exactly one value spec"))
            continue
        value = param[specs[0]]
        if specs[0] in ("doubleValueSpec", "integerValueSpec"):
            low, high = float(value.get("minValue", 0)), float(value.get("maxValue", 0))
            if low > high:
                problems.append((at, "min_value must not exceed max_value"))
            if param.get("scaleType") == "UNIT_LOG_SCALE" and low <= 0:
                problems.append((at, "a log scale needs a positive min_value"))
        elif not value.get("values"):
            problems.append((at, "values must not be empty"))
        else:
            problems += [(at, why) for why in _listed(specs[0], value["values"])]
        if study.get("algorithm") == "GRID_SEARCH" and specs[0] == "doubleValueSpec":
            problems.append((at, "grid search needs discrete, categorical or integer values"))
    for key in ("maxTrialCount", "parallelTrialCount"):
        if int(body.get(key) or 0) <= 0:
            problems.append((key, f"{key} must be positive"))
    return problems


def _listed(kind: str, values: list[Any]) -> list[str]:
    """StudySpec's rules on a list of values (aiplatform_v1's ParameterSpec docs): a discrete
    one increasing, its values at least 1e-10 apart and at most 1,000; categories each once."""
    if kind == "categoricalValueSpec":
        return ["categories must be distinct"] if len(set(values)) != len(values) else []
    numbers = [float(v) for v in values]
    out = ["discrete values: at most 1000"] if len(numbers) > 1000 else []
    if any(b - a < 1e-10 for a, b in itertools.pairwise(numbers)):
        out.append("discrete values must be in increasing order and at least 1e-10 apart")
    return out


def _draw(param: dict[str, Any], rng: random.Random) -> float | str:
    """One value of a parameter, at random over its space."""
    if "doubleValueSpec" in param:
        low = float(param["doubleValueSpec"]["minValue"])
        high = float(param["doubleValueSpec"]["maxValue"])
        if param.get("scaleType") == "UNIT_LOG_SCALE":
            return math.exp(rng.uniform(math.log(low), math.log(high)))
        return rng.uniform(low, high)
    if "integerValueSpec" in param:
        spec = param["integerValueSpec"]
        return float(rng.randint(int(spec["minValue"]), int(spec["maxValue"])))
    return rng.choice(_countable(param))


def _countable(param: dict[str, Any]) -> list[Any]:
    if "integerValueSpec" in param:
        spec = param["integerValueSpec"]
        return [float(v) for v in range(int(spec["minValue"]), int(spec["maxValue"]) + 1)]
    if "discreteValueSpec" in param:
        return [float(v) for v in param["discreteValueSpec"]["values"]]
    return list(param["categoricalValueSpec"]["values"])


def _argument(name: str, value: float | str) -> str:
    """``--units=64`` (an integer as Vertex AI writes a whole value), ``--lr=0.0031``."""
    if isinstance(value, float) and value.is_integer():
        return f"--{name}={int(value)}"
    return f"--{name}={value}"


def read_measurements(text: str, metric: str) -> list[dict[str, Any]]:
    """The measurements in a ``cloudml-hypertune`` file: one JSON object a line."""
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            value = float(entry[metric])
        except (ValueError, KeyError, TypeError):
            continue
        step = str(int(float(entry.get("global_step") or 0)))
        out.append({"stepCount": step, "metrics": [{"metricId": metric, "value": value}]})
    return out


@dataclass
class TuningRun(Lifecycle):
    """One accepted tuning job: its resource (JSON) and the thread that runs its trials.

    ``start_trial(resource, labels, env, collect)`` makes, registers and starts a trial's
    :class:`JobRun` (the server's executor, logs and storage)."""

    resource: dict[str, Any]
    project: str
    start_trial: Callable[..., JobRun]
    lock: threading.Lock = field(default_factory=threading.Lock)
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    runs: dict[str, JobRun] = field(default_factory=dict)
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="vertex-hpt-")))

    def _values(self) -> Any:
        """Each trial's parameter values, in trial order."""
        study = self.resource["studySpec"]
        params = study["parameters"]
        if study.get("algorithm") == "GRID_SEARCH":
            grid = itertools.product(*(_countable(p) for p in params))
            for combo in itertools.cycle(list(grid)):
                yield dict(zip((p["parameterId"] for p in params), combo, strict=True))
        rng = random.Random(self.job_id)
        while True:
            yield {p["parameterId"]: _draw(p, rng) for p in params}

    def _run(self) -> None:
        try:
            self._trials()
        except Exception as exc:  # a bug here must not leave the job RUNNING for ever
            self._set("JOB_STATE_FAILED", f"Internal error in the test server: {exc!r}", 13)
        finally:
            for run in self.runs.values():
                run.cancel_requested.set()
            for run in self.runs.values():
                if run.thread is not None:
                    run.thread.join(20)

    def _trials(self) -> None:
        total = int(self.resource["maxTrialCount"])
        parallel = int(self.resource["parallelTrialCount"])
        failed_max = int(self.resource.get("maxFailedTrialCount") or 0) or max(1, total // 3)
        self._set("JOB_STATE_PENDING")
        self._set("JOB_STATE_RUNNING")
        values = self._values()
        started = 0
        while True:
            if self.cancel_requested.is_set():
                return self._cancel()
            self._measure()
            trials = self.snapshot().get("trials", [])
            active = [t for t in trials if t["state"] == "ACTIVE"]
            failed = sum(t["state"] == "INFEASIBLE" for t in trials)
            if failed >= failed_max:
                for run in self.runs.values():
                    run.cancel_requested.set()
                message = (
                    f"{failed} trials failed, the most this job allows (max_failed_trial_count "
                    f"{failed_max}). Last trial error: {self._last_error(trials)}"
                )
                return self._set("JOB_STATE_FAILED", message, 9)
            if started == total and not active:
                return self._set("JOB_STATE_SUCCEEDED")
            while started < total and len(active) < parallel:
                started += 1
                self._start(str(started), next(values))
                active.append({})
            time.sleep(0.1)

    def _last_error(self, trials: list[dict[str, Any]]) -> str:
        failed = [t for t in trials if t["state"] == "INFEASIBLE"]
        return str(failed[-1].get("infeasibleReason", "")) if failed else ""

    def _start(self, trial_id: str, values: dict[str, Any]) -> None:
        spec = json.loads(json.dumps(self.resource["trialJobSpec"]))
        arguments = [_argument(k, v) for k, v in values.items()]
        for pool in spec["workerPoolSpecs"]:
            kind = pool.get("containerSpec") or pool.get("pythonPackageSpec") or {}
            kind["args"] = [*kind.get("args", []), *arguments]
        metric_file = self.folder / trial_id / "output.metrics"
        trial: dict[str, Any] = {
            "id": trial_id,
            "state": "ACTIVE",
            "parameters": [{"parameterId": k, "value": v} for k, v in values.items()],
            "startTime": rfc3339(datetime.now(timezone.utc)),
        }
        with self.lock:
            self.resource.setdefault("trials", []).append(trial)
        resource = {"displayName": f"{self.resource['displayName']}-trial-{trial_id}",
                    "jobSpec": spec}  # fmt: skip
        env = {"CLOUD_ML_TRIAL_ID": trial_id, "CLOUD_ML_HP_METRIC_FILE": str(metric_file)}

        def collect(replicas: dict[str, Running]) -> None:
            chief = replicas.get("workerpool0-0")
            data = chief.read_file(str(metric_file)) if chief is not None else None
            if data is not None:
                self._file_of(trial_id).write_bytes(data)

        run = self.start_trial(resource, {TRIAL_LABEL: trial_id}, env, collect)
        with self.lock:
            trial["customJob"] = run.resource["name"]
        self.runs[trial_id] = run

    def _file_of(self, trial_id: str) -> Path:
        path = self.folder / "collected" / trial_id
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _measure(self) -> None:
        """Each active trial's measurements so far; the ended ones' final state."""
        metric = self.resource["studySpec"]["metrics"][0]["metricId"]
        best = self.resource["studySpec"].get("measurementSelectionType") == "BEST_MEASUREMENT"
        maximize = self.resource["studySpec"]["metrics"][0]["goal"] == "MAXIMIZE"
        for trial_id, run in list(self.runs.items()):
            with self.lock:
                trial = next(t for t in self.resource["trials"] if t["id"] == trial_id)
                if trial["state"] != "ACTIVE":
                    continue
            path = self.folder / trial_id / "output.metrics"
            collected = self._file_of(trial_id)
            source = collected if collected.exists() else path
            text = source.read_text(errors="replace") if source.exists() else ""
            measurements = read_measurements(text, metric)
            state = run.state()
            with self.lock:
                trial["measurements"] = measurements
                if state not in TERMINAL:
                    continue
                trial["endTime"] = rfc3339(datetime.now(timezone.utc))
                if state != "JOB_STATE_SUCCEEDED":
                    error = (run.snapshot().get("error") or {}).get("message", state)
                    trial.update(state="INFEASIBLE", infeasibleReason=str(error))
                elif not measurements:
                    trial.update(
                        state="INFEASIBLE",
                        infeasibleReason=f"The trial reported no value of metric {metric}.",
                    )
                else:
                    sign = 1.0 if maximize else -1.0
                    final = (
                        max(measurements, key=lambda m: sign * m["metrics"][0]["value"])
                        if best
                        else measurements[-1]
                    )
                    trial.update(state="SUCCEEDED", finalMeasurement=final)

    def _cancel(self) -> None:
        self._set("JOB_STATE_CANCELLING")
        for run in self.runs.values():
            run.cancel_requested.set()
        for run in self.runs.values():
            if run.thread is not None:
                run.thread.join(20)
        with self.lock:
            for trial in self.resource.get("trials", []):
                if trial["state"] == "ACTIVE":
                    trial.update(state="STOPPING")
        self._set("JOB_STATE_CANCELLED", "CANCELED", 1)
