"""The core: a captured notebook + flags -> a validated, explained Plan.

Every edge (magic, CLI, panel, REST) calls :func:`make_plan`; a dry run renders the Plan, a launch
hands it to a backend. Nothing here imports IPython, tornado, TensorFlow or aiplatform.
"""

from __future__ import annotations

import ast
import dataclasses
import html
import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfc_runtime import params
from tfc_runtime.protocol import ROLES

from .. import registry
from ..config import Settings
from ..errors import Fix, SpecError, TfcError
from ..image import context as package
from ..image import names as images
from ..job import catalog, prices
from ..job.choose import Choice, choose
from ..job.options import JobOptions
from ..job.spec import JobSpec, Pool, Strategy
from ..notebook import codeinfo, needs, syntax
from ..notebook.capture import Selection
from ..notebook.convert import Script, convert
from ..notebook.requirements import Requirements, unsatisfied
from ..registry import DEFAULT, ROUTES, Preview, Route
from ..sweep import methods
from ..sweep.targets import SweepPlan, plan_sweep
from ..util import masking, secretscan
from ..util.files import human_size
from . import prelaunch

if TYPE_CHECKING:
    from ..job.prices import CurrentRates

_SOURCES = {
    "JPY_SESSION_NAME": "this kernel's notebook, as saved",
    "the Jupyter server's sessions": "this kernel's notebook, as saved",
    "VS Code": "VS Code's notebook, as saved",
    "Colab's live notebook": "Colab's notebook",
    "live notebook model": "the notebook as open in the editor",
    "saved notebook file": "the notebook as saved",
    "kernel history": "this kernel's input history (no notebook file found)",
    "the kernel's folder": "the notebook of the kernel's folder holding the cell, as saved",
    "--notebook": "the notebook --notebook names",
    "command line": "the file named on the command line",
    "entry point": "the file named",
    "entry_point": "the entry_point file",
    "%tfc_run": "the file %tfc_run names",
    "saved script file": "the script as saved",
    "the editor's text": "the script as open in the editor",
    "the running script": "the running script",
}


def source_words(how: str) -> str:
    """Where the plan's code came from, in the user's words (``how`` is capture's own label)."""
    return _SOURCES.get(how, how)


