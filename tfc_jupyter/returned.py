"""What a ``%%tfc_run`` cell's job gives back to the kernel: the cell's outputs and its names.

Inside the job, ``tfc_runtime.runcell`` sends the run cell's rich outputs (figures, displays,
its ``Out[]``) as they are made, and when the cell ends well it saves the names the cell binds
(and the Keras models it reads) into the job folder's ``cell/``. Here:

* :func:`output` reads one output back (a file of the job folder's ``outputs/``, found by its
  number, never by a path the job wrote), for the cell to show as Jupyter would;
* :func:`bring_back` sets the names in the kernel's namespace, as if the cell had run there:
  the cell's ``import``, ``def`` and ``class`` statements run here; Keras models load in
  Keras' safe mode (with the optimizer's state; the notebook's own classes and functions are
  given as custom objects); a ``History`` is a History again, its ``model`` the loaded one;
  other values load from JSON and a pickle-free ``.npz``. Loading never runs the job's code.
"""

from __future__ import annotations

import ast
import contextlib
import filecmp
import importlib
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfc_runtime import sourcemap
from tfc_runtime.giveback import CELL, FILES, keras_model
from tfc_runtime.protocol import SCRIPT, SOURCE_MAP
from tfc_runtime.runcell import CODE, OUTPUTS
from tfc_runtime.values import Decoder

if TYPE_CHECKING:
    from .image.cloudbuild.storage import Storage

_MAX_OUTPUT = 64 << 20  # bytes of one output file read back at most
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
    ``metadata``), or None when it is not readable."""
    found = event.get("output")
    if found is None and job_dir and isinstance(event.get("n"), int):
        path = Path(job_dir) / OUTPUTS / f"{event['n']}.json"
        try:
            if path.stat().st_size > _MAX_OUTPUT:
                return None
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
    if not isinstance(found, dict) or not isinstance(found.get("data"), dict):
        return None
    data = {str(k): v for k, v in found["data"].items() if isinstance(v, (str, dict, list))}
    metadata = found.get("metadata") if isinstance(found.get("metadata"), dict) else {}
    kind = found.get("output_type")
    return {
        "output_type": kind if kind in ("display_data", "execute_result") else "display_data",
        "data": data,
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
            if (folder / name).is_file():
                saved = f"  (saved: {folder / name})"
                break
    return f"[{label}] {text}{saved}"


@dataclass
class Returned:
    """What came back: the names set, those that stayed in the job (name -> what it is), the
    cell's ``Out[]`` when it travelled as a value, and problems met on the way."""

    names: list[str] = field(default_factory=list)
    stayed: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    out: Any = None
    has_out: bool = False

    def line(self) -> str:
        """One line for the cell: ``back in the kernel: history, model; stayed in the job: ds
        (tf.data.Dataset)``; empty when there is nothing to say."""
        parts = []
        if self.names:
            parts.append("back in the kernel: " + ", ".join(self.names))
        if self.stayed:
            parts.append(
                "stayed in the job: " + ", ".join(f"{n} ({why})" for n, why in self.stayed.items())
            )
        return "; ".join(parts)


def _run_cell_code(job_dir: Path) -> ast.Module | None:
    """The run cell's ``import``, ``def`` and ``class`` statements, as the job ran them."""
    try:
        smap = sourcemap.load(job_dir / SOURCE_MAP)
        tree = ast.parse((job_dir / SCRIPT).read_text(encoding="utf-8"))
    except (OSError, ValueError, SyntaxError):
        return None
    if smap.run_cell is None:
        return None
    body: list[ast.stmt] = [
        node
        for node in tree.body
        if isinstance(node, CODE)
        and (where := smap.locate(node.lineno)) is not None
        and where[0] == smap.run_cell
        and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]
    return ast.Module(body=body, type_ignores=[])


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


def _load_model(
    path: Path, library: str, namespace: dict[str, Any], earlier: Any
) -> tuple[Any, str | None]:
    """``(model, problem)``: the model loaded in safe mode; where that fails and the kernel
    has a Keras model of that name, the job's weights loaded into it."""
    keras = importlib.import_module("tf_keras" if library == "tf_keras" else "keras")
    try:
        return keras.models.load_model(
            str(path), custom_objects=_custom_objects(namespace), safe_mode=True
        ), None
    except Exception as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if earlier is not None and isinstance(earlier, keras.Model):
            try:
                earlier.load_weights(str(path))
                return earlier, None
            except Exception:
                pass
        return None, reason[:200]


