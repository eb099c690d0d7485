"""What a notebook cell shows while its job runs: the logs, bounded, and a live plot.

A 150-epoch job prints hundreds of lines; a notebook that keeps them all grows slow to open and
scroll. :class:`BoundedLog` passes the first half of ``cell_lines`` through as printed, then
keeps the latest half in one output that is replaced as lines come (as Colab and VS Code bound
theirs), saying how many lines are not shown and how to see them. :class:`LivePlot` draws the
chief's loss and metrics (:mod:`tfc_jupyter.returns.plot`) in one output, updated at each epoch.
:class:`Following` keeps a ``--no-wait`` job's handle up to date in its own output.
:func:`failure_link` is where a failed job's cell points to the notebook cell that failed.

Everything here needs a notebook frontend (a ZMQ kernel); in a terminal the lines are printed.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, TextIO

from .plot import svg
from .results import Results

UPDATE_S = 0.25
"""Shortest time between two updates of one output (a fast loop prints thousands of lines)."""
FOLLOW_POLL_S = 1.0
"""How often a ``--no-wait`` handle's output reads the job's state."""
FOLLOW_MAX_S = 7 * 24 * 3600.0
"""Longest a handle's output follows a job (its own deadline: every wait has one)."""
LINK_MIME = "application/vnd.tfc-jupyter.cell-link+json"
"""The MIME type of :func:`failure_link`'s output (labextension/src/celllink.ts renders it)."""
JOB_MIME = "application/vnd.tfc-jupyter.job+json"
"""The MIME type of :func:`job_output` (labextension/src/joboutput.ts renders it)."""
_LOCATION = re.compile(r"cell (\d+), line (\d+)")
_MAX_CODE = 500


def failure_link(location: str | None, notebook: str | None) -> dict[str, Any] | None:
    """The output that links a failed job's cell to where it failed, ``cell 7, line 3`` of the
    notebook it was captured from: JupyterLab (with this package's extension) shows "Go to cell
    7, line 3", which selects that cell and puts the cursor on the line; other frontends show
    the text. The line's text as saved goes along, so a cell moved since is still found. None
    for a job captured elsewhere (the kernel's history, a script) or failing outside a cell."""
    match = _LOCATION.fullmatch(location or "")
    if match is None or not notebook:
        return None
    number, line = int(match.group(1)), int(match.group(2))
    code = ""
    with contextlib.suppress(Exception):  # the notebook moved or broke since: the number alone
        from ..notebook.capture import read_notebook

        cells = read_notebook(Path(notebook)).cells
        if 1 <= number <= len(cells):
            lines = str(cells[number - 1].source).split("\n")
            code = lines[line - 1][:_MAX_CODE] if 1 <= line <= len(lines) else ""
    text = f"cell {number}, line {line}"
    link = {"version": 1, "cell": number, "line": line, "code": code, "text": text}
    return {"text/plain": f"The job failed at {text}.", LINK_MIME: link}


def job_output(job_id: str) -> dict[str, Any]:
    """The output a ``%%tfc_run`` cell shows of the job it launched: JupyterLab (with this
    package's extension) shows the job's state and elapsed time there, live, and once the kernel
    no longer streams into the cell (a kernel restart, a page reload, the notebook reopened) the
    job's latest lines from its log, until it ends. Other frontends show how to follow it again.
    """
    text = f"Job {job_id}: after a kernel restart, %tfc_attach {job_id} follows it again."
    return {"text/plain": text, JOB_MIME: {"version": 1, "id": job_id}}


def run_cell_id(shell: Any) -> str | None:
    """The nbformat id of the cell running now, from the kernel's execute request (JupyterLab
    and Notebook 7 send it as ``metadata.cellId``); None elsewhere, and for one that is not an
    id of nbformat's form (a client may send anything: it is kept in the job's record)."""
    try:
        parent = shell.kernel.get_parent("shell")
        cell_id = (parent.get("metadata") or {}).get("cellId")
    except Exception:  # not an ipykernel kernel (terminal IPython, tests), or an old one
        return None
    if not isinstance(cell_id, str) or not _CELL_ID.fullmatch(cell_id):
        return None
    return cell_id


_CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""nbformat 4.5's cell id (JupyterLab's are UUIDs, 36 characters)."""


def in_notebook(shell: Any) -> bool:
    """True in a kernel with a notebook frontend (outputs can be updated in place)."""
    return type(shell).__name__ == "ZMQInteractiveShell"


def _display(data: dict[str, str]) -> Any:
    from IPython.display import display

    return display(data, raw=True, display_id=True)


class BoundedLog:
    """A text stream for :meth:`Job.follow`: the first ``limit // 2`` lines are written to
    ``out``, the latest ``limit // 2`` after them are shown in one output, replaced as they
    come, with a line saying how many are not shown and what prints them all."""

    def __init__(self, out: TextIO, limit: int, job_id: str) -> None:
        self.out = out
        self.head = max(1, limit // 2)
        self.tail: deque[str] = deque(maxlen=max(1, limit - self.head))
        self.job_id = job_id
        self.count = 0
        self._partial = ""
        self._sent = 0  # characters of the line being written already passed to ``out``
        self._handle: Any = None
        self._dirty = False
        self._last = 0.0

    def write(self, text: str) -> int:
        """Take printed text (whole lines are counted). While the first lines pass through, a
        line being written does too, as it comes (a progress bar's ``\r`` updates draw live);
        in the window each line shows its latest state."""
        from ..store.logs import render

        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            self.count += 1
            if self.count <= self.head:
                self.out.write(line[self._sent :] + "\n")
            else:
                self.tail.append(render(line))
                self._dirty = True
            self._sent = 0
        if self._partial and self.count < self.head:
            self.out.write(self._partial[self._sent :])
            self._sent = len(self._partial)
        return len(text)

    def flush(self) -> None:
        """Show what came (the window at most every :data:`UPDATE_S`)."""
        self.out.flush()
        if self._dirty and time.monotonic() - self._last >= UPDATE_S:
            self._show()

    def close(self) -> None:
        """The job ended: show the last lines as they are."""
        if self._partial:
            self.write("\n")
        self.out.flush()
        if self._dirty:
            self._show()

    @property
    def mid_line(self) -> bool:
        """Whether a line has begun and not ended (an output made now would split it)."""
        return bool(self._partial)

    @property
    def hidden(self) -> int:
        """Lines neither passed through nor in the window."""
        return max(0, self.count - self.head - len(self.tail))

    def _show(self) -> None:
        skipped = self.hidden
        note = (
            [
                f"... {skipped} line{'s' * (skipped != 1)} not shown here: "
                f"%tfc_logs {self.job_id} prints every line"
            ]
            if skipped
            else []
        )
        data = {"text/plain": "\n".join([*note, *self.tail])}
        if self._handle is None:
            self._handle = _display(data)
        else:
            self._handle.update(data, raw=True)
        self._dirty = False
        self._last = time.monotonic()


class LivePlot:
    """The chief's loss and metrics by epoch, in one output made once the first epoch ends,
    between two lines of ``log`` (never inside a progress bar's redraws), and redrawn as epochs
    end. A job without epochs leaves no output."""

    def __init__(self, log: BoundedLog | None = None, *, run_cell_only: bool = False) -> None:
        """``run_cell_only``: draw only the fits the run cell made (its job says of each fit
        whether the run cell made it), not those of the cells above it, which the job runs
        first."""
        self.results = Results()
        self._log = log
        self._run_cell_only = run_cell_only
        self._above: set[Any] = set()  # the fits the cells above made
        self._handle: Any = None
        self._dirty = False
        self._last = 0.0

    def add(self, event: dict[str, Any]) -> None:
        """One reported result (from :meth:`Job.follow`'s ``on_result``)."""
        if self._run_cell_only:
            if event.get("event") == "fit" and event.get("run_cell") is False:
                self._above.add(event.get("fit"))
            if event.get("fit") in self._above:
                return
        if self.results.add(event):
            self._dirty = True
            if time.monotonic() - self._last >= UPDATE_S:
                self._show(done=False)

    def close(self) -> None:
        """The job ended: the final curves, without the epoch counter."""
        if self.results.epochs:
            self._show(done=True)

    def _show(self, *, done: bool) -> None:
        image = svg(self.results, done=done)
        last = self.results.last or {}
        text = ", ".join(f"{k} {v:.4g}" for k, v in last.items())
        epoch = self.results.epochs[-1]["epoch"] if self.results.epochs else 0
        data = {"text/plain": f"epoch {epoch}: {text}"}
        if image:
            data["image/svg+xml"] = image
        if self._handle is not None:
            self._handle.update(data, raw=True)
        elif done or self._log is None or not self._log.mid_line:
            self._handle = _display(data)
        else:  # a line is being written (a bar's \r redraws): made after it, at a later epoch
            return
        self._dirty = False
        self._last = time.monotonic()


class Following:
    """A job handle's output that follows the job: re-drawn as its state changes, until it
    ends (a background thread, polling every :data:`FOLLOW_POLL_S`, never past
    :data:`FOLLOW_MAX_S`)."""

    def __init__(self, job: Any) -> None:
        """``job``: a :class:`tfc_jupyter.jobs.Job` (not imported here: it imports this)."""
        self.job = job
        self._handle = _display(self._data())
        self._thread = threading.Thread(target=self._run, name=f"tfc-follow-{job.id}", daemon=True)
        self._thread.start()

    def _data(self) -> dict[str, str]:
        return {"text/plain": repr(self.job), "text/html": self.job._repr_html_()}

    def _run(self) -> None:
        deadline = time.monotonic() + FOLLOW_MAX_S
        shown = ""
        while time.monotonic() < deadline:
            try:
                rec = self.job.record()
                data = self._data()
            except Exception:  # the store went away: the last output stays
                return
            if data["text/html"] != shown:
                self._handle.update(data, raw=True)
                shown = data["text/html"]
            if rec.state.is_terminal():
                return
            time.sleep(FOLLOW_POLL_S)

    def join(self, timeout: float) -> None:
        """Wait for the thread to stop (tests)."""
        self._thread.join(timeout)
