"""IPython magics: ``%%tfc_run``, ``%tfc_panel``, ``%tfc_jobs``, ``%tfc_logs``, ``%tfc_attach``,
``%tfc_cancel``, ``%tfc_tensorboard``, ``%tfc_config``, ``%tfc_machines``.

The magics only parse input and call the core (:mod:`tfc_jupyter.planner.plan`); every TfcError is
shown as one ``UsageError`` line, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class

from .errors import TfcError

if TYPE_CHECKING:  # %load_ext imports none of these: each is imported where it is used
    from .client import Client
    from .config import Settings
    from .job.options import JobOptions
    from .notebook import capture
    from .planner.plan import Plan


def _tfc_run_doc() -> str:
    from .notebook.convert import RULES

    rules = "\n".join(f"    {what}: {effect}" for what, effect in RULES)
    return f"""Run the notebook, up to and including this cell, as a training job.

The job is the code cells above this one plus its body, in notebook order (cells tagged
tfc-skip or tfc-local-only are left out), converted to a plain Python script:

{rules}

Examples::

    %%tfc_run --dry-run                    # show the plan, launch nothing
    %%tfc_run --workers 1                  # chief + 1 worker on this machine
    %%tfc_run --backend vertex --workers 2 --gpus 1 --gpu-type T4
    %%tfc_run --tpu v3-8 --dry-run

As a line magic, it runs a script or notebook file instead (a ``.py`` runs as it is, from its
folder; words after ``--`` are its arguments)::

    %tfc_run train.py --workers 1 -- --epochs 3
    %tfc_run other.ipynb --dry-run
