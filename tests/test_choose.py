"""The strategy choice: default flags never change what code that runs in Jupyter does."""

from __future__ import annotations

import textwrap

import pytest

from tfc_jupyter.errors import SpecError
from tfc_jupyter.job.catalog import lookup
from tfc_jupyter.job.choose import choose
from tfc_jupyter.job.spec import JobSpec, Strategy
from tfc_jupyter.notebook.codeinfo import analyse

FIT = """\
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(x, y)
"""
LOOP = """\
import tensorflow as tf
@tf.function
def step(x):
    with tf.GradientTape() as tape:
        loss = model(x)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
"""
OWN = "import tensorflow as tf\nstrategy = tf.distribute.{}()\n" + FIT.split("\n", 1)[1]
DEVICES = "import tensorflow as tf\ntf.config.set_logical_device_configuration(c, [])\n" + FIT
COMPLEX = FIT + "v = tf.Variable(z, dtype=tf.complex128)\n"


def decide(code: str, **spec: object):  # type: ignore[no-untyped-def]
    return choose(JobSpec(**spec), analyse(textwrap.dedent(code)))  # type: ignore[arg-type]


@pytest.mark.parametrize("code", [FIT, LOOP, OWN.format("MirroredStrategy"), DEVICES, COMPLEX])
def test_one_device_never_gets_a_strategy(code: str) -> None:
    assert decide(code).strategy is Strategy.NONE


def test_keras_fit_is_distributed_over_workers_and_gpus() -> None:
    workers = decide(FIT, worker_count=2)
    assert workers.strategy is Strategy.MULTI_WORKER_MIRRORED and workers.legacy_keras
    assert "chief + 2 workers: MultiWorkerMirroredStrategy for Keras fit" in workers.reason
    gpus = decide(FIT, chief=lookup("V100_4X"))
    assert gpus.strategy is Strategy.MIRRORED and "4 GPUs" in gpus.reason


def test_custom_loop_without_strategy_run_is_left_alone_and_warned() -> None:
    choice = decide(LOOP, worker_count=1)
    assert choice.strategy is Strategy.NONE
    assert "custom training loop without strategy.run" in choice.reason
    assert "each replica trains its own copy" in choice.warnings[0]
    aware = decide(
        LOOP + "strategy = tf.distribute.get_strategy()\nstrategy.run(step)\n", worker_count=1
    )
    assert aware.strategy is Strategy.MULTI_WORKER_MIRRORED


def test_own_strategy_is_left_alone_with_the_cluster() -> None:
    choice = decide(OWN.format("MultiWorkerMirroredStrategy"), worker_count=1)
    assert choice.strategy is Strategy.NONE and choice.legacy_keras
    assert "makes its own MultiWorkerMirroredStrategy" in choice.reason
    one_machine = decide(OWN.format("MirroredStrategy"), worker_count=1)
    assert "uses one machine" in one_machine.warnings[0]


def test_parameter_server_strategy_serves() -> None:
    code = "import tensorflow as tf\ns = tf.distribute.ParameterServerStrategy(r)\n"
    choice = decide(code, worker_count=2, ps_count=1)
    assert choice.strategy is Strategy.NONE and choice.serve


def test_device_setup_and_complex_values_are_not_wrapped() -> None:
    devices = decide(DEVICES, worker_count=1)
    assert devices.strategy is Strategy.NONE and "sets up devices" in devices.reason
    complex_ = decide(COMPLEX, worker_count=1)
    assert complex_.strategy is Strategy.NONE and "cannot all-reduce complex" in complex_.reason


def test_explicit_strategy_wins_but_is_refused_where_it_cannot_work() -> None:
    assert decide(LOOP, strategy="one_device").strategy is Strategy.ONE_DEVICE
    assert "without strategy.run" in decide(LOOP, strategy="one_device").warnings[0]
    with pytest.raises(SpecError, match="Mixing different") as err:
        decide(OWN.format("MirroredStrategy"), worker_count=1, strategy="multi_worker_mirrored")
    assert "drop --strategy" in (err.value.hint or "")
    with pytest.raises(SpecError, match="before TensorFlow initializes its devices"):
        decide(DEVICES, strategy="one_device")
    explicit_complex = decide(COMPLEX, worker_count=1, strategy="multi_worker_mirrored")
    assert "cannot all-reduce" in explicit_complex.warnings[0]
    assert decide(FIT, worker_count=1, strategy="none").strategy is Strategy.NONE


def test_tpu_and_tfc_run_rule() -> None:
    assert decide(FIT, chief=lookup("TPU")).strategy is Strategy.TPU
    own = decide(
        "import tensorflow as tf\nr = tf.distribute.cluster_resolver.TPUClusterResolver()",
        chief=lookup("TPU"),
    )
    assert own.strategy is Strategy.NONE
    plain = decide("print('hello')", worker_count=1)
    assert plain.strategy is Strategy.MULTI_WORKER_MIRRORED and "tfc.run's rule" in plain.reason


@pytest.mark.parametrize(
    "imports", ["import keras_tuner as kt", "from keras_tuner import Hyperband"]
)
def test_keras_tuner_with_workers_is_its_own_distributed_search(imports: str) -> None:
    """Keras Tuner's workers each train their own trials: a MultiWorkerMirroredStrategy around
    them would make them one model. Alone, the search runs as in Jupyter."""
    code = f"{imports}\n{FIT}"
    choice = decide(code, worker_count=2)
    assert (choice.strategy, choice.keras_tuner, choice.legacy_keras) == (
        Strategy.NONE,
        True,
        False,
    )
    assert "Keras Tuner (script line 1) with 2 workers" in choice.reason
    alone = decide(code)
    assert (alone.strategy, alone.keras_tuner) == (Strategy.NONE, False)
    assert decide(FIT, worker_count=2).strategy is Strategy.MULTI_WORKER_MIRRORED
