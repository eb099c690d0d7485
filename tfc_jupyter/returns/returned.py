"""What a ``%%tfc_run`` cell's job gives back to the kernel: the cell's outputs and its names.

Inside the job, ``tfc_runtime.runcell`` sends the run cell's rich outputs (figures, displays,
its ``Out[]``) as they are made, and when the cell ends well it saves the names the cell binds
(and the Keras models it reads) into the job folder's ``cell/``. Here:

* :func:`output` reads one output back (a file of the job folder's ``outputs/``, found by its
  number, never by a path the job wrote), for the cell to show as Jupyter would;
* :func:`bring_back` sets the names in the kernel's namespace, as if the cell had run there:
  the cell's ``import``, ``def`` and ``class`` statements run here; every other name is read
  by the codec its manifest entry names (:mod:`tfc_runtime.codecs`), through the border's
  readers (:class:`_Source`): Keras models in Keras' safe mode, a ``History`` with its model,
  other values from JSON and a pickle-free ``.npz``. Loading never runs the job's code.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfc_runtime import codecs
from tfc_runtime.codecs.keras import KerasModel
from tfc_runtime.codecs.manifest import FILE as MANIFEST
from tfc_runtime.codecs.manifest import Manifest
from tfc_runtime.giveback import CELL, FILES
from tfc_runtime.runcell import OUTPUTS
from tfc_runtime.values import Decoder

from ..registry import store_for
from . import border

MAX_OBJECTS = 100_000
"""Objects of a ``gs://`` folder a job left that are downloaded at most."""

_DONE: set[str] = set()  # jobs whose names this process brought back already


class CellOut:
    """A run cell's ``Out[]`` that could not travel as a value: shown as the job showed it."""

    def __init__(self, data: dict[str, Any], metadata: dict[str, Any] | None = None) -> None:
        self.data = data
        self.metadata = metadata or {}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        return self.data, self.metadata

    def __repr__(self) -> str:
        return str(self.data.get("text/plain", "<output of the job>"))


def output(event: dict[str, Any], job_dir: str | None) -> dict[str, Any] | None:
    """The nbformat output an ``output`` report names (``output_type``, ``data``,
    ``metadata``), its data as Jupyter shows an untrusted notebook's
    (:func:`tfc_jupyter.returns.border.safe_bundle`); None when it is not readable."""
    found = event.get("output")
    n = event.get("n")
    if found is None and job_dir and isinstance(n, int) and not isinstance(n, bool) and n >= 0:
        try:
            found = border.read_json(job_dir, f"{OUTPUTS}/{n}.json", border.MAX_OUTPUT_BYTES)
        except (OSError, border.Refused):
            return None
    if not isinstance(found, dict) or not isinstance(found.get("data"), dict):
        return None
    data = {str(k): v for k, v in found["data"].items() if isinstance(v, (str, dict, list))}
    metadata = found.get("metadata") if isinstance(found.get("metadata"), dict) else {}
    if len(json.dumps(metadata, default=str)) > 10_000:
        metadata = {}
    kind = found.get("output_type")
    return {
        "output_type": kind if kind in ("display_data", "execute_result") else "display_data",
        "data": border.safe_bundle(data),
        "metadata": metadata,
    }


def output_line(event: dict[str, Any], job_dir: str | None) -> str | None:
    """An output as a terminal shows it: its text and where the job folder keeps it
    (``<Figure size 640x480 with 1 Axes>  (saved: .../outputs/2.png)``); None for a report
    that is not an output."""
    if event.get("event") != "output" or not isinstance(event.get("n"), int):
        return None
    text = str(event.get("text") or "").rstrip("\n")
    label = "Out" if event.get("output_type") == "execute_result" else "output"
    saved = ""
    if job_dir:
        folder = Path(job_dir) / OUTPUTS
        for name in (f"{event['n']}.png", f"{event['n']}.json"):
            if stat.S_ISREG(_lmode(folder / name)):
                saved = f"  (saved: {folder / name})"
                break
    return f"[{label}] {text}{saved}"


