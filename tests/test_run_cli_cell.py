"""``tfc-jupyter run`` shows and brings back what a notebook job makes, as a kernel would
(issue 49): the figures of a notebook without a run cell, where they are saved; the run cell's
files and deletions next to the notebook. Real local jobs through the installed command's
module (``python -m tfc_jupyter.cli``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobutil import JOB_DEADLINE_S, write_notebook

from tfc_jupyter.returns import border

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
    """As the kernel does at the end of the cell, and as a local job leaves them: the files it
    wrote, those it deleted, the links it made that point inside the folder."""
    for name in ("old.txt", "stays.txt"):
        (tmp_path / name).write_text(name)
        os.utime(tmp_path / name, (time.time() - 60, time.time() - 60))
    nb_path = write_notebook(
        tmp_path / "files.ipynb",
        "rows = [1, 2, 3]",
        f"%%tfc_run --strategy none --backend docker --parent-image {tf_parent_image} "
        "--include old.txt --include stays.txt\n"
        "import os\nos.makedirs('out', exist_ok=True)\n"
        "open('out/result.csv', 'w').write('a\\n' + '\\n'.join(map(str, rows)))\n"
        "os.remove('old.txt')\n"
        "os.symlink('out/result.csv', 'latest.csv')\n"
        "os.symlink('/etc/passwd', 'pw')\n"
        "os.symlink('../..', 'out/up')\n"
        "print('wrote', len(rows))",
    )
    done = _cli("run", str(nb_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[chief] wrote 3" in done.stdout, done.stdout
    assert (tmp_path / "out" / "result.csv").read_text() == "a\n1\n2\n3"
    said = [line for line in done.stderr.splitlines() if " next to the notebook: " in line]
    assert said == [
        "Files the cell wrote, next to the notebook: out/result.csv",
        "Deleted by the cell, next to the notebook: old.txt",
        "Links it made, next to the notebook: latest.csv -> out/result.csv",
    ], done.stderr
    assert not (tmp_path / "old.txt").exists() and (tmp_path / "stays.txt").read_text()
    assert os.readlink(tmp_path / "latest.csv") == "out/result.csv"
    assert (tmp_path / "latest.csv").read_text() == "a\n1\n2\n3"
    assert not os.path.lexists(tmp_path / "pw") and not os.path.lexists(tmp_path / "out" / "up")
    refused = next(line for line in done.stderr.splitlines() if line.startswith("! not copied"))
    assert "pw (a link to /etc/passwd, outside the notebook's folder: not made)" in refused
    assert "out/up (a link to ../.., outside the notebook's folder: not made)" in refused


_PIECES = st.sampled_from(["a", "b.txt", "..", ".", ".git", "nb.ipynb", "out", "/etc", "", "x"])


@settings(max_examples=150, deadline=None)
@given(
    links=st.dictionaries(st.lists(_PIECES, min_size=1, max_size=3).map("/".join),
                          st.lists(_PIECES, min_size=1, max_size=4).map("/".join), max_size=4),
    deleted=st.lists(st.lists(_PIECES, min_size=1, max_size=3).map("/".join), max_size=4),
)  # fmt: skip
def test_what_a_job_says_it_deleted_or_linked_stays_within_the_border(
    links: dict[str, str], deleted: list[str]
) -> None:
    """Whatever a job's ``files.json`` says: a link made next to the notebook points inside its
    folder and out of dot folders; nothing outside the folder, no dotfile, no notebook, no file
    changed since the job started is ever deleted."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        job, here, outside = base / "job", base / "nb", base / "outside.txt"
        (here / ".git").mkdir(parents=True)
        job.mkdir()
        for path in (here / "a", here / "b.txt", here / "x", here / ".git" / "a",
                     here / "nb.ipynb", outside):  # fmt: skip
            path.write_text("mine")
            os.utime(path, (100.0, 100.0))  # before the job started
        (here / "out").mkdir()
        (here / "out" / "x").write_text("changed while the job ran")
        (job / "files.json").write_text(json.dumps({"deleted": deleted, "links": links}))
        placed = border.Placed()
        border.apply_changes(job, here, 200.0, placed, here / "nb.ipynb")
        lines = placed.lines(1, 1, job / "files")
        assert outside.exists() and (here / ".git" / "a").exists() and (here / "nb.ipynb").exists()
        assert (here / "out" / "x").exists()
        below = [os.path.normpath(link) for link in links]
        for rel in placed.deleted:  # gone, unless the cell made a link there (or in it) after
            again = any(b == os.path.normpath(rel) or b.startswith(f"{rel}/") for b in below)
            assert rel in deleted and (again or not os.path.lexists(here / rel))
        root = here.resolve()
        for folder, dirs, files in os.walk(here):
            for path in (Path(folder, n) for n in [*dirs, *files]):
                if path.is_symlink():
                    to = Path(os.path.realpath(path))
                    assert to.is_relative_to(root), (path, lines)
                    assert not any(p.startswith(".") for p in path.relative_to(here).parts)
                    assert ".git" not in to.relative_to(root).parts
        made = {r.split(" -> ")[0] for r in placed.linked}
        for rel, to in links.items():  # each link made as the job made it, or said why not
            if rel in made:
                assert os.readlink(here / rel) == to
            else:
                assert rel in {r for r, _ in placed.refused} or os.path.islink(here / rel), rel


