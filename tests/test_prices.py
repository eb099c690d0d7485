"""Prices: Google's rows (tfc_jupyter.job.prices), the pools they price, and the plan's price.

The expected numbers are written here as Google's list gives them, per unit and with the row
quoted, and each shape's sum is done here, so a test checks the rows and the arithmetic, never
the function's own output. A row the stored copies of Google's list do not hold is "price not
listed" (None), and the test says which.
"""

from __future__ import annotations

import pytest

from tfc_jupyter.config import Settings
from tfc_jupyter.job import catalog, options, prices
from tfc_jupyter.notebook.capture import Selection
from tfc_jupyter.notebook.convert import Cell
from tfc_jupyter.planner.plan import make_plan

# ---- Google's rows (us-central1), as read; see prices.py for where and when.
# Vertex AI price page, custom training, "n1-standard-4 | $0.21849885" (read 2026-10-07).
N1_STANDARD_4 = 0.21849885
# SKU A005-98FE-36CC "Vertex AI: Training/Pipelines on SSD backed PD Capacity", $0.1955 per
# GiB-month; Google's hour is 1/730 of a month (read 2025-08-16).
PD_SSD_GB_HOUR = 0.1955 / 730
# SKU 3F95-001E-B747 "Vertex AI: Training/Pipelines on NVIDIA H100 80GB in Iowa" $11.2660332;
# SKU 2E83-99F1-391A "... on A3 Instance Core in Iowa" $0.0293227 per vCPU;
# SKU B045-9255-8314 "... on A3 Instance RAM in Iowa" $0.0025534 per GB (read 2025-08-16).
H100, A3_CORE, A3_RAM = 11.2660332, 0.0293227, 0.0025534
# Flex-start: Compute Engine's DWS SKU + Vertex AI's management fee SKU, each per unit:
# H100 341A-49A5-0C07 $4.200761 + 5853-505F-A5C4 $1.4694826; A3 core 9A32-36B2-7FBC $0.010934
# + 9AC1-7D9B-C47E $0.0038247; A3 RAM ED19-A584-4A84 $0.000952 + D30D-69C9-F057 $0.0003331;
# local SSD 2303-1D6A-9C08 $0.08 per GiB-month (read 2025-08-16).
FLEX_H100 = 4.200761 + 1.4694826
FLEX_A3_CORE = 0.010934 + 0.0038247
FLEX_A3_RAM = 0.000952 + 0.0003331
FLEX_LOCAL_SSD_GIB_HOUR = 0.08 / 730
# a3-highgpu-8g: 208 vCPUs, 1,872 GB, 6,000 GiB of local SSD (Compute Engine's GPU table).
A3_8G_VCPU, A3_8G_GB, A3_8G_SSD = 208, 1872, 6000
BOOT_GB = 100  # Vertex AI's default boot disk: 100 GB of pd-ssd

CPU_ON_DEMAND = N1_STANDARD_4 + BOOT_GB * PD_SSD_GB_HOUR
H100_8X_ON_DEMAND = 8 * H100 + A3_8G_VCPU * A3_CORE + A3_8G_GB * A3_RAM + BOOT_GB * PD_SSD_GB_HOUR
H100_8X_FLEX = (
    8 * FLEX_H100
    + A3_8G_VCPU * FLEX_A3_CORE
    + A3_8G_GB * FLEX_A3_RAM
    + A3_8G_SSD * FLEX_LOCAL_SSD_GIB_HOUR
    + BOOT_GB * PD_SSD_GB_HOUR
)

