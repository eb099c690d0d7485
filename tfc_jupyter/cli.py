"""``tfc-jupyter``: the same core as the magics, for terminals and CI.

    tfc-jupyter plan NOTEBOOK.ipynb [--cell N] [--json] [job flags ...]
    tfc-jupyter machines
    tfc-jupyter config

Errors print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__, capture, options
from .config import load_settings
from .errors import TfcError
from .plan import Plan, make_plan


def _plan(args: argparse.Namespace, extra: list[str]) -> Plan:
    path = Path(args.notebook_file)
    if not path.is_file():
        raise TfcError(f"notebook {str(path)!r} not found", "pass the path of an .ipynb file")
    nb = capture.read_notebook(path)
    selection = capture.select_cells(
        nb, path=path.resolve(), how="command line", cell_number=args.cell
    )
    line = selection.magic_line
    ns = options.overlay(
        options.parse_line(line),
        options.parser(suppress_defaults=True, prog="tfc-jupyter plan").parse_args(extra),
    )
    return make_plan(selection, ns, load_settings())


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser (job flags are parsed separately, see :mod:`options`)."""
    parser = argparse.ArgumentParser(
        prog="tfc-jupyter",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", required=True)
    plan = sub.add_parser(
        "plan",
        help="show what a notebook's job would run, launch nothing",
        epilog="Job flags: as %%tfc_run; they override the cell's own flags.",
    )
    plan.add_argument("notebook_file", metavar="NOTEBOOK")
    plan.add_argument(
        "--cell",
        type=int,
        default=None,
        help="position of the %%%%tfc_run cell to use (default: the first)",
    )
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--no-script", action="store_true", help="leave the script out")
    sub.add_parser("machines", help="list the machine catalog")
    sub.add_parser("config", help="show the effective defaults and where they came from")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tfc-jupyter`` command."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    try:
        if args.command != "plan" and extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        if args.command == "plan":
            plan = _plan(args, extra)
            if args.json:
                print(json.dumps(plan.summary(), indent=2))
            else:
                print(plan.to_text(script=not args.no_script))
        elif args.command == "machines":
            from .magics import machines_table

            print(machines_table())
        elif args.command == "config":
            print(load_settings().to_text())
    except TfcError as exc:
        print(f"tfc-jupyter: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
