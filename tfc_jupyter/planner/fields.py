"""The fields of the launch panel and the JupyterLab form, from the option table (issue 36).

Every option that declares a ``label`` (:mod:`tfc_jupyter.job.options`) is a field of both, in
its ``group``, with its words: label, help, placeholder, and, for a choice, the values offered
with their labels (:func:`choices`). The panel (ipywidgets) renders :func:`form_fields` and the
form (``GET /defaults``, ``fields``) renders the same list, so the two show the same fields with
the same words; an option given a label appears on both, and in the magic, the CLI and the jobs
API, which the option table already drives.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import registry
from ..errors import TfcError
from ..job import catalog, prices
from ..job.options import OptionField, all_fields
from ..job.spec import Strategy
from ..sweep import methods

GROUPS = ("Where", "Machines", "Google Cloud", "Job", "Sweep")
"""The sections, in order (a backend's own options follow, in a section of its own)."""
ORDER = (
    *("backend", "strategy", "machine", "workers", "worker_machine", "gpus", "gpu_type", "tpu"),
    *("region", "project", "name", "label", "requirements", "args"),
    *("sweep", "trials", "parallel", "metric", "goal", "method"),
)
"""The order of the fields within their sections; an option not named here comes after, in
the table's order."""
SUGGESTED = frozenset({"regions"})
"""Choice lists that only suggest: any other value may be typed."""

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
"""Vertex AI training regions offered as suggestions; any region the spec accepts may be typed."""

STRATEGY_AUTO_LABEL = "auto (the code decides)"
"""The label of strategy ``auto``: the code decides whether a strategy is added (see the
README's "Strategy auto"), which is not what ``tfc.run`` did."""


@dataclass(frozen=True)
class FormField:
    """One field of the panel and the form."""

    name: str
    """The option's name (its ``JobOptions`` field, and its key in the jobs API)."""
    label: str
    group: str
    kind: str
    """The option's value: ``count``, ``text``, ``list`` or ``switch``."""
    control: str
    """``choice`` (a list), ``suggest`` (a list, or any text), ``count`` (a whole number),
    ``text``, ``list`` (items in one text box, split on ``separator``) or ``switch``."""
    help: str
    placeholder: str = ""
    separator: str = ","
    neutral: str | None = None
    default: str = ""
    """The option's default as the field shows it (``1``, ``bayes``; empty: none)."""
    choices: str | None = None
    """The name of its values' list (:func:`choices`), for a choice or a suggestion."""
    only_with: tuple[str, ...] = ()
    """Fields that must be set for this one to be sent (a GPU type: with GPUs)."""
    only_without: tuple[str, ...] = ()
    """Fields that must not be set for this one to be sent (a TPU host: no chief machine or
    GPUs); the panel and the form clear it then (:func:`sent`)."""
    optional: bool = False
    """An optional count's box (:attr:`OptionField.optional`): empty is unset, sent as ``""``
    (not 0), and an untouched one adds no flag."""

    def to_json(self, values: list[tuple[Any, str]] | None = None) -> dict[str, Any]:
        """JSON-ready, with its values (``[{"value", "label"}]``) when it offers some."""
        return {
            "name": self.name,
            "label": self.label,
            "group": self.group,
            "kind": self.kind,
            "control": self.control,
            "help": self.help.replace("%%", "%"),
            "placeholder": self.placeholder,
            "separator": self.separator,
            "neutral": self.neutral,
            "default": self.default,
            "choices": [{"value": v, "label": label} for v, label in values]
            if values is not None
            else None,
            "only_with": list(self.only_with),
            "only_without": list(self.only_without),
            "optional": self.optional,
        }


def _field(option: OptionField) -> FormField:
    flag = option.flag
    assert flag.label is not None
    control = option.kind
    if flag.choices:
        control = "suggest" if flag.choices in SUGGESTED else "choice"
    group = flag.group
    if option.backend and group == "Job":  # a backend's own option: in its own section
        group = registry.traits(option.backend).label
    return FormField(
        option.name,
        flag.label,
        group,
        option.kind,
        control,
        option.help,
        flag.placeholder,
        flag.separator,
        flag.neutral,
        _shown(option),
        flag.choices,
        flag.only_with,
        flag.only_without,
        option.optional,
    )


def _shown(option: OptionField) -> str:
    """An option's default as its field shows it."""
    value = option.default
    if option.kind == "list":
        return ""
    if option.kind == "switch":
        return "true" if value else "false"
    return "" if value is None else str(value)


def form_fields() -> list[FormField]:
    """Every labelled option, portable and installed backends', by section then order."""
    made = [_field(o) for o in all_fields() if o.flag.label]
    groups = [*GROUPS, *sorted({f.group for f in made} - set(GROUPS))]
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(made, key=lambda f: (groups.index(f.group), rank.get(f.name, len(ORDER))))


def machine_rows() -> list[catalog.Machine]:
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


def _machine_label(machine: catalog.Machine) -> str:
    return f"{machine.name} · {machine.describe()} · {catalog.price_text(machine.price_per_hour)}"


def choices(
    source: str, *, default_machine: str = "CPU", current: Any = None
) -> list[tuple[Any, str]]:
    """The values a field offers, with their labels. ``current``: a value the cell's line
    named that the list lacks (a legacy machine ...), kept so the field can show it."""
    rows: list[tuple[Any, str]]
    if source == "backends":
        rows = []
        for name in registry.names():
            label = registry.traits(name).label
            rows.append((name, name if label.lower() == name else f"{name} ({label})"))
    elif source == "strategies":
        rows = [(s.value, STRATEGY_AUTO_LABEL if s is Strategy.AUTO else s.value) for s in Strategy]
    elif source in ("machines", "worker_machines"):
        machines = machine_rows()
        if current and current not in {m.name for m in machines}:  # a legacy one, named
            with contextlib.suppress(TfcError):
                machines.append(catalog.lookup(str(current)))
        first = f"default ({default_machine})" if source == "machines" else "same as the chief"
        rows = [("", first), *((m.name, _machine_label(m)) for m in machines)]
    elif source == "gpu_types":
        rows = [("", "default (the machine's, else T4)")] + [
            (g, f"{g} · {catalog.price_text(prices.gpu_price(enum), ' per GPU-hour')}")
            for g, (enum, _, _) in catalog.GPUS.items()
            if g in catalog.OFFERED_GPU_TYPES or g == current  # a legacy one named
        ]
    elif source == "gpu_counts":
        counts = sorted({n for _, _, a in catalog.GPUS.values() for c in a.values() for n in c})
        rows = [(0, "none")] + [(n, str(n)) for n in counts]
    elif source == "tpus":
        rows = [("", "none")] + [
            (key, _machine_label(catalog.tpu_machine(key))) for key in catalog.TPU_TYPES
        ]
    elif source == "regions":
        rows = [(r, r) for r in REGIONS]
    elif source == "goals":
        rows = [("", "from the metric's name"), ("min", "lowest"), ("max", "highest")]
    elif source == "methods":
        rows = [(name, cls.label()) for name, cls in methods.METHODS.items()]
    else:
        raise KeyError(f"no choices named {source!r}")
    if current is not None and current not in [value for value, _ in rows]:
        rows.append((current, str(current)))  # typed in a flag: kept, validation speaks
    return rows


def fields_json(default_machine: str = "CPU") -> list[dict[str, Any]]:
    """:func:`form_fields` with their values, as ``GET /defaults`` serves them."""
    return [
        f.to_json(choices(f.choices, default_machine=default_machine) if f.choices else None)
        for f in form_fields()
    ]


def sent(values: Mapping[str, Any], fields: Iterable[FormField]) -> dict[str, Any]:
    """``values`` (one a field) as the panel and the form send them: a field whose
    ``only_with`` fields are not all set, or one of whose ``only_without`` fields is, is
    emptied (0, "", no items, off; an optional count: None). The form's ``toOptions`` applies
    the same rule, read from the fields the server sends."""
    out = dict(values)
    for f in fields:
        if f.name not in out:
            continue
        if any(not values.get(n) for n in f.only_with) or any(
            values.get(n) for n in f.only_without
        ):
            out[f.name] = None if f.optional else _EMPTY.get(f.kind, "")
    return out


_EMPTY: dict[str, Any] = {"count": 0, "switch": False, "list": ""}
