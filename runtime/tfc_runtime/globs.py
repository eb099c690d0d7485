"""A pattern the job's code reads that matches nothing: one line on stderr, not an empty epoch.

Data an earlier step wrote next to the notebook (``data/*.tfrecord``) is in a docker or Vertex AI
job only if the plan put it in the image. When it is not there, ``tf.io.gfile.glob`` returns
``[]``, the dataset made of it is empty, ``fit`` runs epochs of nothing (Keras says only that it
ran out of data) and the job "succeeds". :func:`install` wraps ``glob.glob``, ``glob.iglob`` and
(when TensorFlow is imported) ``tf.io.gfile.glob``: a call from the job's code (not from a
library: :func:`_from_the_code`) with a relative pattern that matches nothing prints, once per
pattern::

    [tfc_runtime] warning: tf.io.gfile.glob('data/*.tfrecord') matched nothing in /app: ...

and returns the very result it got: what the code computes is unchanged. (An ``iglob`` warns
when the code has read it to its end and found nothing.) ``tf.data.Dataset.list_files`` needs no
wrapper: it fails on a pattern that matches nothing ("No files matched pattern").

Standard library only, like all of ``tfc_runtime``.
"""

from __future__ import annotations

import functools
import glob
import os
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from tfc_runtime import hooks

_LIBRARIES = frozenset({"tensorflow", "keras", "tf_keras", "tfc_runtime", "tensorflow_datasets"})
"""Packages whose globs are their own business (checkpoints, caches), besides the standard
library and what is installed in site-packages."""
_warned: set[str] = set()


def _from_the_code() -> bool:
    """Whether the function that called our wrapper is the job's code: the notebook's script
    (``__main__``) or a module next to it, not the standard library (``glob.glob`` calls
    ``glob.iglob``), TensorFlow, Keras or an installed package."""
    frame = sys._getframe(2)
    name = str(frame.f_globals.get("__name__") or "")
    if name == "__main__":
        return True
    top = name.partition(".")[0]
    if top in _LIBRARIES or top in sys.stdlib_module_names:
        return False
    file = frame.f_code.co_filename
    return not (file.startswith("<") or "site-packages" in file or "dist-packages" in file)


def _relative_pattern(args: tuple[Any, ...], kwargs: dict[str, Any], *names: str) -> str | None:
    """The call's pattern when it is one relative path (not absolute, not a URL, no
    ``root_dir``), else None."""
    if "root_dir" in kwargs or "dir_fd" in kwargs:
        return None
    value = args[0] if args else next((kwargs[n] for n in names if n in kwargs), None)
    try:
        text = os.fsdecode(value) if isinstance(value, (str, bytes, os.PathLike)) else None
    except TypeError:
        return None
    if not text or os.path.isabs(text) or "://" in text or text.startswith("~"):
        return None
    return text


def warn(call: str, pattern: str) -> None:
    """The warning, once per pattern."""
    if pattern in _warned:
        return
    _warned.add(pattern)
    print(
        f"[tfc_runtime] warning: {call}({pattern!r}) matched nothing in {os.getcwd()}: the job "
        "has no such files, and a dataset of them is empty. Fix: put them next to the notebook "
        "before the run (the plan ships what the code reads there), pass --include, or read "
        "them from a bucket (gs://...)",
        file=sys.stderr,
        flush=True,
    )


def watched(original: Callable[..., Any], call: str, *names: str) -> Callable[..., Any]:
    """``original`` (a glob returning a list), warning when the code's pattern matches
    nothing; ``names``: the pattern's keyword names."""
    if getattr(original, "_tfc_watched", False):
        return original

    @functools.wraps(original)
    def glob_(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if not result and _from_the_code():
            pattern = _relative_pattern(args, kwargs, *names)
            if pattern is not None:
                warn(call, pattern)
        return result

    glob_._tfc_watched = True  # type: ignore[attr-defined]
    return glob_


def watched_lazily(original: Callable[..., Iterator[Any]], call: str) -> Callable[..., Any]:
    """``original`` (``glob.iglob``), warning when the code has read it to its end, empty."""
    if getattr(original, "_tfc_watched", False):
        return original

    @functools.wraps(original)
    def iglob(*args: Any, **kwargs: Any) -> Iterator[Any]:
        result = original(*args, **kwargs)
        if not _from_the_code():
            return result
        pattern = _relative_pattern(args, kwargs, "pathname")
        return result if pattern is None else _noting(result, call, pattern)

    iglob._tfc_watched = True  # type: ignore[attr-defined]
    return iglob


def _noting(items: Iterator[Any], call: str, pattern: str) -> Iterator[Any]:
    empty = True
    for item in items:
        empty = False
        yield item
    if empty:
        warn(call, pattern)


def _watch_gfile(tf: ModuleType) -> None:
    gfile = tf.io.gfile
    gfile.glob = watched(gfile.glob, "tf.io.gfile.glob", "pattern")


def install() -> None:
    """Wrap ``glob.glob``, ``glob.iglob`` and, once TensorFlow is imported, ``tf.io.gfile.glob``
    (see the module's docstring)."""
    glob.glob = watched(glob.glob, "glob.glob", "pathname")
    glob.iglob = watched_lazily(glob.iglob, "glob.iglob")
    hooks.when_imported("tensorflow", _watch_gfile, "an empty tf.io.gfile.glob is not reported")
