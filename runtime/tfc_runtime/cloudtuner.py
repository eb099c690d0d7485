"""TensorFlow Cloud's ``CloudTuner`` and ``CloudOracle``, over Keras Tuner (issue 37).

A script or notebook written for ``tensorflow_cloud`` tunes with ``CloudTuner(build_model,
project_id=..., region=..., objective=..., hyperparameters=..., max_trials=...)``. Here it keeps
its code, with ``import tfc_jupyter as tfc`` (or ``from tfc_jupyter import CloudTuner``): the
tuner is a Keras Tuner ``Tuner`` whose oracle asks Optuna (TPE: Bayesian optimization, as the
sweeps of ``tfc_jupyter`` do) for each trial's values, in the job (TensorFlow Cloud asked
Vertex AI Vizier; the project and region are kept, not called).
Several tuners share one oracle through Keras Tuner's own distributed search
(``run_cloudtuner(num_jobs=N)``, ``--workers N``). Tuners of one process given the same
``study_id`` share its study, as they shared a Vizier study: ``max_trials`` counts the study's
trials, whichever tuner ran them, and each tuner's values are chosen knowing every trial told
(TensorFlow Cloud's example runs four such tuners in threads).

The classes are made when first asked for: importing this module imports no Keras Tuner.
"""

from __future__ import annotations

import datetime
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # _Oracle's and _Tuner's methods reach Keras Tuner's classes through super()
    _KerasTuner = Any
else:
    _KerasTuner = object

_made: dict[str, Any] = {}
_studies: dict[str, Any] = {}
"""Optuna's study of each ``study_id`` asked for in this process (tuners sharing it)."""
_lock = threading.Lock()
_building = threading.Lock()
"""Held while a tuner builds a trial's model: Keras 3's ``clear_session()``, which Keras Tuner
calls before each build, resets the layer-name counters of every thread, so a model another
thread is building meanwhile gets two layers named ``dense`` (TensorFlow Cloud's example staggers
its four threads by two seconds for this "``model.build`` collision"; on a busy machine that is
not enough)."""


def _objective_and_space(study_config: dict[str, Any]) -> tuple[Any, Any]:
    """A Vizier study config's metric and parameters, as Keras Tuner's objective and
    ``HyperParameters`` (double, integer, categorical and discrete parameters)."""
    import keras_tuner as kt

    metrics = study_config.get("metrics") or []
    if len(metrics) != 1 or "metric" not in metrics[0]:
        raise ValueError("study_config needs exactly one metric ({'metric': ..., 'goal': ...})")
    goal = str(metrics[0].get("goal", "MAXIMIZE")).upper()
    objective = kt.Objective(metrics[0]["metric"], "max" if goal == "MAXIMIZE" else "min")
    space = kt.HyperParameters()
    for param in study_config.get("parameters") or []:
        name, kind = param["parameter"], param.get("type")
        scale = "log" if param.get("scale_type") == "UNIT_LOG_SCALE" else "linear"
        if kind == "DOUBLE":
            spec = param["double_value_spec"]
            space.Float(name, spec["min_value"], spec["max_value"], sampling=scale)
        elif kind == "INTEGER":
            spec = param["integer_value_spec"]
            space.Int(name, int(spec["min_value"]), int(spec["max_value"]), sampling=scale)
        elif kind == "CATEGORICAL":
            space.Choice(name, list(param["categorical_value_spec"]["values"]))
        elif kind == "DISCRETE":
            space.Choice(name, list(param["discrete_value_spec"]["values"]))
        else:
            raise ValueError(f"study_config parameter {name!r}: unknown type {kind!r}")
    return objective, space


def _suggest(asked: Any, hp: Any) -> Any:
    """Optuna's value for one Keras Tuner hyperparameter."""
    kind = type(hp).__name__
    log = getattr(hp, "sampling", "linear") == "log"
    if kind == "Int":
        step = None if log else (hp.step or 1)
        return asked.suggest_int(hp.name, hp.min_value, hp.max_value, step=step or 1, log=log)
    if kind == "Float":
        step = None if log else hp.step
        return asked.suggest_float(hp.name, hp.min_value, hp.max_value, step=step, log=log)
    if kind == "Choice":
        return asked.suggest_categorical(hp.name, list(hp.values))
    if kind == "Boolean":
        return asked.suggest_categorical(hp.name, [True, False])
    return hp.default  # Fixed, or a kind Optuna has no distribution for


def _make() -> None:
    """Make ``CloudOracle`` and ``CloudTuner``: Keras Tuner's ``Oracle`` and ``Tuner`` with
    :class:`_Oracle`'s and :class:`_Tuner`'s steps.

    Raises:
        ImportError: optuna is not installed.
    """
    import keras_tuner as kt

    try:
        import optuna  # noqa: F401  (the oracle's values)
    except ImportError:
        raise ImportError(
            "CloudTuner needs optuna (its trials' values): pip install optuna, or add optuna "
            "to the job's requirements"
        ) from None

    class CloudOracle(_Oracle, kt.Oracle):
        """``tfc.CloudOracle``: TensorFlow Cloud's arguments (either ``study_config``, or
        ``objective`` and ``hyperparameters``); each trial's values from Optuna's TPE."""

        create_trial = kt.synchronized(_Oracle.create_trial)

    class CloudTuner(_Tuner, kt.Tuner):
        """``tfc.CloudTuner``: a Keras Tuner ``Tuner`` over :class:`CloudOracle`, with
        TensorFlow Cloud's arguments (the rest go to ``Tuner``: ``directory``,
        ``project_name``, ``overwrite``, ``distribution_strategy`` ...)."""

    _made.update(CloudOracle=CloudOracle, CloudTuner=CloudTuner)


