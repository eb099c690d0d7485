"""Keras values a run cell binds come back as the next cell uses them (issue 49): Keras Tuner in
keras.io's tutorial shape (the tuner, reloaded from its folder, and its best
``HyperParameters``), and a tf-keras model trained with ``--workers 1`` brought into a Keras 3
kernel's Keras. Real jobs on the local backend, in a real kernel (nbclient)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jobutil import JOB_DEADLINE_S, executed_by_cli, in_kernel, write_notebook

DATA = """\
import numpy as np
import tensorflow as tf
rng = np.random.default_rng(0)
x = rng.normal(size=(128, 4)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")"""


def _execute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *cells: str) -> Any:
    """The notebook of these cells, run in a real kernel in ``tmp_path``."""
    path = write_notebook(tmp_path / "cell.ipynb", "%load_ext tfc_jupyter\nimport json", *cells)
    return in_kernel(path, timeout=JOB_DEADLINE_S * 2)


def _said(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def _checked(cell: Any) -> dict[str, Any]:
    """The JSON a ``print("CHECK", ...)`` cell printed; fails with its error otherwise."""
    text = _said(cell)
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert "CHECK " in text and not errors, (text[-2000:], [e.get("evalue") for e in errors])
    got: dict[str, Any] = json.loads(text.split("CHECK ", 1)[1].splitlines()[0])
    return got


SEARCH = """\
%%tfc_run
import keras_tuner as kt
def build_model(hp):
    model = tf.keras.Sequential([
        tf.keras.Input((4,)),
        tf.keras.layers.Dense(hp.Int("units", min_value=2, max_value=16, step=2),
                              activation="relu"),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])
    lr = hp.Choice("learning_rate", values=[1e-2, 1e-3])
    model.compile(tf.keras.optimizers.Adam(lr), "binary_crossentropy", metrics=["accuracy"])
    return model
tuner = kt.RandomSearch(build_model, objective="val_accuracy", max_trials=3, seed=1,
                        directory="kt", project_name="intro_to_kt")
tuner.search(x, y, epochs=2, validation_split=0.25, verbose=0)
best_hps = tuner.get_best_hyperparameters(num_trials=1)[0]
best_model = tuner.get_best_models(num_models=1)[0]
units = best_hps.get("units")
job_loss = best_model.evaluate(x, y, verbose=0)[0]"""
NEXT = """\
model = tuner.hypermodel.build(best_hps)
history = model.fit(x, y, epochs=1, verbose=0)
again = tuner.get_best_models(1)[0]
print("CHECK", json.dumps({
    "tuner": type(tuner).__name__, "hps": type(best_hps).__name__,
    "units": best_hps.get("units"), "job_units": units,
    "trials": len(tuner.oracle.trials),
    "best_trial_units": tuner.oracle.get_best_trials(1)[0].hyperparameters.get("units"),
    "same_model": abs(again.evaluate(x, y, verbose=0)[0] - job_loss) < 1e-4,
    "built_units": model.layers[0].units,
}))
tuner.results_summary(1)"""


@pytest.mark.slow
@pytest.mark.usefixtures("tfc_env")
def test_the_keras_tuner_tutorial_s_next_cell_runs_in_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("keras_tuner")
    nb = _execute(tmp_path, monkeypatch, DATA, SEARCH, NEXT)
    run, after = nb.cells[2], nb.cells[3]
    said = _said(run)
    assert "Back in the kernel: " in said, said[-2000:]
    back = said.split("Back in the kernel: ", 1)[1].split(".\n")[0]
    assert {"tuner", "best_hps", "best_model", "build_model"} <= set(back.split(", ")), back
    got = _checked(after)
    assert got["tuner"] == "RandomSearch" and got["hps"] == "HyperParameters", got
    assert got["units"] == got["job_units"] == got["best_trial_units"] == got["built_units"]
    assert got["trials"] == 3 and got["same_model"], got
    assert "Results summary" in _said(after)


def _tutorial_as_a_job(tmp_path: Path, *flags: str) -> None:
    """The tutorial's notebook as it is (no magic) through ``tfc-jupyter run``: its next cell
    prints, in the job's executed notebook, what it prints in Jupyter."""
    pytest.importorskip("keras_tuner")
    search = SEARCH.removeprefix("%%tfc_run\n")
    path = write_notebook(tmp_path / "tutorial.ipynb", "import json", DATA, search, NEXT)
    after = executed_by_cli(path, *flags, timeout=JOB_DEADLINE_S * 2).cells[3]
    got = _checked(after)
    assert got["tuner"] == "RandomSearch" and got["hps"] == "HyperParameters", got
    assert got["units"] == got["job_units"] == got["best_trial_units"] == got["built_units"]
    assert got["trials"] == 3 and got["same_model"], got
    assert "Results summary" in _said(after)


@pytest.mark.slow
@pytest.mark.usefixtures("tfc_env")
def test_the_keras_tuner_tutorial_runs_as_a_job_through_the_cli(tmp_path: Path) -> None:
    _tutorial_as_a_job(tmp_path)


@pytest.mark.slow
@pytest.mark.usefixtures("tfc_env")
def test_the_keras_tuner_tutorial_runs_in_a_container_through_the_cli(
    tmp_path: Path, tf_parent_image: str
) -> None:
    _tutorial_as_a_job(tmp_path, "--backend", "docker", "--parent-image", tf_parent_image)


@pytest.mark.slow
@pytest.mark.usefixtures("tfc_env")
def test_the_keras_tuner_tutorial_s_next_cell_runs_in_the_kernel_of_a_container_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tf_parent_image: str
) -> None:
    """The run cell as a docker job: its tuner's folder comes back next to the notebook, and the
    tutorial's next cell runs in the kernel as it does locally."""
    pytest.importorskip("keras_tuner")
    search = SEARCH.replace(
        "%%tfc_run", f"%%tfc_run --backend docker --parent-image {tf_parent_image}"
    )
    nb = _execute(tmp_path, monkeypatch, DATA, search, NEXT)
    said = _said(nb.cells[2])
    back = said.split("Back in the kernel: ", 1)[1].split(".\n")[0]
    assert {"tuner", "best_hps", "best_model", "build_model"} <= set(back.split(", ")), back
    got = _checked(nb.cells[3])
    assert got["tuner"] == "RandomSearch" and got["units"] == got["job_units"], got
    assert got["trials"] == 3 and got["same_model"], got


