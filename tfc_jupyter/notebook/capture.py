"""Which notebook, and which of its cells, make the job.

The notebook is found from, in order: an explicit path (``--notebook``), the kernel's
``JPY_SESSION_NAME`` (absolute, or relative to the server root; stale after a rename), and as a
last resort the kernel's own input history. The job is the code cells above the ``%%tfc_run`` cell
plus its body, in notebook order, less cells tagged ``tfc-skip`` / ``tfc-local-only``.

When the saved notebook does not hold the ``%%tfc_run`` cell as the user ran it (unsaved edits),
the cell is used as run and a warning says so: stale code is never run silently. From the magic,
the cells above it are taken as this kernel last ran them, found by their cell ids
(:mod:`.executed`); a cell whose saved code differs, or that never ran, is named.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CaptureError
from ..util.files import UnsafeFile, read_regular, write_private
from .convert import SKIP_TAGS, Cell
from .executed import Executed

NOTEBOOK_LIMIT = 512_000_000  # bytes: notebooks with large outputs are still notebooks
SCRIPT_LIMIT = 64_000_000  # bytes: a Python script larger than this is data, not code

MAGIC = "%%tfc_run"


@dataclass
class Selection:
    """The cells of one job and how they were found."""

    cells: list[Cell]
    notebook: Path | None
    how: str
    run_cell: int | None = None
    magic_line: str = ""
    warnings: list[str] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    script: bool = False  # a .py entry point: one "cell", the file as it is
    notes: list[str] = field(default_factory=list)  # the plan's notes on how cells were taken
    left_out: list[Cell] = field(default_factory=list)  # cells above left out: run cells, tagged
    cell_id: str | None = None  # the run cell's nbformat id, as the frontend sent it
    folder: Path | None = None  # with no notebook file: the folder the kernel started in
    carried: dict[str, int] = field(default_factory=dict)  # names an earlier run cell sends
    received: Path | None = None  # at launch: their values, for the job folder's received/

    @property
    def name(self) -> str:
        """The notebook's file name, or ``"kernel history"``."""
        return self.notebook.name if self.notebook else "kernel history"

    @property
    def base_dir(self) -> Path:
        """The notebook's folder (relative files are read from there); with no notebook file,
        the folder the kernel started in (its cells' ``%cd`` and ``os.chdir`` run again in
        the job from there), else the current one."""
        if self.notebook:
            return self.notebook.parent
        return self.folder or Path.cwd()


def _first_line(source: str) -> str:
    for line in source.split("\n"):
        if line.strip():
            return line
    return ""


def is_run_cell(source: str) -> bool:
    """True for a cell whose first non-blank line is ``%%tfc_run``."""
    first = _first_line(source)
    return first == MAGIC or first.startswith(MAGIC + " ")


def split_run_cell(source: str) -> tuple[str, str]:
    """``(magic line arguments, body)`` of a ``%%tfc_run`` cell."""
    lines = source.split("\n")
    k = next(i for i, line in enumerate(lines) if line.strip())
    return lines[k][len(MAGIC) :].strip(), "\n".join(lines[k + 1 :])


