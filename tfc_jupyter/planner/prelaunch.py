"""What the plan knows will fail: names the job's code reads that nothing in the job binds.

pyflakes reads the converted script (magics already translated, so ``_tfc``, ``display`` and
``get_ipython`` are bound by its header lines), and each undefined name is mapped back to its
cell and line through the script's source map. A name read where the job surely gets to (module
level, a loop's or a ``with``'s body) stops the plan with one line naming cell, line and fix,
before anything is built or launched: the job would stop there with ``NameError``. What may
never run (a function's body, a branch, code under an ``except`` that catches ``NameError``)
and scripts that bind names no checker can see (``exec``, ``globals()``, ``%run``) get a
warning instead: a refusal blocks a notebook, so it must be sure.

The same check names why the name is missing where the notebook shows it: bound only by another
``%%tfc_run`` cell (which this job leaves out), by a cell tagged ``tfc-skip`` or
``tfc-local-only``, or by the kernel (``_tfc_job``, IPython's ``Out``).
"""

from __future__ import annotations

import ast
import difflib
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConversionError, ConversionErrors, TfcError
from ..notebook import syntax
from ..notebook.capture import Selection, is_run_cell
from ..notebook.codeinfo import KERNEL_HANDLES
from ..notebook.convert import SKIP_TAGS, Cell, Script, convert

# How surely the job reaches a line: the higher, the less sure.
SURE, BRANCH, ANNOTATION, FUNCTION = range(4)
_IF_IT_RUNS = {
    SURE: "the job stops there with NameError",
    BRANCH: "in code that may not run (a branch, or a try whose except catches NameError): the "
    "job stops there with NameError if it runs",
    ANNOTATION: "in an annotation: the job stops there with NameError if Python evaluates it",
    FUNCTION: "in a function: the job stops there with NameError if the function is called",
}

# The magics' names in the kernel (the last job, the last dry run's plan, the launch panel).
_HANDLES = {
    **dict.fromkeys(KERNEL_HANDLES, "set by an earlier %%tfc_run"),
    "_tfc_job": "the handle of an earlier %%tfc_run job",
    "_tfc_plan": "the plan of an earlier %%tfc_run --dry-run",
    "_tfc_panel": "the launch panel of %tfc_panel",
}
# Names a kernel defines in the notebook's namespace, which a job does not have.
_KERNEL_NAMES = re.compile(
    r"In|Out|_ih|_oh|_dh|_i{1,3}|_{1,3}|_i?\d+|__IPYTHON__|_exit_code|__session__"
    r"|__vsc_ipynb_file__"
)
# Names whose use lets a script bind names no checker sees.
_DYNAMIC_CALLS = frozenset({"exec", "globals", "locals", "vars"})
_DYNAMIC_NAMES = frozenset({"__builtins__"})
_MODULE_GLOBALS = frozenset({"__file__", "__builtins__", "__annotations__"})
"""Names a script's module has that are not in builtins (pyflakes counts them as builtins)."""
_DYNAMIC_MODULES = frozenset({"builtins", "__main__"})


@dataclass(frozen=True)
class Undefined:
    """One undefined name, where the job first reads it."""

    name: str
    line: int  # script line
    how: int  # SURE, BRANCH, ANNOTATION or FUNCTION


def check(script: Script, selection: Selection) -> list[str]:
    """Refuse a job that reads a name nothing in it binds; return warnings for names it may read.

    Raises:
        ConversionError: one name, ``cell 4, line 2: name 'modle' is not defined. Fix: ...``.
        ConversionErrors: several names, a line each.
    """
    try:
        tree = syntax.parse(script.text)
    except SyntaxError:  # convert() compiled it: not reached
        return []
    said = flakes(tree)  # pyflakes once, read for both
    starred = star_warnings(said, script)
    found = [u for u in undefined_names(tree, said) if script.locate(u.line) is not None]
    if not found:  # (a generated line's names are ours, never the notebook's)
        return starred
    context = _Context(script, selection, tree)
    dynamic = _dynamic_binding(tree)
    if dynamic is not None:
        line, what = dynamic
        listed = ", ".join(f"{u.name} ({context.place(u.line)})" for u in found[:8])
        more = f" and {len(found) - 8} more" if len(found) > 8 else ""
        return [
            f"names nothing in the job binds as far as can be seen: {listed}{more}; the code binds "
            f"names a checker cannot see ({what} at {context.place(line)}), so they may be "
            "defined. If they are not, the job stops at the first with NameError"
        ]
    errors: list[ConversionError] = []
    warnings: list[str] = []
    for item in found:
        error = context.error(item)
        if item.how == SURE and not _KERNEL_NAMES.fullmatch(item.name):
            errors.append(error)
        else:
            sep = ": " if item.how == SURE else ", "
            warnings.append(f"{error.message}{sep}{_IF_IT_RUNS[item.how]}. Fix: {error.hint}")
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConversionErrors(errors)
    return starred + warnings


