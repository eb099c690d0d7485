"""What the job's code trained and saved, reported as it happens, on every backend.

When the code imports Keras (Keras 3 or tf-keras, directly or through ``tf.keras``), the
runtime wraps ``Model.fit`` to add one callback on the chief that reports each epoch's logs
(loss, metrics, validation metrics), and ``Model.save`` / ``Model.export`` /
``tf.saved_model.save`` to report where a model was saved. A ``TensorBoard`` callback's log
folder is reported too.

Custom training loops (``tf.GradientTape``, ``strategy.run``) keep their numbers in Keras
metrics (``tf.keras.metrics.Mean(name="train_loss")``) that the code resets once an epoch,
as TensorFlow's guides do. When the code itself resets such a metric (not Keras inside
``fit``), its value just before the reset is reported as that metric's next round; a metric
reset before anything was added to it (a loop that resets at the start of each epoch) reports
nothing then, and its last round is reported when the script ends (:func:`finish`). In a job
of several tasks the chief reads nothing itself (a read of a collective or parameter-server
metric is an operation every task would have to join): a round's value is then the last
``result()`` the code read before the reset, as the guides' loops print it on every task.

Reports travel apart from what the code prints, so a progress bar, a ``print(end="")`` or binary
output never loses one or shows one: one JSON line each in the job folder's
:data:`RESULTS_FILE` where the job has that folder (the local and docker backends, which mount
it), else a line ``[tfc_runtime] result {json}`` of its own on stderr (Vertex AI: Cloud Logging
keeps each stream's lines apart, and stdout is where progress bars are drawn), signed with the
job's key (:mod:`tfc_runtime.reportkey`) so that no line the code prints passes for one. The
client reads them back from either (``tfc_jupyter.returns.results``), and takes a report even
where a line of the code's own was left unfinished before it.
Nothing here changes what the code computes: the callback only reads the logs Keras hands it,
and a reset only reads the metric's value first.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tfc_runtime import hooks, hypertune, reportkey
from tfc_runtime.protocol import RESULTS_FILE, json_safe, report_line

_fits = 0
_INTERNAL = frozenset({"keras", "tf_keras", "tensorflow", "tfc_runtime"})
"""Packages whose metric resets are their own business (``fit``, ``evaluate``, ...)."""
_rounds: dict[str, int] = {}  # metric name -> rounds reported
_read_metrics = True  # False in a job of several tasks: see install()
_round_base = 0  # rounds done before a restart (resume.epochs): the next round is one more
_loop_metrics: Any = weakref.WeakSet()  # metrics the code has reset: their last round at finish
_seen: Any = weakref.WeakKeyDictionary()  # metric -> the last result() the code read (see install)
_reads: dict[str, tuple[Callable[[], Any], float, bool]] = {}
"""Metric name -> (the metric the code last read, its value, made anew before)."""


def emit(event: dict[str, Any]) -> None:
    """One report: a line of the job folder's :data:`RESULTS_FILE`, else a line on the
    process's own stderr (a ``redirect_stderr`` in the code, or a ``%%capture`` cell, does not
    swallow it). Never a line of stdout, where the code's progress bars are drawn."""
    hypertune.observe(event)  # a Vertex AI tuning trial's metric file, when asked for
    text = json.dumps(json_safe(event), separators=(",", ":"), allow_nan=False)
    job_dir = os.environ.get("TFC_JOB_DIR")
    if job_dir:
        try:
            fd = os.open(
                os.path.join(job_dir, RESULTS_FILE),
                os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0),
                0o600,
            )
            try:
                os.write(fd, (text + "\n").encode("utf-8"))  # one write: a whole line
            finally:
                os.close(fd)
            return
        except OSError:  # not writable here: the stream carries it
            pass
    stream = sys.__stderr__ or sys.stderr
    try:
        stream.write(report_line(text, reportkey.key()) + "\n")
        stream.flush()
    except (OSError, ValueError):  # a closed stream: reporting never breaks the job
        pass


def _number(value: Any) -> float | None:
    """A float from a Keras log value (a tensor, numpy scalar or float), else None. NaN and
    infinity are kept: a loss that turned NaN is what the user most needs to see."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _where(path: Any) -> str:
    """A saved path as the job sees it: absolute on disk, as given for ``gs://`` and the like."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else str(path)
    return text if "://" in text else os.path.abspath(text)


