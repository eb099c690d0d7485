"""``tfc-jupyter``: the same core as the magics, for terminals and CI.

    tfc-jupyter plan NOTEBOOK.ipynb|SCRIPT.py [--cell N] [--json] [job flags ...] [-- ARGS]
    tfc-jupyter run NOTEBOOK.ipynb|SCRIPT.py [--cell N] [job flags ...] [-- ARGS]
                                             (waits, streams logs; ARGS: the script's sys.argv)
    tfc-jupyter jobs [--limit N]
    tfc-jupyter logs JOB [--follow]
    tfc-jupyter cancel JOB
    tfc-jupyter notebook JOB [-o PATH] [--force]   (the job's cells with their outputs)
    tfc-jupyter machines
    tfc-jupyter config

Errors print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys

_INTERRUPTED = "tfc-jupyter: interrupted (Ctrl-C)"


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """Ctrl-C while the command imports (before :func:`main`): one line, exit status 130."""
    os.write(2, f"{_INTERRUPTED}\n".encode())
    os._exit(130)


if __name__ == "__main__" or os.path.basename(sys.argv[0]) == "tfc-jupyter":
    signal.signal(signal.SIGINT, _interrupted_while_starting)  # the command, not an importer

import argparse  # noqa: E402  (after the handler: an interrupt while importing is one line)
import contextlib  # noqa: E402
import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import TYPE_CHECKING, Any, NoReturn  # noqa: E402

from . import __version__  # noqa: E402
from .backends import spare  # noqa: E402

if TYPE_CHECKING:  # imported in main(), after `run` has started its job's supervisor
    from .client import Client
    from .jobs import Job
    from .planner.plan import Plan
    from .store.records import JobRecord


def _plan(
    client: Client, args: argparse.Namespace, flags: list[str], script_args: list[str]
) -> Plan:
    """The plan of the notebook's cell (or the script), its line's flags with ``flags`` over
    them; ``script_args`` (the words after ``--``) are the script's arguments."""
    from .job.options import JobOptions, with_script_args

    given = with_script_args(JobOptions.from_words(flags, prog="tfc-jupyter plan"), script_args)
    return client.plan_file(args.notebook_file, given, cell=args.cell)


def _run(client: Client, plan: Plan) -> int:
    from .store.records import JobState

    for warning in plan.warnings:
        print(f"! {warning}", file=sys.stderr)
    if plan.sweep is not None:
        return _sweep(client, plan)
    job: Job | None = None
    remote: dict[str, str] = {}  # "files" -> the gs:// folder a Vertex AI job left them in
    try:  # Ctrl-C inside submit cancels what started; from then to the end, the job launched
        job = client.submit(plan)
        spare.discard()  # the local backend took it; another backend's job leaves it unused
        record = _follow(job, plan, remote)
    except KeyboardInterrupt:
        if job is None:  # submit returned as the interrupt landed: the job is this process's
            _cancel_launched_by_me(client)
            raise
        record = job.cancel()
    finally:
        spare.discard()
    if record is None:  # --no-wait: the job goes on
        return 0
    print(job.summary_line(), file=sys.stderr)
    if record.state is JobState.SUCCEEDED:
        for line in _bring_files(client, record, remote):
            print(line, file=sys.stderr)
    if record.state is JobState.FAILED and record.job_dir:
        from .returns.returned import kept_partial

        kept = kept_partial(record.job_dir)
        if kept:  # a kernel brings them back: %tfc_attach, or job.wait() after attaching
            print(f"{kept}; %tfc_attach {job.id} in a notebook sets them", file=sys.stderr)
    from pathlib import Path

    from tfc_runtime.executed import FILE as EXECUTED

    if record.job_dir and Path(record.job_dir, EXECUTED).is_file():
        print(f"Executed notebook: {Path(record.job_dir, EXECUTED)} (next to the notebook: "
              f"tfc-jupyter notebook {job.id})", file=sys.stderr)  # fmt: skip
    return 0 if record.state is JobState.SUCCEEDED else 1


def _cancel_launched_by_me(client: Client) -> None:
    """Cancel the unfinished jobs this process launched (their ``owner_pid``)."""
    for record in client.store.list(limit=5):
        if record.owner_pid == os.getpid() and not record.state.is_terminal():
            with contextlib.suppress(Exception):
                client.cancel(record.id)