@dataclass
class Returned:
    """What came back: the names set, those that stayed in the job (name -> what it is), the
    cell's ``Out[]`` when it travelled as a value, and problems met on the way."""

    names: list[str] = field(default_factory=list)
    stayed: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    out: Any = None
    has_out: bool = False
    partial: str = ""
    """The job failed: where its failing statement starts (``cell 4, line 5``); the names are
    those bound before it."""
    changed: dict[str, str] = field(default_factory=dict)
    """Names set here that the run cell changed without binding them (name -> ``changed in
    place``, ``bound again``, ``bound``)."""
    deleted: list[str] = field(default_factory=list)
    """Names the run cell deleted, deleted here too."""
    notes: dict[str, str] = field(default_factory=dict)
    """What a codec said of a name it set (name -> ``tf-keras model, rebuilt in Keras 3 with
    its weights``)."""

    def line(self) -> str:
        """One line for the cell: ``back in the kernel: history, model; stayed in the job: ds
        (tf.data.Dataset); not set here: get_ipython (IPython's own)``; empty when there is
        nothing to say. ``skipped`` are the names the border refused (never set here)."""
        parts = []
        if self.names and self.partial:
            upto = self.partial.replace(", line", " line")
            parts.append(f"back in the kernel (partial, up to {upto}): " + ", ".join(self.names))
        elif self.names:
            parts.append("back in the kernel: " + ", ".join(self._named(self.names)))
        if self.deleted:
            parts.append("deleted by the cell: " + ", ".join(self.deleted))
        if self.stayed:
            parts.append(
                "stayed in the job: " + ", ".join(f"{n} ({why})" for n, why in self.stayed.items())
            )
        if self.skipped:
            parts.append(
                "not set here: " + ", ".join(f"{n} ({why})" for n, why in self.skipped.items())
            )
        return "; ".join(parts)

    def _named(self, names: list[str]) -> list[str]:
        """The names, each followed by what a codec said of it, or how the cell changed it
        without binding it."""
        said = {**self.changed, **self.notes}
        return [f"{n} ({said[n]})" if n in said else n for n in names]


def _lmode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


class _Source:
    """What a codec reads a name through (:class:`tfc_runtime.codecs.Reader`): the border's
    bounded, checked readers of the job's ``cell/``, every byte counted against ``budget``;
    copies go to ``tmp`` (removed once the names are set). ``folder``: where the cell's files
    are here (the notebook's folder)."""

    def __init__(
        self, job_dir: Path, namespace: dict[str, Any], arrays: Any, budget: border.Budget,
        tmp: Path, folder: Path,
    ) -> None:  # fmt: skip
        self.job_dir = job_dir
        self.namespace = namespace
        self.folder = folder
        self.notes: dict[str, str] = {}
        self.name = ""
        self.budget = budget
        self.tmp = tmp
        self.decoder = Decoder(arrays, loaded=self.held)
        self.models: dict[str, Any] = {}
        self.admitted: set[str] = set()
        self.unloaded: dict[str, str] = {}  # a model no name holds -> why it stays

    def _rel(self, file: str) -> str:
        return "/".join([CELL, *border.parts_of(file)])  # Refused: not a plain relative path

    def bytes(self, file: str) -> bytes:
        data = border.read_bytes(self.job_dir, self._rel(file), self.budget.left)
        self.budget.take(len(data), self.name)
        return data

    def copy(self, file: str, *, archive: bool = False) -> Path:
        into = Path(tempfile.mkdtemp(dir=self.tmp))
        rel = self._rel(file)
        path = border.copy_out(self.job_dir, rel, self.budget.left, into)
        size = path.stat().st_size
        if archive:
            size = max(size, border.check_zip(path, self.budget.left, rel))
        self.budget.take(size, f"the {self.name}")
        return path

    @contextlib.contextmanager
    def opened(self, file: str) -> Iterator[Any]:
        """The private copy of the zip ``file``, open while a thread makes it
        (:func:`~tfc_jupyter.returns.border.open_copy`), checked and counted as :meth:`copy`
        checks an archive before it is given: loading it overlaps copying it."""
        into = Path(tempfile.mkdtemp(dir=self.tmp))
        rel = self._rel(file)
        fh = border.open_copy(self.job_dir, rel, self.budget.left, into)
        try:
            size = max(fh.size, border.check_zip(fh, self.budget.left, rel))
            self.budget.take(size, f"the {self.name}")
            fh.seek(0)
            yield fh
        finally:
            fh.close()

    def decode(self, tree: Any) -> Any:
        self.budget.take(border.tree_bytes(tree), self.name)
        return self.decoder.decode(tree)

    def loaded(self, name: str) -> Any:
        return self.models.get(name)

    def held(self, name: str) -> Any:
        """The model a container holds (``$saved``); ValueError saying why it stays."""
        if name in self.models:
            return self.models[name]
        why = self.unloaded.get(name) or f"{name}, which did not load here"
        raise ValueError(f"it holds a {why}")

    def note(self, text: str) -> None:
        self.notes[self.name] = str(text)[:300]


