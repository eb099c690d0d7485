"""Google's prices for Vertex AI custom training in us-central1 (Iowa), each row with its source
and the date it was read; and :func:`pool_price`, what a worker pool costs an hour.

A pool costs its machine (a whole-machine row, or vCPUs and memory at its family's rates), its
accelerators, and its boot disk, for each replica, at the rates of its scheduling strategy:
``standard`` (on demand), ``spot`` (Spot VMs) or ``flex_start`` (Dynamic Workload Scheduler).
Where Google's list, as this code could read it, gives no number, the rate is ``None`` and
:func:`unlisted` says what is missing: the plan then says "price not listed" and links
:data:`PAGE_URL` rather than show a number nobody checked, and never shows a Spot or
flex-start job at the on-demand rate.

What was read (2026-11-26), and what was not:

* Vertex AI's price page (:data:`PAGE_URL`): the stored copies of the page hold its opening
  only, not the custom-training tables. Two of its rows are known from a transcription that
  quotes the page verbatim (:data:`PAGE_COPY_URL`, read 2026-10-07): n1-standard-4 for
  training, $0.21849885 an hour (two other copies of the same row, read 2026-09-06 and
  2026-09-08, agree), and NVIDIA_H100_80GB, $9.79655057 an hour.
* Google's SKU list (:data:`SKU_URL`): the Vertex AI training SKUs of an a3-highgpu-8g job
  (H100 GPU, A3 vCPU, A3 memory, SSD boot disk) and the SKUs billed when the same job runs
  with flex-start (Compute Engine's DWS SKUs plus Vertex AI's management fee), with their
  prices, as a Google Cloud customer engineer read them from a billing report of 2025-08-16
  (:data:`SKU_COPY_URL`). That report's on-demand H100 SKU is $11.2660332 an hour: the page's
  $9.79655057 plus the 15% management fee (SKU 5853-505F-A5C4, $1.4694826), which the bill
  carries. The SKU rows are used for A3 High, so that the machine, its GPUs and its disk are
  read from one bill; the page's H100 row is kept (:data:`H100_PAGE_ROW`) to show the
  difference.
* Not found in any stored copy: Vertex AI's training rates for every other machine type
  (n1-standard-8 and up, n1-highmem/highcpu, e2, n2, n4, c2, m1, a2, g2, g4, a3-mega/ultra,
  a4), for the T4, P4, P100, V100, A100, A100 80GB, L4, H200, B200 and RTX PRO 6000 GPUs,
  for TPU v2, v3 and v5e, any Spot rate of Vertex AI training, the flex-start rates of
  machines other than A3 High, and the pd-standard (and hyperdisk-balanced) boot disk. These
  are ``None`` with that reason; adding a row is one line here, with its source and date.
"""

from __future__ import annotations

from dataclasses import dataclass

from .machines import MACHINE_TYPES

REGION = "us-central1"
PAGE_URL = "https://cloud.google.com/vertex-ai/pricing#custom-trained_models"
"""Vertex AI's price page, custom-trained models: training."""
PAGE_COPY_URL = (
    "https://github.com/api-evangelist/google-vertex-ai/blob/main/plans/"
    "google-vertex-ai-plans-pricing.yml"
)
"""A verbatim transcription of rows of :data:`PAGE_URL` (and its new name, Gemini Enterprise
Agent Platform pricing), read 2026-10-07: the copy the page rows here come from."""
SKU_URL = "https://cloud.google.com/skus/sku-groups/vertex-training"
"""Google's SKU list, Vertex AI training (a SKU by id: cloud.google.com/skus?filter=<id>)."""
SKU_COPY_URL = "https://zenn.dev/google_cloud_jp"
"""Where the SKU rows here were read: a Google Cloud Japan customer engineer's billing
breakdown of one a3-highgpu-8g custom job on demand and with DWS flex-start, us-central1,
from the billing report of 2025-08-16 ("ハイエンド GPU が最大約半額に！DWS の新料金プランで GPU
コストを大幅削減")."""
SPOT_URL = "https://cloud.google.com/vertex-ai/docs/training/use-spot-vms"
FLEX_START_URL = "https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws"

