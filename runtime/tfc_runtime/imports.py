"""``python -m tfc_runtime.imports SCRIPT``: the image has every module the job imports.

The image build's last step. A job that would die at an import (``ModuleNotFoundError`` after the
build, the queue and the bill) fails the build instead, naming the import: every module the
script imports, and, transitively, the modules next to it that it imports (shipped with it), must
be found here. Imports the code guards (``try: ... except ImportError``, ``if 'google.colab' in
sys.modules:``) are its own business; nothing is imported (``importlib.util.find_spec`` only),
so the step is quick and runs no code.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from collections.abc import Iterator

ANSWERED = frozenset({"IPython", "tfc_jupyter", "tfc_runtime"})
"""Modules the runtime answers itself in an image without them (see ``tfc_shim``,
``ipython_shim``)."""
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
PREFIX = "[tfc_runtime] cannot import "
"""The start of each line naming a missing import (the client reads it from the build log)."""


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type
    if kinds is None:  # a bare except
        return True
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return any(_dotted(n).rsplit(".", 1)[-1] in _IMPORT_ERRORS for n in names)


def guarded_imports(tree: ast.AST) -> set[int]:
    """``id()`` of the import statements whose failure the code handles: inside a ``try`` that
    catches ``ImportError`` (or a parent of it), or under an ``if`` that tests for Colab
    (``if 'google.colab' in sys.modules:``, ``if IN_COLAB:``)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        handled = isinstance(node, ast.Try) and any(map(_catches_import_error, node.handlers))
        in_colab = isinstance(node, ast.If) and "colab" in ast.dump(node.test).lower()
        body: list[ast.stmt] = getattr(node, "body", []) if handled or in_colab else []
        for statement in body:
            for inner in ast.walk(statement):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    guarded.add(id(inner))
    return guarded


def imported(source: str) -> Iterator[tuple[str, int]]:
    """``(top-level module, line)`` of each absolute import the code does not guard."""
    tree = ast.parse(source)
    guarded = guarded_imports(tree)
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module.split(".")[0], node.lineno


def module_files(folder: str, module: str) -> list[str]:
    """The files of ``module`` when it is a local one next to the script (``module.py``, or a
    package folder's ``.py`` files, sorted); [] for any other module."""
    single = os.path.join(folder, f"{module}.py")
    if os.path.isfile(single):
        return [single]
    package = os.path.join(folder, module)
    if not os.path.isfile(os.path.join(package, "__init__.py")):
        return []
    return sorted(
        os.path.join(root, f)
        for root, _, files in os.walk(package)
        for f in files
        if f.endswith(".py")
    )


def missing(script: str) -> list[tuple[str, str]]:
    """``(module, where)`` of each import of ``script`` (and of the modules beside it that it
    imports) this Python cannot find."""
    folder = os.path.dirname(os.path.abspath(script))
    stdlib = set(sys.stdlib_module_names)
    todo = [script]
    seen_files: set[str] = set()
    out: list[tuple[str, str]] = []
    reported: set[str] = set()
    while todo:
        path = todo.pop(0)
        if path in seen_files:
            continue
        seen_files.add(path)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                source = f.read()
            found = list(imported(source))
        except (OSError, SyntaxError, ValueError):
            continue
        name = os.path.relpath(path, folder)
        for module, line in found:
            if module in stdlib or module in ANSWERED or module.startswith("_"):
                continue
            local = module_files(folder, module)
            if local:
                todo += local
                continue
            if module not in reported and importlib.util.find_spec(module) is None:
                reported.add(module)
                out.append((module, f"{name}, line {line}"))
    return out


def main(argv: list[str] | None = None) -> int:
    """Exit 1, naming each missing import, when the image lacks one."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tfc_runtime.imports SCRIPT", file=sys.stderr)
        return 2
    lacking = missing(args[0])
    for module, where in lacking:
        print(f"{PREFIX}{module} ({where}): it is not installed in this image", flush=True)
    if not lacking:
        print("[tfc_runtime] every import of the job is installed in this image")
    return 1 if lacking else 0


if __name__ == "__main__":
    sys.exit(main())
