"""Hooks the edges add to the core without the core importing them (IPython, the server).

:data:`JOB_ENDED` is called by :meth:`tfc_jupyter.jobs.Job.wait` with the job and its record
when it sees the job ended: ``%load_ext tfc_jupyter`` adds the hook that sets a run cell's
names in the kernel. Importing this module costs nothing (the extension loads it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

JOB_ENDED: list[Callable[[Any, Any], None]] = []
"""``hook(job, record)``, for every job :meth:`~tfc_jupyter.jobs.Job.wait` sees end."""
