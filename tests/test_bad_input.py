"""Bad input, counted, through the real entry points: the magic in an IPython shell, the CLI
(``cli.main``) and the REST service layer (``JobService``).

Hypothesis makes hostile notebook files (invalid JSON, nbformat 3, huge cells, binary outputs,
null bytes, thousands of cells, magics of every kind, unicode and spaces in paths), impossible
machine specs and bad labels. Every case must end in a correct plan or in one line that names
the fix ("Fix: ..."): never a traceback (any other exception fails the test), never a hang
(each call runs under a deadline), never a partial job record (records and job folders are
counted before and after; a failed launch leaves only FAILED records). The summary of outcomes
per category and entry point is printed by the last test (``pytest -s`` shows it).
"""

from __future__ import annotations

import base64
import collections
import concurrent.futures
import contextlib
import io
import json
import os
import re
import shlex
import string
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import counted
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output
from jobutil import JOB_DEADLINE_S, plan_for, stored_job, write_notebook

from tfc_jupyter import cli, jobs
from tfc_jupyter.backends.local.backend import check_capacity
from tfc_jupyter.errors import BackendError, CaptureError, ConversionError, SpecError, TfcError
from tfc_jupyter.job import catalog
from tfc_jupyter.job.catalog import lookup
from tfc_jupyter.job.google_target import GoogleTarget
from tfc_jupyter.job.spec import JobSpec
from tfc_jupyter.notebook.capture import read_notebook
from tfc_jupyter.notebook.requirements import Requirements
from tfc_jupyter.server.service import JobService
from tfc_jupyter.store.records import JobState

ITEMS = [
    "broken and hostile notebooks get one line",
    "impossible machine combinations and bad labels are refused",
    "a failed launch leaves no partial record",
    "FIFOs and devices are never read; every read is bounded",
    "validators match whole strings",
    "the REST API stays inside the server root",
    "malformed requests get 400",
    "run --no-wait does not wait",
    "a local job this machine cannot hold is refused",
    "terminal escapes and markup in a job stay inert",
    "bounds: logs stream, metrics are downsampled, oversize requests get 413",
]


def test_every_item_has_cases() -> None:
    counted.check_items(sys.modules[__name__])


CALL_DEADLINE_S = 60.0  # one entry-point call on one input; a hang fails the case
RUN_BODY = "print('ran')"
TALLY: collections.Counter[tuple[str, str, str]] = collections.Counter()
EXAMPLES = int(os.environ.get("TFC_BAD_INPUT_EXAMPLES", "12"))  # per category


# ===================================================================== the checks
class Hang(AssertionError):
    """A call ran past its deadline."""


def bounded(fn: Callable[[], Any], what: str, seconds: float = CALL_DEADLINE_S) -> Any:
    """``fn()`` in a worker thread; a call that outlives ``seconds`` fails as a hang."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(fn).result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        raise Hang(f"{what}: no answer after {seconds:g} s") from None
    finally:
        pool.shutdown(wait=False)


def one_line_fix(text: str, what: str) -> None:
    """An error a person can act on: one line naming the fix, no traceback. Several cells that
    cannot be converted are reported in one run, one such line each."""
    assert text.strip(), f"{what}: empty error"
    lines = text.strip().splitlines()
    if len(lines) > 1:
        per_cell = re.compile(r"^(tfc-jupyter: error: |UsageError: )?cell \d+")
        assert all(per_cell.match(ln) for ln in lines), f"{what}: not one line per cell: {text!r}"
    assert "Traceback" not in text, f"{what}: {text!r}"
    assert all("Fix:" in line for line in lines), f"{what}: names no fix: {text!r}"


@contextlib.contextmanager
def no_partial_records(home: Path, *, launched_ok: bool = False) -> Iterator[list[str]]:
    """Records and job folders before/after: nothing new unless a job launched (then one
    record), and a failed launch leaves its record FAILED, never QUEUED or PENDING."""
    store = jobs.store_for(home)
    before = {r.id for r in store.list(limit=None)}
    folders = _folders(home)
    new: list[str] = []
    yield new
    records = {r.id: r for r in store.list(limit=None)}
    new += sorted(set(records) - before)
    for job_id in new:
        record = records[job_id]
        assert record.state is not JobState.QUEUED, f"{job_id} left queued"
        assert launched_ok or record.state is JobState.FAILED, (job_id, record.state)
    made = _folders(home) - folders
    assert made <= {Path(records[i].job_dir).name for i in new}, f"folders without record: {made}"
    if not launched_ok:
        assert all(records[i].state is JobState.FAILED for i in new)


def _folders(home: Path) -> set[str]:
    folder = home / "jobs"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


# ===================================================================== the entry points
@pytest.fixture(scope="module")
def ip() -> Any:
    """The test IPython shell with the extension loaded."""
    from IPython.testing import globalipapp

    globalipapp.start_ipython()  # None when another module started it: the same shell
    shell = globalipapp.get_ipython()
    assert shell is not None
    shell.run_line_magic("load_ext", "tfc_jupyter")
    return shell


def via_magic(ip: Any, line: str, body: str = RUN_BODY) -> tuple[str, Any]:
    """``("plan" | "launched" | "error", detail)`` of ``%%tfc_run line`` in the shell."""

    def call() -> tuple[str, Any]:
        with capture_output() as cap:
            try:
                result = ip.run_cell_magic("tfc_run", line, body)
            except UsageError as exc:
                return "error", str(exc)
        if result is not None:
            return "launched", result
        shown = [o.data.get("text/plain", "") for o in cap.outputs]
        assert any(s.startswith("Plan for") for s in shown), (line, cap.stdout, shown)
        return "plan", shown

    outcome, detail = bounded(call, f"%%tfc_run {line[:200]}")
    if outcome == "error":
        one_line_fix(detail, f"%%tfc_run {line[:200]}")
    return outcome, detail


def via_cli(argv: list[str]) -> tuple[str, str]:
    """``("plan" | "error", output)`` of ``tfc-jupyter plan ...``."""

    def call() -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as exc:  # argparse's own exit (usage errors)
                code = int(exc.code or 0)
        return code, out.getvalue(), err.getvalue()

    code, out, err = bounded(call, f"tfc-jupyter {' '.join(argv)[:200]}")
    if code == 0:
        assert out.startswith("Plan for") or out.lstrip().startswith("{"), out[:300]
        return "plan", out
    assert code == 2, (argv, code, err)
    one_line_fix(err, f"tfc-jupyter {argv[:3]}")
    return "error", err


def via_rest(service: JobService, body: dict[str, Any]) -> tuple[str, Any]:
    """``("plan" | "launched" | "error", detail)`` of ``JobService.create`` (POST /jobs)."""

    def call() -> tuple[str, Any]:
        try:
            status, data = service.create(body)
        except TfcError as exc:
            return "error", exc
        return ("plan" if status == 200 else "launched"), data

    outcome, detail = bounded(call, f"POST /tfc-jupyter/jobs {str(body)[:200]}")
    if outcome == "error":
        one_line_fix(str(detail), "POST /jobs")
        assert 400 <= detail.http_status < 600
    else:
        assert "spec" in detail["plan"], detail
    return outcome, detail


def through_all(ip: Any, home: Path, category: str, path: Path, flags: str = "") -> None:
    """A notebook file through the three entry points (dry runs: no record may appear)."""
    with no_partial_records(home):
        outcome, _ = via_magic(ip, f"--dry-run --notebook {shlex.quote(str(path))} {flags}")
        TALLY[(category, "magic", outcome)] += 1
        outcome, _ = via_cli(["plan", str(path), "--no-script", *shlex.split(flags)])
        TALLY[(category, "cli", outcome)] += 1
        root = path.parent
        options = {"dry_run": True, **_rest_options(flags)}
        outcome, _ = via_rest(JobService(root), {"path": path.name, "options": options})
        TALLY[(category, "rest", outcome)] += 1


def _rest_options(flags: str) -> dict[str, Any]:
    """``--label a=b --workers 2`` as the REST API's options object."""
    words, out = shlex.split(flags), {}
    i = 0
    while i < len(words):
        key = words[i].lstrip("-").replace("-", "_")
        value: Any = words[i + 1] if i + 1 < len(words) else True
        if key == "label":
            out.setdefault("label", []).append(value)
        else:
            out[key] = value
        i += 2
    return out


