"""What the run cell leaves for the kernel when it ends well: its names and its files.

Called by :func:`tfc_runtime.runcell.finish` with the run cell's state:

* :func:`save_names`: the names the cell binds at top level (and the Keras models it reads),
  each written by the first codec that claims it (:mod:`tfc_runtime.codecs`: Keras models as
  ``cell/models/<name>.keras``, other values as JSON and plain arrays in ``cell/arrays.npz``,
  never a pickle), listed in ``cell/values.json`` (a
  :class:`~tfc_runtime.codecs.manifest.Manifest`); what cannot travel is named;
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
import stat
import tempfile
import time
from collections.abc import Iterable
from typing import Any, Protocol

from tfc_runtime import codecs, results, values
from tfc_runtime.codecs import manifest as manifest_file
from tfc_runtime.codecs.manifest import Manifest
from tfc_runtime.effects import Changes


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
    listed: frozenset[str] | None


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


CHANGES = "files.json"
"""The job folder's list of what else the run cell did to its working folder in an image:
``{"deleted": [rel, ...], "links": {rel: target}}`` (files it deleted, links it made)."""


def _in_image(workdir: str) -> bool:
    """Whether the job runs in an image's working folder (docker, Vertex AI), not next to the
    notebook (a local job, whose files are where the notebook is)."""
    from tfc_runtime.protocol import WORKDIR

    in_image = os.path.realpath(workdir) == os.path.realpath(WORKDIR)
    return in_image or not os.environ.get("TFC_JOB_DIR")


def _entries(workdir: str) -> Iterable[tuple[str, str, os.stat_result]]:
    """``(path, rel, lstat)`` of each file and link under the working folder (no link
    followed, the job's own script and source map and :data:`_SKIP_DIRS` left out), at most
    :data:`MAX_FILES` times ten."""
    from tfc_runtime.protocol import SCRIPT, SOURCE_MAP

    seen = 0
    for root, dirs, files in os.walk(workdir):
        links = [d for d in dirs if os.path.islink(os.path.join(root, d))]
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and d not in links]
        for name in [*files, *links]:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, workdir)
            seen += 1
            if seen > 10 * MAX_FILES:
                return
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if rel not in (SCRIPT, SOURCE_MAP):
                yield path, rel, info


def listing(workdir: str) -> frozenset[str] | None:
    """The files and links under the job's working folder in an image when the run cell
    starts (what it deletes is found against it); None for a local job."""
    if not _in_image(workdir):
        return None
    return frozenset(rel for _, rel, _ in _entries(workdir))


def save_files(state: CellState) -> list[str] | None:
    """Copy what the run cell wrote under the job's working folder (relative paths: a model,
    a CSV log, arrays) to the job folder's :data:`FILES` (docker), else the base output
    folder's (Vertex AI), for the kernel to put next to the notebook, with the files it
    deleted and the links it made (:data:`CHANGES`, in a job folder). A local job writes next
    to the notebook already: nothing is copied. The relative paths copied, or None."""
    if not state.chief or state.run_cell is None or not state.workdir:
        return None
    if not _in_image(state.workdir):
        return None  # a local job: the files are where the notebook is
    written: list[tuple[str, str, int]] = []
    links: dict[str, str] = {}
    total = 0
    for path, rel, info in _entries(state.workdir):
        if info.st_mtime + 1 < state.started and rel in (state.listed or ()):
            continue  # older than the cell (1 s: coarse clocks)
        if stat.S_ISLNK(info.st_mode):
            with contextlib.suppress(OSError):
                links[rel] = os.readlink(path)
        elif stat.S_ISREG(info.st_mode) and info.st_mtime + 1 >= state.started:
            written.append((path, rel, info.st_size))
            total += info.st_size
        if len(written) >= MAX_FILES or total > LIMIT:
            break
    gone = [r for r in sorted(state.listed or ()) if not os.path.lexists(
        os.path.join(state.workdir, r))][:MAX_FILES]  # fmt: skip
    if not written and not links and not gone:
        return []
    folder, remote = _destination(FILES)
    if folder is None:
        results.emit({"event": "files", "files": [], "time": time.time(),
                      "stayed": [r for _, r, _ in written]})  # fmt: skip
        return None
    if remote is None:  # a job folder: the kernel reads what else the cell did from it
        changes = os.path.join(os.path.dirname(folder), CHANGES)
        with open(changes, "w", encoding="utf-8") as f:
            json.dump({"deleted": gone, "links": links}, f)
        private(changes)
    for path, rel, _size in written:
        target = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        shutil.copyfile(path, target)
        private(target)
    where = upload(folder, remote) if remote is not None else folder
    copied = [rel for _, rel, _ in written]
    results.emit({"event": "files", "folder": where, "files": copied, "time": time.time()})
    return copied


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


class _Writer:
    """What codecs write through (:class:`tfc_runtime.codecs.Writer`): files under
    ``folder``, JSON trees whose arrays go to one ``arrays.npz``."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.written: list[str] = []
        self.names: dict[int, str] = {}  # id of an early value -> the name it was written as
        self.encoder = values.Encoder(saved=self.saved)

    @property
    def size(self) -> int:
        return self.encoder.size

    def path(self, rel: str) -> str:
        parts = codecs.plain_rel(rel)
        if parts[0] in (manifest_file.FILE, ARRAYS):
            raise codecs.Unsupported(f"a codec wrote {rel!r}, the manifest's own name")
        path = os.path.join(self.folder, *parts)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        self.written.append(path)
        return path

    def encode(self, value: Any) -> Any:
        return self.encoder.encode(value)

    def saved(self, value: Any) -> str | None:
        return self.names.get(id(value))

    def private(self) -> None:
        for path in self.written:
            if os.path.isfile(path):
                private(path)