def star_warnings(said: Sequence[Any], script: Script) -> list[str]:
    """Warnings for names read that only a ``from x import *`` may bind: one a standard module
    imported with ``*`` lacks is a likely typo (``sqrtt`` next to ``from math import *``,
    with the close name); for other modules (importing them here may be slow) the names are
    listed once, as names that may not be defined."""
    import importlib

    from pyflakes import messages

    typos, unsure = [], []
    seen: set[str] = set()
    for message in said:
        if not isinstance(message, messages.ImportStarUsage) or message.message_args[0] in seen:
            continue
        name, modules = message.message_args[0], str(message.message_args[1])
        seen.add(name)
        where = script.locate(message.lineno)
        if where is None or name in syntax.python_builtins():
            continue
        place = f"cell {where[0]}, line {where[1]}"
        names = [m.strip() for m in modules.split(",")]
        if not all(m.split(".")[0] in sys.stdlib_module_names for m in names):
            unsure.append(f"{name} ({place})")
            continue
        exported: set[str] = set()
        for module in names:
            try:
                found = importlib.import_module(module)
            except Exception:
                break
            exported |= set(getattr(found, "__all__", None) or dir(found))
        else:
            if name not in exported:
                close = difflib.get_close_matches(name, sorted(exported), n=1, cutoff=0.7)
                maybe = f" (did you mean {close[0]}?)" if close else ""
                typos.append(
                    f"{place}: name {name!r} is not defined, nor in {modules} (imported with *):"
                    f" if it runs, the job stops there with NameError. Fix: correct the "
                    f"spelling{maybe}"
                )
    if unsure:
        typos.append(
            "names only a 'from ... import *' may bind: " + ", ".join(unsure[:8])
            + (f" and {len(unsure) - 8} more" if len(unsure) > 8 else "")
            + "; if one is not there, the job stops at it with NameError"
        )  # fmt: skip
    return typos


def flakes(tree: ast.Module) -> list[Any]:
    """pyflakes' messages on the job's script, read with Python's builtins."""
    from pyflakes import checker

    class Checker(checker.Checker):
        """pyflakes with Python's builtins, not a kernel's."""

        @property
        def builtIns(self) -> frozenset[str]:  # pyflakes' name
            return self._builtins

        @builtIns.setter
        def builtIns(self, value: Iterable[str]) -> None:
            # pyflakes read this process's builtins when it was imported: a kernel or another
            # library may have added names there (display, ip), which a job's interpreter lacks.
            self._builtins = frozenset(value) & (syntax.python_builtins() | _MODULE_GLOBALS)

    return list(Checker(tree, "script.py").messages)


def undefined_names(tree: ast.Module, said: Sequence[Any] | None = None) -> list[Undefined]:
    """Each name pyflakes finds undefined (``said``: its messages on ``tree``, when read
    already), once, where it is read surest (then first): names that may come from a
    ``from x import *`` are left out, as are string annotations."""
    from pyflakes import messages

    places = _Places()
    places.visit(tree)
    best: dict[str, Undefined] = {}
    for message in said if said is not None else flakes(tree):
        if not isinstance(message, messages.UndefinedName):
            continue
        how = places.how.get((message.lineno, message.col))
        if how is None:  # a string annotation: never evaluated by the job
            continue
        item = Undefined(message.message_args[0], message.lineno, how)
        known = best.get(item.name)
        if known is None or (item.how, item.line) < (known.how, known.line):
            best[item.name] = item
    return sorted(best.values(), key=lambda u: (u.how, u.line))


