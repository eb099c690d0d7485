"""The run cell's effects come back (issue 49), not only its bindings: objects it changed in
place that the notebook made before it (``df['b'] = ...``, ``lst.append``, ``d[k] = v``), names
it deleted (``del x``) and names a function it calls sets through ``global``; a name ``exec``
bound is named in one line. Here: the border admits such a name only where the notebook's own
code could bind it, whatever the job's manifest claims. The effects themselves, against Jupyter,
in a real kernel, through ``tfc-jupyter run`` and on docker: ``tests/test_three_ways.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfc_jupyter.returns import border
from tfc_jupyter.returns.returned import bring_back


def _job(home: Path, script: list[str], manifest: dict[str, Any]) -> Path:
    """A finished job's folder with this run cell (one line a cell, the last the run cell) and
    this manifest, as a job (or whoever can write its folder) may leave it."""
    job_dir = home / "jobs" / "job"
    (job_dir / "cell").mkdir(parents=True)
    where = [[c + 1, i + 1] for c, cell in enumerate(script) for i in range(cell.count("\n") + 1)]
    smap = {"version": 1, "notebook": "n.ipynb", "lines": where, "run_cell": len(script)}
    border.keep(home, "job", "\n".join(script) + "\n", json.dumps(smap))
    (job_dir / "cell" / "values.json").write_text(json.dumps({"version": 1, **manifest}))
    return job_dir


def test_a_changed_name_is_set_only_where_the_notebooks_code_binds_it(tmp_path: Path) -> None:
    script = ["df = 1", "def f():\n    global g\n    g = 2", "f()"]
    names = ("df", "g", "h", "get_ipython", "__builtins__")
    manifest = {
        "names": {n: {"kind": "value", "value": 7} for n in names},
        "changed": {n: "changed in place" for n in names},
        "deleted": ["df", "In", "mine", "get_ipython"],
    }
    job_dir = _job(tmp_path, script, manifest)
    namespace: dict[str, Any] = {"mine": "the kernel's", "In": [], "get_ipython": print}
    got = bring_back(job_dir, namespace)
    assert namespace == {"df": 7, "g": 7, "mine": "the kernel's", "In": [], "get_ipython": print}
    assert got.changed == {"df": "changed in place", "g": "changed in place"}
    assert set(got.skipped) == {"h", "get_ipython", "__builtins__"}
    assert got.skipped["h"] == "changed in place in the job by code the kernel cannot check"
    assert got.deleted == []  # df was set again: only a name the job lacks is deleted


@settings(max_examples=60, deadline=None)
@given(
    bound=st.lists(st.sampled_from("abcdef"), unique=True, max_size=4),
    claimed=st.dictionaries(
        st.sampled_from(["a", "b", "c", "d", "e", "f", "open", "exec", "In", "_x"]),
        st.sampled_from(["changed in place", "bound again", "bound", "forged"]),
        max_size=8,
    ),
    deleted=st.lists(st.sampled_from(["a", "b", "c", "open", "Out"]), unique=True, max_size=4),
)
def test_whatever_a_job_claims_it_changed_the_kernel_sets_only_its_notebooks_names(
    tmp_path_factory: pytest.TempPathFactory,
    bound: list[str],
    claimed: dict[str, str],
    deleted: list[str],
) -> None:
    home = tmp_path_factory.mktemp("home")
    script = [f"{n} = 0" for n in bound] + ["pass"]
    manifest = {
        "names": {n: {"kind": "value", "value": 1} for n in claimed},
        "changed": claimed,
        "deleted": deleted,
    }
    before = {n: "kernel" for n in ["a", "b", "c", "open", "Out", "In"]}
    namespace = dict(before)
    got = bring_back(_job(home, script, manifest), namespace)
    known = {"changed in place", "bound again", "bound"}
    settable = {n for n, what in claimed.items() if n in bound and what in known}
    assert {n for n, v in namespace.items() if before.get(n) != v} == settable
    assert set(got.deleted) <= set(bound) & set(deleted) - settable
    assert set(before) - set(namespace) == set(got.deleted)
    assert all(os.sep not in n for n in got.names)
