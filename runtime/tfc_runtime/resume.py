"""Long jobs survive a restart, with no code change.

Vertex AI restarts a replica after VM maintenance or a non-zero exit, and preempts Spot VMs; the
local backend rehearses it (its supervisor restarts a replica that was killed). A restarted
replica runs the notebook again from its first line. So that it does not train again from
scratch:

* every Keras ``Model.fit`` (Keras 3 or tf-keras) gets a ``BackupAndRestore`` callback, one
  folder per ``fit`` call in the order the code makes them, under the job's checkpoint folder
  (:func:`tfc_runtime.checkpoint_dir`: ``AIP_CHECKPOINT_DIR`` on Vertex AI, the job folder on
  this machine). A restarted ``fit`` restores the weights and optimizer and goes on after its
  last finished epoch; a ``fit`` that had finished restores its end state and runs no epoch
  again. The ``History`` it returns holds every epoch, those from before the restart too.
* a custom training loop resumes when it counts its epochs with :func:`epochs`.

The log says so (``[tfc_runtime] fit 1 resumed after epoch 3 of 10``). The backups are removed
when the script ends well (:func:`finish`). A ``fit`` with a ``BackupAndRestore`` of the code's
own is left as it is; ``--no-resume`` (``TFC_RESUME=0`` in the job) turns all of it off.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tfc_runtime import hooks, results
from tfc_runtime.cluster import cluster_info
from tfc_runtime.paths import checkpoint_dir

if TYPE_CHECKING:  # _Backup's methods reach Keras' BackupAndRestore through super()
    _KerasBackup = Any
else:
    _KerasBackup = object

LEAF = "tfc-resume"
_fits = 0  # fit calls made so far (every task counts alike: the same script runs)
_loops = 0  # epochs() loops made so far
_noted_unbuilt = False


def enabled() -> bool:
    """True inside a job that has not turned resuming off (``TFC_RESUME=0``)."""
    return bool(os.environ.get("CLOUD_ML_JOB_ID")) and os.environ.get("TFC_RESUME", "1") != "0"


def root(*, make: bool = True) -> str:
    """This job's backups: ``<checkpoint folder>/tfc-resume/<job id>`` (on this machine made
    owner-only, unless ``make`` is False: then nothing is made)."""
    job = os.environ.get("CLOUD_ML_JOB_ID") or "job"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in job)
    path = f"{checkpoint_dir(make=make).rstrip('/')}/{LEAF}/{safe}"
    if make and not _remote(path):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _private(path: str) -> None:
    """What Keras and TensorFlow wrote under ``path`` (here), made owner-only: the backups
    hold the trained weights, as the job folder around them is owner-only."""
    if _remote(path):
        return
    with contextlib.suppress(OSError):
        if os.path.isfile(path):
            os.chmod(path, 0o600)
        for folder, _dirs, files in os.walk(path):
            os.chmod(folder, 0o700)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o600)


def _say(message: str) -> None:
    print(f"[tfc_runtime] {message}", file=sys.stderr, flush=True)


def _remote(path: str) -> bool:
    return "://" in path


def _read_json(path: str) -> Any:
    """The JSON at ``path`` (a local path or a ``gs://`` URL), None when missing or broken."""
    try:
        if _remote(path):
            import tensorflow as tf

            if not tf.io.gfile.exists(path):
                return None
            with tf.io.gfile.GFile(path, "r") as fh:
                return json.loads(fh.read())
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO is never waited on
        with os.fdopen(fd, encoding="utf-8") as fh:
            if _untrusted_entry(path, os.fstat(fd)):
                return None
            return json.load(fh)
    except (OSError, ValueError):
        return None
    except Exception:  # tf.errors.* from a remote file system
        return None


def _untrusted_entry(path: str, st: os.stat_result) -> str | None:
    """Why a file or folder of a backup cannot be trusted (None: it can): not this user's (a
    shared ``--base-output-dir``), or not a plain file or folder (a FIFO would hang the read, a
    link could lead anywhere)."""
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"{path} belongs to another user"
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return f"{path} is not a plain file"
    return None


def untrusted(folder: str) -> str | None:
    """Why the backups under ``folder`` (on this machine) cannot be restored, or None: each of
    its entries must be this user's plain file or folder. A remote folder is not checked."""
    if _remote(folder) or not os.path.lexists(folder):
        return None
    paths = [folder]
    for here, dirs, files in os.walk(folder):  # links are not followed
        paths += [os.path.join(here, name) for name in [*dirs, *files]]
    return next((why for p in paths if (why := _untrusted_entry(p, os.lstat(p)))), None)


def _write_json(path: str, data: Any) -> None:
    """Write ``data`` at ``path`` whole: a temporary file renamed over it."""
    text = json.dumps(data)
    if _remote(path):
        import tensorflow as tf

        tf.io.gfile.makedirs(os.path.dirname(path))
        with tf.io.gfile.GFile(path + ".tmp", "w") as fh:
            fh.write(text)
        tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(path + ".tmp", path)


def _remove_tree(path: str) -> None:
    with contextlib.suppress(Exception):
        if _remote(path):
            import tensorflow as tf

            if tf.io.gfile.exists(path):
                tf.io.gfile.rmtree(path)
        else:
            shutil.rmtree(path, ignore_errors=True)


def _task_temp(leaf: str) -> str:
    """A non-chief task's own folder (of this job) for what it must write but nobody keeps."""
    info = cluster_info(os.environ)
    job = root(make=False).rsplit("/", 1)[-1]
    folder = f"tfc-resume-{job}-{info.task_type}-{info.task_index}"
    return os.path.join(tempfile.gettempdir(), folder, leaf)


def _logs(logs: Any) -> dict[str, float]:
    """An epoch's logs as plain numbers (what a ``History`` keeps)."""
    out = {}
    for key, value in (logs or {}).items():
        with contextlib.suppress(TypeError, ValueError):
            out[str(key)] = float(value)
    return out


def _backup_class(keras: ModuleType) -> type:
    """A ``BackupAndRestore`` of this Keras that keeps its backups, says when it resumed, and
    keeps the epochs done before a restart for the ``History`` (its steps: :class:`_Backup`)."""
    base = keras.callbacks.BackupAndRestore
    keras3 = "double_checkpoint" in inspect.signature(base.__init__).parameters

    class TfcBackupAndRestore(_Backup, base):  # type: ignore[misc, valid-type]
        """Keras' ``BackupAndRestore``, kept until the job ends (see :mod:`tfc_runtime.resume`)."""

        tfc_needs_built = keras3  # Keras 3 restores built models only
        tfc_double_checkpoint = keras3  # and writes its .h5 in place: it keeps two
        tfc_keras = keras

    return TfcBackupAndRestore


class _Backup(_KerasBackup):
    """What :func:`_backup_class` adds to a Keras ``BackupAndRestore`` (the class after it in
    the built class's bases, which ``super()`` here reaches): backups kept until the job ends
    and written only where there is room, a backup of another fit refused, the resume said in
    the log, and the epochs run before a restart kept for the ``History``."""

    tfc_needs_built = False  # Keras 3 restores built models only
    tfc_double_checkpoint = False  # Keras 3's ``double_checkpoint``: two copies of its .h5
    tfc_keras: ModuleType  # the Keras whose BackupAndRestore this is

    def __init__(self, number: int, folder: str, history: str, chief: bool) -> None:
        kwargs: dict[str, Any] = {"delete_checkpoint": False}
        if self.tfc_double_checkpoint:  # Keras 3 writes its .h5 in place: keep two
            kwargs["double_checkpoint"] = True
        super().__init__(folder, **kwargs)
        self.tfc_number = number
        self.tfc_history = history
        self.tfc_chief = chief
        done = _read_json(history)
        self.tfc_done: list[dict[str, float]] = done if isinstance(done, list) else []
        self.tfc_first: int | None = None
        self.tfc_warned = False
        self.tfc_stopped = False  # no more backup writes: the disk had no room, or one failed
        self._tfc_two = bool(kwargs.get("double_checkpoint"))

    def _tfc_warn(self, what: str, why: object) -> None:
        """One line, once: Keras' own messages run over several lines."""
        if self.tfc_warned:
            return
        self.tfc_warned = True
        lines = str(why).strip().splitlines() or [type(why).__name__]
        said = lines[0].rstrip(":")[:200]
        if what == "read":  # another model's backup (the code changed), or a broken one
            _say(f"warning: fit {self.tfc_number}'s backup is not restored (it does not "
                 f"load: {said}): it trains from the start")  # fmt: skip
        else:
            _say(f"warning: fit {self.tfc_number} could not {what} its backup ({said}); "
                 "it trains on, but a restart would start it over")  # fmt: skip

    def _tfc_guarded(self, what: str, step: Any, *args: Any, **kwargs: Any) -> bool:
        """Run a backup step; a failure (an unwritable folder) is said once, never fatal.
        After a failed write the fit writes no more backups."""
        try:
            step(*args, **kwargs)
            return True
        except Exception as exc:
            self._tfc_warn(what, exc)
            self.tfc_stopped = self.tfc_stopped or what == "write"
            return False

    def _tfc_write(self, step: Any, *args: Any, **kwargs: Any) -> None:
        """A backup write, when there is room for it: HDF5 crashes the process (SIGSEGV)
        when the disk fills in the middle of a weights file, so a disk without room for
        the weights and the optimizer's state is not written to (one warning)."""
        if self.tfc_stopped:
            return
        short = _short_of_room(self.backup_dir, self.model, copies=2 if self._tfc_two else 1)
        if short:
            self.tfc_stopped = True
            self._tfc_warn("write", short)
            return
        self._tfc_guarded("write", step, *args, **kwargs)

    def _tfc_out_of_range(self) -> str | None:
        """Why the backup's training metadata cannot be this fit's (Keras 3 keeps the
        last epoch in ``training_metadata.json``): an epoch past the fit's end, below 0 or
        not a number would skip training and report success."""
        path = getattr(self, "_training_metadata_path", None)
        if not path:
            return None  # tf-keras keeps its epoch in the checkpoint
        meta = _read_json(path)
        if meta is None:
            return None  # none (or unreadable: Keras' own read says so)
        epoch = meta.get("epoch") if isinstance(meta, dict) else None
        total = (getattr(self, "params", None) or {}).get("epochs")
        if isinstance(epoch, int) and not isinstance(epoch, bool):
            last = total if isinstance(total, int) else epoch  # a fit of unknown length
            if 0 <= epoch <= last:
                return None
        of = f" of {total}" if isinstance(total, int) else ""
        return f"it says epoch {str(epoch)[:20]}{of}"

    def on_train_begin(self, logs: Any = None) -> None:
        why = self._tfc_out_of_range()
        if why is not None:  # never restored: the fit starts over, and says why
            _say(f"warning: fit {self.tfc_number}'s backup is not restored ({why}): it "
                 "trains from the start")  # fmt: skip
            _remove_tree(self.backup_dir)
            self.tfc_done = []
        if not self._tfc_guarded("read", super().on_train_begin, logs):
            self.tfc_done = []  # starts over: what it did before is not in the history
            if getattr(self.model, "_initial_epoch", None) is not None:
                self.model._initial_epoch = None

    def _save_model(self) -> None:  # Keras 3: one writer (the chief) in a job of several
        if self.tfc_chief:
            self._tfc_write(super()._save_model)

    def _backup(self, *args: Any, **kwargs: Any) -> None:  # tf-keras
        self._tfc_write(super()._backup, *args, **kwargs)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        super().on_epoch_begin(epoch, logs)
        if self.tfc_first is None:
            self.tfc_first = epoch
            if epoch > 0 and self.tfc_done:
                total = (getattr(self, "params", None) or {}).get("epochs")
                of = f" of {total}" if total else ""
                _say(f"fit {self.tfc_number} resumed after epoch {epoch}{of} (the job was "
                     "restarted; its weights and optimizer are restored)")  # fmt: skip

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self.tfc_chief:  # before the backup: the history never lags behind it
            self.tfc_done = [*self.tfc_done[:epoch], _logs(logs)]
            with contextlib.suppress(Exception):
                _write_json(self.tfc_history, self.tfc_done)
        super().on_epoch_end(epoch, logs)
        _private(self.backup_dir)  # this fit's folder, not every fit's, each epoch
        _private(self.tfc_history)

    def on_train_end(self, logs: Any = None) -> None:
        super().on_train_end(logs)
        if getattr(self.model, "_initial_epoch", None) is not None:
            self.model._initial_epoch = None  # Keras 3 would start the next fit there
        if self.tfc_first is None and self.tfc_done:
            n = len(self.tfc_done)
            _say(f"fit {self.tfc_number} had ended before the job was restarted: its "
                 f"weights are restored, its {n} epochs not run again")  # fmt: skip

    def tfc_history_of(self, history: Any) -> Any:
        """``history`` with the epochs run before the restart in front."""
        ran = self.tfc_first if self.tfc_first is not None else len(self.tfc_done)
        earlier = self.tfc_done[:ran]
        if not earlier or not isinstance(history, self.tfc_keras.callbacks.History):
            return history
        if len(earlier) != ran:  # a history that lags the backup: leave it as it is
            return history
        now = dict(getattr(history, "history", None) or {})
        keys = list(dict.fromkeys([*(k for e in earlier for k in e), *now]))
        history.history = {k: [e.get(k) for e in earlier] + list(now.get(k, [])) for k in keys}
        history.epoch = list(range(ran)) + list(getattr(history, "epoch", []))
        return history


def _state_bytes(model: Any) -> int:
    """About how many bytes a backup of ``model`` holds: its weights and its optimizer's
    variables, from their shapes (nothing is copied off the device)."""
    variables = list(getattr(model, "weights", None) or [])
    optimizer_vars = getattr(getattr(model, "optimizer", None), "variables", None)
    if callable(optimizer_vars):  # tf-keras' legacy optimizers: a method
        with contextlib.suppress(Exception):
            optimizer_vars = optimizer_vars()
    if isinstance(optimizer_vars, (list, tuple)):
        variables += list(optimizer_vars)
    total = 0
    for var in variables:
        with contextlib.suppress(Exception):
            count = 1
            for dim in var.shape:
                count *= int(dim or 0)
            dtype = getattr(var, "dtype", None)
            size = getattr(dtype, "size", None)  # tf.DType
            if not isinstance(size, int):
                import numpy

                size = numpy.dtype(str(dtype)).itemsize
            total += count * size
    return total


def _short_of_room(folder: str, model: Any, copies: int = 1) -> str | None:
    """Why the disk of ``folder`` cannot hold a backup of ``model`` now (None: it can)."""
    need = _state_bytes(model) * copies + (1 << 20)  # and files' headers, metadata, history
    where = folder
    while not os.path.isdir(where) and os.path.dirname(where) != where:
        where = os.path.dirname(where)
    try:
        found = os.statvfs(where)
    except OSError:
        return None  # the write itself will say what is wrong
    free = found.f_bavail * found.f_frsize
    if free >= need:
        return None
    return f"the disk at {where} has {_mb(free)} free; the backup needs about {_mb(need)}"


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.0f} KB"