def _history(entry: dict[str, Any], decoder: Decoder, models: dict[str, Any]) -> Any:
    library = entry.get("library")
    keras = importlib.import_module("tf_keras" if library == "tf_keras" else "keras")
    history = keras.callbacks.History()
    history.history = decoder.decode(entry.get("history")) or {}
    history.epoch = decoder.decode(entry.get("epoch")) or []
    history.params = decoder.decode(entry.get("params")) or {}
    model = models.get(str(entry.get("model")))
    if model is not None:
        history.set_model(model)
    return history


def bring_back(
    job_dir: str | Path,
    namespace: dict[str, Any],
    *,
    limit_mb: float = 1024,
    job_id: str = "",
) -> Returned:
    """Set the run cell's names in ``namespace`` from a finished job's folder (see the
    module's docstring); what it brought back. Nothing is set for a job that saved no names
    (it failed, or it ran no run cell). Each job's names are brought back once a process."""
    folder = Path(job_dir) / CELL
    got = Returned()
    if job_id and job_id in _DONE:
        return got
    try:
        manifest = json.loads((folder / "values.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return got
    except (OSError, ValueError) as exc:
        got.problems.append(f"the job's names could not be read ({exc})")
        return got
    if not isinstance(manifest, dict):
        got.problems.append("the job's names could not be read (not a manifest)")
        return got
    if job_id:
        _DONE.add(job_id)
    listed = manifest.get("names")
    entries = {
        str(k): v
        for k, v in (listed.items() if isinstance(listed, dict) else ())
        if isinstance(v, dict)
    }
    stayed = manifest.get("stayed")
    got.stayed = {str(k): str(v) for k, v in (stayed.items() if isinstance(stayed, dict) else ())}
    code = _run_cell_code(Path(job_dir))
    if code is not None and code.body and any(e.get("kind") == "code" for e in entries.values()):
        try:
            exec(compile(code, f"<cell {job_id}>", "exec"), namespace)
        except Exception as exc:
            got.problems.append(f"the cell's import, def and class lines failed here: {exc}")
    arrays: Any = {}
    if (folder / "arrays.npz").exists():
        import numpy as np

        arrays = np.load(folder / "arrays.npz", allow_pickle=False)
    decoder = Decoder(arrays)
    models: dict[str, Any] = {}
    limit = limit_mb * (1 << 20)
    for name, entry in entries.items():  # models first: a History names its model
        if isinstance(entry, dict) and entry.get("kind") == "model":
            file = str(entry.get("file"))
            path = folder / file
            if "\x00" in file or not path.resolve().is_relative_to(folder.resolve()):
                got.stayed[name] = "Keras model outside the job's folder: not loaded"
                continue
            model, problem = _load_model(
                path, str(entry.get("library")), namespace, namespace.get(name)
            )
            if model is None:
                got.stayed[name] = f"Keras model that does not load here: {problem}"
                continue
            models[name] = model
            if not name.startswith("__"):
                namespace[name] = model
                got.names.append(name)
    for name, entry in entries.items():
        kind = entry.get("kind") if isinstance(entry, dict) else None
        try:
            if kind == "value":
                if float(entry.get("bytes") or 0) > limit:
                    got.stayed[name] = (
                        f"{_size(entry.get('bytes'))}, over return_limit_mb "
                        f"({limit_mb:g} MB): set c.TfcConfig.return_limit_mb to bring it back"
                    )
                    continue
                namespace[name] = decoder.decode(entry.get("value"))
                got.names.append(name)
            elif kind == "history":
                namespace[name] = _history(entry, decoder, models)
                got.names.append(name)
            elif kind == "code" and not isinstance(namespace.get(name, sys), type(sys)):
                got.names.append(name)  # a def or class (imports go unsaid)
        except Exception as exc:  # a value this kernel cannot rebuild (no pandas here)
            got.stayed[name] = f"does not load here: {exc}"
    if isinstance(manifest.get("out"), dict):
        with contextlib.suppress(Exception):
            got.out, got.has_out = decoder.decode(manifest["out"].get("value")), True
    return got


def bring_files(
    job_dir: str | Path, dest: str | Path, started: float, *, limit_mb: float = 1024
) -> list[str]:
    """Put the files the run cell wrote in an image (the job folder's ``files/``) next to the
    notebook (``dest``), as a local job leaves them; lines to show. A file here that changed
    since the job started is kept, and said; nothing outside ``dest`` is written; past
    ``limit_mb`` in all the rest stays in the job folder, and is said."""
    source = Path(job_dir) / FILES
    if not source.is_dir():
        return []
    dest = Path(dest).resolve()
    copied, kept, over = [], [], []
    total, limit = 0, limit_mb * (1 << 20)
    for path in sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(source)
        target = dest / rel
        if target.resolve() != target:  # a link (or ..) would lead out of the folder
            kept.append(f"{rel} (a link here: not followed)")
            continue
        size = path.stat().st_size
        if total + size > limit:
            over.append(str(rel))
            continue
        if target.is_file() and filecmp.cmp(target, path, shallow=False):
            continue  # brought back already (a re-attach)
        if target.exists() and target.stat().st_mtime > started:
            kept.append(f"{rel} (yours changed since the job started; the job's is {path})")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        total += size
        copied.append(str(rel))
    lines = []
    if copied:
        lines.append("Files the cell wrote, next to the notebook: " + ", ".join(copied[:20])
                     + (f" and {len(copied) - 20} more" if len(copied) > 20 else ""))  # fmt: skip
    if kept:
        lines.append("! not copied: " + "; ".join(kept[:10]))
    if over:
        lines.append(
            f"! over return_limit_mb ({limit_mb:g} MB), left in {source}: " + ", ".join(over[:10])
        )
    return lines


def gs_storage(uri: str, record: Any, settings: Any = None) -> tuple[Storage, str]:
    """Our Cloud Storage client for the bucket of a ``gs://`` URI a job wrote to, with the
    job's Google Cloud project as its record keeps it, and the URI's path in the bucket."""
    from .config import current_settings
    from .image.cloudbuild.settings import CloudBuildSettings
    from .image.cloudbuild.storage import Storage
    from .job.google_target import GoogleTarget

    bucket, _, path = uri.removeprefix("gs://").partition("/")
    project = str(GoogleTarget.raw(record.spec).get("project") or "")
    cloud = CloudBuildSettings.from_settings(settings or current_settings())
    return Storage(project, bucket, cloud), path


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
    storage, prefix = gs_storage(uri, record, settings)
    prefix = prefix.rstrip("/") + "/"
    for name in storage.names(prefix):
        rel = Path(name[len(prefix) :])
        if name.endswith("/") or rel.is_absolute() or ".." in rel.parts:
            continue
        storage.download(name, here / rel)
    return here


def cell_model(job_dir: str | Path | None) -> tuple[str, str] | None:
    """``(path, library)`` of the model the run cell left (its first Keras model name, saved
    by the job when the cell ended), or None."""
    if not job_dir:
        return None
    folder = Path(job_dir) / CELL
    try:
        manifest = json.loads((folder / "values.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entries = manifest.get("names") if isinstance(manifest, dict) else None
    for entry in (entries or {}).values():
        if isinstance(entry, dict) and entry.get("kind") == "model":
            path = folder / str(entry.get("file"))
            if path.is_file() and path.resolve().is_relative_to(folder.resolve()):
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
    failed job leaves unchanged here): for the failure line."""
    try:
        smap = sourcemap.load(Path(job_dir) / SOURCE_MAP)
        tree = ast.parse((Path(job_dir) / SCRIPT).read_text(encoding="utf-8"))
    except (OSError, ValueError, SyntaxError):
        return []
    if smap.run_cell is None:
        return []
    from tfc_runtime.runcell import bound_names, read_names

    mine = [
        n
        for n in tree.body
        if (where := smap.locate(n.lineno)) is not None and where[0] == smap.run_cell
    ]
    bound = [n for n in bound_names(mine) if n in namespace and not n.startswith("_")]
    keras_models = [
        n
        for n in read_names(mine)
        if n in namespace and n not in bound and keras_model(namespace[n]) is not None
    ]
    return bound + keras_models
