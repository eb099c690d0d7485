"""The ``%%tfc_run`` cell inside the job: it behaves as a cell, and what it binds and shows
goes back to the kernel.

The script is the cells above the run cell plus its body. Before it runs, :func:`transform`
marks, in its syntax tree (line numbers unchanged), where each cell starts and ends, as a kernel
runs cells one at a time:

* at the end of each cell the figures it left open are closed, as Jupyter's inline backend
  does (a later cell's ``plt.plot`` draws a new figure, not on an earlier cell's); those of the
  run cell are shown: sent back as ``image/png`` outputs. ``plt.show()`` does the same at once;
* in the run cell, ``display(obj)`` sends back the object's rich representations (its MIME
  bundle: ``_repr_html_``, ``_repr_png_`` ... as IPython builds it) and the cell's last
  expression is its ``Out[]`` (unless the line ends with ``;``);
* when the run cell ends well, the names it binds at top level, and the Keras models it reads,
  are saved for the kernel (:func:`finish`): models as ``.keras`` files, the rest through
  :mod:`tfc_runtime.values` (JSON and a pickle-free ``.npz``); what cannot travel is named.

Outputs and names are written on the chief only (the job's results are the chief's), under
the job folder's ``outputs/`` and ``cell/`` (the local and docker backends), reported on the
result channel as they are made; with no job folder (Vertex AI) outputs travel in the reports
themselves and names under the base output folder. Other tasks save the same models to a
private folder, since saving may join collective operations.
"""

from __future__ import annotations

import ast
import base64
import builtins
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from typing import Any

from tfc_runtime import hooks, results, values
from tfc_runtime.sourcemap import SourceMap

NAME = "__tfc_cell__"
"""The name the script's marks call this module by (a builtin: the script's globals are the
notebook's own)."""
OUTPUTS = "outputs"
"""The job folder's outputs: ``<n>.json`` (an nbformat output), and ``<n>.png`` for figures."""
CELL = "cell"
"""The job folder's (or base output folder's) names: ``values.json``, ``arrays.npz``,
``models/<name>.keras``."""
LIMIT = 4 << 30
"""Bytes of values one run cell sends back at most (the kernel applies its own setting)."""

_MIME = (
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_latex_", "text/latex"),
    ("_repr_json_", "application/json"),
    ("_repr_javascript_", "application/javascript"),
)
_BINARY = ("image/png", "image/jpeg")


class _State:
    run_cell: int | None = None  # the run cell's notebook position
    cell: int | None = None  # the cell running now
    binds: tuple[str, ...] = ()  # top-level names the run cell binds
    reads: tuple[str, ...] = ()  # names the run cell reads (a model it trains)
    code: tuple[str, ...] = ()  # names its import, def and class statements bind
    chief = True
    shown = 0  # outputs sent back so far
    out: Any = None  # the run cell's Out[] value
    started = 0.0  # when the run cell started
    workdir = ""  # the job's working folder then


_state = _State()


# -- the script's marks ---------------------------------------------------------------------


def _cell_of(node: ast.stmt, smap: SourceMap) -> int | None:
    where = smap.locate(node.lineno)
    return where[0] if where else None


def _call(func: str, args: list[ast.expr], at: ast.AST) -> ast.stmt:
    call = ast.Call(
        func=ast.Attribute(value=ast.Name(id=NAME, ctx=ast.Load()), attr=func, ctx=ast.Load()),
        args=args,
        keywords=[],
    )
    return ast.copy_location(ast.Expr(value=call), at)


def _silenced(node: ast.stmt, lines: list[str]) -> bool:
    """Whether the statement is followed by ``;`` on its line (IPython shows no ``Out[]``)."""
    end, col = node.end_lineno or node.lineno, node.end_col_offset or 0
    if not 1 <= end <= len(lines):
        return False
    rest = lines[end - 1].encode("utf-8")[col:].decode("utf-8", "replace").lstrip()
    return rest.startswith(";")