"""


def _installed_flags_doc() -> str:
    """The flags backends declare for themselves (built-in and installed), as ``%%tfc_run?``
    lists them (read when asked: finding the installed packages costs every ``%load_ext``
    otherwise)."""
    import argparse

    from .job.options import backend_fields

    fields = backend_fields()
    if not fields:
        return ""
    parser = argparse.ArgumentParser(prog="%%tfc_run", add_help=False, usage=argparse.SUPPRESS)
    group = parser.add_argument_group("flags of one backend")
    for field in fields:
        args, kwargs = field.argparse(only_given=False)
        group.add_argument(*args, **kwargs)
    return "\n" + parser.format_help()


def _full_doc() -> str:
    """``%%tfc_run?``: the flags (the option table, as IPython's ``magic_arguments`` shows
    them), the conversion rules, and the flags of the installed backends."""
    from .job.options import magic_decorate

    def tfc_run(line: str, cell: str | None = None) -> None:
        """(the help of %%tfc_run)"""

    tfc_run.__doc__ = _tfc_run_doc()
    return (magic_decorate(tfc_run).__doc__ or "") + _installed_flags_doc()


def _with_lazy_doc(func: Any) -> Any:
    """``func``'s help made when asked for (IPython's ``?`` calls an object's ``getdoc``):
    the option table and the conversion rules are not imported by ``%load_ext``."""
    func.__doc__ = "Run the notebook, up to and including this cell, as a training job " \
        "(%%tfc_run? lists the flags)."  # fmt: skip
    func.getdoc = _full_doc
    return func


@magics_class
class TfcMagics(Magics):
    """The tfc_jupyter magics."""

    def _client(self, settings: Settings | None = None) -> Client:
        """The one way in (:class:`~tfc_jupyter.client.Client`), with this shell's settings
        (read now, unless given)."""
        from .client import Client
        from .config import load_settings

        return Client(settings or load_settings(getattr(self.shell, "config", None)))

    def _find(self, explicit: str | None) -> tuple[Any, str, list[str]]:
        """The notebook of this kernel (see ``capture.find_notebook``)."""
        from .notebook import capture

        return capture.find_notebook(explicit, user_ns=getattr(self.shell, "user_ns", None))

    def _selection(self, args: JobOptions, line: str, body: str) -> capture.Selection:
        from .notebook import capture

        path, how, warnings = self._find(args.notebook)
        history = getattr(self.shell, "history_manager", None)
        raw = getattr(history, "input_hist_raw", None) or self.shell.user_ns.get("In", [""])  # type: ignore[union-attr]
        inputs = list(raw[1:])
        if (inputs and capture.is_run_cell(inputs[-1])) or (
            inputs and "run_cell_magic('tfc_run'" in inputs[-1]
        ):
            inputs = inputs[:-1]
        started = self.shell.user_ns.get("_dh") or [None]  # type: ignore[union-attr]
        if path is None:  # nbconvert, papermill: the notebook of the kernel's folder
            folders = [Path(str(f)) for f in (started[0], os.getcwd()) if f]
            source = f"{capture.MAGIC} {line}".strip() + "\n" + body
            path, found = capture.folder_notebook(folders, source, inputs)
            how = capture.FOLDER_HOW if path is not None else how
            warnings += found
        if path is None:
            selection = capture.from_history(inputs, line, body)
            if started[0] and os.path.isdir(str(started[0])):  # where the kernel started:
                selection.folder = Path(str(started[0]))  # its cells' %cd run again from there
        else:
            nb = capture.read_notebook(path)
            from .notebook import executed

            ran = executed.snapshot(self.shell)  # the cells above as this kernel ran them
            selection = capture.select_cells(
                nb, path=path, how=how, magic_line=line, body=body, executed=ran
            )
            from .notebook import carry

            carry.carry(selection, self.shell.user_ns)  # type: ignore[union-attr]
        selection.warnings[:0] = warnings
        return selection

    def parse(self, line: str) -> JobOptions:
        """The options of a ``%%tfc_run`` line; every bad line is one UsageError naming the fix.

        The line is split like a shell (POSIX quoting), exactly as the CLI, the REST API and
        the panel read a saved cell's line: ``--notebook "my folder/a.ipynb"`` names
        ``my folder/a.ipynb``, not a path with quotes in it.
        """
        from .job.options import JobOptions

        try:
            return JobOptions.from_line(line)
        except TfcError as exc:  # unbalanced quotes, an unknown flag, a bad value
            text = exc.message.rstrip(".")
            hint = (
                "check the quotes"
                if "quotes" in (exc.hint or "")
                else ("see %%tfc_run? for the flags")
            )
            raise UsageError(f"{text}. Fix: {hint}") from None

    def plan(self, line: str, cell: str, args: JobOptions | None = None) -> Plan:
        """Parse the flags and plan the job (the core of ``%%tfc_run``)."""
        args = args if args is not None else self.parse(line)
        return self._client().plan(self._selection(args, line, cell), args)

    @_with_lazy_doc
    @line_cell_magic
    def tfc_run(self, line: str, cell: str | None = None) -> Any:
        if cell is None:  # %tfc_run FILE [flags] [-- args]: a script or notebook file
            return self._run_file(line)
        if os.environ.get("TFC_REMOTE") == "1":  # inside a job: the cell is plain code
            self.shell.run_cell(cell)  # type: ignore[union-attr]
            return None
        try:
            args = self.parse(line)
            if args.interactive:  # the launch panel, pre-filled with the flags
                notebook = self._find(args.notebook)[0]
                select = lambda: self._selection(args, line, cell)  # noqa: E731
                return self._open_panel(select, notebook, base=args, remember=False)
            plan = self.plan(line, cell, args)
            if args.dry_run:
                _show(plan)  # with the backend's verdict, as launching it would say
                self.shell.user_ns["_tfc_plan"] = plan  # type: ignore[union-attr]
                return None
            return self._launch(plan, args)
        except TfcError as exc:
            raise UsageError(str(exc)) from None

    def _run_file(self, line: str) -> Any:
        """``%tfc_run FILE [flags] [-- args]``: plan and launch a ``.py`` or ``.ipynb`` file."""
        from .job.options import JobOptions, split_script_args, with_script_args

        if os.environ.get("TFC_REMOTE") == "1":  # inside a job: launching is the launcher's
            return None
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"cannot split the line: {exc}. Fix: check the quotes") from None
        flags, script_args = split_script_args(words)
        if not flags or flags[0].startswith("-"):
            raise UsageError(
                "%tfc_run names the file to run first. Fix: %tfc_run train.py [flags] "
                "[-- args], or use %%tfc_run as a cell magic for this notebook"
            )
        path, flag_words = flags[0], flags[1:]
        try:
            args = JobOptions.from_words(flag_words, prog="%tfc_run")
        except TfcError as exc:
            raise UsageError(str(exc)) from None
        args = with_script_args(args, script_args)
        try:
            plan = self._client().plan_file(path, args, how="%tfc_run")
            if args.dry_run:
                _show(plan)
                self.shell.user_ns["_tfc_plan"] = plan  # type: ignore[union-attr]
                return None
            return self._launch(plan, args)
        except TfcError as exc:
            raise UsageError(str(exc)) from None

    def _launch(self, plan: Plan, args: JobOptions) -> Any:
        from .returns import cell

        for warning in plan.warnings:
            print(f"! {warning}")
        notebook = cell.in_notebook(self.shell)
        if notebook and plan.selection.cell_id is None:  # the cell the job's output stays with
            plan.selection.cell_id = cell.run_cell_id(self.shell)
        if plan.selection.carried:  # an earlier run cell's names: sent into the job
            self._send(plan)
        if plan.sweep is not None:
            return self._sweep(plan, notebook)
        with _build_progress(self.shell):
            job = self._client(plan.settings).submit(plan)  # the settings it was planned with
        self.shell.user_ns["_tfc_job"] = job  # type: ignore[union-attr]
        spec = plan.spec
        workers = f" + {spec.worker_count} worker(s)" if spec.worker_count else ""
        print(
            f"Launched {job.id} on {spec.backend.value}: chief{workers}, strategy "
            f"{spec.resolved_strategy().value}. %tfc_cancel {job.id} stops it."
        )
        record = job.record()
        for label, url in (
            ("Vertex console", record.console_url),
            ("TensorBoard", record.tensorboard_url),
        ):
            if url:
                print(f"{label}: {url}")
        if notebook:  # JupyterLab follows the job there after a kernel restart or a reload
            from IPython.display import display

            display(cell.job_output(job.id), raw=True)
        if not args.wait:
            print(f"Not waiting: %tfc_logs {job.id} --follow (or job.follow()) shows the logs.")
            return job
        lines = plan.settings.seconds("cell_lines") if plan.settings else None
        return _follow_in_cell(
            job, verbose=args.verbose, shell=self.shell, lines=lines, cell_run=True
        )

    def _send(self, plan: Plan) -> None:
        """Write the names an earlier run cell brought back for the job to receive
        (:mod:`tfc_jupyter.notebook.carry`): jobs on this machine read them from their folder."""
        from . import registry
        from .notebook import carry

        traits = registry.traits(plan.spec.backend)
        if not (traits.on_this_machine or traits.image_here):
            names = ", ".join(plan.selection.carried)
            raise UsageError(
                f"{names} came back from an earlier %%tfc_run cell and is sent to jobs on this "
                f"machine only, not yet to {traits.label}. Fix: run this cell with --backend "
                "local, or move the code that reads it into that %%tfc_run cell"
            )
        home = self._client(plan.settings).store.path.parent / "received"
        plan.selection.received = carry.send(plan.selection, self.shell.user_ns, home)  # type: ignore[union-attr]

    def _sweep(self, plan: Plan, notebook: bool) -> Any:
        """Run the plan's sweep (:mod:`tfc_jupyter.trials.trials`): its table and plot kept up to
        date in the cell (a line a change in a terminal). At the end the best trial's run
        cell names are set here, as one job's are; the cell's value is the sweep
        (``sweep.best`` is the best trial's job). A sweep that stopped as its trials failed,
        or whose tuning job failed, raises :class:`SweepFailed` as a failed job does. An
        interrupt stops the driving, not the trials: running the cell again goes on with the
        same sweep."""
        from .trials.trial_table import SweepFailed
        from .trials.trials import Sweep, run_sweep, trial_lines

        shell = self.shell
        said = trial_lines(lambda line: print(line, flush=True))
        handle: Any = None
        if notebook:
            from IPython.display import HTML, display

            handle = display(HTML("<div>starting the sweep ...</div>"), display_id=True)

        def changed(sweep: Sweep) -> None:
            shell.user_ns["_tfc_sweep"] = sweep  # type: ignore[union-attr]
            if handle is not None:
                handle.update(HTML(sweep._repr_html_()))
            else:
                said(sweep)

        from . import registry

        wait = plan.options.wait
        if not wait and not registry.traits(plan.spec.backend).tunes:
            print(
                "--no-wait: a sweep on this machine is driven by this kernel, so the cell runs "
                "it to its end (interrupt it to stop driving: the trials go on)."
            )
        try:
            sweep = run_sweep(self._client(plan.settings), plan, on_change=changed, wait=wait)
        except KeyboardInterrupt:
            print(
                "Stopped the sweep; its running trials go on. Run this cell again to go on "
                "with it (finished trials are kept)."
            )
            return shell.user_ns.get("_tfc_sweep")  # type: ignore[union-attr]
        if handle is not None:  # the cell's value shows the final table and plot
            handle.update(HTML(""))
        print(sweep.summary_line())
        if sweep.going_on:
            print(f"The sweep's job goes on: %tfc_attach {sweep.job_id} follows it.")
        shell.user_ns["_tfc_sweep"] = sweep  # type: ignore[union-attr]
        if sweep.failure:  # as a failed job: the cell ends in error, no names come back
            raise SweepFailed(sweep)
        best = sweep.best
        if best is not None:
            rec = best.record()
            if rec.job_dir:
                print(f"The best trial's names ({best.id}):")
                _bring_back(best, rec, shell, _Outputs(best, False, sys.stdout))
        return sweep

    @line_magic
    def tfc_panel(self, line: str) -> None:
        """Open the launch panel: pick the backend, strategy and machines from the catalog (each
        choice checked as you pick), see the cost and the equivalent %%tfc_run line, launch,
        watch the logs, cancel, and attach to earlier jobs.

        The job is the saved notebook's first %%tfc_run cell and the cells above it (else every
        code cell), as `tfc-jupyter run` takes it. Flags as for %%tfc_run pre-fill the panel:
        %tfc_panel --workers 1 --backend vertex
        """
        from .job.options import JobOptions

        try:
            given = JobOptions.from_words(shlex.split(line), prog="%tfc_panel")
            explicit = given.notebook
            notebook = self._find(explicit)[0]
            base = JobOptions.from_line(self._panel_selection(explicit).magic_line)
            select = lambda: self._panel_selection(explicit)  # noqa: E731
            self._open_panel(select, notebook, base=base, given=given, remember=True)
        except ValueError as exc:  # shlex: unbalanced quotes
            raise UsageError(f"cannot read the flags: {exc}. Fix: check the quotes") from None
        except TfcError as exc:
            raise UsageError(str(exc)) from None

    def _panel_selection(self, notebook: str | None) -> capture.Selection:
        """A panel's cells from the saved notebook (as the CLI takes them), else the history."""
        from .notebook import capture

        path, how, warnings = self._find(notebook)
        if path is None:
            history = getattr(self.shell, "history_manager", None)
            raw = getattr(history, "input_hist_raw", None) or self.shell.user_ns.get("In", [""])  # type: ignore[union-attr]
            selection = capture.from_history(list(raw[1:]), "", "")
        else:
            nb = capture.read_notebook(path)
            selection = capture.select_cells(nb, path=path, how=how)
        selection.warnings[:0] = warnings
        return selection

    def _open_panel(self, select: Any, notebook: Any, **kwargs: Any) -> None:
        """Show a launch panel (ipywidgets are imported here, never at %load_ext)."""
        from IPython.display import display

        from .panel import open_panel

        client = self._client()
        panel = open_panel(
            client.settings, select=select, store=client.store, notebook=notebook, **kwargs
        )
        self.shell.user_ns["_tfc_panel"] = panel  # type: ignore[union-attr]
        display(panel)

    @line_magic
    def tfc_jobs(self, line: str) -> None:
        """List recent jobs (any backend): id, state, elapsed time, error."""
        from . import registry
        from .jobs import jobs_table

        try:
            limit = int(line.strip() or 20)
        except ValueError:
            raise UsageError("%tfc_jobs takes an optional count, e.g. %tfc_jobs 50") from None
        client = self._client()
        records = client.list(limit)
        print(jobs_table(records) if records else "No jobs yet: run a cell with %%tfc_run.")
        for said in registry.resident(Path(client.store.path).parent):
            print(said)

    @line_magic
    def tfc_logs(self, line: str) -> None:
        """Print a job's logs: %tfc_logs JOB [--follow [--verbose]] [--replica NAME].

        Printed logs are every line the replicas wrote; following them hides TensorFlow's
        start-up chatter and shows a line all replicas print once (--verbose shows all)."""
        args = _job_args(line, "%tfc_logs JOB [--follow [--verbose]] [--replica NAME]", follow=True)
        try:
            job = self._job(args.job)
            if args.follow:
                _follow_in_cell(job, raise_on_failure=False, verbose=args.verbose, shell=self.shell)
            else:
                text = job.logs(args.replica)
                print(text or f"{job.id} has printed nothing yet")
        except TfcError as exc:
            raise UsageError(str(exc)) from None

    @line_magic
    def tfc_cancel(self, line: str) -> None:
        """Cancel a job: every one of its processes (or Vertex replicas) is stopped."""
        args = _job_args(line, "%tfc_cancel JOB")
        try:
            rec = self._job(args.job).cancel()
        except TfcError as exc:
            raise UsageError(str(exc)) from None
        print(f"{rec.id}: {rec.state.value}")

    @line_magic
    def tfc_attach(self, line: str) -> Any:
        """Re-attach to a job (after a kernel restart): its logs so far, then follow to the end."""
        args = _job_args(line, "%tfc_attach JOB")
        try:
            job = self._job(args.job)
            rec = job.record()
            print(f"{rec.id} on {rec.backend}: {rec.state.value} ({rec.elapsed:.1f} s)")
            self.shell.user_ns["_tfc_job"] = job  # type: ignore[union-attr]
            return _follow_in_cell(job, raise_on_failure=False, shell=self.shell, cell_run=True)
        except TfcError as exc:
            raise UsageError(str(exc)) from None

    @line_magic
    def tfc_tensorboard(self, line: str) -> None:
        """Serve a job's TensorBoard logs on this machine (127.0.0.1) and link to them:
        %tfc_tensorboard JOB. The job's TensorBoard callbacks' folders are found by themselves;
        tfc_runtime.tensorboard_dir() is the job folder's own."""
        from IPython.display import HTML, display

        from .returns import cell
        from .returns.tensorboard import serve

        args = _job_args(line, "%tfc_tensorboard JOB")
        try:
            url = serve(self._job(args.job))
        except TfcError as exc:
            raise UsageError(str(exc)) from None
        print(f"TensorBoard for {args.job}: {url}")
        if cell.in_notebook(self.shell):
            display(HTML(f"<a href='{url}' target='_blank' rel='noopener'>Open TensorBoard</a>"))

    def _job(self, job_id: str) -> Any:
        return self._client().job(job_id)

    @line_magic
    def tfc_config(self, line: str) -> None:
        """Show the effective tfc_jupyter defaults and where each came from."""
        print(self._client().settings.to_text())

    @line_magic
    def tfc_machines(self, line: str) -> None:
        """List the machine catalog (names for --machine and --worker-machine)."""
        print(machines_table())


