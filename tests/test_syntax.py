"""One parse of a job's script, shared by planning's readers and forgotten when it ends."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest
from jobutil import write_notebook

from tfc_jupyter.client import Client
from tfc_jupyter.notebook import syntax


def test_the_same_text_is_parsed_once_and_a_new_one_replaces_it() -> None:
    first = syntax.parsed("x = 1\nprint(x)\n")
    assert syntax.parsed("x = 1\nprint(x)\n") is first
    assert first.nodes == tuple(ast.walk(first.tree)) and first.nodes is first.nodes
    other = syntax.parse("y = 2\n")
    assert isinstance(other, ast.Module) and syntax.parsed("x = 1\nprint(x)\n") is not first
    syntax.forget()
    assert syntax._last == []


def test_a_syntax_error_reaches_every_caller_and_is_not_kept() -> None:
    syntax.parsed("x = 1\n")
    for _ in range(2):
        with pytest.raises(SyntaxError):
            syntax.parse("x = (\n")
    assert syntax._last == []  # the old tree went before the new text was tried


def test_readers_in_threads_each_get_their_own_texts_tree() -> None:
    texts = [f"v{i} = {i}\n" * 50 for i in range(8)]
    seen: dict[int, str] = {}

    def read(i: int) -> None:
        for _ in range(50):
            tree = syntax.parse(texts[i])
            target = tree.body[0].targets[0]  # type: ignore[attr-defined]
            seen[i] = target.id

    threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert seen == {i: f"v{i}" for i in range(8)}


def test_planning_leaves_no_tree_behind(tmp_path: Path, tfc_env: Path) -> None:
    """A kernel that planned a big script keeps no tree of it."""
    nb = tmp_path / "big.ipynb"
    write_notebook(nb, "\n".join(f"v{i} = {i}" for i in range(2000)), "print(v1999)")
    plan = Client().plan_file(nb)
    assert plan.script.text.count("\nv") >= 1999
    assert syntax._last == []
