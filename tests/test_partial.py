"""A job that fails keeps what it made (issue 49): the names bound before the failing statement
come back to the kernel marked partial, and every notebook job leaves its executed notebook
(its cells, what each printed and showed, the error at the failing cell), read back through the
border. Real Keras jobs on the local backend: through ``tfc-jupyter run``, ``run()`` in a kernel
and ``%%tfc_run`` in a real kernel (nbclient)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobutil import JOB_DEADLINE_S, in_kernel, write_notebook

from tfc_jupyter.errors import ConfigError, JobNotFound
from tfc_jupyter.returns import border, executed
from tfc_jupyter.returns.returned import bring_back, kept_partial

DATA = """\
import numpy as np
import tensorflow as tf
rng = np.random.default_rng(0)
x = rng.normal(size=(200, 4)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
print("data", x.shape)"""
MODEL = """\
tf.keras.utils.set_random_seed(1)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="adam", loss="binary_crossentropy")"""
FIT = """\
history = model.fit(x, y, epochs=2, verbose=0)
final = model.evaluate(x, y, verbose=0)
print("fitted", history.epoch)"""
FAIL = """\
import sys
print("evaluating", file=sys.stderr)
steps = 3
scale = steps * 2
broken = int("not a number")
after = 1"""


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", *args],
        capture_output=True, text=True, timeout=JOB_DEADLINE_S, check=False, cwd=cwd,
    )  # fmt: skip


def _job_dir(job_id: str) -> Path:
    return Path(os.environ["TFC_JUPYTER_HOME"]) / "jobs" / job_id


def _check_executed(path: Path, failing_cell: int) -> Any:
    """The executed notebook at ``path``: valid nbformat, the cells' outputs, the error at
    ``failing_cell`` (its position among the job's cells, 0-based)."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    streams = {
        i: "".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")
        for i, c in enumerate(nb.cells)
    }
    errors = [(i, o) for i, c in enumerate(nb.cells) for o in c.outputs if o.output_type == "error"]
    assert len(errors) == 1, errors
    at, error = errors[0]
    assert at == failing_cell and error.ename == "ValueError", error
    assert "not a number" in error.evalue and any("broken = int(" in t for t in error.traceback)
    assert "evaluating" in streams[failing_cell]
    assert [c.execution_count for c in nb.cells[: failing_cell + 1]] == list(
        range(1, failing_cell + 2)
    )
    return nb, streams


