"""A sweep on this machine driven by a process of its own (issue 47): ``python -m
tfc_jupyter.trials.driver FOLDER``.

The jobs API (``POST /jobs`` with ``--sweep`` on the local or docker backend) cannot drive a
sweep in the server: the server may stop, and a request must answer now. As the local
supervisor is started for a job, :func:`start_driver` writes what the sweep is made of to its
folder (``driver.json``: the selected cells, as the server read them, and the options line
``plan.options.to_line()``) and starts the driver detached, in its own session, logging to
``driver.log`` there. The driver plans the same cells with the same options again (the same
sweep: its key is the script, the job and what it tries) and runs :func:`run_sweep` to the end.
It outlives the server; a second driver for the same sweep is refused (the sweep's lock).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BackendError, JobConflict, SpecError, TfcError
from ..util.files import confined, open_private, write_private
from .trials import LOCK, SWEEP_FILE, sweep_file, sweep_folder, sweep_label

if TYPE_CHECKING:
    from ..client import Client
    from ..notebook.capture import Selection
    from ..planner.plan import Plan

__all__ = [
    "DRIVER_FILE", "DRIVER_LOG", "Started", "driver_ended", "driver_error", "main", "start_driver",
]  # fmt: skip

DRIVER_FILE = "driver.json"
DRIVER_LOG = "driver.log"


@dataclasses.dataclass(frozen=True)
class Started:
    """A sweep whose driver was started: its id (as ``GET /sweeps/ID`` takes it), folder, pid."""

    sweep_id: str
    folder: Path
    pid: int
    trials: int
    parallel: int

    @property
    def log(self) -> Path:
        return self.folder / DRIVER_LOG


def _cell(cell: Any) -> dict[str, Any]:
    return {
        "index": cell.index,
        "source": cell.source,
        "tags": list(cell.tags),
        "label": cell.label,
    }


def selection_json(selection: Selection) -> dict[str, Any]:
    """The selection as JSON (:func:`selection_from_json` reads it back)."""
    return {
        "cells": [_cell(c) for c in selection.cells],
        "notebook": str(selection.notebook) if selection.notebook else None,
        "how": selection.how,
        "run_cell": selection.run_cell,
        "magic_line": selection.magic_line,
        "skipped": list(selection.skipped),
        "script": selection.script,
        "notes": list(selection.notes),
        "left_out": [_cell(c) for c in selection.left_out],
        "cell_id": selection.cell_id,
        "folder": str(selection.folder) if selection.folder else None,
    }


def selection_from_json(data: dict[str, Any]) -> Selection:
    from ..notebook.capture import Selection
    from ..notebook.convert import Cell

    def cells(key: str) -> list[Cell]:
        return [
            Cell(int(c["index"]), str(c["source"]), tuple(c["tags"]), str(c["label"]))
            for c in data.get(key, [])
        ]

    return Selection(
        cells=cells("cells"),
        notebook=Path(data["notebook"]) if data.get("notebook") else None,
        how=str(data["how"]),
        run_cell=data.get("run_cell"),
        magic_line=str(data.get("magic_line", "")),
        skipped=list(data.get("skipped", [])),
        script=bool(data.get("script")),
        notes=list(data.get("notes", [])),
        left_out=cells("left_out"),
        cell_id=data.get("cell_id"),
        folder=Path(data["folder"]) if data.get("folder") else None,
    )


def _held(folder: Path) -> int:
    """Take the sweep's lock (an fd), or raise :class:`JobConflict`: a driver runs it already."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise JobConflict(
            f"sweep {folder.name} is being run by another process",
            f"follow it in the sidebar (GET sweeps/{sweep_label(folder.name)}), or wait for it",
        ) from None
    return fd


