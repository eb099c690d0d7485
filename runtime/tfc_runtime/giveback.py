"""What the run cell leaves for the kernel when it ends well: its names and its files.

Called by :func:`tfc_runtime.runcell.finish` with the run cell's state:

* :func:`save_names`: the names the cell binds at top level (and the Keras models it reads),
  as ``cell/values.json``, ``cell/arrays.npz`` (:mod:`tfc_runtime.values`: JSON and plain
  arrays, never a pickle) and ``cell/models/<name>.keras``; what cannot travel is named;
* :func:`save_files`: the files the cell wrote under the job's working folder in an image, as
  ``files/<path>``.

Both go to the job folder (local, docker: it is mounted), else under the base output folder
(Vertex AI's ``AIP_MODEL_DIR``'s parent), and are reported on the result channel. On other
tasks than the chief only the models are saved, privately: saving may join collectives.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Protocol

from tfc_runtime import results, values


class CellState(Protocol):
    """What :mod:`tfc_runtime.runcell` knows of the run cell (its ``_State``)."""

    run_cell: int | None
    binds: tuple[str, ...]
    reads: tuple[str, ...]
    code: tuple[str, ...]
    chief: bool
    out: Any
    started: float
    workdir: str


CELL = "cell"
"""The job folder's (or base output folder's) names: ``values.json``, ``arrays.npz``,
``models/<name>.keras``."""
LIMIT = 4 << 30
"""Bytes of values one run cell sends back at most (the kernel applies its own setting)."""


def private(path: str) -> None:
    """Owner-only, as the rest of the job folder."""
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)


FILES = "files"
"""The job folder's (or base output folder's) copies of the files the run cell wrote."""
_SKIP_DIRS = frozenset({".git", "__pycache__", ".ipynb_checkpoints", "node_modules"})
MAX_FILES = 10_000


def save_files(state: CellState) -> list[str] | None:
    """Copy what the run cell wrote under the job's working folder (relative paths: a model,
    a CSV log, arrays) to the job folder's :data:`FILES` (docker), else the base output
    folder's (Vertex AI), for the kernel to put next to the notebook. A local job writes next
    to the notebook already: nothing is copied. The relative paths copied, or None."""
    from tfc_runtime.protocol import SCRIPT, SOURCE_MAP, WORKDIR

    if not state.chief or state.run_cell is None or not state.workdir:
        return None
    in_image = os.path.realpath(state.workdir) == os.path.realpath(WORKDIR)
    if os.environ.get("TFC_JOB_DIR") and not in_image:
        return None  # a local job: the files are where the notebook is
    written: list[tuple[str, str, int]] = []
    total = 0
    for root, dirs, files in os.walk(state.workdir):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, state.workdir)
            try:
                info = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            if rel in (SCRIPT, SOURCE_MAP) or not os.path.isfile(path) or os.path.islink(path):
                continue
            if info.st_mtime + 1 < state.started:  # older than the cell (1 s: coarse clocks)
                continue
            written.append((path, rel, info.st_size))
            total += info.st_size
            if len(written) >= MAX_FILES or total > LIMIT:
                break
    if not written:
        return []
    folder, remote = _destination(FILES)
    if folder is None:
        results.emit({"event": "files", "files": [], "time": time.time(),
                      "stayed": [r for _, r, _ in written]})  # fmt: skip
        return None
    for path, rel, _size in written:
        target = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        shutil.copyfile(path, target)
        private(target)
    where = _upload(folder, remote) if remote is not None else folder
    copied = [rel for _, rel, _ in written]
    results.emit({"event": "files", "folder": where, "files": copied, "time": time.time()})
    return copied


def keras_model(value: Any) -> str | None:
    """``keras`` or ``tf_keras`` for a Keras model, else None."""
    for library in ("keras", "tf_keras"):
        module = sys.modules.get(library)
        model = getattr(module, "Model", None) if module is not None else None
        if isinstance(model, type) and isinstance(value, model):
            return library
    return None


def _history(value: Any) -> str | None:
    for library in ("keras", "tf_keras"):
        module = sys.modules.get(library)
        history = getattr(getattr(module, "callbacks", None), "History", None)
        if isinstance(history, type) and isinstance(value, history):
            return library
    return None


def _save_model(model: Any, path: str) -> None:
    save = type(model).save
    save = getattr(save, "__wrapped__", save)  # not reported as the code's own save
    save(model, path)


def _destination(leaf: str = CELL) -> tuple[str | None, str | None]:
    """``(local folder to write, remote folder to copy it to)``: the job folder's ``leaf``;
    else, with ``AIP_MODEL_DIR`` (Vertex AI's base output folder), a temporary folder copied
    to ``<base>/<leaf>/``; else nothing. A folder left by an earlier run (a restarted job) is
    emptied."""
    job_dir = os.environ.get("TFC_JOB_DIR")
    if job_dir:
        folder = os.path.join(job_dir, leaf)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.makedirs(folder, mode=0o700)
        return folder, None
    model_dir = os.environ.get("AIP_MODEL_DIR")
    if model_dir:
        base = model_dir.rstrip("/").rsplit("/", 1)[0]
        return tempfile.mkdtemp(prefix=f"tfc-{leaf}-"), f"{base}/{leaf}"
    return None, None


def save_names(state: CellState, namespace: dict[str, Any]) -> dict[str, Any] | None:
    """Save the run cell's names (see the module's docstring); the manifest written, or None
    (no run cell, or not the chief: then only the models are saved, privately)."""
    if state.run_cell is None:
        return None
    names = [n for n in state.binds if n in namespace and not n.startswith("__")]
    to_save = _models_to_save(namespace, names, state.reads)
    if not state.chief:  # saving may be collective: every task saves alike, the chief's is kept
        own = tempfile.mkdtemp(prefix="tfc-cell-task-")
        for key, (model, _library) in to_save.items():
            with contextlib.suppress(Exception):
                _save_model(model, os.path.join(own, f"{key}.keras"))
        shutil.rmtree(own, ignore_errors=True)
        return None
    folder, remote = _destination()
    if folder is None:
        results.emit({"event": "cell", "names": [], "stayed": {n: "no folder to send it back"
                      for n in names}, "time": time.time()})  # fmt: skip
        return None
    os.makedirs(os.path.join(folder, "models"), mode=0o700, exist_ok=True)
    manifest: dict[str, Any] = {"version": 1, "names": {}, "stayed": {}, "order": []}
    saved_models: dict[int, str] = {}
    for key, (model, library) in to_save.items():
        path = os.path.join(folder, "models", f"{key}.keras")
        try:
            _save_model(model, path)
        except Exception as exc:
            manifest["stayed"][key] = f"Keras model that cannot be saved: {exc}"
            continue
        private(path)
        saved_models[id(model)] = key
        manifest["names"][key] = {"kind": "model", "file": f"models/{key}.keras",
                                  "library": library, "bound": key in names}  # fmt: skip
    encoder = values.Encoder()
    for n in names:
        value = namespace[n]
        if n in manifest["names"] or n in manifest["stayed"]:
            continue
        if n in state.code:  # a module, function or class (decorated too): the kernel
            manifest["names"][n] = {"kind": "code"}  # runs the cell's import, def and class
            continue  # statements itself
        history_of = _history(value)
        try:
            if history_of is not None:
                manifest["names"][n] = _history_entry(value, history_of, encoder, saved_models)
            else:
                before = encoder.size
                tree = encoder.encode(value)
                if encoder.size > LIMIT:
                    raise values.Unsupported(f"{values.kind(value)} over {LIMIT >> 30} GB")
                manifest["names"][n] = {"kind": "value", "value": tree,
                                        "bytes": encoder.size - before}  # fmt: skip
        except values.Unsupported as exc:
            manifest["stayed"][n] = str(exc)
    manifest["order"] = [n for n in names if n in manifest["names"]]
    if state.out is not None and keras_model(state.out) is None:
        with contextlib.suppress(values.Unsupported):  # else its bundle shows it
            manifest["out"] = {"value": encoder.encode(state.out)}
    if encoder.arrays:
        import numpy as np

        arrays = os.path.join(folder, "arrays.npz")
        np.savez(arrays, **encoder.arrays)
        private(arrays)
    path = os.path.join(folder, "values.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f, allow_nan=False)
    private(path)
    where = folder
    if remote is not None:
        where = _upload(folder, remote)
    results.emit({"event": "cell", "folder": where, "names": list(manifest["names"]),
                  "stayed": manifest["stayed"], "time": time.time()})  # fmt: skip
    return manifest


def _history_entry(
    value: Any, library: str, encoder: values.Encoder, saved: dict[int, str]
) -> dict[str, Any]:
    model = getattr(value, "model", None)
    return {
        "kind": "history",
        "library": library,
        "history": encoder.encode(dict(getattr(value, "history", {}) or {})),
        "epoch": encoder.encode(list(getattr(value, "epoch", []) or [])),
        "params": encoder.encode(_plain(getattr(value, "params", {}) or {})),
        "model": saved.get(id(model)) if model is not None else None,
    }


def _models_to_save(
    namespace: dict[str, Any], names: list[str], reads: tuple[str, ...]
) -> dict[str, tuple[Any, str]]:
    """The Keras models to save, by name (the same on every task, in the same order): those
    the cell binds or reads, then a History's model that no name holds
    (``__history_model_N``)."""
    out: dict[str, tuple[Any, str]] = {}
    for n in dict.fromkeys([*names, *reads]):
        if n in namespace and (library := keras_model(namespace[n])) is not None:
            out[n] = (namespace[n], library)
    held = {id(model) for model, _ in out.values()}
    for n in names:
        model = getattr(namespace[n], "model", None) if _history(namespace[n]) else None
        if model is not None and id(model) not in held and (lib := keras_model(model)):
            out[f"__history_model_{len(out)}"] = (model, lib)
            held.add(id(model))
    return out


def _plain(params: dict[str, Any]) -> dict[str, Any]:
    return {str(k): v for k, v in params.items() if v is None or isinstance(v, (int, float, str))}


def _upload(folder: str, remote: str) -> str:
    """Copy the folder to ``remote`` (``gs://...``): with TensorFlow's file system, or through
    the Cloud Storage JSON API of ``STORAGE_EMULATOR_HOST`` where one is set (as
    google-cloud-storage reads it: a test's storage server)."""
    emulator = os.environ.get("STORAGE_EMULATOR_HOST")
    for root, _dirs, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        target = remote if rel == "." else f"{remote}/{rel}"
        for name in files:
            if emulator and target.startswith("gs://"):
                _put(emulator, f"{target}/{name}", os.path.join(root, name))
                continue
            import tensorflow as tf

            tf.io.gfile.makedirs(target)
            tf.io.gfile.copy(os.path.join(root, name), f"{target}/{name}", overwrite=True)
    shutil.rmtree(folder, ignore_errors=True)
    return remote


def _put(endpoint: str, uri: str, path: str) -> None:
    """Upload one file to ``gs://bucket/name`` through a Cloud Storage JSON API endpoint."""
    import urllib.parse
    import urllib.request

    bucket, _, name = uri.removeprefix("gs://").partition("/")
    base = endpoint if "://" in endpoint else f"http://{endpoint}"
    url = (
        f"{base.rstrip('/')}/upload/storage/v1/b/{urllib.parse.quote(bucket, safe='')}/o"
        f"?uploadType=media&name={urllib.parse.quote(name, safe='')}"
    )
    with open(path, "rb") as f:
        request = urllib.request.Request(
            url, data=f.read(), method="POST",
            headers={"Content-Type": "application/octet-stream"},
        )  # fmt: skip
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=60) as answer:
        answer.read()
