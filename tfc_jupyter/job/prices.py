"""Google's prices for Vertex AI custom training in us-central1 (Iowa), each row with its source
and the date it was read; and :func:`pool_price`, what a worker pool costs an hour.

A pool costs its machine (a whole-machine row, or vCPUs and memory at its family's rates), its
accelerators, and its boot disk, for each replica, at the rates of its scheduling strategy:
``standard`` (on demand), ``spot`` (Spot VMs) or ``flex_start`` (Dynamic Workload Scheduler).
Where Google's list, as this code could read it, gives no number, the rate is ``None`` and
:func:`unlisted` says what is missing: the plan then says "price not listed" and links
:data:`PAGE_URL` rather than show a number nobody checked, and never shows a Spot or
flex-start job at the on-demand rate.

Each on-demand row is labelled ``quoted`` (Google's Vertex AI price page or SKU list gives it)
or ``derived``: Compute Engine's list price x :data:`VERTEX_OVER_COMPUTE_ENGINE` (1.15). On every
row where both were read, Vertex AI training on demand is Compute Engine's list price x 1.15
exactly (n1-standard-4 $0.189999 -> $0.21849885; pd-ssd $0.17 -> $0.1955 a GiB-month; the
a3-highgpu-8g machine with its eight H100s less its bundled local SSD, $87.832466 -> $101.00734).
A Spot rate is a floor: Compute Engine's Spot price, to which Vertex AI adds a management fee it
does not publish; plans say "from $X/h".

What was read, and when:

* Vertex AI's price page (:data:`PAGE_URL`): only its opening is stored; two rows come from a
  verbatim transcription (:data:`PAGE_COPY_URL`, read 2026-10-07): n1-standard-4, $0.21849885
  an hour, and NVIDIA_H100_80GB, $9.79655057.
* Google's SKU list (:data:`SKU_URL`): the Vertex AI training and flex-start SKUs of an
  a3-highgpu-8g job, from a billing report of 2025-08-16 (:data:`SKU_COPY_URL`).
* Compute Engine, us-central1 (:data:`COMPUTE_ENGINE_URL`, generated 2026-07-30 from Google's
  Cloud Billing Catalog, read 2026-11-29): each machine type's price on demand and as Spot,
  with the GPUs built into A2, G2, G4 and A3 machines and their bundled local SSD; persistent
  disks per GB-month.
* Compute Engine GPUs attached to N1 machines and Cloud TPU hosts, us-central1
  (:data:`GPU_TPU_URL`, a catalog built from the same Billing Catalog, read 2026-11-29).
* Not found: a3-megagpu-8g, a3-ultragpu-8g (H200), a4-highgpu-8g (B200), the K80 (retired),
  hyperdisk-balanced boot disks, flex-start rates of machines other than A3 High. These are
  ``None`` with the reason; adding a row is one line, with its source and date.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

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
COMPUTE_ENGINE_URL = (
    "https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator/blob/"
    "fd66b26ff84fee5cdd94f341ea89206e76c06b99/pricing.yml"
)
"""Compute Engine's price per machine type and region, on demand and Spot, built from Google's
Cloud Billing Catalog (its ``about.generated``: 2026-07-30); the machine rows here are its
us-central1 ``hour`` and ``hour_spot``."""
GPU_TPU_URL = (
    "https://github.com/skypilot-org/skypilot-catalog/blob/"
    "017e2502fb63c7a28757acd94002b2d6099d3e3d/catalogs/v7/gcp/vms.csv"
)
"""Compute Engine's GPU and Cloud TPU prices by zone, on demand and Spot, built from Google's
Cloud Billing Catalog: the rows with an accelerator and no machine type, us-central1."""
SPOT_URL = "https://cloud.google.com/vertex-ai/docs/training/use-spot-vms"
FLEX_START_URL = "https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws"

PAGE_READ = "2026-10-07"
SKU_READ = "2025-08-16"
COMPUTE_ENGINE_READ = "2026-11-29"
READ = "2026-11-29"
"""When the stored copies were last searched for these tables."""
AS_OF = f"{SKU_READ[:7]} to {COMPUTE_ENGINE_READ[:7]}"
"""The span of the dates of the rows, for a plan's "list prices" note."""

