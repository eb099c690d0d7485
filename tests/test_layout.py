"""The shape of the code: no import circles, lazy imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _modules(package: Path) -> dict[str, Path]:
    base = package.parent
    out = {}
    for path in package.rglob("*.py"):
        name = ".".join(path.relative_to(base).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _relative_imports(package: Path) -> list[tuple[str, str, list[str]]]:
    """``(module, imported module, names)`` of every relative import, lazy ones included."""
    mods = _modules(package)
    out = []
    for name, path in mods.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                parts = here.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], node.module or ""])
                out.append((name, base.strip("."), [a.name for a in node.names]))
    return out


def _graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports anywhere (functions and TYPE_CHECKING
    blocks too: a circle through a lazy import is still a circle in the design)."""
    mods = _modules(package)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                parts = here.split(".")
                base = (
                    ".".join([*parts[: len(parts) - node.level + 1], node.module or ""]).strip(".")
                    if node.level
                    else node.module or ""
                )
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [base, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name] |= {t for t in targets if t in mods and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("package", ["tfc_jupyter", "runtime/tfc_runtime"])
def test_no_import_circles(package: str) -> None:
    graph = _graph(ROOT / package)
    assert len(graph) > 5
    assert _circles(graph) == []


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same arrows between the product's folders (``tfc_jupyter.job``, ``tfc_jupyter.image``
    ...); a top-level module is its own node."""

    def folder(module: str) -> str:
        return ".".join(module.split(".")[:2])

    out: dict[str, set[str]] = {}
    for name, targets in graph.items():
        out.setdefault(folder(name), set())
        for target in targets:
            out.setdefault(folder(target), set())
            if folder(target) != folder(name):
                out[folder(name)].add(folder(target))
    return out


def test_no_import_circles_between_folders() -> None:
    """``job/`` and ``image/`` once imported each other (the plan built images, and the image
    package typed its argument as the plan): a circle between folders, type-only imports
    included, is one too."""
    folders = _package_graph(_graph(ROOT / "tfc_jupyter"))
    assert {"tfc_jupyter.job", "tfc_jupyter.image", "tfc_jupyter.planner"} <= set(folders)
    assert _circles(folders) == []


@pytest.mark.parametrize("below", ["job", "notebook", "image"])
def test_the_planner_sits_above_what_it_plans_with(below: str) -> None:
    """The planner reads jobs, notebooks and images; none of them reads the planner (types
    included: the image package asks for an ``ImageOrder``, which a Plan is)."""
    graph = _graph(ROOT / "tfc_jupyter")
    folder = f"tfc_jupyter.{below}"
    up = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if f"{name}.".startswith(f"{folder}.")
        for target in targets
        if f"{target}.".startswith("tfc_jupyter.planner.")
    )
    assert up == []
    assert any(f"{t}.".startswith(f"{folder}.") for t in graph["tfc_jupyter.planner.plan"])


def test_the_folder_circle_finder_sees_a_type_only_import(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for folder, text in {
        "a": "from ..b.y import Y\n",
        "b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a.x import X\n",
    }.items():
        (package / folder).mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / folder / "__init__.py").write_text("")
        (package / folder / ("x.py" if folder == "a" else "y.py")).write_text(text)
    assert _circles(_package_graph(_graph(package))) == [["pkg.a", "pkg.b"]]


def test_every_relative_import_names_a_module_of_ours() -> None:
    """A lazy import inside a function is only run when it is needed: a module that moved
    must not leave one behind that names a module no longer there."""
    mods = _modules(ROOT / "tfc_jupyter")
    wrong = [
        (name, target)
        for name, target, names in _relative_imports(ROOT / "tfc_jupyter")
        if target not in mods and not all(f"{target}.{n}" in mods for n in names)
    ]
    assert wrong == []


def test_the_circle_finder_finds_circles() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _backend_mentions(path: Path, names: set[str]) -> list[str]:
    """Where a module decides by a backend's name: a string constant that is one (outside the
    pip extras ``MissingDependency`` names, which share them), ``BackendName.X``, or an import
    of one backend's module."""
    tree = ast.parse(path.read_text())
    exempt: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "MissingDependency":
            exempt |= {id(a) for a in node.args}
    found = []
    for node in ast.walk(tree):
        where = f"{path.parent.name}/{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in exempt:
            found.append(f"{where} {node.value!r}")
        elif (
            isinstance(node, ast.Attribute)
            and getattr(node.value, "id", "") == "BackendName"
            and node.attr.isupper()
        ):
            found.append(f"{where} BackendName.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and "backends." in f"{node.module}.":
            module = node.module or ""
            if module.startswith("backends.") or ".backends." in f".{module}":
                found.append(f"{where} imports {module}")
    return found


def test_no_module_outside_backends_names_a_backend() -> None:
    """Only ``backends/`` and the registry know which backends exist: the rest asks a
    backend's traits (``tfc_jupyter.registry.Traits``), so adding one changes nothing else."""
    from tfc_jupyter import registry

    names = set(registry.BUILTIN)
    package = ROOT / "tfc_jupyter"
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] == "backends" or rel == Path("registry.py"):
            continue
        found += _backend_mentions(path, names)
    assert found == []


