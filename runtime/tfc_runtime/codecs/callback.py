"""Keras callbacks (``kind: callback``): ``EarlyStopping``, ``ModelCheckpoint``,
``ReduceLROnPlateau`` ... and the notebook's own ``keras.callbacks.Callback`` subclasses, as the
next cell reads them (``stopper.stopped_epoch``, ``stopper.best``) or passes them to another fit.

In the job: the callback's class (Keras' own, by its name in ``keras.callbacks``; the
notebook's, by its name in the notebook) and its state, each attribute that travels as a value
(numbers, strings, the best weights as arrays ...), the comparison it monitors with (by its
name: ``keras.ops.less``, ``numpy.greater`` ...) and the name its model is written under (a
model is written first, by its own codec). Attributes that do not travel (other functions,
writers) are left out. In the kernel: a new callback of the kernel's own class (Keras' class, or the
class the notebook defined in the kernel; never code from the job), made with no arguments
where it can be, its state set from the values, its model set. An attribute left out keeps a
new callback's value (``monitor_op`` is made again at the next fit); one a new callback lacks
is named in the cell's line. Like models, callbacks are written early, so that a list of them
comes back and a callback the cell used in ``fit`` comes back trained (its ``stopped_epoch``).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from . import Codec, Reader, Stays, Unsupported, Writer
from .keras import _keras

_LIBRARIES = ("keras", "tf_keras")
_COMPARISONS = frozenset({"less", "greater", "less_equal", "greater_equal"})
"""The functions a callback may hold that travel by name (``monitor_op``: Keras 3's
``keras.ops.less``, tf-keras' ``np.less`` ...), made again from the kernel's module."""
_OPS_MODULES = ("keras.ops", "numpy")
_SKIPPED = frozenset({"model", "_model", "params", "_chief_worker_only", "_supports_tf_logs"})
"""Attributes never written: the model (linked to the model written by its codec), what
``fit`` sets again, and Keras' class-level flags."""


def _base(value: Any) -> str | None:
    """``keras`` or ``tf_keras`` when ``value`` is a Keras callback (not a ``History``: the
    history codec writes those), else None; looks at the class's bases only."""
    for cls in type(value).__mro__:
        module = cls.__module__.split(".")[0]
        if cls.__name__ == "History" and module in _LIBRARIES:
            return None
        if cls.__name__ == "Callback" and module in _LIBRARIES and module in sys.modules:
            return module
    return None


def _comparison(item: Any) -> list[str] | None:
    """``[module, name]`` of one of :data:`_COMPARISONS` that ``item`` is, else None."""
    name = getattr(item, "__name__", None)
    if name not in _COMPARISONS:
        return None
    for module in _OPS_MODULES:
        loaded = sys.modules.get(module)
        if loaded is not None and getattr(loaded, name, None) is item:
            return [module, name]
    return None


class KerasCallback(Codec):
    """A Keras callback: one of Keras' own, or the notebook's subclass."""

    kind = "callback"
    noun = "Keras callback"
    early = True

    def claims(self, value: Any) -> bool:
        return not isinstance(value, type) and _base(value) is not None

    def refers(self, value: Any) -> list[Any]:
        model = getattr(value, "_model", None) or vars(value).get("model")
        return [model] if model is not None else []

    def write(self, value: Any, name: str, out: Writer) -> dict[str, Any]:
        library = _base(value)
        cls = type(value)
        own = cls.__module__ == "__main__"
        if not own and getattr(_keras(library).callbacks, cls.__name__, None) is not cls:
            raise Unsupported(f"Keras callback {cls.__qualname__} from {cls.__module__}")
        state: dict[str, Any] = {}
        ops: dict[str, list[str]] = {}
        left: list[str] = []
        for key, item in vars(value).items():
            if key in _SKIPPED:
                continue
            if callable(item):  # code: a comparison by name, else a new callback's, if it has one
                op = _comparison(item)
                if op is not None:
                    ops[key] = op
                else:
                    left.append(key)
                continue
            try:
                state[key] = out.encode(item)
            except Unsupported:
                left.append(key)
        model = self.refers(value)
        return {
            "library": library,
            "class": cls.__qualname__,
            "own": own,
            "state": state,
            "ops": ops,
            "left": left,
            "model": out.saved(model[0]) if model else None,
        }

    def read(self, entry: dict[str, Any], src: Reader) -> Any:
        library = entry.get("library")
        if library not in _LIBRARIES:
            raise ValueError("not a Keras library")
        try:
            keras = _keras(library)
        except ImportError:
            raise Stays(f"{self.noun}: {library} is not installed here") from None
        cls = self._class(keras, entry, src)
        try:
            callback = cls()  # a new one's defaults, where the state does not say
        except TypeError:  # arguments it needs (a file name, a schedule): only the state
            callback = cls.__new__(cls)
            keras.callbacks.Callback.__init__(callback)
        state = entry.get("state")
        if not isinstance(state, dict):
            raise ValueError("not a callback's state")
        for key, tree in state.items():
            if not isinstance(key, str) or key in _SKIPPED or not key.isidentifier():
                raise ValueError(f"not a callback attribute: {str(key)[:40]!r}")
            vars(callback)[key] = src.decode(tree)
        for key, (module, name) in dict(entry.get("ops") or {}).items():
            if module not in _OPS_MODULES or name not in _COMPARISONS or key in _SKIPPED:
                raise ValueError(f"not a comparison a callback holds: {str(name)[:40]!r}")
            vars(callback)[str(key)] = getattr(importlib.import_module(module), name)
        model = src.loaded(str(entry.get("model"))) if entry.get("model") else None
        if model is not None:
            callback.set_model(model)
        left = entry.get("left") or []
        missing = [str(k) for k in left if isinstance(k, str) and not hasattr(callback, k)]
        if missing:
            src.note(f"without {', '.join(missing[:5])}: they stayed in the job")
        return callback

    def _class(self, keras: Any, entry: dict[str, Any], src: Reader) -> Any:
        name = str(entry.get("class"))
        base = keras.callbacks.Callback
        if entry.get("own"):
            cls = src.namespace.get(name)
            if (
                not (isinstance(cls, type) and issubclass(cls, base))
                or cls.__module__ != "__main__"
            ):
                raise Stays(f"{self.noun} of class {name[:40]!r}, which is not here")
            return cls
        cls = getattr(keras.callbacks, name, None) if name.isidentifier() else None
        if not (isinstance(cls, type) and issubclass(cls, base)) or cls.__name__ == "History":
            raise ValueError(f"not one of Keras' callbacks: {name[:40]}")
        return cls
