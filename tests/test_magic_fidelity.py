"""IPython's magics that notebooks use and the pre-launch check refused (#49): each runs in the
job as IPython runs it, is turned into its plain-Python equivalent, or is left out with a note.
Every case runs three ways: in a real kernel (nbclient), the truth; as a local job with default
flags, planned as ``tfc-jupyter run`` plans it; and with its last cell a ``%%tfc_run`` cell in
a real kernel. What the code printed is the same, line for line (a magic left out prints nothing
in the job: its lines in Jupyter are listed as the magic's own), and the run cell shows what the
last cell shows in Jupyter."""

from __future__ import annotations

import os
from pathlib import Path

import nbclient
import nbformat
import pytest
from jobutil import JOB_DEADLINE_S, job_lines, plan_for, run_job, write_notebook
from test_fidelity import _NOISE, job_stdout, jupyter_stdout

from tfc_jupyter.store.records import JobState

CASES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # name: (cells, lines only Jupyter prints: the output of a magic the job leaves out)
    "reset": (
        ("a = 1\nb = 2", "%reset -f", "print('a' in globals(), 'b' in dir())\nc = 3", "print(c)"),
        (),
    ),
    "reset_selective": (
        (
            "ab = 1\nac = 2\nz = 3",
            "%reset_selective -f ^a",
            "print(sorted(n for n in ('ab', 'ac', 'z') if n in globals()))",
        ),
        (),
    ),
    "pushd_popd_dirs": (
        (
            "import os\nstart = os.getcwd()",
            "%pushd /tmp\nprint(os.getcwd())\nd = %dirs\nprint(len(d), d[0] == start)",
            "%popd\nprint(os.getcwd() == start)",
        ),
        (),
    ),
    "dhist": (("%cd /tmp", "%cd /", "%dhist"), ()),
    "bookmark": (
        (
            "import os\nstart = os.getcwd()\n%bookmark here",
            "%cd /tmp\n%cd -b here\nprint(os.getcwd() == start)",
        ),
        (),
    ),
    "less": (("open('f.txt', 'w').write('paged text')", "%less f.txt", "print('after')"), ()),
    "logstart": (
        ("%logstart -o tfc_input.log", "print('after')"),
        (
            "Activating auto-logging.",
            "Filename",
            "Mode",
            "Output logging",
            "Raw input log",
            "Timestamping",
            "State",
        ),
    ),
    "save": (
        ("x = 1", "%save -f saved.py 1", "print('after')"),
        ("The following commands were written to file", "x = 1"),
    ),
    "alias": (("%alias say echo %s-%s", "%say a b\nprint('after')"), ()),
    "sx": (("%%sx\necho from-sx", "print('after')"), ()),
    "bang_cell": (("%%!\necho from-bang", "print('after')"), ()),
    "await": (
        (
            "import asyncio\nawait asyncio.sleep(0)\nprint('awaited')",
            "async def three():\n    return 3\nprint(await three())",
        ),
        (),
    ),
    "who_ls": (
        (
            "alpha = 1\nbeta = 'b'\nimport os",
            "names = %who_ls\nprint(names)",
            "strs = %who_ls str\nprint(strs)",
        ),
        (),
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_magic_notebook_plans_and_prints_what_jupyter_prints(name: str, tmp_path: Path) -> None:
    cells, only_jupyter = CASES[name]
    path = write_notebook(tmp_path / f"{name}.ipynb", *cells)
    expected = [
        line
        for line in jupyter_stdout(path)
        if not line.strip().startswith(only_jupyter or ("\0",))
    ]
    plan = plan_for(path)  # no refusal: the pre-launch check takes what Jupyter runs
    _, record = run_job(path, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, record.error
    assert job_stdout(Path(record.job_dir)) == expected, plan.script.text


def _cell_lines(path: Path, env: dict[str, str]) -> list[list[str]]:
    """Run the notebook in a real kernel; the lines each cell printed to stdout."""
    nb = nbformat.read(path, as_version=4)
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel's environment (JPY_SESSION_NAME: the notebook's path)
    try:
        nbclient.NotebookClient(
            nb, timeout=JOB_DEADLINE_S, kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()  # fmt: skip
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return [
        [
            line
            for out in cell.get("outputs", [])
            if out.get("output_type") == "stream" and out.get("name") == "stdout"
            for line in out["text"].splitlines()
            if line.strip() and not _NOISE.match(line)
        ]
        for cell in nb.cells
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_magic_notebook_s_last_cell_as_a_run_cell_shows_what_jupyter_shows(
    name: str, tmp_path: Path
) -> None:
    cells, only_jupyter = CASES[name]
    plain = write_notebook(tmp_path / f"{name}-jupyter.ipynb", *cells)
    truth = [
        line
        for line in _cell_lines(plain, {})[-1]
        if not line.strip().startswith(only_jupyter or ("\0",))
    ]
    run = [*cells[:-1], f"%%tfc_run\n{cells[-1]}"]
    path = write_notebook(tmp_path / f"{name}.ipynb", "%load_ext tfc_jupyter", *run)
    env = {"JPY_SESSION_NAME": str(path), "TFC_JUPYTER_HOME": str(tmp_path / "home")}
    shown = _cell_lines(path, env)[-1]
    assert any("succeeded" in line for line in shown), shown
    assert job_lines(shown) == truth, shown  # as the cell's own prints: no [chief]