# The eight shapes: (preset, its catalog machine, on demand, Spot). None: the stored
# copies of Google's list hold no row for a part (see prices.unlisted for which).
SHAPES = [
    ("CPU", "n1-standard-4", None, CPU_ON_DEMAND, None),
    ("T4_1X", "n1-standard-8", "NVIDIA_TESLA_T4", None, None),
    ("V100_4X", "n1-standard-16", "NVIDIA_TESLA_V100", None, None),
    ("A100_1X", "a2-highgpu-1g", "NVIDIA_TESLA_A100", None, None),
    ("A100_80GB_8X", "a2-ultragpu-8g", "NVIDIA_A100_80GB", None, None),
    ("L4_1X", "g2-standard-8", "NVIDIA_L4", None, None),
    ("H100_8X", "a3-highgpu-8g", "NVIDIA_H100_80GB", H100_8X_ON_DEMAND, None),
    ("TPU_V5E_8", "ct5lp-hightpu-8t", None, None, None),
]


def _plan(settings: Settings, line: str):  # type: ignore[no-untyped-def]
    sel = Selection(cells=[Cell(1, "print('hi')")], notebook=None, how="test")
    return make_plan(
        sel, options.parse_line("--backend vertex --project my-proj-1 " + line), settings
    )


def test_the_rows_add_up_to_googles_own_totals() -> None:
    """The SKU breakdown of one a3-highgpu-8g job with a 2,000 GiB boot disk totals $101.5429684
    an hour on demand and $52.0306163 with flex-start (the billing report's own sums)."""
    assert prices.pool_price(
        "a3-highgpu-8g", "NVIDIA_H100_80GB", 8, boot_disk_gb=2000
    ) == pytest.approx(101.5429684, abs=1e-5)
    assert prices.pool_price(
        "a3-highgpu-8g", "NVIDIA_H100_80GB", 8, boot_disk_gb=2000, scheduling="FLEX_START"
    ) == pytest.approx(52.0306163, abs=1e-5)
    # The price page's H100 row is the SKU's less the 15% management fee.
    assert pytest.approx(H100, abs=1e-6) == prices.H100_PAGE_ROW * 1.15


@pytest.mark.parametrize(("preset", "machine_type", "accel", "standard", "spot"), SHAPES)
def test_eight_shapes_on_demand_and_spot(
    settings: Settings,
    preset: str,
    machine_type: str,
    accel: str | None,
    standard: float | None,
    spot: float | None,
) -> None:
    machine = catalog.lookup(preset)
    assert (machine.machine_type, machine.accelerator_type or None) == (machine_type, accel)
    for flag, expected in (("", standard), (" --spot", spot)):
        plan = _plan(settings, f"--machine {preset}{flag}")
        text = plan.to_text(script=False)
        if expected is None:
            assert plan.spec.cost_per_hour() is None, (preset, flag)
            assert prices.unlisted(
                machine.machine_type,
                machine.accelerator_type,
                machine.accelerator_count,
                scheduling=plan.spec.google.scheduling,
            ), (preset, flag)
            assert "price not listed" in text and "estimated cost: none" in text
        else:
            assert plan.spec.cost_per_hour() == pytest.approx(expected, abs=1e-5), (preset, flag)
            assert f"${expected:,.2f} per hour" in text


def test_flex_start_is_priced_at_its_own_rates(settings: Settings) -> None:
    plan = _plan(settings, "--machine H100_8X --flex-start")
    assert plan.spec.cost_per_hour() == pytest.approx(H100_8X_FLEX, abs=1e-5)
    assert f"${H100_8X_FLEX:,.2f} per hour" in plan.to_text(script=False)
    assert H100_8X_FLEX < H100_8X_ON_DEMAND / 1.9  # "up to about half"


def test_a_spot_plan_never_shows_the_on_demand_price(settings: Settings) -> None:
    """Spot used to be priced at the on-demand rate: now the plan says Google's Spot rate, or
    that none is listed, and which part lacks one."""
    for preset, rate in (("CPU", CPU_ON_DEMAND), ("H100_8X", H100_8X_ON_DEMAND)):
        text = _plan(settings, f"--machine {preset} --spot").to_text(script=False)
        assert f"${rate:,.2f}" not in text, preset
        assert "Spot" in text.split("estimated cost:", 1)[1].splitlines()[0], preset
        assert "price not listed" in text