@pytest.mark.slow
def test_nbconvert_leaves_tfc_skip_cells_out_of_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nbconvert (and papermill) start the kernel without ``JPY_SESSION_NAME``: the notebook is
    the one of the kernel's folder holding the run cell, so its tags hold (a tfc-skip cell
    re-ran in the job: the input history has no tags)."""
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    path = write_notebook(
        tmp_path / "skips.ipynb",
        "%load_ext tfc_jupyter",
        "print('LOCAL ONLY')\nlocal_only = 1",
        "x = 2",
        "%%tfc_run --strategy none\nprint('seen:', sorted(k for k in ('x', 'local_only') "
        "if k in globals()))",
        tags={1: ["tfc-skip"]},
    )
    (tmp_path / "other.ipynb").write_text(path.read_text().replace("x = 2", "x = 3"))
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
         "--output", "executed-here.ipynb", str(path)],
        capture_output=True, text=True, timeout=JOB_DEADLINE_S, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    nb = nbformat.read(tmp_path / "executed-here.ipynb", as_version=4)
    said = "".join(o.get("text", "") for o in nb.cells[3].outputs if o.output_type == "stream")
    assert "\nseen: ['x']\n" in said, said  # as the cell's own print
    assert "LOCAL ONLY" not in said and "kernel history" not in said, said
    assert "skips.ipynb" in said, said  # the warning names the notebook it found


def test_of_several_notebooks_holding_the_cell_the_one_this_kernel_ran_is_taken(
    tmp_path: Path,
) -> None:
    """papermill: the input notebook and its output (with the injected parameters cell, which
    the kernel ran) both hold the run cell; the output is the job's, tags and all."""
    from tfc_jupyter.notebook import capture

    run = "%%tfc_run --strategy none\nprint(lr)"
    source = write_notebook(tmp_path / "in.ipynb", "lr = 0.1", run, tags={0: ["parameters"]})
    output = write_notebook(
        tmp_path / "out.ipynb", "lr = 0.1", "lr = 0.5", run,
        tags={0: ["parameters"], 1: ["injected-parameters"]},
    )  # fmt: skip
    os.utime(output, (time.time() - 60, time.time() - 60))  # older: the history decides
    history = ["lr = 0.1", "lr = 0.5"]
    found, notes = capture.folder_notebook([tmp_path], run, history)
    assert found == output.resolve() and "out.ipynb" in notes[0] and "of 2" in notes[0]
    assert capture.folder_notebook([tmp_path], run + "\n# edited", history) == (None, [])
    assert capture.folder_notebook([tmp_path / "nowhere"], run, history) == (None, [])
    assert source.exists()
