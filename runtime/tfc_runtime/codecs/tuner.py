"""Keras Tuner's values, as keras.io's tutorials use them in the next cell.

* :class:`HyperParametersCodec` (``kind: hyperparameters``): ``hp.get_config()`` as a JSON
  tree; in the kernel ``HyperParameters.from_config`` of it, once every entry is checked to be
  one of Keras Tuner's own kinds (``Int``, ``Float``, ``Choice``, ``Boolean``, ``Fixed``; their
  conditions ``Parent``).
* :class:`KerasTuner` (``kind: tuner``): what the tuner's constructor was given (its class,
  its build function's name, objective, trials and other plain arguments) and its folder
  (``directory``/``project_name``) relative to the job's working folder. In the kernel the
  tuner is made again with the kernel's own class and build function, reloading its trials from
  that folder where the notebook is (a local job wrote it there; other jobs' files are copied
  back before the names are read). Keras Tuner's folder is JSON and weights files; the
  ``SklearnTuner``, which pickles its models, never travels.

``keras_tuner`` is looked up in ``sys.modules`` to claim a value, never imported.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import os
import sys
from pathlib import Path
from typing import Any

from . import Codec, Reader, Stays, Unsupported, Writer, plain_rel

HP_KINDS = frozenset({"Int", "Float", "Choice", "Boolean", "Fixed"})
"""The kinds of hyperparameter a ``HyperParameters`` config may hold."""
CONDITIONS = frozenset({"Parent"})
"""The kinds of condition a hyperparameter may hold."""
TUNERS = ("RandomSearch", "BayesianOptimization", "Hyperband", "GridSearch")
"""Keras Tuner's own tuners that travel (and the notebook's subclasses of ``kt.Tuner``)."""
_NOT_ARGS = frozenset({
    "self", "hypermodel", "directory", "project_name", "overwrite", "hyperparameters",
    "distribution_strategy", "logger", "tuner_id", "oracle", "objective",
})  # fmt: skip
_REBUILD = (
    "Fix: make it again in the next cell with the same directory= and project_name= "
    "(Keras Tuner reloads its trials)"
)


def _of_keras_tuner(value: Any, name: str) -> bool:
    return any(
        c.__name__ == name and c.__module__.startswith("keras_tuner") for c in type(value).__mro__
    )


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, (list, tuple)) and all(_plain(v) for v in value)


class HyperParametersCodec(Codec):
    """A ``keras_tuner.HyperParameters`` (``tuner.get_best_hyperparameters()[0]``)."""

    kind = "hyperparameters"
    noun = "Keras Tuner HyperParameters"

    def claims(self, value: Any) -> bool:
        return _of_keras_tuner(value, "HyperParameters")

    def write(self, value: Any, name: str, out: Writer) -> dict[str, Any]:
        return {"config": out.encode(value.get_config())}

    def read(self, entry: dict[str, Any], src: Reader) -> Any:
        config = src.decode(entry.get("config"))
        check_config(config)
        try:
            kt = importlib.import_module("keras_tuner")
        except ImportError:
            raise Stays(f"{self.noun}: keras_tuner is not installed here") from None
        return kt.HyperParameters.from_config(config)


def check_config(config: Any) -> None:
    """ValueError unless ``config`` is a ``HyperParameters.get_config()`` of Keras Tuner's
    own kinds of hyperparameter and condition."""
    if not isinstance(config, dict) or not isinstance(config.get("space"), list):
        raise ValueError("not a HyperParameters config")
    if not isinstance(config.get("values"), dict):
        raise ValueError("a HyperParameters config with no values")
    for item in config["space"]:
        if not isinstance(item, dict) or item.get("class_name") not in HP_KINDS:
            raise ValueError(f"not a kind of hyperparameter: {str(item)[:80]}")
        inner = item.get("config")
        if not isinstance(inner, dict) or not isinstance(inner.get("name"), str):
            raise ValueError(f"a hyperparameter with no name: {str(item)[:80]}")
        for cond in inner.get("conditions") or []:
            if not isinstance(cond, dict) or cond.get("class_name") not in CONDITIONS:
                raise ValueError(f"not a kind of condition: {str(cond)[:80]}")
            if set(cond) - {"class_name", "config", "module", "registered_name"}:
                raise ValueError(f"not a kind of condition: {str(cond)[:80]}")


def _objective(oracle: Any) -> list[list[str]] | None:
    """The oracle's objective as ``[[name, direction], ...]``; None: the default (a
    ``run_trial`` that returns a number)."""
    objective = getattr(oracle, "objective", None)
    kind = type(objective).__name__
    if objective is None or kind == "DefaultObjective":
        return None
    parts = getattr(objective, "objectives", None) if kind == "MultiObjective" else [objective]
    out = [[str(o.name), str(o.direction)] for o in parts or []]
    if not out or any(d not in ("min", "max") for _, d in out):
        raise Unsupported(f"Keras Tuner tuner with an objective of its own ({kind})")
    return out


def _arguments(tuner: Any) -> dict[str, Any]:
    """The plain arguments of the tuner's class (``max_trials``, ``seed``, ...), read from the
    tuner and its oracle."""
    args: dict[str, Any] = {}
    names = list(inspect.signature(type(tuner)).parameters)
    names += ["executions_per_trial", "max_model_size"]
    for arg in dict.fromkeys(names):
        if arg in _NOT_ARGS or arg in ("args", "kwargs"):
            continue
        for holder in (tuner.oracle, tuner):
            if hasattr(holder, arg) and _plain(getattr(holder, arg)):
                args[arg] = getattr(holder, arg)
                break
    return args


def _folder(tuner: Any) -> list[str]:
    """The parts of the tuner's project folder relative to the job's working folder;
    Unsupported (with the fix) when it is elsewhere."""
    directory = str(getattr(tuner, "directory", ""))
    project = str(getattr(tuner, "project_name", ""))
    where = os.path.realpath(os.path.join(directory, project))
    here = os.path.realpath(os.getcwd())
    if "://" in directory or os.path.commonpath([where, here]) != here or where == here:
        raise Unsupported(
            "Keras Tuner tuner whose folder is outside the job's working folder, so it cannot "
            "come back. Fix: pass directory= a folder under the notebook's, as directory='kt' "
            f"(it was {directory}/{project})"
        )
    return plain_rel(os.path.relpath(where, here).replace(os.sep, "/"))


class KerasTuner(Codec):
    """A Keras Tuner tuner (``kt.RandomSearch(build_model, ...)``), reloaded from its folder."""

    kind = "tuner"
    noun = "Keras Tuner tuner"

    def claims(self, value: Any) -> bool:
        return _of_keras_tuner(value, "BaseTuner")

    def write(self, value: Any, name: str, out: Writer) -> dict[str, Any]:
        cls = type(value)
        kt = sys.modules["keras_tuner"]
        if not isinstance(value, kt.Tuner):
            raise Unsupported(f"{cls.__name__}, whose models Keras Tuner pickles. {_REBUILD}")
        own = cls.__module__ == "__main__"
        if not own and (cls.__name__ not in TUNERS or getattr(kt, cls.__name__, None) is not cls):
            raise Unsupported(f"{cls.__name__} from {cls.__module__}. {_REBUILD}")
        build = getattr(value.hypermodel, "build", None)
        function = str(getattr(build, "__name__", ""))
        if (
            type(value.hypermodel).__name__ != "DefaultHyperModel"
            or getattr(build, "__module__", None) != "__main__"
            or not function.isidentifier()
        ):
            raise Unsupported(
                f"Keras Tuner tuner built by a {type(value.hypermodel).__name__} rather than a "
                f"function of the notebook. {_REBUILD}"
            )
        return {
            "tuner": cls.__name__,
            "own": own,
            "build": function,
            "objective": _objective(value.oracle),
            "arguments": out.encode(_arguments(value)),
            "folder": "/".join(_folder(value)),
        }

    def read(self, entry: dict[str, Any], src: Reader) -> Any:
        try:
            kt = importlib.import_module("keras_tuner")
        except ImportError:
            raise Stays(f"{self.noun}: keras_tuner is not installed here") from None
        cls, build = self._class(kt, entry, src), src.namespace.get(str(entry.get("build")))
        if not callable(build) or getattr(build, "__module__", None) != "__main__":
            raise Stays(f"{self.noun} whose build function {entry.get('build')!r} is not here")
        parts = plain_rel(str(entry.get("folder")))
        if len(parts) < 2:
            raise ValueError("not a tuner's folder")
        project = Path(src.folder).joinpath(*parts)
        steps = [Path(src.folder).joinpath(*parts[: i + 1]) for i in range(len(parts))]
        if not (project / "oracle.json").is_file() or any(p.is_symlink() for p in steps):
            raise Stays(
                f"{self.noun} whose folder {'/'.join(parts)} is not where the notebook is. "
                f"{_REBUILD} (looked in {src.folder})"
            )
        args = src.decode(entry.get("arguments")) or {}
        if not isinstance(args, dict) or not all(_plain(v) for v in args.values()):
            raise ValueError("not a tuner's arguments")
        objective = entry.get("objective")
        if objective is not None:
            objective = [kt.Objective(str(n), str(d)) for n, d in objective]
            args["objective"] = objective[0] if len(objective) == 1 else objective
        accepted = inspect.signature(cls).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
            args = {k: v for k, v in args.items() if k in accepted}
        with contextlib.redirect_stdout(io.StringIO()):  # "Reloading Tuner from ..."
            tuner = cls(
                build, directory=str(project.parent), project_name=project.name,
                overwrite=False, **args,
            )  # fmt: skip
            if not tuner.oracle.trials:  # the chief of a distributed search saved no tuner0
                tuner.oracle.reload()
        return tuner

    def _class(self, kt: Any, entry: dict[str, Any], src: Reader) -> Any:
        name = str(entry.get("tuner"))
        if entry.get("own"):
            cls = src.namespace.get(name)
            if not (isinstance(cls, type) and issubclass(cls, kt.Tuner)) or (
                cls.__module__ != "__main__"
            ):
                raise Stays(f"{self.noun} of class {name[:40]!r}, which is not here")
            return cls
        if name not in TUNERS:
            raise ValueError(f"not a tuner of Keras Tuner: {name[:40]}")
        return getattr(kt, name)
