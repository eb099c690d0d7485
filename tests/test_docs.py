"""The docs: the site in ``docs/`` builds with no warning, the folder map matches the trees, and
the README and CONTRIBUTING stay short and point at pages that exist.

The site is Sphinx + MyST (``docs/conf.py``). Built with ``-W``, every warning fails it: a link
to a page or a heading anchor that does not exist (``myst.xref_missing``), a page left out of
every toctree, a missing image. Nothing is fetched: ``linkcheck`` is not run (no network), the
links inside the site are what ``-W`` checks.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

TREES = ("tfc_jupyter", "runtime/tfc_runtime", "labextension/src")
"""The trees the folder map in ``docs/architecture.md`` covers."""
MODULE_SUFFIXES = (".py", ".ts", ".tsx")
SKIPPED_DIRS = {"__pycache__", "node_modules"}
BUILT = {"tfc_jupyter/labextension"}
"""The JupyterLab extension as the package build compiles it (git-ignored), not a source."""
LEAVES = {"labextension/src/__tests__"}
"""Folders listed in the map whose files need not be (the extension's jest tests)."""


def _tree_entries() -> set[str]:
    """Every folder and module of :data:`TREES`, as paths from the repository root (folders
    with a trailing ``/``), read from the disk now: modules move, the map must follow."""
    entries: set[str] = set()
    for tree in TREES:
        for folder, dirs, files in os.walk(ROOT / tree):
            rel = Path(folder).relative_to(ROOT).as_posix()
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and f"{rel}/{d}" not in BUILT)
            if rel != tree:
                entries.add(rel + "/")
            if rel in LEAVES:
                dirs[:] = []
                continue
            entries.update(
                f"{rel}/{name}"
                for name in files
                if name.endswith(MODULE_SUFFIXES) and name != "__init__.py"
            )
    return entries


def _map_entries() -> list[str]:
    """The paths the folder map lists: the first code span of each list item of its trees."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    _, found, folder_map = text.partition("\n## The folder map\n")
    assert found, "docs/architecture.md has no '## The folder map' section"
    listed = re.findall(r"^\s*[-*] `([^`]+)`", folder_map, flags=re.MULTILINE)
    return [p for p in listed if p.startswith(tuple(t + "/" for t in TREES))]


def test_the_folder_map_lists_every_module_and_folder_and_nothing_else() -> None:
    listed = _map_entries()
    assert len(listed) == len(set(listed)), sorted({p for p in listed if listed.count(p) > 1})
    missing = sorted(_tree_entries() - set(listed))
    assert not missing, f"add a line for each to docs/architecture.md's folder map: {missing}"
    gone = sorted(
        p for p in listed if not (ROOT / p).exists() or p.endswith("/") != (ROOT / p).is_dir()
    )
    assert not gone, f"docs/architecture.md's folder map lists what is not in the tree: {gone}"


def test_the_folder_map_reads_the_trees() -> None:
    """The check is alive: it sees the modules and folders of each tree."""
    entries = _tree_entries()
    for expected in (
        "tfc_jupyter/magics.py",
        "tfc_jupyter/backends/",
        "runtime/tfc_runtime/protocol.py",
        "labextension/src/index.ts",
        "labextension/src/components/",
    ):
        assert expected in entries
    assert not [e for e in entries if "__pycache__" in e or e.startswith("tfc_jupyter/labext")]


def _relative_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    return [link for link in links if not re.match(r"[a-z]+:", link)]


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md"])
def test_the_readme_and_contributing_link_to_files_that_exist(name: str) -> None:
    """Their links are relative to the repository root (GitHub shows them there); a link into
    a docs page's heading names a heading of that page (CONTRIBUTING's are also checked by the
    docs build, which includes it)."""
    broken = []
    for link in _relative_links(ROOT / name):
        target, _, anchor = link.partition("#")
        if target and not (ROOT / target).exists():
            broken.append(link)
        elif anchor and target.endswith(".md"):
            page = (ROOT / target if target else ROOT / name).read_text(encoding="utf-8")
            slugs = {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", page, flags=re.MULTILINE)}
            if anchor not in slugs:
                broken.append(link)
    assert not broken, f"{name}: {broken}"


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and MyST (``myst_heading_anchors``) make it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_readme_is_short_and_points_at_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    linked = {link.partition("#")[0] for link in _relative_links(ROOT / "README.md")}
    # docs/contributing.md is CONTRIBUTING.md, included: the README links that.
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")} - {"docs/contributing.md"}
    assert "CONTRIBUTING.md" in linked
    assert not pages - linked, f"README.md links none of {sorted(pages - linked)}"


def test_the_two_commands_are_in_the_readme_and_contributing() -> None:
    for name in ("README.md", "CONTRIBUTING.md", "docs/install.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        assert "bash scripts/quickstart.sh" in text, name
        assert "bash scripts/test.sh" in text, name
    for script in ("quickstart.sh", "test.sh"):
        assert (ROOT / "scripts" / script).is_file()


def test_the_docs_build_with_no_warning(tmp_path: Path) -> None:
    """``sphinx -W --keep-going -b html docs``: a warning (a broken link or anchor inside the
    site, a page in no toctree, a missing picture) fails the build and this test."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"),
            *("-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-8000:]
    assert not done.stderr.strip(), done.stderr[-8000:]
    for page in DOCS.glob("*.md"):
        assert (tmp_path / "html" / page.with_suffix(".html").name).is_file(), page.name
    for picture in ("panel.png", "sidebar.png"):
        assert (tmp_path / "html" / "_images" / picture).is_file(), picture
