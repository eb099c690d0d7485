"""IPython magics: ``%%tfc_run``, ``%tfc_config``, ``%tfc_machines``.

The magics only parse input and call the core (:mod:`tfc_jupyter.plan`); every TfcError is shown
as one ``UsageError`` line, never a traceback.
"""

from __future__ import annotations

import os
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import parse_argstring

from . import capture
from .catalog import PRICES_AS_OF, catalog_rows
from .config import load_settings
from .convert import RULES
from .errors import TfcError
from .options import magic_decorate
from .plan import Plan, make_plan

_RULES_TEXT = "\n".join(f"    {what}: {effect}" for what, effect in RULES)


def _tfc_run_doc() -> str:
    return f"""Run the notebook, up to and including this cell, as a training job.

The job is the code cells above this one plus its body, in notebook order (cells tagged
tfc-skip or tfc-local-only are left out), converted to a plain Python script:

{_RULES_TEXT}

Examples::

    %%tfc_run --dry-run                    # show the plan, launch nothing
    %%tfc_run --workers 1                  # chief + 1 worker on this machine
    %%tfc_run --backend vertex --workers 2 --gpus 1 --gpu-type T4
    %%tfc_run --tpu v3-8 --dry-run
"""


def _with_doc(doc: str) -> Any:
    def set_doc(func: Any) -> Any:
        func.__doc__ = doc
        return func

    return set_doc


@magics_class
class TfcMagics(Magics):
    """The tfc_jupyter magics."""

    def _settings(self) -> Any:
        return load_settings(getattr(self.shell, "config", None))

    def _selection(self, args: Any, line: str, body: str) -> capture.Selection:
        path, how, warnings = capture.find_notebook(args.notebook)
        if path is None:
            inputs = list(getattr(self.shell, "user_ns", {}).get("In", [])[1:])
            if (inputs and capture.is_run_cell(inputs[-1])) or (
                inputs and "run_cell_magic('tfc_run'" in inputs[-1]
            ):
                inputs = inputs[:-1]
            selection = capture.from_history(inputs, line, body)
        else:
            nb = capture.read_notebook(path)
            selection = capture.select_cells(nb, path=path, how=how, magic_line=line, body=body)
        selection.warnings[:0] = warnings
        return selection

    def plan(self, line: str, cell: str) -> Plan:
        """Parse the flags and plan the job (the core of ``%%tfc_run``)."""
        args = parse_argstring(self.tfc_run, line)
        return make_plan(self._selection(args, line, cell), args, self._settings())

    @magic_decorate
    @_with_doc(_tfc_run_doc())
    @cell_magic
    def tfc_run(self, line: str, cell: str) -> Any:
        if os.environ.get("TFC_REMOTE") == "1":  # inside a job: the cell is plain code
            self.shell.run_cell(cell)  # type: ignore[union-attr]
            return None
        try:
            args = parse_argstring(self.tfc_run, line)
            plan = self.plan(line, cell)
            if args.dry_run:
                _show(plan)
                self.shell.user_ns["_tfc_plan"] = plan  # type: ignore[union-attr]
                return None
            return self._launch(plan, args)
        except TfcError as exc:
            raise UsageError(str(exc)) from None

    def _launch(self, plan: Plan, args: Any) -> Any:
        raise UsageError("launching comes with the local backend; use --dry-run for now")

    @line_magic
    def tfc_config(self, line: str) -> None:
        """Show the effective tfc_jupyter defaults and where each came from."""
        print(self._settings().to_text())

    @line_magic
    def tfc_machines(self, line: str) -> None:
        """List the machine catalog (names for --machine and --worker-machine)."""
        print(machines_table())


def machines_table() -> str:
    """The catalog as an aligned text table."""
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
                f"{m.price_per_hour:.2f}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    text = "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )
    return text + f"\n(approximate us-central1 list prices, {PRICES_AS_OF})"


def _show(plan: Plan) -> None:
    from IPython.display import display

    display({"text/plain": plan.to_text(), "text/html": plan._repr_html_()}, raw=True)
