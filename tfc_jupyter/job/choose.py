"""Which strategy the job's code runs under, decided from what the code does.

The rule: default flags never change what code that runs in Jupyter does. A strategy is added
only where it distributes work the code leaves to one (Keras ``fit`` on several workers or GPUs,
code that asks for the job's strategy); code that builds its own strategy or resolver is left
alone and given the cluster environment it reads; custom loops without ``strategy.run`` and code
that sets its devices up get none unless asked. An explicit ``--strategy`` wins, and the plan
refuses it where it cannot work with the code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import SpecError
from ..notebook.codeinfo import CodeFacts
from .spec import JobSpec, Strategy

Locate = Callable[[int], str]  # script line -> "cell 3, line 2"


@dataclass
class Choice:
    """The decision: the strategy the runtime builds, why (one line), and what else follows."""

    strategy: Strategy
    reason: str
    warnings: list[str] = field(default_factory=list)
    legacy_keras: bool = False  # the job runs Keras fit under MultiWorkerMirroredStrategy
    serve: bool = False  # ParameterServerStrategy: worker and ps tasks serve, the chief drives
    keras_tuner: bool = False  # Keras Tuner's distributed search: chief oracle, worker tuners


def _one_machine(name: str) -> bool:
    return name in ("MirroredStrategy", "OneDeviceStrategy", "CentralStorageStrategy")


def _distributes(spec: JobSpec) -> Strategy | None:
    """The strategy tfc.run's rules give this machine shape, None for one device."""
    if spec.chief.is_tpu:
        return Strategy.TPU
    if spec.worker_count > 0:
        return Strategy.MULTI_WORKER_MIRRORED
    if spec.chief.gpu_count > 1:
        return Strategy.MIRRORED
    return None


def _own(spec: JobSpec, facts: CodeFacts, at: str) -> Choice:
    what = facts.own_what
    choice = Choice(
        Strategy.NONE,
        f"the notebook makes its own {what} ({at}): left alone, no strategy added; it reads the "
        "job's cluster environment (TF_CONFIG)",
    )
    if facts.own_strategy == "ParameterServerStrategy" and (spec.worker_count or spec.ps_count):
        choice.serve = True
        choice.reason += "; workers and parameter servers run tf.distribute.Server"
    collective = {"MultiWorkerMirroredStrategy", "CollectiveAllReduceStrategy"}
    if collective & ({facts.own_strategy} | facts.strategies) and facts.keras_fit:
        choice.legacy_keras = spec.worker_count > 0
    if spec.worker_count and _one_machine(facts.own_strategy):
        choice.warnings.append(
            f"the notebook's {what} ({at}) uses one machine: each of the {spec.worker_count + 1} "
            "replicas trains its own copy. Fix: build tf.distribute.MultiWorkerMirroredStrategy "
            "in the notebook, or drop --workers"
        )
    if facts.complex_values and facts.own_strategy in (
        "MultiWorkerMirroredStrategy",
        "MirroredStrategy",
    ):
        choice.warnings.append(_complex_text(facts.own_strategy, facts, _noop))
    return choice


def _noop(line: int) -> str:
    return f"script line {line}"


def _complex_text(strategy: str, facts: CodeFacts, locate: Locate) -> str:
    return (
        f"complex values at {locate(facts.complex_values)}: {strategy} cannot all-reduce "
        "complex variables (InvalidArgumentError in every replica); keep them real "
        "(split into real and imaginary parts) or train without a strategy"
    )


def _refuse_explicit(spec: JobSpec, facts: CodeFacts, locate: Locate) -> None:
    """An explicit --strategy that cannot work with this code: SpecError naming the fix."""
    wanted = spec.strategy.value
    if facts.makes_own_strategy:
        raise SpecError(
            f"the notebook makes its own {facts.own_what} ({locate(facts.own_line)}); "
            f"--strategy {wanted} would put a second strategy around it (TensorFlow: Mixing "
            "different tf.distribute.Strategy objects)",
            "drop --strategy: auto leaves the notebook's own strategy alone",
            field="strategy",
        )
    if facts.device_setup:
        raise SpecError(
            f"the notebook calls tf.{facts.device_setup} ({locate(facts.device_setup_line)}), "
            f"which must run before TensorFlow initializes its devices; --strategy {wanted} "
            "initializes them before the notebook's first line",
            "drop --strategy (the devices are set up as in Jupyter), or build the strategy in "
            "the notebook after the device set-up",
            field="strategy",
        )


def choose(spec: JobSpec, facts: CodeFacts, locate: Locate = _noop) -> Choice:
    """The strategy the runtime builds for ``spec`` running code with ``facts``.

    Raises:
        SpecError: an explicit strategy that cannot work with the code.
    """
    if spec.strategy is Strategy.NONE:
        return Choice(Strategy.NONE, "none, as asked (--strategy none)")
    if spec.strategy is not Strategy.AUTO:
        return _explicit(spec, facts, locate)
    if facts.keras_tuner and spec.worker_count > 0 and not spec.ps_count:
        return _keras_tuner(spec, facts, locate)
    if facts.makes_own_strategy:
        return _own(spec, facts, locate(facts.own_line))
    if spec.ps_count > 0:
        return Choice(
            Strategy.NONE,
            "parameter servers: no tf.distribute strategy; tf.estimator places variables on "
            "the ps tasks (tfc_runtime.run_config())",
        )
    wanted = _distributes(spec)
    if wanted is None:
        return Choice(
            Strategy.NONE,
            "one device: no strategy, TensorFlow places the work as it does in Jupyter",
        )
    kept = _kept_whole(spec, facts, locate, wanted)
    if kept is not None:
        return kept
    return _distributed(spec, facts, wanted)