def find_notebook(
    explicit: str | None = None,
    environ: Mapping[str, str] | None = None,
    user_ns: Mapping[str, Any] | None = None,
) -> tuple[Path | None, str, list[str]]:
    """Locate the notebook: ``(path or None, how it was found, warnings)``.

    In order: ``--notebook``; VS Code's ``__vsc_ipynb_file__`` in the kernel's namespace;
    ``JPY_SESSION_NAME`` when it still names a file; the Jupyter server this kernel belongs to
    (its sessions API, for the kernel id of the connection file: right after a rename too);
    else None (the caller falls back to the input history).

    Raises:
        CaptureError: an explicit path that does not exist.
    """
    env = os.environ if environ is None else environ
    warnings: list[str] = []
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise CaptureError(
                f"notebook {explicit!r} not found",
                "pass --notebook with the path of an existing .ipynb file",
                field="notebook",
            )
        return path.resolve(), "--notebook", warnings
    vscode = (user_ns or {}).get("__vsc_ipynb_file__")
    if isinstance(vscode, str) and vscode.endswith(".ipynb") and Path(vscode).is_file():
        return Path(vscode).resolve(), "VS Code", warnings
    colab = colab_notebook()
    if colab is not None:
        return colab, "Colab's live notebook", warnings
    session = env.get("JPY_SESSION_NAME", "")
    stale = False
    if session:
        candidates = [Path(session)] if os.path.isabs(session) else []
        roots = [env.get("JUPYTER_SERVER_ROOT", ""), *map(str, [Path.cwd(), *Path.cwd().parents])]
        candidates += [
            Path(root) / session for root in roots if root and not os.path.isabs(session)
        ]
        for path in candidates:
            if path.is_file() and path.suffix == ".ipynb":
                return path.resolve(), "JPY_SESSION_NAME", warnings
        stale = True
    from_server = server_notebook()
    if from_server is not None:
        return from_server, "the Jupyter server's sessions", warnings
    if stale:
        warnings.append(
            f"JPY_SESSION_NAME names {session!r}, which no longer exists (renamed or moved since "
            "the kernel started?) and no Jupyter server knows this kernel; pass --notebook PATH "
            "to use the notebook file"
        )
    return None, "kernel history", warnings


FOLDER_NOTEBOOKS = 50
"""Notebooks of the kernel's folder read at most when looking for the one holding a cell."""
FOLDER_HOW = "the kernel's folder"


def folder_notebook(
    folders: Sequence[Path], source: str, history: Sequence[str]
) -> tuple[Path | None, list[str]]:
    """When nothing names this kernel's notebook (nbconvert and papermill start the kernel in
    the notebook's folder without ``JPY_SESSION_NAME``, and no server knows it): the notebook
    of the kernel's folder holding the cell ``source`` exactly as it runs; of several, the one
    whose cells above it the kernel's ``history`` ran most (papermill's output, with its
    injected parameters), then the newest. ``(path or None, warnings)``."""
    want = _norm(source)
    found: list[tuple[int, float, Path]] = []
    ran = {_norm(text) for text in history}
    for folder in dict.fromkeys(folders):
        try:
            listed = sorted(p for p in folder.iterdir() if p.suffix == ".ipynb")
        except OSError:
            continue
        for path in [p for p in listed if not p.name.startswith(".")][:FOLDER_NOTEBOOKS]:
            try:
                cells = _code_cells(read_notebook(path)) if path.is_file() else []
            except (CaptureError, OSError):
                continue
            at = next((i for i, c in enumerate(cells) if _norm(c.source) == want), None)
            if at is not None:
                score = sum(_norm(c.source) in ran for c in cells[:at])
                found.append((score, path.stat().st_mtime, path.resolve()))
        if found:
            break
    if not found:
        return None, []
    best = max(found)[2]
    more = (
        f" (of {len(found)} holding it: the one whose cells this kernel ran)"
        if len(found) > 1
        else ""
    )
    return best, [
        f"no notebook named by the kernel (nbconvert, papermill?): used {best.name}, the notebook "
        f"of the kernel's folder holding this cell{more}, as saved; pass --notebook PATH to "
        "choose another"
    ]


COLAB_TIMEOUT_S = 10


def colab_notebook(cwd: Path | None = None) -> Path | None:
    """In Colab, the notebook as its front end has it (``google.colab._message`` asked for
    ``get_ipynb``, with a deadline), saved as ``.<name>.ipynb`` in the working folder (Colab keeps
    notebooks in Drive, not on the VM's disk; the job reads its files from that folder). None
    outside Colab, or when the front end does not answer."""
    if "google.colab" not in sys.modules:
        return None
    try:
        from google.colab import _message

        reply = _message.blocking_request("get_ipynb", request="", timeout_sec=COLAB_TIMEOUT_S)
    except Exception:  # Colab's private API: anything may change; fall back to the history
        return None
    nb = reply.get("ipynb") if isinstance(reply, dict) else None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None
    meta: Any = nb.get("metadata")
    colab: Any = meta.get("colab") if isinstance(meta, dict) else None
    title = colab.get("name") if isinstance(colab, dict) else None
    name = Path(str(title or "colab_notebook.ipynb")).name
    name = re.sub(r"[^A-Za-z0-9 _.()-]+", "_", name).strip(" .") or "colab_notebook"
    if not name.endswith(".ipynb"):
        name += ".ipynb"
    path = (cwd or Path.cwd()) / f".{name}"
    import json

    try:
        write_private(path, json.dumps(nb))
    except OSError:
        return None
    return path.resolve()


