"""The job runs what the kernel ran: cells above ``%%tfc_run`` as they last ran, by cell id.

The real thing first: a kernel driven over jupyter_client with execute requests carrying
``metadata.cellId``, as JupyterLab sends them; then ``capture.select_cells`` given a record.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tfc_jupyter.notebook import capture
from tfc_jupyter.notebook.executed import Executed, Ran

pytestmark = pytest.mark.usefixtures("tfc_env")

DEADLINE = 60.0


def _notebook(path: Path, cells: list[tuple[str, str]]) -> Path:
    """A v4.5 notebook of code cells ``(id, source)``, as JupyterLab saves it."""
    meta = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": cell_id,
                "metadata": {},
                "outputs": [],
                "source": source.splitlines(keepends=True),
            }
            for cell_id, source in cells
        ],
        "metadata": meta,
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return path


class Kernel:
    """A kernel over jupyter_client; :meth:`run` sends a cell as JupyterLab does."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def run(self, code: str, cell_id: str | None = None) -> str:
        """Execute ``code`` (with ``metadata.cellId``), return what it printed and displayed."""
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        metadata = {"cellId": cell_id} if cell_id else {}
        msg = self.client.session.msg("execute_request", content, metadata=metadata)
        self.client.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        out: list[str] = []
        end = time.monotonic() + DEADLINE
        while True:
            reply = self.client.get_iopub_msg(timeout=max(end - time.monotonic(), 0.1))
            if reply["parent_header"].get("msg_id") != msg_id:
                continue
            kind, body = reply["msg_type"], reply["content"]
            if kind == "error":
                raise AssertionError(f"{code!r} failed: {body['ename']}: {body['evalue']}")
            if kind == "stream":
                out.append(body["text"])
            if kind in ("display_data", "execute_result"):
                out.append(body["data"].get("text/plain", ""))
            if kind == "status" and body["execution_state"] == "idle":
                return "".join(out)


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    """A fresh kernel in ``tmp_path`` whose notebook is ``tmp_path/train.ipynb``."""
    from jupyter_client.manager import KernelManager

    env = dict(os.environ)  # tfc_env cleared TFC_*/JPY_* and gave a private tfc home
    env["JPY_SESSION_NAME"] = str(tmp_path / "train.ipynb")
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env=env, cwd=str(tmp_path))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=DEADLINE)
        yield Kernel(client)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _script(plan_text: str) -> str:
    return plan_text.split("--- script.py ---")[1].split("\n--- ")[0]


RUN = "%%tfc_run --dry-run\nprint(n, m)"


def test_the_job_runs_the_cells_as_the_kernel_ran_them(kernel: Kernel, tmp_path: Path) -> None:
    nb = _notebook(
        tmp_path / "train.ipynb",
        [
            ("load", "%load_ext tfc_jupyter"),
            ("data", "n = 2000"),
            ("model", "m = n * 2"),
            ("run", RUN),
        ],
    )
    kernel.run("%load_ext tfc_jupyter", "load")
    kernel.run("n = 500", "data")  # edited and run, not saved
    kernel.run("m = n * 2", "model")
    kernel.run("extra = 1", "added")  # a cell added and run, not saved
    text = kernel.run(RUN, "run")
    script = _script(text)
    assert "n = 500" in script and "n = 2000" not in script
    assert "m = n * 2" in script and "extra" not in script
    lines = [line for line in text.splitlines() if line.startswith("! ")]
    assert len(lines) == 2, text
    assert lines[0].startswith("! cell 2 ran (In [2] at ")
    assert "as edited after the notebook was saved (" in lines[0]
    assert lines[0].endswith("the job uses the code as it ran")
    assert lines[1].startswith("! In [4] ran in this kernel after train.ipynb was saved (")
    assert "from cells it does not hold (added since the save?): the job leaves them out" in text
    assert "has not run" not in text and "are as saved" not in text

    # saved after it ran, with other code; a new cell above the run cell that never ran
    _notebook(
        nb,
        [
            ("load", "%load_ext tfc_jupyter"),
            ("data", "n = 3000"),
            ("model", "m = n * 2"),
            ("new", "k = 7"),
            ("run", RUN),
        ],
    )
    later = time.time() + 5
    os.utime(nb, (later, later))
    text = kernel.run(RUN, "run")
    script = _script(text)
    assert "n = 500" in script and "n = 3000" not in script and "k = 7" in script
    assert "! cell 2 was changed after it last ran (In [2] at " in text
    assert "the job uses the code as it ran. Run the cell to use the change." in text
    assert "! cell 4 has not run in this kernel: the job uses it as saved" in text
    assert "cell 3" not in text.split("--- script.py ---")[0]  # ran as saved: not named

    # a notebook whose cell ids this kernel never saw: as saved, one note
    other = _notebook(tmp_path / "other.ipynb", [("x1", "n = 1"), ("x2", "m = 2"), ("x3", RUN)])
    text = kernel.run(RUN.replace("--dry-run", f"--dry-run --notebook {other}"), "run")
    assert "n = 1" in _script(text) and "! cell" not in text
    assert text.count("note: the cells above the %%tfc_run cell are as saved in other.ipynb") == 1


