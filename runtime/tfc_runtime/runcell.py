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
  are saved for the kernel (:func:`finish`, :mod:`tfc_runtime.giveback`), each by its codec
  (:mod:`tfc_runtime.codecs`: models as ``.keras`` files, the rest as JSON and a pickle-free
  ``.npz``); what cannot travel is named; so are the files it wrote in an image.

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
import stat
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tfc_runtime import executed, hooks, results, streams
from tfc_runtime.protocol import OUTPUT_MARK, RUN_CELL_MARK
from tfc_runtime.sourcemap import SourceMap

if TYPE_CHECKING:  # imported where a run cell needs them: a notebook job without one never does
    from tfc_runtime import effects

NAME = "__tfc_cell__"
"""The name the script's marks call this module by (a builtin: the script's globals are the
notebook's own)."""
OUTPUTS = "outputs"
"""The job folder's outputs: ``<n>.json`` (an nbformat output), and ``<n>.png`` for figures."""

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
    notebook = False  # the script is a notebook's cells (not a .py file)
    cell: int | None = None  # the cell running now
    binds: tuple[str, ...] = ()  # top-level names the run cell binds
    reads: tuple[str, ...] = ()  # names the run cell reads (a model it trains)
    code: tuple[str, ...] = ()  # names its import, def and class statements bind
    chief = True
    shown = 0  # outputs sent back so far
    handles = 0  # display ids made (display_id=True)
    out: Any = None  # the run cell's Out[] value
    started = 0.0  # when the run cell started
    workdir = ""  # the job's working folder then
    listed: frozenset[str] | None = None  # its files and links then, in an image
    statements: tuple[tuple[ast.stmt, int | None], ...] = ()  # the script's, with cells
    before: effects.Snapshot | None = None  # the namespace when the run cell started


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
    """The script's tree with the cells' marks (see the module's docstring). A notebook with
    no run cell (a whole notebook, run()'s cells above) gets only the marks of where each cell
    starts (its executed notebook, :mod:`tfc_runtime.executed`); a ``.py`` job none."""
    run_cell = smap.run_cell
    if smap.script:
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
    _state.statements = tuple((n, _cell_of(n, smap)) for n in tree.body)
    _state.notebook = bool(smap.lines)
    if run_cell is None:  # every cell's figures are shown: the last one's at the end
        tree.body = [*body, _call("end", [], body[-1] if body else tree)]
        return ast.fix_missing_locations(tree)
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
    results.in_run_cell = in_run_cell  # a fit says whether the run cell made it
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


def _shows_figures() -> bool:
    """Whether the figures of the cell running now are shown (sent back and kept in the
    executed notebook): the run cell's; in a notebook without one (``tfc-jupyter run`` of a
    whole notebook), every cell's, as Jupyter shows them (on the chief)."""
    if _state.run_cell is None:
        return _state.chief and _state.notebook and _state.cell is not None
    return in_run_cell()


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


def _event(**fields: Any) -> dict[str, Any]:
    """An ``output`` report, after what the cell printed before it (flushed, and where the
    output file is then: :func:`_log_position`)."""
    sys.stdout.flush()
    sys.stderr.flush()
    streams.end_line()  # an unfinished line ends before the output, as Jupyter shows it
    event: dict[str, Any] = {"event": "output", **fields, "time": time.time()}
    at = _log_position()
    if at is not None:
        event["log_offset"] = at
    elif isinstance(fields.get("n"), int) and os.environ.get("TFC_JOB_DIR"):
        event["log_mark"] = fields["n"]  # a pipe into the job's log (docker): a mark line
    return event


def _mark(n: int) -> None:
    """The output mark line (:data:`tfc_runtime.protocol.OUTPUT_MARK`) on the job's own stdout
    (never a ``%%capture``'s): the follower shows output ``n`` where it is in the log."""
    _line(f"{OUTPUT_MARK}{n}")


def _line(text: str) -> None:
    """One line of ours on the job's own stdout (never a ``%%capture``'s), after what the code
    wrote to either stream so far (an unfinished line ended first, as for an output)."""
    stream = sys.__stdout__
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError):  # a closed stream: nothing to place
        sys.stdout.flush()
        sys.stderr.flush()
        streams.end_line()
        stream.write(f"{text}\n")
        stream.flush()


def send(
    data: dict[str, Any],
    metadata: dict[str, Any],
    output_type: str,
    *,
    display_id: str | None = None,
    update: bool = False,
) -> None:
    """One output of the run cell, back to the kernel: a file of the job folder's
    :data:`OUTPUTS` (and a ``.png`` beside it for an image) reported on the result channel,
    else (no job folder) the report carries it. ``display_id`` / ``update``: IPython's, an
    output shown again in place."""
    _state.shown += 1
    n = _state.shown
    output: dict[str, Any] = {"output_type": output_type, "data": data, "metadata": metadata}
    text = str(data.get("text/plain", ""))[:500]
    event = _event(n=n, output_type=output_type, text=text)
    if display_id is not None:
        event.update(display_id=display_id, update=update)
    executed.output(output)
    job_dir = os.environ.get("TFC_JOB_DIR")
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
    if "log_mark" in event:  # after the report: a follower that reads the line has it
        _mark(n)