SCHEDULING = ("standard", "spot", "flex_start")
HOURS_PER_MONTH = 730  # Google's SKU list prices disks per GiB-month; its hour is 1/730 of one
VERTEX_OVER_COMPUTE_ENGINE = 1.15
"""Vertex AI training on demand over Compute Engine's list price, on every row where both were
read (see the module's docstring); a ``derived`` row is Compute Engine's price times this."""
QUOTED, DERIVED, FLOOR = "quoted", "derived", "floor"

_NO_PAGE_ROW = (
    "not in the stored copies of Vertex AI's price page, nor Compute Engine's list as read "
    f"(read {READ})"
)
_NO_SPOT = f"no Compute Engine Spot price was read for it (read {READ})"
_NO_FLEX = (
    "flex-start rates (DWS SKUs plus Vertex AI's management fee) were read only for A3 High "
    f"(read {READ})"
)
_BUILT_IN = "built into its machine type: priced with the machine"


@dataclass(frozen=True)
class Rate:
    """One row of Google's list: US dollars an hour for one ``unit``, by scheduling strategy;
    ``None`` where the list, as read, gives no number (``missing`` says why).

    ``label`` is how the on-demand number was had: ``quoted`` (Vertex AI's own page or SKU) or
    ``derived`` (Compute Engine x :data:`VERTEX_OVER_COMPUTE_ENGINE`); ``source``/``read`` are
    its page and date. A Spot number is always a ``floor`` (Compute Engine's Spot price; the
    Vertex AI fee on top is unpublished), from ``spot_source`` read ``spot_read``."""

    unit: str
    standard: float | None
    spot: float | None
    flex_start: float | None
    source: str
    read: str
    missing: str = ""
    label: str = QUOTED
    spot_source: str = ""
    spot_read: str = ""

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

    def provenance(self, scheduling: str) -> dict[str, str]:
        """``{"label", "source", "read"}`` of the number :meth:`at` gives for ``scheduling``."""
        if _strategy(scheduling) == "spot":
            return {
                "label": FLOOR,
                "source": self.spot_source or self.source,
                "read": self.spot_read or self.read,
            }
        label = self.label if _strategy(scheduling) == "standard" else QUOTED
        return {"label": label, "source": self.source, "read": self.read}


def _unlisted(unit: str, missing: str = _NO_PAGE_ROW) -> Rate:
    return Rate(unit, None, None, None, PAGE_URL, READ, missing)


def _derived(unit: str, on_demand: float, spot: float | None, source: str) -> Rate:
    """A row from Compute Engine's list: Vertex AI on demand = x1.15; Spot = the floor."""
    return Rate(
        unit,
        standard=round(on_demand * VERTEX_OVER_COMPUTE_ENGINE, 8),
        spot=spot,
        flex_start=None,
        source=source,
        read=COMPUTE_ENGINE_READ,
        label=DERIVED,
        spot_source=source,
        spot_read=COMPUTE_ENGINE_READ,
    )