def _has_backup(keras: ModuleType, callbacks: Any) -> bool:
    kind = getattr(keras.callbacks, "BackupAndRestore", None)
    return kind is not None and any(isinstance(cb, kind) for cb in callbacks or ())


def _callback_for(keras: ModuleType, model: Any, callbacks: Any, backup_cls: type) -> Any:
    """The backup callback for this fit call, None when it gets none."""
    global _fits, _noted_unbuilt
    _fits += 1
    number = _fits
    if not enabled() or not isinstance(callbacks, (list, tuple, type(None))):
        return None
    if _has_backup(keras, callbacks):
        return None
    if backup_cls.tfc_needs_built and not getattr(model, "built", True):  # type: ignore[attr-defined]
        if not _noted_unbuilt:
            _noted_unbuilt = True
            _say(f"fit {number} cannot resume after a restart: its model is built by its "
                 "first batch (give it an Input shape to make it resumable)")  # fmt: skip
        return None
    try:
        folder = f"{root()}/fit-{number}"
        why = untrusted(folder) or untrusted(f"{folder}.history.json")
        if why is not None:  # never restored: the fit starts over, and says why
            _say(f"warning: fit {number}'s backup is not restored ({why}): it trains from the "
                 "start")  # fmt: skip
            for path in (folder, f"{folder}.history.json"):
                if os.path.isdir(path) and not os.path.islink(path):
                    _remove_tree(path)
                else:
                    with contextlib.suppress(OSError):
                        os.remove(path)
        chief = cluster_info(os.environ).is_chief
        return backup_cls(number, folder, f"{folder}.history.json", chief)
    except Exception as exc:  # graph mode (tf.compat.v1), no checkpoint folder: it runs as it is
        _say(f"warning: fit {number} cannot resume after a restart: {exc}")
        return None


