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
import contextlib
import fnmatch
import functools
import itertools
import os
import posixpath
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..util.files import human_size
from . import syntax
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
    (re.compile(r"^[ \t]*(?:from|import)[ \t]+(?:keras_tuner|kerastuner)\b", re.MULTILINE),
     "tensorboard", "Keras Tuner's trials import it with TensorFlow's backend"),
    (re.compile(r"""\.h5['"]|save_format\s*=\s*['"]h5|\.hdf5['"]"""), "h5py",
     "Keras reads and writes .h5 files with it"),
    (re.compile(r"\b(read_parquet|to_parquet)\s*\("), "pyarrow", "pandas reads parquet with it"),
    (re.compile(r"\b(read_excel|to_excel)\s*\("), "openpyxl", "pandas reads .xlsx with it"),
    (re.compile(r"\bplot_model\s*\("), "pydot", "keras.utils.plot_model draws with it"),
)  # fmt: skip
"""Packages a library loads only when asked (no import in the code names them): a pattern in
the code, the module, and why."""


BRINGS_BACK: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^[ \t]*(?:from|import)[ \t]+sklearn\b", re.MULTILINE), "skops",
     "scikit-learn models the run cell binds come back through it"),
)  # fmt: skip
"""Packages the job writes values with for the kernel: a pattern in the code, the module, and
why; asked for only where this kernel has the module (without it, the kernel could not read the
value either: it stays in the job, and the cell says so with the fix)."""


def on_demand(text: str) -> list[tuple[str, str]]:
    """``(module, why)`` for each package the code's calls load on demand (:data:`ON_DEMAND`),
    and each this kernel has that values come back through (:data:`BRINGS_BACK`)."""
    import importlib.util

    here = [rule for rule in BRINGS_BACK if importlib.util.find_spec(rule[1]) is not None]
    found = []
    for pattern, module, why in (*ON_DEMAND, *here):
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
        tree = syntax.parse(text)
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
    found += [p for p in _built_paths(tree, base) if p not in found]
    # A folder already holds its files: keep the outermost paths only.
    return [p for p in found if not any(p.startswith(f"{q}/") for q in found if q != p)]


def _built_paths(tree: ast.AST, base: Path) -> list[str]:
    """Paths the code builds (``os.path.join(DATA, 'x.csv')``, ``Path('data') / name``,
    ``f'data/train_{i}.csv'``) that name a file or folder next to the notebook: the path when
    it is all literal, else the folder its literal part names (``data``); not where the code
    writes (:func:`_write_targets`)."""
    paths = _Paths(tree)
    writes = {id(item) for _, item in _write_targets(tree, paths)}
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in writes or not isinstance(node, (ast.JoinedStr, ast.BinOp, ast.Call)):
            continue
        got = paths.value(node)
        if got is None:
            continue
        rel = _relative(got[0]) if got[1] else _prefix_folder(got[0])
        if not rel or rel in found or rel.endswith(".ipynb"):
            continue
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            path = base / rel
            if (path.exists() if got[1] else path.is_dir()) and path.resolve().is_relative_to(base):
                found.append(rel)
    return found


# --------------------------------------------------------------------------- reads by pattern
# What the code reads by pattern (``tf.io.gfile.glob('data/*.tfrecord')``) or by folder
# (``os.listdir('data')``, ``image_dataset_from_directory('data/train')``): the files it matches
# next to the notebook go into the image too, and one that matches nothing is a plan warning,
# unless a write earlier in the job's code names a path there (a heuristic: see _written).