TRAIN = """\
%%tfc_run --workers 1
tf.keras.utils.set_random_seed(1)
model = tf.keras.Sequential([
    tf.keras.Input((4,)),
    tf.keras.layers.Dense(8, activation="relu"),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
history = model.fit(x, y, epochs=2, verbose=0)
job_flavour = type(model).__module__.split(".")[0]
predicted = model.predict(x, verbose=0)"""
EXTEND = """\
import keras
same = float(np.abs(model.predict(x, verbose=0) - predicted).max()) < 1e-5
bigger = tf.keras.Sequential([model, tf.keras.layers.Dense(2)])
again = model.fit(x, y, epochs=1, verbose=0)
print("CHECK", json.dumps({
    "job": job_flavour, "kernel": type(model).__module__.split(".")[0],
    "keras": isinstance(model, keras.Model), "bigger": list(bigger(x[:3]).shape), "same": same,
    "history_model": history.model is model, "epochs": history.epoch,
    "history": type(history).__module__.split(".")[0], "trained": len(again.epoch),
}))"""


@pytest.mark.slow
@pytest.mark.usefixtures("tfc_env")
def test_a_tf_keras_model_comes_back_in_the_kernel_s_keras(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--workers 1`` trains with tf-keras (Keras 2); the kernel's tf.keras is Keras 3: the
    model is rebuilt there from its config with the job's weights, said in the cell's line."""
    pytest.importorskip("tf_keras")
    nb = _execute(tmp_path, monkeypatch, DATA, TRAIN, EXTEND)
    said = _said(nb.cells[2])
    assert "model (tf-keras model, rebuilt in Keras 3 with its weights)" in said, said[-2000:]
    got = _checked(nb.cells[3])
    assert got == {
        "job": "tf_keras", "kernel": "keras", "keras": True, "bigger": [3, 2], "same": True,
        "history_model": True, "epochs": [0, 1], "history": "keras", "trained": 1,
    }, got  # fmt: skip


# -- in-process: what the job writes and what the kernel reads back --------------------------


def _round_trip(
    tmp: Path, monkeypatch: pytest.MonkeyPatch, values: dict[str, Any], **kw: Any
) -> tuple[dict[str, Any], Any]:
    """``values`` saved as a run cell's names by the job's code, read back by the kernel's."""
    from types import SimpleNamespace

    from tfc_runtime import giveback

    from tfc_jupyter.returns.border import KernelCell
    from tfc_jupyter.returns.returned import bring_back

    monkeypatch.setenv("TFC_JOB_DIR", str(tmp))
    state = SimpleNamespace(
        run_cell=1, binds=tuple(values), reads=(), code=(), chief=True, out=None, started=0.0,
        workdir="",
    )  # fmt: skip
    giveback.save_names(state, values)
    namespace: dict[str, Any] = dict(kw.pop("namespace", {}))
    source = "\n".join(f"{n} = f()" for n in values)
    got = bring_back(tmp, namespace, kernel_cell=KernelCell.from_source(source), **kw)
    return namespace, got


def _space(draw: Any) -> Any:
    """A HyperParameters of every kind, some conditional on a parent Choice."""
    import keras_tuner as kt
    from hypothesis import strategies as st

    hp = kt.HyperParameters()
    parent = hp.Choice("kind", draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1,
                                             max_size=3, unique=True)))  # fmt: skip
    for i in range(draw(st.integers(0, 6))):
        which = draw(st.sampled_from(["Int", "Float", "Choice", "Boolean", "Fixed"]))
        low = draw(st.integers(-50, 50))
        conditional = draw(st.booleans())
        scope = hp.conditional_scope("kind", [parent]) if conditional else _nothing()
        with scope:
            if which == "Int":
                hp.Int(f"p{i}", low, low + draw(st.integers(1, 40)), step=draw(st.integers(1, 4)))
            elif which == "Float":
                hp.Float(f"p{i}", abs(low) + 0.25, abs(low) + draw(st.floats(0.5, 9)),
                         sampling=draw(st.sampled_from(["linear", "reverse_log"])))  # fmt: skip
            elif which == "Choice":
                hp.Choice(f"p{i}", draw(st.lists(st.integers(-9, 9), min_size=1, max_size=4,
                                                 unique=True)))  # fmt: skip
            elif which == "Boolean":
                hp.Boolean(f"p{i}", default=draw(st.booleans()))
            else:
                hp.Fixed(f"p{i}", draw(st.one_of(st.integers(), st.text(max_size=8))))
    return hp


