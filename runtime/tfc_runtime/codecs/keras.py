"""Keras models and their ``History``, as the run cell sends them back.

* :class:`KerasModel` (``kind: model``): saved as ``models/<name>.keras`` by every task (saving
  may join collectives), for the names the cell binds and the models it reads (trained in
  place); loaded in the kernel from the border's private copy, checked as a zip within
  ``return_limit_mb``, in Keras' safe mode (the notebook's own classes and functions given as
  custom objects); where that fails and the kernel holds a Keras model of that name, the job's
  weights are loaded into it. A tf-keras (Keras 2) model, as a multi-worker job trains, comes
  back in the kernel's own Keras (:func:`kernel_keras`): where that is Keras 3, it is rebuilt
  from its config there, with its weights and compile settings, said after its name; where its
  architecture does not rebuild, it comes back as tf-keras, and the line says why.
* :class:`KerasHistory` (``kind: history``): its ``history``, ``epoch`` and ``params`` as JSON
  trees, and the name of its model; a ``History`` again in the kernel (of the kernel's Keras
  when its model was rebuilt there), its ``model`` the one loaded.

Keras (or tf-keras) is looked up in ``sys.modules``, never imported to claim a value.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import types
import warnings
from pathlib import Path
from typing import Any

from . import Codec, OverLimit, Reader, Stays, Unreadable, Unsupported, Writer


def keras_model(value: Any) -> str | None:
    """``keras`` or ``tf_keras`` for a Keras model, else None."""
    for library in ("keras", "tf_keras"):
        module = sys.modules.get(library)
        model = getattr(module, "Model", None) if module is not None else None
        if isinstance(model, type) and isinstance(value, model):
            return library
    return None


def history_of(value: Any) -> str | None:
    """``keras`` or ``tf_keras`` for a Keras ``History``, else None."""
    for library in ("keras", "tf_keras"):
        module = sys.modules.get(library)
        history = getattr(getattr(module, "callbacks", None), "History", None)
        if isinstance(history, type) and isinstance(value, history):
            return library
    return None


def _keras(library: Any) -> Any:
    return importlib.import_module("tf_keras" if library == "tf_keras" else "keras")


def kernel_keras(namespace: dict[str, Any]) -> str:
    """``tf_keras`` where this process's Keras is tf-keras (the notebook imports ``tf_keras``,
    or its ``tf.keras`` is tf-keras: ``TF_USE_LEGACY_KERAS``), else ``keras`` (Keras 3)."""
    for value in namespace.values():
        if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] == "tf_keras":
            return "tf_keras"
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        try:
            name = str(tf.keras.__name__)
        except Exception:  # a TensorFlow with no Keras
            name = ""
        if name:
            return "tf_keras" if name.startswith("tf_keras") else "keras"
    legacy = os.environ.get("TF_USE_LEGACY_KERAS", "").strip().lower() in ("1", "true", "yes")
    return "tf_keras" if legacy else "keras"


def to_keras3(model: Any, folder: Path, custom_objects: dict[str, Any]) -> tuple[Any, str]:
    """A tf-keras ``model`` rebuilt in Keras 3 and what to say of it: its config read by
    Keras 3's reader of Keras 2 files (an HDF5 file of the model without its optimizer,
    written in ``folder``, loaded in safe mode), its weights, and compiled as it was (a fresh
    optimizer of its config)."""
    import keras

    path = folder / "keras2.h5"
    with warnings.catch_warnings():  # "HDF5 ... is considered legacy": ours, not the user's
        warnings.simplefilter("ignore")
        model.save(str(path), include_optimizer=False)
    try:
        rebuilt = keras.models.load_model(
            str(path), custom_objects=custom_objects, compile=False, safe_mode=True
        )
    finally:
        path.unlink(missing_ok=True)
    said = "tf-keras model, rebuilt in Keras 3 with its weights"
    config = model.get_compile_config() if hasattr(model, "get_compile_config") else None
    if config:
        accepted = inspect.signature(rebuilt.compile).parameters
        # Keras 2 writes its unset settings as None (steps_per_execution: None), which
        # Keras 3 would take as given: those keep Keras 3's defaults.
        config = {k: v for k, v in config.items() if v is not None and k in accepted}
        if "optimizer" in config:
            config["optimizer"] = _keras3_optimizer(keras, config["optimizer"])
        try:
            rebuilt.compile_from_config(config)
        except Exception as exc:
            said += f"; not compiled: {_first_line(exc)}"
    return rebuilt, said


def _keras3_optimizer(keras: Any, optimizer: Any) -> Any:
    """A tf-keras optimizer's serialized config with only the settings Keras 3's optimizer of
    that class takes: tf-keras writes some Keras 3 refuses (``jit_compile``,
    ``is_legacy_optimizer``), which would leave the rebuilt model uncompiled."""
    config = optimizer.get("config") if isinstance(optimizer, dict) else None
    cls = getattr(keras.optimizers, str(optimizer.get("class_name")), None) if config else None
    if not isinstance(config, dict) or not isinstance(cls, type):
        return optimizer
    accepted: set[str] = set()
    for klass in cls.__mro__:  # Adam's own, then the base optimizer's (it takes **kwargs)
        init = vars(klass).get("__init__")
        if init is not None:
            accepted |= set(inspect.signature(init).parameters) - {"self", "kwargs"}
    return {**optimizer, "config": {k: v for k, v in config.items() if k in accepted}}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _custom_objects(namespace: dict[str, Any]) -> dict[str, Any]:
    """The notebook's own classes and functions, by name: what a model of the notebook's own
    layers, losses or metrics needs to load."""
    return {
        name: value
        for name, value in namespace.items()
        if not name.startswith("_")
        and getattr(value, "__module__", None) == "__main__"
        and (isinstance(value, type) or callable(value))
    }


def save_model(model: Any, path: str) -> None:
    """``model.save(path)``, not reported as the code's own save."""
    save = type(model).save
    save = getattr(save, "__wrapped__", save)
    save(model, path)