PAGE_READ = "2026-10-07"
SKU_READ = "2025-08-16"
READ = "2026-11-26"
"""When the stored copies were searched for these tables."""
AS_OF = f"{SKU_READ[:7]} to {PAGE_READ[:7]}"
"""The span of the dates of the rows, for a plan's "list prices" note."""

SCHEDULING = ("standard", "spot", "flex_start")
HOURS_PER_MONTH = 730  # Google's SKU list prices disks per GiB-month; its hour is 1/730 of one

_NO_PAGE_ROW = (
    "not in the stored copies of Vertex AI's price page (its custom-training tables are "
    f"missing; read {READ})"
)
_NO_SPOT = (
    "Vertex AI's Spot rates for training are not in any stored copy of its price page or SKU "
    f"list (read {READ})"
)
_NO_FLEX = (
    "flex-start rates (DWS SKUs plus Vertex AI's management fee) were read only for A3 High "
    f"(read {READ})"
)


@dataclass(frozen=True)
class Rate:
    """One row of Google's list: US dollars an hour for one ``unit``, by scheduling strategy;
    ``None`` where the list, as read, gives no number (``missing`` says why)."""

    unit: str
    standard: float | None
    spot: float | None
    flex_start: float | None
    source: str
    read: str
    missing: str = ""

    def at(self, scheduling: str) -> float | None:
        """The rate for ``standard``, ``spot`` or ``flex_start``."""
        return {"standard": self.standard, "spot": self.spot, "flex_start": self.flex_start}[
            _strategy(scheduling)
        ]

    def why_not(self, scheduling: str) -> str:
        """Why :meth:`at` is None for ``scheduling`` ("" when it is listed)."""
        if self.at(scheduling) is not None:
            return ""
        strategy = _strategy(scheduling)
        if strategy == "spot" and self.standard is not None:
            return _NO_SPOT
        if strategy == "flex_start" and self.standard is not None:
            return _NO_FLEX
        return self.missing or _NO_PAGE_ROW


def _unlisted(unit: str, missing: str = _NO_PAGE_ROW) -> Rate:
    return Rate(unit, None, None, None, PAGE_URL, READ, missing)


# ------------------------------------------------------------------ machines, whole
# Machine type -> price of the machine (no accelerators) for one hour. Vertex AI's page lists
# these per machine type (the A2, A3 and G2 machines without their GPUs).
MACHINES: dict[str, Rate] = {
    # PAGE_URL, "n1-standard-4 | $0.21849885" (Iowa, Default), via PAGE_COPY_URL read
    # 2026-10-07; the same row read 2026-09-06 and 2026-09-08 in two other copies.
    "n1-standard-4": Rate(
        "machine",
        standard=0.21849885,
        spot=None,
        flex_start=None,
        source=PAGE_URL,
        read=PAGE_READ,
        missing=_NO_SPOT,
    ),
}

# ------------------------------------------------------------------ machines, by family
# Family -> (per vCPU, per GB of memory). Google's SKU list prices Vertex AI training of these
# families per vCPU-hour and GB-hour; a machine costs its vCPUs and memory at these rates.
FAMILIES: dict[str, tuple[Rate, Rate]] = {
    "a3-highgpu": (
        # SKU 2E83-99F1-391A "Vertex AI: Training/Pipelines on A3 Instance Core in Iowa",
        # $0.0293227 per hour. Flex-start: SKU 9A32-36B2-7FBC "DWS Defined Duration A3 Core
        # running in Americas" $0.010934 + SKU 9AC1-7D9B-C47E "Vertex AI: Training/Pipelines
        # management fee on A3 Instance Core in Iowa" $0.0038247.
        Rate(
            "vCPU",
            standard=0.0293227,
            spot=None,
            flex_start=0.010934 + 0.0038247,
            source=SKU_URL,
            read=SKU_READ,
        ),
        # SKU B045-9255-8314 "... on A3 Instance RAM in Iowa", $0.0025534 per GB-hour.
        # Flex-start: SKU ED19-A584-4A84 "DWS Defined Duration A3 Ram running in Americas"
        # $0.000952 + SKU D30D-69C9-F057 "... management fee on A3 Instance RAM in Iowa"
        # $0.0003331.
        Rate(
            "GB",
            standard=0.0025534,
            spot=None,
            flex_start=0.000952 + 0.0003331,
            source=SKU_URL,
            read=SKU_READ,
        ),
    ),
}

