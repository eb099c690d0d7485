"""The launch panel's model: the user's choices, their validation and the live summary.

No widgets here, so every behaviour is testable in plain Python. The choices are turned into the
very :class:`~tfc_jupyter.job.options.JobOptions` a ``%%tfc_run`` line gives
(:meth:`Choices.apply`), and checked by the product's own code on every change:
:meth:`JobOptions.to_spec` and :func:`spec.check_runnable` (fast, per field), then
:func:`plan.make_plan` on the notebook's cells (conversion, requirements files, warnings). The
panel has no copy of the rules: a choice is "impossible" exactly when that code raises, and the
reason shown is its one-line message.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import registry
from ..client import Client
from ..config import Settings
from ..errors import TfcError
from ..job import catalog
from ..job.options import JobOptions, OptionField, all_fields
from ..job.spec import JobSpec, Strategy, check_runnable
from ..jobs import sweep_refusal
from ..notebook import capture
from ..notebook.capture import Selection
from ..planner import fields
from ..planner.fields import FormField, form_fields, sent
from ..planner.plan import Plan
from ..registry import DEFAULT
from .memory import ChoicesDisplay

log = logging.getLogger(__name__)


def option_of(error_field: str | None) -> str | None:
    """The field a refusal is about: its ``field`` is an option's name, or one of the spec's
    own names for it (``worker_count`` is ``workers``)."""
    names = {f.name for f in form_fields()}
    name = _SPEC_NAMES.get(error_field or "", error_field)
    return name if name in names else None


_SPEC_NAMES = {"worker_count": "workers", "worker": "worker_machine", "labels": "label"}
"""The spec's names for what an option sets, where they differ (refusals name either)."""


@dataclass(frozen=True)
class RunCell:
    """A ``%%tfc_run`` cell of the saved notebook: its 1-based position among all the cells
    (markdown ones counted, as ``--cell`` and the jobs API's ``cell`` count), its
    ``%%tfc_run`` line and its first line of code."""

    number: int
    line: str
    code: str

    @property
    def label(self) -> str:
        """``cell 3: %%tfc_run --workers 1 · model.fit(x, y)``, at most 80 characters."""
        text = f"cell {self.number}: {self.line}" + (f" · {self.code}" if self.code else "")
        return text if len(text) <= 80 else text[:79] + "…"