def transform(tree: ast.Module, smap: SourceMap, text: str) -> ast.Module:
    """The script's tree with the cells' marks (see the module's docstring); unchanged when the
    source map names no run cell (a ``.py`` job, a whole notebook)."""
    run_cell = smap.run_cell
    if run_cell is None:
        return tree
    body: list[ast.stmt] = []
    current: int | None = None
    mine: list[ast.stmt] = []
    for node in tree.body:
        cell = _cell_of(node, smap)
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if cell is not None and cell != current and not future:
            body.append(_call("enter", [ast.Constant(cell)], node))
            current = cell
        if cell == run_cell:
            mine.append(node)
        body.append(node)
    if mine and isinstance(mine[-1], ast.Expr) and not _silenced(mine[-1], text.split("\n")):
        last = mine[-1]
        at = body.index(last)
        body[at] = _call("out", [last.value], last)
    end = body[-1] if body else tree
    body.append(
        _call(
            "finish",
            [ast.Call(func=ast.Name(id="globals", ctx=ast.Load()), args=[], keywords=[])],
            end,
        )
    )
    _state.run_cell = run_cell
    _state.binds = tuple(bound_names(mine))
    _state.reads = tuple(read_names(mine))
    _state.code = tuple(bound_names(n for n in mine if isinstance(n, CODE)))
    tree.body = body
    return ast.fix_missing_locations(tree)


CODE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
"""Statements the kernel runs itself when the job ends (what they bind is code, not data)."""


def _targets(node: ast.AST) -> Iterable[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            yield from _targets(elt)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)


def _walrus(node: ast.AST) -> Iterable[str]:
    """Names bound by ``:=`` in an expression (not inside a lambda or a comprehension's own
    scope, which Python binds in the enclosing one: those are taken too)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
            yield sub.target.id


def _captures(pattern: ast.AST) -> Iterable[str]:
    """Names a ``case`` pattern binds."""
    for sub in ast.walk(pattern):
        if isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
            yield sub.name
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            yield sub.rest


def bound_names(statements: Iterable[ast.stmt]) -> list[str]:
    """Names a cell's top-level statements bind, in order, once each: assignments (augmented,
    annotated with a value, unpacking), ``for`` and ``with`` targets, ``def``, ``class``,
    imports, ``:=``, in compound statements' bodies too (not in functions' or classes')."""
    out: dict[str, None] = {}

    def visit(node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = None
            return
        if isinstance(node, ast.Assign):
            for target in node.targets:
                out.update(dict.fromkeys(_targets(target)))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            if not isinstance(node, ast.AnnAssign) or node.value is not None:
                out.update(dict.fromkeys(_targets(node.target)))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            out.update(dict.fromkeys(_targets(node.target)))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    out.update(dict.fromkeys(_targets(item.optional_vars)))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    out[(alias.asname or alias.name).split(".")[0]] = None
        for field in ("test", "iter", "value", "items", "subject", "msg"):
            part = getattr(node, field, None)
            for each in part if isinstance(part, list) else [part]:
                if isinstance(each, ast.AST):
                    out.update(dict.fromkeys(_walrus(each)))
        if isinstance(node, ast.Match):
            for case in node.cases:
                out.update(dict.fromkeys(_captures(case.pattern)))
                if case.guard is not None:
                    out.update(dict.fromkeys(_walrus(case.guard)))
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, field, None) or ():
                if isinstance(child, ast.stmt):
                    visit(child)
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    for inner in child.body:
                        visit(inner)

    for statement in statements:
        visit(statement)
    return list(out)


def read_names(statements: Iterable[ast.stmt]) -> list[str]:
    """Names a cell's statements read (in order, once each)."""
    out: dict[str, None] = {}
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                out[node.id] = None
    return list(out)


# -- what the run cell shows ----------------------------------------------------------------


def in_run_cell() -> bool:
    """True while the run cell runs (on the chief: only its outputs go back)."""
    return _state.chief and _state.run_cell is not None and _state.cell == _state.run_cell


def _text(obj: Any) -> str:
    try:
        from IPython.lib.pretty import pretty  # the text Jupyter shows, where IPython is

        return str(pretty(obj))
    except ImportError:
        return repr(obj)


def _figure_png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.canvas.print_figure(
        buf,
        format="png",
        bbox_inches="tight",
        facecolor=fig.get_facecolor(),
        edgecolor=fig.get_edgecolor(),
        dpi=fig.dpi,
    )
    return buf.getvalue()