def _wrap_fit(keras: ModuleType) -> None:
    """``keras.Model.fit`` adds the backup callback, and returns the whole history."""
    model_cls = keras.Model
    original = model_cls.fit
    if getattr(original, "_tfc_resume", False):
        return
    backup_cls = _backup_class(keras)

    @functools.wraps(original)
    def fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        given = hooks.fit_callbacks(args, kwargs)
        backup = _callback_for(keras, self, given, backup_cls)
        if backup is None:
            return original(self, *args, **kwargs)
        args, kwargs = hooks.with_fit_callbacks(args, kwargs, [*(given or []), backup])
        return backup.tfc_history_of(original(self, *args, **kwargs))

    fit._tfc_resume = True  # type: ignore[attr-defined]
    model_cls.fit = fit


def _patch_keras(module: ModuleType) -> None:
    if hasattr(module, "Model") and hasattr(getattr(module, "callbacks", None), "BackupAndRestore"):
        _wrap_fit(module)


def install() -> None:
    """Make every Keras ``fit`` of this task resumable (every task: all restore, as Keras
    asks of a multi-worker job)."""
    if not enabled():
        return
    for name in ("keras", "tf_keras"):
        hooks.when_imported(name, _patch_keras, "a restarted job will not resume its fit")


def epochs(count: int, *, every: int = 1, **objects: Any) -> Iterator[int]:
    """The epochs ``0 .. count-1`` of a custom training loop, resumed after a restart.

    ::

        for epoch in tfc_runtime.epochs(EPOCHS, model=model, optimizer=optimizer):
            ...  # train one epoch

    In a job, ``objects`` (what ``tf.train.Checkpoint`` takes: models, optimizers, variables,
    dataset iterators) are saved in the job's checkpoint folder after every ``every`` epochs
    and after the last; a restarted replica restores them and goes on after the last saved
    epoch, and says so in its log. Every task of a multi-worker job must call it alike (as it
    runs the loop alike); only the chief's save is kept. Outside a job, or with
    ``--no-resume``, it is ``range(count)`` and saves nothing.
    """
    global _loops
    _loops += 1
    if not enabled() or not objects:
        yield from range(count)
        return
    try:
        folder = f"{root()}/loop-{_loops}"
    except OSError as exc:  # no checkpoint folder: the loop runs as it is
        _say(f"warning: loop {_loops} cannot resume after a restart: {exc}")
        yield from range(count)
        return
    yield from _resumed(count, max(1, int(every)), _loops, folder, objects)