def _nothing() -> Any:
    import contextlib

    return contextlib.nullcontext()


def test_hyperparameters_come_back_as_they_were(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("keras_tuner")
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=40, deadline=None)
    @given(data=st.data())
    def check(data: Any) -> None:
        hp = _space(data.draw)
        namespace, got = _round_trip(tmp_path_factory.mktemp("job"), monkeypatch, {"hps": hp})
        assert got.names == ["hps"], got
        back = namespace["hps"]
        assert type(back) is type(hp) and back.get_config() == hp.get_config()
        assert back.values == hp.values
        assert [(p.name, p.conditions) for p in back.space] == [
            (p.name, p.conditions) for p in hp.space
        ]

    check()


@pytest.mark.parametrize(
    ("space", "why"),
    [
        ([{"class_name": "Lambda", "config": {"name": "x"}}], "not a kind of hyperparameter"),
        ([{"class_name": "Int", "config": {"name": "x", "min_value": 1, "max_value": 2,
           "conditions": [{"class_name": "Lambda", "config": {}}]}}], "not a kind of condition"),
        ([{"class_name": "Int", "config": {"min_value": 1}}], "a hyperparameter with no name"),
        ("space", "not a HyperParameters config"),
    ],
)  # fmt: skip
def test_a_forged_hyperparameters_config_stays_in_the_job(
    tmp_path: Path, space: Any, why: str
) -> None:
    from tfc_jupyter.returns.border import KernelCell
    from tfc_jupyter.returns.returned import bring_back

    (tmp_path / "cell").mkdir()
    from tfc_runtime.values import Encoder

    tree = Encoder().encode({"space": space, "values": {}})  # as the job writes a config
    entry = {"kind": "hyperparameters", "config": tree}
    (tmp_path / "cell" / "values.json").write_text(json.dumps({"names": {"hps": entry}}))
    namespace: dict[str, Any] = {}
    got = bring_back(tmp_path, namespace, kernel_cell=KernelCell.from_source("hps = f()"))
    assert namespace == {} and why in got.stayed["hps"], got