def test_the_backend_name_finder_finds_them(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from tfc_jupyter.backends.local import cluster_env\n"
        "if spec.backend.value == 'vertex' or spec.backend is BackendName.DOCKER:\n"
        "    raise MissingDependency('docker', 'vertex', 'x')\n"
    )
    found = _backend_mentions(sample, {"local", "docker", "vertex"})
    assert [f.split(" ", 1)[1] for f in found] == [
        "imports tfc_jupyter.backends.local",
        "'vertex'",
        "BackendName.DOCKER",
    ]


def _role_tables(path: Path) -> list[str]:
    """Literals that spell out the replica roles (a tuple, list or dict holding both "chief" and
    "evaluator"): a pool/role table."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        items: list[ast.expr | None] = []
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = [*node.keys, *node.values]
        words = {i.value for i in items if isinstance(i, ast.Constant)}
        if {"chief", "evaluator"} <= words:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_pool_role_table_is_written_once() -> None:
    """Vertex AI's pools 0 to 3 are chief, worker, ps and evaluator: ``tfc_runtime.protocol``
    says so once (``ROLES``, ``POOL_ROLES``), for the runtime and the product alike."""
    found = [
        where
        for package in ("tfc_jupyter", "runtime/tfc_runtime")
        for path in sorted((ROOT / package).rglob("*.py"))
        for where in _role_tables(path)
    ]
    assert [where.split(":")[0] for where in found] == ["runtime/tfc_runtime/protocol.py"]


TOP_MOST = 12
"""Most modules at the package's top, ``__init__.py`` counted (issue 47, "the house")."""


def test_the_package_top_holds_at_most_twelve_modules() -> None:
    """The front ends, the client, the settings, errors, events, words, the registry, ``jobs.py``
    and tfc's types stay at the top; every other module lives in the folder of its capability."""
    top = sorted(p.name for p in (ROOT / "tfc_jupyter").glob("*.py"))
    assert "__init__.py" in top
    assert len(top) <= TOP_MOST, top


CAPABILITIES = {
    "returns": set("border returned results outcome notify plot cell tensorboard".split()),
    "trials": set("trials trial_table tuned sweep_jobs tuner".split()),
    "sweep": set("spec targets".split()),
    "store": set("records logs".split()),
    "util": set("files pidfds ports secretscan tables masking".split()),
}
"""Each capability folder and the modules it holds (at least)."""


@pytest.mark.parametrize("folder", sorted(CAPABILITIES))
def test_each_capability_folder_holds_its_modules(folder: str) -> None:
    path = ROOT / "tfc_jupyter" / folder
    assert (path / "__init__.py").is_file()
    held = {p.stem for p in path.glob("*.py")}
    assert CAPABILITIES[folder] <= held, sorted(CAPABILITIES[folder] - held)
    assert not any((ROOT / "tfc_jupyter" / f"{m}.py").exists() for m in CAPABILITIES[folder])


FLOORS = [
    {"util"},
    {"store"},
    {"notebook"},
    {"sweep"},
    {"job"},
    {"image"},
    {"planner", "returns"},
    {"backends"},
    {"jobs"},
    {"client"},
    {"trials"},
    {"panel", "server"},
]
"""The folders (and the two top modules in their midst), lowest first: each imports only what
sits on a floor below its own (types included). ``sweep/`` sits below ``job/``, whose option
table lists the sweep methods (``--method``). ``returns/`` sits below the backends, whose
watchers say how a job ended; ``trials/`` above the client, which launches each trial."""