def _log_position() -> int | None:
    """Where the job's output file is now, when stdout is one (the local backend writes each
    replica's output to its log file): the follower shows this output after what the cell
    printed before it. None for a pipe (docker, Vertex AI)."""
    try:
        if not stat.S_ISREG(os.fstat(1).st_mode):
            return None
        return os.lseek(1, 0, os.SEEK_CUR)
    except OSError:
        return None


class DisplayHandle:
    """What ``display(obj, display_id=True)`` returns, as IPython's: ``update`` shows another
    object in its place, ``display`` shows one again."""

    def __init__(self, display_id: str) -> None:
        self.display_id = display_id

    def display(self, obj: Any, **kwargs: Any) -> None:
        show(obj, display_id=self.display_id, **kwargs)

    def update(self, obj: Any, **kwargs: Any) -> None:
        show(obj, display_id=self.display_id, update=True, **kwargs)

    def __repr__(self) -> str:
        return f"<DisplayHandle display_id={self.display_id}>"


def in_the_cell() -> bool:
    """True while the run cell runs, on any task."""
    return _state.run_cell is not None and _state.cell == _state.run_cell


def show(
    *objs: Any,
    raw: bool = False,
    display_id: Any = None,
    update: bool = False,
    clear: bool = False,
    **_options: Any,
) -> Any:
    """``display(...)`` in the run cell, as IPython's: each object's bundle goes back from
    the chief (other tasks show nothing); ``display_id=True`` returns a
    :class:`DisplayHandle`; ``clear`` clears the cell's outputs first."""
    if clear:
        clear_output(wait=True)
    if display_id is True:
        _state.handles += 1
        display_id = f"job-{_state.handles}"
    did = None if display_id is None else str(display_id)
    if _state.chief:
        for obj in objs:
            if raw and isinstance(obj, dict):
                data = {k: v for k, v in obj.items() if isinstance(v, (str, dict, list))}
                send(data, {}, "display_data", display_id=did, update=update)
            else:
                send(*bundle(obj), "display_data", display_id=did, update=update)
    return DisplayHandle(did) if did is not None and not update else None


def clear_output(wait: bool = False) -> None:
    """``clear_output`` in the run cell: the kernel clears what the cell showed from the job
    (never its log lines)."""
    if in_the_cell() and _state.chief:
        results.emit(_event(clear=True, wait=bool(wait)))


def display(*objs: Any, raw: bool = False, **_options: Any) -> bool:
    """``display(...)`` as the runtime's stand-in calls it: True when done here (in the run
    cell: :func:`show`), False elsewhere (the caller prints, as before)."""
    if not in_the_cell():
        return False
    show(*objs, raw=raw, **_options)
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
        if not _state.notebook:  # a .py job: matplotlib's own
            return original(*args, **kwargs)
        flush_figures(show=_shows_figures())
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
        if in_the_cell():
            return show(*objs, **kwargs)
        return original(*objs, **kwargs)

    cleared = getattr(module, "clear_output", None)

    def clear(wait: bool = False) -> None:
        if in_the_cell():
            clear_output(wait)
        elif cleared is not None:
            cleared(wait)

    functions = sys.modules.get("IPython.core.display_functions")
    for name, wrapper, was in (("display", shown, original), ("clear_output", clear, cleared)):
        setattr(wrapper, "_tfc_wrapped", True)  # noqa: B010
        wrapper.__doc__ = getattr(was, "__doc__", None)
        setattr(module, name, wrapper)
        if functions is not None:
            setattr(functions, name, wrapper)


def install(*, chief: bool) -> None:
    """Take the run cell's outputs (``plt.show``, ``IPython.display.display``); matplotlib
    draws with its non-interactive backend (``Agg``) unless the job chose one."""
    _state.chief = chief
    setattr(builtins, NAME, sys.modules[__name__])
    os.environ.setdefault("MPLBACKEND", "Agg")
    hooks.when_imported("matplotlib.pyplot", _patch_pyplot, "figures are not shown")
    hooks.when_imported("IPython.display", _patch_ipython_display, "displays are printed")


# -- the script's marks, called from the script -----------------------------------------------


def _private(path: str) -> None:
    """Owner-only, as the rest of the job folder (:func:`tfc_runtime.giveback.private`)."""
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)