def machines_table() -> str:
    """The catalog as an aligned text table."""
    from .job.catalog import PRICES_AS_OF, PRICING_URL, catalog_rows
    from .util.tables import table

    rows = [("name", "machine type", "accelerators", "vCPU", "GB", "$/h")]
    for m in catalog_rows():
        acc = (
            f"TPU {m.tpu_topology}"
            if m.tpu_topology
            else f"{m.accelerator_count} x {m.accelerator_type}"
            if m.accelerator_type
            else "-"
        )
        rows.append(
            (
                m.name,
                m.machine_type,
                acc,
                str(m.vcpus),
                f"{m.memory_gb:g}",
                "-" if m.price_per_hour is None else f"{m.price_per_hour:.2f}",
            )
        )
    text = table(rows)
    return text + (
        f"\n(approximate us-central1 list prices, {PRICES_AS_OF}; -: no verified list price, "
        f"see {PRICING_URL})"
    )


def _job_args(line: str, usage: str, follow: bool = False) -> Any:
    import argparse

    class _P(argparse.ArgumentParser):
        def error(self, message: str) -> Any:
            raise UsageError(f"{message}. Usage: {usage}")

    p = _P(prog=usage.split()[0], add_help=False)
    p.add_argument("job")
    if follow:
        p.add_argument("--follow", "-f", action="store_true")
        p.add_argument("--verbose", "-v", action="store_true")
        p.add_argument("--replica", default=None)
    try:
        return p.parse_args(shlex.split(line))
    except ValueError as exc:
        raise UsageError(f"{exc}. Usage: {usage}") from None