def _build_optimizers(objects: dict[str, Any]) -> None:
    """Keras 3 optimizers make their variables on first use: make them now, so a restore
    fills them (for the models' trainable variables)."""
    models = [o for o in objects.values() if hasattr(o, "trainable_variables")]
    for obj in objects.values():
        build = getattr(obj, "build", None)
        if (
            callable(build)
            and hasattr(obj, "apply_gradients")
            and getattr(obj, "built", True) is False
            and models
        ):
            with contextlib.suppress(Exception):
                build([v for m in models for v in m.trainable_variables])


def _resumed(
    count: int, every: int, number: int, folder: str, objects: dict[str, Any]
) -> Iterator[int]:
    import tensorflow as tf

    chief = cluster_info(os.environ).is_chief
    writes = folder if chief else _task_temp(f"loop-{number}")
    with tf.init_scope():
        done = tf.Variable(0, dtype=tf.int64, trainable=False, name="tfc_epochs_done")
    checkpoint = tf.train.Checkpoint(tfc_epochs_done=done, **objects)
    start = 0
    latest = tf.train.latest_checkpoint(folder)
    if latest:
        _build_optimizers(objects)
        try:
            checkpoint.restore(latest).expect_partial()
        except Exception as exc:  # another loop's objects, a broken file: start over
            _say(f"warning: loop {number} could not read its checkpoint ({exc}); it starts over")
            done.assign(0)
        start = min(int(done.numpy()), count)
        if start:
            _say(f"loop {number} resumed after epoch {start} of {count} (the job was "
                 "restarted; its checkpoint is restored)")  # fmt: skip
            results.continue_rounds(start)
    manager = tf.train.CheckpointManager(checkpoint, writes, max_to_keep=1)
    saving = True
    for epoch in range(start, count):
        yield epoch
        done.assign(epoch + 1)
        if saving and ((epoch + 1) % every == 0 or epoch + 1 == count):
            try:
                manager.save()
                _private(writes)
            except Exception as exc:  # an unwritable folder: the loop goes on, unsaved
                saving = False
                _say(f"warning: loop {number} could not write its checkpoint ({exc}); it "
                     "trains on, but a restart would start it over")  # fmt: skip
            if not chief:
                _remove_tree(writes)  # every task saves (saving may sync); the chief's is kept