in_run_cell: Callable[[], bool] | None = None
"""Set by :mod:`tfc_runtime.runcell` when the script has a run cell: whether it runs now (each
``fit`` event says so: the cell's live plot draws only the run cell's fits)."""


def _recorder_class(keras: ModuleType) -> type:
    """The recording callback, a subclass of this Keras' own ``Callback``."""

    class TfcResults(keras.callbacks.Callback):  # type: ignore[name-defined]
        """Reports each epoch's logs (the chief's); changes nothing in training."""

        def __init__(self, fit: int) -> None:
            super().__init__()
            self.fit = fit

        def on_train_begin(self, logs: Any = None) -> None:
            params = getattr(self, "params", None) or {}
            epochs = params.get("epochs")
            event = {"event": "fit", "fit": self.fit, "epochs": epochs, "time": time.time()}
            if in_run_cell is not None:  # the script has a run cell: is this fit its?
                event["run_cell"] = in_run_cell()
            emit(event)

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            values = {str(k): _number(v) for k, v in (logs or {}).items()}
            metrics = {k: v for k, v in values.items() if v is not None}
            emit(
                {
                    "event": "epoch",
                    "fit": self.fit,
                    "epoch": int(epoch) + 1,
                    "time": time.time(),
                    "metrics": metrics,
                }
            )

    return TfcResults


def _with_recorder(keras: ModuleType, callbacks: Any, recorder_cls: type) -> Any:
    """``callbacks`` plus a new recorder (a list or tuple; anything else is left as given)."""
    global _fits
    if callbacks is None:
        callbacks = []
    if not isinstance(callbacks, (list, tuple)):
        return callbacks
    for cb in callbacks:
        tensorboard = getattr(keras.callbacks, "TensorBoard", None)
        if tensorboard is not None and isinstance(cb, tensorboard):
            emit({"event": "tensorboard", "log_dir": _where(cb.log_dir), "time": time.time()})
    recorder = recorder_cls(_fits)
    _fits += 1
    return [*callbacks, recorder]


def _wrap_fit(keras: ModuleType) -> None:
    """``keras.Model.fit`` adds the recorder to the code's callbacks."""
    model = keras.Model
    original = model.fit
    if getattr(original, "_tfc_wrapped", False):
        return
    recorder_cls = _recorder_class(keras)

    @functools.wraps(original)
    def fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        callbacks = _with_recorder(keras, hooks.fit_callbacks(args, kwargs), recorder_cls)
        args, kwargs = hooks.with_fit_callbacks(args, kwargs, callbacks)
        return original(self, *args, **kwargs)

    fit._tfc_wrapped = True  # type: ignore[attr-defined]
    model.fit = fit