BUILD = """\
import keras_tuner as kt
def build_model(hp):
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(hp.Int("u", 1, 3))])
    model.compile("adam", "mse")
    return model
"""


def test_a_tuner_whose_folder_is_not_where_the_notebook_is_says_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the job, a tuner whose folder is outside the working folder stays, with the fix; in
    the kernel, a tuner whose folder did not come back stays, with the fix."""
    pytest.importorskip("keras_tuner")
    import tensorflow as tf

    notebook = {"__name__": "__main__", "tf": tf}
    exec(compile(BUILD, "<cell>", "exec"), notebook)  # the notebook's own function, as a job's
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    kt = notebook["kt"]
    outside = kt.RandomSearch(notebook["build_model"], objective="loss", max_trials=1,
                              directory=str(tmp_path / "elsewhere"), project_name="p")  # fmt: skip
    inside = kt.RandomSearch(notebook["build_model"], objective="loss", max_trials=1,
                             directory="kt", project_name="p")  # fmt: skip
    namespace, got = _round_trip(
        tmp_path / "job", monkeypatch, {"outside": outside, "inside": inside},
        namespace={"build_model": notebook["build_model"]}, folder=tmp_path / "notebook",
    )  # fmt: skip
    assert got.stayed["outside"].startswith(
        "Keras Tuner tuner whose folder is outside the job's working folder, so it cannot come "
        "back. Fix: pass directory= a folder under the notebook's, as directory='kt' (it was /"
    ), got
    assert got.stayed["inside"] == (
        "Keras Tuner tuner whose folder kt/p is not where the notebook is. Fix: make it again "
        "in the next cell with the same directory= and project_name= (Keras Tuner reloads its "
        f"trials) (looked in {tmp_path / 'notebook'})"
    ), got
    assert "inside" not in namespace and "outside" not in namespace
    inside.search(tf.zeros((8, 2)), tf.zeros((8,)), epochs=1, verbose=0)
    namespace, got = _round_trip(
        tmp_path / "job2", monkeypatch, {"inside": inside},
        namespace={"build_model": notebook["build_model"]}, folder=work,
    )  # fmt: skip
    assert got.names == ["inside"], got  # where the notebook is, it reloads
    back = namespace["inside"]
    assert back is not inside and type(back) is type(inside)
    assert list(back.oracle.trials) == list(inside.oracle.trials) and back.oracle.max_trials == 1
    (work / "kt").rename(tmp_path / "real")  # a link where the folder was is never followed
    (work / "kt").symlink_to(tmp_path / "real")
    from tfc_jupyter.returns.border import KernelCell
    from tfc_jupyter.returns.returned import bring_back

    namespace = {"build_model": notebook["build_model"]}
    cell = KernelCell.from_source("inside = f()")
    got = bring_back(tmp_path / "job2", namespace, kernel_cell=cell, folder=work)
    assert "inside" not in namespace and "is not where the notebook is" in got.stayed["inside"]


SUBCLASSED = """\
class Scaled(tf_keras.Model):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.dense = tf_keras.layers.Dense(1)
    def call(self, x):
        return 2.0 * self.dense(x)
    def get_config(self):
        return {"name": self.name}
"""


def _tf_keras_models() -> dict[str, Any]:
    """A compiled tf-keras Sequential and a subclassed tf-keras model, trained a step; and
    the notebook's namespace that made them (its own class)."""
    import numpy as np
    import tf_keras

    notebook: dict[str, Any] = {"__name__": "__main__", "tf_keras": tf_keras}
    exec(compile(SUBCLASSED, "<cell>", "exec"), notebook)
    x, y = np.ones((8, 4), "float32"), np.ones((8, 1), "float32")
    plain = tf_keras.Sequential([tf_keras.Input((4,)), tf_keras.layers.Dense(3, "relu"),
                                 tf_keras.layers.Dense(1)])  # fmt: skip
    plain.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    own = notebook["Scaled"]()
    own.compile(optimizer="sgd", loss="mse")
    for model in (plain, own):
        model.fit(x, y, epochs=1, verbose=0)
    return {"plain": plain, "own": own, "x": x, "Scaled": notebook["Scaled"]}