_MAGIC = re.compile(r"[*?[]")
_PATH_TYPES = {"Path", "PurePath", "PosixPath", "PurePosixPath"}
_KEEPS_PATH = {"str", "fspath", "as_posix", "expanduser"}
_PATTERN_CALLS = {
    "list_files",
    "matching_files",
    "make_csv_dataset",
    "make_batched_features_dataset",
}
_FROM_DIRECTORY = {
    "image_dataset_from_directory",
    "text_dataset_from_directory",
    "audio_dataset_from_directory",
    "flow_from_directory",
}
_WRITE_CALLS = {
    "TFRecordWriter", "to_csv", "to_json", "to_parquet", "to_pickle", "to_feather", "to_hdf",
    "to_excel", "save", "savez", "savez_compressed", "savetxt", "tofile", "save_weights",
    "save_model", "save_img", "imsave", "imwrite", "savefig", "write_text", "write_bytes",
    "write_file", "touch", "makedirs", "mkdir", "copy", "copy2", "copyfile", "copytree", "move",
    "rename", "urlretrieve", "extractall", "unpack_archive", "get_file", "TextLineWriter",
}  # fmt: skip
"""Calls whose path arguments name where the code writes (for :func:`read_patterns`)."""
_QUIET_REASONS = ("not needed", "cache folder")  # skipped without a word, as in a walked folder
SEARCH_ENTRIES = 100_000
"""Most folder entries one plan looks at to match the code's patterns (``**`` over a home)."""

Excluded = Callable[[str, Path, bool], "str | None"]
"""``(notebook-relative path, path, is a folder) -> why it stays out of an image, or None``."""


@dataclass
class PatternRead:
    """A pattern or a folder the code reads, and what it matches next to the notebook."""

    call: str  # how the code calls it: ``tf.io.gfile.glob``, ``os.listdir``
    pattern: str  # notebook-relative: ``data/*.tfrecord``; a folder read: ``data/train``
    line: int  # script line
    folder: bool = False  # a folder (os.listdir, image_dataset_from_directory ...), no pattern
    paths: list[str] = field(default_factory=list)  # files and folders that go into the image
    left_out: list[tuple[str, str]] = field(default_factory=list)  # matched, never shipped: why
    written: bool = False  # a write earlier in the code names a path there
    over: int = 0  # bytes matched, past the limit (then nothing goes in)
    limit: int = 0  # the limit, bytes
    capped: bool = False  # the search stopped at SEARCH_ENTRIES


