"""Keras models and their ``History``, as the run cell sends them back.

* :class:`KerasModel` (``kind: model``): saved as ``models/<name>.keras`` by every task (saving
  may join collectives), for the names the cell binds and the models it reads (trained in
  place); loaded in the kernel from the border's private copy, checked as a zip within
  ``return_limit_mb``, in Keras' safe mode (the notebook's own classes and functions given as
  custom objects); where that fails and the kernel holds a Keras model of that name, the job's
  weights are loaded into it.
* :class:`KerasHistory` (``kind: history``): its ``history``, ``epoch`` and ``params`` as JSON
  trees, and the name of its model; a ``History`` again in the kernel, its ``model`` the one
  loaded.

Keras (or tf-keras) is looked up in ``sys.modules``, never imported to claim a value.
"""

from __future__ import annotations

import importlib
import sys
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
                    path = fh.finish()
                    return _loaded(keras, src, lambda: _load_path(keras, path, custom), fh.finish)
            path = src.copy(file, archive=file.endswith(".keras"))
        except OverLimit:
            raise
        except (Unreadable, OSError) as exc:
            raise Stays(f"Keras model that does not load here: {str(exc)[:200]}") from None
        keras = _keras(library)
        return _loaded(keras, src, lambda: _load_path(keras, path, custom), lambda: path)


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
        history = _keras(entry.get("library")).callbacks.History()
        history.history = src.decode(entry.get("history")) or {}
        history.epoch = src.decode(entry.get("epoch")) or []
        history.params = src.decode(entry.get("params")) or {}
        model = src.loaded(str(entry.get("model")))
        if model is not None:
            history.set_model(model)
        return history