def _explicit(spec: JobSpec, facts: CodeFacts, locate: Locate) -> Choice:
    """The strategy ``--strategy`` asked for, with the warnings the code earns under it.

    Raises:
        SpecError: the strategy cannot work with the code.
    """
    _refuse_explicit(spec, facts, locate)
    choice = Choice(spec.strategy, f"{spec.strategy.value}, as asked (--strategy)")
    if facts.custom_loop and not facts.strategy_aware:
        choice.warnings.append(
            f"custom training loop at {locate(facts.custom_loop)} without strategy.run: "
            f"under --strategy {spec.strategy.value} its optimizer steps run outside a "
            "replica context and usually fail. Fix: drop --strategy, or call strategy.run"
        )
    if facts.complex_values and spec.strategy in (
        Strategy.MULTI_WORKER_MIRRORED,
        Strategy.MIRRORED,
    ):
        choice.warnings.append(_complex_text(spec.strategy.value, facts, locate))
    choice.legacy_keras = spec.strategy is Strategy.MULTI_WORKER_MIRRORED and bool(facts.keras_fit)
    return choice


def _keras_tuner(spec: JobSpec, facts: CodeFacts, locate: Locate) -> Choice:
    """Keras Tuner on several workers: its own distributed search, no strategy added."""
    own = f"; the notebook's own {facts.own_what} stays its own" if facts.makes_own_strategy else ""
    return Choice(
        Strategy.NONE,
        f"Keras Tuner ({locate(facts.keras_tuner)}) with {spec.worker_count} "
        f"worker{'s' * (spec.worker_count != 1)}: its own distributed search, no strategy "
        f"added (the chief runs the oracle, each worker tunes trials of its own){own}",
        keras_tuner=True,
    )


def _kept_whole(spec: JobSpec, facts: CodeFacts, locate: Locate, wanted: Strategy) -> Choice | None:
    """No strategy where adding ``wanted`` would change what the code does, else None.

    Code that sets up its devices, a custom loop without ``strategy.run``, and complex values
    under an all-reducing strategy run as in Jupyter, with a warning that the job does not
    distribute.
    """
    shape = _shape(spec)
    if facts.device_setup:
        return Choice(
            Strategy.NONE,
            f"the notebook sets up devices (tf.{facts.device_setup}, "
            f"{locate(facts.device_setup_line)}): no strategy, which would initialize them first",
            [
                f"{shape} but no strategy: the job does not distribute. Fix: build the "
                "strategy in the notebook after the device set-up"
            ],
        )
    if facts.custom_loop and not facts.strategy_aware:
        return Choice(
            Strategy.NONE,
            f"custom training loop without strategy.run ({locate(facts.custom_loop)}): no "
            "strategy, which would change what it does",
            [
                f"{shape} but the loop does not distribute: each replica trains its own copy. "
                f"Fix: call strategy.run in the loop, or pass --strategy {wanted.value}"
            ]
            if wanted is not Strategy.TPU
            else [],
        )
    if facts.complex_values and wanted in (Strategy.MULTI_WORKER_MIRRORED, Strategy.MIRRORED):
        return Choice(
            Strategy.NONE,
            f"complex values ({locate(facts.complex_values)}): no strategy, {wanted.value} "
            "cannot all-reduce complex variables",
            [f"{shape} but no strategy: the job does not distribute"],
        )
    return None


def _distributed(spec: JobSpec, facts: CodeFacts, wanted: Strategy) -> Choice:
    """``wanted``, the strategy tfc.run's rules give the machine shape, and what it serves."""
    shape = _shape(spec)
    why = {
        Strategy.TPU: "a TPU: TPUStrategy",
        Strategy.MULTI_WORKER_MIRRORED: f"{shape}: MultiWorkerMirroredStrategy",
        Strategy.MIRRORED: f"{shape}: MirroredStrategy",
    }[wanted]
    if facts.keras_fit:
        driver = " for Keras fit"
    elif facts.strategy_aware:
        driver = " for code that asks for the strategy"
    elif facts.estimator:
        driver = " for tf.estimator"
    else:
        driver = " (tfc.run's rule for this machine shape)"
    return Choice(
        wanted,
        f"{why}{driver}",
        legacy_keras=wanted is Strategy.MULTI_WORKER_MIRRORED and bool(facts.keras_fit),
    )


def _shape(spec: JobSpec) -> str:
    if spec.worker_count:
        return f"chief + {spec.worker_count} worker{'s' * (spec.worker_count != 1)}"
    if spec.chief.is_tpu:
        return "a TPU"
    return f"{spec.chief.gpu_count} GPUs"
