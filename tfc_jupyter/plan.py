"""The core: a captured notebook + flags -> a validated, explained Plan.

Every edge (magic, CLI, panel, REST) calls :func:`make_plan`; a dry run renders the Plan, a launch
hands it to a backend. Nothing here imports IPython, tornado, TensorFlow or aiplatform.
"""

from __future__ import annotations

import argparse
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import catalog, images, vertex_request
from .capture import Selection
from .config import Settings
from .convert import Script, convert
from .errors import SpecError
from .options import spec_from_options
from .requirements import Requirements
from .spec import JobSpec, Strategy


@dataclass
class Plan:
    """Everything about one job before it runs: spec, cells, script, image and request."""

    spec: JobSpec
    selection: Selection
    script: Script
    parent_image: str
    image_uri: str
    warnings: list[str] = field(default_factory=list)

    @property
    def requirements(self) -> list[str]:
        """The job's requirement lines (notebook pip lines merged with files)."""
        return list(self.script.requirements.lines)

    def vertex_request(self) -> dict[str, Any]:
        """The exact CustomJob create request (method, url, body)."""
        return vertex_request.custom_job_request(self.spec, self.image_uri)

    def pools(self) -> list[tuple[str, int, catalog.Machine]]:
        """``(role, replicas, machine)`` for each worker pool."""
        rows = [("chief", 1, self.spec.chief)]
        if self.spec.worker_count:
            rows.append(("worker", self.spec.worker_count, self.spec.worker or self.spec.chief))
        return rows

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (CLI ``--json``, REST API, panel)."""
        return {
            "notebook": str(self.selection.notebook) if self.selection.notebook else None,
            "found_by": self.selection.how,
            "cells": self.script.cells,
            "skipped_cells": self.selection.skipped,
            "spec": self.spec.to_dict(),
            "strategy": self.spec.resolved_strategy().value,
            "cost_per_hour": self.spec.cost_per_hour(),
            "requirements": self.requirements,
            "image": self.image_uri,
            "parent_image": self.parent_image,
            "warnings": self.warnings,
            "notes": self.script.notes,
            "vertex_request": self.vertex_request(),
        }

    # ------------------------------------------------------------------ rendering
    def _pool_lines(self) -> list[str]:
        lines = []
        for i, (role, n, machine) in enumerate(self.pools()):
            lines.append(
                f"  pool {i} {role} x{n}: {machine.name} = {machine.describe()}"
                f"  (${machine.price_per_hour * n:,.2f}/h)"
            )
        return lines

    def _strategy_line(self) -> str:
        resolved = self.spec.resolved_strategy()
        text = resolved.value
        if self.spec.strategy is Strategy.AUTO:
            text += " (auto"
            if resolved is Strategy.ONE_DEVICE:
                text += ": /gpu:0 when the machine has a GPU, else /cpu:0"
            text += ")"
        return text

    def to_text(self, *, script: bool = True) -> str:
        """The dry run as plain text (CLI, terminal IPython)."""
        spec = self.spec
        out = [f"Plan for {self.selection.name!r} (found by {self.selection.how})"]
        out += [f"! {w}" for w in self.warnings]
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
        out.append(
            f"estimated cost: ${spec.cost_per_hour():,.2f} per hour "
            f"(list prices {catalog.PRICES_AS_OF}, an estimate)"
        )
        out.append("requirements: " + (", ".join(self.requirements) or "none"))
        out.append(f"image: {self.image_uri}  (parent {self.parent_image})")
        for note in self.script.notes:
            out.append(f"  note: {note}")
        if script:
            out.append("--- script.py ---")
            out.append(self.script.text.rstrip())
        out.append("--- Vertex AI request ---")
        out.append(json.dumps(self.vertex_request(), indent=2))
        return "\n".join(out)

    def _repr_html_(self) -> str:
        esc = html.escape
        spec = self.spec
        warn = "".join(f"<div style='color:#b35900'>&#9888; {esc(w)}</div>" for w in self.warnings)
        pools = "".join(f"<li><code>{esc(line.strip())}</code></li>" for line in self._pool_lines())
        notes = "".join(f"<li>{esc(n)}</li>" for n in self.script.notes)
        reqs = esc(", ".join(self.requirements) or "none")
        return (
            f"<div class='tfc-plan'><b>Plan for {esc(self.selection.name)}</b> "
            f"<small>(found by {esc(self.selection.how)})</small>{warn}"
            f"<div>cells {esc(', '.join(map(str, self.script.cells)))}"
            f" &middot; backend <b>{esc(spec.backend.value)}</b>"
            f" &middot; strategy <b>{esc(self._strategy_line())}</b>"
            f" &middot; about <b>${spec.cost_per_hour():,.2f}/h</b></div>"
            f"<ul>{pools}</ul><div>requirements: <code>{reqs}</code></div>"
            f"<div>image: <code>{esc(self.image_uri)}</code></div>"
            + (
                f"<details><summary>conversion notes ({len(self.script.notes)})</summary>"
                f"<ul>{notes}</ul></details>"
                if notes
                else ""
            )
            + f"<details><summary>script.py ({self.script.text.count(chr(10))} lines)</summary>"
            f"<pre>{esc(self.script.text)}</pre></details>"
            f"<details><summary>Vertex AI request</summary>"
            f"<pre>{esc(json.dumps(self.vertex_request(), indent=2))}</pre></details></div>"
        )


def job_name(selection: Selection) -> str:
    """A valid job name from the notebook's file name."""
    stem = selection.notebook.stem if selection.notebook else "notebook"
    return re.sub(r"[^A-Za-z0-9 _.-]+", "-", stem).strip(" -_.")[:128] or "notebook"


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
    if spec.resolved_strategy() is not Strategy.MULTI_WORKER_MIRRORED:
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


def make_plan(selection: Selection, ns: argparse.Namespace, settings: Settings) -> Plan:
    """Convert the selected cells and build the validated JobSpec.

    Raises:
        TfcError: a conversion, requirements or spec problem, with the fix.
    """
    extra = _requirements_files(list(ns.requirements or []), selection.base_dir)
    script = convert(
        selection.cells,
        base_dir=selection.base_dir,
        notebook=selection.name,
        extra_requirements=extra,
    )
    spec = spec_from_options(ns, settings, name=job_name(selection))
    _keras_for_multiworker(spec, script, script.notes)
    spec = spec.evolve(requirements=tuple(script.requirements.lines))
    parent = images.parent_image(spec)
    image_uri = images.planned_image_uri(spec, script.text, script.requirements.lines)
    warnings = list(selection.warnings)
    if spec.backend.value == "vertex" and not spec.project:
        warnings.append("no Google Cloud project set: pass --project or set GOOGLE_CLOUD_PROJECT")
    return Plan(
        spec=spec,
        selection=selection,
        script=script,
        parent_image=parent,
        image_uri=image_uri,
        warnings=warnings,
    )