def enter(cell: int) -> None:
    """A cell starts: the one before ends (its figures are closed; shown if it was the run
    cell)."""
    if _state.cell is not None and _state.notebook:
        flush_figures(show=_shows_figures())
    _state.cell = cell
    executed.enter(cell)
    if cell == _state.run_cell:
        _state.started, _state.workdir = time.time(), os.getcwd()
        _line(RUN_CELL_MARK)  # the kernel's run cell shows what is printed from here on
        if _state.chief:  # what the cell changes beyond its bindings goes back too
            try:
                from tfc_runtime import effects, giveback

                _state.listed = giveback.listing(_state.workdir)
                _state.before = effects.snapshot(sys._getframe(1).f_globals)
            except Exception as exc:  # our failure is not the job's
                print(f"[tfc_runtime] warning: the cell's changes are not followed ({exc})",
                      file=sys.stderr)  # fmt: skip


def out(value: Any) -> Any:
    """The run cell's last expression: its ``Out[]`` (None shows nothing, as in IPython)."""
    if value is not None and in_run_cell():
        send(*bundle(value), "execute_result")
        _state.out = value
    return value


def end() -> None:
    """A notebook without a run cell ends well: its last cell's figures are shown."""
    if _state.cell is not None:
        flush_figures(show=_shows_figures())
    _state.cell = None


def finish(namespace: dict[str, Any]) -> None:
    """The run cell ended well: its figures are shown and its names saved for the kernel.
    Never fails the job: a name that cannot be saved is said, and stays."""
    try:
        flush_figures(show=in_run_cell())
    except Exception as exc:
        print(f"[tfc_runtime] warning: the cell's figures were not shown ({exc})",
              file=sys.stderr)  # fmt: skip
    _state.cell = None
    from tfc_runtime import giveback

    steps = (
        (lambda: giveback.save_files(_state), "files"),
        (lambda: giveback.save_names(_state, namespace, effects=_effects(namespace)), "names"),
    )
    for step, what in steps:
        try:
            step()
        except Exception as exc:  # our failure is not the job's
            print(f"[tfc_runtime] warning: the cell's {what} were not sent back ({exc})",
                  file=sys.stderr)  # fmt: skip


def _effects(namespace: dict[str, Any]) -> effects.Changes | None:
    """What the run cell changed beyond its bindings (None: not followed)."""
    if _state.before is None:
        return None
    from tfc_runtime import effects

    return effects.changes(_state.before, namespace, set(_state.binds))


# -- a failed job keeps what it made -----------------------------------------------------------


class _Partial:
    """The run cell's state for :func:`giveback.save_names`, narrowed to the statements that
    ran before the failing one."""

    def __init__(self, cell: int, before: list[ast.stmt]) -> None:
        self.run_cell: int | None = cell
        self.binds = tuple(bound_names(before))
        self.reads = tuple(read_names(before))
        self.code = tuple(bound_names(n for n in before if isinstance(n, CODE)))
        self.chief = _state.chief
        self.out: Any = None
        self.started = _state.started
        self.workdir = _state.workdir
        self.listed = _state.listed


def before_failure(
    statements: tuple[tuple[ast.stmt, int | None], ...], script_line: int, run_cell: int | None
) -> tuple[ast.stmt, list[ast.stmt]] | None:
    """``(failing statement, the statements wholly before it)``: of the run cell when there is
    one (nothing when the failure is above it), else of every cell; None: no such statement."""
    failing = next(
        (n for n, _ in statements if n.lineno <= script_line <= (n.end_lineno or n.lineno)), None
    )
    if failing is None:
        return None
    failing_cell = next(c for n, c in statements if n is failing)
    if run_cell is not None and failing_cell != run_cell:
        return None
    before = [
        n
        for n, c in statements
        if (n.end_lineno or n.lineno) < failing.lineno and (run_cell is None or c == run_cell)
    ]
    return failing, before


def partial(
    namespace: dict[str, Any], script_line: int | None, smap: SourceMap, alone: bool
) -> None:
    """The job failed at ``script_line`` (its top-level statement): the names bound before that
    statement go back to the kernel marked partial, as :func:`finish` sends a cell's (a job of
    several tasks keeps them: saving a model may wait on tasks that are gone). Never fails."""
    if script_line is None or not _state.chief:
        return
    found = before_failure(_state.statements, script_line, _state.run_cell)
    if found is None or not found[1]:
        return
    failing, before = found
    state = _Partial(_state.run_cell or (_cell_of(failing, smap) or 1), before)
    if not state.binds and not state.reads:
        return
    if not alone:
        print("[tfc_runtime] the names made before the failure stay in the job (a job of "
              "several tasks: saving a model may wait on tasks that failed)",
              file=sys.stderr)  # fmt: skip
        return
    where = smap.locate(failing.lineno)
    mark = {
        "script_line": failing.lineno,
        "cell": where[0] if where else None,
        "line": where[1] if where else None,
        "place": smap.describe(failing.lineno),
    }
    try:
        from tfc_runtime import giveback

        giveback.save_names(state, namespace, partial={k: v for k, v in mark.items() if v})
    except Exception as exc:  # our failure is not the job's
        print(f"[tfc_runtime] warning: the names made before the failure were not sent back "
              f"({exc})", file=sys.stderr)  # fmt: skip
