"""Keras callbacks come back (issue 49, ``runtime/tfc_runtime/codecs/callback.py``): Keras' own
(``EarlyStopping`` after a real fit, with its best weights; ``ReduceLROnPlateau``; one that needs
arguments to be made, ``CSVLogger``) and the notebook's own subclass, alone and in a list, linked
to the model that came back, and usable in the kernel's next ``fit``. Through the job's real
writer and the kernel's real reader (the border); a forged entry names no other class."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jobutil import names_round_trip

from tfc_jupyter.returns.border import KernelCell
from tfc_jupyter.returns.returned import bring_back

keras = pytest.importorskip("keras")


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    return x, (x.sum(axis=1, keepdims=True) > 0).astype("float32")


def _model() -> Any:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy")
    return model


def test_early_stopping_after_a_fit_comes_back_with_its_state_and_best_weights() -> None:
    x, y = _data()
    model = _model()
    stopper = keras.callbacks.EarlyStopping(
        monitor="loss", patience=1, min_delta=10.0, restore_best_weights=True
    )  # no epoch improves by 10: it stops after the second
    model.fit(x, y, epochs=5, verbose=0, callbacks=[stopper])
    assert stopper.stopped_epoch == 1
    namespace, got = names_round_trip({"model": model, "stopper": stopper})
    assert not got.stayed and not got.problems, got
    back = namespace["stopper"]
    assert type(back) is keras.callbacks.EarlyStopping and back is not stopper
    for key in ("stopped_epoch", "best", "best_epoch", "patience", "monitor", "min_delta", "wait"):
        assert getattr(back, key) == getattr(stopper, key), key
    assert back.restore_best_weights is True
    assert len(back.best_weights) == len(stopper.best_weights)
    for a, b in zip(back.best_weights, stopper.best_weights, strict=True):
        np.testing.assert_array_equal(a, b)
    assert back.model is namespace["model"]  # one model: the one that came back
    # The next cell passes it to another fit: it works as a new one would (monitor_op again).
    more = namespace["model"].fit(x, y, epochs=5, verbose=0, callbacks=[back])
    assert len(more.history["loss"]) == 2 and back.stopped_epoch == 1


class Counter(keras.callbacks.Callback):
    """The notebook's own callback (its class is the kernel's, as a cell defined it)."""

    def __init__(self, every: int = 1) -> None:
        super().__init__()
        self.every = every
        self.seen: list[int] = []

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.seen.append(epoch)


Counter.__module__ = "__main__"  # as a notebook's cell defines it


def test_a_list_of_keras_and_the_notebooks_own_callbacks_comes_back(tmp_path: Path) -> None:
    x, y = _data()
    model = _model()
    log = tmp_path / "log.csv"
    callbacks = [
        keras.callbacks.ReduceLROnPlateau(monitor="loss", patience=7, factor=0.5),
        Counter(every=2),
        keras.callbacks.CSVLogger(str(log)),  # made with an argument: its state alone
    ]
    model.fit(x, y, epochs=3, verbose=0, callbacks=callbacks)
    namespace, got = names_round_trip({"callbacks": callbacks}, kernel={"Counter": Counter})
    assert not got.stayed and not got.problems, got
    back = namespace["callbacks"]
    assert [type(c) for c in back] == [type(c) for c in callbacks]
    assert back[0].patience == 7 and back[0].factor == 0.5 and back[0].wait == callbacks[0].wait
    assert back[1].every == 2 and back[1].seen == [0, 1, 2] and back[1] is not callbacks[1]
    assert back[2].filename == str(log)


def test_the_notebooks_callback_whose_class_the_kernel_lacks_stays_and_says_so() -> None:
    namespace, got = names_round_trip({"counter": Counter()}, kernel={})
    assert "counter" not in namespace
    said = dict(got.stayed)["counter"]
    assert "Keras callback of class 'Counter', which is not here" in said, got.stayed


def test_a_forged_callback_entry_names_no_class_outside_keras_callbacks() -> None:
    """The manifest is the job's: a class that is not one of Keras' callbacks (a model, a
    name with dots, ``os.system``) is refused, and nothing of it is made."""
    with tempfile.TemporaryDirectory() as job:
        names_round_trip({"stopper": keras.callbacks.EarlyStopping()}, job=job)
        path = next(Path(job).rglob("values.json"))
        manifest = json.loads(path.read_text())
        for forged in ("Sequential", "os.system", "History", "Model"):
            manifest["names"]["stopper"]["class"] = forged
            path.write_text(json.dumps(manifest))
            namespace: dict[str, Any] = {}
            got = bring_back(job, namespace, kernel_cell=KernelCell.from_source("stopper = f()"))
            assert "stopper" not in namespace, forged
            assert got.problems or got.stayed, forged
