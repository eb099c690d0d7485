"""``tfc-jupyter run`` shows and brings back what a notebook job makes, as a kernel would
(issue 49): the figures of a notebook without a run cell, where they are saved; the run cell's
files and deletions next to the notebook. Real local jobs through the installed command's
module (``python -m tfc_jupyter.cli``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jobutil import JOB_DEADLINE_S, write_notebook

pytestmark = pytest.mark.usefixtures("tfc_env")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", *args],
        capture_output=True, text=True, timeout=JOB_DEADLINE_S, check=False, cwd=cwd,
    )  # fmt: skip


def _job_dir(stderr: str) -> Path:
    job_id = next(w for w in stderr.split() if w.startswith("plots-") or w.startswith("files-"))
    return Path(os.environ["TFC_JUPYTER_HOME"]) / "jobs" / job_id.rstrip(":")


def test_a_notebook_without_a_run_cell_saves_its_figures_and_says_where(tmp_path: Path) -> None:
    nb_path = write_notebook(
        tmp_path / "plots.ipynb",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nprint('after show')",
        "plt.figure()\nplt.bar([1, 2], [3, 4])",  # left open at the cell's end: shown, as inline
        "plt.plot([0, 1])\nplt.close('all')\nprint('closed')",  # closed: nothing to show
    )
    done = _cli("run", str(nb_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    job_dir = _job_dir(done.stderr)
    saved = [line for line in done.stdout.splitlines() if "(saved: " in line]
    assert len(saved) == 2, done.stdout
    paths = [Path(line.rsplit("(saved: ", 1)[1].rstrip(")")) for line in saved]
    assert paths == [job_dir / "outputs" / "1.png", job_dir / "outputs" / "2.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in paths)
    assert "<Figure size" in saved[0]
    nb = nbformat.read(job_dir / "executed.ipynb", as_version=4)
    nbformat.validate(nb)
    kinds = [[o.output_type for o in c.outputs] for c in nb.cells]
    assert kinds == [["display_data", "stream"], ["display_data"], ["stream"]], kinds
    assert nb.cells[0].outputs[0].data["image/png"].startswith("iVBORw0KGgo")
    said = f"Executed notebook: {job_dir / 'executed.ipynb'} (next to the notebook: "
    assert f"{said}tfc-jupyter notebook {job_dir.name})" in done.stderr


@pytest.mark.slow
def test_a_docker_run_cell_s_files_come_next_to_the_notebook(
    tmp_path: Path, docker_client: Any, tf_parent_image: str
) -> None:
    """As the kernel does at the end of the cell, and as a local job leaves them."""
    nb_path = write_notebook(
        tmp_path / "files.ipynb",
        "rows = [1, 2, 3]",
        f"%%tfc_run --strategy none --backend docker --parent-image {tf_parent_image}\n"
        "import os\nos.makedirs('out', exist_ok=True)\n"
        "open('out/result.csv', 'w').write('a\\n' + '\\n'.join(map(str, rows)))\n"
        "print('wrote', len(rows))",
    )
    done = _cli("run", str(nb_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[chief] wrote 3" in done.stdout, done.stdout
    assert (tmp_path / "out" / "result.csv").read_text() == "a\n1\n2\n3"
    said = [line for line in done.stderr.splitlines() if line.startswith("Files the cell")]
    assert said == ["Files the cell wrote, next to the notebook: out/result.csv"], done.stderr