class _Places(ast.NodeVisitor):
    """(line, column) of every name read or deleted -> how surely the job gets there."""

    def __init__(self) -> None:
        self.how: dict[tuple[int, int], int] = {}
        self.now = SURE

    def under(self, how: int, nodes: Iterable[ast.AST | None]) -> None:
        saved, self.now = self.now, max(self.now, how)
        for node in nodes:
            if node is not None:
                self.visit(node)
        self.now = saved

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Store):
            self.how.setdefault((node.lineno, node.col_offset), self.now)

    def _arguments(self, args: ast.arguments) -> None:
        self.under(SURE, [*args.defaults, *args.kw_defaults])  # evaluated by `def` itself
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        self.under(ANNOTATION, [a.annotation for a in every if a is not None])

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.under(SURE, node.decorator_list)
        self._arguments(node.args)
        self.under(ANNOTATION, [node.returns])
        self.under(FUNCTION, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._arguments(node.args)
        self.under(FUNCTION, [node.body])

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.under(ANNOTATION, [node.annotation])
        self.under(SURE, [node.target, node.value])

    def visit_If(self, node: ast.If | ast.IfExp) -> None:
        self.visit(node.test)
        sure = _always(node.test)
        body = node.body if isinstance(node.body, list) else [node.body]
        orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
        self.under(SURE if sure else BRANCH, body)
        self.under(BRANCH, orelse)

    visit_IfExp = visit_If

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self.under(SURE if _always(node.test) else BRANCH, [*node.body, *node.orelse])

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self.visit(node.values[0])
        self.under(BRANCH, node.values[1:])

    def visit_Try(self, node: ast.Try | ast.TryStar) -> None:
        catches = any(_catches_name_error(h.type) for h in node.handlers)
        self.under(BRANCH if catches else SURE, node.body)
        self.under(BRANCH, node.handlers)
        self.under(SURE, [*node.orelse, *node.finalbody])

    visit_TryStar = visit_Try

    def visit_Match(self, node: ast.Match) -> None:
        self.visit(node.subject)
        self.under(BRANCH, node.cases)

    def visit_Assert(self, node: ast.Assert) -> None:
        self.visit(node.test)
        self.under(BRANCH, [node.msg])


def _always(test: ast.expr) -> bool:
    """``True``, ``1``, or ``__name__ == "__main__"`` (the job's script is ``__main__``)."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _catches_name_error(kind: ast.expr | None) -> bool:
    """A handler that catches NameError: bare, or naming it or one of its bases."""
    if kind is None:
        return True
    kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(
        isinstance(k, ast.Name) and k.id in ("NameError", "Exception", "BaseException")
        for k in kinds
    )


def _dynamic_binding(tree: ast.Module) -> tuple[int, str] | None:
    """The first place the code may bind names unseen: ``exec``, ``globals()``, ``vars()``,
    ``locals()``, ``__builtins__``, ``import builtins``, ``sys.modules[__name__]``, ``%run``."""
    for node in ast.walk(tree):
        what = ""
        if isinstance(node, ast.Name) and node.id in _DYNAMIC_CALLS:
            what = f"{node.id}()"
        elif isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
            what = node.id
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            modules += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            hit = next((m for m in modules if m.split(".")[0] in _DYNAMIC_MODULES), "")
            what = f"import {hit}" if hit else ""
        elif isinstance(node, ast.Subscript | ast.Call) and _this_module(node):
            what = "sys.modules[__name__]"
        elif isinstance(node, ast.Attribute) and _names(node) == ("_tfc", "run_path"):
            what = "%run"
        if what:
            return getattr(node, "lineno", 0), what
    return None


def _names(node: ast.Attribute) -> tuple[str, str]:
    """``("a", "b")`` for ``a.b``; ``("", "b")`` when ``a`` is no name."""
    return (node.value.id if isinstance(node.value, ast.Name) else "", node.attr)


def _this_module(node: ast.Subscript | ast.Call) -> bool:
    """``sys.modules[__name__]`` or ``sys.modules.get("__main__")``: the script's own module,
    whose attributes are its names (``"google.colab" in sys.modules`` binds nothing)."""
    if isinstance(node, ast.Subscript):
        owner, keys = node.value, [node.slice]
    elif isinstance(node.func, ast.Attribute):
        owner, keys = node.func.value, list(node.args)
    else:
        return False
    return (
        isinstance(owner, ast.Attribute)
        and owner.attr == "modules"
        and isinstance(owner.value, ast.Name)
        and owner.value.id == "sys"
        and any(
            (isinstance(k, ast.Name) and k.id == "__name__")
            or (isinstance(k, ast.Constant) and k.value == "__main__")
            for k in keys
        )
    )


class _Context:
    """What the error lines need: places, the script's names, the cells the job leaves out."""

    def __init__(self, script: Script, selection: Selection, tree: ast.Module) -> None:
        self.script = script
        self.selection = selection
        self.cells = {c.index: c for c in selection.cells}
        self.bound_at: dict[str, int] = {}  # module-level name -> script line it is first bound
        for statement in tree.body:
            for name in _bound(statement):
                self.bound_at.setdefault(name, statement.lineno)
        self._left_out: list[tuple[Cell, frozenset[str]]] | None = None

    def place(self, line: int) -> str:
        where = self.script.locate(line)
        if where is None:
            return f"script line {line}"
        return f"{self._place(where[0])}, line {where[1]}"

    def _place(self, index: int) -> str:
        cell = self.cells.get(index)
        return cell.place if cell is not None else f"cell {index}"

    def left_out(self) -> list[tuple[Cell, frozenset[str]]]:
        """The cells above that the job leaves out, each with the names it binds."""
        if self._left_out is None:
            self._left_out = []
            for cell in self.selection.left_out:
                try:  # alone, untagged: what it binds when it runs
                    text = convert([Cell(cell.index, cell.source, (), cell.label)]).text
                    names = frozenset(n for s in ast.parse(text).body for n in _bound(s))
                except (TfcError, SyntaxError):
                    continue
                self._left_out.append((cell, names))
        return self._left_out

    def error(self, item: Undefined) -> ConversionError:
        """The refusal of one name: why it is missing and the fix."""
        where = self.script.locate(item.line)
        assert where is not None  # check() keeps the notebook's lines only
        index, line = where
        name = item.name
        is_script = self.selection.script
        here = self._place(index)
        # the run cell itself cannot be tagged out of its own job
        local = "" if index == self.selection.run_cell else f"tag {here} tfc-local-only"
        if name in _HANDLES:
            message = f"{name} is {_HANDLES[name]}, which only the kernel has"
            hint = local or "read it in a cell below this one, which runs in the kernel"
        elif _KERNEL_NAMES.fullmatch(name):
            message = (
                f"{name} is one of IPython's names (In, Out, _ ...), which only the kernel has"
            )
            hint = "use the value itself" + (f", or {local}" if local else "")
        elif (binder := self._binder(name, index)) is not None:
            if is_run_cell(binder.source):
                message = (
                    f"{name} is bound only by the %%tfc_run {binder.place}, which this job "
                    "leaves out"
                )
                hint = f"{local or 'bind it in a cell above'}, or move the code into one "
                hint += "%%tfc_run cell"
            else:
                tag = next(t for t in binder.tags if t in SKIP_TAGS)
                message = f"{name} is bound only by {binder.place}, which is tagged {tag}"
                hint = f"remove the tag from {binder.place}"
                hint += f", or tag {here} {tag} too" if local else ""
        else:
            message = f"name {name!r} is not defined"
            later = self.bound_at.get(name)
            below = self.script.locate(later) if later and later > item.line else None
            if below is not None:
                hint = f"move the code that binds it ({self.place(later or 0)}) above this line"
            elif (module := _module_for(name)) is not None:
                hint = f"{module} " + ("above this line" if is_script else "in a cell above")
            else:
                hint = (
                    "define it above this line" if is_script else "define it in a cell above"
                ) + ", or correct the spelling"
                match = self._close(name)
                if match:
                    hint += f" (did you mean {match}?)"
        error = ConversionError(message, hint, cell=index, line=line)
        if here != f"cell {index}":  # a script's or the history's place
            error.message = error.message.replace(f"cell {index}", here, 1)
        return error

    def _binder(self, name: str, index: int) -> Cell | None:
        """The left-out cell that binds ``name``: the nearest above ``index``, else any."""
        binders = [cell for cell, names in self.left_out() if name in names]
        above = [c for c in binders if c.index < index]
        return above[-1] if above else (binders[0] if binders else None)

    def _close(self, name: str) -> str:
        """The script's name (or a builtin) closest to a misspelt one, or ``""``."""
        candidates = {n for n in self.bound_at if not n.startswith("_tfc")}
        if len(name) > 2:  # `ip` is no misspelt `zip`
            candidates |= {n for n in syntax.python_builtins() if not n.startswith("_")}
        found = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.7)
        return found[0] if found else ""


_ALIASES = {
    "np": "import numpy as np",
    "pd": "import pandas as pd",
    "plt": "import matplotlib.pyplot as plt",
    "tf": "import tensorflow as tf",
    "tfds": "import tensorflow_datasets as tfds",
    "sns": "import seaborn as sns",
}


def _module_for(name: str) -> str | None:
    """``import os`` for a name that is a standard module, or a common alias's import."""
    if name in _ALIASES:
        return _ALIASES[name]
    return f"import {name}" if name in sys.stdlib_module_names else None


def _bound(statement: ast.stmt) -> Iterator[str]:
    """Names a top-level statement binds (its compound bodies too, not functions' or classes')."""
    from tfc_runtime.runcell import bound_names

    yield from bound_names([statement])