# ===================================================================== hostile notebooks
SNIPPETS = [
    "x = 1",
    "import os, json",
    "print('hi')",
    "def f(a, b=2):\n    return a + b",
    "class A:\n    pass",
    "values = [i * i for i in range(10)]",
    "'''a docstring\nover lines'''",
    "if x:\n    y = 2\nelse:\n    y = 3",
    "# only a comment",
    "",
]
LINE_MAGICS = [
    "%matplotlib inline",
    "%load_ext autoreload",
    "%autoreload 2",
    "%config InlineBackend.figure_format = 'retina'",
    "%env FOO=bar",
    "%env",
    "%cd /tmp",
    "%pwd",
    "%time x = 1",
    "%timeit -n1 -r1 x = 1",
    "%prun -q x = 1",
    "%who",
    "%whos",
    "%pip install psutil",
    "%pip install 'numpy>=1'",
    "%pip list",
    "%pip uninstall -y nothing",
    "%conda install foo",
    "%store x",
    "%sql SELECT 1",
    "%run other.py",
    "%ls",
    "%mkdir -p d",
    "%rm -f nothing",
    "%system echo hi",
    "%sx echo hi",
    "%tensorboard --logdir logs",
    "%pylab inline",
    "%history",
    "%xmode Plain",
    "%precision 3",
    "%reset -f",
    "%alias foo echo",
    "%bookmark here",
    "%dhist",
    "%edit",
    "%undefined_magic_xyz a b",
    "%tfc_jobs",
    "%tfc_config",
    "%load_ext tfc_jupyter",
    "%%%weird",
    "%",
    "%pip",
    "%pip install",
    "%pip install -r nowhere.txt",
    "!echo hi",
    "files = !ls",
    "!pip install psutil",
    "!{sys.executable} -m pip install psutil",
    "!!echo twice",
    "!cd /tmp && ls",
    "!echo $HOME {x}",
    "x?",
    "x??",
    "?x",
    "%timeit?",
    "!",
]
CELL_MAGICS = [
    "%%bash\necho hi",
    "%%sh\necho hi",
    "%%writefile out.txt\nhello",
    "%%writefile -a out.txt\nx",
    "%%time\nx = 1",
    "%%timeit -n1 -r1\nx = 1",
    "%%capture cap\nprint(1)",
    "%%html\n<b>x</b>",
    "%%markdown\n# x",
    "%%javascript\nalert(1)",
    "%%js\n1",
    "%%latex\n$x$",
    "%%svg\n<svg/>",
    "%%script python3\nprint(1)",
    "%%script\nprint(1)",
    "%%python3\nprint(1)",
    "%%perl\nprint 1",
    "%%ruby\nputs 1",
    "%%bigquery\nSELECT 1",
    "%%sql\nSELECT 1",
    "%%prun\nx = 1",
    "%%file f.txt\nx",
    "%%capture\n%pip install psutil",
    "%%tfc_run --workers 1\nprint(2)",
    "%%tfc_run --gpus nine\nx",
    "%%tfc_run --frobnicate\nx",
    "%%debug\nx",
    "%%unknowncell\nx",
    "%%writefile\nno file name",
    "%%bash\n",
    "%%tfc_run",
    "%%",
]
RUN_CELL = f"%%tfc_run --strategy none\n{RUN_BODY}"


def _cell(source: str | list[str], kind: str = "code", **extra: Any) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    cell.update(extra)
    return cell