class KerasModel(Codec):
    """A Keras model (``keras`` or ``tf_keras``)."""

    kind = "model"
    noun = "Keras model"
    early = True

    def claims(self, value: Any) -> bool:
        return keras_model(value) is not None

    def write(self, value: Any, name: str, out: Writer) -> dict[str, Any]:
        file = f"models/{name}.keras"
        try:
            save_model(value, out.path(file))
        except Exception as exc:
            raise Unsupported(f"Keras model that cannot be saved: {exc}") from None
        return {"file": file, "library": keras_model(value)}

    def read(self, entry: dict[str, Any], src: Reader) -> Any:
        file = entry.get("file")
        if not isinstance(file, str):
            raise Stays("Keras model with no file")
        library = entry.get("library")
        custom = _custom_objects(src.namespace)
        opened = getattr(src, "opened", None)  # the kernel's border: a copy read as it is made
        try:
            if opened is not None and file.endswith(".keras"):
                with opened(file) as fh:  # checked within the limit before Keras is imported
                    keras = _keras(library)
                    if (load := _file_loader(keras)) is not None:
                        return _loaded(keras, src, lambda: load(fh, custom, True, True), fh.finish)
                    path = fh.finish()  # tf_keras loads from a path
            else:
                path = src.copy(file, archive=file.endswith(".keras"))
        except OverLimit:
            raise
        except (Unreadable, OSError) as exc:
            raise Stays(f"Keras model that does not load here: {str(exc)[:200]}") from None
        keras = _keras(library)
        model = _loaded(keras, src, lambda: _load_path(keras, path, custom), lambda: path)
        if library != "tf_keras" or kernel_keras(src.namespace) != "keras":
            return model  # in the kernel's own Keras already
        if model is src.namespace.get(src.name):
            return model  # the kernel's own model, the job's weights loaded into it
        try:
            rebuilt, said = to_keras3(model, Path(path).parent, custom)
        except Exception as exc:
            src.note(
                "a tf-keras model, not rebuilt in this kernel's Keras 3 so it does not mix with "
                f"Keras 3 layers: {_first_line(exc)[:160]}"
            )
            return model
        src.note(said)
        return rebuilt


def _load_path(keras: Any, path: Any, custom: dict[str, Any]) -> Any:
    """``keras.models.load_model`` of the private copy at ``path``, in safe mode."""
    return keras.models.load_model(str(path), custom_objects=custom, safe_mode=True)


def _file_loader(keras: Any) -> Any:
    """Keras 3's load of a ``.keras`` archive from an open file (``load(file, custom_objects,
    compile, safe_mode)``: what ``keras.models.load_model`` calls for a ``.keras`` path), or
    None (tf_keras, or a Keras that loads from paths only)."""
    if getattr(keras, "__name__", "") != "keras":
        return None
    try:
        saving_lib = importlib.import_module("keras.src.saving.saving_lib")
    except ImportError:
        return None
    if not hasattr(saving_lib, "_load_model_from_fileobj"):
        return None
    return getattr(saving_lib, "load_model", None)


def _loaded(keras: Any, src: Reader, load: Any, path: Any) -> Any:
    """``load()``, in safe mode; where that fails and the kernel holds a Keras model of the
    name, the job's weights loaded into it (from ``path()``, the private copy); else
    :class:`Stays` saying why."""
    earlier = src.namespace.get(src.name)
    try:
        return load()
    except Exception as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if earlier is not None and isinstance(earlier, keras.Model):
            try:
                earlier.load_weights(str(path()))
                return earlier
            except Exception:
                pass
        raise Stays(f"Keras model that does not load here: {reason[:200]}") from None


class KerasHistory(Codec):
    """What ``model.fit`` returns: a ``keras.callbacks.History``."""

    kind = "history"

    def claims(self, value: Any) -> bool:
        return history_of(value) is not None

    def refers(self, value: Any) -> list[Any]:
        model = getattr(value, "model", None)
        return [model] if model is not None else []

    def write(self, value: Any, name: str, out: Writer) -> dict[str, Any]:
        model = getattr(value, "model", None)
        params = getattr(value, "params", {}) or {}
        plain = {
            str(k): v for k, v in params.items() if v is None or isinstance(v, (int, float, str))
        }
        return {
            "library": history_of(value),
            "history": out.encode(dict(getattr(value, "history", {}) or {})),
            "epoch": out.encode(list(getattr(value, "epoch", []) or [])),
            "params": out.encode(plain),
            "model": out.saved(model) if model is not None else None,
        }

    def read(self, entry: dict[str, Any], src: Reader) -> Any:
        model = src.loaded(str(entry.get("model")))
        library = entry.get("library")
        if library == "tf_keras" and model is not None and keras_model(model) == "keras":
            library = "keras"  # its model was rebuilt in the kernel's Keras 3
        history = _keras(library).callbacks.History()
        history.history = src.decode(entry.get("history")) or {}
        history.epoch = src.decode(entry.get("epoch")) or []
        history.params = src.decode(entry.get("params")) or {}
        if model is not None:
            history.set_model(model)
        return history