@pytest.mark.slow
def test_a_failed_notebook_job_keeps_its_names_and_leaves_its_executed_notebook(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb_path = write_notebook(tmp_path / "train.ipynb", DATA, MODEL, FIT, FAIL)
    done = _cli("run", str(nb_path), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    job_id = next(w for w in done.stderr.split() if w.startswith("train-")).rstrip(":")
    kept = next(line for line in done.stderr.splitlines() if line.startswith("Kept in the job"))
    assert kept.startswith("Kept in the job (partial, up to cell 4 line 5): "), kept
    assert {"model", "history", "final", "steps", "scale"} <= set(
        kept.split(": ", 1)[1].split(";")[0].split(", ")
    ), kept
    assert "broken" not in kept and "after" not in kept
    # The executed notebook: next to the notebook, valid, the error at cell 4.
    wrote = _cli("notebook", job_id, cwd=tmp_path)
    assert wrote.returncode == 0, wrote.stderr
    out = tmp_path / "train.executed.ipynb"
    assert wrote.stdout.strip() == str(out)
    _, streams = _check_executed(out, 3)
    assert "data (200, 4)" in streams[0] and "fitted [0, 1]" in streams[2]
    again = _cli("notebook", job_id, cwd=tmp_path)  # never over a file without --force
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1
    assert "exists already. Fix: pass --force to replace it, or pass --output PATH" in again.stderr
    assert _cli("notebook", job_id, "--force", cwd=tmp_path).returncode == 0
    own = _cli("notebook", job_id, "-o", str(nb_path), "--force", cwd=tmp_path)
    assert own.returncode == 2 and "the job's own notebook" in own.stderr
    assert nbformat.read(nb_path, as_version=4).cells[3].outputs == []  # never written over
    # In a kernel, the names come back: the trained model and its history.
    namespace: dict[str, Any] = {}
    got = bring_back(_job_dir(job_id), namespace, partial=True)
    assert got.line().startswith("back in the kernel (partial, up to cell 4 line 5): "), got
    assert type(namespace["history"]).__name__ == "History"
    assert namespace["history"].model is namespace["model"]
    now = namespace["model"].evaluate(namespace["x"], namespace["y"], verbose=0)
    assert abs(now - namespace["final"]) < 1e-4
    assert namespace["scale"] == 6 and "broken" not in namespace and "after" not in namespace
    assert bring_back(_job_dir(job_id), {}).names == []  # never as a job that ended well


@pytest.mark.slow
def test_run_in_a_kernel_brings_a_failed_jobs_names_back(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.testing import globalipapp
    from IPython.utils.capture import capture_output

    nb_path = write_notebook(tmp_path / "train.ipynb", DATA, MODEL, FIT, FAIL)
    monkeypatch.chdir(tmp_path)
    globalipapp.start_ipython()
    ip = globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "tfc_jupyter")
    for name in ("model", "history"):
        ip.user_ns.pop(name, None)
    import tfc_jupyter

    with capture_output() as cap:
        result = tfc_jupyter.run(entry_point=str(nb_path), wait=True)
    assert "Back in the kernel (partial, up to cell 4 line 5): " in cap.stdout, cap.stdout
    assert type(ip.user_ns["history"]).__name__ == "History"
    assert type(ip.user_ns["model"]).__name__ == "Sequential"
    assert ip.user_ns["history"].epoch == [0, 1] and "broken" not in ip.user_ns
    _check_executed(_job_dir(result["job_id"]) / "executed.ipynb", 3)


RUN = f"%%tfc_run\n{FIT}\nbroken = int('not a number')"
CHECK = """\
print("CHECK", json.dumps({"history": type(history).__name__, "epoch": history.epoch,
      "same": abs(model.evaluate(x, y, verbose=0) - final) < 1e-4}))"""


@pytest.mark.slow
def test_a_failed_run_cell_brings_its_names_back_in_a_real_kernel(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_notebook(
        tmp_path / "cell.ipynb", "%load_ext tfc_jupyter\nimport json", DATA, MODEL, RUN, CHECK
    )
    nb = in_kernel(path)
    run, check = nb.cells[3], nb.cells[4]
    said = "".join(o.get("text", "") for o in run.outputs if o.output_type == "stream")
    assert "Back in the kernel (partial, up to cell 4 line 5): model, history, final." in said
    (error,) = [o for o in run.outputs if o.output_type == "error"]  # the cell still fails
    assert "not a number" in error.evalue
    text = "".join(o.get("text", "") for o in check.outputs if o.output_type == "stream")
    got = json.loads(text.split("CHECK ", 1)[1].splitlines()[0])
    assert got == {"history": "History", "epoch": [0, 1], "same": True}, text
    (job_dir,) = (Path(os.environ["TFC_JUPYTER_HOME"]) / "jobs").iterdir()
    executed_nb = executed.read(job_dir)
    nbformat.validate(executed_nb)
    (err,) = [o for c in executed_nb.cells for o in c.outputs if o.output_type == "error"]
    assert executed_nb.cells[-1].source.startswith("%%tfc_run") and err.ename == "ValueError"
    assert err in executed_nb.cells[-1].outputs


# -- the border: what is admitted, by the kernel's own copy ----------------------------------


def _kept(home: Path, job_id: str, lines: list[str], run_cell: int | None, per: int = 1) -> None:
    """A job home's kept copy of a job of these lines, ``per`` lines a cell."""
    where = [[i // per + 1, i % per + 1] for i in range(len(lines))]
    smap: dict[str, Any] = {"version": 1, "notebook": "n.ipynb", "lines": where}
    if run_cell is not None:
        smap["run_cell"] = run_cell
    border.keep(home, job_id, "\n".join(lines) + "\n", json.dumps(smap))


@settings(max_examples=80, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=12),
    per=st.integers(min_value=1, max_value=3),
    data=st.data(),
    run=st.booleans(),
)
def test_only_names_bound_before_the_failing_statement_are_admitted(
    tmp_path_factory: pytest.TempPathFactory, count: int, per: int, data: Any, run: bool
) -> None:
    home = tmp_path_factory.mktemp("home")
    lines = [f"v{i} = {i}" for i in range(count)]
    failing = data.draw(st.integers(min_value=1, max_value=count))  # 1-based script line
    cell_of = [i // per + 1 for i in range(count)]
    run_cell = data.draw(st.sampled_from(cell_of)) if run else None
    _kept(home, "job", lines, run_cell, per)
    found = border.KernelCell.kept_before(home, "job", failing)
    expected = [
        f"v{i}"
        for i in range(failing - 1)
        if run_cell is None or (cell_of[i] == run_cell == cell_of[failing - 1])
    ]
    if not expected:
        assert found is None
        return
    assert found is not None
    cell, place = found
    at = failing - 1
    assert cell.binds() == expected and place == f"cell {cell_of[at]}, line {at % per + 1}"


def test_a_partial_manifest_names_only_what_the_kernels_copy_admits(tmp_path: Path) -> None:
    home = tmp_path
    job_dir = home / "jobs" / "job"
    (job_dir / "cell").mkdir(parents=True)
    _kept(home, "job", ["a = 1", "b = 2", "c = int('x')"], None)
    manifest = {
        "version": 1,
        "names": {n: {"kind": "value", "value": 7} for n in ("a", "b", "c", "get_ipython")},
        "partial": {"script_line": 3, "cell": 3, "line": 1, "place": "<b>forged</b>"},
    }
    (job_dir / "cell" / "values.json").write_text(json.dumps(manifest))
    assert kept_partial(job_dir) == "Kept in the job (partial, up to cell 3 line 1): a, b"
    namespace: dict[str, Any] = {}
    assert bring_back(job_dir, namespace).names == []  # a job that ended well reads no partial
    got = bring_back(job_dir, namespace, partial=True)
    assert namespace == {"a": 7, "b": 7} and got.partial == "cell 3, line 1"
    manifest.pop("partial")  # a job that ended well is never read as a failed one's
    (job_dir / "cell" / "values.json").write_text(json.dumps(manifest))
    assert bring_back(job_dir, {}, partial=True).names == []


def _executed_folder(tmp_path: Path, nb: Any) -> Path:
    folder = tmp_path / "jobs" / "job"
    folder.mkdir(parents=True)
    (folder / "executed.ipynb").write_text(json.dumps(nb))
    return folder


def test_an_executed_notebook_is_read_through_the_border(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("display(HTML(...))")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"text/html": "<b>hi</b><script>alert(1)</script>", "text/plain": "hi"},
        )
    ]
    nb.cells.append(cell)
    folder = _executed_folder(tmp_path, nb)
    got = executed.read(folder)
    html = got.cells[0].outputs[0].data["text/html"]
    assert "<b>hi</b>" in html and "script" not in html
    (folder / "executed.ipynb").write_text(json.dumps({"cells": "no", "nbformat": 4}))
    with pytest.raises(ConfigError, match="not valid nbformat"):
        executed.read(folder)
    (folder / "executed.ipynb").unlink()
    (folder / "executed.ipynb").symlink_to(tmp_path / "elsewhere.ipynb")
    (tmp_path / "elsewhere.ipynb").write_text(json.dumps(nb))
    with pytest.raises(ConfigError, match="is not read"):
        executed.read(folder)
    (folder / "executed.ipynb").unlink()
    with pytest.raises(JobNotFound, match="left no executed notebook"):
        executed.read(folder)


def test_the_runtime_keeps_each_cells_streams_and_bounds_them() -> None:
    from tfc_runtime import executed as book

    saved = sys.stdout, sys.stderr
    try:
        book.install(((1, "print(1)"), (3, "print(3)")), "n.ipynb", chief=True)
        book.enter(1)
        print("one")
        print("err", file=sys.stderr)
        book.enter(3)
        sys.stdout.write("x" * (book.MAX_CELL_TEXT + 10))
        book.error(ValueError("v"), 3, "Traceback\nValueError: v")
        nb = nbformat.from_dict(book.notebook())
    finally:
        sys.stdout, sys.stderr = saved
        book._book = None
    nbformat.validate(nb)
    first, third = nb.cells
    assert [(o.name, o.text) for o in first.outputs] == [("stdout", "one\n"), ("stderr", "err\n")]
    kept = third.outputs[0].text
    assert len(kept) < book.MAX_CELL_TEXT + 100 and kept.endswith(book.CUT)
    assert third.outputs[-1].output_type == "error" and third.execution_count == 2


def test_partial_names_is_a_setting_with_one_line_errors() -> None:
    from tfc_jupyter.config import load_settings
    from tfc_jupyter.errors import SpecError

    env = {"TFC_PARTIAL_NAMES": "off"}
    assert load_settings(environ=env, include_server=False).get("partial_names") is False
    assert load_settings(environ={}, include_server=False).get("partial_names") is True
    with pytest.raises(SpecError, match=r"neither on nor off\. Fix: set it to true or false"):
        load_settings(environ={"TFC_PARTIAL_NAMES": "maybe"}, include_server=False)