def _dotted(node: ast.expr) -> str:
    """``tf.io.gfile.glob`` for the call's function, ``""`` when it is not a name chain."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _join(*parts: str) -> str:
    out = ""
    for part in parts:
        out = part if part.startswith("/") or not out else f"{out.rstrip('/')}/{part}"
    return out


class _Paths:
    """The literal value of a path expression: a string, an f-string, ``os.path.join(...)``,
    ``Path(...) / ...``, or a name bound once to one of those. ``(text, complete)``: an
    incomplete one is the literal prefix before the first part not known before the job runs
    (``f'data/{name}.csv'`` -> ``('data/', False)``)."""

    def __init__(self, tree: ast.AST) -> None:
        stores: dict[str, int] = {}
        bound: dict[str, ast.expr] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                stores[node.id] = stores.get(node.id, 0) + 1
            elif isinstance(node, ast.arg):
                stores[node.arg] = stores.get(node.arg, 0) + 2  # a parameter: never constant
            target = value = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.value
            if isinstance(target, ast.Name) and value is not None:
                bound[target.id] = value
        self.bound = {k: v for k, v in bound.items() if stores.get(k) == 1}
        self.busy: set[str] = set()

    def value(self, node: ast.expr | None) -> tuple[str, bool] | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return (node.value, True) if isinstance(node.value, str) else None
        if isinstance(node, ast.Name):
            if node.id not in self.bound or node.id in self.busy:
                return None
            self.busy.add(node.id)
            try:
                return self.value(self.bound[node.id])
            finally:
                self.busy.discard(node.id)
        if isinstance(node, ast.JoinedStr):
            text = ""
            for part in node.values:
                got: tuple[str, bool] | None = None
                if isinstance(part, ast.Constant):
                    got = self.value(part)
                elif isinstance(part, ast.FormattedValue) and part.format_spec is None:
                    got = self.value(part.value)
                if got is None:
                    return text, False
                text += got[0]
                if not got[1]:
                    return text, False
            return text, True
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
            left = self.value(node.left)
            if left is None or not left[1]:
                return left
            right = self.value(node.right)
            glue = _join if isinstance(node.op, ast.Div) else str.__add__
            if right is None:
                return glue(left[0], ""), False
            return glue(left[0], right[0]), right[1]
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _call(self, node: ast.Call) -> tuple[str, bool] | None:
        name = _dotted(node.func)
        last = name.rpartition(".")[2]
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        if (
            last in _PATH_TYPES
            or name in ("join", "osp.join")
            or name.endswith(("path.join", "gfile.join"))
        ):
            return self._joined(node.args)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "joinpath":
            return self._joined([node.func.value, *node.args])
        if last in ("getcwd", "cwd") and not node.args:
            return ".", True
        if name in _KEEPS_PATH and len(node.args) == 1:
            return self.value(node.args[0])
        if isinstance(node.func, ast.Attribute) and node.func.attr in _KEEPS_PATH and receiver:
            return self.value(receiver) if not node.args else None
        return None

    def _joined(self, parts: Sequence[ast.expr]) -> tuple[str, bool] | None:
        if any(isinstance(p, ast.Starred) for p in parts):
            return None
        text = "."
        for part in parts:
            got = self.value(part)
            if got is None:
                return _join(text, ""), False
            text = _join(text, got[0])
            if not got[1]:
                return text, False
        return text, True


def _relative(text: str) -> str | None:
    """``text`` as a notebook-relative POSIX path (``''``: the notebook's folder), or None for
    what is not next to the notebook (absolute, a URL, ``~``, up and out of the folder)."""
    if not text or "\0" in text or re.match(r"^[a-zA-Z][\w+.-]*://|^[~/\\]|^[a-zA-Z]:", text):
        return None
    norm = posixpath.normpath(text)
    if norm == ".":
        return ""
    if norm == ".." or norm.startswith("../"):
        return None
    return norm


def _prefix_folder(text: str) -> str | None:
    """The folder an incomplete path's literal prefix names (``data/train_`` -> ``data``)."""
    return _relative(text.rpartition("/")[0] or ".")


def _arg(node: ast.Call, index: int, *keywords: str) -> ast.expr | None:
    if len(node.args) > index and not isinstance(node.args[index], ast.Starred):
        return node.args[index]
    for kw in node.keywords:
        if kw.arg in keywords:
            return kw.value
    return None


def _flag(node: ast.Call, keyword: str) -> bool:
    return any(
        kw.arg == keyword and isinstance(kw.value, ast.Constant) and kw.value.value is True
        for kw in node.keywords
    )


@dataclass
class _Read:
    call: str
    values: list[tuple[str, bool]]
    line: int
    folder: bool = False
    recursive: bool = False  # ``**`` is any number of folders
    hidden: bool = True  # ``*`` matches names that start with a dot


def _reads(tree: ast.AST, paths: _Paths) -> list[_Read]:
    """Every call that reads a pattern or a folder, with its path values."""
    found: list[_Read] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else name
        receiver = paths.value(func.value) if isinstance(func, ast.Attribute) else None
        shown = name or f"Path(...).{attr}"
        arg: ast.expr | None = None
        read = _Read(shown, [], node.lineno)
        if attr in ("glob", "iglob") and (isinstance(func, ast.Name) or name.startswith("glob.")):
            if any(kw.arg in ("root_dir", "dir_fd") for kw in node.keywords):
                continue  # relative to another folder
            arg = _arg(node, 0, "pathname")
            read.recursive, read.hidden = _flag(node, "recursive"), _flag(node, "include_hidden")
        elif (attr in ("glob", "Glob") and name.endswith(("gfile.glob", "gfile.Glob"))) or (
            attr in _PATTERN_CALLS
        ):
            arg = _arg(node, 0, "pattern", "file_pattern")
        elif attr in ("glob", "rglob") and receiver is not None and receiver[1]:
            pattern = paths.value(_arg(node, 0, "pattern"))
            if pattern is None:
                continue
            prefix = "**/" if attr == "rglob" else ""
            read.values = [(_join(receiver[0], prefix + pattern[0]), pattern[1])]
            read.recursive = True
        elif attr in ("listdir", "scandir", "walk", "ListDirectory", "Walk") and (
            name in ("listdir", "scandir", "walk")
            or name.startswith("os.")
            or ".gfile." in name
            or name.startswith("gfile.")
        ):
            arg, read.folder = _arg(node, 0, "path", "top", "dirname"), True
        elif attr in ("iterdir", "walk") and receiver is not None:
            read.values, read.folder = [receiver], True
        elif attr in _FROM_DIRECTORY:
            arg, read.folder = _arg(node, 0, "directory"), True
        elif attr == "flow_from_dataframe":
            arg, read.folder = _arg(node, 1, "directory"), True
        else:
            continue
        items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
        for item in items if arg is not None else []:
            got = paths.value(item)
            if got is not None:
                read.values.append(got)
        if read.values:
            found.append(read)
    return found


def _write_targets(tree: ast.AST, paths: _Paths) -> list[tuple[int, ast.expr]]:
    """``(line, expression)`` for every path a write call names: ``open(p, 'w')``,
    ``tf.io.TFRecordWriter(p)``, ``df.to_csv(p)``, ``np.save(p)``, ``os.makedirs(p)``,
    ``zip.extractall(p)``, ``Path(p).write_text(...)`` ... (:data:`_WRITE_CALLS`)."""
    out: list[tuple[int, ast.expr]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else _dotted(func)
        on_path = isinstance(func, ast.Attribute) and paths.value(func.value) is not None
        named: list[ast.expr] = []
        if attr in ("open", "GFile", "Open"):  # open, io.open, Path(p).open, tf.io.gfile.GFile
            mode = _arg(node, 0 if on_path else 1, "mode")
            text = mode.value if isinstance(mode, ast.Constant) else ""
            if isinstance(text, str) and any(c in text for c in "wax+"):
                named = [func.value] if isinstance(func, ast.Attribute) and on_path else []
                named += [] if on_path else node.args[:1]
        elif attr in _WRITE_CALLS:
            named = [*node.args, *(kw.value for kw in node.keywords)]
            if isinstance(func, ast.Attribute):
                named.append(func.value)  # Path('data').mkdir()
        out += [(node.lineno, item) for item in named]
    return out


def _written(tree: ast.AST, paths: _Paths) -> list[tuple[int, str, bool]]:
    """``(line, path, complete)`` for every path a write call names (:func:`_write_targets`)."""
    out: list[tuple[int, str, bool]] = []
    for line, item in _write_targets(tree, paths):
        got = paths.value(item)
        if got is not None:
            out.append((line, *got))
    return out


def _under(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(f"{folder}/")


def _writes_there(folder: str, line: int, writes: list[tuple[int, str, bool]]) -> bool:
    """Whether a write before ``line`` names a path in ``folder``, below it, or (an incomplete
    path, or a folder it makes) above it."""
    for at, text, complete in writes:
        if at >= line:
            continue
        where = _relative(text) if complete else _prefix_folder(text)
        if where is None:
            continue
        parent = where.rpartition("/")[0] if complete else where
        above = (where or complete) and _under(folder, where)  # where '.': the notebook's folder
        if above or _under(parent, folder) or _under(where, folder):
            return True
    return False


def _ancestors(path: str) -> list[str]:
    """``a/b/c`` -> ``a``, ``a/b``."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


class _Search:
    """Matches patterns under the notebook's folder, with the image's exclusions, within
    :data:`SEARCH_ENTRIES` entries and ``limit`` bytes of matched files."""

    def __init__(self, base: Path, excluded: Excluded | None, limit: int) -> None:
        self.base = base
        self.excluded = excluded or (lambda rel, path, is_dir: None)
        self.limit = limit
        self.entries = SEARCH_ENTRIES

    def _list(self, rel: str, hidden: bool) -> list[tuple[str, bool]]:
        """``(name, is a folder)`` of the entries of ``rel`` (folders the image never holds
        are left out)."""
        try:
            with os.scandir(self.base / rel if rel else self.base) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return []
        out = []
        for entry in entries:
            if self.entries <= 0:
                break
            self.entries -= 1
            if not hidden and entry.name.startswith("."):
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            child = _join(rel, entry.name) if rel else entry.name
            if is_dir and (entry.is_symlink() or self.excluded(child, Path(entry.path), True)):
                continue
            out.append((entry.name, is_dir))
        return out

    def _below(self, rel: str, hidden: bool) -> list[str]:
        """``rel`` and every folder under it."""
        out, todo = [], [rel]
        while todo and self.entries > 0:
            here = todo.pop(0)
            out.append(here)
            todo += [_join(here, n) if here else n for n, d in self._list(here, hidden) if d]
        return out

    def match(self, pattern: str, recursive: bool, hidden: bool) -> list[tuple[str, bool]]:
        """``(path, is a folder)`` for each path ``pattern`` matches, in order."""
        parts = [p for p in pattern.split("/") if p not in ("", ".")]
        current = [""]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            found: list[tuple[str, bool]] = []
            for rel in current:
                if part == "**" and recursive:
                    below = self._below(rel, hidden)
                    found += [(d, True) for d in below]
                    if last:  # then every file below too
                        found += [
                            (_join(d, n) if d else n, False)
                            for d in below
                            for n, is_dir in self._list(d, hidden)
                            if not is_dir
                        ]
                    continue
                if not _MAGIC.search(part):
                    child = _join(rel, part) if rel else part
                    path = self.base / child
                    if path.is_dir() and not self.excluded(child, path, True):
                        found.append((child, True))
                    elif last and path.is_file():
                        found.append((child, False))
                    continue
                for name, is_dir in self._list(rel, hidden or part.startswith(".")):
                    if fnmatch.fnmatchcase(name, part):
                        found.append((_join(rel, name) if rel else name, is_dir))
            if last:
                return [(p, d) for p, d in dict.fromkeys(found) if p]
            current = list(dict.fromkeys(p for p, d in found if d))
        return []

    def size(self, rel: str) -> int:
        """Bytes of the files under the folder ``rel`` (as far as the search goes)."""
        total = 0
        for folder in self._below(rel, True):
            for name, is_dir in self._list(folder, True):
                if not is_dir:
                    with contextlib.suppress(OSError):
                        total += (self.base / folder / name).stat().st_size
        return total

    def folder(self, read: PatternRead) -> None:
        """A folder read: the folder goes in (the image's walk of it applies the exclusions
        and the limit), unless it is missing, empty or left out."""
        path = self.base / read.pattern
        if not path.is_dir():
            return
        why = self.excluded(read.pattern, path, True)
        if why is not None:
            if why not in _QUIET_REASONS:
                read.left_out.append((f"{read.pattern}/", why))
            return
        with contextlib.suppress(OSError), os.scandir(path) as it:
            if next(it, None) is not None:
                read.paths.append(read.pattern)

    def take(self, read: PatternRead, found: list[tuple[str, bool]]) -> None:
        """The matched paths that go into the image, within the limit, with the exclusions."""
        folders = {q for q, is_dir in found if is_dir}
        kept = [(p, d) for p, d in found if not any(a in folders for a in _ancestors(p))]
        sizes = []
        for rel, is_dir in kept:
            try:
                sizes.append(self.size(rel) if is_dir else (self.base / rel).stat().st_size)
            except OSError:
                sizes.append(0)
        if sum(sizes) > self.limit:
            read.over, read.limit = sum(sizes), self.limit
            return
        if self.entries <= 0 and any(is_dir for _, is_dir in kept):
            read.capped = True  # a folder sized in part: nothing goes in unmeasured
            return
        for rel, is_dir in kept:
            if not is_dir and rel.endswith(".ipynb") and not read.pattern.endswith(".ipynb"):
                continue  # a notebook is the code, not its data
            why = self.excluded(rel, self.base / rel, is_dir)
            if why is None:
                read.paths.append(rel)
            elif why not in _QUIET_REASONS:
                read.left_out.append((rel + ("/" if is_dir else ""), why))


def read_patterns(
    text: str, base_dir: Path, excluded: Excluded | None = None, limit: int = 100_000_000
) -> list[PatternRead]:
    """The patterns and folders the code reads (``glob.glob``, ``tf.io.gfile.glob``,
    ``tf.data.Dataset.list_files``, ``Path(...).glob`` / ``rglob``, ``os.listdir`` /
    ``scandir`` / ``walk``, ``tf.io.gfile.listdir`` / ``walk``, ``*_dataset_from_directory``,
    ``flow_from_directory``), with what each matches next to the notebook.

    A pattern is matched as its call would (``**`` with ``recursive=True`` for ``glob``, always
    for pathlib; ``glob``'s ``*`` skips names with a leading dot), with ``excluded`` (the image's
    exclusions: secrets, virtualenvs, caches, ``.git``, job records ...) applied to every folder
    it enters and every path it matches; matched files over ``limit`` bytes in all go in not at
    all (:attr:`PatternRead.over`). A path the code builds (``os.path.join('data', name)``,
    ``f'data/{split}/*.png'``) reads the folder its literal part names."""
    try:
        tree = syntax.parse(text)
    except SyntaxError:
        return []
    base = base_dir.resolve()
    paths = _Paths(tree)
    writes = _written(tree, paths)
    search = _Search(base, excluded, limit)
    out: list[PatternRead] = []
    seen: set[tuple[str, bool]] = set()
    for read in sorted(_reads(tree, paths), key=lambda r: r.line):
        for value, complete in read.values:
            where = _relative(value) if complete else _prefix_folder(value)
            folder = read.folder or not complete
            if where is None or (where == "" and folder) or (where, folder) in seen:
                continue
            seen.add((where, folder))
            item = PatternRead(read.call, where, read.line, folder=folder)
            item.written = _writes_there(_read_folder(where, folder), read.line, writes)
            if search.entries <= 0:
                item.capped = True
            elif folder:
                search.folder(item)
            else:
                search.take(item, search.match(where, read.recursive, read.hidden))
                item.capped = item.capped or search.entries <= 0
            out.append(item)
    return out


def _read_folder(where: str, folder: bool) -> str:
    """The folder a read looks in: the folder itself, or a pattern's literal part
    (``data/*/x.csv`` -> ``data``; ``data/x.csv`` -> ``data``)."""
    if folder:
        return where
    parts = where.split("/")
    literal = list(itertools.takewhile(lambda p: not _MAGIC.search(p), parts))
    return "/".join(literal[: len(parts) - 1])


def read_warnings(reads: Iterable[PatternRead], locate: Callable[[int], str]) -> list[str]:
    """Plan warnings for :func:`read_patterns`: a pattern or folder that matches nothing next to
    the notebook (and that no earlier write makes), what was left out of a match and why, and
    a match too large or too wide to take."""
    out = []
    for read in reads:
        where = f"{read.pattern} ({read.call}, {locate(read.line)})"
        if read.left_out:
            shown = ", ".join(f"{path} ({why})" for path, why in read.left_out[:5])
            more = len(read.left_out) - 5
            out.append(
                f"the code reads {where}: left out of the image: {shown}"
                + (f" and {more} more" if more > 0 else "")
            )
        elif read.over:
            size, limit = human_size(read.over), human_size(read.limit)
            out.append(
                f"the code reads {where}, which matches {size} next to the notebook, over the "
                f"{limit} the plan takes into an image unasked: none of it goes in. Fix: read "
                "it from a bucket (gs://...), or pass --include PATH to ship it anyway"
            )
        elif read.capped:
            out.append(
                f"the code reads {where}: the plan stopped looking after {SEARCH_ENTRIES} "
                "entries next to the notebook, so the image may lack some of what it matches. "
                "Fix: pass --include PATH for the folder it reads"
            )
        elif not read.paths and not read.written:
            what = "is missing or empty" if read.folder else "matches nothing"
            out.append(
                f"the code reads {where}, which {what} next to the notebook: the job finds "
                "nothing there (a dataset of it is empty). Fix: put the files there before "
                "the run, write them in a cell of the job above this one, or read them from a "
                "bucket (gs://...)"
            )
    return out