@dataclass(frozen=True)
class Plan:
    """Everything about one job before it runs: spec, cells, script, image and request.
    Immutable once made: the client's verdict makes a new one (:func:`dataclasses.replace`)."""

    spec: JobSpec
    selection: Selection
    script: Script
    parent_image: str
    image_uri: str
    warnings: tuple[str, ...] = ()
    context: package.Context | None = None  # what goes into the image (None with --image)
    options: JobOptions = field(default_factory=JobOptions)  # what the plan was made from
    settings: Settings | None = None  # the effective defaults it was made with (limits ...)
    route: Route | None = None  # a backend with routes: a package on a prebuilt image, or an image
    refused: TfcError | None = None  # the backend's verdict: what launching it would say
    checked: bool = False  # the verdict was taken (Client.plan): launching does not ask again
    sweep: SweepPlan | None = None  # --sweep: each trial is this plan with its values
    current: CurrentRates | None = None  # Compute Engine's current prices, where read

    @property
    def book(self) -> prices.Book | None:
        """The current rates that stand in for the list's (None: the list prices)."""
        if self.current is None:
            return None
        return prices.current_book(
            self.current.rates, source=self.current.source, read=self.current.read
        )

    def current_prices(self) -> dict[str, Any] | None:
        """Where the current prices come from (the plan's ``current_prices``), or None."""
        if self.current is None:
            return None
        return {
            "source": self.current.source,
            "read": self.current.read,
            "cached": self.current.cached,
            "parts": sorted(self.current.rates),
        }

    def source_map_text(self) -> str:
        """The job's ``script.map.json``: script lines to cells (or to the ``.py`` file)."""
        return source_map_text(self.script, self.selection)

    @property
    def requirements(self) -> list[str]:
        """The job's requirement lines (notebook pip lines merged with files), credentials
        in their URLs shown as ``***``."""
        return [redact_url(line) for line in self.script.requirements.lines]

    @property
    def package(self) -> Any:
        """The package route's package (its ``data``, ``object_name()`` and ``uri(bucket)``);
        None: an image runs the job."""
        return self.route.package if self.route else None

    @property
    def package_uri(self) -> str | None:
        """Where the package route puts the job's package (None: an image runs the job)."""
        if self.package is None or not self.spec.image.build_bucket:
            return None
        return self.package.uri(self.spec.image.build_bucket)

    def preview(self) -> Preview:
        """What the backend would send to launch it (its title, request and text)."""
        return registry.load(self.spec.backend).preview(self)

    def request(self) -> dict[str, Any]:
        """The exact request a launch sends (for Vertex AI: the CustomJob create request's
        method, url and body)."""
        return self.preview().request

    def pools(self) -> list[Pool]:
        """Each worker pool, ``(role, replicas, machine)`` (:meth:`JobSpec.pools`)."""
        return self.spec.pools()

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (CLI ``--json``, REST API, panel, the job folder's ``job.json``);
        ``--notify`` URLs in it are masked (:func:`tfc_jupyter.util.masking.shown`)."""
        preview = self.preview()
        spec = self.spec.to_dict()
        spec["notify"] = masking.shown_all(spec.get("notify") or ())
        _machines_at_scheduling(spec, self.spec.google.scheduling)
        options = dataclasses.replace(
            self.options, notify=tuple(masking.shown_all(self.options.notify))
        )
        return {
            "notebook": str(self.selection.notebook) if self.selection.notebook else None,
            "found_by": self.selection.how,
            "source": source_words(self.selection.how),
            "cells": self.script.cells,
            "skipped_cells": self.selection.skipped,
            "spec": spec,
            "strategy": self.spec.resolved_strategy().value,
            "strategy_reason": self.spec.decided.strategy_reason,
            "cost_per_hour": self.spec.cost_per_hour(self.book),
            "cost_at_most": self.cost_at_most(),
            "cost_text": self._cost_text(),
            "cost_is_floor": self.cost_is_floor(),
            "prices": self.price_rows(),
            "current_prices": self.current_prices(),
            "restarts": self.restarts(),
            "requirements": self.requirements,
            "image": self.image_uri if self._shows_image() else None,
            "parent_image": self.parent_image if self._shows_image() else None,
            "context": self.context.to_dict() if self.context and self._shows_image() else None,
            "route": {
                "kind": self.route.kind,
                "reason": self.route.reason,
                "package": self.package_uri,
            }
            if self.route
            else None,
            "warnings": list(self.warnings),
            "notes": self.script.notes,
            "request": preview.request,
            "request_title": preview.title,
            "options": options.to_json(),
            "line": options.to_line(),
            "refused": self.refused.to_dict() if self.refused else None,
            "sweep": self.sweep.to_dict() if self.sweep else None,
            "sweep_estimate": self.sweep_estimate(),
        }

    def sweep_estimate(self) -> dict[str, Any] | None:
        """A sweep's size, time and cost before launch (None: no sweep): its trials, how many
        at once and in how many rounds; where ``--timeout`` bounds a trial, the hours in all
        (at most), and where it bills, the machine-hours and the cost of one trial times the
        trials; ``text``: the dry run's line.
        Each trial is priced as this plan's one job is (its machines, its list prices)."""
        if self.sweep is None:
            return None
        spec, sweep = self.spec, self.sweep.spec
        billed = registry.traits(spec.backend).billed
        machines = sum(n for _, n, _ in self.pools())
        hours = spec.timeout_s / 3600 if spec.timeout_s else None
        rate = spec.cost_per_hour() if billed else None
        per_trial = self.cost_at_most()
        rounds = -(-sweep.trials // sweep.parallel)  # trials at once, round after round
        out: dict[str, Any] = {
            "trials": sweep.trials,
            "parallel": sweep.parallel,
            "rounds": rounds,
            "machines_per_trial": machines,
            "billed": billed,
            "hours_per_trial": round(hours, 4) if hours is not None else None,
            "hours": round(hours * rounds, 2) if hours is not None else None,
            "machine_hours": round(machines * hours * sweep.trials, 2)
            if billed and hours
            else None,
            "cost_per_hour_per_trial": rate,
            "cost_per_trial": per_trial,
            "cost": round(per_trial * sweep.trials, 2) if per_trial is not None else None,
        }
        out["text"] = _estimate_text(out, self._unbilled(), _hours(spec) if hours else None)
        return out

    # ------------------------------------------------------------------ rendering
    def _pool_lines(self) -> list[str]:
        """One line a pool: its machine and price where the backend bills machines; where it
        runs here, in this machine's words (processes or containers: no machine type, no
        hourly price: nothing is billed)."""
        traits = registry.traits(self.spec.backend)
        lines = []
        for role, n, machine in self.pools():
            head = f"  pool {ROLES.index(role)} {role} x{n}: "
            if not traits.billed:
                unit = (
                    ("container", "containers") if traits.runs_image else ("process", "processes")
                )
                gpus = machine.gpu_count
                each = f", {gpus} GPU{'s' if gpus != 1 else ''} each" if gpus else ""
                lines.append(f"{head}{n} {unit[n != 1]} on this machine{each}")
                continue
            lines.append(
                f"{head}{machine.name} = {machine.describe()}"
                f"  ({'from ' if self.cost_is_floor() else ''}"
                f"{catalog.price_text(self.spec.pool_cost_per_hour(machine, n, self.book))})"
            )
        return lines

    def _shows_image(self) -> bool:
        """Whether the job runs an image (or a package on one): a local job runs in this
        environment, and its plan names no image, package or image context."""
        return registry.traits(self.spec.backend).runs_image

    def cost_at_most(self) -> float | None:
        """What a billed job costs if it runs for its whole ``--timeout`` (None: no timeout, no
        list price, or a backend that bills nothing)."""
        rate, timeout = self.spec.cost_per_hour(self.book), self.spec.timeout_s
        if rate is None or timeout is None or not registry.traits(self.spec.backend).billed:
            return None
        return round(rate * timeout / 3600, 2)

    def _cost_bound(self) -> str:
        """``; at most $X if it runs its whole --timeout of 2h``, or that there is no bound."""
        if (
            self.spec.cost_per_hour(self.book) is None
            or not registry.traits(self.spec.backend).billed
        ):
            return ""
        at_most = self.cost_at_most()
        if at_most is None:
            return "; no --timeout: it bills until it ends"
        return f"; at most ${at_most:,.2f} if it runs its whole --timeout of {_hours(self.spec)}"

    def restarts(self) -> str:
        """What happens when a replica dies mid-job, in words (the plan's ``restarts`` line)."""
        spec, traits = self.spec, registry.traits(self.spec.backend)
        spot = "Spot VMs can be preempted; " if spec.google.scheduling == "spot" else ""
        if not traits.restarts:
            return "a replica that dies ends the job: nothing restarts it here"
        who = f"{spot}{traits.restarts}"
        if not spec.resume:
            return f"{who}; with --no-resume it trains from the start"
        if traits.keeps_backups or spec.base_output_dir:
            where = ""
            if spec.base_output_dir:
                where = f", backed up in {spec.base_output_dir.rstrip('/')}/checkpoints/"
            return (
                f"{who}, and the job resumes: each Keras fit after its last finished epoch"
                f"{where} (a custom loop: counted with tfc_runtime.epochs)"
            )
        return (
            f"{who}; its backups stay on the machine it ran on, so on a new VM it trains from the "
            "start: pass --base-output-dir gs://BUCKET/DIR to resume"
        )

    def _strategy_line(self) -> str:
        text = self.spec.resolved_strategy().value
        auto = "auto: " if self.spec.strategy is Strategy.AUTO else ""
        if self.spec.decided.strategy_reason:
            text += f" ({auto}{self.spec.decided.strategy_reason})"
        return text

    def to_text(self, *, script: bool = True) -> str:
        """The dry run as plain text (CLI, terminal IPython)."""
        spec = self.spec
        out = [f"Plan for {self.selection.name!r} ({source_words(self.selection.how)})"]
        if self.refused is not None:
            out.append(f"!! Launching it would stop here: {self.refused}")
        out += [f"! {w}" for w in self.warnings]
        if self.selection.script:  # a .py entry point runs whole
            out.append(f"script: {self.selection.name}, run as it is")
        else:
            out.append(
                f"cells: {', '.join(map(str, self.script.cells)) or 'none'}"
                + (
                    f"  (skipped by tag: {', '.join(map(str, self.selection.skipped))})"
                    if self.selection.skipped
                    else ""
                )
            )
        out.append(f"backend: {spec.backend.value}   strategy: {self._strategy_line()}")
        out.append("worker pools:")
        out += self._pool_lines()
        out.append(self._cost_text())
        out += self._price_lines()
        out.append(f"restarts: {self.restarts()}")
        if self.sweep is not None:
            out += self.sweep.lines()
            out.append((self.sweep_estimate() or {}).get("text", ""))
        out.append("requirements: " + (", ".join(self.requirements) or "none"))
        if self.route is not None:
            out.append(f"route: {self.route.kind} ({self.route.reason})")
        if not self._shows_image():
            pass
        elif self.package is not None:
            out.append(
                f"package: {self.package_uri}  ({human_size(len(self.package.data))}) "
                f"on {self.image_uri}"
            )
        else:
            out.append(f"image: {self.image_uri}  (parent {self.parent_image})")
        if self.context is not None and self._shows_image():
            out.append(f"image context: {self.context.summary(limit=None)}")
            out += self.context.listing()
        for note in self.script.notes:
            out.append(f"  note: {note}")
        if script:
            out.append("--- script.py ---")
            out.append(self.script.text.rstrip())
        preview = self.preview()
        out.append(f"--- {preview.title} ---")
        out.append(preview.text)
        return "\n".join(out)

    def cost_is_floor(self) -> bool:
        """True when the plan's price is a floor: a billed Spot job (Compute Engine's Spot price;
        Vertex AI's fee on top of it is unpublished)."""
        billed = registry.traits(self.spec.backend).billed
        return billed and prices.is_floor(self.spec.google.scheduling)

    def price_rows(self) -> list[dict[str, Any]]:
        """Each pool's billed parts, one replica's: number, label (quoted, derived or floor),
        source and date (:func:`tfc_jupyter.job.prices.price_rows`); [] when nothing bills."""
        if not registry.traits(self.spec.backend).billed:
            return []
        google = self.spec.google
        return [
            {
                "pool": role,
                "replicas": n,
                "machine": m.name,
                "rows": prices.price_rows(
                    m.machine_type,
                    m.accelerator_type,
                    m.accelerator_count,
                    scheduling=google.scheduling,
                    boot_disk_type=google.boot_disk_type,
                    boot_disk_gb=google.boot_disk_gb,
                    book=self.book,
                ),
            }
            for role, n, m in self.pools()
        ]

    def _price_lines(self) -> list[str]:
        """The dry run's price rows: ``  price: pool 0 chief: T4 x1 at $0.40/h (derived: ...)``."""
        lines = []
        for pool in self.price_rows():
            for row in pool["rows"]:
                rate = row["rate"]
                head = f"  price: {pool['pool']}: {row['part']} x{row['quantity']:g}"
                if rate is None:
                    lines.append(f"{head}: price not listed ({row['why']})")
                    continue
                how = _LABELS[str(row["label"])]
                lines.append(
                    f"{head} at ${float(rate) * float(row['quantity']):,.4f}/h, {how} "
                    f"({row['source']}, read {row['read']})"
                )
        return lines

    def _unbilled(self) -> str | None:
        """What a job on a backend that bills nothing costs, in its words (None: it bills)."""
        traits = registry.traits(self.spec.backend)
        return None if traits.billed else f"cost: nothing billed (it runs on {traits.label})"

    def _cost_text(self) -> str:
        """The plan's cost line: the backend's price list, or that it bills nothing."""
        unbilled = self._unbilled()
        if unbilled is not None:
            return unbilled
        spec = self.spec
        return (
            _cost_line(spec.cost_per_hour(self.book), self.pools(), spec, self.current)
            + self._cost_bound()
            + self._sweep_cost()
        )

    def _sweep_cost(self) -> str:
        """``; the sweep: 12 trials, at most $X`` (each trial is priced as this job is)."""
        if self.sweep is None:
            return ""
        trials, rate = self.sweep.spec.trials, self.spec.cost_per_hour(self.book)
        at_most = self.cost_at_most()
        if at_most is not None:
            return f"; the sweep: {trials} trials, at most ${at_most * trials:,.2f}"
        if rate is not None:
            return (
                f"; the sweep: {trials} trials, ${rate:,.2f}/h each "
                f"({self.sweep.spec.parallel} at once: ${rate * self.sweep.spec.parallel:,.2f}/h)"
            )
        return f"; the sweep: {trials} trials"

    def _cost_markup(self) -> str:
        unbilled = self._unbilled()
        if unbilled is not None:
            return html.escape(unbilled)
        return _cost_html(
            self.spec.cost_per_hour(self.book), floor=self.cost_is_floor()
        ) + html.escape(self._cost_bound() + self._sweep_cost())

    def _repr_html_(self) -> str:
        esc = html.escape
        spec = self.spec
        preview = self.preview()
        warn = "".join(f"<div style='color:#b35900'>&#9888; {esc(w)}</div>" for w in self.warnings)
        if self.refused is not None:
            warn = (
                "<div style='color:#cf222e'><b>Launching it would stop here:</b> "
                f"{esc(str(self.refused))}</div>{warn}"
            )
        pools = "".join(f"<li><code>{esc(line.strip())}</code></li>" for line in self._pool_lines())
        notes = "".join(f"<li>{esc(n)}</li>" for n in self.script.notes)
        reqs = esc(", ".join(self.requirements) or "none")
        return (
            f"<div class='tfc-plan'><b>Plan for {esc(self.selection.name)}</b> "
            f"<small>({esc(source_words(self.selection.how))})</small>{warn}"
            f"<div>cells {esc(', '.join(map(str, self.script.cells)))}"
            f" &middot; backend <b>{esc(spec.backend.value)}</b>"
            f" &middot; strategy <b>{esc(self._strategy_line())}</b>"
            f" &middot; {self._cost_markup()}</div>"
            f"<ul>{pools}</ul><div>restarts: {esc(self.restarts())}</div>"
            f"<div>requirements: <code>{reqs}</code></div>"
            + (
                f"<div>route: <b>{esc(self.route.kind)}</b> ({esc(self.route.reason)})</div>"
                if self.route
                else ""
            )
            + (
                f"<div>{'executor image' if self.package else 'image'}: "
                f"<code>{esc(self.image_uri)}</code></div>"
                if self._shows_image()
                else ""
            )
            + (
                f"<details><summary>conversion notes ({len(self.script.notes)})</summary>"
                f"<ul>{notes}</ul></details>"
                if notes
                else ""
            )
            + f"<details><summary>script.py ({self.script.text.count(chr(10))} lines)</summary>"
            f"<pre>{esc(self.script.text)}</pre></details>"
            f"<details><summary>{esc(preview.title)}</summary>"
            f"<pre>{esc(preview.text)}</pre></details></div>"
        )


_LABELS = {
    prices.QUOTED: "quoted",
    prices.DERIVED: "derived: Compute Engine x 1.15",
    prices.FLOOR: "floor: Compute Engine Spot, plus a Vertex AI fee Google does not publish",
}

_RATES = {
    "standard": "list prices",
    "spot": "Spot list prices",
    "flex_start": "flex-start list prices",
}


def _cost_line(
    rate: float | None, pools: list[Pool], spec: JobSpec, current: CurrentRates | None = None
) -> str:
    """The plan's cost line: machines, accelerators and boot disks at the rates of the job's
    scheduling, or which parts Google's list (as :mod:`.prices` holds it) does not price."""
    rates = _RATES.get(spec.google.scheduling, "list prices")
    now = (
        ""
        if current is None
        else (
            "; N1 and its GPUs at current Compute Engine prices from the Cloud Billing Catalog "
            f"API, fetched {current.read}{' (cached a day)' if current.cached else ''}"
        )
    )
    if rate is None:
        names: dict[str, None] = {}
        parts: dict[str, None] = {}
        for _, _, m in pools:
            missing = prices.unlisted(
                m.machine_type,
                m.accelerator_type,
                m.accelerator_count,
                scheduling=spec.google.scheduling,
                boot_disk_type=spec.google.boot_disk_type,
            )
            if missing:
                names[m.name] = None
                parts.update(dict.fromkeys(part for part, _ in missing))
        what = "verified list price" if spec.google.scheduling == "standard" else rates[:-1]
        return (
            f"estimated cost: none; no {what} for {', '.join(names)} (not in Google's list as "
            f"read: {', '.join(parts)}; see {catalog.PRICING_URL})"
        )
    if prices.is_floor(spec.google.scheduling):
        return (
            f"estimated cost: from ${rate:,.2f} per hour (Compute Engine Spot list prices "
            f"{catalog.PRICES_AS_OF}, boot disks included; Vertex AI adds a management fee it "
            f"does not publish, so this is a floor{now})"
        )
    return (
        f"estimated cost: ${rate:,.2f} per hour ({rates} {catalog.PRICES_AS_OF}, boot disks "
        f"included, an estimate{now})"
    )


def _machines_at_scheduling(spec: dict[str, Any], scheduling: str) -> None:
    """The summary's machines priced at the job's scheduling: a Spot job's machines carry their
    Spot floor as ``price_per_hour``, never the on-demand price (``price_basis`` says which)."""
    for key in ("chief", "worker", "ps_machine", "evaluator_machine"):
        machine = spec.get(key)
        if isinstance(machine, dict) and "machine_type" in machine:
            machine["price_per_hour"] = prices.machine_price(
                str(machine["machine_type"]),
                machine.get("accelerator_type") or None,
                int(machine.get("accelerator_count") or 0),
                scheduling,
            )
            machine["price_basis"] = "spot floor" if prices.is_floor(scheduling) else scheduling


def _machine_notes(spec: JobSpec) -> list[str]:
    """Warnings on the machines of a Vertex AI job: legacy GPUs, capacity sold as reserved."""
    notes: list[str] = []
    for machine in dict.fromkeys(m for _, _, m in spec.pools()):
        for note in (
            catalog.legacy_note(machine),
            catalog.capacity_note(
                machine, scheduling=spec.google.scheduling, reservation=spec.google.reservation
            ),
        ):
            if note and note not in notes:
                notes.append(note)
    return notes


def _estimate_text(est: dict[str, Any], unbilled: str | None, timeout: str | None) -> str:
    """The dry run's ``sweep estimate:`` line (:meth:`Plan.sweep_estimate`)."""
    trials, parallel, rounds = est["trials"], est["parallel"], est["rounds"]
    text = f"sweep estimate: {_n(trials, 'trial')}, {parallel} at once: {_n(rounds, 'round')}"
    if timeout is None:
        text += ", each as long as its longest trial (no --timeout bounds a trial)"
    else:
        text += f" of at most {timeout} (--timeout): at most {est['hours']:,g} h in all"
    if unbilled is not None:
        return f"{text}; {unbilled.removeprefix('cost: ')}"
    text += f"; {_n(est['machines_per_trial'], 'machine')} a trial"
    if est["machine_hours"] is not None:
        text += f": at most {est['machine_hours']:,g} machine-hours"
    rate = est["cost_per_hour_per_trial"]
    if est["cost"] is not None:
        one, total = est["cost_per_trial"], est["cost"]
        return f"{text}; at most ${one:,.2f} a trial x {trials} = ${total:,.2f}"
    if rate is not None:
        return f"{text}; ${rate:,.2f}/h a trial, ${rate * parallel:,.2f}/h with {parallel} at once"
    return f"{text}; no list price for its machines: its cost is unknown"


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _hours(spec: JobSpec) -> str:
    seconds = int(spec.timeout_s or 0)
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def _cost_html(rate: float | None, *, floor: bool = False) -> str:
    if rate is None:
        link = f"<a href='{catalog.PRICING_URL}' target='_blank' rel='noopener'>"
        return f"{link}{catalog.NOT_LISTED}</a>"
    return f"from <b>${rate:,.2f}/h</b>" if floor else f"about <b>${rate:,.2f}/h</b>"


_TF_NAMES = {"tensorflow", "tf"}


def uses_estimator(script: Script) -> bool:
    """True when the script uses tf.estimator (gone from TensorFlow >= 2.16).

    Looks at the imports (``tensorflow_estimator``, ``from tensorflow import estimator``,
    ``import tensorflow.estimator``) and at attribute access ``<tf>.estimator`` and
    ``<tf>.compat.v1.estimator``, where ``<tf>`` is any name TensorFlow is imported as.
    """
    if "tensorflow_estimator" in script.imports:
        return True
    try:
        nodes = syntax.parsed(script.text).nodes
    except SyntaxError:
        return False
    tf_names = set(_TF_NAMES)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(("tensorflow.estimator", "tensorflow_estimator")):
                    return True
                if alias.name == "tensorflow" and alias.asname:
                    tf_names.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if ".estimator" in f".{node.module}" and node.module.startswith("tensorflow"):
                return True
            if node.module.startswith("tensorflow") and any(
                a.name == "estimator" for a in node.names
            ):
                return True
    for node in nodes:
        if isinstance(node, ast.Attribute) and node.attr == "estimator":
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in tf_names:
                return True
    return False


def _image_notes(spec: JobSpec, parent: str, notes: list[str]) -> list[str]:
    """Plan notes on the TensorFlow an Estimator or TPU job gets; warnings to show."""
    warnings: list[str] = []
    if spec.image.parent_image:
        if spec.chief.is_tpu and "tpu" not in spec.image.parent_image.lower():
            warnings.append(images.tpu_parent_warning(spec.image.parent_image))
        return warnings
    if spec.chief.is_tpu:
        notes.append(images.tpu_image_note(spec))
    elif spec.decided.estimator:
        notes.append(
            f"uses tf.estimator, which TensorFlow removed in 2.16: the job runs on parent "
            f"image {parent} (TensorFlow {images.ESTIMATOR_TF} keeps Estimator)"
        )
    return warnings


_URL_CREDENTIALS = re.compile(r"(?<=://)[^/\s@]+@")
"""The user information of a URL (``user:password@``, ``token@``): credentials."""


def redact_url(line: str) -> str:
    """``line`` with the credentials of its URLs replaced by ``***``."""
    return _URL_CREDENTIALS.sub("***@", line)


def _secrets_outside_files(script: Script, locate: Callable[[int], str], ships: bool) -> list[str]:
    """A secret in the code (a token assigned in a cell) or the requirements (a pip URL with
    credentials) stops a job whose code leaves this machine (an image or package); a job that
    runs here keeps it in its owner-only folder, and the plan says so.

    Raises:
        SpecError: the job ships its code, and the first secret found, by cell and line.
    """
    # detect-secrets' detectors beside our rules where the code would ship (its import and
    # scan cost a local launch about a tenth of a second, for a warning)
    found = secretscan.scan_text(script.text, detect=ships)
    problems: list[tuple[str, str]] = []
    if found is not None and found.line is not None:
        problems.append(
            (
                f"{locate(found.line)} holds a secret ({found.what})",
                "read it from the environment in the code (os.environ[...]), set where the job "
                "runs (Secret Manager on Vertex AI), and delete the value from the notebook",
            )
        )
    for line in script.requirements.lines:
        token = secretscan.scan_text(line, detect=False)
        if token is not None and not _URL_CREDENTIALS.search(line):
            raise SpecError(  # quoting nothing: the whole line may be the secret
                f"a requirement line holds what looks like a secret ({token.what}), not a package",
                "check the requirements files and %pip lines the job reads (is it the right file?)",
                field="requirements",
            )
        if _URL_CREDENTIALS.search(line):
            problems.append(
                (
                    f"the requirement {redact_url(line)!r} holds credentials",
                    "install it from an index that needs none, or put the package's wheel in "
                    "the notebook's folder and require that file",
                )
            )
    if not problems:
        return []
    if ships:
        what, fix = problems[0]
        raise SpecError(f"{what}: it would go into the job's image and request", fix, field="code")
    return [
        f"{what}: it stays in this machine's owner-only job folder (an image would refuse it)"
        for what, _ in problems
    ]


def job_name(selection: Selection) -> str:
    """A valid job name from the notebook's file name."""
    stem = selection.notebook.stem if selection.notebook else "notebook"
    ascii_stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()  # Ü -> U
    return re.sub(r"[^A-Za-z0-9 _.-]+", "-", ascii_stem).strip(" -_.")[:128] or "notebook"


def _requirements_files(paths: list[str], base: Path) -> Requirements:
    reqs = Requirements()
    for item in paths:
        path = Path(item).expanduser()
        if not path.is_absolute() and not path.exists():
            path = base / path
        reqs.add_file(path, f" ({item})")
    return reqs


def _keras_for_multiworker(spec: JobSpec, script: Script, notes: list[str]) -> None:
    """Keras 3 `fit` fails under MultiWorkerMirrored: have tf-keras in the job (see runtime)."""
    multiworker = spec.resolved_strategy() is Strategy.MULTI_WORKER_MIRRORED
    if not spec.decided.legacy_keras and not multiworker:
        return
    if "keras" not in script.imports and "keras" not in script.text:
        return
    reqs = script.requirements
    if {"tf-keras", "tf_keras"} & reqs.names():
        return
    version = images.local_tensorflow_version()
    if version and tuple(int(x) for x in version.split(".")[:2] if x.isdigit()) < (2, 16):
        return  # Keras 2 is TensorFlow's own Keras there: nothing to add
    if "keras" in script.imports and ".fit(" in script.text:
        # TF_USE_LEGACY_KERAS switches tf.keras only: `import keras` stays Keras 3.
        raise SpecError(
            "the job imports keras (Keras 3), whose model.fit fails under "
            "MultiWorkerMirroredStrategy (PerReplica error in every worker)",
            "use tf.keras instead of keras (the job gets tf-keras for it), or train with a "
            "custom loop (strategy.run)",
            field="strategy",
        )
    pin = f"tf-keras~={'.'.join(version.split('.')[:2])}.0" if version else "tf-keras"
    reqs.add(pin)
    notes.append(
        f"added {pin}: Keras 3 `model.fit` fails under MultiWorkerMirroredStrategy, "
        "the job runs Keras with tf-keras (TF_USE_LEGACY_KERAS=1)"
    )


def _what_it_needs(
    script: Script, base_dir: Path, locate: Callable[[int], str] = str
) -> tuple[list[str], list[str]]:
    """Add the imports the image lacks to the requirements (a note lists them); return the
    files the code reads (by name, pattern or folder), and warnings for imports this kernel
    cannot resolve and for patterns that match nothing next to the notebook."""
    want = needs.missing_imports(
        script.imports, script.requirements.lines, base_dir, also=needs.on_demand(script.text)
    )
    for line in want.requirements:
        script.requirements.add(line)
    if want.requirements:
        script.notes.append(
            "added for the notebook's imports, at this kernel's versions: "
            + ", ".join(
                f"{line} ({want.origins[line]})" if line in want.origins else line
                for line in want.requirements
            )
        )
    warnings = [
        f"import {module}"
        + (f" ({want.origins[module]})" if module in want.origins else "")
        + ": not installed in this kernel, so the job cannot know what to install. "
        f"Fix: add %pip install {module} (its package name) to the notebook, or --requirements"
        for module in want.unresolved
    ]
    files = needs.data_paths(script.text, base_dir)
    limit = int(package.AUTO_LIMIT_MB * 1_000_000)
    reads = needs.read_patterns(script.text, base_dir, package.exclusions(base_dir), limit)
    for path in (p for read in reads for p in read.paths):
        if not any(path == f or path.startswith(f"{f}/") for f in files):
            files.append(path)
    warnings += needs.read_warnings(reads, locate)
    for module in want.local_modules:
        path = f"{module}.py" if (base_dir / f"{module}.py").is_file() else module
        if path not in files:
            files.append(path)
    return files, warnings


def _found_files_notes(context: package.Context, notes: list[str]) -> list[str]:
    """A note for the files the code reads that go into the image; a warning when too large."""
    if context.auto:
        notes.append(
            "files next to the notebook that the code reads go into the image: "
            + package.listed(context.auto)
        )
    if context.auto_over is None:
        return []
    size, paths = context.auto_over
    return [
        f"the code reads {package.listed(paths)} ({human_size(size)}), over the "
        f"{package.AUTO_LIMIT_MB} MB the plan takes into an image unasked. Fix: read it from a "
        "bucket (gs://...), or pass --include PATH to ship it anyway"
    ]


def _unattended(facts: codeinfo.CodeFacts, locate: Callable[[int], str]) -> list[str]:
    """Warnings for code that needs a person or Colab, neither of which a job has."""
    out = []
    if facts.asks_input:
        out.append(
            f"input() at {locate(facts.asks_input)} waits for a person: the job has no one to "
            "answer (it reads end of file). Fix: set the value in the code, or pass it with --args"
        )
    if facts.colab:
        out.append(
            f"google.colab at {locate(facts.colab)} exists only in Colab: the import fails in the "
            "job. Fix: tag that cell tfc-skip (or tfc-local-only)"
        )
    return out


def source_map_text(script: Script, selection: Selection) -> str:
    """The job's ``script.map.json`` (see ``tfc_runtime.sourcemap``)."""
    run_cell = selection.run_cell if selection.run_cell in script.cells else None
    data = script.source_map_json(selection.name, script=selection.script, run_cell=run_cell)
    if not selection.script:  # the job's code cells as written: its executed notebook's
        used = set(script.cells)
        data["cells"] = [
            {"cell": c.index, "source": c.source} for c in selection.cells if c.index in used
        ]
    return json.dumps(data)


def _locator(script: Script, file: str | None = None) -> Callable[[int], str]:
    """Script line -> ``cell 3, line 2`` (``train.py, line 2`` for a ``.py`` entry point
    ``file``; ``script line N`` for generated lines)."""

    def locate(line: int) -> str:
        where = script.locate(line)
        if where is None:
            return f"script line {line}"
        return f"{file}, line {where[1]}" if file else f"cell {where[0]}, line {where[1]}"

    return locate


def _no_module_named_like_the_runtime(base_dir: Path) -> None:
    """A ``tfc_runtime`` module beside the notebook would be imported in place of the job's
    runtime (the job starts there, and Python looks there first): the job would run that
    module and nothing of the notebook, and end "succeeded"."""
    for name in ("tfc_runtime.py", "tfc_runtime"):
        found = base_dir / name
        if found.is_file() if name.endswith(".py") else found.is_dir():
            raise SpecError(
                f"{found} has the name of the job's runtime (tfc_runtime): the job would "
                "run it instead of the notebook",
                f"rename {name} (and its imports)",
                field="notebook",
            )


def _route(
    spec: JobSpec,
    asked: str,
    script: Script,
    selection: Selection,
    settings: Settings,
    context: package.Context | None,
) -> Route | None:
    """How the code reaches a backend with routes (its class's ``route``: Vertex AI's package
    on a prebuilt image, or an image); None for the others, which run it as it is.

    Raises:
        SpecError: an unknown route, one asked of a backend without routes, or the backend's
            refusal (``--route package`` that cannot carry the job).
    """
    if asked not in ROUTES:
        raise SpecError(f"unknown route {asked!r}", "use auto, package or image", field="route")
    if not registry.traits(spec.backend).routes:
        if asked != "auto":
            raise SpecError(
                f"--route {asked} is how code reaches {registry.label_of('routes')}; the "
                f"{spec.backend.value} backend runs it here",
                (Fix.drop("route"), *registry.fixes_instead("routes")),
                field="route",
            )
        return None
    route: Route = registry.load(spec.backend).route(
        spec,
        list(script.requirements.lines),
        selection.base_dir,
        asked=asked,
        tf_version=images.local_tensorflow_version(),
        extra_images=settings.get("prebuilt_images"),
        context=context,
    )
    return route


def make_plan(selection: Selection, ns: JobOptions, settings: Settings) -> Plan:
    """Convert the selected cells and build the validated JobSpec.

    Raises:
        TfcError: a conversion, requirements or spec problem, with the fix.
    """
    try:
        return _make_plan(selection, ns, settings)
    finally:
        syntax.forget()  # the script's tree, read by every step, is not kept


def _make_plan(selection: Selection, ns: JobOptions, settings: Settings) -> Plan:
    """:func:`make_plan`'s steps: the script, the spec and its sweep, the strategy, what the
    job ships (its image context, its route), and the warnings the plan shows."""
    script, name_warnings = _script(selection, ns)
    facts = codeinfo.analyse(script.text)
    spec = ns.to_spec(
        settings, name=job_name(selection), estimator=uses_estimator(script) or facts.estimator
    )
    masking.check(spec.notify)  # each URL one apprise sends to, before anything starts
    spec, sweep = _swept(spec, script, selection, ns)
    locate = _locator(script, selection.name if selection.script else None)
    spec, choice = _strategy(spec, script, facts, locate)
    traits = registry.traits(spec.backend)
    if sweep is not None:
        _check_sweep_backend(sweep, spec, traits, dry_run=ns.dry_run)
    builds = traits.runs_image and not spec.image.image  # the job runs an image we build
    found: list[str] = []
    need_warnings: list[str] = []
    if builds:
        found, need_warnings = _what_it_needs(script, selection.base_dir, locate)
    secret_notes = _secrets_outside_files(script, locate, ships=traits.runs_image)
    spec = spec.evolve(requirements=tuple(map(redact_url, script.requirements.lines)))
    parent = images.parent_image(spec)
    context = _context(spec, script, selection, settings, found) if not spec.image.image else None
    image_uri = images.planned_image_uri(spec, context.tag if context else None)
    route = _route(spec, ns.route, script, selection, settings, context)
    if route is not None:
        spec = spec.decide(route=route.kind)
        if route.package is not None and route.image:
            image_uri = parent = route.image
    warnings = list(selection.warnings) + name_warnings + choice.warnings
    warnings += _sweep_notes(sweep, traits.on_this_machine)
    warnings += _unattended(facts, locate)
    warnings += need_warnings + secret_notes
    if route is not None and route.note:
        warnings.append(route.note)
    if builds and context is not None:
        warnings += _found_files_notes(context, script.notes)
    warnings += _environment_notes(spec, script, parent, context)
    warnings += _backend_notes(spec, ns)
    return Plan(
        spec=spec,
        selection=selection,
        script=script,
        parent_image=parent,
        image_uri=image_uri,
        warnings=tuple(warnings),
        context=context,
        options=ns,
        settings=settings,
        route=route,
        sweep=sweep,
        current=_current_prices(spec, settings) if traits.billed else None,
    )


def _script(selection: Selection, ns: JobOptions) -> tuple[Script, list[str]]:
    """The selected cells converted to the job's script, with the requirements files asked
    for, and the warnings about the names it uses.

    Raises:
        TfcError: a module named like the runtime, a requirements file, the conversion, or a
            name nothing binds.
    """
    _no_module_named_like_the_runtime(selection.base_dir)
    extra = _requirements_files(list(ns.requirements or []), selection.base_dir)
    script = convert(
        selection.cells,
        base_dir=selection.base_dir,
        notebook=selection.name,
        extra_requirements=extra,
    )
    script.notes[:0] = selection.notes  # how the cells were taken (as saved, as run)
    name_warnings = prelaunch.check(script, selection)  # a name nothing binds stops it here
    return script, name_warnings


def _swept(
    spec: JobSpec, script: Script, selection: Selection, ns: JobOptions
) -> tuple[JobSpec, SweepPlan | None]:
    """``spec`` with the sweep ``--sweep`` asks for, found on the script's lines (None: no
    sweep); each trial runs the plan with its values there.

    Raises:
        SpecError: sweep flags without ``--sweep``, or a sweep that cannot be planned.
    """
    _refuse_sweep_flags_alone(ns)
    if not ns.sweep:
        return spec, None
    sweep = plan_sweep(
        script,
        selection.cells,
        ns.sweep,
        trials=ns.trials or None,
        parallel=ns.parallel,
        metric=ns.metric,
        goal=ns.goal,
        method=ns.method,
        prune=ns.prune,
    )
    spec = spec.decide(swept=params.encode(sweep.targets), sweep_metric=sweep.spec.metric)
    return spec, sweep


def _strategy(
    spec: JobSpec, script: Script, facts: codeinfo.CodeFacts, locate: Callable[[int], str]
) -> tuple[JobSpec, Choice]:
    """``spec`` with the strategy chosen for the code (:func:`~tfc_jupyter.job.choose.choose`)
    and the Keras a multi-worker job needs.

    Raises:
        SpecError: an explicit strategy that cannot work with the code.
    """
    choice = choose(spec, facts, locate)
    spec = spec.decide(
        strategy=choice.strategy.value,
        strategy_reason=choice.reason,
        legacy_keras=choice.legacy_keras and not spec.decided.estimator,
        serve=choice.serve,
        keras_tuner=choice.keras_tuner,
    )
    if not spec.decided.estimator:  # an Estimator job runs TF 2.15, whose tf.keras is Keras 2
        _keras_for_multiworker(spec, script, script.notes)
    return spec, choice


def _check_sweep_backend(
    sweep: SweepPlan, spec: JobSpec, traits: registry.Traits, *, dry_run: bool
) -> None:
    """Refuse a sweep the backend cannot launch, or whose method or values it does not run.

    Raises:
        SpecError: naming where the sweep runs, or the backend's own rule.
    """
    if not (traits.on_this_machine or traits.tunes or dry_run):
        raise SpecError(
            f"launching a sweep on {traits.label} is not supported (--dry-run shows its request)",
            "run the sweep on this machine (--backend local, or docker), or on Vertex AI "
            "(--backend vertex), which runs it as a tuning job",
            field="sweep",
        )
    _refuse_method_not_run(sweep.spec.method, traits)
    rules = getattr(registry.load(spec.backend), "check_sweep", None)
    if rules is not None:  # the backend's own rules (Vertex AI: Vizier's on the values)
        rules(sweep.spec)


def _context(
    spec: JobSpec, script: Script, selection: Selection, settings: Settings, found: list[str]
) -> package.Context:
    """What the job ships: its script, source map, requirements and the files beside it
    (``found``: those the code reads), checked against the size limit where it runs an image.

    Raises:
        TfcError: the files cannot be read, or are over the limit.
    """
    return package.make_context(
        spec,
        script=script.text,
        source_map=source_map_text(script, selection),
        requirements=script.requirements.lines,
        base_dir=selection.base_dir,
        check_limit=registry.traits(spec.backend).runs_image,  # one that runs no image, builds none
        auto_include=found,
        limit=package.limit_bytes(settings),
    )


def _environment_notes(
    spec: JobSpec, script: Script, parent: str, context: package.Context | None
) -> list[str]:
    """Warnings about where the job runs: requirements this kernel cannot be checked for, the
    parent image, and the files left out of the image."""
    traits = registry.traits(spec.backend)
    warnings: list[str] = []
    if not traits.runs_image:  # the job runs in this environment
        unchecked = unsatisfied(list(spec.requirements))[1]
        if unchecked:
            warnings.append(
                f"cannot check {', '.join(unchecked)} (a URL that names no project): make sure "
                "this kernel has it, or write it as NAME @ URL"
            )
    warnings += _image_notes(spec, parent, script.notes)
    if context is not None and context.left_out and traits.runs_image:
        warnings.append(f"left out of the image: {package.left_out_text(context.left_out)}")
    return warnings


def _backend_notes(spec: JobSpec, ns: JobOptions) -> list[str]:
    """Warnings from the backend's side: a project it needs, the machines it bills, its own
    options given together, and a spot job that would restart from the start."""
    traits = registry.traits(spec.backend)
    warnings: list[str] = []
    if traits.needs_project and not spec.google.project:
        warnings.append("no Google Cloud project set: pass --project or set GOOGLE_CLOUD_PROJECT")
    if traits.billed:
        warnings += _machine_notes(spec)
    notes = getattr(registry.load(spec.backend), "plan_notes", None) if traits.scheduling else None
    if notes is not None:  # a backend's own options given together (Vertex AI's)
        warnings += notes(spec, ns)
    loses_backups = traits.restarts and not (traits.keeps_backups or spec.base_output_dir)
    if spec.google.scheduling == "spot" and spec.resume and loses_backups:
        warnings.append(
            "--spot without --base-output-dir: a preempted replica restarts on a new VM and "
            "trains from the start; pass --base-output-dir gs://BUCKET/DIR to resume"
        )
    return warnings


def _current_prices(spec: JobSpec, settings: Settings) -> CurrentRates | None:
    """The backend's current prices (its class's ``current_prices``: Vertex AI reads Compute
    Engine's where the user has credentials, cached a day in the tfc home), else None: the
    list prices stand. Only a billed backend's plan asks: a local launch imports nothing."""
    current = getattr(registry.load(spec.backend), "current_prices", None)
    found: CurrentRates | None = current(settings) if current is not None else None
    return found


_SWEEP_ONLY = (("trials", 0), ("parallel", 1), ("metric", None), ("goal", None),
               ("method", methods.DEFAULT), ("prune", False))  # fmt: skip
"""The options only a sweep reads, with their values when not given."""


def _refuse_sweep_flags_alone(ns: JobOptions) -> None:
    """A sweep's own option given without ``--sweep`` (it was ignored: one job ran).

    Raises:
        SpecError: naming them, with the fixes as data (drop them).
    """
    if ns.sweep:
        return
    given = [name for name, unset in _SWEEP_ONLY if getattr(ns, name) != unset]
    if not given:
        return
    flags = ", ".join("--" + name.replace("_", "-") for name in given)
    raise SpecError(
        f"{flags} {'is' if len(given) == 1 else 'are'} for a sweep, and no --sweep is given",
        [Fix.drop(name) for name in given]
        + [Fix("set", "sweep", placeholder="NAME=SPACE", verb="add", after=" to sweep a variable")],
        field=given[0],
    )


def _refuse_method_not_run(method: str, traits: registry.Traits) -> None:
    """A sweep method its backend does not run (Vertex AI has no algorithm for it): refused
    as the plan is made, a dry run's too (it could not show the request).

    Raises:
        SpecError: with the fixes as data: a method it runs, or the local backend (which runs
            every one).
    """
    runs = traits.sweep_methods
    if runs is None or method in runs:
        return
    known = [name for name in methods.names() if name in runs]
    fixes = [Fix.set("backend", DEFAULT, verb="use")]
    if known:
        others = f" (or {methods.either(known[1:])})" if known[1:] else ""
        fixes.insert(0, Fix.set("method", known[0], verb="use", after=others))
    raise SpecError(f"{traits.label} cannot run --method {method}", fixes, field="method")


def _sweep_notes(sweep: SweepPlan | None, here: bool) -> list[str]:
    """Warnings on a sweep's size: more trials at once than this machine has cores, more
    trials than the space has combinations."""
    if sweep is None:
        return []
    import os

    notes = []
    spec = sweep.spec
    cores = os.cpu_count() or 1
    if here and spec.parallel > cores:
        notes.append(
            f"--parallel {spec.parallel} runs {spec.parallel} trials at once on {cores} cores: "
            f"each gets a share of them, the sweep takes as long or longer (--parallel {cores} "
            "matches the cores)"
        )
    size = spec.grid_size()
    if size is not None and spec.trials > size:  # a grid runs each combination once
        notes.append(
            f"the swept values make {size} combinations: {spec.trials} trials repeat them "
            f"(--trials {size} runs each once)"
        )
    return notes
