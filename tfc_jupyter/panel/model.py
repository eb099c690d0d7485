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
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from .. import registry
from ..client import Client
from ..config import Settings
from ..errors import TfcError
from ..job import catalog, prices
from ..job.options import JobOptions
from ..job.spec import JobSpec, Strategy, check_runnable
from ..notebook import capture
from ..notebook.capture import Selection
from ..planner.plan import Plan
from ..registry import DEFAULT
from .memory import ChoicesDisplay

log = logging.getLogger(__name__)

# Vertex AI training regions offered as suggestions; any region the spec accepts may be typed.
REGIONS = (
    "us-central1",
    "us-east1",
    "us-east4",
    "us-west1",
    "us-west4",
    "northamerica-northeast1",
    "europe-west1",
    "europe-west2",
    "europe-west4",
    "asia-east1",
    "asia-northeast1",
    "asia-southeast1",
    "australia-southeast1",
)

# SpecError.field (or flag dest) -> the choice it belongs to.
_FIELD_OF = {
    "backend": "backend",
    "strategy": "strategy",
    "machine": "machine",
    "gpu_type": "gpu_type",
    "gpus": "gpus",
    "tpu": "tpu",
    "worker_count": "workers",
    "workers": "workers",
    "worker": "worker_machine",
    "worker_machine": "worker_machine",
    "region": "region",
    "project": "project",
    "labels": "labels",
    "label": "labels",
    "requirements": "requirements",
}


def _split(text: str, pattern: str) -> list[str]:
    return [part for part in re.split(pattern, text.strip()) if part]


STRATEGY_AUTO_LABEL = "auto (the code decides)"
"""The label of strategy ``auto``: the code decides whether a strategy is added (see the
README's "Strategy auto"), which is not what ``tfc.run`` did."""


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


@dataclass
class Choices:
    """What the user picked. Empty strings mean "the configured default" (as an absent flag)."""

    backend: str = DEFAULT
    strategy: str = "auto"
    machine: str = ""
    gpu_type: str = ""
    gpus: int = 0
    tpu: str = ""
    workers: int = 0
    worker_machine: str = ""
    region: str = ""
    project: str = ""
    labels: str = ""
    requirements: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def merged(self, data: Mapping[str, Any] | None) -> Choices:
        """A copy with the known, well-typed keys of ``data`` applied."""
        out = replace(self)
        for f in fields(self):
            if data is None or f.name not in data:
                continue
            value = data[f.name]
            if f.name in ("gpus", "workers"):
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    setattr(out, f.name, value)
            elif isinstance(value, str):
                setattr(out, f.name, value.strip())
        return out

    def apply(self, base: JobOptions, settings: Settings) -> JobOptions:
        """``base`` (a ``%%tfc_run`` line's options) with these choices as its options.

        A choice equal to the configured default becomes an absent flag, so the equivalent
        ``%%tfc_run`` line holds only what differs from the defaults.
        """
        return base.replace(
            backend=None if self.backend == (settings.get("backend") or DEFAULT) else self.backend,
            strategy=self.strategy or "auto",
            machine=self.machine or None,
            gpu_type=self.gpu_type or None,
            gpus=self.gpus or None,
            tpu=self.tpu or None,
            workers=self.workers,
            worker_machine=self.worker_machine or None,
            region=None if self.region in ("", settings.get("region")) else self.region,
            project=None if self.project in ("", settings.get("project")) else self.project,
            label=tuple(_split(self.labels, r"[,\s]+")),
            requirements=tuple(_split(self.requirements, r"\s*,\s*")),
        )

    @classmethod
    def from_options(cls, ns: JobOptions, settings: Settings) -> Choices:
        """The choices a parsed ``%%tfc_run`` line stands for (names normalized when known)."""
        strategy, machine, gpu_type = ns.strategy or "auto", ns.machine or "", ns.gpu_type or ""
        with contextlib.suppress(TfcError):  # kept as typed if unknown: validation flags it
            strategy = Strategy.parse(strategy).value
        with contextlib.suppress(TfcError):
            machine = catalog.lookup(machine).name if machine else ""
        with contextlib.suppress(TfcError):
            gpu_type = catalog.normalize_gpu_type(gpu_type) if gpu_type else ""
        return cls(
            backend=str(ns.backend or settings.get("backend") or DEFAULT).strip().lower(),
            strategy=strategy,
            machine=machine,
            gpu_type=gpu_type,
            gpus=ns.gpus or 0,
            tpu=ns.tpu or "",
            workers=ns.workers or 0,
            worker_machine=ns.worker_machine or "",
            region=ns.region or settings.get("region") or "",
            project=ns.project or settings.get("project") or "",
            labels=", ".join(ns.label or []),
            requirements=", ".join(ns.requirements or []),
        )


# Flag dests of a %%tfc_run line -> the choice each one sets.
DEST_FIELD = {
    "backend": "backend",
    "strategy": "strategy",
    "machine": "machine",
    "gpu_type": "gpu_type",
    "gpus": "gpus",
    "tpu": "tpu",
    "workers": "workers",
    "worker_machine": "worker_machine",
    "region": "region",
    "project": "project",
    "label": "labels",
    "requirements": "requirements",
}


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


