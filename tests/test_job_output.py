"""The run cell's own output of its job (issue 34): what the kernel displays at launch, the cell id
it takes from JupyterLab's request, and the job record that keeps it (the JupyterLab extension
renders the output and puts a notebook opened again back on its jobs: labextension/src/joboutput.ts,
tests/test_lab_ui.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tfc_jupyter.returns import cell
from tfc_jupyter.store.records import JobRecord


def test_the_job_output_names_the_job_and_how_to_follow_it_again() -> None:
    data = cell.job_output("nb-20261126-120000-a1b2c3")
    assert data[cell.JOB_MIME] == {"version": 1, "id": "nb-20261126-120000-a1b2c3"}
    assert cell.JOB_MIME == "application/vnd.tfc-jupyter.job+json"
    assert "%tfc_attach nb-20261126-120000-a1b2c3" in data["text/plain"]


class _Kernel:
    def __init__(self, parent: Any) -> None:
        self.parent = parent

    def get_parent(self, channel: str) -> Any:
        assert channel == "shell"
        if isinstance(self.parent, Exception):
            raise self.parent
        return self.parent


class _Shell:
    def __init__(self, parent: Any) -> None:
        self.kernel = _Kernel(parent)


@pytest.mark.parametrize(
    ("parent", "expected"),
    [
        ({"metadata": {"cellId": "5f0c-id"}, "content": {}}, "5f0c-id"),
        ({"metadata": {}}, None),  # nbclient, the classic Notebook
        ({"metadata": {"cellId": ""}}, None),
        ({"metadata": {"cellId": 7}}, None),
        ({"metadata": {"cellId": "x" * (20 << 20)}}, None),  # a client's 20 MB id is not kept
        ({"metadata": {"cellId": "a\x00b"}}, None),
        ({}, None),
        (RuntimeError("no kernel"), None),
    ],
)
def test_the_run_cell_id_comes_from_the_kernels_request(parent: Any, expected: Any) -> None:
    assert cell.run_cell_id(_Shell(parent)) == expected


def test_a_shell_without_a_kernel_has_no_cell_id() -> None:
    assert cell.run_cell_id(object()) is None


def test_a_job_record_keeps_its_cell_id() -> None:
    record = JobRecord(id="a", name="nb", backend="local", cell_id="5f0c-id")
    again = JobRecord.from_dict(record.to_dict())
    assert again.cell_id == "5f0c-id"
    assert JobRecord.from_dict({"id": "b", "name": "nb", "backend": "local"}).cell_id is None
    with pytest.raises(ValueError, match="cell_id"):
        JobRecord(id="c", name="nb", backend="local", cell_id=3)  # type: ignore[arg-type]
