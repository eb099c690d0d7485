"""The machine catalog: every machine a job can ask for, with what it holds and costs.

Names follow tfc.run's ``COMMON_MACHINE_CONFIGS`` (``CPU``, ``T4_1X``, ``V100_4X``, ``TPU`` ...)
and extend them with today's Vertex AI machines (A100, A100 80GB, L4, H100, H100 Mega, H200,
B200, TPU v2/v3/v5e). Raw Vertex machine types (``n1-standard-8``, ``a2-highgpu-1g``) are
accepted too.

A machine's ``price_per_hour`` is its on-demand Vertex AI training price in us-central1
(machine plus accelerators, no boot disk) from Google's list as :mod:`.prices` holds it, each
row with its source and date; a job's price (:meth:`.spec.JobSpec.cost_per_hour`) adds boot
disks and takes Spot or flex-start rates. Where Google's list as read gives no number the price
is ``None``: plans say "price not listed" and link :data:`PRICING_URL` rather than show a
number nobody checked.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace

from ..errors import SpecError
from . import prices, vertex_rules
from .machines import MACHINE_TYPES  # Vertex AI's training machine list

PRICES_AS_OF = prices.AS_OF
PRICING_URL = prices.PAGE_URL
NOT_LISTED = "price not listed"


def price_text(value: float | None, unit: str = "/h") -> str:
    """``$1.23/h``, or "price not listed" for machines without a verified list price."""
    return NOT_LISTED if value is None else f"${value:,.2f}{unit}"


def total_price(*parts: tuple[float | None, int]) -> float | None:
    """The sum of ``price x count`` parts; None when a counted part has no listed price."""
    total = 0.0
    for price, count in parts:
        if count <= 0:
            continue
        if price is None:
            return None
        total += price * count
    return round(total, 4)


@dataclass(frozen=True)
class Machine:
    """One machine of a worker pool: a Vertex machine type and its accelerators."""

    name: str
    machine_type: str
    accelerator_type: str | None = None
    accelerator_count: int = 0
    vcpus: int = 0
    memory_gb: float = 0.0
    price_per_hour: float | None = None  # None: no verified list price (see PRICING_URL)
    tpu_topology: str | None = None

    @property
    def is_tpu(self) -> bool:
        """True for TPU hosts (v2/v3 ``cloud-tpu`` and v5e ``ct5lp-*``)."""
        return self.machine_type == "cloud-tpu" or self.machine_type.startswith("ct5lp-")

    @property
    def gpu_count(self) -> int:
        """Number of GPUs attached (0 for CPU and TPU machines)."""
        if self.is_tpu or not self.accelerator_type:
            return 0
        return self.accelerator_count

    @property
    def tpu_chips(self) -> int:
        """TPU chips (v5e) or cores (v2/v3: 8) of a TPU host, else 0."""
        if not self.is_tpu:
            return 0
        if self.tpu_topology:
            a, b = (int(x) for x in self.tpu_topology.split("x"))
            return a * b
        return self.accelerator_count

    def describe(self) -> str:
        """A one-line human description, e.g. ``n1-standard-8 + 1 x NVIDIA_TESLA_T4``."""
        text = self.machine_type
        if self.tpu_topology:
            text += f" (TPU v5e, topology {self.tpu_topology})"
        elif self.accelerator_type:
            text += f" + {self.accelerator_count} x {self.accelerator_type}"
        return f"{text}, {self.vcpus} vCPU, {self.memory_gb:g} GB"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (for job records and the REST catalog)."""
        return {
            "name": self.name,
            "machine_type": self.machine_type,
            "accelerator_type": self.accelerator_type,
            "accelerator_count": self.accelerator_count,
            "vcpus": self.vcpus,
            "memory_gb": self.memory_gb,
            "price_per_hour": self.price_per_hour,
            "tpu_topology": self.tpu_topology,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Machine:
        """Inverse of :meth:`to_dict`."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})  # type: ignore[arg-type]


# short GPU name -> (Vertex enum, an earlier unverified price: not used, see prices.py,
# {machine family: allowed counts})
GPUS: dict[str, tuple[str, float | None, dict[str, tuple[int, ...]]]] = {
    "K80": ("NVIDIA_TESLA_K80", 0.5175, {"n1": (1, 2, 4, 8)}),
    "P4": ("NVIDIA_TESLA_P4", 0.6900, {"n1": (1, 2, 4)}),
    "P100": ("NVIDIA_TESLA_P100", 1.6790, {"n1": (1, 2, 4)}),
    "V100": ("NVIDIA_TESLA_V100", 2.8520, {"n1": (1, 2, 4, 8)}),
    "T4": ("NVIDIA_TESLA_T4", 0.4025, {"n1": (1, 2, 4)}),
    "A100": ("NVIDIA_TESLA_A100", 3.3720, {"a2-highgpu": (1, 2, 4, 8), "a2-megagpu": (16,)}),
    "A100_80GB": ("NVIDIA_A100_80GB", 4.5180, {"a2-ultragpu": (1, 2, 4, 8)}),
    "L4": ("NVIDIA_L4", 0.6440, {"g2": (1, 2, 4, 8)}),
    "H100": ("NVIDIA_H100_80GB", 9.0125, {"a3-highgpu": (1, 2, 4, 8)}),
    "H100_MEGA": ("NVIDIA_H100_MEGA_80GB", None, {"a3-megagpu": (8,)}),
    "H200": ("NVIDIA_H200_141GB", None, {"a3-ultragpu": (8,)}),
    "B200": ("NVIDIA_B200", None, {"a4-highgpu": (8,)}),
    "RTX_PRO_6000": ("NVIDIA_RTX_PRO_6000", None, {"g4": (1, 2, 4, 8)}),
}
GPU_BY_ENUM = {enum: short for short, (enum, _, _) in GPUS.items()}

# Which machine type carries N GPUs of each kind (tfc.run's choices for the n1 family).
_N1_FOR_COUNT = {1: "n1-standard-8", 2: "n1-standard-16", 4: "n1-standard-16", 8: "n1-standard-32"}
_FIXED_FOR_COUNT = {
    "A100": {**{n: f"a2-highgpu-{n}g" for n in (1, 2, 4, 8)}, 16: "a2-megagpu-16g"},
    "A100_80GB": {n: f"a2-ultragpu-{n}g" for n in (1, 2, 4, 8)},
    "L4": {1: "g2-standard-8", 2: "g2-standard-24", 4: "g2-standard-48", 8: "g2-standard-96"},
    "H100": {n: f"a3-highgpu-{n}g" for n in (1, 2, 4, 8)},
    "H100_MEGA": {8: "a3-megagpu-8g"},
    "H200": {8: "a3-ultragpu-8g"},
    "B200": {8: "a4-highgpu-8g"},
    "RTX_PRO_6000": {n: f"g4-standard-{48 * n}" for n in (1, 2, 4, 8)},
}
# Machine types whose accelerators are built in: type -> (GPU short name, count), from Vertex
# AI's table (vertex_rules.BUILT_IN_GPUS; GB200's ARM machine is refused before it is looked up).
_BUILT_IN = {
    mt: (GPU_BY_ENUM[enum], n)
    for mt, (enum, n) in vertex_rules.BUILT_IN_GPUS.items()
    if enum in GPU_BY_ENUM
}

# TPU names -> (machine type, accelerator enum, count, topology, an earlier unverified price:
# not used, see prices.py)
TPUS: dict[str, tuple[str, str | None, int, str | None, float]] = {
    "v2-8": ("cloud-tpu", "TPU_V2", 8, None, 5.1750),
    "v3-8": ("cloud-tpu", "TPU_V3", 8, None, 9.2000),
    "v5e-1": ("ct5lp-hightpu-1t", None, 0, "1x1", 0.0),
    "v5e-4": ("ct5lp-hightpu-4t", None, 0, "2x2", 0.0),
    "v5e-8": ("ct5lp-hightpu-8t", None, 0, "2x4", 0.0),
}
TPU_TYPES = tuple(TPUS)
GPU_TYPES = tuple(GPUS)

# Accelerators past their time. A retired one is refused with the closest current choice; a
# legacy one still runs when named, but is not offered (listings, the panel, the form).
RETIRED: dict[str, tuple[str, str, str]] = {
    "K80": (
        "2024-05-01",
        "https://cloud.google.com/compute/docs/eol/k80-eol",
        "T4",  # the same n1 shapes, a newer GPU
    ),
    # Google: "NVIDIA P100 GPUs reach end of support on September 15, 2026" (as issue 35 quotes
    # it, 2026-11-26; the reference corpus holds no copy of the notice, whose page is the
    # Compute Engine GPU list below). Past that date a plan on P100 would not run.
    "P100": (
        "2026-09-15",
        "https://cloud.google.com/compute/docs/gpus#p100-gpus",
        "T4",  # the same n1 shapes (1, 2 or 4 per machine)
    ),
}
"""GPU -> (end of support, announcement, what to use instead)."""
LEGACY: dict[str, tuple[str, str]] = {
    "P4": ("2016", "2018"),
}
"""Pascal GPUs still offered by Google Cloud -> (year NVIDIA released it, year Google Cloud first
offered it). Listed as generally available with no end-of-support date (checked
:data:`LEGACY_CHECKED`): they run when named, are not offered, and a plan that uses one says
so."""
LEGACY_CHECKED = "2026-11"
OFFERED_GPU_TYPES = tuple(g for g in GPUS if g not in RETIRED and g not in LEGACY)
"""The GPU types listings offer."""
ARM_GPUS = {"GB200": ("NVIDIA_GB200", "a4x-highgpu-4g")}  # GPU -> (Vertex enum, machine type)
"""Vertex AI machines on ARM hosts: TensorFlow's images and Vertex AI's prebuilt training
containers are x86, so a job there could not start; refused with what to use instead."""
SCARCE: dict[str, str] = {
    **{f"a3-highgpu-{n}g": "spot_or_flex" for n in (1, 2, 4)},
    **dict.fromkeys(("a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g"), "reserved"),
}
"""Machine types Google Cloud hands out mostly (or only) as held capacity: ``spot_or_flex``
ones only as Spot or flex-start VMs (Compute Engine's rule for A3 High with 1, 2 or 4 GPUs);
for ``reserved`` ones Vertex AI recommends reservations (its guide for A3 and A4 capacity)."""


def capacity_note(machine: Machine, *, scheduling: str, reservation: str | None) -> str | None:
    """A plan warning for a scarce machine asked for as plain on-demand capacity, else None."""
    kind = SCARCE.get(machine.machine_type)
    if kind is None or reservation or scheduling in ("spot", "flex_start"):
        return None
    if kind == "spot_or_flex":
        return (
            f"Google Cloud offers {machine.machine_type} only as Spot or flex-start capacity: "
            "add --spot or --flex-start (or use H100_8X)"
        )
    return (
        f"Vertex AI recommends reserved capacity for {machine.machine_type}: without "
        "--reservation, --spot or --flex-start the job may wait long in the queue"
    )


def _arm_refusal(gpu: str) -> SpecError:
    machine_type = ARM_GPUS[gpu][1]
    return SpecError(
        f"{gpu} GPUs come on {machine_type}, an ARM machine; TensorFlow's images and Vertex AI's "
        "training containers are x86, so the job could not start there",
        "use --gpu-type B200 (a4-highgpu-8g) or H200",
        field="gpu_type",
    )


def legacy_note(machine: Machine) -> str | None:
    """A plan warning for a job on a legacy GPU, with its dates and what is newer; else None."""
    short = GPU_BY_ENUM.get(machine.accelerator_type or "")
    if short not in LEGACY:
        return None
    released, on_cloud = LEGACY[short]
    return (
        f"{short} is a {released} Pascal GPU (on Google Cloud since {on_cloud}; no end-of-support "
        f"date announced as of {LEGACY_CHECKED}), no longer offered here: T4 or L4 is newer "
        "and costs less per hour"
    )


_FAMILIES = (
    "a2-highgpu",
    "a2-megagpu",
    "a2-ultragpu",
    "a3-highgpu",
    "a3-megagpu",
    "a3-ultragpu",
    "a4-highgpu",
)


def _machine_family(machine_type: str) -> str:
    for family in _FAMILIES:
        if machine_type.startswith(family):
            return family
    return machine_type.split("-", 1)[0]


def normalize_gpu_type(text: str) -> str:
    """``t4``, ``nvidia-tesla-t4``, ``NVIDIA_TESLA_T4``, ``a100-80gb`` -> catalog short name."""
    key = re.sub(r"[^A-Z0-9]+", "_", text.upper()).strip("_")
    key = key.removeprefix("NVIDIA_").removeprefix("TESLA_")
    if key in GPUS:
        return key
    if key in ("A100_80G", "A100_80", "A100_80GB"):
        return "A100_80GB"
    if key.startswith("H100"):
        return "H100_MEGA" if "MEGA" in key else "H100"
    if key.startswith("H200"):
        return "H200"
    if key in ARM_GPUS:
        raise _arm_refusal(key)
    choices = difflib.get_close_matches(key, list(GPUS), n=1, cutoff=0.5)
    hint = f"did you mean {choices[0]}? " if choices else ""
    raise SpecError(
        f"unknown GPU type {text!r}",
        f"{hint}use one of {', '.join(OFFERED_GPU_TYPES)}",
        field="gpu_type",
    )


def gpu_machine(gpu: str, count: int, machine_type: str | None = None) -> Machine:
    """A machine with ``count`` GPUs of type ``gpu``, on ``machine_type`` or the usual one.

    Raises:
        SpecError: the count is impossible for that GPU or machine type, with the fix.
    """
    gpu = normalize_gpu_type(gpu)
    if gpu in RETIRED:
        ended, notice, instead = RETIRED[gpu]
        raise SpecError(
            f"{gpu} GPUs reached end of support on Google Cloud on {ended} ({notice}); Vertex AI "
            "no longer runs them",
            f"use --gpu-type {instead} (the same machine shapes) or L4",
            field="gpu_type",
        )
    enum, _, allowed = GPUS[gpu]
    chosen = machine_type
    if machine_type is None:
        machine_type = _FIXED_FOR_COUNT.get(gpu, {}).get(count) or _N1_FOR_COUNT.get(count)
    family = _machine_family(machine_type or "n1")
    counts = allowed.get(family)
    if machine_type is None or counts is None or count not in counts:
        options = "; ".join(f"{fam}: {', '.join(map(str, c))}" for fam, c in allowed.items())
        alts = [
            g
            for g, (_, _, a) in GPUS.items()
            if g in OFFERED_GPU_TYPES and any(count in c for c in a.values())
        ]
        also = f", or another GPU type that offers {count} ({', '.join(alts)})" if alts else ""
        where = f" on {chosen}" if chosen and counts is None else ""
        raise SpecError(
            f"{count} x {gpu}{where} is not a Vertex AI machine shape",
            f"use a GPU count allowed for {gpu} ({options}){also}",
            field="gpus",
        )
    if machine_type not in MACHINE_TYPES:
        raise _unknown_machine(machine_type)
    built_in = _BUILT_IN.get(machine_type)
    if built_in and built_in != (gpu, count):
        raise SpecError(
            f"{machine_type} comes with {built_in[1]} x {built_in[0]}, not {count} x {gpu}",
            f"use --machine {_FIXED_FOR_COUNT[gpu].get(count, machine_type)} or drop --gpus",
            field="gpus",
        )
    vcpus, mem, _ = MACHINE_TYPES[machine_type]
    if family == "n1":
        _check_n1(gpu, count, machine_type)
    name = f"{gpu}_{count}X"
    if machine_type != (_FIXED_FOR_COUNT.get(gpu, {}).get(count) or _N1_FOR_COUNT.get(count)):
        name = f"{machine_type}+{name}"
    return Machine(
        name=name,
        machine_type=machine_type,
        accelerator_type=enum,
        accelerator_count=count,
        vcpus=vcpus,
        memory_gb=mem,
        price_per_hour=prices.machine_price(machine_type, enum, count),
    )


def _check_n1(gpu: str, count: int, machine_type: str) -> None:
    """Vertex AI's GPU table for N1 machines (:data:`vertex_rules.N1_GPUS`): stricter than
    Compute Engine's vCPU limits (T4 on 32 vCPUs only as 2 or 4, no P100 on 64 or 96).

    Raises:
        SpecError: the machine does not take ``count`` of ``gpu``, with the machine or count
            that does.
    """
    enum = GPUS[gpu][0]
    takes = vertex_rules.gpu_counts(machine_type, enum)
    if count in takes:
        return
    series = machine_type.rsplit("-", 1)[0]
    fits = [
        m
        for m in vertex_rules.N1_GPUS
        if m.startswith(series) and count in vertex_rules.gpu_counts(m, enum)
    ]
    also = f" or --machine {max(fits, key=lambda m: MACHINE_TYPES[m][0])}" if fits else ""
    counts = " or ".join(map(str, takes))
    raise SpecError(
        f"Vertex AI takes {gpu} on {machine_type} only as {counts or 'none'}, not {count}",
        f"use --gpus {counts}{',' if fits else ''}{also}" if takes else f"use{also.lstrip(' or')}",
        field="machine",
    )


_TPU_OTHERS = {
    "v4": "Vertex AI custom jobs offer TPU v2, v3 and v5e hosts, not v4",
    "v5p": "Vertex AI custom jobs offer TPU v2, v3 and v5e hosts, not v5p",
    "v6e": "TPU v6e on Vertex AI runs JAX and PyTorch; TensorFlow has no v6e build",
}
_V5E_BY_TOPOLOGY = {topology: key for key, (_, _, _, topology, _) in TPUS.items() if topology}


def _tpu_key(tpu: str) -> str:
    """``v5e-4``, ``V5E_4``, ``tpu-v5e-4``, ``v5litepod-4`` and ``v5e-2x2`` -> ``v5e-4``."""
    key = tpu.strip().lower().replace("_", "-").removeprefix("tpu-")
    key = re.sub(r"^v5litepod-", "v5e-", key)
    shape = re.fullmatch(r"v5e-(\d+x\d+)", key)
    if shape and shape.group(1) in _V5E_BY_TOPOLOGY:
        key = _V5E_BY_TOPOLOGY[shape.group(1)]
    return key


def _tpu_refusal(key: str, text: str) -> SpecError:
    """Why ``key`` is not a TPU this catalog offers, with the closest one that is."""
    version, _, size = key.partition("-")
    if version in _TPU_OTHERS:
        return SpecError(
            f"{text!r}: {_TPU_OTHERS[version]}",
            "use --tpu v5e-8 (or v5e-4, v5e-1; TensorFlow 2.15+) or v3-8",
            field="tpu",
        )
    chips = size.split("x")
    if version in ("v2", "v3", "v5e") and all(c.isdigit() for c in chips) and size:
        count = 1
        for c in chips:
            count *= int(c)
        largest = "v5e-8" if version == "v5e" else f"{version}-8"
        if count > 8:
            return SpecError(
                f"{text!r} is a slice of several TPU hosts; Vertex AI custom jobs here run on one "
                "host, where TPUStrategy finds its TPU with TPUClusterResolver(tpu='local')",
                f"use --tpu {largest}, the largest single-host slice",
                field="tpu",
            )
    return SpecError(
        f"unknown TPU type {text!r}",
        f"use one of {', '.join(TPUS)} (Vertex AI custom jobs offer these single-host TPUs; "
        "v5e also by topology: v5e-1x1, v5e-2x2, v5e-2x4)",
        field="tpu",
    )


def tpu_machine(tpu: str) -> Machine:
    """The TPU host for ``v2-8``, ``v3-8``, ``v5e-1``, ``v5e-4`` or ``v5e-8`` (also spelled by
    v5e topology, ``v5e-2x2``, or as ``v5litepod-4``).

    Raises:
        SpecError: a TPU Vertex AI does not offer here (v4, v5p, v6e, multi-host slices), why,
            and the closest one it does.
    """
    key = _tpu_key(tpu)
    if key not in TPUS:
        raise _tpu_refusal(key, tpu)
    machine_type, accel, count, topology, _ = TPUS[key]
    vcpus, mem, _ = MACHINE_TYPES[machine_type]
    return Machine(
        name="TPU_" + key.upper().replace("-", "_"),
        machine_type=machine_type,
        accelerator_type=accel,
        accelerator_count=count,
        vcpus=vcpus,
        memory_gb=mem,
        price_per_hour=prices.machine_price(machine_type, accel, count),
        tpu_topology=topology,
    )


def _presets() -> dict[str, Machine]:
    table: dict[str, Machine] = {}
    vcpus, mem, _ = MACHINE_TYPES["n1-standard-4"]
    table["CPU"] = Machine(
        "CPU",
        "n1-standard-4",
        vcpus=vcpus,
        memory_gb=mem,
        price_per_hour=prices.machine_price("n1-standard-4"),
    )
    for gpu, (_, _, allowed) in GPUS.items():
        if gpu in RETIRED:  # named, it is refused with what to use instead
            continue
        for counts in allowed.values():
            for n in counts:
                if n in (1, 4, 8) or gpu in _FIXED_FOR_COUNT:
                    table[f"{gpu}_{n}X"] = gpu_machine(gpu, n)
    for key in TPUS:
        machine = tpu_machine(key)
        table[machine.name] = machine
    table["TPU"] = replace(tpu_machine("v3-8"), name="TPU")  # tfc.run's name for a v3-8
    return table


PRESETS: dict[str, Machine] = _presets()


def _unknown_machine(name: str) -> SpecError:
    pool = list(PRESETS) + list(MACHINE_TYPES)
    close = difflib.get_close_matches(
        name.upper(), pool, n=1, cutoff=0.6
    ) or difflib.get_close_matches(name.lower(), pool, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    if re.fullmatch(r"[a-z]\d[a-z]?-[a-z]+-\d+[a-z]?", name.strip().lower()):
        return SpecError(
            f"{name} is not on Vertex AI's training machine list (read {vertex_rules.CHECKED})",
            f"{hint}run %tfc_machines (or `tfc-jupyter machines`) to list them",
            field="machine",
        )
    return SpecError(
        f"unknown machine {name!r}",
        f"{hint}run %tfc_machines (or `tfc-jupyter machines`) to list them",
        field="machine",
    )


def lookup(name: str) -> Machine:
    """A catalog preset (``T4_1X``, case-insensitive) or a raw Vertex machine type.

    Raises:
        SpecError: unknown name, with the closest match suggested.
    """
    key = name.strip()
    upper = key.upper().replace("-", "_")
    if upper in PRESETS:
        return PRESETS[upper]
    if upper.startswith("TPU_"):
        return tpu_machine(upper[4:].replace("_", "-").lower())
    shape = re.fullmatch(r"([A-Z0-9_]+?)_(\d+)X", upper)
    if shape and shape.group(1) in GPUS:  # V100_2X: a count the presets do not list
        return gpu_machine(shape.group(1), int(shape.group(2)))
    lower = key.lower()
    for gpu, (_, machine_type) in ARM_GPUS.items():
        if (shape and shape.group(1) == gpu) or lower == machine_type:
            raise _arm_refusal(gpu)
    if lower in MACHINE_TYPES:
        if lower in _BUILT_IN:
            gpu, n = _BUILT_IN[lower]
            return gpu_machine(gpu, n, lower)
        if lower == "cloud-tpu" or lower.startswith("ct5lp-"):
            raise SpecError(
                f"{lower} is a TPU host",
                "ask for it with --tpu v3-8 (or v2-8, v5e-1, v5e-4, v5e-8)",
                field="machine",
            )
        vcpus, mem, _ = MACHINE_TYPES[lower]
        return Machine(
            lower, lower, vcpus=vcpus, memory_gb=mem, price_per_hour=prices.machine_price(lower)
        )
    raise _unknown_machine(key)


def catalog_rows(*, legacy: bool = False) -> list[Machine]:
    """Every preset offered, for listings (``%tfc_machines``, the panel, the REST catalog);
    ``legacy`` adds the P4 ones (still runnable when named)."""
    legacy_enums = {GPUS[g][0] for g in LEGACY}
    return [m for m in PRESETS.values() if legacy or m.accelerator_type not in legacy_enums]