def _machines() -> list[catalog.Machine]:
    """Non-TPU presets, then plain machine types (the TPU choice picks TPU hosts)."""
    rows = [m for m in catalog.catalog_rows() if not m.is_tpu]
    for machine_type in catalog.MACHINE_TYPES:
        try:
            machine = catalog.lookup(machine_type)
        except TfcError:
            continue  # TPU hosts
        if not machine.accelerator_type and machine.name not in {m.name for m in rows}:
            rows.append(machine)
    return rows


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
        self.machines = _machines()
        self.check = self.validate()

    # ----------------------------------------------------------------- changes
    def update(self, **changes: Any) -> Check:
        """Apply the user's changes, validate them, remember them; returns the new check."""
        unknown = set(changes) - {f.name for f in fields(Choices)}
        if unknown:
            raise TypeError(f"no such choice: {', '.join(sorted(unknown))}")
        self.choices = replace(self.choices, **changes)
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
            self.display.update(self.line(), self.current_cell())
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
            return Check(error=exc.ui_text(), field=_FIELD_OF.get(exc.field or ""))
        try:
            plan = self.plan()
        except TfcError as exc:
            field = _FIELD_OF.get(exc.field or "")
            if field is None and self.choices.requirements and self._fine_without_requirements():
                field = "requirements"  # a requirements file given here, not the notebook
            return Check(error=exc.ui_text(), field=field, spec=spec)
        if plan.refused is not None:  # what Launch would meet: said now, as the run says it
            refused = plan.refused
            field = _FIELD_OF.get(refused.field or "")
            return Check(error=refused.ui_text(), field=field, spec=spec, plan=plan)
        return Check(spec=plan.spec, plan=plan)

    def _fine_without_requirements(self) -> bool:
        try:
            ns = self.job_options(replace(self.choices, requirements=""))
            self.client.plan(self.selection(), ns)
        except TfcError:
            return False
        return True

    def reason(self, name: str, value: Any) -> str | None:
        """Why setting choice ``name`` to ``value`` (the rest unchanged) cannot work, or None."""
        try:
            self._spec(self.job_options(replace(self.choices, **{name: value})))
        except TfcError as exc:
            error = exc.ui_text()
            # The current error, from another choice, is not this value's fault.
            return None if error == self.check.error and self.check.field != name else error
        return None

    # ----------------------------------------------------------------- options
    def options(self, name: str) -> list[Option]:
        """The values offered for a choice, from the catalog, each with its reason if any."""
        rows: list[tuple[Any, str]]
        default_machine = self.settings.get("machine") or "CPU"
        if name == "backend":
            rows = [(name, name) for name in registry.names()]
        elif name == "strategy":
            rows = [
                (s.value, STRATEGY_AUTO_LABEL if s is Strategy.AUTO else s.value) for s in Strategy
            ]
        elif name in ("machine", "worker_machine"):
            first = f"default ({default_machine})" if name == "machine" else "same as the chief"
            machines = list(self.machines)
            named = getattr(self.choices, name)
            if named and named not in {m.name for m in machines}:  # a legacy one, named
                with contextlib.suppress(TfcError):
                    machines.append(catalog.lookup(named))
            rows = [("", first)] + [
                (m.name, f"{m.name} · {m.describe()} · {catalog.price_text(m.price_per_hour)}")
                for m in machines
            ]
        elif name == "gpu_type":
            rows = [("", "default (the machine's, else T4)")] + [
                (g, f"{g} · {catalog.price_text(prices.gpu_price(enum), ' per GPU-hour')}")
                for g, (enum, _, _) in catalog.GPUS.items()
                if g in catalog.OFFERED_GPU_TYPES
                or g == self.choices.gpu_type  # a legacy one named
            ]
        elif name == "gpus":
            counts = sorted({n for _, _, a in catalog.GPUS.values() for c in a.values() for n in c})
            rows = [(0, "none")] + [(n, str(n)) for n in counts]
        elif name == "tpu":
            rows = [("", "none")]
            for key in catalog.TPU_TYPES:
                m = catalog.tpu_machine(key)
                rows.append(
                    (key, f"{key} · {m.describe()} · {catalog.price_text(m.price_per_hour)}")
                )
        else:
            raise KeyError(f"no options for {name!r}")
        current = getattr(self.choices, name)
        if current not in [value for value, _ in rows]:
            rows.append((current, str(current)))  # typed in a flag: keep it, validation speaks
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
                    "cost_per_hour": (spec.pool_cost_per_hour(m, n) if billed else 0.0),
                }
                for role, n, m in plan.pools()
            ],
            "cost_per_hour": spec.cost_per_hour() if billed else 0.0,
            "vertex_cost_per_hour": spec.cost_per_hour(),
            "line": self.line(),
            "notebook": plan.selection.name,
            "found_by": plan.selection.how,
            "saved_at": saved,
            "cells": list(plan.script.cells),
            "requirements": plan.requirements,
            "warnings": list(plan.warnings),
        }