def bundle(obj: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(data, metadata)``: the MIME bundle Jupyter would show for ``obj`` (binary formats
    base64-encoded, as in a notebook file)."""
    data: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    if type(obj).__name__ == "Figure" and type(obj).__module__.startswith("matplotlib"):
        data["image/png"] = _figure_png(obj)
    elif not isinstance(obj, type):
        method = getattr(obj, "_repr_mimebundle_", None)
        if callable(method):
            with contextlib.suppress(Exception):
                got = method(include=None, exclude=None)
                got, md = got if isinstance(got, tuple) else (got, {})
                data.update(got or {})
                metadata.update(md or {})
        for name, mime in _MIME:
            method = getattr(obj, name, None)
            if mime in data or not callable(method):
                continue
            try:
                got = method()
            except Exception:  # a representation that fails is left out, as IPython does
                continue
            if isinstance(got, tuple) and len(got) == 2:
                got, md = got
                metadata[mime] = md
            if got is not None:
                data[mime] = got
    data.setdefault("text/plain", _text(obj))
    for mime in _BINARY:
        if isinstance(data.get(mime), (bytes, bytearray)):
            data[mime] = base64.b64encode(data[mime]).decode("ascii")
    return {k: v for k, v in data.items() if isinstance(v, (str, dict, list))}, metadata


def _private(path: str) -> None:
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)


def send(data: dict[str, Any], metadata: dict[str, Any], output_type: str) -> None:
    """One output of the run cell, back to the kernel: a file of the job folder's
    :data:`OUTPUTS` (and a ``.png`` beside it for an image) reported on the result channel,
    else (no job folder) the report carries it."""
    _state.shown += 1
    n = _state.shown
    output: dict[str, Any] = {"output_type": output_type, "data": data, "metadata": metadata}
    text = str(data.get("text/plain", ""))[:500]
    event: dict[str, Any] = {
        "event": "output", "n": n, "output_type": output_type, "text": text, "time": time.time()
    }  # fmt: skip
    job_dir = os.environ.get("TFC_JOB_DIR")
    sys.stdout.flush()  # what the cell printed before comes first
    sys.stderr.flush()
    if job_dir:
        try:
            folder = os.path.join(job_dir, OUTPUTS)
            os.makedirs(folder, mode=0o700, exist_ok=True)
            path = os.path.join(folder, f"{n}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(output, f)
            _private(path)
            event["file"] = path
            if "image/png" in data:
                png = os.path.join(folder, f"{n}.png")
                with open(png, "wb") as f:
                    f.write(base64.b64decode(data["image/png"]))
                _private(png)
                event["image"] = png
        except OSError:
            event["output"] = output
    else:
        event["output"] = output
    results.emit(event)


def display(*objs: Any, raw: bool = False, **_options: Any) -> bool:
    """``display(...)`` in the run cell: each object's bundle goes back from the chief, and
    other tasks show nothing (True); elsewhere nothing is done here (False: the caller prints,
    as before)."""
    if _state.run_cell is None or _state.cell != _state.run_cell:
        return False
    if not _state.chief:
        return True
    for obj in objs:
        if raw and isinstance(obj, dict):
            send({k: v for k, v in obj.items() if isinstance(v, (str, dict, list))}, {},
                 "display_data")  # fmt: skip
        else:
            send(*bundle(obj), "display_data")
    return True


def _open_figures() -> list[Any]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    return [pyplot.figure(n) for n in pyplot.get_fignums()]


def flush_figures(show: bool) -> None:
    """Show (when ``show``) and close every open figure, as the inline backend does at the end
    of a cell and at ``plt.show()``."""
    figures = _open_figures()
    if not figures:
        return
    pyplot = sys.modules["matplotlib.pyplot"]
    for fig in figures:
        if show and fig.get_axes():
            try:
                png = _figure_png(fig)
            except Exception as exc:  # a figure that cannot draw: said, the job goes on
                print(f"[tfc_runtime] warning: a figure could not be drawn ({exc})",
                      file=sys.stderr)  # fmt: skip
                continue
            data = {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": _text(fig)}
            send(data, {}, "display_data")
    pyplot.close("all")


def _patch_pyplot(pyplot: Any) -> None:
    original = pyplot.show
    if getattr(original, "_tfc_wrapped", False):
        return

    def show(*args: Any, **kwargs: Any) -> None:
        if _state.run_cell is None:  # not a notebook's run cell: matplotlib's own
            return original(*args, **kwargs)
        flush_figures(show=in_run_cell())
        return None

    show._tfc_wrapped = True  # type: ignore[attr-defined]
    show.__doc__ = original.__doc__
    pyplot.show = show


def _patch_ipython_display(module: Any) -> None:
    """``IPython.display.display`` outside a kernel prints; in the run cell it sends back."""
    original = getattr(module, "display", None)
    if original is None or getattr(original, "_tfc_wrapped", False):
        return

    def shown(*objs: Any, **kwargs: Any) -> Any:
        if display(*objs, raw=bool(kwargs.get("raw"))):
            return None
        return original(*objs, **kwargs)

    shown._tfc_wrapped = True  # type: ignore[attr-defined]
    shown.__doc__ = original.__doc__
    module.display = shown
    functions = sys.modules.get("IPython.core.display_functions")
    if functions is not None:
        setattr(functions, "display", shown)  # noqa: B010


def install(*, chief: bool) -> None:
    """Take the run cell's outputs (``plt.show``, ``IPython.display.display``); matplotlib
    draws with its non-interactive backend (``Agg``) unless the job chose one."""
    _state.chief = chief
    setattr(builtins, NAME, sys.modules[__name__])
    os.environ.setdefault("MPLBACKEND", "Agg")
    hooks.when_imported("matplotlib.pyplot", _patch_pyplot, "figures are not shown")
    hooks.when_imported("IPython.display", _patch_ipython_display, "displays are printed")


# -- the script's marks, called from the script -----------------------------------------------


def enter(cell: int) -> None:
    """A cell starts: the one before ends (its figures are closed; shown if it was the run
    cell)."""
    if _state.cell is not None:
        flush_figures(show=in_run_cell())
    _state.cell = cell
    if cell == _state.run_cell:
        _state.started, _state.workdir = time.time(), os.getcwd()


def out(value: Any) -> Any:
    """The run cell's last expression: its ``Out[]`` (None shows nothing, as in IPython)."""
    if value is not None and in_run_cell():
        send(*bundle(value), "execute_result")
        _state.out = value
    return value


def finish(namespace: dict[str, Any]) -> None:
    """The run cell ended well: its figures are shown and its names saved for the kernel.
    Never fails the job: a name that cannot be saved is said, and stays."""
    try:
        flush_figures(show=in_run_cell())
    except Exception as exc:
        print(f"[tfc_runtime] warning: the cell's figures were not shown ({exc})",
              file=sys.stderr)  # fmt: skip
    _state.cell = None
    for step, what in ((save_files, "files"), (lambda: save_names(namespace), "names")):
        try:
            step()
        except Exception as exc:  # our failure is not the job's
            print(f"[tfc_runtime] warning: the cell's {what} were not sent back ({exc})",
                  file=sys.stderr)  # fmt: skip


# -- the files the run cell writes ------------------------------------------------------------

FILES = "files"
"""The job folder's (or base output folder's) copies of the files the run cell wrote."""
_SKIP_DIRS = frozenset({".git", "__pycache__", ".ipynb_checkpoints", "node_modules"})
MAX_FILES = 10_000


def save_files() -> list[str] | None:
    """Copy what the run cell wrote under the job's working folder (relative paths: a model,
    a CSV log, arrays) to the job folder's :data:`FILES` (docker), else the base output
    folder's (Vertex AI), for the kernel to put next to the notebook. A local job writes next
    to the notebook already: nothing is copied. The relative paths copied, or None."""
    from tfc_runtime.protocol import SCRIPT, SOURCE_MAP, WORKDIR

    if not _state.chief or _state.run_cell is None or not _state.workdir:
        return None
    in_image = os.path.realpath(_state.workdir) == os.path.realpath(WORKDIR)
    if os.environ.get("TFC_JOB_DIR") and not in_image:
        return None  # a local job: the files are where the notebook is
    written: list[tuple[str, str, int]] = []
    total = 0
    for root, dirs, files in os.walk(_state.workdir):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, _state.workdir)
            try:
                info = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            if rel in (SCRIPT, SOURCE_MAP) or not os.path.isfile(path) or os.path.islink(path):
                continue
            if info.st_mtime + 1 < _state.started:  # older than the cell (1 s: coarse clocks)
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
        _private(target)
    where = _upload(folder, remote) if remote is not None else folder
    copied = [rel for _, rel, _ in written]
    results.emit({"event": "files", "folder": where, "files": copied, "time": time.time()})
    return copied


