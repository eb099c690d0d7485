"""What the notebook needs besides its code: the packages it imports and the files it reads.

A job built into an image (docker, Vertex AI) has only what the image brings. A notebook that
imports pandas without a ``%pip`` line, or reads ``data/train.csv``, works in Jupyter and dies in
the cloud after the build and the queue. This module finds both, before launch:

* third-party imports that neither the requirements nor the parent image's TensorFlow cover,
  pinned at the version this kernel has (``importlib.metadata.packages_distributions()``);
* relative paths in string literals that name files or folders next to the notebook.
"""

from __future__ import annotations

import ast
import functools
import re
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .requirements import TENSORFLOW_DISTRIBUTIONS, canonical_name

# Ours: in every image already.
_OURS = {"tfc_runtime", "tfc_jupyter"}
# Modules that only exist in a notebook front end: reported as unattended code, never installed.
_FRONTEND_ONLY = {"google.colab", "IPython", "ipykernel", "ipywidgets"}
_PATHLIKE = re.compile(r"^(?![a-zA-Z][\w+.-]*://)(?!/)(?!~)[^\0\n\r\t<>|\"*?]{1,255}$")


@dataclass
class Needs:
    """What planning adds for the image, and what it could not resolve."""

    requirements: list[str] = field(default_factory=list)  # pinned lines to add
    unresolved: list[str] = field(default_factory=list)  # imports not installed in this kernel
    local_modules: list[str] = field(default_factory=list)  # modules next to the notebook
    origins: dict[str, str] = field(default_factory=dict)  # -> "imported by helpers.py, line 1"


def _dist_name(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


@functools.cache
def _module_owners() -> dict[str, list[str]]:
    from importlib import metadata  # here: only a job that builds an image asks (12 ms)

    return {k: list(v) for k, v in metadata.packages_distributions().items()}


def _requires_closure(roots: Iterable[str]) -> frozenset[str]:
    """Canonical names of ``roots`` and every distribution they require, as installed here."""
    from importlib import metadata

    from packaging.requirements import InvalidRequirement, Requirement

    seen: set[str] = set()
    todo = [_dist_name(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in reqs:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            todo.append(_dist_name(req.name))
    return frozenset(seen)


@functools.cache
def parent_covers() -> frozenset[str]:
    """Distributions TensorFlow's image brings: TensorFlow and what it requires, as installed
    here (the image has the kernel's TensorFlow version)."""
    return _requires_closure(TENSORFLOW_DISTRIBUTIONS)


ON_DEMAND: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"\bcallbacks\.TensorBoard\b|\bTensorBoard\s*\("), "tensorboard",
     "Keras' TensorBoard callback needs it"),
    (re.compile(r"""\.h5['"]|save_format\s*=\s*['"]h5|\.hdf5['"]"""), "h5py",
     "Keras reads and writes .h5 files with it"),
    (re.compile(r"\b(read_parquet|to_parquet)\s*\("), "pyarrow", "pandas reads parquet with it"),
    (re.compile(r"\b(read_excel|to_excel)\s*\("), "openpyxl", "pandas reads .xlsx with it"),
    (re.compile(r"\bplot_model\s*\("), "pydot", "keras.utils.plot_model draws with it"),
)  # fmt: skip
"""Packages a library loads only when asked (no import in the code names them): a pattern in
the code, the module, and why."""


def on_demand(text: str) -> list[tuple[str, str]]:
    """``(module, why)`` for each package the code's calls load on demand (:data:`ON_DEMAND`)."""
    found = []
    for pattern, module, why in ON_DEMAND:
        match = pattern.search(text)
        if match:
            line = text.count("\n", 0, match.start()) + 1
            found.append((module, f"{why}: script line {line}"))
    return found