class JobFailed(Exception):
    """A job the cell launched failed: the cell ends in error (Run All stops there), shown as
    one line naming the replica, the cell and line and the error, not as a traceback (the
    job's own traceback is in the lines above it)."""

    def __init__(self, job_id: str, error: str | None, stale: str = "") -> None:
        super().__init__(f"job {job_id} failed: {error or 'no reason recorded'}{stale}")
        self.job_id = job_id
        self.error = (error or "no reason recorded") + stale

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback."""
        return [
            f"\x1b[31mJob {self.job_id} failed\x1b[0m: {self.error}",
            f"Every line it printed: %tfc_logs {self.job_id}",
        ]


def _follow_in_cell(
    job: Any,
    raise_on_failure: bool = True,
    verbose: bool = False,
    shell: Any = None,
    lines: float | None = None,
    cell_run: bool = False,
) -> Any:
    """Stream the job's logs into the cell until it ends. An interrupt stops following, never
    the job (JupyterLab interrupts the kernel before it restarts it): a cancel is asked for
    with ``%tfc_cancel``, the panel's or the sidebar's Cancel. A failed job is shown once
    (:class:`JobFailed`); a cancelled one is not an error.

    In a notebook the cell also shows the chief's loss and metrics as a plot updated at each
    epoch, and at most ``lines`` log lines (``c.TfcConfig.cell_lines``; see
    :mod:`tfc_jupyter.returns.cell`). What the run cell displays in the job (figures, ``display()``)
    is shown as it comes, as Jupyter shows it. With ``cell_run`` (the ``%%tfc_run`` cell, and
    ``%tfc_attach``), a job that ends well sets the names its run cell binds in the kernel
    (:mod:`tfc_jupyter.returns.returned`), and the value returned is the cell's ``Out[]`` when it
    has one, else the job."""
    from .config import load_settings
    from .returns import cell
    from .store.records import JobState

    out: Any = sys.stdout
    plot: Any = None
    own = cell_run and not verbose and _has_run_cell(job)  # only the run cell's lines and fits
    notebook = shell is not None and cell.in_notebook(shell)
    if notebook:
        limit = int(lines if lines is not None else load_settings(shell.config).get("cell_lines"))
        out = cell.BoundedLog(sys.stdout, limit, job.id)
        plot = cell.LivePlot(out, run_cell_only=own)
    shown = _Outputs(job, notebook, out)

    def on_result(event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "output":
            shown.add(event)
        elif kind in ("cell", "files") and isinstance(event.get("folder"), str):
            shown.remote[str(kind)] = event["folder"]  # a Vertex AI job's, under gs://
        elif plot is not None:
            plot.add(event)

    try:
        rec = job.follow(verbose=verbose, out=out, on_result=on_result, from_run_cell=own)
    except KeyboardInterrupt:  # Interrupt, or JupyterLab's restart (it interrupts first)
        print(
            f"Stopped following {job.id}; the job goes on. %tfc_attach {job.id} follows it "
            f"again, %tfc_cancel {job.id} stops it."
        )
        return job
    finally:
        if plot is not None:
            out.close()
            plot.close()
    if rec.state is JobState.FAILED:
        link = cell.failure_link(rec.error_location, rec.notebook) if plot is not None else None
        if link is not None:
            from IPython.display import display

            display(link, raw=True)
        back = _partial_back(rec, shell, shown) if cell_run and shell is not None else []
        stale = _stale_line(rec, shell, back) if cell_run else ""
        if raise_on_failure:
            raise JobFailed(rec.id, rec.error, stale)
        print(f"{rec.id} failed: {rec.error}{stale}")
        return job
    print(job.summary_line())
    if not cell_run or shell is None or rec.state is not JobState.SUCCEEDED or not rec.job_dir:
        return job
    return _bring_back(job, rec, shell, shown)


def names_back_on_wait(job: Any, rec: Any) -> None:
    """``job.wait()`` in a kernel (on its main thread): a run cell's job that ended well sets
    its names there, as ``%tfc_attach`` does (once a job; its outputs were shown elsewhere)."""
    import threading

    from IPython import get_ipython

    from .store.records import JobState

    shell = get_ipython()
    if shell is None or threading.current_thread() is not threading.main_thread():
        return
    if rec.state is JobState.SUCCEEDED and rec.job_dir:
        _bring_back(job, rec, shell, _Outputs(job, False, sys.stdout))
    elif rec.state is JobState.FAILED:
        _partial_back(rec, shell, _Outputs(job, False, sys.stdout))


def _partial_back(rec: Any, shell: Any, shown: _Outputs) -> list[str]:
    """A failed job's names bound before its failing statement, set in the kernel and said
    (``Back in the kernel (partial, up to cell 4 line 5): model, history.``), unless the
    ``partial_names`` setting is off; the names set."""
    from .config import load_settings
    from .returns.returned import bring_back, fetch

    settings = load_settings(getattr(shell, "config", None))
    if not rec.job_dir or not settings.get("partial_names"):
        return []
    if "cell" in shown.remote:
        try:
            fetch(shown.remote["cell"], rec, "cell", settings)
        except TfcError as exc:
            print(f"! what the job left in {shown.remote['cell']} could not be read: {exc}")
    limit = float(settings.get("return_limit_mb"))
    here = Path(rec.notebook).parent if rec.notebook else Path.cwd()
    got = bring_back(
        rec.job_dir, shell.user_ns, limit_mb=limit, job_id=rec.id, partial=True, folder=here
    )
    for problem in got.problems:
        print(f"! {problem}")
    _said_back(rec, got.line())
    return got.names


def _said_back(rec: Any, line: str) -> None:
    """Print what came back into the kernel (``Back in the kernel: model, history.``) and keep
    it in the job's record, for a page opened after the job ended (its run cell shows it)."""
    said = (line[0].upper() + line[1:] + ".") if line else ""
    if said:
        print(said)
    from .jobs import store_for
    from .returns.border import home_of

    with contextlib.suppress(Exception):  # a record we cannot write: the line was printed
        store_for(home_of(rec.job_dir)).update(
            rec.id,
            returned=said or "Nothing came back into the kernel: the cell set no names.",
            returned_kernel=_kernel_id(),
        )