# ------------------------------------------------------------------ Compute Engine, as read
# COMPUTE_ENGINE_URL, us-central1 (generated 2026-07-30, read 2026-11-29): machine type ->
# (on demand, Spot, GiB of bundled local SSD), the whole machine an hour with the GPUs built
# into it (A2, G2, G4, A3) and its bundled local SSD. Vertex AI does not bill that local SSD
# on demand (the a3-highgpu-8g bill, SKU_COPY_URL, has none), so it is taken off first.
COMPUTE_ENGINE_MACHINES: dict[str, tuple[float, float, int]] = {
    "n1-standard-4": (0.189999, 0.06701, 0),
    "n1-standard-8": (0.379998, 0.13402, 0),
    "n1-standard-16": (0.759996, 0.26804, 0),
    "n1-standard-32": (1.519992, 0.53608, 0),
    "n1-standard-64": (3.039984, 1.07216, 0),
    "n1-standard-96": (4.559976, 1.60824, 0),
    "n1-highmem-8": (0.473212, 0.166888, 0),
    "n1-highmem-16": (0.946424, 0.333776, 0),
    "n1-highcpu-16": (0.5667888, 0.1999136, 0),
    "n1-highcpu-32": (1.1335776, 0.3998272, 0),
    "e2-standard-4": (0.13402284, 0.080424, 0),
    "e2-standard-8": (0.26804568, 0.160848, 0),
    "e2-standard-16": (0.53609136, 0.321696, 0),
    "a2-highgpu-1g": (3.673385, 1.92802, 0),
    "a2-highgpu-2g": (7.34677, 3.85604, 0),
    "a2-highgpu-4g": (14.69354, 7.71208, 0),
    "a2-highgpu-8g": (29.38708, 15.42416, 0),
    "a2-ultragpu-1g": (5.06879789041096, 2.75954630136986, 375),
    "a2-ultragpu-2g": (10.1375957808219, 5.51909260273973, 750),
    "a2-ultragpu-4g": (20.2751915616438, 11.0381852054795, 1500),
    "a2-ultragpu-8g": (40.5503831232877, 22.0763704109589, 3000),
    "n1-highmem-2": (0.118303, 0.041722, 0),
    "n1-highmem-4": (0.236606, 0.083444, 0),
    "n1-highmem-32": (1.892848, 0.667552, 0),
    "n1-highmem-64": (3.785696, 1.335104, 0),
    "n1-highmem-96": (5.678544, 2.002656, 0),
    "n1-highcpu-64": (2.2671552, 0.7996544, 0),
    "n1-highcpu-96": (3.4007328, 1.1994816, 0),
    "e2-standard-32": (1.07218272, 0.643392, 0),
    "e2-highmem-2": (0.09039966, 0.054244, 0),
    "e2-highmem-4": (0.18079932, 0.108488, 0),
    "e2-highmem-8": (0.36159864, 0.216976, 0),
    "e2-highmem-16": (0.72319728, 0.433952, 0),
    "e2-highcpu-16": (0.39576192, 0.237504, 0),
    "e2-highcpu-32": (0.79152384, 0.475008, 0),
    "n2-standard-4": (0.194236, 0.09212, 0),
    "n2-standard-8": (0.388472, 0.18424, 0),
    "n2-standard-16": (0.776944, 0.36848, 0),
    "n2-standard-32": (1.553888, 0.73696, 0),
    "n2-standard-48": (2.330832, 1.10544, 0),
    "n2-standard-64": (3.107776, 1.47392, 0),
    "n2-standard-80": (3.88472, 1.8424, 0),
    "n2-highmem-2": (0.131014, 0.06214, 0),
    "n2-highmem-4": (0.262028, 0.12428, 0),
    "n2-highmem-8": (0.524056, 0.24856, 0),
    "n2-highmem-16": (1.048112, 0.49712, 0),
    "n2-highmem-32": (2.096224, 0.99424, 0),
    "n2-highmem-48": (3.144336, 1.49136, 0),
    "n2-highmem-64": (4.192448, 1.98848, 0),
    "n2-highmem-80": (5.24056, 2.4856, 0),
    "n2-highcpu-16": (0.573568, 0.272, 0),
    "n2-highcpu-32": (1.147136, 0.544, 0),
    "n2-highcpu-48": (1.720704, 0.816, 0),
    "n2-highcpu-64": (2.294272, 1.088, 0),
    "n2-highcpu-80": (2.86784, 1.36, 0),
    "n4-standard-2": (0.0907, 0.044784, 0),
    "n4-standard-4": (0.1814, 0.089568, 0),
    "n4-standard-8": (0.3628, 0.179136, 0),
    "n4-standard-16": (0.7256, 0.358272, 0),
    "n4-standard-32": (1.4512, 0.716544, 0),
    "n4-standard-48": (2.1768, 1.074816, 0),
    "n4-standard-64": (2.9024, 1.433088, 0),
    "n4-standard-80": (3.628, 1.79136, 0),
    "n4-highmem-2": (0.11902, 0.058768, 0),
    "n4-highmem-4": (0.23804, 0.117536, 0),
    "n4-highmem-8": (0.47608, 0.235072, 0),
    "n4-highmem-16": (0.95216, 0.470144, 0),
    "n4-highmem-32": (1.90432, 0.940288, 0),
    "n4-highmem-48": (2.85648, 1.410432, 0),
    "n4-highmem-64": (3.80864, 1.880576, 0),
    "n4-highmem-80": (4.7608, 2.35072, 0),
    "n4-highcpu-2": (0.07654, 0.037792, 0),
    "n4-highcpu-4": (0.15308, 0.075584, 0),
    "n4-highcpu-8": (0.30616, 0.151168, 0),
    "n4-highcpu-16": (0.61232, 0.302336, 0),
    "n4-highcpu-32": (1.22464, 0.604672, 0),
    "n4-highcpu-48": (1.83696, 0.907008, 0),
    "n4-highcpu-64": (2.44928, 1.209344, 0),
    "n4-highcpu-80": (3.0616, 1.51168, 0),
    "c2-standard-4": (0.208808, 0.09968, 0),
    "c2-standard-8": (0.417616, 0.19936, 0),
    "c2-standard-16": (0.835232, 0.39872, 0),
    "c2-standard-30": (1.56606, 0.7476, 0),
    "c2-standard-60": (3.13212, 1.4952, 0),
    "m1-ultramem-40": (6.2931, 1.101773, 0),
    "m1-ultramem-80": (12.5862, 2.203546, 0),
    "m1-ultramem-160": (25.1724, 4.407092, 0),
    "m1-megamem-96": (10.65216, 1.8648448, 0),
    "a2-megagpu-16g": (55.739504, 29.25568, 0),
    "g2-standard-4": (0.706832255, 0.397336, 0),
    "g2-standard-12": (1.000416287, 0.562408, 0),
    "g2-standard-16": (1.147208303, 0.644944, 0),
    "g2-standard-32": (1.734376367, 0.975088, 0),
    "g4-standard-48": (4.49993, 1.79982, 0),
    "g4-standard-96": (8.99986, 3.59964, 0),
    "g4-standard-192": (17.99972, 7.19928, 0),
    "g4-standard-384": (35.99944, 14.39856, 0),
    "g2-standard-8": (0.853624271, 0.479872, 0),
    "g2-standard-24": (2.000832574, 1.124816, 0),
    "g2-standard-48": (4.001665148, 2.249632, 0),
    "g2-standard-96": (8.003330296, 4.499264, 0),
    "a3-highgpu-1g": (11.0612499878219, 6.32619260273973, 750),
    "a3-highgpu-2g": (22.1224999756438, 12.6523852054795, 1500),
    "a3-highgpu-4g": (44.2449999512877, 25.3047704109589, 3000),
    "a3-highgpu-8g": (88.4899999025753, 50.6095408219178, 6000),
}