def run_cells(nb: Any) -> list[RunCell]:
    """The ``%%tfc_run`` code cells of a notebook, in order."""
    found = []
    for number, cell in enumerate(nb.get("cells") or [], start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if not capture.is_run_cell(source):
            continue
        lines = source.split("\n")
        at = next(i for i, line in enumerate(lines) if line.strip())
        code = next(
            (ln.strip() for ln in lines[at + 1 :] if ln.strip() and not ln.strip().startswith("#")),
            "",
        )
        found.append(RunCell(number, lines[at].strip(), code))
    return found


FROM_SETTINGS = ("backend", "region", "project")
"""Fields that show the configured value when the line names none."""
_NORMAL: dict[str, Callable[[str], str]] = {
    "strategy": lambda v: Strategy.parse(v).value,
    "machine": lambda v: catalog.lookup(v).name,
    "worker_machine": lambda v: catalog.lookup(v).name,
    "gpu_type": catalog.normalize_gpu_type,
}
"""How a name typed in a flag is shown among the field's values (kept as typed if unknown:
validation flags it)."""


def _items(text: str, separator: str) -> tuple[str, ...]:
    """A list field's items: split on its separator (``" "``: commas and spaces)."""
    pattern = r"[,\s]+" if separator == " " else re.escape(separator)
    return tuple(part.strip() for part in re.split(pattern, text.strip()) if part.strip())


@dataclass(frozen=True)
class _Table:
    """The fields and each option's default, read from the option table once for a
    :class:`Choices` and every copy made from it (each change, and each value a list offers,
    makes one: reading the table, installed backends included, takes milliseconds)."""

    fields: dict[str, FormField]
    defaults: dict[str, Any]
    options: dict[str, OptionField]


def _table() -> _Table:
    options = {f.name: f for f in all_fields()}
    return _Table(
        {f.name: f for f in form_fields()}, {n: f.default for n, f in options.items()}, options
    )


def _empty(field: FormField) -> Any:
    """A field's value with nothing chosen: 0, off, "", or None (an optional count: unset)."""
    if field.optional:
        return None
    return 0 if field.kind == "count" else False if field.kind == "switch" else ""


class Choices:
    """What the user picked, one value a field of :func:`form_fields` (by option name): text
    (empty: the configured default, as an absent flag), a count, or a switch. An optional
    count's is None (unset: no flag), a count, or the text typed in its box when that is no
    count (its check then says why)."""

    def __init__(self, **values: Any) -> None:
        self._set(_table(), values)

    @classmethod
    def _of(cls, table: _Table, values: Mapping[str, Any]) -> Choices:
        made = cls.__new__(cls)
        made._set(table, values)
        return made

    def _set(self, table: _Table, values: Mapping[str, Any]) -> None:
        self._table = table
        self._fields = table.fields
        unknown = set(values) - set(self._fields)
        if unknown:
            raise TypeError(f"no such choice: {', '.join(sorted(unknown))}")
        self._values: dict[str, Any] = {name: _empty(f) for name, f in self._fields.items()}
        self._values.update(values)

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise AttributeError(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Choices) and self._values == other._values

    def __repr__(self) -> str:
        return f"Choices({self._values!r})"

    def replaced(self, **changes: Any) -> Choices:
        """A copy with ``changes`` (a name that is no field: TypeError)."""
        return Choices._of(self._table, {**self._values, **changes})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self._values)

    def merged(self, data: Mapping[str, Any] | None) -> Choices:
        """A copy with the known, well-typed keys of ``data`` applied."""
        out = dict(self._values)
        for name, f in self._fields.items():
            if data is None or name not in data:
                continue
            value = data[name]
            if f.optional and value is None:
                out[name] = None
            elif f.kind == "count":
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    out[name] = value
            elif f.kind == "switch":
                if isinstance(value, bool):
                    out[name] = value
            elif isinstance(value, str):
                out[name] = value.strip()
        return Choices._of(self._table, out)

    def apply(self, base: JobOptions, settings: Settings) -> JobOptions:
        """``base`` (a ``%%tfc_run`` line's options) with these choices as its options.

        A choice equal to the configured default becomes an absent flag, so the equivalent
        ``%%tfc_run`` line holds only what differs from the defaults; a choice its field sends
        only with or without others is left out as the form leaves it (:func:`sent`: a TPU
        host has no chief machine or GPUs).

        Raises:
            SpecError: an optional count's box holds text that is no count (``field``: it).
        """
        defaults = self._table.defaults
        changes: dict[str, Any] = {}
        picked = sent(self._values, self._fields.values())
        for name, f in self._fields.items():
            value = picked[name]
            if f.kind == "list":
                changes[name] = _items(value, f.separator)
            elif f.optional:  # the box's text read as the jobs API reads it ("": unset)
                changes[name] = None if value is None else self._table.options[name].coerce(value)
            elif f.kind in ("count", "switch"):
                changes[name] = value
            else:
                configured = settings.get(name) or (DEFAULT if name == "backend" else None)
                changes[name] = None if value == configured else value or defaults[name]
        return base.with_values(**changes)

    @classmethod
    def from_options(cls, ns: JobOptions, settings: Settings) -> Choices:
        """The choices a parsed ``%%tfc_run`` line stands for (names normalized when known)."""
        table = _table()
        values: dict[str, Any] = {}
        for f in table.fields.values():
            value = ns.value(f.name)
            if f.kind == "list":
                joiner = ", " if f.separator in (",", " ") else f"{f.separator} "
                values[f.name] = joiner.join(str(v) for v in value or ())
            elif f.kind == "count":
                values[f.name] = value if f.optional else value or 0
            elif f.kind == "switch":
                values[f.name] = bool(value)
            else:
                text = str(value or "")
                if f.name in FROM_SETTINGS:
                    text = text or str(settings.get(f.name) or "")
                    text = text or (DEFAULT if f.name == "backend" else "")
                if text and f.name in _NORMAL:
                    with contextlib.suppress(TfcError):
                        text = _NORMAL[f.name](text)
                values[f.name] = text.strip().lower() if f.name == "backend" else text
        return cls._of(table, values)


@dataclass(frozen=True)
class Option:
    """One value a choice can take, labelled; ``reason`` says why it cannot work right now."""

    value: Any
    label: str
    reason: str | None = None


@dataclass
class Check:
    """The result of validating the choices: a plan, or one error line (and its choice)."""

    error: str | None = None
    field: str | None = None
    spec: JobSpec | None = None
    plan: Plan | None = None

    @property
    def ok(self) -> bool:
        """True when the job can be launched as chosen."""
        return self.error is None and self.plan is not None