ARRAYS = "arrays.npz"
"""The cell folder's arrays, of every name's JSON tree."""


def save_names(
    state: CellState,
    namespace: dict[str, Any],
    partial: dict[str, Any] | None = None,
    effects: Changes | None = None,
) -> Manifest | None:
    """Save the run cell's names (see the module's docstring), each by the first codec that
    claims it (:mod:`tfc_runtime.codecs`); the manifest written, or None (no run cell, or not
    the chief: then only the early kinds, models, are saved, privately). ``partial``: the job
    failed, where its failing statement starts (the manifest's ``partial``). ``effects``: what
    the cell changed beyond its bindings (:mod:`tfc_runtime.effects`): those names are saved
    too, and the manifest says what happened to them (``changed``, ``deleted``)."""
    if state.run_cell is None:
        return None
    names = [n for n in state.binds if n in namespace and not n.startswith("__")]
    if effects is not None:
        names += [n for n in effects.changed if n in namespace and n not in names]
    early = _early(namespace, names, state.reads)
    if not state.chief:  # saving may be collective: every task saves alike, the chief's is kept
        own = tempfile.mkdtemp(prefix="tfc-cell-task-")
        for key, (value, codec) in early.items():
            with contextlib.suppress(Exception):
                codec.write(value, key, _Writer(own))
        shutil.rmtree(own, ignore_errors=True)
        return None
    folder, remote = _destination()
    if folder is None:
        results.emit({"event": "cell", "names": [], "stayed": {n: "no folder to send it back"
                      for n in names}, "time": time.time()})  # fmt: skip
        return None
    manifest = Manifest(partial=partial)
    if effects is not None:
        manifest.changed, manifest.deleted = dict(effects.changed), list(effects.deleted)
    write_manifest(folder, namespace, names, early, manifest, state.code, state.out)
    where = folder
    if remote is not None:
        where = upload(folder, remote)
    results.emit({"event": "cell", "folder": where, "names": list(manifest.names),
                  "stayed": manifest.stayed, "time": time.time(),
                  **({"partial": partial} if partial else {})})  # fmt: skip
    return manifest