COMPUTE_ENGINE_LOCAL_SSD = (0.08, 0.0428)
"""COMPUTE_ENGINE_URL, storage ``local``, us-central1: local SSD per GiB-month, on demand and
Spot."""
COMPUTE_ENGINE_DISKS: dict[str, float] = {"pd-ssd": 0.17, "pd-standard": 0.04}
"""COMPUTE_ENGINE_URL, storage ``ssd`` and ``hdd``, us-central1: per GB-month (Spot VMs pay the
same for their disks)."""
COMPUTE_ENGINE_GPUS: dict[str, tuple[float, float]] = {
    # GPU_TPU_URL, us-central1 rows ",,,T4,1,...,0.35,0.14" and so on: per GPU, on demand and
    # Spot (read 2026-11-29).
    "NVIDIA_TESLA_T4": (0.35, 0.14),
    "NVIDIA_TESLA_V100": (2.48, 0.992),
    "NVIDIA_TESLA_P100": (1.46, 0.584),
    "NVIDIA_TESLA_P4": (0.6, 0.24),
}
COMPUTE_ENGINE_TPUS: dict[str, tuple[float, float]] = {
    # GPU_TPU_URL, us-central1: the TPU host an hour, on demand and Spot (tpu-v2-8, tpu-v3-8,
    # tpu-v5litepod-1/4/8 in us-central1-a or -b; read 2026-11-29).
    "TPU_V2": (4.5, 1.35),
    "TPU_V3": (8.0, 2.04),
    "ct5lp-hightpu-1t": (1.2, 0.21298),
    "ct5lp-hightpu-4t": (4.8, 0.85192),
    "ct5lp-hightpu-8t": (9.6, 1.70383),
}


def compute_engine_machine(machine_type: str) -> tuple[float, float] | None:
    """Compute Engine's (on demand, Spot) for ``machine_type`` an hour, with its built-in GPUs
    and without its bundled local SSD; None when not read."""
    row = COMPUTE_ENGINE_MACHINES.get(machine_type)
    if row is None:
        return None
    hour, spot, gib = row
    ssd, ssd_spot = (gib * rate / HOURS_PER_MONTH for rate in COMPUTE_ENGINE_LOCAL_SSD)
    return hour - ssd, spot - ssd_spot