def _bring_files(client: Client, record: JobRecord, remote: dict[str, str]) -> list[str]:
    """Put the files the run cell wrote in an image (docker, Vertex AI: the job folder's
    ``files/``) next to the notebook, as the kernel does at the end of the cell (a local job
    wrote them there itself); the lines saying what was done."""
    from pathlib import Path

    from .errors import TfcError
    from .returns.returned import bring_files, fetch

    if not record.job_dir:
        return []
    lines = []
    for leaf, uri in remote.items():
        try:
            fetch(uri, record, leaf, client.settings)
        except TfcError as exc:
            lines.append(f"! what the cell left in {uri} could not be read: {exc}")
    here = Path(record.notebook).parent if record.notebook else Path.cwd()
    started = record.started_at if record.started_at is not None else record.created_at
    return lines + bring_files(
        record.job_dir, here, started, notebook=record.notebook,
        limit_mb=float(client.settings.get("return_limit_mb")),
        max_files=int(client.settings.get("return_max_files")),
    )  # fmt: skip


def _follow(job: Job, plan: Plan, remote: dict[str, str]) -> JobRecord | None:
    """Say the job launched, then follow it to its end (its record), or with ``--no-wait``
    print its id and return None. ``remote`` gets the ``gs://`` folder the run cell's files
    were left in (Vertex AI)."""
    print(f"Launched {job.id} on {plan.spec.backend.value}", file=sys.stderr)
    if not plan.options.wait:  # --no-wait: the job goes on; `tfc-jupyter logs -f ID` follows it
        print(f"{job.id}: follow with `tfc-jupyter logs -f {job.id}`", file=sys.stderr)
        print(job.id)
        return None
    from .returns.returned import output_line

    job_dir = job.record().job_dir

    def shown(event: dict[str, Any]) -> None:  # what the run cell displayed, and where it is
        folder = event.get("folder")
        if event.get("event") == "files" and isinstance(folder, str) and folder.startswith("gs:"):
            remote["files"] = folder
        line = output_line(event, job_dir)
        if line is not None:
            print(line, flush=True)

    return job.follow(verbose=plan.options.verbose, on_result=shown)


def _sweep(client: Client, plan: Plan) -> int:
    """Run the plan's sweep: a line as each trial starts and ends, then the table of trials
    (stdout); 0 when a trial succeeded and the sweep did not stop for its failed trials (nor
    its tuning job fail). Ctrl-C stops the driving, not the trials."""
    from .trials.trials import run_sweep, trial_lines

    spare.discard()  # each trial starts its own supervisor
    said = trial_lines(lambda line: print(line, file=sys.stderr, flush=True))
    try:
        sweep = run_sweep(client, plan, on_change=said, wait=plan.options.wait)
    except KeyboardInterrupt:
        print(
            "tfc-jupyter: stopped the sweep; its running trials go on. Run the same command "
            "again to go on with it (finished trials are kept).",
            file=sys.stderr,
        )
        return 130
    print(sweep.table_text())
    print(sweep.summary_line(), file=sys.stderr)
    if sweep.going_on:
        print(f"tfc-jupyter: the sweep's job goes on: tfc-jupyter logs -f {sweep.job_id}",
              file=sys.stderr)  # fmt: skip
        return 0
    return 0 if sweep.best_trial is not None and not sweep.failure else 1


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (and exit status 2), like TfcError."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}. Fix: see {self.prog} -h\n")