def missing_imports(
    imports: Iterable[str],
    requirements: Iterable[str],
    base_dir: Path,
    also: Iterable[tuple[str, str]] = (),
) -> Needs:
    """Imports the image would lack, as pinned requirements (see the module docstring): the
    code's own, and, transitively, those of the modules next to the notebook that it imports
    (they go into the image with it), each with where it was imported; ``also``: modules
    loaded on demand (:func:`on_demand`), with why."""
    from importlib import metadata

    needs = Needs()
    asked = {n for n in map(canonical_name, requirements) if n}
    covered = set(parent_covers()) | asked
    if asked & set(TENSORFLOW_DISTRIBUTIONS):
        covered |= _requires_closure(asked & set(TENSORFLOW_DISTRIBUTIONS))
    stdlib = set(sys.stdlib_module_names)
    todo: list[tuple[str, str]] = [(m, "") for m in sorted(set(imports))] + list(also)
    while todo:
        module, origin = todo.pop(0)
        if module in stdlib or module in _OURS or module.startswith("_"):
            continue
        if any(f.split(".")[0] == module for f in _FRONTEND_ONLY):
            continue
        if (base_dir / f"{module}.py").is_file() or (base_dir / module / "__init__.py").is_file():
            if module not in needs.local_modules:
                needs.local_modules.append(module)
                todo += local_imports(base_dir, module)
            continue
        owners = _module_owners().get(module)
        if not owners:
            if module not in needs.unresolved:
                needs.unresolved.append(module)
                if origin:
                    needs.origins[module] = origin
            continue
        dists = sorted({_dist_name(d) for d in owners})
        if any(d in covered for d in dists):
            continue
        dist = dists[0]
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            needs.unresolved.append(module)
            continue
        line = f"{dist}=={version}"
        needs.requirements.append(line)
        if origin:
            needs.origins[line] = origin
        covered.add(dist)
    return needs


LOCAL_FILES_LIMIT = 200
"""Most ``.py`` files read from one local package when following its imports."""


def local_imports(base_dir: Path, module: str) -> list[tuple[str, str]]:
    """The top-level modules a local module (``helpers.py``, or a package folder's files)
    imports, each with where (``imported by helpers.py, line 1``); imports the code guards
    (``try: ... except ImportError``) are left out: it handles their failing. The same reading
    as the image's import check (``tfc_runtime.imports``)."""
    from tfc_runtime.imports import imported, module_files

    found: list[tuple[str, str]] = []
    for name in module_files(str(base_dir), module)[:LOCAL_FILES_LIMIT]:
        path = Path(name)
        try:
            imports = list(imported(path.read_text(encoding="utf-8", errors="replace")))
        except (OSError, SyntaxError, ValueError):
            continue
        where = path.relative_to(base_dir).as_posix()
        found += [(top, f"imported by {where}, line {line}") for top, line in imports]
    return found


def _run_targets(tree: ast.AST) -> set[str]:
    """The files ``%run`` runs (``_tfc.run_path('./setup.ipynb')`` once converted); a target
    given with arguments becomes its own literal too, so the finder sees it."""
    targets: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "run_path"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            try:
                words = [w for w in shlex.split(node.args[0].value) if w != "-i"]
            except ValueError:
                continue
            if words:
                targets.update((node.args[0].value.strip(), words[0]))
    return targets


def data_paths(text: str, base_dir: Path) -> list[str]:
    """Relative paths in the code's string literals that name files or folders next to the
    notebook (``pd.read_csv('data/train.csv')``, ``np.load('x.npy')``), notebook-relative."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    base = base_dir.resolve()
    found: list[str] = []
    strings = [
        n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]
    ran = _run_targets(tree)  # %run other.ipynb: that notebook goes with the job
    for node in sorted(strings, key=lambda n: (n.lineno, n.col_offset)):
        value = str(node.value).strip()
        if value in ("", ".", "..") or not _PATHLIKE.match(value):
            continue
        path = base / value
        try:
            resolved = path.resolve()
            rel = resolved.relative_to(base).as_posix()
            exists = path.exists()
        except (OSError, ValueError, RuntimeError):  # RuntimeError: a loop of links
            continue
        notebook = rel.endswith(".ipynb") and value not in ran
        if exists and rel not in found and not notebook and rel != ".":
            found.append(rel)
    # A folder already holds its files: keep the outermost paths only.
    return [p for p in found if not any(p.startswith(f"{q}/") for q in found if q != p)]