def test_the_boot_disk_is_counted(settings: Settings) -> None:
    small = _plan(settings, "--machine CPU").spec.cost_per_hour()
    big = _plan(settings, "--machine CPU --boot-disk-size 500").spec.cost_per_hour()
    assert small == pytest.approx(N1_STANDARD_4 + 100 * PD_SSD_GB_HOUR, abs=1e-6)
    assert big == pytest.approx(N1_STANDARD_4 + 500 * PD_SSD_GB_HOUR, abs=1e-6)
    # Each replica has its own disk.
    two = _plan(settings, "--machine CPU --workers 1").spec.cost_per_hour()
    assert two == pytest.approx(2 * small, abs=1e-6)
    # pd-standard has no listed rate: the price is not listed, never the machine alone.
    hdd = _plan(settings, "--machine CPU --boot-disk-type pd-standard")
    assert hdd.spec.cost_per_hour() is None
    assert "pd-standard boot disk" in hdd.to_text(script=False)
    assert prices.boot_disk_price("pd-standard", 100) is None
    assert prices.boot_disk_price("pd-ssd", 100) == pytest.approx(100 * PD_SSD_GB_HOUR, abs=1e-6)


def test_every_machine_gpu_and_tpu_has_a_price_or_says_why_not() -> None:
    """Each machine type, GPU and TPU the catalog offers: a listed rate, or a reason."""
    for machine_type in catalog.MACHINE_TYPES:
        for scheduling in prices.SCHEDULING:
            rate = prices.machine_price(machine_type, scheduling=scheduling)
            why = [
                (part, reason)
                for part, reason in prices.unlisted(machine_type, scheduling=scheduling)
                if not part.endswith("boot disk")
            ]
            assert (rate is None) == bool(why), (machine_type, scheduling)
            assert all(reason for _, reason in why), (machine_type, scheduling, why)
    for gpu, (enum, _, _) in catalog.GPUS.items():
        row = prices.ACCELERATORS[enum]
        assert row.standard is not None or row.why_not("standard"), gpu
        assert row.spot is not None or row.why_not("spot"), gpu
    for key in catalog.TPUS:
        machine = catalog.tpu_machine(key)
        listed = prices.machine_price(
            machine.machine_type, machine.accelerator_type, machine.accelerator_count
        )
        why = prices.unlisted(
            machine.machine_type, machine.accelerator_type, machine.accelerator_count
        )
        assert (listed is None) == bool(why) and all(r for _, r in why), key
    for row in (
        *prices.MACHINES.values(),
        *prices.ACCELERATORS.values(),
        *prices.TPUS.values(),
        *prices.BOOT_DISKS.values(),
        *(r for pair in prices.FAMILIES.values() for r in pair),
    ):
        assert row.source.startswith("https://") and len(row.read) == 10, row


def test_scheduling_names_and_empty_pools() -> None:
    assert prices.pool_price("n1-standard-4", replicas=0) == 0.0
    assert prices.pool_price("n1-standard-4", scheduling="STANDARD") == prices.pool_price(
        "n1-standard-4", scheduling="on_demand"
    )
    with pytest.raises(ValueError, match="unknown scheduling"):
        prices.pool_price("n1-standard-4", scheduling="cheap")
    # A3 High with fewer than 8 GPUs is not sold on demand: no on-demand rate, a flex one.
    assert prices.pool_price("a3-highgpu-1g", "NVIDIA_H100_80GB", 1) is None
    assert (
        "Spot or flex-start only" in prices.unlisted("a3-highgpu-1g", "NVIDIA_H100_80GB", 1)[0][1]
    )
    assert prices.pool_price(
        "a3-highgpu-1g", "NVIDIA_H100_80GB", 1, scheduling="flex_start"
    ) == pytest.approx(
        FLEX_H100
        + 26 * FLEX_A3_CORE
        + 234 * FLEX_A3_RAM
        + 750 * FLEX_LOCAL_SSD_GIB_HOUR
        + BOOT_GB * PD_SSD_GB_HOUR,
        abs=1e-5,
    )
