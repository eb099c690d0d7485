"""TensorBoard for a job's logs, served on loopback from this machine (``%tfc_tensorboard``).

A job's TensorBoard folders are the ones its ``TensorBoard`` callbacks wrote (the runtime reports
them, :mod:`tfc_jupyter.returns.results`), ``tfc_runtime.tensorboard_dir()`` in its job folder, and
``<base output dir>/logs`` when that is a folder here. One TensorBoard process serves one job;
asking again for the same job gives the same address while it runs.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import BackendError, SpecError
from ..util.ports import free_ports

if TYPE_CHECKING:
    from ..store.records import JobStore
    from .results import Results


class Job(Protocol):
    """What TensorBoard reads of a job (a :class:`tfc_jupyter.jobs.Job` is one): typed by what
    it is, so this module stands below ``jobs.py``, which imports what comes back."""

    id: str
    store: JobStore

    def results(self) -> Results: ...


START_S = 60.0
"""Longest TensorBoard may take to answer after it starts."""
_SERVERS: dict[str, tuple[subprocess.Popen[bytes], str]] = {}


def log_dirs(job: Job) -> list[str]:
    """The job's TensorBoard folders, as the job named them (reported first)."""
    rec = job.store.get(job.id)
    found = list(job.results().tensorboard)
    if rec.job_dir:
        found.append(str(Path(rec.job_dir) / "tensorboard"))
    base = (rec.spec or {}).get("base_output_dir")
    if base:
        found.append(f"{str(base).rstrip('/')}/logs")
    return list(dict.fromkeys(found))


def serve(job: Job, *, start_s: float = START_S) -> str:
    """Start (or find) TensorBoard on the job's folders; its ``http://127.0.0.1:PORT/`` address.

    Raises:
        TfcError: the job wrote no TensorBoard logs here, TensorBoard is not installed, or it
            did not answer within ``start_s`` seconds.
    """
    running = _SERVERS.get(job.id)
    if running is not None and running[0].poll() is None:
        return running[1]
    found = log_dirs(job)
    here = [d for d in found if "://" not in d and Path(d).is_dir()]
    remote = [d for d in found if "://" in d]
    if not here:
        where = f"; its cloud folder {remote[0]} opens with tensorboard --logdir" if remote else ""
        raise SpecError(
            f"job {job.id} wrote no TensorBoard logs on this machine{where}",
            "add tf.keras.callbacks.TensorBoard(tfc_runtime.tensorboard_dir()) to fit's "
            "callbacks and run the job again",
        )
    if importlib.util.find_spec("tensorboard") is None:
        raise SpecError(
            "TensorBoard is not installed in this kernel's environment",
            "pip install tensorboard (or tfc_jupyter[tensorboard])",
        )
    port = free_ports(1)[0]
    url = f"http://127.0.0.1:{port}/"
    if len(here) == 1 or any("," in d or ":" in d for d in here):
        where_args = ["--logdir", here[0]]
    else:
        names = [f"{i}-{Path(d).name or 'logs'}" for i, d in enumerate(here)]
        spec = ",".join(f"{n}:{d}" for n, d in zip(names, here, strict=True))
        where_args = ["--logdir_spec", spec]
    log = Path(job.store.get(job.id).job_dir or ".") / "tensorboard-server.log"
    command = [sys.executable, "-m", "tensorboard.main", *where_args]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with open(log, "wb") as out:  # an argument list: no folder name reaches a shell
        proc = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + start_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        with (
            contextlib.suppress(OSError, urllib.error.URLError),
            urllib.request.urlopen(url, timeout=2) as reply,
        ):
            if reply.status == 200:
                _SERVERS[job.id] = (proc, url)
                return url
        time.sleep(0.3)
    _stop(proc)
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
    raise BackendError(
        f"TensorBoard did not start within {start_s:.0f} s" + (f": {tail[0]}" if tail else ""),
        f"see {log}",
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def stop_all() -> None:
    """Stop every TensorBoard this process started (at exit, and for tests)."""
    while _SERVERS:
        _, (proc, _) = _SERVERS.popitem()
        _stop(proc)


atexit.register(stop_all)
