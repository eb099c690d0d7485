"""A job's executed notebook (``executed.ipynb``, written by ``tfc_runtime.executed``), read
back through the border and saved where the user asks (``tfc-jupyter notebook JOB``).

The job wrote it, so it is untrusted: read with :func:`~tfc_jupyter.returns.border.read_json`
(no link followed, a regular file only, at most :data:`MAX_BYTES`), validated as nbformat 4,
its rich outputs as Jupyter shows an untrusted notebook's
(:func:`~tfc_jupyter.returns.border.safe_bundle`), at most
:data:`~tfc_jupyter.returns.border.MAX_OUTPUTS` of them, and never written over the user's
notebook, nor over any file unless asked (``--force``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tfc_runtime.executed import FILE

from ..errors import ConfigError, Fix, JobNotFound
from ..util.files import write_private
from . import border

MAX_BYTES = 64 << 20
"""Bytes of an executed notebook read back at most."""


def read(job_dir: str | Path, job_id: str = "") -> Any:
    """The job's executed notebook, checked (an ``nbformat.NotebookNode``).

    Raises:
        JobNotFound: the job left none (a ``.py`` job, one that never started, an older one).
        ConfigError: it is not a notebook the border admits (over the size limit, a link,
            not valid nbformat), in one line.
    """
    import nbformat

    try:
        data = border.read_json(job_dir, FILE, MAX_BYTES)
    except FileNotFoundError:
        raise JobNotFound(
            f"job {job_id or Path(job_dir).name} left no executed notebook",
            "only notebook jobs leave one, once their code has started; "
            "tfc-jupyter logs JOB prints what it printed",
        ) from None
    except (OSError, border.Refused) as exc:
        raise ConfigError(f"the job's executed notebook is not read: {exc}", _LOGS) from None
    try:
        nb = nbformat.from_dict(data)
        nbformat.validate(nb)
    except Exception as exc:  # nbformat's ValidationError, or what is not a notebook at all
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"the job's executed notebook is not valid nbformat: {why}", _LOGS
        ) from None
    _sanitize(nb)
    return nb


_LOGS = "tfc-jupyter logs JOB prints what the job printed"


def _sanitize(nb: Any) -> None:
    """Rich outputs as an untrusted notebook's; over :data:`border.MAX_OUTPUTS` left out."""
    shown = 0
    for cell in nb.cells:
        kept = []
        for out in cell.get("outputs", []):
            if out.get("output_type") in ("display_data", "execute_result"):
                shown += 1
                if shown > border.MAX_OUTPUTS:
                    continue
                out["data"] = border.safe_bundle(dict(out.get("data", {})))
                if len(json.dumps(out.get("metadata", {}), default=str)) > 10_000:
                    out["metadata"] = {}
            kept.append(out)
        if cell.get("cell_type") == "code":
            cell["outputs"] = kept


def default_path(notebook: str | None, job_id: str) -> Path:
    """Where ``tfc-jupyter notebook JOB`` writes without ``-o``: ``NAME.executed.ipynb`` next to
    the job's notebook, else ``JOB.executed.ipynb`` here."""
    if notebook:
        path = Path(notebook)
        return path.with_name(f"{path.stem}.executed.ipynb")
    return Path.cwd() / f"{job_id}.executed.ipynb"


def save(record: Any, dest: str | Path | None = None, *, force: bool = False) -> Path:
    """Write the job's executed notebook to ``dest`` (else :func:`default_path`); the path.

    Raises:
        ConfigError: ``dest`` is the job's own notebook (never written), or exists and
            ``force`` is not given.
        JobNotFound, ConfigError: as :func:`read`.
    """
    import nbformat

    path = Path(dest) if dest is not None else default_path(record.notebook, record.id)
    if record.notebook and path.resolve() == Path(record.notebook).resolve():
        raise ConfigError(
            f"{path} is the job's own notebook: it is never written over",
            Fix.give("output", "PATH", after=" elsewhere"),
            field="output",
        )
    if path.exists() and not force:
        raise ConfigError(
            f"{path} exists already",
            [Fix("set", "force", verb="pass", after=" to replace it"), Fix.give("output", "PATH")],
            field="output",
        )
    if not record.job_dir:
        raise JobNotFound(f"job {record.id} has no job folder here", _LOGS)
    nb = read(record.job_dir, record.id)
    write_private(path, nbformat.writes(nb) + "\n", atomic=True)
    return path