def _manifest(job_dir: Path, limit: int, got: Returned) -> Manifest | None:
    try:
        data = border.read_json(job_dir, f"{CELL}/{MANIFEST}", limit)
    except FileNotFoundError:
        return None
    except border.OverLimit:
        got.problems.append(
            "the job's names are over return_limit_mb in all: they stay in the job (set "
            "c.TfcConfig.return_limit_mb to bring them back)"
        )
        return None
    except (OSError, border.Refused) as exc:
        got.problems.append(f"the job's names could not be read: {exc}")
        return None
    try:
        return Manifest.from_json(data)
    except ValueError:
        got.problems.append("the job's names could not be read: not a manifest")
        return None


def _arrays(job_dir: Path, got: Returned) -> Any:
    """The job's arrays (:class:`tfc_jupyter.returns.border.Arrays`), or an empty mapping."""
    try:
        fd = os.open(job_dir / CELL / "arrays.npz", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        got.problems.append(f"the job's arrays could not be read: {exc.strerror or exc}")
        return {}
    fh = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        fh.close()
        got.problems.append("the job's arrays could not be read: not a regular file")
        return {}
    try:
        return border.Arrays(fh, f"{CELL}/arrays.npz")
    except border.Refused as exc:
        fh.close()
        got.problems.append(f"the job's arrays could not be read: {exc}")
        return {}


def bring_back(
    job_dir: str | Path,
    namespace: dict[str, Any],
    *,
    limit_mb: float = 1024,
    job_id: str = "",
    kernel_cell: border.KernelCell | None = None,
    partial: bool = False,
    folder: str | Path | None = None,
) -> Returned:
    """Set the run cell's names in ``namespace`` from a finished job's folder, through the
    border (:mod:`tfc_jupyter.returns.border`): only names the run cell binds by the kernel's own
    copy of it (``kernel_cell``, else the one kept at launch), never the kernel's own; its
    ``import``, ``def`` and ``class`` statements run from that copy, never from the job
    folder; at most ``limit_mb`` read and decompressed for the names in all. Nothing is set
    for a job that saved no names. Each job's names are brought back once a process.

    ``partial``: the job failed; the names bound before its failing statement are set
    (``Returned.partial`` says where), admitted by the kernel's own copy of what ran before it
    (:meth:`~tfc_jupyter.returns.border.KernelCell.kept_before`). Without it, a failed job's
    names (a manifest marked partial) are never set.

    ``folder``: where the run cell's files are in this kernel (the notebook's folder; this
    process's folder when not given): a Keras Tuner tuner reloads from its folder there."""
    job_dir = Path(job_dir)
    got = Returned()
    if job_id and job_id in _DONE:
        return got
    limit = int(limit_mb * (1 << 20))
    manifest = _manifest(job_dir, max(limit // 4, 1 << 20), got)
    if manifest is None:
        return got
    if (manifest.partial is not None) != partial:
        return got
    if job_id:
        _DONE.add(job_id)
    if manifest.partial is not None:
        found = border.KernelCell.kept_before(
            border.home_of(job_dir), job_dir.name, manifest.partial["script_line"]
        )
        if found is None:
            return got
        kernel_cell, got.partial = found
    elif kernel_cell is None:
        kernel_cell = border.KernelCell.kept(border.home_of(job_dir), job_dir.name)
    if kernel_cell is None:
        got.problems.append(
            "no copy of the run cell was kept at launch (a job launched by an earlier version): "
            "its names stay in the job"
        )
        return got
    entries = manifest.names
    for k, v in manifest.stayed.items():
        if border.name_refusal(k) is None:
            got.stayed[k] = v
    code_names = kernel_cell.code_names()
    bound = set(kernel_cell.binds())
    trained = {n for n in kernel_cell.reads() if codecs.claiming(namespace.get(n), early=True)}
    internal = [n for n in entries if n.startswith(codecs.REFERRED) and n[16:].isdigit()]
    changed = {n: what for n, what in manifest.changed.items() if n not in bound}
    could = kernel_cell.could_bind() if changed or manifest.deleted else set()
    admitted, got.skipped = border.admit_names(
        [n for n in entries if n not in internal], bound | trained | (set(changed) & could)
    )
    for name in set(changed) - could:
        if name in got.skipped:  # an exec, or a module's global: the kernel cannot tell
            got.skipped[name] = f"{changed[name]} in the job by code the kernel cannot check"
    if any(n in code_names for n in admitted):
        try:
            exec(compile(kernel_cell.code(), f"<cell {job_id}>", "exec"), namespace)
        except Exception as exc:
            got.problems.append(f"the cell's import, def and class lines failed here: {exc}")
    arrays = _arrays(job_dir, got)
    try:
        with tempfile.TemporaryDirectory(prefix="tfc-cell-") as tmp:
            src = _Source(
                job_dir, namespace, arrays, border.Budget(limit), Path(tmp),
                Path(folder) if folder is not None else Path.cwd(),
            )  # fmt: skip
            _set_names(src, entries, admitted, internal, code_names, got, limit_mb)
        got.changed = {n: changed[n] for n in got.names if n in changed}
        _delete(manifest.deleted, namespace, could, got)
        if manifest.out is not None:
            with contextlib.suppress(Exception):
                if isinstance(arrays, border.Arrays):
                    arrays.budget = border.Budget(limit)
                tree = manifest.out.get("value")
                border.Budget(limit).take(border.tree_bytes(tree), "Out[]")
                got.out, got.has_out = src.decoder.decode(tree), True  # a name's own object
    finally:
        if isinstance(arrays, border.Arrays):
            arrays.close()
    return got


def _delete(deleted: list[str], namespace: dict[str, Any], could: set[str], got: Returned) -> None:
    """Delete the names the run cell deleted, where the notebook's code binds them and the
    border would set them (``del x`` in the cell: as Jupyter would, ``x`` is gone)."""
    for name in deleted:
        if name in got.names or border.name_refusal(name) is not None:
            continue  # set again by this job (a forged list), or never the job's to touch
        if name in could and name in namespace:
            del namespace[name]
            got.deleted.append(name)


def _set_names(
    src: _Source,
    entries: dict[str, dict[str, Any]],
    admitted: list[str],
    internal: list[str],
    code_names: set[str],
    got: Returned,
    limit_mb: float,
) -> None:
    """Each admitted name read by the codec its entry's ``kind`` names: the early kinds (models)
    first, as others refer to them (a History names its model)."""
    if isinstance(src.decoder.arrays, border.Arrays):
        src.decoder.arrays.budget = src.budget  # for the names in all
    src.admitted = set(admitted)
    over = (
        f"over return_limit_mb ({limit_mb:g} MB): set c.TfcConfig.return_limit_mb to bring it back"
    )
    for name in [*admitted, *internal]:
        codec = codecs.of_kind(entries[name].get("kind"))
        if codec is not None and codec.early and name not in code_names:
            _read(codec, name, entries[name], src, got, over)
    for name in admitted:
        kind = entries[name].get("kind")
        codec = codecs.of_kind(kind)
        if name in code_names:
            if not isinstance(src.namespace.get(name, sys), type(sys)):
                got.names.append(name)  # a def or class (imports go unsaid)
        elif codec is None and kind != codecs.CODE:
            why = codecs.broken.get(str(kind)) or "no codec of that kind in this kernel"
            got.stayed[name] = f"{str(kind)[:40]!r} value: {why}"
        elif codec is not None and not codec.early:
            _read(codec, name, entries[name], src, got, over)


def _read(
    codec: codecs.Codec, name: str, entry: dict[str, Any], src: _Source, got: Returned, over: str
) -> None:
    """Read one name with its codec; set it when the cell binds it (an early one is kept for
    those that refer to it), else say why it stays."""
    src.name = name
    try:
        value = codec.read(entry, src)
    except codecs.Stays as exc:
        got.stayed[name] = src.unloaded[name] = str(exc)[:300]  # said again by who holds it
        return
    except border.OverLimit as exc:
        detail = str(exc).split(": ", 1)[-1]
        got.stayed[name] = f"{codec.noun} {detail}, {over}" if codec.noun else over
        return
    except border.Refused as exc:
        got.stayed[name] = str(exc)[:200]
        return
    except (Exception, RecursionError) as exc:  # a value this kernel cannot rebuild
        got.stayed[name] = f"does not load here: {str(exc)[:200]}"
        return
    if codec.early:
        src.models[name] = value
    if name not in src.admitted:
        return
    src.namespace[name] = value
    got.names.append(name)
    if name in src.notes:
        got.notes[name] = src.notes[name]


def bring_files(
    job_dir: str | Path,
    dest: str | Path,
    started: float,
    *,
    limit_mb: float = 1024,
    max_files: int = 1000,
    notebook: str | Path | None = None,
) -> list[str]:
    """Put the files the run cell wrote in an image (the job folder's ``files/``) next to the
    notebook (``dest``), delete those it deleted and make the links it made, through the border
    (:func:`tfc_jupyter.returns.border.place_files`, :func:`~tfc_jupyter.returns.border.
    apply_changes`); lines to show."""
    placed = border.place_files(
        job_dir, FILES, dest, started, limit_mb=limit_mb, max_files=max_files,
        notebook=Path(notebook).resolve() if notebook else None,
    )  # fmt: skip
    border.apply_changes(
        job_dir, dest, started, placed, Path(notebook).resolve() if notebook else None
    )
    return placed.lines(limit_mb, max_files, Path(job_dir) / FILES)


def fetch(uri: str, record: Any, leaf: str, settings: Any = None) -> Path | None:
    """A folder a Vertex AI job's run cell left under its base output folder (``gs://.../cell``
    or ``.../files``), downloaded through our Cloud Storage client into the job folder's
    ``leaf`` (once); the local folder, or None when there is none to fill.

    Raises:
        TfcError: Cloud Storage refuses (one line with the fix).
    """
    if not record.job_dir or not uri.startswith("gs://"):
        return None
    here = Path(record.job_dir) / leaf
    if here.exists():
        return here
    storage, prefix = store_for(uri, record, settings)
    prefix = prefix.rstrip("/") + "/"
    for count, name in enumerate(storage.names(prefix)):
        parts = border.object_name(prefix, name)
        if parts is None or any(p.startswith(".") for p in parts) or count >= MAX_OBJECTS:
            continue  # read back by the border as any job folder is
        storage.download(name, here.joinpath(*parts))
    return here


def cell_model(job_dir: str | Path | None) -> tuple[str, str] | None:
    """``(path, library)`` of the model the run cell left (its first Keras model name, saved
    by the job when the cell ended), or None."""
    if not job_dir:
        return None
    folder = Path(job_dir) / CELL
    try:
        manifest = Manifest.from_json(
            border.read_json(job_dir, f"{CELL}/{MANIFEST}", border.MAX_OUTPUT_BYTES)
        )
    except (OSError, ValueError, border.Refused):
        return None
    for entry in manifest.names.values():
        if entry.get("kind") == KerasModel.kind:
            try:
                parts = border.parts_of(str(entry.get("file")))
            except border.Refused:
                continue
            path = folder.joinpath(*parts)
            if all(not stat.S_ISLNK(_lmode(p)) for p in (folder, *path.parents)) and (
                stat.S_ISREG(_lmode(path))
            ):
                return str(path), str(entry.get("library") or "keras")
    return None


def _size(count: Any) -> str:
    size = float(count or 0)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def stale_names(job_dir: str | Path, namespace: dict[str, Any]) -> list[str]:
    """Names the run cell binds or trains that this kernel holds from before the cell (what a
    failed job leaves unchanged here): for the failure line. Read from the kernel's own copy
    of the cell, kept at launch."""
    kept = border.KernelCell.kept(border.home_of(job_dir), Path(job_dir).name)
    if kept is None:
        return []
    bound = [n for n in kept.binds() if n in namespace and not n.startswith("_")]
    trained = [
        n
        for n in kept.reads()
        if n in namespace and n not in bound and codecs.claiming(namespace[n], early=True)
    ]
    return bound + trained


def kept_partial(job_dir: str | Path) -> str:
    """What a failed job kept for a kernel, in one line (``Kept in the job (partial, up to cell 4
    line 5): model, history``), read through the border without loading a value; "" when it
    kept nothing."""
    job_dir = Path(job_dir)
    try:
        manifest = Manifest.from_json(
            border.read_json(job_dir, f"{CELL}/{MANIFEST}", border.MAX_OUTPUT_BYTES)
        )
    except (OSError, ValueError, border.Refused):
        return ""
    if manifest.partial is None:
        return ""
    found = border.KernelCell.kept_before(
        border.home_of(job_dir), job_dir.name, manifest.partial["script_line"]
    )
    if found is None:
        return ""
    cell, place = found
    allowed = set(cell.binds()) | set(cell.reads())
    names, _ = border.admit_names([n for n in manifest.names if n in allowed], allowed)
    if not names:
        return ""
    upto = place.replace(", line", " line")
    return f"Kept in the job (partial, up to {upto}): {', '.join(names)}"