def _wrap_saver(owner: Any, name: str, path_of: Callable[..., Any], library: str) -> None:
    """``owner.name(...)`` reports where it saved (and with which ``library``: ``keras``,
    ``tf_keras`` or ``tensorflow``), once it returns."""
    original = getattr(owner, name, None)
    if original is None or getattr(original, "_tfc_wrapped", False):
        return

    @functools.wraps(original)
    def save(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        try:
            path = path_of(*args, **kwargs)
        except (IndexError, KeyError, TypeError):
            path = None
        if path is not None:
            emit(
                {
                    "event": "saved",
                    "path": _where(path),
                    "how": name,
                    "library": library,
                    "time": time.time(),
                }
            )
        return result

    save._tfc_wrapped = True  # type: ignore[attr-defined]
    setattr(owner, name, save)


def _model_path(_self: Any, filepath: Any = None, *args: Any, **kwargs: Any) -> Any:
    return filepath if filepath is not None else kwargs["filepath"]


def _saved_model_path(_obj: Any, export_dir: Any = None, *args: Any, **kwargs: Any) -> Any:
    return export_dir if export_dir is not None else kwargs["export_dir"]


def _wrapping(frame: Any) -> bool:
    """A frame of Keras 2's per-instance metric wrappers, or of the autograph call between."""
    module = str(frame.f_globals.get("__name__"))
    return (
        frame.f_code.co_name in ("result_fn", "decorated")
        or module.endswith(".utils.metrics_utils")
        or module.startswith("tensorflow.python.autograph.")
    )


def _from_the_code() -> bool:
    """Whether the function that called our wrapper is the job's code, not Keras or TF. Keras
    2's per-instance ``result`` wrappers (``Metric.__new__``'s ``result_fn``,
    ``metrics_utils.result_wrapper`` and autograph between them) are looked through: the code
    calls ``metric.result()`` through them."""
    frame = sys._getframe(2)
    while frame.f_back is not None and _wrapping(frame):
        frame = frame.f_back
    caller = frame.f_globals.get("__name__") or ""
    return caller.partition(".")[0] not in _INTERNAL


def _collective(metric: Any) -> bool:
    """Whether the metric's variables belong to a multi-worker (collective) strategy."""
    for variable in getattr(metric, "variables", ()):
        for held in (variable, getattr(variable, "_value", None)):
            kind = type(getattr(held, "_distribute_strategy", None)).__name__
            if "MultiWorker" in kind or "Collective" in kind:
                return True
    return False


def _round_value(metric: Any) -> float | None:
    """The metric's value for the round that ends now, or None: nothing added since its last
    reset (every state variable still zero), not a scalar, traced code, or a collective."""
    tf = sys.modules.get("tensorflow")
    if tf is not None and not tf.executing_eagerly():
        return None
    if _collective(metric):
        return None
    import numpy as np

    def held(variable: Any) -> Any:  # a TF 2.15 SyncOnReadVariable has no usable __array__
        return variable.numpy() if hasattr(variable, "numpy") else np.asarray(variable)

    if all(not np.any(held(v)) for v in metric.variables):
        return None
    return _number(metric.result())


def _report_round(metric: Any) -> None:
    """Report a metric's round, if it has one (never fails the code's reset). In a job of
    several tasks the round's value is the last one the code itself read (``result()``), and
    nothing is read here."""
    try:
        value = _seen.pop(metric, None) if not _read_metrics else _round_value(metric)
        name = str(getattr(metric, "name", "") or type(metric).__name__)
    except Exception:  # a metric we cannot read: its reset goes on unreported
        return
    if value is None:
        return
    _emit_round(name, value)


def _emit_round(name: str, value: float) -> None:
    _rounds[name] = max(_rounds.get(name, 0), _round_base) + 1
    emit({"event": "metric", "name": name, "round": _rounds[name], "value": value,
          "time": time.time()})  # fmt: skip


def _read_by_code(metric: Any, value: float) -> None:
    """The code read ``metric.result()``: keep it (see :func:`install`), and when it is a new
    metric of the name of one the code read before and never reset (a loop that makes its
    metrics anew each epoch, as the Iris walkthrough does), the old one's last read ends a
    round."""
    name = str(getattr(metric, "name", "") or type(metric).__name__)
    if not _read_metrics:
        with contextlib.suppress(TypeError):  # not weakly referable: unreported
            _seen[metric] = value
    earlier = _reads.get(name)
    if earlier is not None:
        ref, last, _ = earlier
        old = ref()
        if old is not metric and (old is None or old not in _loop_metrics):
            _emit_round(name, last)
            _reads[name] = (_ref(metric), value, True)
            return
    _reads[name] = (_ref(metric), value, bool(earlier and earlier[2]))


def _ref(metric: Any) -> Callable[[], Any]:
    try:
        return weakref.ref(metric)
    except TypeError:
        return lambda: metric


def _wrap_result(cls: type) -> None:
    """``cls.result``, when the job's code calls it, keeps the value the code read (on every
    task alike, so the reduction it may start is the code's own): the round's value when the
    code then resets the metric in a job of several tasks, or makes a new one of its name."""
    original = cls.__dict__.get("result")
    if original is None or getattr(original, "_tfc_wrapped", False):
        return

    @functools.wraps(original)
    def result(self: Any, *args: Any, **kwargs: Any) -> Any:
        value = original(self, *args, **kwargs)
        if _from_the_code():
            tf = sys.modules.get("tensorflow")
            if tf is None or tf.executing_eagerly():
                number = _number(value)
                if number is not None:
                    _read_by_code(self, number)
        return value

    result._tfc_wrapped = True  # type: ignore[attr-defined]
    cls.result = result  # type: ignore[attr-defined]


def _wrap_reset(cls: type, method: str) -> None:
    """``cls.method`` (a metric's ``reset_state`` / ``reset_states``), when the job's code calls
    it, first reports the round that ends."""
    original = cls.__dict__.get(method)
    if original is None or getattr(original, "_tfc_wrapped", False):
        return

    @functools.wraps(original)
    def reset(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _from_the_code():
            with contextlib.suppress(TypeError):  # not weakly referable: no last round
                _loop_metrics.add(self)
            _report_round(self)
        return original(self, *args, **kwargs)

    reset._tfc_wrapped = True  # type: ignore[attr-defined]
    setattr(cls, method, reset)


def _wrap_metrics(module: ModuleType) -> None:
    """Every Metric class of this Keras reports its rounds (see the module's docstring)."""
    base = getattr(getattr(module, "metrics", None), "Metric", None)
    if base is None:
        return
    todo, seen = [base], set()
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        for method in ("reset_state", "reset_states"):
            _wrap_reset(cls, method)
        _wrap_result(cls)


def continue_rounds(done: int) -> None:
    """A restarted job's loop resumed after ``done`` epochs: its rounds go on from there."""
    global _round_base
    _round_base = max(0, int(done))


def finish() -> None:
    """The script ended: report each loop metric's last round (one the code did not reset),
    and the last read of each metric the code made anew each epoch."""
    for metric in list(_loop_metrics):
        _report_round(metric)
    for name, (ref, value, renewed) in list(_reads.items()):
        metric = ref()
        if renewed and (metric is None or metric not in _loop_metrics):
            _emit_round(name, value)
    _reads.clear()


def _patch_keras(module: ModuleType) -> None:
    """Wrap fit, save and export of this Keras (``keras`` or ``tf_keras``), and its metrics'
    resets."""
    if not hasattr(module, "Model") or not hasattr(module, "callbacks"):
        return
    _wrap_fit(module)
    _wrap_metrics(module)
    _wrap_saver(module.Model, "save", _model_path, module.__name__)
    if hasattr(module.Model, "export"):
        _wrap_saver(module.Model, "export", _model_path, module.__name__)


def _wrap_summary_scalar(summary: Any) -> None:
    """``tf.summary.scalar(name, value, step)``, written eagerly by the job's code: each call
    is that name's next round (a loop that logs its epochs to TensorBoard reports them)."""
    original = getattr(summary, "scalar", None)
    if original is None or getattr(original, "_tfc_wrapped", False):
        return

    @functools.wraps(original)
    def scalar(name: Any, data: Any = None, *args: Any, **kwargs: Any) -> Any:
        written = original(name, data, *args, **kwargs)
        if _from_the_code() and written is not False:
            tf = sys.modules.get("tensorflow")
            eager = tf is None or tf.executing_eagerly()
            held = hasattr(data, "_distribute_strategy")  # a variable: reading it may sync
            number = _number(data) if eager and not held else None
            if number is not None and isinstance(name, str):
                _emit_round(name, number)
        return written

    scalar._tfc_wrapped = True  # type: ignore[attr-defined]
    summary.scalar = scalar


def _patch_tensorflow(module: ModuleType) -> None:
    """Wrap ``tf.saved_model.save`` and ``tf.summary.scalar``."""
    saved_model = getattr(module, "saved_model", None)
    if saved_model is not None:
        _wrap_saver(saved_model, "save", _saved_model_path, "tensorflow")
    summary = getattr(module, "summary", None)
    if summary is not None:
        _wrap_summary_scalar(summary)


_PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "keras": _patch_keras,
    "tf_keras": _patch_keras,
    "tensorflow": _patch_tensorflow,
}


def install(*, several_tasks: bool = False) -> None:
    """Record the job's results from here on. Called on the chief only: its results are the
    job's (the other replicas train the same model and print the same epochs).

    ``several_tasks``: the job has other tasks (workers, parameter servers). Reading a loop's
    metric on the chief alone may then start an operation the other tasks never join (a
    collective all-reduce under MultiWorkerMirroredStrategy, however the strategy was made, or
    a read from a parameter server): so in such a job nothing is read. A round's value is the
    last one the code read itself (``metric.result()``, which every task calls alike in such
    loops, to print it) before it reset the metric; a loop that never reads its metric reports
    no rounds.
    """
    global _read_metrics
    _read_metrics = not several_tasks
    for name, patch in _PATCHES.items():  # patched now when imported already (by the strategy)
        hooks.when_imported(name, patch, "metrics are not recorded")