def test_a_tf_keras_model_is_rebuilt_in_keras_3_or_said_why_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This process's tf.keras is Keras 3: a tf-keras Sequential comes back rebuilt there, its
    predictions the same; a subclassed one comes back as tf-keras, the line saying why."""
    pytest.importorskip("tf_keras")
    import keras
    import numpy as np
    import tf_keras

    made = _tf_keras_models()
    x = made.pop("x")
    kernel = {"Scaled": made.pop("Scaled")}  # the kernel ran the cell's class statement
    namespace, got = _round_trip(tmp_path / "job", monkeypatch, made, namespace=kernel)
    assert set(got.names) == {"plain", "own"}, got
    plain, own = namespace["plain"], namespace["own"]
    assert isinstance(plain, keras.Model) and not isinstance(plain, tf_keras.Model)
    assert np.allclose(plain.predict(x, verbose=0), made["plain"].predict(x, verbose=0))
    assert plain.loss == "mse" and plain.optimizer.__class__.__name__ == "SGD"
    plain.fit(x, np.ones((8, 1)), epochs=1, verbose=0)  # compiled as it was, trains here
    assert isinstance(own, tf_keras.Model)
    line = got.line()
    assert "plain (tf-keras model, rebuilt in Keras 3 with its weights)" in line, line
    assert (
        "own (a tf-keras model, not rebuilt in this kernel's Keras 3 so it does not mix with "
        "Keras 3 layers: Saving the model to HDF5 format requires the model to be a Functional"
    ) in line, line
    # A notebook that imports tf_keras itself keeps its models as tf-keras, unsaid.
    namespace, got = _round_trip(
        tmp_path / "job2", monkeypatch, {"plain": made["plain"]}, namespace={"tk": tf_keras}
    )
    assert isinstance(namespace["plain"], tf_keras.Model) and got.line() == (
        "back in the kernel: plain"
    ), got


def test_a_tf_keras_model_compiled_with_an_optimizer_object_comes_back_compiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tf-keras writes settings Keras 3's optimizers refuse (``jit_compile``,
    ``is_legacy_optimizer``): the rebuilt model is compiled all the same, with the optimizer's
    own settings (it came back "not compiled" from the quickstart's ``--workers 1`` job)."""
    pytest.importorskip("tf_keras")
    import keras
    import numpy as np
    import tf_keras

    model = tf_keras.Sequential([tf_keras.Input((4,)), tf_keras.layers.Dense(1)])
    model.compile(tf_keras.optimizers.Adam(learning_rate=0.01, beta_1=0.8), "mse")
    namespace, got = _round_trip(tmp_path / "job", monkeypatch, {"model": model})
    back = namespace["model"]
    assert "model (tf-keras model, rebuilt in Keras 3 with its weights)" in got.line(), got
    assert isinstance(back.optimizer, keras.optimizers.Adam), back.optimizer
    assert abs(float(back.optimizer.learning_rate) - 0.01) < 1e-6 and back.optimizer.beta_1 == 0.8
    back.fit(np.zeros((8, 4)), np.zeros((8, 1)), epochs=1, verbose=0)  # compiled: it trains


@pytest.mark.slow
@pytest.mark.usefixtures("tfc_env")
def test_the_tuner_of_a_distributed_search_comes_back_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--workers 2``: Keras Tuner's distributed search (the chief the oracle); the chief's
    tuner comes back, its trials those the workers tuned."""
    pytest.importorskip("keras_tuner")
    search = SEARCH.replace("%%tfc_run", "%%tfc_run --workers 2")
    nb = _execute(tmp_path, monkeypatch, DATA, search, NEXT)
    said = _said(nb.cells[2])
    assert "Back in the kernel: " in said, said[-3000:]
    got = _checked(nb.cells[3])
    assert got["tuner"] == "RandomSearch" and got["trials"] == 3, got
    assert got["units"] == got["job_units"] == got["best_trial_units"] == got["built_units"]
    assert got["same_model"], got