# Machines Google does not offer on demand (Compute Engine: A3 High with 1, 2 or 4 GPUs comes
# only as Spot or flex-start capacity; Vertex AI's DWS guide, FLEX_START_URL): no on-demand
# rate, whatever their family's.
NOT_ON_DEMAND = {f"a3-highgpu-{n}g": "Spot or flex-start only" for n in (1, 2, 4)}

# Local SSD that comes with the machine: on demand it is part of the machine's price; with
# flex-start it is billed apart (SKU 2303-1D6A-9C08 "DWS Defined Duration SSD backed Local
# Storage running in Americas", $0.08 per GiB-month, an hour being 1/730 of it: 6,000 GiB
# billed $0.65753425 an hour, read 2025-08-16). GiB per machine, as the same breakdown gives
# it (a3-highgpu-2g and -4g: not given there, so their flex-start rate is not listed).
BUNDLED_LOCAL_SSD_GIB = {"a3-highgpu-8g": 6000, "a3-highgpu-1g": 750}
LOCAL_SSD_FLEX = Rate(
    "GiB of local SSD",
    standard=None,
    spot=None,
    flex_start=0.08 / HOURS_PER_MONTH,
    source=SKU_URL,
    read=SKU_READ,
    missing="part of the machine's price",
)

# ------------------------------------------------------------------ accelerators
H100_PAGE_ROW = 9.79655057
"""PAGE_URL, "NVIDIA_H100_80GB | $9.79655057" via PAGE_COPY_URL (read 2026-10-07): the page's
row, without the 15% management fee a bill adds (see ACCELERATORS)."""

ACCELERATORS: dict[str, Rate] = {
    # SKU 3F95-001E-B747 "Vertex AI: Training/Pipelines on NVIDIA H100 80GB in Iowa",
    # $11.2660332 per GPU-hour (= the page's $9.79655057 + 15%). Flex-start: SKU 341A-49A5-0C07
    # "Nvidia H100 80GB GPU attached to DWS Defined Duration VMs running in Americas" $4.200761
    # + SKU 5853-505F-A5C4 "... management fee on NVIDIA H100 80GB in Iowa" $1.4694826.
    "NVIDIA_H100_80GB": Rate(
        "GPU",
        standard=11.2660332,
        spot=None,
        flex_start=4.200761 + 1.4694826,
        source=SKU_URL,
        read=SKU_READ,
    ),
    **{
        enum: _unlisted("GPU")
        for enum in (
            "NVIDIA_TESLA_K80",
            "NVIDIA_TESLA_P4",
            "NVIDIA_TESLA_P100",
            "NVIDIA_TESLA_V100",
            "NVIDIA_TESLA_T4",
            "NVIDIA_TESLA_A100",
            "NVIDIA_A100_80GB",
            "NVIDIA_L4",
            "NVIDIA_H100_MEGA_80GB",
            "NVIDIA_H200_141GB",
            "NVIDIA_B200",
            "NVIDIA_RTX_PRO_6000",
        )
    },
}

# ------------------------------------------------------------------ TPUs
# TPU hosts: the whole host's price an hour (v2-8 and v3-8: machine type cloud-tpu with 8
# cores of TPU_V2 or TPU_V3; v5e: ct5lp-hightpu-1t/4t/8t). Vertex AI's TPU rows were not in
# any stored copy; Cloud TPU's own price page (cloud.google.com/tpu/pricing) is stored only in
# an old version without v5e, and prices Cloud TPU, not Vertex AI training.
TPUS: dict[str, Rate] = {
    key: _unlisted("TPU host")
    for key in ("TPU_V2", "TPU_V3", "ct5lp-hightpu-1t", "ct5lp-hightpu-4t", "ct5lp-hightpu-8t")
}