class PanelModel:
    """Choices, validation, options with reasons, summary and memory for one panel.

    Args:
        settings: the effective defaults (``config.load_settings``), as the magic uses.
        select: returns the job's cells (re-read from the saved notebook when called).
        base: the parsed ``%%tfc_run`` line the panel starts from (other flags pass through).
        choices: the initial choices (default: those of ``base``).
        notebook: the notebook file the panel runs.
        display: the panel's output that remembers its line in the notebook (None: none).
        pick_cell: offer the saved notebook's ``%%tfc_run`` cells to choose from when it has
            several (``%tfc_panel``; ``%%tfc_run --interactive`` runs its own cell).
        cell: the ``%%tfc_run`` cell picked to start with (``base`` is its line), if any.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        select: Callable[[], Selection],
        base: JobOptions | None = None,
        choices: Choices | None = None,
        notebook: Path | None = None,
        display: ChoicesDisplay | None = None,
        pick_cell: bool = False,
        cell: int | None = None,
    ) -> None:
        self.settings = settings
        self.client = Client(settings)
        self.base = base if base is not None else JobOptions()
        self.choices = choices or Choices.from_options(self.base, settings)
        self.notebook = notebook
        self.display = display
        self.pick_cell = pick_cell and notebook is not None
        self.cell = cell  # the %%tfc_run cell picked (None: the first)
        self._select = select
        self._selection: Selection | None = None
        self._stamp: float | None = None
        self._cells: list[RunCell] = []
        self._cells_stamp: float | None = None
        self.check = self.validate()

    # ----------------------------------------------------------------- changes
    def update(self, **changes: Any) -> Check:
        """Apply the user's changes, validate them, remember them; returns the new check."""
        self.choices = self.choices.replaced(**changes)
        self.check = self.validate()
        self.remember()
        return self.check

    def reload(self) -> Check:
        """Re-read the notebook and validate again (after the user edited and saved it)."""
        self._selection = None
        self._cells_stamp = None
        self.check = self.validate()
        return self.check

    # ----------------------------------------------------------------- which cell
    def run_cells(self) -> list[RunCell]:
        """The saved notebook's ``%%tfc_run`` cells when the panel offers the choice (re-read
        when the file changed); empty when it does not (one cell or none, no notebook file,
        ``%%tfc_run --interactive``)."""
        if not self.pick_cell or self.notebook is None:
            return []
        stamp = self._mtime()
        if stamp != self._cells_stamp:
            try:
                self._cells = run_cells(capture.read_notebook(self.notebook))
            except TfcError:
                self._cells = []  # unreadable now: validation says why
            self._cells_stamp = stamp
        return self._cells if len(self._cells) > 1 else []

    def current_cell(self) -> int | None:
        """The ``%%tfc_run`` cell the job runs when the panel offers the choice: the one picked
        while it is still there, else the first."""
        cells = self.run_cells()
        if not cells:
            return None
        numbers = [c.number for c in cells]
        return self.cell if self.cell in numbers else numbers[0]

    def set_cell(self, number: int) -> Check:
        """Run the ``%%tfc_run`` cell at position ``number``: the job is it and the cells above,
        and the choices start again from its own flags (its line, as the magic reads it)."""
        cells = {c.number: c for c in self.run_cells()}
        if number not in cells:
            raise ValueError(f"cell {number} is not a %%tfc_run cell of the notebook")
        self.cell = number
        self._selection = None
        try:
            base = JobOptions.from_line(cells[number].line.removeprefix(capture.MAGIC))
        except TfcError as exc:  # a line the magic would refuse: said, choices kept
            self.check = Check(error=exc.ui_text())
            return self.check
        self.base = base
        self.choices = Choices.from_options(base, self.settings)
        self.check = self.validate()
        self.remember()
        return self.check

    def remember(self) -> None:
        """Put the choices' ``%%tfc_run`` line into the panel's output, which the notebook
        saves (see :mod:`.memory`). A failure never breaks the panel."""
        if self.display is None:
            return
        try:
            line = self.line()
        except TfcError:
            return  # a box's text no flag takes (letters in a count): the last line stays
        try:
            self.display.update(line, self.current_cell())
        except Exception as exc:  # a display publisher failing: the panel goes on
            log.warning("cannot show the panel's choices in the notebook: %s", exc)

    def job_options(self, choices: Choices | None = None) -> JobOptions:
        """The options the choices stand for (what ``%%tfc_run`` would read)."""
        return (choices or self.choices).apply(self.base, self.settings)

    def line(self) -> str:
        """The equivalent ``%%tfc_run`` line: paste it and the panel is not needed."""
        return self.job_options().to_line()

    # ----------------------------------------------------------------- validation
    def selection(self, *, fresh: bool = False) -> Selection:
        """The job's cells, re-read when the notebook file changed (or ``fresh``)."""
        stamp = self._mtime()
        if fresh or self._selection is None or stamp != self._stamp:
            self._selection = self._select_cells()
            self._stamp = stamp
        return self._selection

    def _select_cells(self) -> Selection:
        """The job's cells: those the panel was given, or, when it offers the choice of cell,
        the picked ``%%tfc_run`` cell and the cells above it (always named, so the plan never
        says "pass --cell")."""
        given = self._select()
        cell = self.current_cell()
        if cell is None or self.notebook is None or given.script:
            return given
        picked = capture.select_cells(
            capture.read_notebook(self.notebook),
            path=self.notebook,
            how=given.how,
            cell_number=cell,
        )
        # the finder's own warnings stay; the "several %%tfc_run cells" one is the choice now
        kept = [w for w in given.warnings if "%%tfc_run cells;" not in w]
        picked.warnings[:0] = kept
        return picked

    def _mtime(self) -> float | None:
        try:
            return self.notebook.stat().st_mtime if self.notebook else None
        except OSError:
            return None

    def _spec(self, ns: JobOptions) -> JobSpec:
        spec = ns.to_spec(self.settings)
        check_runnable(spec)
        return spec

    def plan(self, *, fresh: bool = False) -> Plan:
        """Plan the job as chosen (what Launch does first).

        Raises:
            TfcError: the notebook, its conversion, or the choices cannot make a job.
        """
        plan = self.client.plan(self.selection(fresh=fresh), self.job_options())
        check_runnable(plan.spec)
        return plan

    def validate(self) -> Check:
        """Run the real validation on the current choices."""
        try:
            spec = self._spec(self.job_options())
        except TfcError as exc:
            return Check(error=exc.ui_text(), field=option_of(exc.field))
        try:
            plan = self.plan()
        except TfcError as exc:
            field = option_of(exc.field)
            if field is None and self.choices.requirements and self._fine_without_requirements():
                field = "requirements"  # a requirements file given here, not the notebook
            return Check(error=exc.ui_text(), field=field, spec=spec)
        refused = plan.refused or sweep_refusal(plan, driven=True)
        if refused is not None:  # what Launch would meet: said now, as the run says it
            field = option_of(refused.field)
            return Check(error=refused.ui_text(), field=field, spec=spec, plan=plan)
        return Check(spec=plan.spec, plan=plan)

    def _fine_without_requirements(self) -> bool:
        try:
            ns = self.job_options(self.choices.replaced(requirements=""))
            self.client.plan(self.selection(), ns)
        except TfcError:
            return False
        return True

    def reason(self, name: str, value: Any) -> str | None:
        """Why setting choice ``name`` to ``value`` (the rest unchanged) cannot work, or None."""
        try:
            self._spec(self.job_options(self.choices.replaced(**{name: value})))
        except TfcError as exc:
            error = exc.ui_text()
            # The current error, from another choice, is not this value's fault.
            return None if error == self.check.error and self.check.field != name else error
        return None

    # ----------------------------------------------------------------- options
    def options(self, name: str) -> list[Option]:
        """The values offered for a choice (:func:`planner.fields.choices`), each with its
        reason if it cannot work now."""
        field = {f.name: f for f in form_fields()}.get(name)
        if field is None or field.choices is None:
            raise KeyError(f"no options for {name!r}")
        current = getattr(self.choices, name)
        default_machine = self.settings.get("machine") or "CPU"
        rows = fields.choices(field.choices, default_machine=default_machine, current=current)
        if field.control == "suggest":  # any value may be typed: nothing to mark
            return [Option(value, label) for value, label in rows]
        out = []
        for value, label in rows:
            reason = self.reason(name, value)
            if reason:
                label = f"✗ {label} — {reason.split('. Fix:')[0]}"
            out.append(Option(value, label, reason))
        return out

    # ----------------------------------------------------------------- summary
    def summary(self) -> dict[str, Any] | None:
        """Resolved strategy, worker pools, cost per hour, the ``%%tfc_run`` line; None if
        the choices cannot make a job."""
        plan = self.check.plan
        if plan is None:
            return None
        spec = plan.spec
        strategy = spec.resolved_strategy().value
        if spec.strategy is Strategy.AUTO:
            strategy += " (auto)"
        saved = None
        if plan.selection.notebook is not None:
            try:
                mtime = plan.selection.notebook.stat().st_mtime
                saved = time.strftime("%H:%M:%S", time.localtime(mtime))
            except OSError:
                pass
        billed = registry.traits(spec.backend).billed
        return {
            "backend": spec.backend.value,
            "strategy": strategy,
            "billed": billed,
            "pools": [
                {
                    "role": role,
                    "replicas": n,
                    "machine": m.name,
                    "describe": m.describe(),
                    "cost_per_hour": (spec.pool_cost_per_hour(m, n, plan.book) if billed else 0.0),
                }
                for role, n, m in plan.pools()
            ],
            "cost_per_hour": spec.cost_per_hour(plan.book) if billed else 0.0,
            "cost_is_floor": plan.cost_is_floor(),
            "vertex_cost_per_hour": spec.cost_per_hour(plan.book),
            "line": self.line(),
            "notebook": plan.selection.name,
            "found_by": plan.selection.how,
            "saved_at": saved,
            "cells": list(plan.script.cells),
            "requirements": plan.requirements,
            "warnings": list(plan.warnings),
        }