# ---------------------------------------------------------------- select_cells with a record
def _nb(cells: list[tuple[str | None, str]]) -> Any:
    return capture.parse_notebook(
        json.dumps(
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "metadata": {},
                "cells": [
                    {"cell_type": "code", "source": src, "metadata": {}}
                    | ({"id": cid} if cid else {})
                    for cid, src in cells
                ],
            }
        )
    )


def _select(nb: Any, executed: Executed | None, path: Path | None = None) -> capture.Selection:
    return capture.select_cells(
        nb, path=path, how="test", magic_line="", body="print(n)", executed=executed
    )


def test_select_cells_takes_the_cells_above_as_run() -> None:
    nb = _nb([("a", "n = 2"), ("b", "# skip\nx = 1"), ("c", "y = 1"), ("r", "%%tfc_run\nprint(n)")])
    nb.cells[1]["metadata"]["tags"] = ["tfc-skip"]
    ran = {
        "a": Ran("n = 3  \n", 4, 100.0),
        "b": Ran("x = 2", 5, 100.0),
        "r": Ran("%%tfc_run\nprint(n)", 6, 100.0),
    }
    sel = _select(nb, Executed(ran, history=["y = 1"], loaded_at=3))
    assert [(c.index, c.source) for c in sel.cells] == [
        (1, "n = 3  \n"),
        (3, "y = 1"),  # not recorded, but in In[] as saved: no warning
        (4, "%%tfc_run\nprint(n)"),
    ]
    assert sel.skipped == [2]
    (warning,) = sel.warnings
    assert warning.startswith("cell 1 ran (In [4] at ")
    assert warning.endswith(
        ") as edited after the notebook was saved: the job uses the code as it ran"
    )
    assert not sel.notes


def test_select_cells_names_cells_that_never_ran_since_loaded() -> None:
    nb = _nb([("a", "n = 2"), ("c", "y = 1"), ("r", "%%tfc_run\nprint(n)")])
    sel = _select(nb, Executed({"r": Ran("%%tfc_run\nprint(n)", 9, 1.0)}, loaded_at=5))
    assert sel.warnings == [
        "cell 1 has not run in this kernel since tfc_jupyter was loaded (In [5]): the job "
        "uses it as saved",
        "cell 2 has not run in this kernel since tfc_jupyter was loaded (In [5]): the job "
        "uses it as saved",
    ]
    assert [c.source for c in sel.cells][:2] == ["n = 2", "y = 1"]


def test_select_cells_without_known_ids_uses_the_saved_cells_and_notes_it() -> None:
    for nb, ran in (
        (_nb([(None, "n = 2"), (None, "%%tfc_run\nprint(n)")]), {}),  # nbformat 4.4: no ids
        (_nb([("a", "n = 2"), ("r", "%%tfc_run\nprint(n)")]), {"vscode-cell:1": Ran("n", 1, 1)}),
    ):
        sel = _select(nb, Executed(ran))
        assert sel.cells[0].source == "n = 2" and not sel.warnings
        assert len(sel.notes) == 1 and "as saved in the notebook" in sel.notes[0]


def test_a_cell_that_last_ran_as_a_run_cell_is_left_out() -> None:
    nb = _nb([("a", "n = 2"), ("b", "z = 1"), ("r", "%%tfc_run\nprint(n)")])
    ran = {"a": Ran("n = 2", 1, 1.0), "b": Ran("%%tfc_run\nz = 1", 2, 1.0)}
    sel = _select(nb, Executed(ran))
    assert [c.index for c in sel.cells] == [1, 3]
    assert sel.warnings and "last ran (In [2] at " in sel.warnings[0]
    assert "as a %%tfc_run cell: the job leaves it out" in sel.warnings[0]


def test_the_cli_and_server_path_is_unchanged(train_nb: Path) -> None:
    nb = capture.read_notebook(train_nb)
    before = capture.select_cells(nb, path=train_nb, how="test")
    assert not before.notes