def _nb(cells: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    return {"nbformat": 4, "nbformat_minor": 4, "metadata": {**metadata, **meta}, "cells": cells}


def _dumps(nb: Any) -> bytes:
    return json.dumps(nb, ensure_ascii=False).encode("utf-8", errors="surrogatepass")


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
_SOURCE = st.one_of(st.sampled_from(SNIPPETS), st.sampled_from(LINE_MAGICS), _TEXT)


@st.composite
def invalid_json(draw: st.DrawFn) -> bytes:
    """Bytes that are not a notebook: random, truncated, or the wrong JSON shape."""
    valid = _dumps(_nb([_cell("x = 1"), _cell(RUN_CELL)]))
    shapes: list[Any] = [
        [],
        None,
        "notebook",
        4,
        {"cells": 5},
        {"cells": [1, 2]},
        {"nbformat": 4},
        {"nbformat": 99, "nbformat_minor": 0, "cells": [], "metadata": {}},
        {"nbformat": "4", "cells": []},
        _nb([{"cell_type": "code", "source": 5}]),
        _nb([{"source": "x"}]),
        _nb([_cell(RUN_CELL, metadata={"tags": "tfc-skip"})]),
        _nb([_cell(RUN_CELL, metadata={"tags": [1, None, {"a": 1}]})]),
        _nb([_cell([1, 2, 3])]),
        _nb([_cell(RUN_CELL)], kernelspec=[]),
        {**_nb([_cell(RUN_CELL)]), "metadata": []},
        {**_nb([_cell(RUN_CELL)]), "cells": {"0": _cell(RUN_CELL)}},
        _nb([_cell({"text": RUN_CELL})]),
        _nb([_cell(RUN_CELL, kind="heading"), _cell(RUN_CELL, kind=None)]),
    ]
    kind = draw(st.sampled_from(["random", "truncated", "shape", "encoding"]))
    if kind == "random":
        return draw(st.binary(max_size=3000))
    if kind == "truncated":
        return valid[: draw(st.integers(0, len(valid) - 1))]
    if kind == "encoding":
        text = valid.decode()
        return text.encode(draw(st.sampled_from(["utf-16", "utf-32", "latin-1", "cp1252"])))
    return _dumps(draw(st.sampled_from(shapes)))


@st.composite
def nbformat3(draw: st.DrawFn) -> bytes:
    """nbformat 3 (worksheets, ``input``), valid or subtly broken."""
    cells = [
        {
            "cell_type": "code",
            "input": draw(_SOURCE),
            "language": "python",
            "outputs": [],
            "metadata": {},
        }
        for _ in range(draw(st.integers(0, 5)))
    ]
    cells.append({"cell_type": "heading", "level": 1, "source": "Title", "metadata": {}})
    if draw(st.booleans()):
        cells.append(
            {
                "cell_type": "code",
                "input": RUN_CELL,
                "language": "python",
                "outputs": [],
                "metadata": {},
            }
        )
    nb: dict[str, Any] = {
        "nbformat": 3,
        "nbformat_minor": draw(st.integers(0, 3)),
        "metadata": {"name": ""},
        "worksheets": [{"cells": cells, "metadata": {}}],
    }
    broken = draw(st.sampled_from(["none", "none", "no_worksheets", "input_list", "two_sheets"]))
    if broken == "no_worksheets":
        del nb["worksheets"]
    elif broken == "input_list":
        for cell in cells:
            if "input" in cell:
                cell["input"] = [line + "\n" for line in str(cell["input"]).split("\n")]
    elif broken == "two_sheets":
        nb["worksheets"].append({"cells": [cells[-1]], "metadata": {}})
    return _dumps(nb)


@st.composite
def huge_cells(draw: st.DrawFn) -> bytes:
    """A cell of megabytes: a long literal, many lines, or a huge output."""
    size = draw(st.integers(200_000, 2_500_000))
    kind = draw(st.sampled_from(["literal", "lines", "output", "one_line_magic"]))
    cells = [_cell("x = 1")]
    if kind == "literal":
        cells.append(_cell("blob = '" + "a" * size + "'"))
    elif kind == "lines":
        cells.append(_cell("\n".join(f"v{i} = {i}" for i in range(size // 12))))
    elif kind == "output":
        data = base64.b64encode(os.urandom(size)).decode()
        cells.append(
            _cell(
                "y = 2",
                outputs=[
                    {"output_type": "display_data", "metadata": {}, "data": {"image/png": data}}
                ],
            )
        )
    else:
        cells.append(_cell("!echo " + "z" * size))
    return _dumps(_nb([*cells, _cell(RUN_CELL)]))


@st.composite
def binary_outputs(draw: st.DrawFn) -> bytes:
    """Outputs with binary data, control characters, attachments, invalid UTF-8 in the file."""
    blob = draw(st.binary(min_size=1, max_size=4000))
    outputs = [
        {
            "output_type": "display_data",
            "metadata": {},
            "data": {
                "image/png": base64.b64encode(blob).decode(),
                "application/octet-stream": base64.b64encode(blob).decode(),
            },
        },
        {
            "output_type": "stream",
            "name": "stdout",
            "text": blob.decode("latin-1") + "\x1b[31m\x07\x08",
        },
        {
            "output_type": "execute_result",
            "execution_count": 1,
            "metadata": {},
            "data": {"text/plain": blob.decode("utf-8", errors="surrogateescape")},
        },
    ]
    cells = [
        _cell("x = 1", outputs=outputs, execution_count=1),
        _cell(
            "![img](attachment:a.png)",
            kind="markdown",
            attachments={"a.png": {"image/png": base64.b64encode(blob).decode()}},
        ),
        _cell(RUN_CELL),
    ]
    data = _dumps(_nb(cells))
    if draw(st.booleans()):  # raw bytes spliced into a JSON string: not UTF-8 any more
        cut = data.index(b'"x = 1"') + 2
        data = data[:cut] + draw(st.binary(min_size=1, max_size=50)) + data[cut:]
    return data


@st.composite
def null_bytes(draw: st.DrawFn) -> bytes:
    """NUL characters in sources (escaped), in tags and names, or raw in the file."""
    text = draw(_SOURCE)
    at = draw(st.integers(0, len(text)))
    source = text[:at] + "\x00" * draw(st.integers(1, 3)) + text[at:]
    cells = [
        _cell(source),
        _cell("y\x00 = 2", metadata={"tags": ["tfc\x00skip"]}),
        _cell(RUN_CELL.replace("none", "no\x00ne") if draw(st.booleans()) else RUN_CELL),
    ]
    data = _dumps(_nb(cells))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"\x00" + data[at:]
    return data


@st.composite
def many_cells(draw: st.DrawFn) -> bytes:
    """Thousands of cells: code, markdown, raw, some tagged, some magics."""
    n = draw(st.integers(1000, 4000))
    pool = [*SNIPPETS[:6], "%matplotlib inline", "!echo hi", "%%capture\nprint(1)"]
    cells = []
    for i in range(n):
        kind = ("code", "markdown", "raw")[i % 7 % 3]
        cell = _cell(pool[i % len(pool)] if kind == "code" else f"# {i}", kind=kind)
        if i % 11 == 0:
            cell["metadata"]["tags"] = ["tfc-skip"]
        cells.append(cell)
    return _dumps(_nb([*cells, _cell(RUN_CELL)]))


@st.composite
def magic_cells(draw: st.DrawFn) -> bytes:
    """Magics of every kind, above the run cell, in any order and mix."""
    sources = draw(
        st.lists(
            st.one_of(
                st.sampled_from(LINE_MAGICS),
                st.sampled_from(CELL_MAGICS),
                st.sampled_from(SNIPPETS),
            ),
            min_size=1,
            max_size=8,
        )
    )
    if draw(st.booleans()):  # several magics in one cell
        sources = ["\n".join(s for s in sources if not s.startswith("%%"))]
    return _dumps(_nb([*(_cell(s) for s in sources), _cell(RUN_CELL)]))


NAME_CHARS = st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs", "Cc"))


@st.composite
def unicode_path(draw: st.DrawFn) -> tuple[str, str]:
    """A folder and notebook name: unicode, spaces, quotes, shell characters, emoji."""
    fixed = [
        "données d'entraînement",
        "ノート ブック",
        "my notebook (copy) 2",
        "a;b$(c)`d`",
        "عربي",
        "e\u0301migre\u0301",
        "🚀 run",
        " leading and trailing ",
        "-dash",
        "'\"",
        "-h",
        "--workers 2",
    ]
    folder = draw(st.one_of(st.sampled_from(fixed), st.text(NAME_CHARS, min_size=1, max_size=30)))
    name = draw(st.one_of(st.sampled_from(fixed), st.text(NAME_CHARS, min_size=1, max_size=30)))
    return folder, name


CATEGORIES: dict[str, st.SearchStrategy[bytes]] = {
    "invalid_json": invalid_json(),
    "nbformat3": nbformat3(),
    "huge_cells": huge_cells(),
    "binary_outputs": binary_outputs(),
    "null_bytes": null_bytes(),
    "thousands_of_cells": many_cells(),
    "magics": magic_cells(),
}
_SLOW = {"huge_cells": 4, "thousands_of_cells": 4}  # examples for the costly categories


@pytest.mark.item("broken and hostile notebooks get one line")
@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_hostile_notebooks(ip: Any, tfc_env: Path, tmp_path: Path, category: str) -> None:
    home = Path(os.environ["TFC_JUPYTER_HOME"])
    counter = iter(range(10**6))

    @settings(
        max_examples=_SLOW.get(category, EXAMPLES),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=CATEGORIES[category])
    def check(data: bytes) -> None:
        folder = tmp_path / f"case{next(counter)}"
        folder.mkdir()
        path = folder / "hostile.ipynb"
        path.write_bytes(data)
        through_all(ip, home, category, path)

    check()
    seen = {k[2] for k in TALLY if k[0] == category}
    assert seen, f"no {category} case ran"


@pytest.mark.item("broken and hostile notebooks get one line")
def test_unicode_and_spaces_in_paths(ip: Any, tfc_env: Path, tmp_path: Path) -> None:
    home = Path(os.environ["TFC_JUPYTER_HOME"])
    counter = iter(range(10**6))
    valid = _dumps(_nb([_cell("x = 1"), _cell(RUN_CELL)]))

    @settings(max_examples=EXAMPLES, deadline=None, database=None)
    @given(names=unicode_path())
    def check(names: tuple[str, str]) -> None:
        folder_name, name = names
        folder = tmp_path / f"u{next(counter)}" / (folder_name.strip().lstrip(".") or "x")
        try:
            folder.mkdir(parents=True)
            path = folder / f"{name}.ipynb"
            path.write_bytes(valid)
        except OSError:  # a name the filesystem refuses (too long): not our input
            return
        through_all(ip, home, "unicode_paths", path)

    check()
    # Unicode and spaces are no reason to refuse: a normal notebook in such a folder plans.
    plans = TALLY[("unicode_paths", "magic", "plan")] + TALLY[("unicode_paths", "cli", "plan")]
    assert plans > 0, TALLY


# ===================================================================== flags
@pytest.fixture
def good_notebook(tmp_path: Path) -> Path:
    """A plain notebook that plans under default flags."""
    path = tmp_path / "good" / "train.ipynb"
    path.parent.mkdir()
    path.write_bytes(_dumps(_nb([_cell("x = 1"), _cell(RUN_CELL)])))
    return path


_MACHINES = [
    *catalog.PRESETS,
    "n1-standard-8",
    "a2-highgpu-1g",
    "e2-micro",
    "cloud-tpu",
    "T4_8X",
    "V100_3X",
    "TPU",
    "x",
    "",
    "n1-standard-9999",
]
SPEC_FLAGS: dict[str, st.SearchStrategy[str]] = {
    "--gpus": st.one_of(st.integers(-2, 17).map(str), st.sampled_from(["1.5", "two", "1e3"])),
    "--gpu-type": st.sampled_from([*catalog.GPU_TYPES, "t4", "TPU", "RTX4090", "A100_80"]),
    "--machine": st.sampled_from(_MACHINES),
    "--worker-machine": st.sampled_from(_MACHINES),
    "--tpu": st.sampled_from(["v2-8", "v3-8", "v4-8", "v5e-4", "v5p-8", "v3-2048", "gpu"]),
    "--workers": st.sampled_from(["0", "1", "3", "64", "1000", "100000", "-1", "1e2"]),
    "--ps": st.sampled_from(["0", "1", "2", "50", "-3"]),
    "--ps-machine": st.sampled_from(_MACHINES),
    "--evaluator": st.sampled_from(_MACHINES),
    "--strategy": st.sampled_from(["auto", "mirrored", "tpu", "parameter_server", "ps", "none"]),
    "--backend": st.sampled_from(["local", "docker", "vertex", "kubernetes", "LOCAL"]),
    "--region": st.sampled_from(["us-central1", "europe-west4", "mars-east1", "US-CENTRAL1"]),
    "--timeout": st.sampled_from(["1h", "0", "-5m", "31d", "1e9", "soon"]),
}


@st.composite
def spec_flags(draw: st.DrawFn) -> str:
    """Two to five machine flags: mostly impossible together."""
    chosen = draw(
        st.lists(st.sampled_from(sorted(SPEC_FLAGS)), min_size=2, max_size=5, unique=True)
    )
    return " ".join(f"{f} {shlex.quote(draw(SPEC_FLAGS[f]))}" for f in chosen)


_LABEL_TEXT = st.text(
    alphabet=st.sampled_from(string.ascii_letters + string.digits + "-_.:/ =éß中🙂"), max_size=70
)


@st.composite
def label_flags(draw: st.DrawFn) -> str:
    """Labels: uppercase, unicode, too long, empty, reserved, without '=', too many."""
    fixed = [
        "Team=ml",
        "team=ML",
        "=x",
        "novalue",
        "goog-x=1",
        "k=" + "v" * 64,
        "a" * 64 + "=v",
        "1abc=x",
        "_x=y",
        "k=v=w",
        "team=ml",
        "k=",
        "ключ=значение",
    ]
    labels = draw(st.lists(st.one_of(st.sampled_from(fixed), _LABEL_TEXT), min_size=1, max_size=4))
    if draw(st.integers(0, 9)) == 0:
        labels = [f"k{i}=v" for i in range(70)]
    return " ".join(f"--label {shlex.quote(label)}" for label in labels)


@pytest.mark.parametrize(
    ("category", "strategy"), [("machine_specs", spec_flags()), ("labels", label_flags())]
)
@pytest.mark.item("impossible machine combinations and bad labels are refused")
def test_impossible_specs_and_bad_labels(
    ip: Any, tfc_env: Path, good_notebook: Path, category: str, strategy: Any
) -> None:
    home = Path(os.environ["TFC_JUPYTER_HOME"])

    @settings(max_examples=EXAMPLES * 4, deadline=None, database=None)
    @given(flags=strategy)
    def check(flags: str) -> None:
        through_all(ip, home, category, good_notebook, flags)

    check()
    assert TALLY[(category, "cli", "error")] > 0, TALLY


# ===================================================================== launches
LAUNCHES = {
    # (flags, cell above the run cell): every one must fail before or at launch, leaving at
    # most a FAILED record, or launch and end.
    "missing_requirement": ("--strategy none", "%pip install not-a-real-package-xyz==1.0"),
    "docker_without_engine": ("--backend docker", "x = 1"),
    "vertex_without_project": ("--backend vertex", "x = 1"),
    "vertex_unreachable": ("--backend vertex --project test-project --image r.test/i:1", "x = 1"),
    "tpu_on_local": ("--tpu v3-8", "x = 1"),
    "bad_requirements_file": ("--requirements /nonexistent/req.txt", "x = 1"),
    "estimator_here": ("", "import tensorflow as tf\nest = tf.estimator.Estimator"),
    "keras3_multiworker": ("--workers 1", "import keras\nkeras.Model().fit(x)"),
    "syntax_error": ("--strategy none", "def broken(:\n    pass"),
    "runs": ("--strategy none", "x = 1"),
    "fails_in_job": ("--strategy none", "raise ValueError('in the job')"),
}


@pytest.mark.item("a failed launch leaves no partial record")
@pytest.mark.slow
def test_failed_launches_leave_no_partial_record(
    ip: Any, tfc_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ["TFC_JUPYTER_HOME"])
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    monkeypatch.setenv("TFC_VERTEX_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("TFC_VERTEX_RETRY_TOTAL", "1")
    monkeypatch.setenv("TFC_VERTEX_BACKOFF", "0.05")
    launched = []
    for case, (flags, above) in LAUNCHES.items():
        path = tmp_path / case / "job.ipynb"
        path.parent.mkdir()
        cells = [_cell(above), _cell(f"%%tfc_run\n{RUN_BODY}")]  # the flags come with the call
        path.write_bytes(_dumps(_nb(cells)))
        line = f"--notebook {shlex.quote(str(path))} --no-wait {flags}"
        with no_partial_records(home, launched_ok=True) as new:
            outcome, detail = via_magic(ip, line)
        TALLY[("launch", "magic", outcome)] += 1
        if outcome == "error":
            assert all(jobs.store_for(home).get(i).state is JobState.FAILED for i in new)
        else:
            assert len(new) == 1, (case, new)
            launched.append(detail)
        # The same through the REST service (it never waits).
        with no_partial_records(home, launched_ok=True) as new:
            outcome, detail = via_rest(
                JobService(path.parent),
                {"path": path.name, "options": _rest_options(flags)},
            )
        TALLY[("launch", "rest", outcome)] += 1
        if outcome == "launched":
            launched.append(jobs.Job(detail["job"]["id"], jobs.store_for(home)))
    deadline = time.monotonic() + JOB_DEADLINE_S
    for job in launched:
        record = job.wait(timeout=max(1.0, deadline - time.monotonic()))
        assert record.state.is_terminal(), (job.id, record.state)
    states = collections.Counter(j.record().state.value for j in launched)
    assert states == {"succeeded": 2, "failed": 2}, states
    for record in jobs.store_for(home).list(limit=None):
        assert record.state.is_terminal(), record
        if record.state is JobState.FAILED:
            assert record.error and "\n" not in record.error.strip(), record.error


# ========================================================= files that are not files, strings, REST
@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _within(seconds: float, fn):  # type: ignore[no-untyped-def]
    start = time.monotonic()
    try:
        return fn()
    finally:
        assert time.monotonic() - start < seconds, "it waited on a FIFO"


@pytest.mark.item("FIFOs and devices are never read; every read is bounded")
def test_a_fifo_or_device_is_never_read(tmp_path: Path, fifo: Path) -> None:
    with pytest.raises(Exception, match="is a FIFO, not a file"):
        _within(5, lambda: Requirements().add_file(fifo))
    with pytest.raises(Exception, match="is a character device"):
        _within(5, lambda: Requirements().add_file(Path("/dev/zero")))
    with pytest.raises(CaptureError, match="is a FIFO"):
        _within(5, lambda: read_notebook(fifo))
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 1_000_001)
    with pytest.raises(Exception, match="is over 1 MB"):
        Requirements().add_file(big)


@pytest.mark.item("FIFOs and devices are never read; every read is bounded")
def test_pip_r_fifo_in_a_notebook(tmp_path: Path, fifo: Path) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", f"%pip install -r {fifo.name}")
    with pytest.raises(ConversionError, match="is a FIFO"):
        _within(5, lambda: plan_for(nb))


@pytest.mark.item("FIFOs and devices are never read; every read is bounded")
def test_include_skips_fifos_and_refuses_devices(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.csv").write_text("a\n1\n")
    os.mkfifo(data / "pipe")
    (tmp_path / "zero").symlink_to("/dev/zero")
    nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    plan = _within(10, lambda: plan_for(nb, "--include data"))
    assert plan.context is not None
    assert "app/data/rows.csv" in {e.arcname for e in plan.context.entries}
    assert ("data/pipe", "a FIFO, not a file") in plan.context.left_out
    with pytest.raises(SpecError, match="--include zero: it is a character device"):
        plan_for(nb, "--include zero")


@pytest.mark.item("FIFOs and devices are never read; every read is bounded")
@pytest.mark.parametrize("named", [False, True], ids=["in-a-folder", "named"])
@pytest.mark.parametrize("gb", [2, 10])
def test_a_big_sparse_file_is_judged_by_its_size_before_it_is_read(
    tmp_path: Path, named: bool, gb: int
) -> None:
    """A sparse file of gigabytes (included by its folder or by name) was read whole for
    secrets, for minutes, before the context's size limit refused it: it is refused by its
    size first, naming it, and never read."""
    from tfc_jupyter.image.context import ContextTooLarge
    from tfc_jupyter.util import secretscan

    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.csv").write_text("a\n1\n")
    big = data / "big.bin"
    with big.open("wb") as f:
        f.truncate(gb * 1_000_000_000)  # sparse: no block written
    nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    with pytest.raises(ContextTooLarge) as info:
        _within(20, lambda: plan_for(nb, "--include " + ("data/big.bin" if named else "data")))
    text = str(info.value)
    assert f"largest files: data/big.bin {gb}" in text and "Fix:" in text, text
    assert not [k for k in secretscan._SCANNED if k[0] == str(big)], "the file was read"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("project", "my-project\n"),
        ("region", "us-central1\n"),
        ("name", "job\n"),
        ("service_account", "trainer@my-project.iam.gserviceaccount.com\n"),
    ],
)
@pytest.mark.item("validators match whole strings")
def test_a_trailing_newline_is_refused(field: str, value: str) -> None:
    with pytest.raises(SpecError):
        if field in GoogleTarget.__dataclass_fields__:
            GoogleTarget(**{field: value})
        else:
            JobSpec(**{field: value})  # type: ignore[arg-type]


@pytest.mark.item("run --no-wait does not wait")
def test_run_no_wait_returns_at_once(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", "import time\ntime.sleep(20)")
    env = {**os.environ, "TFC_JUPYTER_HOME": str(tmp_path / "home")}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", "run", str(nb), "--no-wait"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 15
    job_id = done.stdout.strip()
    cancel = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", "cancel", job_id],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert cancel.returncode == 0, cancel.stderr


@pytest.mark.item("a local job this machine cannot hold is refused")
def test_a_local_job_this_machine_cannot_hold_is_refused() -> None:
    spec = JobSpec(chief=lookup("CPU"), worker_count=256)
    with pytest.raises(BackendError) as info:
        check_capacity(spec, cores=2, free_gb=20.0)
    text = str(info.value)
    assert "257 TensorFlow processes" in text and "2 cores and 20.0 GB available" in text
    assert "--backend vertex" in text
    check_capacity(JobSpec(chief=lookup("CPU"), worker_count=2), cores=2, free_gb=20.0)


@pytest.mark.item("the REST API stays inside the server root")
def test_the_rest_api_stays_inside_the_root(tmp_path: Path) -> None:
    from tfc_jupyter.server.service import JobService

    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "nb.ipynb", "x = 1")
    service = JobService(root)
    for path in (".", "/", "..", "../x.ipynb", "sub/.."):
        with pytest.raises(SpecError, match="outside the server's root folder"):
            service.create({"path": path, "options": {"dry_run": True}})
    for key in ("requirements", "include"):
        with pytest.raises(SpecError, match="outside the server's root folder") as info:
            service.create({"path": "nb.ipynb", "options": {"dry_run": True, key: ["/etc/passwd"]}})
        assert "root:" not in str(info.value)
    (root / "reqs.txt").write_text("good-package\nthis is not a requirement line\n")
    with pytest.raises(Exception, match=r"line 2 of reqs\.txt is not a valid requirement") as err:
        service.create(
            {"path": "nb.ipynb", "options": {"dry_run": True, "requirements": ["reqs.txt"]}}
        )
    assert "this is not" not in str(err.value)


TOKEN = "ghp_" + "R4nD0mPLANTED" * 3


@pytest.fixture
def rooted(tmp_path: Path) -> tuple[Path, Path]:
    """A server root with a notebook, and a folder outside it holding a one-word token file."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "token.txt").write_text(TOKEN + "\n")
    (outside / "reqs.txt").write_text("pandas\n")
    return root, outside


def _dry_run(root: Path, *cells: str, **options: object) -> dict[str, Any]:
    from tfc_jupyter.server.service import JobService

    write_notebook(root / "nb.ipynb", *cells)
    body = {"path": "nb.ipynb", "options": {"dry_run": True, **options}}
    status, answer = JobService(root).create(body)
    assert status == 200
    return answer


@pytest.mark.item("the REST API stays inside the server root")
@pytest.mark.parametrize(
    "cells",
    [
        ("%%tfc_run --requirements {outside}/token.txt\nx = 1",),
        ("%%tfc_run --requirements ../outside/reqs.txt\nx = 1",),
        ("%pip install -r {outside}/token.txt", "%%tfc_run\nx = 1"),
        ("%pip install -r ../outside/reqs.txt", "%%tfc_run\nx = 1"),
        ("%%tfc_run --requirements inside.txt\nx = 1",),  # whose -r line leads out
        ("%%tfc_run --requirements link.txt\nx = 1",),  # a link out of the root
        ("%%tfc_run --backend docker --include data.txt\nx = 1",),  # a link out of the root
    ],
    ids=["cell-req-abs", "cell-req-rel", "pip-r-abs", "pip-r-rel", "nested-r", "req-link", "incl"],
)
def test_paths_from_cells_and_links_stay_inside_the_root(
    rooted: tuple[Path, Path], cells: tuple[str, ...]
) -> None:
    root, outside = rooted
    (root / "inside.txt").write_text(f"numpy\n-r {outside}/token.txt\n")
    (root / "link.txt").symlink_to(outside / "token.txt")
    (root / "data.txt").symlink_to(outside / "token.txt")
    with pytest.raises(SpecError) as info:
        _dry_run(root, *(c.format(outside=outside) for c in cells))
    text = str(info.value)
    assert "outside the server's root folder" in text and "Fix:" in text
    assert "PLANTED" not in text


@pytest.mark.item("the REST API stays inside the server root")
def test_a_linked_file_in_an_included_folder_is_left_out(rooted: tuple[Path, Path]) -> None:
    root, outside = rooted
    (root / "data").mkdir()
    (root / "data" / "train.csv").write_text("x,y\n1,2\n")
    (root / "data" / "stolen.txt").symlink_to(outside / "reqs.txt")
    (root / "data" / "loop").symlink_to(root / "data" / "loop")
    answer = _dry_run(root, "%%tfc_run --backend docker\nx = 1", include=["data"])
    context = answer["plan"]["context"]
    files = {f["path"] for f in context["files"]}
    left = {item["path"]: item["why"] for item in context["left_out"]}
    assert "app/data/train.csv" in files and "app/data/stolen.txt" not in files
    assert left["data/stolen.txt"] == "links out of the root"
    assert left["data/loop"] == "a loop of symbolic links"


@pytest.mark.item("the REST API stays inside the server root")
def test_a_symlink_loop_is_one_line_not_a_500(rooted: tuple[Path, Path]) -> None:
    root, _ = rooted
    (root / "loop").symlink_to(root / "loop")
    for options in ({"include": ["loop"], "backend": "docker"}, {"requirements": ["loop"]}):
        with pytest.raises(SpecError) as info:
            _dry_run(root, "%%tfc_run\nx = 1", **options)
        assert info.value.http_status == 400
        assert "loop of symbolic links" in str(info.value), info.value


@pytest.mark.item("the REST API stays inside the server root")
def test_a_token_file_as_requirements_is_never_echoed(rooted: tuple[Path, Path]) -> None:
    root, _ = rooted
    (root / "token.txt").write_text(TOKEN + "\n")
    with pytest.raises(SpecError) as info:
        _dry_run(root, "%%tfc_run\nx = 1", requirements=["token.txt"])
    assert "looks like a secret" in str(info.value) and "PLANTED" not in str(info.value)


@pytest.mark.item("the REST API stays inside the server root")
def test_the_cli_may_still_name_any_file_of_its_user(rooted: tuple[Path, Path]) -> None:
    root, outside = rooted
    nb = write_notebook(root / "nb.ipynb", f"%%tfc_run --requirements {outside}/reqs.txt\nx = 1")
    assert plan_for(nb).requirements == ["pandas"]


_MODEL = {"metadata": {}, "nbformat": 4, "nbformat_minor": 5}


@pytest.mark.parametrize(
    "body",
    [
        {"path": "a\0b.ipynb"},
        {"path": "a\ud800.ipynb"},
        {"path": "a" * 5000 + ".ipynb"},
        {"path": "n.ipynb", "notebook": {**_MODEL, "cells": [{"source": "x", "metadata": "s"}]}},
        {"path": "n.ipynb", "notebook": {**_MODEL, "cells": [{"metadata": {"tags": 5}}]}},
        {"path": "n.ipynb", "notebook": {**_MODEL, "cells": [{"source": [1, 2]}]}},
    ],
    ids=["nul", "surrogate", "long", "metadata-str", "tags-int", "source-ints"],
)
@pytest.mark.item("malformed requests get 400")
def test_malformed_requests_are_400(tmp_path: Path, body: dict[str, object]) -> None:
    from tfc_jupyter.server.service import JobService

    with pytest.raises(SpecError) as info:
        JobService(tmp_path).create({**body, "options": {"dry_run": True}})
    assert info.value.http_status == 400 and "Fix:" in str(info.value)


def _unusable_paths() -> st.SearchStrategy[str]:
    """Path values no file system holds: 10,000 characters, NUL bytes, control characters,
    lone surrogates, a name over 255 bytes, around ordinary text."""
    text = st.text(alphabet=string.ascii_letters + "./_-é", max_size=20)
    bad = st.one_of(
        st.just("\0"),
        st.characters(categories=["Cc"]),
        st.characters(categories=["Cs"]),
        st.integers(1100, 10_000).map(lambda n: "a" * n),
        st.integers(256, 600).map(lambda n: "d/" + "n" * n),
        st.integers(128, 300).map(lambda n: "ab/" + "é" * n),  # a name of 256+ bytes
        st.integers(350, 3000).map(lambda n: "ab/" * n),  # short names, over 1024 bytes
    )
    return st.tuples(text, bad, text).map("".join)


@pytest.mark.item("malformed requests get 400")
@pytest.mark.parametrize("key", ["include", "requirements"])
def test_an_unusable_include_or_requirements_path_is_400(
    tmp_path: Path, tfc_env: Path, key: str
) -> None:
    """Issue 46: POST /jobs answered 500 (OSError, ValueError, UnicodeEncodeError) for a
    10,000-character or NUL ``include`` / ``requirements``. Each is a 400 in one line naming the
    field and the fix, and the service answers the next request; the CLI says the same line."""
    write_notebook(tmp_path / "nb.ipynb", "%%tfc_run --backend docker\nx = 1")
    service = JobService(tmp_path)
    good = {"path": "nb.ipynb", "options": {"dry_run": True}}

    @given(value=_unusable_paths())
    @settings(max_examples=max(EXAMPLES, 25), deadline=None, database=None)
    def check(value: str) -> None:
        body = {"path": "nb.ipynb", "options": {"dry_run": True, key: [value]}}
        outcome, error = via_rest(service, body)
        assert outcome == "error", (value[:80], error)
        assert error.http_status == 400 and error.field == key, (error.http_status, error)
        assert f"--{key} " in str(error) and "is not a usable path" in str(error), str(error)
        assert "\0" not in str(error) and len(str(error)) < 600, str(error)[:700]
        TALLY[(f"unusable --{key}", "rest", outcome)] += 1
        assert bounded(lambda: service.create(good), "POST /jobs after a bad one")[0] == 200
        if "\0" in value or any(0xD800 <= ord(c) < 0xE000 for c in value):
            return  # a command line holds no NUL, nor a lone surrogate from a terminal
        cli_outcome, said = via_cli(
            ["plan", str(tmp_path / "nb.ipynb"), "--no-script", f"--{key}={value}"]
        )
        assert cli_outcome == "error" and "is not a usable path" in said, said[:300]
        TALLY[(f"unusable --{key}", "cli", cli_outcome)] += 1

    check()


def test_summary() -> None:
    """Print the outcome counts (every category ran, with no crash)."""
    rows = collections.defaultdict(collections.Counter)
    for (category, entry, outcome), n in TALLY.items():
        rows[category][f"{entry}:{outcome}"] += n
    total = sum(TALLY.values())
    print(f"\n[bad input] {total} cases (entry point x input), 0 tracebacks, 0 hangs:")
    for category in sorted(rows):
        counts = ", ".join(f"{k} {v}" for k, v in sorted(rows[category].items()))
        print(f"  {category:<20} {sum(rows[category].values()):>4}  {counts}")
    assert {outcome for _, _, outcome in TALLY} <= {"plan", "error", "launched"}


@pytest.mark.item("terminal escapes and markup in a job stay inert")
def test_a_jobs_escape_sequences_never_reach_the_terminal(tmp_path: Path, tfc_env: Path) -> None:
    """A failing job's last line writes the clipboard and clears the screen (OSC 52, CSI 2J):
    `jobs` and the run's summary show it without any escape sequence."""
    from tfc_jupyter.jobs import Job, jobs_table, store_for
    from tfc_jupyter.store.records import JobRecord, JobState

    store = store_for(tmp_path / "home")
    hostile = "ValueError: \x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b[31mred\x1b[0m \x08\x07done"
    store.create(
        JobRecord(
            id="bad-20261124-000000-000001",
            name="bad",
            backend="local",
            state=JobState.FAILED,
            error=hostile,
        )
    )
    shown = jobs_table(store.list()) + Job("bad-20261124-000000-000001", store).summary_line()
    assert "\x1b" not in shown and "\x07" not in shown and "\x08" not in shown
    assert "red" in shown and "ValueError:" in shown


@pytest.mark.item("terminal escapes and markup in a job stay inert")
def test_a_control_character_in_a_metric_name_keeps_the_plot_valid() -> None:
    import xml.etree.ElementTree as ET

    from tfc_jupyter.returns.plot import svg
    from tfc_jupyter.returns.results import Results

    results = Results()
    for epoch in (1, 2):
        results.add(
            {"event": "epoch", "fit": 0, "epoch": epoch, "metrics": {"lo\x01ss<&>": 1.0 / epoch}}
        )
    image = svg(results)
    assert image is not None
    ET.fromstring(image)  # well-formed XML


@pytest.mark.item("terminal escapes and markup in a job stay inert")
def test_a_notebook_name_beyond_ascii_keeps_its_letters(tmp_path: Path, tfc_env: Path) -> None:
    from jobutil import plan_for, write_notebook

    nb = write_notebook(tmp_path / "Übung Straße.ipynb", "%%tfc_run --dry-run\nprint(1)")
    assert plan_for(nb).spec.name == "Ubung Strae"


@pytest.mark.item("broken and hostile notebooks get one line")
def test_invalid_utf8_in_a_notebook_is_one_line_not_replaced(tmp_path: Path, tfc_env: Path) -> None:
    from tfc_jupyter.errors import CaptureError
    from tfc_jupyter.notebook.capture import read_notebook

    path = tmp_path / "latin1.ipynb"
    path.write_bytes(b'{"cells": [{"cell_type": "code", "source": "print(\'caf\xe9\')"}]}')
    with pytest.raises(CaptureError) as info:
        read_notebook(path)
    assert str(info.value) == (
        "latin1.ipynb is not valid UTF-8 (byte 0xe9 at offset 54). Fix: save the notebook "
        "again from Jupyter (or re-encode it as UTF-8)"
    )


# ------------------------------------------------------------------ bounds (issue 24, class 8)


@pytest.mark.item("bounds: logs stream, metrics are downsampled, oversize requests get 413")
@pytest.mark.slow
def test_logs_of_a_large_log_are_streamed(tmp_path: Path, tfc_env: Path) -> None:
    home = Path(os.environ["TFC_JUPYTER_HOME"])
    job_dir = stored_job(home, "big-20261124-000000-000001", "big")
    line = b"step " + b"x" * 94 + b"\n"
    with (job_dir / "logs" / "chief.log").open("wb") as f:
        for _ in range(256):
            f.write(line * 10_000)  # 256 MB in all
    # VmHWM: this process's own peak (getrusage's ru_maxrss keeps the peak of the process it
    # was forked from, pytest's, across exec).
    probe = (
        "import re, sys\n"
        "from tfc_jupyter import cli\n"
        "code = cli.main(['logs', 'big-20261124-000000-000001'])\n"
        "sys.stdout.flush()\n"
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(hwm, code, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
    )
    rss_kb, code = done.stderr.split()[-2:]
    assert code == "0", done.stderr
    assert int(rss_kb) < 200_000, f"{int(rss_kb) // 1000} MB to print a 256 MB log"


@pytest.mark.item("broken and hostile notebooks get one line")
@pytest.mark.slow
def test_a_notebook_of_50000_cells_plans_within_the_deadline(tmp_path: Path, tfc_env: Path) -> None:
    """Issue 39: 50,000 code cells took 121 s to plan (each cell copied the names the cells
    above it bound). Planning is linear: it answers well within a call's deadline."""
    cells = [_cell(f"x{i} = {i}\nprint(x{i})") for i in range(50_000)]
    nb = tmp_path / "many.ipynb"
    nb.write_bytes(_dumps(_nb([*cells, _cell(RUN_CELL)])))
    plan = bounded(lambda: plan_for(nb), "50,000 cells")
    assert plan.script.text.count("print(x") == 50_000


_REPLICA_NAMES = st.one_of(
    st.text(max_size=80),
    st.sampled_from(["../../etc", "../../../etc/passwd", "chief\x00", " chief", "chief\n"]),
    st.builds(lambda a, b: a + b, st.sampled_from(["chief", "worker-0", ".."]), st.text()),
)


@pytest.mark.item("malformed requests get 400")
def test_a_replica_name_is_read_whole_as_sent(tmp_path: Path, tfc_env: Path) -> None:
    """The logs route's replica is read as sent: a replica's name (its log, or nothing yet) or
    a 400 naming the field, whatever it holds (NUL, slashes, a newline after a good name;
    generated): never a file outside the job's logs, never a 500, never a shorter name."""
    from tfc_jupyter.server.service import JobService

    job_id = "logs-20261124-000000-000001"
    job_dir = stored_job(Path(os.environ["TFC_JUPYTER_HOME"]), job_id, "logs")
    (job_dir / "logs" / "chief.log").write_text("chief's line\n")
    (job_dir / "logs" / "worker-0.log").write_text("worker's line\n")
    service = JobService(tmp_path)

    @settings(max_examples=150, deadline=None, database=None)
    @given(name=_REPLICA_NAMES)
    def check(name: str) -> None:
        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):  # a replica's name: as sent
            answer = service.logs(job_id, replica=name)
            assert answer["replica"] == name
            assert ("line" in answer["text"]) == (name in ("chief", "worker-0")), name
            return
        with pytest.raises(TfcError) as info:
            service.logs(job_id, replica=name or "\x00")
        assert (info.value.http_status, info.value.field) == (400, "replica"), name
        assert "Fix:" in str(info.value)

    check()


@pytest.mark.item("bounds: logs stream, metrics are downsampled, oversize requests get 413")
def test_the_metrics_of_100k_rounds_are_downsampled(tmp_path: Path, tfc_env: Path) -> None:
    from tfc_jupyter.server.service import JobService

    home = Path(os.environ["TFC_JUPYTER_HOME"])
    job_dir = stored_job(home, "many-20261124-000000-000001", "big")
    with (job_dir / "results.jsonl").open("w") as f:
        for n in range(1, 100_001):
            event = {"event": "metric", "name": "train_loss", "round": n, "value": 1 / n}
            f.write(json.dumps(event) + "\n")
    answer = JobService(tmp_path).metrics("many-20261124-000000-000001")
    size = len(json.dumps(answer))
    assert size < 1_000_000, f"{size} bytes"
    assert answer["epoch_count"] == 100_000 and len(answer["epochs"]) <= 2_001
    assert answer["epochs"][0]["epoch"] == 1 and answer["epochs"][-1]["epoch"] == 100_000
    assert answer["last"] == {"train_loss": 1 / 100_000}
    assert answer["svg"] and len(answer["svg"]) < 400_000


@pytest.mark.item("bounds: logs stream, metrics are downsampled, oversize requests get 413")
def test_a_request_of_100k_cells_is_413_naming_the_limit(tmp_path: Path) -> None:
    from tfc_jupyter.server.service import MAX_CELLS, JobService

    cell = {"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": []}
    body = {"path": "nb.ipynb", "notebook": {"cells": [cell] * 100_000}, "options": {}}
    with pytest.raises(TfcError) as info:
        JobService(tmp_path).create(body)
    assert info.value.http_status == 413
    assert f"the limit is {MAX_CELLS}" in str(info.value) and "Fix:" in str(info.value)


@pytest.mark.item("bounds: logs stream, metrics are downsampled, oversize requests get 413")
@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"[" + b",".join([b"{}"] * 3_000_000) + b"]", 413),
        (b'{"a": [' + b",".join([b"0"] * 2_100_000) + b"]}", 413),
        (b'{"a": ' + b"[" * 101 + b"]" * 101 + b"}", 400),
        (b'{"a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", 400),
        (b"[" * 3_000_000, 413),
    ],
    ids=["3M-objects", "2.1M-numbers", "depth-102", "depth-200k", "3M-open"],
)
def test_a_body_is_judged_by_its_values_and_depth_before_it_is_read(
    body: bytes, status: int
) -> None:
    """Request bodies under the byte limit that would take gigabytes or a deep recursion to
    read are refused first, holding little more than the body itself."""
    import tracemalloc

    from tfc_jupyter.server.service import parse_body

    tracemalloc.start()
    try:
        with pytest.raises(TfcError) as info:
            parse_body(body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.http_status == status and "Fix:" in str(info.value), str(info.value)
    assert info.value.field == "body"
    assert peak < 3 * len(body) + 50_000_000, f"{peak // 1_000_000} MB for {len(body)} bytes"


UNREADABLE_CHILD = """
import json, sys
from tfc_jupyter import cli, errors
from tfc_jupyter.server.service import JobService
root, nb = sys.argv[1], sys.argv[2]
out = {}
for name, argv in (("plan", ["plan", nb]), ("run", ["run", nb, "--no-wait"])):
    out[name] = cli.main(argv)
try:
    JobService(root).create({"path": "locked/nb.ipynb", "options": {"dry_run": True}})
    out["rest"] = "answered"
except errors.TfcError as exc:
    out["rest"] = [exc.http_status, exc.field, str(exc)]
try:
    import tfc_jupyter
    tfc_jupyter.run(entry_point=nb)
    out["run()"] = "ran"
except errors.TfcError as exc:
    out["run()"] = [exc.field, str(exc)]
print(json.dumps(out))
"""


@pytest.mark.item("broken and hostile notebooks get one line")
@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_notebook_in_a_folder_nobody_may_read_is_one_line_on_every_entry_point(
    tmp_path: Path, tfc_env: Path
) -> None:
    """Issue 39: a notebook in a folder its user may not read gave a PermissionError traceback
    (a mode-000 file gave the proper line). The CLI's plan and run, the jobs API and ``run()``
    each say it in one line naming the fix. (As root, the child drops the capabilities that
    let root read any folder.)"""
    import shutil

    locked = tmp_path / "locked"
    locked.mkdir()
    write_notebook(locked / "nb.ipynb", "print('hi')")
    locked.chmod(0)
    argv = [sys.executable, "-c", UNREADABLE_CHILD, str(tmp_path), str(locked / "nb.ipynb")]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root reads every folder, and no setpriv (util-linux) to drop that")
        caps = "-dac_override,-dac_read_search"
        argv = ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}", *argv]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    finally:
        locked.chmod(0o700)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["plan"] == 2 and out["run"] == 2, out
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 2 and all("Permission denied" in x and "Fix:" in x for x in lines), lines
    status, field, said = out["rest"]
    assert (status, field) == (400, "path") and "Permission denied" in said and "Fix:" in said
    field, said = out["run()"]
    assert field == "entry_point" and "Permission denied" in said and "Fix:" in said