def start_driver(
    client: Client, plan: Plan, selection: Selection, *, root: Path | None = None
) -> Started:
    """Start the driver of ``plan``'s sweep, detached (its own session); it runs to the end
    whatever happens to this process.

    Raises:
        JobConflict: the sweep is being driven already (its lock is held).
        BackendError: the driver could not be started.
    """
    if plan.sweep is None:
        raise SpecError("the plan has no sweep", "pass --sweep NAME=SPACE")
    folder = sweep_folder(client, plan)
    fd = _held(folder)  # held until the driver has it: a second request meanwhile is refused
    try:
        driven = {
            "selection": selection_json(selection),
            "line": plan.options.to_line(),
            "root": str(root) if root else None,
            "started": time.time(),
        }
        write_private(folder / DRIVER_FILE, json.dumps(driven, indent=1), atomic=True)
        # what it tries, as run_sweep writes it: GET sweeps/ID answers before its first trial
        write_private(folder / SWEEP_FILE, sweep_file(plan), atomic=True)
        log = open_private(folder / DRIVER_LOG)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(folder), "--lock-fd", str(fd)],
                cwd=str(folder),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=(fd,),
                env=dict(os.environ),
            )
        except OSError as exc:
            raise BackendError(
                f"could not start the sweep's driver: {exc}",
                "check that this Python can run subprocesses",
            ) from None
        finally:
            log.close()
    finally:
        os.close(fd)
    spec = plan.sweep.spec
    return Started(sweep_label(folder.name), folder, proc.pid, spec.trials, spec.parallel)


def _last_lines(log: Path) -> list[str]:
    """The lines of a driver's log in its last 8 KB ([] where it cannot be read)."""
    try:
        with log.open("rb") as fh:
            fh.seek(max(0, log.stat().st_size - 8192))
            return fh.read(8192).decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def driver_error(log: Path) -> str:
    """The last ``error:`` line of a sweep driver's log, or ``""``."""
    errors = [line.split(" error: ", 1)[1] for line in _last_lines(log) if " error: " in line]
    return errors[-1][:300] if errors else ""


def driver_ended(log: Path) -> bool:
    """Whether the driver whose log this is has said its last line (done, or an error)."""
    return any(" done: " in line or " error: " in line for line in _last_lines(log))


def _say(text: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {text}", flush=True)


def drive(folder: Path, lock_fd: int | None = None) -> int:
    """Plan the sweep in ``folder`` again and run it to its end; 0 when it ran."""
    from ..client import Client
    from ..job.options import JobOptions
    from .trials import run_sweep

    try:
        driven = json.loads((folder / DRIVER_FILE).read_text())
        selection = selection_from_json(driven["selection"])
        client = Client()
        line = str(driven["line"])  # as %%tfc_run --dry-run shows it: the magic, its flags
        options = JobOptions.from_line(line.removeprefix("%%tfc_run").strip())
        root = driven.get("root")
        with confined(Path(root)) if root else contextlib.nullcontext():
            plan = client.plan(selection, options)
        if plan.refused is not None:
            raise plan.refused
        if sweep_folder(client, plan) != folder:
            raise SpecError(
                f"the cells planned again make another sweep ({sweep_folder(client, plan).name})",
                "launch the sweep again",
            )
    except TfcError as exc:
        _say(f"error: {exc.ui_text()}")
        return 1
    finally:
        if lock_fd is not None:  # the starter's hold: run_sweep takes the lock itself
            os.close(lock_fd)

    def changed(sweep: Any) -> None:
        done = sum(t.state != "running" for t in sweep.trials)
        _say(f"{done} of {sweep.spec.trials} trials ended; {sweep.summary_line()}")

    _say(f"driving sweep {folder.name} (pid {os.getpid()}): {driven['line']}")
    try:
        sweep = run_sweep(client, plan, on_change=changed)
    except TfcError as exc:
        _say(f"error: {exc.ui_text()}")
        return 1
    _say(f"done: {sweep.summary_line()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    lock_fd = None
    if "--lock-fd" in args:
        at = args.index("--lock-fd")
        lock_fd = int(args[at + 1])
        del args[at : at + 2]
    if len(args) != 1:
        print("usage: python -m tfc_jupyter.trials.driver SWEEP_FOLDER", file=sys.stderr)
        return 2
    return drive(Path(args[0]), lock_fd)


if __name__ == "__main__":
    sys.exit(main())