def test_each_folder_imports_only_floors_below_it() -> None:
    folders = _package_graph(_graph(ROOT / "tfc_jupyter"))
    floor = {f"tfc_jupyter.{name}": n for n, names in enumerate(FLOORS) for name in names}
    assert set(floor) <= set(folders), sorted(set(floor) - set(folders))
    up = sorted(
        f"{name} -> {target}"
        for name, targets in folders.items()
        if name in floor
        for target in targets
        if target in floor and floor[target] >= floor[name]
    )
    assert up == []


GOOGLE_CLOUD = ("google.cloud", "google.auth", "google.api_core", "google.oauth2", "vertexai")
"""Google Cloud's client libraries (``google.colab``, Colab's own module that the notebook
capture asks for the open notebook, is not one of them)."""
VERTEX = "tfc_jupyter.backends.vertex"


def _google_imports(package: Path) -> dict[str, list[str]]:
    """Module -> the Google Cloud modules it imports anywhere (lazy ones included), and the
    Vertex AI folder's modules it imports (the only way to reach Google Cloud code through us)."""
    graph = _graph(package)
    vertex_folder = f"{package.name}.backends.vertex"
    found: dict[str, list[str]] = {}
    for name, path in _modules(package).items():
        named = [
            alias.name if isinstance(node, ast.Import) else node.module or ""
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0)
            for alias in (node.names if isinstance(node, ast.Import) else [node.names[0]])
        ]
        google = [m for m in named if m.startswith(GOOGLE_CLOUD)]
        vertex = [m for m in graph[name] if m.startswith(vertex_folder)]
        if google or vertex:
            found[name] = sorted(set(google + vertex))
    return found


def test_no_module_outside_the_vertex_folder_imports_google_cloud_code() -> None:
    """Issue 47: the Google part lives in ``backends/vertex/``. The floors below it reach it
    only by name (``registry.py``'s tables and the backend class), so a job that never goes to
    Google never imports its code, and another cloud is a folder beside it."""
    found = _google_imports(ROOT / "tfc_jupyter")
    outside = {m: names for m, names in found.items() if not m.startswith(VERTEX)}
    assert outside == {}
    inside = {m for m, names in found.items() if any(n.startswith(GOOGLE_CLOUD) for n in names)}
    assert {f"{VERTEX}.google.gcloud", f"{VERTEX}.api"} <= inside  # the check sees them


def test_the_google_import_finder_finds_them(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "backends" / "vertex").mkdir(parents=True)
    for init in (package, package / "backends", package / "backends" / "vertex"):
        (init / "__init__.py").write_text("")
    (package / "backends" / "vertex" / "api.py").write_text("x = 1\n")
    (package / "a.py").write_text("def f():\n    from google.auth import default\n")
    (package / "b.py").write_text("from .backends.vertex import api\n")
    (package / "c.py").write_text("from google.colab import _message\nimport json\n")
    found = _google_imports(package)
    assert found == {"pkg.a": ["google.auth"], "pkg.b": ["pkg.backends.vertex.api"]}


LONGEST = 100
"""Most lines a function may span, its body and any class or function defined in it counted
(issue 47, "the house": long ones split at their natural steps)."""


def _long_functions(package: Path, base: Path = ROOT) -> list[str]:
    """``path:line name length`` (the path from ``base``) of each function, async ones too,
    longer than :data:`LONGEST` lines, from its ``def`` line to its last."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LONGEST:
                    found.append(f"{path.relative_to(base)}:{node.lineno} {node.name} {length}")
    return found


def test_no_function_is_over_100_lines() -> None:
    found = [
        where
        for package in ("tfc_jupyter", "runtime/tfc_runtime")
        for where in _long_functions(ROOT / package)
    ]
    assert found == [], "split these at their natural steps:\n" + "\n".join(found)


def test_the_long_function_finder_counts_nested_bodies(tmp_path: Path) -> None:
    """A class built inside a function counts in the function's length, as does an async def."""
    package = tmp_path / "pkg"
    package.mkdir()
    lines = [f"x{i} = {i}\n" for i in range(LONGEST)]
    inner = "".join(f"        {line}" for line in lines)
    awaited = "".join(f"    {line}" for line in lines)
    (package / "m.py").write_text(
        "def short():\n    return 1\n\n\n"
        f"def outer():\n    class Inner:\n{inner}    return Inner\n\n\n"
        f"async def waits():\n{awaited}"
    )
    assert _long_functions(package, tmp_path) == [
        f"pkg/m.py:5 outer {LONGEST + 3}",
        f"pkg/m.py:{LONGEST + 10} waits {LONGEST + 1}",
    ]
