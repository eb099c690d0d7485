"""One way in: the :class:`Client` every front end calls.

The magics, the CLI, the REST server, the launch panel and Python code each parse their input
into :class:`~tfc_jupyter.job.options.JobOptions` (and a notebook selection), call one method here,
and render the result. The settings and the job store are resolved once, when the client is
made, so ``c.TfcConfig.home`` or ``TFC_JUPYTER_HOME`` mean the same store everywhere.

Example::

    from tfc_jupyter import Client, JobOptions
    client = Client()
    plan = client.plan_notebook("train.ipynb", JobOptions.of(workers=1))
    job = client.submit(plan)
    job.wait(timeout=600)
"""

from __future__ import annotations

import dataclasses
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .config import Settings, current_settings
from .errors import TfcError
from .job.options import JobOptions

if TYPE_CHECKING:  # the core is imported when it is used, never at %load_ext
    from .jobs import Job
    from .notebook.capture import Selection
    from .planner.plan import Plan
    from .store.records import JobRecord, JobState, JobStore


class Client:
    """Plan, submit, get, list, logs and cancel, with the settings and store resolved once.

    Args:
        settings: the effective defaults (default: this process's, with the running IPython
            shell's ``c.TfcConfig`` when there is one).
        store: the job records (default: the store under the settings' ``home``).
    """

    def __init__(self, settings: Settings | None = None, store: JobStore | None = None) -> None:
        self.settings = settings if settings is not None else current_settings()
        self._store = store

    @property
    def store(self) -> JobStore:
        """The job records (opened on first use: planning needs none)."""
        if self._store is None:  # the home these settings say (store_for would read them again)
            from .jobs import store_for
            from .store.records import default_home

            self._store = store_for(self.settings.get("home") or default_home())
        return self._store

    # ---------------------------------------------------------------- planning
    def plan(self, selection: Selection, options: JobOptions | None = None) -> Plan:
        """Plan a job from selected cells and options (a dry run: nothing starts), with the
        backend's verdict (``plan.refused``: what launching it would say), so a dry run and a
        run say the same thing.

        Raises:
            TfcError: a conversion, requirements or option problem, with the fix.
        """
        from .planner.plan import make_plan

        plan = make_plan(selection, options or JobOptions(), self.settings)
        return dataclasses.replace(plan, refused=self.verdict(plan), checked=True)

    def verdict(self, plan: Plan) -> TfcError | None:
        """What the plan's backend says before launching it: None, or its refusal (this
        machine has no GPU, no Docker engine answers, no Google Cloud project ...)."""
        from .jobs import backend_for

        try:
            backend_for(plan.spec.backend.value, self.store, self.settings).check(plan.spec)
        except TfcError as exc:
            return exc
        return None

    def plan_notebook(
        self,
        path: str | Path,
        options: JobOptions | None = None,
        *,
        cell: int | None = None,
        how: str = "command line",
    ) -> Plan:
        """Plan a saved notebook's job: its ``%%tfc_run`` cell (the first, or number
        ``cell``) and the cells above it, the cell's own flags with ``options`` over them."""
        from .notebook import capture

        file = Path(path)
        _entry_file(file, "notebook", "pass the path of an .ipynb file")
        nb = capture.read_notebook(file)
        selection = capture.select_cells(nb, path=file.resolve(), how=how, cell_number=cell)
        line = JobOptions.from_line(selection.magic_line)
        return self.plan(selection, (options or JobOptions()).over(line))

    def plan_script(
        self, path: str | Path, options: JobOptions | None = None, *, how: str = "entry point"
    ) -> Plan:
        """Plan a ``.py`` entry point's job: the script as it is, run from its own folder (its
        modules and the files it reads beside it), ``options.args`` as its ``sys.argv``."""
        from .notebook import capture

        file = Path(path)
        _entry_file(file, "entry point", "pass the path of a .py or .ipynb file")
        return self.plan(capture.read_script(file.resolve(), how=how), options)

    def plan_file(
        self,
        path: str | Path,
        options: JobOptions | None = None,
        *,
        cell: int | None = None,
        how: str = "command line",
    ) -> Plan:
        """Plan an entry point: a notebook (see :meth:`plan_notebook`) or a ``.py`` script
        (see :meth:`plan_script`), told apart by its suffix (or, without one, its content)."""
        from .notebook import capture

        file = Path(path)
        _entry_file(file, "entry point", "pass the path of a .py or .ipynb file")
        if capture.is_notebook_file(file):
            return self.plan_notebook(file, options, cell=cell, how=how)
        if cell is not None:
            raise TfcError(
                f"--cell {cell} names a notebook cell, and {file.name} is a script",
                "drop --cell (a script runs whole)",
                field="cell",
            )
        return self.plan_script(file, options, how=how)

    # ---------------------------------------------------------------- jobs
    def submit(self, plan: Plan) -> Job:
        """Launch a planned job on its backend; returns at once with its :class:`Job`."""
        from .jobs import launch

        return launch(plan, store=self.store)

    def job(self, job_id: str) -> Job:
        """The handle of a job: its id or a unique prefix of it."""
        from .jobs import Job

        return Job(job_id, self.store, self.settings)

    def get(self, job_id: str) -> JobRecord:
        """A job's record, brought up to date by its backend when it is still running."""
        return self.job(job_id).record()

    def list(
        self,
        limit: int | None = 20,
        *,
        backend: str | None = None,
        states: Iterable[JobState] | None = None,
    ) -> list[JobRecord]:
        """Recent jobs, newest first; unfinished jobs on this machine are checked for life."""
        from .jobs import refreshed

        records = self.store.list(
            limit=limit, backend=backend, states=list(states) if states else None
        )
        return refreshed(records, self.store, self.settings)

    def logs(self, job_id: str, replica: str | None = None) -> str:
        """Everything a job's replicas printed so far."""
        return self.job(job_id).logs(replica)

    def cancel(self, job_id: str) -> JobRecord:
        """Stop every process (or Vertex AI replica) of a job."""
        return self.job(job_id).cancel()

    def delete(self, job_id: str, *, files: bool = False) -> JobRecord:
        """Remove an ended job from the records; with ``files``, its folder here too (logs,
        outputs, checkpoints). What it wrote elsewhere (``gs://``, an image) is left.

        Raises:
            JobConflict: the job has not ended (cancel it first).
        """
        from .jobs import delete

        return delete(self.store, job_id, files=files)


def _entry_file(file: Path, what: str, hint: str) -> None:
    """Refuse, in one line, an entry point that is not a file this user can reach: missing, or
    in a folder they may not read (``Path.is_file`` raises PermissionError there)."""
    try:
        found = file.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise TfcError(f"{what} {str(file)!r} not found", hint) from None
    except OSError as exc:
        raise TfcError(
            f"cannot read {what} {str(file)!r}: {exc.strerror or exc}",
            "check its permissions and its folders' (each must be readable by you), or copy "
            "it somewhere you can read",
        ) from None
    if not stat.S_ISREG(found.st_mode):
        raise TfcError(f"{what} {str(file)!r} is not a file", hint)