def write_manifest(
    folder: str,
    namespace: dict[str, Any],
    names: list[str],
    early: dict[str, tuple[Any, codecs.Codec]],
    manifest: Manifest,
    code: tuple[str, ...] = (),
    cell_out: Any = None,
) -> Manifest:
    """Write ``names`` of ``namespace`` (and the ``early`` values, :func:`_early`) into
    ``folder`` as a cell folder: each by the first codec that claims it, its arrays in one
    ``arrays.npz``, listed in ``values.json`` (``manifest``, filled in and returned); what
    cannot travel is in ``manifest.stayed``. ``code``: names the kernel binds by running its
    own copy of the cell's statements; ``cell_out``: the cell's ``Out[]``."""
    os.makedirs(os.path.join(folder, "models"), mode=0o700, exist_ok=True)
    out = _Writer(folder)
    for key, (value, codec) in early.items():
        try:
            entry = codec.write(value, key, out)
        except Exception as exc:
            manifest.stayed[key] = _why(exc, value, codec)
            continue
        out.names[id(value)] = key
        manifest.names[key] = {"kind": codec.kind, **entry, "bound": key in names}
    later = [n for n in names if n not in manifest.names and n not in code]
    out.encoder.expect([*(namespace[n] for n in later), cell_out])  # one object held twice
    for n in names:
        value = namespace[n]
        if n in manifest.names or n in manifest.stayed:
            continue
        if n in code:  # a module, function or class (decorated too): the kernel
            manifest.names[n] = {"kind": codecs.CODE}  # runs the cell's import, def and
            continue  # class statements itself
        by = codecs.claiming(value, early=False)
        try:
            if by is None:
                raise codecs.Unsupported(values.kind(value))
            entry = by.write(value, n, out)
            if out.size > LIMIT:
                raise codecs.Unsupported(f"{values.kind(value)} over {LIMIT >> 30} GB")
            manifest.names[n] = {"kind": by.kind, **entry}
        except Exception as exc:
            manifest.stayed[n] = _why(exc, value, by)
    manifest.order = [n for n in names if n in manifest.names]
    if cell_out is not None and codecs.claiming(cell_out, early=True) is None:
        with contextlib.suppress(codecs.Unsupported):  # else its bundle shows it
            manifest.out = {"value": out.encode(cell_out)}
    out.private()
    if out.encoder.arrays:
        import numpy as np

        arrays = os.path.join(folder, ARRAYS)
        np.savez(arrays, **out.encoder.arrays)
        private(arrays)
    path = os.path.join(folder, manifest_file.FILE)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest.to_json(), f, allow_nan=False)
    private(path)
    return manifest


def _why(exc: Exception, value: Any, codec: codecs.Codec | None) -> str:
    """Why a value stays: what :class:`~tfc_runtime.codecs.Unsupported` says, else the codec's
    own failure (the other names still travel)."""
    if isinstance(exc, codecs.Unsupported) or codec is None:
        return str(exc)
    return f"{values.kind(value)} that the {codec.kind} codec could not write: {exc}"[:300]


def _early(
    namespace: dict[str, Any], names: list[str], reads: tuple[str, ...]
) -> dict[str, tuple[Any, codecs.Codec]]:
    """The values early codecs write (Keras models), by name (the same on every task, in the
    same order): those the cell binds or reads, then those a bound value refers to that no
    name holds (``__history_model_N``: a History's model)."""
    out: dict[str, tuple[Any, codecs.Codec]] = {}
    for n in dict.fromkeys([*names, *reads]):
        if n in namespace and (codec := codecs.claiming(namespace[n], early=True)) is not None:
            out[n] = (namespace[n], codec)
    held = {id(value) for value, _ in out.values()}
    for n in names:
        codec = codecs.claiming(namespace[n], early=False)
        for ref in codec.refers(namespace[n]) if codec is not None else ():
            if id(ref) not in held and (by := codecs.claiming(ref, early=True)) is not None:
                out[f"{codecs.REFERRED}{len(out)}"] = (ref, by)
                held.add(id(ref))
    return out


def upload(folder: str, remote: str) -> str:
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