def _machine_rows() -> dict[str, Rate]:
    rows: dict[str, Rate] = {}
    for machine_type in COMPUTE_ENGINE_MACHINES:
        hour, spot = compute_engine_machine(machine_type) or (0.0, 0.0)
        rows[machine_type] = _derived("machine", hour, round(spot, 8), COMPUTE_ENGINE_URL)
    # PAGE_URL, "n1-standard-4 | $0.21849885" (Iowa, Default), via PAGE_COPY_URL read
    # 2026-10-07; the same row read 2026-09-06 and 2026-09-08 in two other copies.
    rows["n1-standard-4"] = replace(
        rows["n1-standard-4"], standard=0.21849885, source=PAGE_URL, read=PAGE_READ, label=QUOTED
    )
    return rows


# ------------------------------------------------------------------ machines, whole
# Machine type -> price of the machine an hour: with the GPUs built into it (A2, G2, G4, A3:
# see BUILT_IN), without accelerators otherwise (N1 takes its GPUs apart).
MACHINES: dict[str, Rate] = _machine_rows()
BUILT_IN = frozenset(mt for mt in MACHINES if mt.split("-")[0] in ("a2", "a3", "g2", "g4"))
"""Machine types whose rows price their built-in GPUs (their accelerators add nothing)."""

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
    # + SKU 5853-505F-A5C4 "... management fee on NVIDIA H100 80GB in Iowa" $1.4694826. Spot:
    # the a3-highgpu machine row, which holds its H100s (BUILT_IN).
    "NVIDIA_H100_80GB": Rate(
        "GPU",
        standard=11.2660332,
        spot=None,
        flex_start=4.200761 + 1.4694826,
        source=SKU_URL,
        read=SKU_READ,
        missing=_BUILT_IN,
    ),
    **{
        enum: _derived("GPU", hour, spot, GPU_TPU_URL)
        for enum, (hour, spot) in COMPUTE_ENGINE_GPUS.items()
    },
    **{
        enum: _unlisted("GPU", _BUILT_IN)
        for enum in ("NVIDIA_TESLA_A100", "NVIDIA_A100_80GB", "NVIDIA_L4", "NVIDIA_RTX_PRO_6000")
    },
    "NVIDIA_TESLA_K80": _unlisted("GPU", "retired by Google Cloud on 2024-05-01"),
    **{
        enum: _unlisted("GPU")
        for enum in ("NVIDIA_H100_MEGA_80GB", "NVIDIA_H200_141GB", "NVIDIA_B200")
    },
}

# ------------------------------------------------------------------ TPUs
# TPU hosts: the whole host's price an hour (v2-8 and v3-8: machine type cloud-tpu with 8
# cores of TPU_V2 or TPU_V3; v5e: ct5lp-hightpu-1t/4t/8t), derived from Cloud TPU's prices.
TPUS: dict[str, Rate] = {
    key: _derived("TPU host", hour, spot, GPU_TPU_URL)
    for key, (hour, spot) in COMPUTE_ENGINE_TPUS.items()
}

# ------------------------------------------------------------------ boot disks
# Disk type -> price of one GB of boot disk an hour, for each replica.
BOOT_DISKS: dict[str, Rate] = {
    # SKU A005-98FE-36CC "Vertex AI: Training/Pipelines on SSD backed PD Capacity", $0.1955
    # per GiB-month, an hour being 1/730 of it (a 2,000 GiB boot disk billed $0.53561644 an
    # hour), on demand and with flex-start alike (read 2025-08-16) = Compute Engine's $0.17
    # x 1.15. Spot: Compute Engine's $0.17 (a floor).
    "pd-ssd": Rate(
        "GB of boot disk",
        standard=0.1955 / HOURS_PER_MONTH,
        spot=COMPUTE_ENGINE_DISKS["pd-ssd"] / HOURS_PER_MONTH,
        flex_start=0.1955 / HOURS_PER_MONTH,
        source=SKU_URL,
        read=SKU_READ,
        spot_source=COMPUTE_ENGINE_URL,
        spot_read=COMPUTE_ENGINE_READ,
    ),
    "pd-standard": _derived(
        "GB of boot disk",
        COMPUTE_ENGINE_DISKS["pd-standard"] / HOURS_PER_MONTH,
        COMPUTE_ENGINE_DISKS["pd-standard"] / HOURS_PER_MONTH,
        COMPUTE_ENGINE_URL,
    ),
    "hyperdisk-balanced": _unlisted("GB of boot disk"),
}