# ------------------------------------------------------------------ boot disks
# Disk type -> price of one GB of boot disk an hour, for each replica.
BOOT_DISKS: dict[str, Rate] = {
    # SKU A005-98FE-36CC "Vertex AI: Training/Pipelines on SSD backed PD Capacity", $0.1955
    # per GiB-month, an hour being 1/730 of it (a 2,000 GiB boot disk billed $0.53561644 an
    # hour), on demand and with flex-start alike (read 2025-08-16).
    "pd-ssd": Rate(
        "GB of boot disk",
        standard=0.1955 / HOURS_PER_MONTH,
        spot=None,
        flex_start=0.1955 / HOURS_PER_MONTH,
        source=SKU_URL,
        read=SKU_READ,
    ),
    "pd-standard": _unlisted("GB of boot disk"),
    "hyperdisk-balanced": _unlisted("GB of boot disk"),
}


def _strategy(scheduling: str) -> str:
    """``SPOT``, ``spot``, ``FLEX_START`` ... -> ``spot``; ``ON_DEMAND``/``STANDARD`` ->
    ``standard``."""
    key = scheduling.strip().lower().replace("-", "_")
    key = {"on_demand": "standard", "flex": "flex_start", "": "standard"}.get(key, key)
    if key not in SCHEDULING:
        raise ValueError(f"unknown scheduling {scheduling!r}: one of {', '.join(SCHEDULING)}")
    return key


def _family(machine_type: str) -> str:
    return machine_type.rsplit("-", 1)[0]


def _shape(machine_type: str) -> tuple[int, float] | None:
    """(vCPUs, memory GB) of a machine type, from the catalog."""
    row = MACHINE_TYPES.get(machine_type)
    return (int(row[0]), float(row[1])) if row else None


def _tpu_key(machine_type: str, accelerator_type: str | None) -> str | None:
    if machine_type == "cloud-tpu":
        return accelerator_type or "TPU_V2"
    return machine_type if machine_type.startswith("ct5lp-") else None


def _machine_parts(machine_type: str, scheduling: str) -> list[tuple[str, float | None, float]]:
    """(what, rate, quantity) of the machine itself, without accelerators."""
    strategy = _strategy(scheduling)
    if machine_type in MACHINES:
        return [(machine_type, MACHINES[machine_type].at(strategy), 1)]
    family = FAMILIES.get(_family(machine_type))
    shape = _shape(machine_type)
    if family is None or shape is None:
        return [(machine_type, None, 1)]
    if strategy == "standard" and machine_type in NOT_ON_DEMAND:
        return [(machine_type, None, 1)]
    core, ram = family
    parts = [
        (f"{machine_type} vCPU", core.at(strategy), shape[0]),
        (f"{machine_type} memory", ram.at(strategy), shape[1]),
    ]
    if strategy == "flex_start":
        gib = BUNDLED_LOCAL_SSD_GIB.get(machine_type)
        rate = LOCAL_SSD_FLEX.at(strategy) if gib else None
        parts.append((f"{machine_type} local SSD", rate, gib or 1))
    return parts


def _parts(
    machine_type: str,
    accelerator_type: str | None,
    accelerator_count: int,
    scheduling: str,
) -> list[tuple[str, float | None, float]]:
    """Every billed part of one replica, without its disk: (what, rate, quantity)."""
    tpu = _tpu_key(machine_type, accelerator_type)
    if tpu is not None:
        return [(tpu, TPUS[tpu].at(scheduling) if tpu in TPUS else None, 1)]
    parts = _machine_parts(machine_type, scheduling)
    if accelerator_type and accelerator_count > 0:
        row = ACCELERATORS.get(accelerator_type)
        parts.append((accelerator_type, row.at(scheduling) if row else None, accelerator_count))
    return parts