def _has_run_cell(job: Any) -> bool:
    """Whether the job was launched from a ``%%tfc_run`` cell (the kernel's kept copy of what it
    launched has one): its cell then shows its lines from the run cell's start."""
    from .returns.border import KernelCell, home_of

    try:
        record = job.record()
        return KernelCell.kept(home_of(record.job_dir), record.id) is not None
    except Exception:  # no record or kept copy to read: every line is shown
        return False


def _kernel_id() -> str | None:
    """This kernel as Jupyter knows it, ``ID/PID``: its id (its connection file is
    ``kernel-ID.json``) and its process (a restart keeps the id, not the process); None outside
    a Jupyter kernel (a terminal's IPython)."""
    kernel = sys.modules.get("ipykernel.connect")
    if kernel is None:
        return None
    try:
        name = Path(kernel.get_connection_file()).name
    except Exception:  # not in a kernel, or one without a connection file
        return None
    if not (name.startswith("kernel-") and name.endswith(".json")):
        return None
    return f"{name.removeprefix('kernel-').removesuffix('.json')}/{os.getpid()}"


def _stale_line(rec: Any, shell: Any, back: list[str] | None = None) -> str:
    """`` (model, history in this kernel are from before this cell)``, for a failure line
    (less the names a failed job's partial return set, ``back``)."""
    from .returns.returned import stale_names

    names = stale_names(rec.job_dir, shell.user_ns) if rec.job_dir else []
    names = [n for n in names if n not in (back or [])]
    if not names:
        return ""
    verb = "is" if len(names) == 1 else "are"
    return f". {', '.join(names)} in this kernel {verb} from before this cell (it did not end)"


