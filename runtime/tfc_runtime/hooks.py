"""Patches applied to a package as it is first imported (Keras, tf-keras, TensorFlow).

:func:`when_imported` runs a patch on the module at once when it is imported already, else when
it is first imported (a meta-path finder wraps the module's own loader). A patch that fails
never fails the import: the job runs, unpatched, with one warning.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

Patch = Callable[[ModuleType], None]
_patches: dict[str, list[tuple[str, Patch]]] = {}


def safely(patch: Patch, module: ModuleType, what: str) -> None:
    """Run ``patch`` on ``module``; a failure is one warning naming ``what`` went missing."""
    try:
        patch(module)
    except Exception as exc:  # a Keras we do not know: the job runs, unpatched
        print(f"[tfc_runtime] warning: {what} ({exc})", file=sys.stderr)


class _Loader(importlib.abc.Loader):
    """The module's own loader, then our patches."""

    def __init__(self, inner: importlib.abc.Loader, name: str) -> None:
        self.inner = inner
        self.name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        for what, patch in list(_patches.get(self.name, ())):
            safely(patch, module, what)


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the loader of each package that has patches, as it is first imported."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _patches:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, fullname)
                return spec
        return None


def when_imported(name: str, patch: Patch, what: str) -> None:
    """Run ``patch(module)`` on the package ``name`` now if it is imported, else when it is.

    ``what``: the warning's words when the patch fails ("metrics are not recorded").
    """
    entries = _patches.setdefault(name, [])
    if any(p is patch for _, p in entries):
        return
    entries.append((what, patch))
    if name in sys.modules:
        safely(patch, sys.modules[name], what)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


FIT_CALLBACKS_ARG = 5
"""Where ``Model.fit`` takes ``callbacks`` by position: ``fit(x, y, batch_size, epochs, verbose,
callbacks, ...)``."""


def fit_callbacks(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The ``callbacks`` a ``fit(*args, **kwargs)`` call was given (None when none)."""
    return args[FIT_CALLBACKS_ARG] if len(args) > FIT_CALLBACKS_ARG else kwargs.get("callbacks")


def with_fit_callbacks(
    args: tuple[Any, ...], kwargs: dict[str, Any], callbacks: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The same ``fit`` call with ``callbacks`` in the place the code gave them."""
    if len(args) > FIT_CALLBACKS_ARG:
        return (*args[:FIT_CALLBACKS_ARG], callbacks, *args[FIT_CALLBACKS_ARG + 1 :]), kwargs
    return args, {**kwargs, "callbacks": callbacks}