# -- the names the run cell binds -----------------------------------------------------------


def _keras_model(value: Any) -> str | None:
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


def save_names(namespace: dict[str, Any]) -> dict[str, Any] | None:
    """Save the run cell's names (see the module's docstring); the manifest written, or None
    (no run cell, or not the chief: then only the models are saved, privately)."""
    if _state.run_cell is None:
        return None
    names = [n for n in _state.binds if n in namespace and not n.startswith("__")]
    models = {
        n: lib
        for n in dict.fromkeys([*names, *_state.reads])
        if n in namespace and (lib := _keras_model(namespace[n])) is not None
    }
    if not _state.chief:  # saving may be collective: every task saves, the chief's is kept
        private = tempfile.mkdtemp(prefix="tfc-cell-task-")
        for n in models:
            with contextlib.suppress(Exception):
                _save_model(namespace[n], os.path.join(private, f"{n}.keras"))
        shutil.rmtree(private, ignore_errors=True)
        return None
    folder, remote = _destination()
    if folder is None:
        results.emit({"event": "cell", "names": [], "stayed": {n: "no folder to send it back"
                      for n in names}, "time": time.time()})  # fmt: skip
        return None
    os.makedirs(os.path.join(folder, "models"), mode=0o700, exist_ok=True)
    manifest: dict[str, Any] = {"version": 1, "names": {}, "stayed": {}, "order": []}
    saved_models: dict[int, str] = {}
    for n, library in models.items():
        path = os.path.join(folder, "models", f"{n}.keras")
        try:
            _save_model(namespace[n], path)
        except Exception as exc:
            manifest["stayed"][n] = f"Keras model that cannot be saved: {exc}"
            continue
        _private(path)
        saved_models[id(namespace[n])] = n
        manifest["names"][n] = {"kind": "model", "file": f"models/{n}.keras", "library": library,
                                "bound": n in names}  # fmt: skip
    encoder = values.Encoder()
    for n in names:
        value = namespace[n]
        if n in manifest["names"] or n in manifest["stayed"]:
            continue
        if n in _state.code:  # a module, function or class (decorated too): the kernel
            manifest["names"][n] = {"kind": "code"}  # runs the cell's import, def and class
            continue  # statements itself
        history_of = _history(value)
        try:
            if history_of is not None:
                manifest["names"][n] = _history_entry(value, history_of, encoder, saved_models,
                                                      folder)  # fmt: skip
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
    if _state.out is not None and _keras_model(_state.out) is None:
        with contextlib.suppress(values.Unsupported):  # else its bundle shows it
            manifest["out"] = {"value": encoder.encode(_state.out)}
    if encoder.arrays:
        import numpy as np

        arrays = os.path.join(folder, "arrays.npz")
        np.savez(arrays, **encoder.arrays)
        _private(arrays)
    path = os.path.join(folder, "values.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f, allow_nan=False)
    _private(path)
    where = folder
    if remote is not None:
        where = _upload(folder, remote)
    results.emit({"event": "cell", "folder": where, "names": list(manifest["names"]),
                  "stayed": manifest["stayed"], "time": time.time()})  # fmt: skip
    return manifest


def _history_entry(
    value: Any, library: str, encoder: values.Encoder, saved: dict[int, str], folder: str
) -> dict[str, Any]:
    model = getattr(value, "model", None)
    model_name = saved.get(id(model)) if model is not None else None
    if model is not None and model_name is None and _keras_model(model):
        model_name = f"__history_model_{len(saved)}"
        try:
            path = os.path.join(folder, "models", f"{model_name}.keras")
            _save_model(model, path)
            _private(path)
            saved[id(model)] = model_name
        except Exception:
            model_name = None
    return {
        "kind": "history",
        "library": library,
        "history": encoder.encode(dict(getattr(value, "history", {}) or {})),
        "epoch": encoder.encode(list(getattr(value, "epoch", []) or [])),
        "params": encoder.encode(_plain(getattr(value, "params", {}) or {})),
        "model": model_name,
    }


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