@dataclass(frozen=True)
class Part:
    """One billed part of a replica: ``quantity`` units of ``row`` (None: no row at all)."""

    what: str
    row: Rate | None
    quantity: float

    def rate(self, scheduling: str) -> float | None:
        """US dollars an hour for one unit at ``scheduling``; None when not listed."""
        return self.row.at(scheduling) if self.row else None


@dataclass(frozen=True)
class Book:
    """Rates that stand in for the table's (current ones: :func:`current_book`): ``gpus`` by
    Vertex AI enum, ``families`` by machine series (``n1``) as (per vCPU, per GB) rows."""

    gpus: dict[str, Rate] = field(default_factory=dict)
    families: dict[str, tuple[Rate, Rate]] = field(default_factory=dict)


class CurrentRates(Protocol):
    """Current rates a billed backend read (its class's ``current_prices(settings)``: Vertex
    AI's from the Cloud Billing Catalog API): key -> (on demand, Spot) US dollars an hour, where
    from, the UTC date read (``YYYY-MM-DD``) and whether from a day's cache."""

    @property
    def rates(self) -> Mapping[str, tuple[float | None, float | None]]: ...
    @property
    def source(self) -> str: ...
    @property
    def read(self) -> str: ...
    @property
    def cached(self) -> bool: ...


def current_book(
    rates: Mapping[str, tuple[float | None, float | None]], *, source: str, read: str
) -> Book:
    """A :class:`Book` from Compute Engine's current rates (a backend's ``current_prices``:
    ``n1 vCPU``, ``n1 GB`` and GPU enums -> (on demand, Spot)): on demand derived x1.15, Spot
    a floor, each with ``source`` and ``read``."""

    def row(unit: str, pair: tuple[float | None, float | None]) -> Rate:
        on_demand, spot = pair
        standard = None if on_demand is None else round(on_demand * VERTEX_OVER_COMPUTE_ENGINE, 10)
        return Rate(
            unit, standard, spot, None, source, read,
            label=DERIVED, spot_source=source, spot_read=read,
        )  # fmt: skip

    gpus = {key: row("GPU", pair) for key, pair in rates.items() if key.startswith("NVIDIA_")}
    families = {}
    if "n1 vCPU" in rates and "n1 GB" in rates:
        families["n1"] = (row("vCPU", rates["n1 vCPU"]), row("GB", rates["n1 GB"]))
    return Book(gpus, families)


def _strategy(scheduling: str) -> str:
    """``SPOT``, ``spot``, ``FLEX_START`` ... -> ``spot``; ``ON_DEMAND``/``STANDARD`` ->
    ``standard``."""
    key = scheduling.strip().lower().replace("-", "_")
    key = {"on_demand": "standard", "flex": "flex_start", "": "standard"}.get(key, key)
    if key not in SCHEDULING:
        raise ValueError(f"unknown scheduling {scheduling!r}: one of {', '.join(SCHEDULING)}")
    return key


def is_floor(scheduling: str) -> bool:
    """True when a price at ``scheduling`` is a floor (Spot: Vertex AI's fee is unpublished)."""
    return _strategy(scheduling) == "spot"


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


def _family_parts(machine_type: str, strategy: str) -> list[Part]:
    """A3 High on demand or flex-start: vCPUs and memory at the SKU list's rates."""
    shape = _shape(machine_type)
    if shape is None or (strategy == "standard" and machine_type in NOT_ON_DEMAND):
        return [Part(machine_type, None, 1)]
    core, ram = FAMILIES[_family(machine_type)]
    parts = [
        Part(f"{machine_type} vCPU", core, shape[0]),
        Part(f"{machine_type} memory", ram, shape[1]),
    ]
    if strategy == "flex_start":
        gib = BUNDLED_LOCAL_SSD_GIB.get(machine_type)
        ssd = LOCAL_SSD_FLEX if gib else None
        parts.append(Part(f"{machine_type} local SSD", ssd, gib or 1))
    return parts


