"""What the code does, read through its imports: strategies, resolvers, loops, devices."""

from __future__ import annotations

import textwrap

import pytest

from tfc_jupyter.notebook.codeinfo import analyse


def facts(src: str):  # type: ignore[no-untyped-def]
    return analyse(textwrap.dedent(src))


@pytest.mark.parametrize(
    ("src", "name"),
    [
        ("import tensorflow as tf\ns = tf.distribute.MirroredStrategy()", "MirroredStrategy"),
        (
            "from tensorflow.distribute import MultiWorkerMirroredStrategy as M\ns = M()",
            "MultiWorkerMirroredStrategy",
        ),
        (
            "import tensorflow.compat.v2 as tf2\n"
            "s = tf2.distribute.experimental.ParameterServerStrategy(r)",
            "ParameterServerStrategy",
        ),
        ("from tensorflow import distribute\ns = distribute.TPUStrategy(r)", "TPUStrategy"),
    ],
)
def test_own_strategy_through_any_import(src: str, name: str) -> None:
    f = facts(src)
    assert f.own_strategy == name and f.makes_own_strategy and f.own_line == 2


def test_names_that_are_not_tensorflow_are_not_strategies() -> None:
    f = facts("""\
        class MirroredStrategy: pass
        s = MirroredStrategy()  # ours, not TensorFlow's
        # tf.distribute.MirroredStrategy() in a comment
        text = "tf.distribute.MirroredStrategy()"
    """)
    assert not f.makes_own_strategy


def test_resolver_and_default_strategy() -> None:
    f = facts("""\
        import tensorflow as tf
        r = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="local")
    """)
    assert f.own_resolver == "TPUClusterResolver" and f.own_what == "TPUClusterResolver"
    g = facts("import tensorflow as tf\ntf.distribute.experimental_set_strategy(s)")
    assert g.sets_default_strategy == 2 and g.makes_own_strategy


def test_custom_loop_and_keras_steps() -> None:
    loop = facts("""\
        import tensorflow as tf
        @tf.function
        def step(x):
            with tf.GradientTape() as tape:
                loss = model(x)
            opt.apply_gradients(zip(tape.gradient(loss, v), v))
    """)
    assert loop.custom_loop == 4 and not loop.strategy_aware
    keras_step = facts("""\
        import tensorflow as tf
        class M(tf.keras.Model):
            def train_step(self, data):
                with tf.GradientTape() as tape:
                    loss = self(data)
                self.optimizer.apply_gradients(zip(tape.gradient(loss, v), v))
                return {}
        m = M(); m.compile(optimizer="adam"); m.fit(x, y)
    """)
    assert not keras_step.custom_loop and keras_step.keras_fit == 8


@pytest.mark.parametrize(
    "call",
    ["strategy.run(step, args=(x,))", "s.run(step)", "tfc_runtime.strategy()"],
)
def test_strategy_aware(call: str) -> None:
    src = f"import tensorflow as tf\nimport tfc_runtime\ns = tf.distribute.get_strategy()\n{call}"
    assert facts(src).strategy_aware


def test_scipy_minimize_is_no_training_loop() -> None:
    assert not facts("from scipy.optimize import minimize\nminimize(f, x0)").custom_loop


@pytest.mark.parametrize(
    ("src", "call"),
    [
        (
            "tf.config.set_logical_device_configuration(c, [])",
            "config.set_logical_device_configuration",
        ),
        (
            "tf.config.experimental.set_memory_growth(g, True)",
            "config.experimental.set_memory_growth",
        ),
        ("tf.config.set_visible_devices([], 'GPU')", "config.set_visible_devices"),
    ],
)
def test_device_setup(src: str, call: str) -> None:
    f = facts(f"import tensorflow as tf\n{src}")
    assert f.device_setup == call and f.device_setup_line == 2


@pytest.mark.parametrize(
    "src",
    [
        "import tensorflow as tf\nv = tf.Variable(z, dtype=tf.complex128)",
        "import numpy as np\nx = np.zeros(3, np.complex64)",
        "v = 1 + 2j",
        "x = t.astype('complex64')",
        "import tensorflow as tf\nz = tf.complex(a, b)",
    ],
)
def test_complex_values(src: str) -> None:
    assert facts(src).complex_values


def test_keras_fit_needs_keras_or_compile() -> None:
    assert not facts("from sklearn.linear_model import Ridge\nRidge().fit(x, y)").keras_fit
    assert facts("import tensorflow as tf\nmodel.fit(x, y)").keras_fit


def test_estimator_through_aliases() -> None:
    assert facts("import tensorflow.compat.v1 as tf1\ne = tf1.estimator.Estimator(fn)").estimator
    assert facts("import tensorflow as tf\ne = tf.compat.v1.estimator.Estimator(fn)").estimator


def test_broken_code_gives_no_facts() -> None:
    assert not facts("def (:\n").makes_own_strategy


@pytest.mark.parametrize(
    "code",
    [
        "try:\n    from google.colab import drive\nexcept ImportError:\n    drive = None\n",
        "try:\n    import google.colab\n    IN_COLAB = True\nexcept:\n    IN_COLAB = False\n",
        "try:\n    from google.colab import files\nexcept (ModuleNotFoundError, KeyError):\n"
        "    pass\n",
        "import sys\nif 'google.colab' in sys.modules:\n    from google.colab import files\n",
    ],
)
def test_a_colab_import_the_code_handles_is_not_a_colab_need(code: str) -> None:
    assert analyse(code).colab == 0


def test_a_colab_import_that_can_fail_is_found() -> None:
    code = "try:\n    from google.colab import drive\nexcept KeyError:\n    pass\n"
    assert analyse(code).colab == 2
    assert analyse("from google.colab import drive\n").colab == 1


def test_a_top_level_train_step_is_the_loops_own() -> None:
    """TensorFlow's custom-loop guides name their step train_step: not a Keras method."""
    loop = textwrap.dedent(
        """\
        import tensorflow as tf
        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = model(x)
            optimizer.apply_gradients(zip(tape.gradient(loss, w), w))
        """
    )
    assert analyse(loop).custom_loop == 4
    method = textwrap.dedent(
        """\
        import tensorflow as tf
        class Model(tf.keras.Model):
            def train_step(self, data):
                with tf.GradientTape() as tape:
                    loss = self(data)
                self.optimizer.apply_gradients([])
                return {}
        """
    )
    assert analyse(method).custom_loop == 0


def test_reading_the_kernels_job_handle_is_found() -> None:
    facts = analyse("x = 1\nprint(_tfc_job.metrics[-1])\n")
    assert (facts.kernel_handle, facts.kernel_handle_name) == (2, "_tfc_job")
    assert analyse("_tfc_job = 3\n").kernel_handle == 0  # its own variable of that name