def machine_price(
    machine_type: str,
    accelerator_type: str | None = None,
    accelerator_count: int = 0,
    scheduling: str = "standard",
) -> float | None:
    """One machine with its accelerators, an hour, without its boot disk; None when a part
    has no listed rate for ``scheduling``."""
    total = 0.0
    for _, rate, quantity in _parts(machine_type, accelerator_type, accelerator_count, scheduling):
        if rate is None:
            return None
        total += rate * quantity
    return round(total, 6)


def gpu_price(accelerator_type: str, scheduling: str = "standard") -> float | None:
    """One GPU an hour (Vertex AI enum), None when not listed."""
    row = ACCELERATORS.get(accelerator_type)
    return row.at(scheduling) if row else None


def boot_disk_price(disk_type: str, size_gb: int, scheduling: str = "standard") -> float | None:
    """One replica's boot disk an hour; None when the disk type has no listed rate."""
    row = BOOT_DISKS.get(disk_type)
    rate = row.at(scheduling) if row else None
    return None if rate is None else round(rate * size_gb, 6)


def pool_price(
    machine_type: str,
    accelerator_type: str | None = None,
    accelerator_count: int = 0,
    *,
    replicas: int = 1,
    scheduling: str = "standard",
    boot_disk_type: str = "pd-ssd",
    boot_disk_gb: int = 100,
) -> float | None:
    """What a worker pool costs an hour: ``replicas`` x (machine + accelerators + boot disk)
    at the rates of ``scheduling``; 0 for no replicas; None when a part is not listed (see
    :func:`unlisted`)."""
    if replicas <= 0:
        return 0.0
    machine = machine_price(machine_type, accelerator_type, accelerator_count, scheduling)
    disk = boot_disk_price(boot_disk_type, boot_disk_gb, scheduling)
    if machine is None or disk is None:
        return None
    return round(replicas * (machine + disk), 6)


def unlisted(
    machine_type: str,
    accelerator_type: str | None = None,
    accelerator_count: int = 0,
    *,
    scheduling: str = "standard",
    boot_disk_type: str = "pd-ssd",
) -> list[tuple[str, str]]:
    """The parts of a replica that have no listed rate for ``scheduling``: (part, why).
    Empty when :func:`pool_price` gives a number."""
    strategy = _strategy(scheduling)
    out: list[tuple[str, str]] = []
    for what, rate, _ in _parts(machine_type, accelerator_type, accelerator_count, strategy):
        if rate is None:
            out.append((what, _reason(what, machine_type, accelerator_type, strategy)))
    disk = BOOT_DISKS.get(boot_disk_type)
    if disk is None or disk.at(strategy) is None:
        why = disk.why_not(strategy) if disk else f"no boot disk type {boot_disk_type!r}"
        out.append((f"{boot_disk_type} boot disk", why))
    return out


def _reason(what: str, machine_type: str, accelerator_type: str | None, strategy: str) -> str:
    if what == accelerator_type and accelerator_type in ACCELERATORS:
        return ACCELERATORS[accelerator_type].why_not(strategy)
    if what in TPUS:
        return TPUS[what].why_not(strategy)
    if what.endswith("local SSD"):
        return (
            f"the local SSD {machine_type} comes with, billed apart with flex-start, is not "
            f"sized in the stored breakdown (read {READ})"
        )
    if strategy == "standard" and machine_type in NOT_ON_DEMAND:
        return f"Google offers {machine_type} {NOT_ON_DEMAND[machine_type]}"
    if machine_type in MACHINES:
        return MACHINES[machine_type].why_not(strategy)
    family = FAMILIES.get(_family(machine_type))
    if family is not None:
        return family[0].why_not(strategy)
    if what == accelerator_type:
        return f"no row for accelerator {accelerator_type} ({_NO_PAGE_ROW})"
    return _NO_PAGE_ROW
