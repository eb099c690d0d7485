"""The run cell's effects come back (issue 49), not only its bindings: objects it changed in
place that the notebook made before it (``df['b'] = ...``, ``lst.append``, ``d[k] = v``), names
it deleted (``del x``) and names a function it calls sets through ``global``; a name ``exec``
bound is named in one line. Jupyter is the truth: the same notebook runs in a real kernel as
written, and with its run cell as a ``%%tfc_run`` job; the next cell reads the same values.
The border admits such a name only where the notebook's own code could bind it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobutil import in_kernel, streamed, write_notebook

from tfc_jupyter.returns import border
from tfc_jupyter.returns.returned import bring_back

SETUP = """\
import json
import pandas as pd
df = pd.DataFrame({"a": [1, 2, 3]})
lst = [1]
d = {"k": 1}
x = 5
kept = "unchanged"
def set_g():
    global g
    g = "set by a call"
"""
CELL = """\
df["b"] = df["a"] * 10
lst.append(2)
d["q"] = [1.5, None]
del x
set_g()
exec("z = 3")
print("ran")"""
CHECK = """\
print("CHECK", json.dumps({
    "df": df.to_dict(orient="list"), "lst": lst, "d": d, "x": "x" in globals(),
    "g": globals().get("g"), "kept": kept, "z": globals().get("z")}))"""


def _checked(cell: Any) -> dict[str, Any]:
    text = streamed(cell)
    assert "CHECK " in text, cell.outputs
    return dict(json.loads(text.split("CHECK ", 1)[1].splitlines()[0]))


@pytest.mark.slow
def test_what_the_run_cell_changed_is_in_the_kernel_as_in_jupyter(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _changed_as_in_jupyter(tmp_path, monkeypatch, "")


@pytest.mark.slow
def test_what_the_run_cell_changed_in_a_container_is_in_the_kernel_as_in_jupyter(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch, tf_parent_image: str
) -> None:
    _changed_as_in_jupyter(
        tmp_path, monkeypatch, f" --backend docker --parent-image {tf_parent_image}"
    )


def _changed_as_in_jupyter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str) -> None:
    jupyter = in_kernel(
        write_notebook(tmp_path / "jupyter.ipynb", SETUP, CELL, CHECK)
    )  # the truth: the cell run in the kernel
    truth = _checked(jupyter.cells[2])
    assert truth["df"]["b"] == [10, 20, 30] and truth["x"] is False and truth["z"] == 3
    path = write_notebook(
        tmp_path / "job.ipynb", "%load_ext tfc_jupyter", SETUP, f"%%tfc_run{flags}\n{CELL}", CHECK
    )
    nb = in_kernel(path)
    said = streamed(nb.cells[2])
    assert not [o for o in nb.cells[2].outputs if o.output_type == "error"], nb.cells[2].outputs
    back = said.split("Back in the kernel: ", 1)[1].split("\n", 1)[0]
    for part in ("df (changed in place)", "lst (changed in place)", "d (changed in place)"):
        assert part in back, said
    assert "g (bound)" in back and "deleted by the cell: x" in back, said
    assert "z (bound in the job by code the kernel cannot check)" in back, said
    got = _checked(nb.cells[3])
    assert got == {**truth, "z": None}, (got, truth)  # exec's name is said, not set


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
