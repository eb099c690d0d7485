"""Where a task was when it died, and one readable line for what went wrong.

A replica killed by a signal leaves no Python traceback. Two records survive it in
``$TFC_JOB_DIR``: ``errors/<task>.fault`` (Python's faulthandler: segfaults, aborts) and
``status/<task>.where`` (the notebook cell and line the main thread was running, refreshed twice a
second by a daemon thread: what an OOM kill, SIGKILL, leaves). The job's watcher reads both.
"""

from __future__ import annotations

import errno
import faulthandler
import os
import re
import shutil
import sys
import threading
import types
from collections.abc import Callable
from typing import IO, Any

INTERVAL_S = 0.5

_fault_file: IO[str] | None = None  # kept open for faulthandler for the life of the process


def _task_file(folder: str, task: str, suffix: str) -> str | None:
    job_dir = os.environ.get("TFC_JOB_DIR")
    if not job_dir:
        return None
    path = os.path.join(job_dir, folder)
    os.makedirs(path, exist_ok=True)
    return os.path.join(path, f"{task}{suffix}")


def enable_fault_log(task: str) -> None:
    """Send faulthandler's tracebacks (SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL) to
    ``errors/<task>.fault``; stderr outside a job."""
    global _fault_file
    path = _task_file("errors", task, ".fault")
    if path is None:
        faulthandler.enable()
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    _fault_file = os.fdopen(fd, "w", encoding="utf-8")
    faulthandler.enable(file=_fault_file, all_threads=False)


def _main_frame_line(script: str, thread_id: int) -> int | None:
    """The innermost line of ``script`` on the main thread's stack, None when not in it."""
    frame: Any = sys._current_frames().get(thread_id)
    while frame is not None:
        if frame.f_code.co_filename == script:
            return int(frame.f_lineno)
        frame = frame.f_back
    return None


def track_position(script: str, task: str, describe: Callable[[int], str]) -> None:
    """Start the daemon thread that keeps ``status/<task>.where`` = the notebook location the
    main thread is running (``describe(script_line)``), written only when it changes."""
    path = _task_file("status", task, ".where")
    if path is None:
        return
    main_id = threading.main_thread().ident or 0
    stop = threading.Event()

    def loop() -> None:
        last: int | None = None
        while not stop.wait(INTERVAL_S):
            line = _main_frame_line(script, main_id)
            if line is None or line == last:
                continue
            last = line
            tmp = f"{path}.tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(describe(line))
                os.replace(tmp, path)
            except OSError:
                return

    threading.Thread(target=loop, name="tfc-position", daemon=True).start()


_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception)): \S")
_NOT_THE_CAUSE = ("[[", ";", "Please see", "See ", "http", "For more", "Call arguments")


def summary(exc: BaseException) -> str:
    """``Type: what went wrong`` in one line.

    TensorFlow wraps errors raised in a ``tf.function`` as ``in user code:`` followed by the
    traced frames and the real message (``ValueError: ...``), sometimes with a "Please see
    https://..." line after it; a heading line like that (ending in ``:``) gives way to the last
    line that names an error, else the last line that is not such a pointer. A known cause gets
    its explanation after the message.
    """
    name = type(exc).__name__
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if len(lines) > 1 and text.endswith(":"):
        errors = [ln for ln in lines[1:] if _ERROR_LINE.match(ln)]  # "ValueError: the cause"
        useful = [ln for ln in lines[1:] if not ln.startswith(_NOT_THE_CAUSE)]
        text = (errors or useful or lines)[-1]
    if text.startswith(f"{name}: "):
        text = text[len(name) + 2 :]
    text = text if len(text) <= 300 else text[:297] + "..."
    out = f"{name}: {text}" if text else name
    hint = explain(exc)
    return f"{out} ({hint})" if hint else out


def explain(exc: BaseException) -> str:
    """One sentence on a cause we recognise, "" otherwise."""
    message = str(exc)
    if "complex" in message and "Collective" in message:
        return (
            "the strategy's collectives cannot all-reduce complex values: keep variables real "
            "(real and imaginary parts apart) or train without a multi-device strategy"
        )
    if "Mixing different tf.distribute.Strategy objects" in message:
        return "two strategies in one program: run with --strategy none (or auto)"
    if "Collective ops must be configured at program startup" in message:
        return "build MultiWorkerMirroredStrategy before any other TensorFlow call"
    if (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)) or (
        "No space left on device" in message
    ):
        return _disk_full(getattr(exc, "filename", None))
    return ""


def _disk_full(filename: object) -> str:
    """Where the disk is full and how much is free there, as the hint of an error line."""
    if not isinstance(filename, str):  # a write() or TensorFlow's own file error: no path
        return "a disk the job writes to is full: free some space, or write to another disk"
    where = os.path.dirname(os.path.abspath(filename))
    while not os.path.isdir(where) and where != os.path.dirname(where):
        where = os.path.dirname(where)
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return "the disk is full: free some space, or write to another disk"
    return (
        f"the disk holding {where} is full ({free // 1_000_000} MB free): free some space, or "
        "write the model and checkpoints to another disk"
    )


_RUNTIME = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _ours(filename: str) -> bool:
    """A file of this runtime (its wrappers of ``fit``, ``save``, ``print``)."""
    return os.path.abspath(filename).startswith(_RUNTIME)


def _filtering() -> bool:
    """Keras' own setting: ``keras.config.disable_traceback_filtering()`` shows every frame,
    the runtime's too (on by default, as Keras')."""
    config = getattr(sys.modules.get("keras"), "config", None)
    enabled = getattr(config, "is_traceback_filtering_enabled", None)
    try:
        return True if enabled is None else bool(enabled())
    except Exception:  # an older Keras: filtered, as Keras filters its own
        return True


def without_runtime(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` less this runtime's own frames, as Keras leaves its frames out of a traceback:
    the code's line is followed by the library it called (the runtime wraps ``fit``). The
    innermost frame stays, whoever's it is: it is where the error was raised."""
    if not _filtering():
        return tb
    kept = []
    while tb is not None:
        if tb.tb_next is None or not _ours(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for frame in reversed(kept):
        out = types.TracebackType(out, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return out