SERVER_TIMEOUT_S = 2.0
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


def kernel_id() -> str | None:
    """This kernel's id, from its connection file name (``kernel-<id>.json``)."""
    try:
        from ipykernel.connect import get_connection_file

        name = Path(get_connection_file()).name
    except Exception:  # not in a kernel, or no ipykernel
        return None
    match = re.fullmatch(r"kernel-(.+)\.json", name)
    return match.group(1) if match else None


def server_notebook(kid: str | None = None, timeout: float = SERVER_TIMEOUT_S) -> Path | None:
    """The notebook that a Jupyter server on this machine runs kernel ``kid`` (this kernel's by
    default) for, from its sessions API; None when no server answers for it within ``timeout``
    (each server is asked on loopback only)."""
    kid = kid or kernel_id()
    if not kid:
        return None
    try:
        from jupyter_server.serverapp import list_running_servers
    except ImportError:
        return None
    import json
    import urllib.parse
    import urllib.request

    for info in list_running_servers():
        url = str(info.get("url", ""))
        host = urllib.parse.urlparse(url).hostname or ""
        if host not in _LOOPBACK:
            continue
        url = url.replace("://0.0.0.0", "://127.0.0.1").rstrip("/") + "/api/sessions"
        request = urllib.request.Request(
            url, headers={"Authorization": f"token {info.get('token', '')}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                sessions = json.loads(response.read(1 << 20))
        except (OSError, ValueError):
            continue
        for item in sessions if isinstance(sessions, list) else []:
            kernel = item.get("kernel") if isinstance(item, dict) else None
            if not isinstance(kernel, dict) or kernel.get("id") != kid:
                continue
            path = Path(str(info.get("root_dir") or info.get("notebook_dir") or "")) / str(
                item.get("path", "")
            )
            if path.is_file() and path.suffix == ".ipynb":
                return path.resolve()
    return None


class Node(dict[str, Any]):
    """A notebook's JSON object with attribute access (``nb.cells``, ``cell.source``), as
    nbformat's ``NotebookNode`` gives it, without importing nbformat (whose schema machinery
    takes over a second to import: every CLI call and first ``%%tfc_run`` would pay it)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _node(value: Any) -> Any:
    if isinstance(value, dict):
        return Node({k: _node(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_node(v) for v in value]
    return value


def parse_notebook(text: str) -> Any:
    """A v4 notebook's JSON text as a :class:`Node`, checked for the structure the job reads
    (a list of cells, each with its type and source; multi-line sources joined, as nbformat
    does); older formats are upgraded by nbformat, imported only then.

    Raises:
        ValueError: not JSON, or not a notebook's structure (the message says what).
    """
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the file's JSON is not an object")
    if data.get("nbformat") != 4:
        import nbformat  # v3 and older (or no version): its converters

        return nbformat.reads(text, as_version=4)
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise ValueError("'cells' is missing or not a list")
    for i, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise ValueError(f"cell {i} has no cell_type")
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(x, str) for x in source):
            cell["source"] = "".join(source)
        elif not isinstance(source, str):
            raise ValueError(f"cell {i}'s source is not text")
        if not isinstance(cell.get("metadata", {}), dict):
            raise ValueError(f"cell {i}'s metadata is not an object")
    if not isinstance(data.get("metadata", {}), dict):
        raise ValueError("'metadata' is not an object")
    return _node(data)


def _read(path: Path, limit: int, what: str, field: str) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or a one-line CaptureError."""
    try:
        return read_regular(path, limit, what)
    except UnsafeFile as exc:
        raise CaptureError(exc.message, exc.hint, field=field) from None
    except OSError as exc:
        raise CaptureError(
            f"cannot read {str(path)!r}: {exc.strerror or exc}",
            "check the path and its permissions",
            field=field,
        ) from None


def read_notebook(path: Path) -> Any:
    """Read a notebook (v3 files are upgraded), or raise a one-line CaptureError."""
    raw = _read(path, NOTEBOOK_LIMIT, "notebook", "notebook")
    if b"\x00" in raw[:1_000_000] and not raw.lstrip().startswith(b"{"):
        raise CaptureError(
            f"{path.name} is not a notebook (binary file)",
            "pass the .ipynb file with --notebook",
            field="notebook",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:  # Jupyter does not open it either ("Unreadable Notebook")
        raise CaptureError(
            f"{path.name} is not valid UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start})",
            "save the notebook again from Jupyter (or re-encode it as UTF-8)",
            field="notebook",
        ) from None
    try:
        nb = parse_notebook(text)
    except Exception as exc:  # nbformat raises several types for broken files
        detail = " ".join(str(exc).split())[:160]
        raise CaptureError(
            f"{path.name} is not a readable notebook ({detail})",
            "open it in Jupyter and save it again, or fix the JSON",
            field="notebook",
        ) from None
    if not isinstance(nb.get("cells"), list):
        raise CaptureError(
            f"{path.name} has no cells list", "save it again from Jupyter", field="notebook"
        )
    return nb


def _code_cells(nb: Any) -> list[Cell]:
    cells = []
    for i, cell in enumerate(nb.cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        tags = tuple(str(t) for t in cell.get("metadata", {}).get("tags", []) or [])
        cells.append(Cell(i, str(source), tags))  # a NUL is refused where the job has it
    return cells


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().split("\n"))


def _closest(cells: list[Any], ran: str) -> Any:
    """The cell whose source (normalized) is most like ``ran``, the first of equals."""
    scores = [difflib.SequenceMatcher(None, _norm(c.source), ran).ratio() for c in cells]
    return cells[scores.index(max(scores))]


def _check_language(nb: Any, name: str) -> None:
    """Refuse a notebook whose kernel runs another language: a job runs Python."""
    meta = nb.get("metadata") or {}
    spec = meta.get("kernelspec")
    info = meta.get("language_info")
    spec = spec if isinstance(spec, dict) else {}
    info = info if isinstance(info, dict) else {}
    language = str(spec.get("language") or info.get("name") or "python").strip().lower()
    if language and language != "py" and not language.startswith(("python", "ipython")):
        raise CaptureError(
            f"{name} is a {language} notebook (kernel {spec.get('name', language)!r}); a job "
            "runs Python",
            "open a Python notebook, or run this one with its own kernel",
        )


def _collect_above(cells: list[Cell], until: int | None, sel: Selection) -> None:
    """The job's cells before position ``until`` (all with None) into ``sel``: other
    ``%%tfc_run`` cells left out, cells tagged tfc-skip / tfc-local-only noted as skipped."""
    for cell in cells:
        if until is not None and cell.index >= until:
            break
        if is_run_cell(cell.source):
            sel.left_out.append(cell)
            continue
        if SKIP_TAGS & set(cell.tags):
            sel.skipped.append(cell.index)
            sel.left_out.append(cell)
            continue
        sel.cells.append(cell)


def _saved_at(path: Path | None) -> str:
    """The time ``path`` was last saved (``18:02:11``), or ``""``."""
    import time

    try:
        return time.strftime("%H:%M:%S", time.localtime(path.stat().st_mtime)) if path else ""
    except OSError:
        return ""


def _clock(at: float) -> str:
    import time

    return time.strftime("%H:%M:%S", time.localtime(at))


def _cell_ids(nb: Any) -> dict[int, str]:
    """Notebook position -> nbformat (4.5) cell id, for the cells that have one."""
    return {
        i: cell["id"]
        for i, cell in enumerate(nb.cells, start=1)
        if isinstance(cell.get("id"), str) and cell["id"]
    }


def _as_run(
    cells: list[Cell], ids: dict[int, str], until: int, executed: Executed, sel: Selection
) -> list[Cell]:
    """``cells`` with those above position ``until`` as the kernel last ran them (by cell id);
    a warning names each whose saved code differs, and each that has not run in this kernel."""
    path = sel.notebook
    saved = _saved_at(path)
    mtime = path.stat().st_mtime if path is not None and saved else None
    history = {_norm(text) for text in executed.history}
    out = []
    for cell in cells:
        cell_id = ids.get(cell.index)
        if cell.index >= until or not cell_id or is_run_cell(cell.source):
            out.append(cell)
            continue
        ran = executed.ran.get(cell_id)
        skipped = bool(SKIP_TAGS & set(cell.tags))
        if ran is None:
            if not skipped and cell.source.strip() and _norm(cell.source) not in history:
                since = ""
                if executed.loaded_at and executed.loaded_at > 1:
                    since = f" since tfc_jupyter was loaded (In [{executed.loaded_at}])"
                sel.warnings.append(
                    f"cell {cell.index} has not run in this kernel{since}: the job uses it as saved"
                )
            out.append(cell)
            continue
        if _norm(ran.code) == _norm(cell.source):
            out.append(cell)
            continue
        out.append(Cell(cell.index, ran.code, cell.tags, cell.label))
        if skipped:
            continue
        when = (f"In [{ran.count}] at " if ran.count else "at ") + _clock(ran.at)
        if is_run_cell(ran.code):
            sel.warnings.append(
                f"cell {cell.index} last ran ({when}) as a %%tfc_run cell: the job leaves it out"
            )
        elif mtime is not None and ran.at < mtime:
            sel.warnings.append(
                f"cell {cell.index} was changed after it last ran ({when}; saved {saved}): the "
                "job uses the code as it ran. Run the cell to use the change."
            )
        else:
            sel.warnings.append(
                f"cell {cell.index} ran ({when}) as edited after the notebook was saved"
                + (f" ({saved})" if saved else "")
                + ": the job uses the code as it ran"
            )
    known = set(ids.values())
    added = [
        ran
        for cell_id, ran in executed.ran.items()
        if cell_id not in known
        and mtime is not None
        and ran.at > mtime
        and not is_run_cell(ran.code)
    ]
    if added:
        runs = ", ".join(f"In [{ran.count}]" for ran in added if ran.count)
        sel.warnings.append(
            f"{runs or f'{len(added)} cell(s)'} ran in this kernel after {sel.name} was saved "
            f"({saved}), from cells it does not hold (added since the save?): the job leaves "
            "them out. Save the notebook (Ctrl+S) to include them."
        )
    return out


def select_cells(
    nb: Any,
    *,
    path: Path | None,
    how: str,
    magic_line: str | None = None,
    body: str | None = None,
    cell_number: int | None = None,
    executed: Executed | None = None,
) -> Selection:
    """Pick the job's cells from a notebook.

    Args:
        nb: the notebook (nbformat v4 node).
        path, how: where it came from (for messages).
        magic_line, body: the ``%%tfc_run`` cell as the user ran it (None from the CLI).
        cell_number: from the CLI, the 1-based position of the ``%%tfc_run`` cell to use.
        executed: what the kernel ran, by cell id (from the magic): the cells above the
            ``%%tfc_run`` cell are taken as they last ran, not as saved, and named where the
            two differ. Without a cell id the kernel knows, the cells are as saved (a note says
            so).
    """
    name = path.name if path else "the notebook"
    _check_language(nb, name)
    cells = _code_cells(nb)
    runs = [c for c in cells if is_run_cell(c.source)]
    sel = Selection(cells=[], notebook=path, how=how)
    chosen: Cell | None = None
    ids = _cell_ids(nb) if executed is not None else {}
    live = executed is not None and not executed.ran.keys().isdisjoint(ids.values())
    if body is not None:
        chosen = _cell_as_ran(runs, f"{MAGIC} {magic_line or ''}", body, sel, live=live)
    elif cell_number is not None:
        chosen = _numbered_cell(cells, runs, cell_number, name)
    elif runs:
        chosen = runs[0]
        if len(runs) > 1:
            sel.warnings.append(
                f"{name} has {len(runs)} %%tfc_run cells; used the first (cell "
                f"{chosen.index}); pass --cell N for another"
            )
    if executed is not None and chosen is not None:
        if live:
            cells = _as_run(cells, ids, chosen.index, executed, sel)
        elif any(c.index < chosen.index for c in cells):
            saved_at = _saved_at(path)
            sel.notes.append(
                f"the cells above the %%tfc_run cell are as saved in {name}"
                + (f" ({saved_at})" if saved_at else "")
                + ": this kernel knows none of its cell ids (the frontend sends none, or the "
                "notebook has none), so an edit run but not saved is not seen. Save the notebook "
                "(Ctrl+S) before %%tfc_run."
            )
    _collect_above(cells, chosen.index if chosen is not None else None, sel)
    _add_run_cell(sel, chosen, name)
    return sel


def _cell_as_ran(runs: list[Cell], first: str, body: str, sel: Selection, *, live: bool) -> Cell:
    """The ``%%tfc_run`` cell the user ran (``first`` its magic line, then ``body``): the saved
    cell that holds it, or, where none does (unsaved edits), the cell as ran in place of the
    saved one most like it, with a warning.

    Raises:
        CaptureError: the notebook holds no ``%%tfc_run`` cell as saved.
    """
    name = sel.notebook.name if sel.notebook else "the notebook"
    ran = _norm(first.strip() + "\n" + body)
    exact = [c for c in runs if _norm(c.source) == ran]
    if exact:
        if len(exact) > 1:
            sel.warnings.append(
                f"{name} has {len(exact)} identical %%tfc_run cells; used the "
                f"first (cell {exact[0].index})"
            )
        return exact[0]
    if not runs:
        raise CaptureError(
            f"{name} holds no %%tfc_run cell as saved, so the cells above it are unknown",
            "save the notebook (Ctrl+S) and run the cell again, or pass --notebook PATH",
            field="notebook",
        )
    alike = _closest(runs, ran)
    saved_at = _saved_at(sel.notebook)
    sel.warnings.append(
        f"{name}{f' (saved {saved_at})' if saved_at else ''} does not hold the %%tfc_run "
        "cell as you ran it (unsaved edits?): used the cell as you ran it, in place of "
        f"cell {alike.index}, and the cells above it "
        + (
            "as this kernel last ran them"
            if live
            else "as saved. Save the notebook (Ctrl+S) to include edits above it."
        )
    )
    return Cell(alike.index, f"{first}\n{body}", alike.tags)


def _numbered_cell(cells: list[Cell], runs: list[Cell], cell_number: int, name: str) -> Cell:
    """The ``%%tfc_run`` cell at position ``cell_number`` (the CLI's ``--cell``).

    Raises:
        CaptureError: the cell there is not a ``%%tfc_run`` cell, naming those that are.
    """
    found = [c for c in cells if c.index == cell_number]
    if not found or not is_run_cell(found[0].source):
        where = ", ".join(str(c.index) for c in runs) or "none"
        raise CaptureError(
            f"cell {cell_number} of {name} is not a %%tfc_run cell",
            f"pass --cell with one of: {where}",
            field="cell",
        )
    return found[0]


def _add_run_cell(sel: Selection, chosen: Cell | None, name: str) -> None:
    """End ``sel`` with the ``%%tfc_run`` cell ``chosen``; without one, warn that the job is
    every code cell of the notebook."""
    if chosen is not None:
        sel.cells.append(chosen)
        sel.run_cell = chosen.index
        sel.magic_line = split_run_cell(chosen.source)[0]
    elif sel.cells:
        sel.warnings.append(
            f"{name} has no %%tfc_run cell: the job is every code cell of the notebook "
            f"({len(sel.cells)} cells"
            + (f", less {len(sel.skipped)} tagged tfc-skip" if sel.skipped else "")
            + ")"
        )


def read_script(path: Path, how: str = "entry point") -> Selection:
    """A ``.py`` entry point as a job: the file as it is, one "cell" (``train.py, line N`` in
    errors), run from its own folder so its modules and data files are beside it.

    Raises:
        CaptureError: the file cannot be read, is not UTF-8 text, or is not Python.
    """
    raw = _read(path, SCRIPT_LIMIT, "script", "entry_point")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CaptureError(
            f"{path.name} is not a UTF-8 text file",
            "pass a Python script (.py) or a notebook (.ipynb)",
            field="entry_point",
        ) from None
    return script_selection(path, text, how)


def script_selection(path: Path, text: str, how: str) -> Selection:
    """The job of a script whose text is ``text`` (read from ``path``, or an editor's)."""
    if "\x00" in text:
        raise CaptureError(
            f"{path.name} is a binary file, not a Python script",
            "pass a Python script (.py) or a notebook (.ipynb)",
            field="entry_point",
        )
    return Selection(
        cells=[Cell(1, text, (), label=path.name)],
        notebook=path,
        how=how,
        run_cell=1,
        script=True,
    )


def is_notebook_file(path: Path) -> bool:
    """True for an ``.ipynb`` file, or any file whose first non-blank byte opens JSON."""
    if path.suffix.lower() == ".ipynb":
        return True
    if path.suffix.lower() in (".py", ".pyw"):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"{")


def select_above(nb: Any, *, path: Path | None, how: str, source: str) -> Selection:
    """The cells above the cell whose source is ``source`` (the cell that called
    ``tfc_jupyter.run()``, as tfc.run took the notebook). The calling cell itself is left out:
    in the job its ``run()`` would return at once, and what follows it is the launch's business.

    Raises:
        CaptureError: the saved notebook holds no such cell (unsaved), naming the fix.
    """
    name = path.name if path else "the notebook"
    _check_language(nb, name)
    cells = _code_cells(nb)
    ran = _norm(source)
    exact = [c for c in cells if _norm(c.source) == ran]
    sel = Selection(cells=[], notebook=path, how=how)
    if exact:
        chosen = exact[-1] if len(exact) > 1 else exact[0]
        if len(exact) > 1:
            sel.warnings.append(
                f"{name} has {len(exact)} identical cells calling run(); used the cells above "
                f"the last (cell {chosen.index})"
            )
    else:
        callers = [c for c in cells if "run(" in c.source]
        if not callers:
            raise CaptureError(
                f"{name} as saved holds no cell calling run(), so the cells above it are unknown",
                "save the notebook (Ctrl+S) and run the cell again, or pass entry_point=",
                field="notebook",
            )
        chosen = _closest(callers, ran)
        sel.warnings.append(
            f"{name} does not hold the cell calling run() as you ran it (unsaved edits?): used "
            f"the cells above cell {chosen.index} as saved. Save the notebook (Ctrl+S) first."
        )
    _collect_above(cells, chosen.index, sel)
    sel.run_cell = chosen.index
    if not sel.cells:
        raise CaptureError(
            f"no code cell above cell {chosen.index} of {name}: the job would run nothing",
            "call run() in a cell below the training code, or pass entry_point=",
            field="notebook",
        )
    return sel


def from_history(inputs: Sequence[str], magic_line: str, body: str) -> Selection:
    """Fallback: the kernel's inputs this session (In[1:]), de-duplicated, plus the run cell."""
    seen: set[str] = set()
    cells: list[Cell] = []
    for n, source in enumerate(inputs, start=1):
        text = source.strip()
        if (
            not text
            or text in seen
            or is_run_cell(text)
            or "get_ipython().run_cell_magic('tfc_run'" in text
        ):
            continue
        if text.startswith(("%tfc", "%load_ext", "%reload_ext")):
            continue
        seen.add(text)
        cells.append(Cell(n, source, (), label="In"))
    run = Cell(len(inputs) + 1, f"{MAGIC} {magic_line}\n{body}", (), label="In")
    warning = (
        f"no notebook file found: used this kernel's input history ({len(cells)} inputs, "
        "duplicates dropped) plus this cell, without the cells' tags (tfc-skip and "
        "tfc-local-only are in the file); pass --notebook PATH to use the notebook"
    )
    return Selection(
        cells=[*cells, run],
        notebook=None,
        how="kernel history",
        run_cell=run.index,
        magic_line=magic_line,
        warnings=[warning],
    )


def notebook_from_model(model: Mapping[str, Any]) -> Any:
    """A notebook sent by the frontend (JSON model) as an nbformat node."""
    import nbformat

    try:
        return nbformat.from_dict(dict(model))
    except Exception as exc:
        raise CaptureError(
            f"the notebook model is not valid ({exc})",
            "send the notebook's JSON content",
            field="notebook",
        ) from None