def _bring_back(job: Any, rec: Any, shell: Any, shown: _Outputs) -> Any:
    """Set the run cell's names in the kernel; the cell's ``Out[]`` (a value, else as the job
    showed it), else the job."""
    from .config import load_settings
    from .returns.returned import CellOut, bring_back, bring_files, fetch

    settings = load_settings(getattr(shell, "config", None))
    limit = float(settings.get("return_limit_mb"))
    for leaf, uri in shown.remote.items():
        try:
            fetch(uri, rec, leaf, settings)
        except TfcError as exc:
            print(f"! what the cell left in {uri} could not be read: {exc}")
    here = Path(rec.notebook).parent if rec.notebook else Path.cwd()
    started = rec.started_at if rec.started_at is not None else rec.created_at
    most = int(settings.get("return_max_files"))
    placed = bring_files(  # first: a value may read its files (a Keras Tuner tuner's folder)
        rec.job_dir, here, started, limit_mb=limit, max_files=most, notebook=rec.notebook
    )
    got = bring_back(rec.job_dir, shell.user_ns, limit_mb=limit, job_id=rec.id, folder=here)
    for line in placed:
        print(line)
    for problem in got.problems:
        print(f"! {problem}")
    _said_back(rec, got.line())
    if got.has_out:
        return got.out
    if shown.result is not None:
        return CellOut(shown.result["data"], shown.result["metadata"])
    return job