class _Oracle(_KerasTuner):
    """``CloudOracle``'s steps over Keras Tuner's ``Oracle`` (the class after it in
    ``CloudOracle``'s bases, which ``super()`` here reaches): the study shared by its
    ``study_id``, each trial's values asked of Optuna and its score told."""

    def __init__(
        self,
        project_id: str | None = None,
        region: str | None = None,
        objective: Any = None,
        hyperparameters: Any = None,
        study_config: dict[str, Any] | None = None,
        max_trials: int | None = None,
        study_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        import optuna  # _make imported it

        if study_config:
            if objective or hyperparameters:
                raise ValueError(
                    'Please configure either study_config or "objective, and hyperparameters".'
                )
            objective, hyperparameters = _objective_and_space(study_config)
        elif not (objective and hyperparameters):
            raise ValueError(
                "If study_config is not set, objective and hyperparameters must be set."
            )
        super().__init__(
            objective=objective,
            hyperparameters=hyperparameters,
            max_trials=max_trials or 10,
            allow_new_entries=False,
            tune_new_entries=False,
            **kwargs,
        )
        self.project_id, self.region = project_id, region
        self.study_id = study_id or "CloudTuner_study_{}".format(
            datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
        )
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        maximize = self.objective.direction == "max"
        with _lock:
            study = _studies.get(self.study_id) if study_id else None
            if study is None:
                study = optuna.create_study(
                    direction="maximize" if maximize else "minimize",
                    sampler=optuna.samplers.TPESampler(seed=self.seed),
                )
                _studies[self.study_id] = study
        self._study = study
        self._asked: dict[str, Any] = {}

    def create_trial(self, tuner_id: str) -> Any:
        """Keras Tuner's, except the trial's id: its number in the study, as Vizier's
        trial ids were. Tuners sharing a ``study_id`` (and, in TensorFlow Cloud's example,
        a directory) then never write one trial's folder or checkpoint twice: Keras
        Tuner's own ids count this oracle's trials, so every tuner's first trial was
        ``0``, and two threads saving ``trial_0``'s weights at once failed in HDF5."""
        import keras_tuner as kt

        if tuner_id in self.ongoing_trials or self._retry_queue:
            return super().create_trial(tuner_id)
        with _lock:
            full = len(self._study.get_trials(deepcopy=False)) >= self.max_trials
            asked = None if full else self._study.ask()
        if asked is None:  # Keras Tuner's own way to stop the tuner
            return super().create_trial(tuner_id)
        self.tuner_ids.add(tuner_id)
        trial_id = f"{asked.number:0{len(str(self.max_trials))}d}"
        hyperparameters = self.hyperparameters.copy()
        hyperparameters.values = {hp.name: _suggest(asked, hp) for hp in self.hyperparameters.space}
        trial = kt.engine.trial.Trial(
            hyperparameters=hyperparameters, trial_id=trial_id, status="RUNNING"
        )
        self._asked[trial_id] = asked
        self._record_values(trial)
        self.ongoing_trials[tuner_id] = trial
        self.trials[trial_id] = trial
        self.start_order.append(trial_id)
        self._save_trial(trial)
        self.save()
        self._display.on_trial_begin(trial)
        return trial

    def populate_space(self, trial_id: str) -> dict[str, Any]:
        """The next trial's values, asked of Optuna; none once the study (shared by the
        tuners of its ``study_id``) has ``max_trials`` trials."""
        with _lock:
            if len(self._study.get_trials(deepcopy=False)) >= self.max_trials:
                return {"status": "STOPPED", "values": None}
            asked = self._study.ask()
        self._asked[trial_id] = asked
        values = {hp.name: _suggest(asked, hp) for hp in self.hyperparameters.space}
        return {"status": "RUNNING", "values": values}

    def end_trial(self, trial: Any) -> None:
        """Keras Tuner's bookkeeping, then Optuna told the trial's score."""
        super().end_trial(trial)
        asked = self._asked.pop(trial.trial_id, None)
        ended = self.trials[trial.trial_id]
        if asked is None:
            return
        if ended.status == "COMPLETED" and ended.score is not None:
            self._study.tell(asked, float(ended.score))
        else:
            from optuna.trial import TrialState

            self._study.tell(asked, state=TrialState.FAIL)


class _Tuner(_KerasTuner):
    """``CloudTuner``'s steps over Keras Tuner's ``Tuner`` (the class after it in
    ``CloudTuner``'s bases): its ``CloudOracle`` made of TensorFlow Cloud's arguments, one
    model built at a time in this process."""

    def __init__(
        self,
        hypermodel: Any,
        project_id: str | None = None,
        region: str | None = None,
        objective: Any = None,
        hyperparameters: Any = None,
        study_config: dict[str, Any] | None = None,
        max_trials: int | None = None,
        study_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        oracle = _made["CloudOracle"](
            project_id=project_id,
            region=region,
            objective=objective,
            hyperparameters=hyperparameters,
            study_config=study_config,
            max_trials=max_trials,
            study_id=study_id,
        )
        kwargs.setdefault("project_name", oracle.study_id)
        super().__init__(oracle=oracle, hypermodel=hypermodel, **kwargs)

    def _try_build(self, hp: Any) -> Any:
        # one build at a time in this process: see _building
        with _building:
            return super()._try_build(hp)


def __getattr__(name: str) -> Any:
    """``CloudTuner`` and ``CloudOracle``, made on first use (Keras Tuner imported then)."""
    if name not in ("CloudTuner", "CloudOracle"):
        raise AttributeError(name)
    if not _made:
        _make()
    return _made[name]