def _notebook_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "notebook_file",
        metavar="NOTEBOOK|SCRIPT",
        help="a notebook (.ipynb: its %%%%tfc_run cell and the cells above) or a Python script "
        "(.py: run as it is, words after -- as its arguments)",
    )
    parser.add_argument(
        "--cell",
        type=int,
        default=None,
        help="position of the %%%%tfc_run cell to use (default: the first)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser (job flags are parsed separately, see :mod:`options`)."""
    parser = _Parser(
        prog="tfc-jupyter",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", required=True)
    plan = sub.add_parser(
        "plan",
        help="show what a notebook's (or script's) job would run, launch nothing",
        epilog="Job flags: as %%tfc_run; they override the cell's own flags.",
    )
    _notebook_arguments(plan)
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--no-script", action="store_true", help="leave the script out")
    run = sub.add_parser(
        "run",
        help="launch a notebook's (or script's) job and follow it to the end",
        epilog="Job flags: as %%tfc_run; they override the cell's own flags.",
    )
    _notebook_arguments(run)
    jobs = sub.add_parser("jobs", help="list recent jobs")
    jobs.add_argument("--limit", type=int, default=20)
    jobs.add_argument(
        "--json",
        action="store_true",
        help="print the jobs as JSON, as the jobs API gives them (with last_metrics)",
    )
    logs = sub.add_parser("logs", help="print a job's logs")
    logs.add_argument("job")
    logs.add_argument("--follow", "-f", action="store_true", help="follow until the job ends")
    logs.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="while following: TensorFlow's start-up chatter and every replica's copy too",
    )
    cancel = sub.add_parser("cancel", help="stop every process of a job")
    cancel.add_argument("job")
    notebook = sub.add_parser(
        "notebook",
        help="write a job's executed notebook: its cells with what they printed and showed, "
        "and the error at the cell that failed",
    )
    notebook.add_argument("job")
    notebook.add_argument(
        "--output", "-o", default=None,
        help="where to write it (default: NAME.executed.ipynb next to the job's notebook)",
    )  # fmt: skip
    notebook.add_argument("--force", action="store_true", help="replace a file that exists")
    sub.add_parser("machines", help="list the machine catalog")
    sub.add_parser("config", help="show the effective defaults and where they came from")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tfc-jupyter`` command. Ctrl-C at any moment is one line (exit
    status 130): a job being launched is cancelled, one being followed too."""
    before = signal.getsignal(signal.SIGINT)
    if before is _interrupted_while_starting or before is signal.default_int_handler:
        _set_sigint(_on_interrupt)  # from here: cancel what started, then exit
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(_INTERRUPTED, file=sys.stderr)
        return 130
    finally:
        spare.discard()  # unused: interrupted before a job took it
        if signal.getsignal(signal.SIGINT) is _on_interrupt:
            _set_sigint(signal.default_int_handler)


def _set_sigint(handler: Any) -> None:
    """Set SIGINT's handler; from another thread (main() called by a program) leave it."""
    with contextlib.suppress(ValueError):  # "signal only works in main thread"
        signal.signal(signal.SIGINT, handler)


_interrupts = 0  # Ctrl-Cs this command has had (each raised KeyboardInterrupt where it landed)


def _on_interrupt(signum: int, frame: object) -> None:
    """Python's own SIGINT handler (KeyboardInterrupt), counting."""
    global _interrupts
    _interrupts += 1
    raise KeyboardInterrupt


def command() -> NoReturn:
    """The ``tfc-jupyter`` console script: :func:`main`'s status is the process's.

    After a Ctrl-C (handled by :func:`main`: 130, or 1 for a followed job it cancelled), the
    process ends with ``os._exit`` once its exit handlers ran. CPython would instead kill itself
    with SIGINT at exit whenever the interrupt had passed through an ``exec`` of a string (a
    ``@dataclass`` being made), caught or not."""
    code = main()
    if _interrupts:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        atexit._run_exitfuncs()
        os._exit(code)
    sys.exit(code)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    head = words[: words.index("--")] if "--" in words else words
    if "run" in head and not {"-h", "--help", "--dry-run"} & set(head):
        # A local job's supervisor starts now, while the rest of the command is imported and
        # the notebook planned (issue 27): the job's first line comes about 70 ms sooner.
        spare.start()
    from tfc_runtime.protocol import json_safe

    from .client import Client
    from .errors import TfcError
    from .job.options import split_script_args
    from .jobs import draws_colour, job_dict, jobs_table
    from .store import logs

    words, script_args = split_script_args(words)
    args, extra = parser.parse_known_args(words)
    try:
        if script_args and args.command not in ("plan", "run"):
            parser.error(f"unrecognized arguments: -- {' '.join(script_args)}")
        if args.command not in ("plan", "run") and extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        client = Client()
        if args.command == "plan":
            plan = _plan(client, args, extra, script_args)
            if args.json:
                print(json.dumps(plan.summary(), indent=2))
            else:
                print(plan.to_text(script=not args.no_script))
            if plan.refused is not None:  # the same verdict as `run`, on stderr
                print(f"tfc-jupyter: launching it would stop here: {plan.refused}", file=sys.stderr)
        elif args.command == "run":
            return _run(client, _plan(client, args, extra, script_args))
        elif args.command == "jobs":
            records = client.list(limit=args.limit)
            if args.json:
                print(json.dumps(json_safe([job_dict(r) for r in records]), indent=2, default=str))
            else:
                print(jobs_table(records) if records else "No jobs yet.")
                from pathlib import Path

                from . import registry

                for line in registry.resident(Path(client.store.path).parent):
                    print(line)
        elif args.command == "logs":
            if args.follow:
                client.job(args.job).follow(verbose=args.verbose)
            else:
                safe = logs.colours_only if draws_colour(sys.stdout) else logs.printable
                job = client.job(args.job)
                for line in job.log_lines():  # streamed: a log of any size
                    print(safe(line))
                note = job.log_note()  # a log not kept up to date says so
                if note:
                    print(f"tfc-jupyter: {logs.printable(note)}", file=sys.stderr)
        elif args.command == "cancel":
            record = client.cancel(args.job)
            print(f"{record.id}: {record.state.value}")
        elif args.command == "notebook":
            from .returns import executed

            print(executed.save(client.job(args.job).record(), args.output, force=args.force))
        elif args.command == "machines":
            from .magics import machines_table

            print(machines_table())
        elif args.command == "config":
            print(client.settings.to_text())
    except TfcError as exc:
        print(f"tfc-jupyter: error: {exc}", file=sys.stderr)
        return 2
    finally:
        spare.discard()  # unused: a plan that failed, a job on another backend
    return 0


if __name__ == "__main__":
    command()