def finish() -> None:
    """The script ended well: its backups are not needed any more.

    The chief removes them but for the other tasks' own folders (tf-keras' ``workertemp_<i>``):
    a worker may still be writing its last epoch's copy there, after the chief has ended. Each
    task removes its own, and the folders left empty."""
    if not enabled():
        return
    info = cluster_info(os.environ)
    backups = root(make=False)
    if info.is_chief:  # all but the other tasks' own folders

        def verdict(name: str, folder: bool) -> str:
            return "keep" if name.startswith(_WORKER_TEMP) else "enter" if folder else "drop"
    else:  # its own folders only
        _remove_tree(_task_temp(""))
        mine = f"{_WORKER_TEMP}{info.task_index}"

        def verdict(name: str, folder: bool) -> str:
            if name.startswith(_WORKER_TEMP):
                return "drop" if name == mine else "keep"
            return "enter" if folder else "keep"

    _clean(backups, verdict)
    with contextlib.suppress(OSError):  # tfc-resume/, when no other job's backups are in it
        os.rmdir(os.path.dirname(backups))


_WORKER_TEMP = "workertemp_"  # tf-keras: where a task that is not the chief writes its copy


def _clean(path: str, verdict: Callable[[str, bool], str]) -> None:
    """Walk the folder ``path``: each file or folder that ``verdict(name, is_folder)`` says to
    ``"drop"`` is removed, to ``"keep"`` is left whole, to ``"enter"`` is walked in turn; then
    ``path`` is removed if that left it empty. Never fails."""
    with contextlib.suppress(Exception):
        if _remote(path):
            import tensorflow as tf

            gfile = tf.io.gfile
            for entry in gfile.listdir(path):
                name = entry.rstrip("/")
                child = f"{path.rstrip('/')}/{name}"
                folder = gfile.isdir(child)
                said = verdict(name, folder)
                if said == "drop":
                    gfile.rmtree(child) if folder else gfile.remove(child)
                elif said == "enter":
                    _clean(child, verdict)
            if not gfile.listdir(path):
                gfile.rmtree(path)
            return
        for name in os.listdir(path):
            child = os.path.join(path, name)
            folder = os.path.isdir(child) and not os.path.islink(child)
            said = verdict(name, folder)
            if said == "drop":
                shutil.rmtree(child, ignore_errors=True) if folder else os.unlink(child)
            elif said == "enter":
                _clean(child, verdict)
        os.rmdir(path)  # fails, as it should, while something kept is in it