class _Outputs:
    """The run cell's outputs from the job, shown as they come (a notebook renders their rich
    forms; a terminal gets their text and where the job folder keeps them). The ``Out[]`` is
    kept for the end of the cell.

    In a notebook each output is published with a display id of its own, so that the job's
    ``clear_output()`` (a live plot redrawn each epoch) clears what the job showed, never the
    cell's log lines: the next output takes the place of the first one cleared, and the others
    are emptied; ``display(..., display_id=True)`` handles update their output in place."""

    def __init__(self, job: Any, notebook: bool, out: Any) -> None:
        self.job_id = job.id
        self.job_dir = job.record().job_dir
        self.notebook = notebook
        self.out = out
        self.result: dict[str, Any] | None = None
        self.remote: dict[str, str] = {}  # "cell" / "files" -> where the job left them
        self.shown: list[str] = []  # display ids of what the job showed since its last clear
        self.cleared: list[str] = []  # cleared: the next outputs take their places
        self.wait = False  # a clear_output(wait=True) waits for the next output
        self.count = 0  # outputs shown (at most border.MAX_OUTPUTS)

    def add(self, event: dict[str, Any]) -> None:
        from .returns.border import MAX_OUTPUTS
        from .returns.returned import output

        if event.get("clear"):
            if self.notebook:
                self.cleared, self.shown = self.cleared + self.shown, []
                self.wait = bool(event.get("wait"))
                if not self.wait:
                    self._blank()
            return
        found = output(event, self.job_dir)
        if found is None:
            return
        if found["output_type"] == "execute_result":
            self.result = found
            return
        self.count += 1
        if self.count > MAX_OUTPUTS:
            if self.count == MAX_OUTPUTS + 1:
                print(f"! the job shows over {MAX_OUTPUTS} outputs: the rest are in its folder")
            return
        if not self.notebook:
            from .returns.returned import output_line

            print(output_line(event, self.job_dir))
            return
        self._publish(found, event)

    def _publish(self, found: dict[str, Any], event: dict[str, Any]) -> None:
        from IPython.display import publish_display_data

        flush = getattr(self.out, "flush", None)
        if flush is not None:
            flush()
        from .returns.border import display_id

        own = display_id(event.get("display_id"))
        update = bool(event.get("update")) and own is not None
        if own is not None:
            did = f"tfc-{self.job_id}-{own}"
        elif self.cleared:  # in the place of what a clear_output removed
            did, update = self.cleared.pop(0), True
        else:
            did = f"tfc-{self.job_id}-out-{event.get('n')}"
        publish_display_data(
            found["data"], found["metadata"], transient={"display_id": did}, update=update
        )
        if not update or did not in self.shown:
            self.shown.append(did)
        if self.wait:
            self._blank()

    def _blank(self) -> None:
        """Empty what was cleared and not taken by a new output."""
        from IPython.display import publish_display_data

        for did in self.cleared:
            publish_display_data({"text/plain": ""}, transient={"display_id": did}, update=True)
        self.cleared, self.wait = [], False


def _build_progress(shell: Any) -> Any:
    """Image build/push progress: an updating bar in a notebook, lines in a terminal."""
    from .image import LineProgress, reporting

    if type(shell).__name__ != "ZMQInteractiveShell":
        return reporting(LineProgress(sys.stdout))
    return reporting(_NotebookProgress())


class _NotebookProgress:
    """One HTML line with a <progress> bar, updated in place; a failed build's log below it."""

    def __init__(self) -> None:
        self.handle: Any = None

    def __call__(self, event: Any) -> None:
        import html

        from IPython.display import HTML, display

        if event.phase == "log":
            print(event.message)
            return
        bar = (
            f"<progress value='{event.step}' max='{event.total}'></progress> "
            if event.total
            else ""
        )
        body = HTML(f"<div class='tfc-build'>{bar}<code>{html.escape(event.message)}</code></div>")
        if self.handle is None:
            self.handle = display(body, display_id=True)
        else:
            self.handle.update(body)


def _show(plan: Plan) -> None:
    from IPython.display import display

    display({"text/plain": plan.to_text(), "text/html": plan._repr_html_()}, raw=True)
