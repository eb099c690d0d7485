"""One parse of a job's script for every reader of it.

Planning reads the converted script many times (what it imports and calls, the names it
leaves undefined, the files it reads, tf.estimator, a sweep's assignments); each reader parsing
and walking the text itself made a 200,000-line cell plan in over half a minute. The trees here
are shared: readers look at them and never change them. Planning forgets them when it ends
(:func:`forget`), so a kernel keeps no tree of a big script.
"""

from __future__ import annotations

import ast
import builtins
import functools
import threading
import types


class Parsed:
    """A script's syntax tree and, made on first use, every node of it (``ast.walk``'s
    order)."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self._nodes: tuple[ast.AST, ...] | None = None

    @property
    def nodes(self) -> tuple[ast.AST, ...]:
        """Every node of the tree, walked once."""
        if self._nodes is None:
            self._nodes = tuple(ast.walk(self.tree))
        return self._nodes


_last: list[tuple[str, Parsed]] = []
"""The one script parsed last (a new one replaces it: never two big trees at once)."""
_lock = threading.Lock()


def parsed(text: str) -> Parsed:
    """The script ``text`` parsed, shared by every reader of the same text (not to be changed).

    Raises:
        SyntaxError: the text does not parse (not kept: each caller hears it).
    """
    with _lock:  # the server plans in threads
        if _last and _last[0][0] == text:
            return _last[0][1]
        _last.clear()  # before parsing: the old tree is gone when the new one is made
    shared = Parsed(ast.parse(text))
    with _lock:
        _last[:] = [(text, shared)]
    return shared


def parse(text: str) -> ast.Module:
    """The shared tree of ``text`` (:func:`parsed`)."""
    return parsed(text).tree


def forget() -> None:
    """Drop the shared trees (planning calls it when it ends)."""
    with _lock:
        _last.clear()


_PYTHON_MODULES = frozenset({"builtins", "io", "_sitebuiltins", "_frozen_importlib"})
_CONSTANTS = (type(None), bool, int, str, type(Ellipsis), type(NotImplemented))
KERNEL_BUILTINS = frozenset({"get_ipython", "display", "__IPYTHON__", "__IPYTHON__active"})
"""Names IPython puts in a kernel's builtins: the script's header binds display and get_ipython
where it reads them, and a job has no ``__IPYTHON__``."""


@functools.cache
def python_builtins() -> frozenset[str]:
    """The names Python gives every script (its builtins, and site's ``exit``, ``help`` ...),
    not those a library added to this process's builtins: a kernel's :data:`KERNEL_BUILTINS`,
    IPython's test shell's ``ip`` and ``_ip`` (objects of its own). A function a library put in
    place of one of Python's keeps the name. Planning reads a job's names as the job's fresh
    interpreter will, whatever this process imported."""
    names = set()
    for name, value in vars(builtins).items():
        if isinstance(value, _CONSTANTS):
            made_by = "builtins"
        elif isinstance(value, types.MethodType):
            made_by = getattr(value.__func__, "__module__", None) or ""
        elif isinstance(value, (type, types.BuiltinFunctionType, types.FunctionType)):
            made_by = getattr(value, "__module__", None) or ""
        else:
            made_by = type(value).__module__
        # A builtin a library replaced (its own print, open ...) keeps Python's name.
        replaced = callable(value) and not isinstance(value, types.MethodType)
        if made_by in _PYTHON_MODULES or (replaced and not name.startswith("_")):
            names.add(name)
    return frozenset(names) - KERNEL_BUILTINS