def _parts(
    machine_type: str,
    accelerator_type: str | None,
    accelerator_count: int,
    scheduling: str,
    book: Book | None = None,
) -> list[Part]:
    """Every billed part of one replica, without its disk (``book``'s rates first)."""
    strategy = _strategy(scheduling)
    tpu = _tpu_key(machine_type, accelerator_type)
    if tpu is not None:
        return [Part(tpu, TPUS.get(tpu), 1)]
    series = (book.families if book else {}).get(machine_type.split("-")[0])
    shape = _shape(machine_type)
    if series is not None and shape is not None:
        parts = [
            Part(f"{machine_type} vCPU", series[0], shape[0]),
            Part(f"{machine_type} memory", series[1], shape[1]),
        ]
    elif _family(machine_type) in FAMILIES and strategy != "spot":
        parts = _family_parts(machine_type, strategy)
    else:
        parts = [Part(machine_type, MACHINES.get(machine_type), 1)]
        if machine_type in BUILT_IN:
            return parts
    if accelerator_type and accelerator_count > 0:
        row = (book.gpus if book else {}).get(accelerator_type) or ACCELERATORS.get(
            accelerator_type
        )
        parts.append(Part(accelerator_type, row, accelerator_count))
    return parts


def machine_price(
    machine_type: str,
    accelerator_type: str | None = None,
    accelerator_count: int = 0,
    scheduling: str = "standard",
    book: Book | None = None,
) -> float | None:
    """One machine with its accelerators, an hour, without its boot disk; None when a part
    has no listed rate for ``scheduling`` (``book``: current rates that stand in)."""
    total = 0.0
    for part in _parts(machine_type, accelerator_type, accelerator_count, scheduling, book):
        rate = part.rate(scheduling)
        if rate is None:
            return None
        total += rate * part.quantity
    return round(total, 6)


def gpu_price(accelerator_type: str, scheduling: str = "standard") -> float | None:
    """One GPU an hour (Vertex AI enum), None when not listed (or built into its machine)."""
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
    book: Book | None = None,
) -> float | None:
    """What a worker pool costs an hour: ``replicas`` x (machine + accelerators + boot disk)
    at the rates of ``scheduling`` (Spot: a floor, see :func:`is_floor`); 0 for no replicas;
    None when a part is not listed (see :func:`unlisted`)."""
    if replicas <= 0:
        return 0.0
    machine = machine_price(machine_type, accelerator_type, accelerator_count, scheduling, book)
    disk = boot_disk_price(boot_disk_type, boot_disk_gb, scheduling)
    if machine is None or disk is None:
        return None
    return round(replicas * (machine + disk), 6)


def price_rows(
    machine_type: str,
    accelerator_type: str | None = None,
    accelerator_count: int = 0,
    *,
    scheduling: str = "standard",
    boot_disk_type: str = "pd-ssd",
    boot_disk_gb: int = 100,
    book: Book | None = None,
) -> list[dict[str, object]]:
    """Each billed part of one replica with its number and where it comes from: ``part``,
    ``quantity``, ``rate`` (dollars an hour a unit, None: not listed), ``unit``, ``label``
    (quoted, derived or floor), ``source`` and ``read`` (or ``why`` the rate is missing)."""
    parts = _parts(machine_type, accelerator_type, accelerator_count, scheduling, book)
    parts.append(Part(f"{boot_disk_type} boot disk", BOOT_DISKS.get(boot_disk_type), boot_disk_gb))
    rows: list[dict[str, object]] = []
    for part in parts:
        rate = part.rate(scheduling)
        row: dict[str, object] = {"part": part.what, "quantity": part.quantity, "rate": rate}
        if part.row is not None:
            row["unit"] = part.row.unit
        if rate is not None and part.row is not None:
            row.update(part.row.provenance(scheduling))
        else:
            row["why"] = _why(part, machine_type, scheduling)
        rows.append(row)
    return rows


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
    rows = price_rows(
        machine_type,
        accelerator_type,
        accelerator_count,
        scheduling=scheduling,
        boot_disk_type=boot_disk_type,
    )
    return [(str(r["part"]), str(r["why"])) for r in rows if r["rate"] is None]


def _why(part: Part, machine_type: str, scheduling: str) -> str:
    strategy = _strategy(scheduling)
    if part.what.endswith("local SSD"):
        return (
            f"the local SSD {machine_type} comes with, billed apart with flex-start, is not "
            f"sized in the stored breakdown (read {READ})"
        )
    if strategy == "standard" and machine_type in NOT_ON_DEMAND and part.row is None:
        return f"Google offers {machine_type} {NOT_ON_DEMAND[machine_type]}"
    if part.what.endswith("boot disk") and part.row is None:
        return f"no boot disk type {part.what.removesuffix(' boot disk')!r}"
    if part.row is not None:
        return part.row.why_not(strategy)
    return _NO_PAGE_ROW
