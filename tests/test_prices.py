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

# Compute Engine, us-central1, as read (prices.COMPUTE_ENGINE_URL: generated 2026-07-30;
# prices.GPU_TPU_URL; both read 2026-11-29): (on demand, Spot) an hour; the A2/G2/A3 machines
# with their built-in GPUs and bundled local SSD (GiB), which Vertex AI does not bill.
CE_N1_4, CE_N1_8, CE_N1_16 = (0.189999, 0.06701), (0.379998, 0.13402), (0.759996, 0.26804)
CE_A2_1G = (3.673385, 1.92802)
CE_A2_ULTRA_8G, A2_ULTRA_8G_SSD = (40.5503831232877, 22.0763704109589), 3000
CE_G2_8 = (0.853624271, 0.479872)
CE_A3_8G_SPOT, A3_8G_SSD = 50.6095408219178, 6000
CE_T4, CE_V100, CE_V5E_8 = (0.35, 0.14), (2.48, 0.992), (9.6, 1.70383)
CE_LOCAL_SSD = (0.08 / 730, 0.0428 / 730)  # per GiB-hour, on demand and Spot
CE_PD_SSD = 0.17 / 730  # per GB-hour, Spot VMs alike
X = 1.15  # Vertex AI training on demand over Compute Engine (the quoted rows hold it)
DISK, SPOT_DISK = BOOT_GB * PD_SSD_GB_HOUR, BOOT_GB * CE_PD_SSD


def _less_ssd(row: tuple[float, float], gib: int) -> tuple[float, float]:
    return row[0] - gib * CE_LOCAL_SSD[0], row[1] - gib * CE_LOCAL_SSD[1]


CPU_ON_DEMAND = N1_STANDARD_4 + DISK
H100_8X_ON_DEMAND = 8 * H100 + A3_8G_VCPU * A3_CORE + A3_8G_GB * A3_RAM + DISK
H100_8X_FLEX = (
    8 * FLEX_H100
    + A3_8G_VCPU * FLEX_A3_CORE
    + A3_8G_GB * FLEX_A3_RAM
    + A3_8G_SSD * FLEX_LOCAL_SSD_GIB_HOUR
    + DISK
)
ULTRA = _less_ssd(CE_A2_ULTRA_8G, A2_ULTRA_8G_SSD)

# The eight shapes: (preset, its catalog machine, accelerator, on demand, Spot floor).
SHAPES = [
    ("CPU", "n1-standard-4", None, CPU_ON_DEMAND, CE_N1_4[1] + SPOT_DISK),
    (
        "T4_1X",
        "n1-standard-8",
        "NVIDIA_TESLA_T4",
        X * (CE_N1_8[0] + CE_T4[0]) + DISK,
        CE_N1_8[1] + CE_T4[1] + SPOT_DISK,
    ),
    (
        "V100_4X",
        "n1-standard-16",
        "NVIDIA_TESLA_V100",
        X * (CE_N1_16[0] + 4 * CE_V100[0]) + DISK,
        CE_N1_16[1] + 4 * CE_V100[1] + SPOT_DISK,
    ),
    (
        "A100_1X",
        "a2-highgpu-1g",
        "NVIDIA_TESLA_A100",
        X * CE_A2_1G[0] + DISK,
        CE_A2_1G[1] + SPOT_DISK,
    ),
    (
        "A100_80GB_8X",
        "a2-ultragpu-8g",
        "NVIDIA_A100_80GB",
        X * ULTRA[0] + DISK,
        ULTRA[1] + SPOT_DISK,
    ),
    ("L4_1X", "g2-standard-8", "NVIDIA_L4", X * CE_G2_8[0] + DISK, CE_G2_8[1] + SPOT_DISK),
    (
        "H100_8X",
        "a3-highgpu-8g",
        "NVIDIA_H100_80GB",
        H100_8X_ON_DEMAND,
        CE_A3_8G_SPOT - A3_8G_SSD * CE_LOCAL_SSD[1] + SPOT_DISK,
    ),
    ("TPU_V5E_8", "ct5lp-hightpu-8t", None, X * CE_V5E_8[0] + DISK, CE_V5E_8[1] + SPOT_DISK),
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
    standard: float,
    spot: float,
) -> None:
    """Every shape has a price on demand and a Spot floor; the plan's JSON gives each row of
    it with its label, source and date, and the dry run says them."""
    machine = catalog.lookup(preset)
    assert (machine.machine_type, machine.accelerator_type or None) == (machine_type, accel)
    for flag, expected, labels in (
        ("", standard, {"quoted", "derived"}),
        (" --spot", spot, {"floor"}),
    ):
        plan = _plan(settings, f"--machine {preset}{flag}")
        summary = plan.summary()
        assert summary["cost_per_hour"] == pytest.approx(expected, abs=1e-5), (preset, flag)
        assert summary["cost_is_floor"] is bool(flag)
        rows = [row for pool in summary["prices"] for row in pool["rows"]]
        assert rows and all(row["rate"] is not None for row in rows), rows
        assert {row["label"] for row in rows} <= labels, rows
        assert all(
            str(r["source"]).startswith("https://") and len(str(r["read"])) == 10 for r in rows
        )
        text = plan.to_text(script=False)
        cost = text.split("estimated cost:", 1)[1].splitlines()[0]
        assert f"${expected:,.2f} per hour" in cost
        assert ("from $" in cost) is bool(flag), cost
        assert all(f"read {row['read']}" in text for row in rows)


def test_flex_start_is_priced_at_its_own_rates(settings: Settings) -> None:
    plan = _plan(settings, "--machine H100_8X --flex-start")
    assert plan.spec.cost_per_hour() == pytest.approx(H100_8X_FLEX, abs=1e-5)
    assert f"${H100_8X_FLEX:,.2f} per hour" in plan.to_text(script=False)
    assert H100_8X_FLEX < H100_8X_ON_DEMAND / 1.9  # "up to about half"


def test_a_spot_plan_never_shows_the_on_demand_price(settings: Settings) -> None:
    """Spot used to be priced at the on-demand rate: now the plan, text and JSON, carries
    Compute Engine's Spot floor and says it is one."""
    for preset, rate in (("CPU", CPU_ON_DEMAND), ("H100_8X", H100_8X_ON_DEMAND)):
        plan = _plan(settings, f"--machine {preset} --spot")
        text = plan.to_text(script=False)
        assert f"${rate:,.2f}" not in text, preset
        assert "floor" in text.split("estimated cost:", 1)[1].splitlines()[0], preset
        assert f"({preset} = " not in text and "  (from $" in text, preset  # pool lines too
        summary = plan.summary()
        assert summary["cost_per_hour"] < rate / 2, preset
        # the spec's machines too: a Spot plan's JSON holds no on-demand number
        chief = summary["spec"]["chief"]
        on_demand = catalog.lookup(preset).price_per_hour or 0.0
        assert chief["price_basis"] == "spot floor" and chief["price_per_hour"] < on_demand / 2
        assert summary["cost_at_most"] is None or summary["cost_at_most"] < rate * 24 * 7


def test_derived_rows_are_compute_engine_times_1_15() -> None:
    """Every derived on-demand row, over the whole table, is Compute Engine's price x 1.15 (a
    machine less its bundled local SSD); its Spot floor is Compute Engine's Spot price. The
    quoted rows agree with the same rule where Compute Engine's row was read too."""
    derived = 0
    for machine_type, (hour, spot, gib) in prices.COMPUTE_ENGINE_MACHINES.items():
        row = prices.MACHINES[machine_type]
        on_demand = hour - gib * CE_LOCAL_SSD[0]
        if row.label == "derived":
            derived += 1
            assert row.standard == pytest.approx(on_demand * X, abs=1e-6), machine_type
        else:
            assert row.standard == pytest.approx(on_demand * X, rel=1e-6), machine_type
        assert row.spot == pytest.approx(spot - gib * CE_LOCAL_SSD[1], abs=1e-6), machine_type
    for table, rows in (
        (prices.COMPUTE_ENGINE_GPUS, prices.ACCELERATORS),
        (prices.COMPUTE_ENGINE_TPUS, prices.TPUS),
    ):
        for key, (hour, spot) in table.items():
            assert rows[key].label == "derived", key
            assert rows[key].standard == pytest.approx(hour * X, abs=1e-6), key
            assert rows[key].spot == spot, key
            derived += 1
    assert derived > 100
    # The quoted rows hold the rule: page n1-standard-4 and SKU pd-ssd, and the A3 bill.
    assert pytest.approx(CE_N1_4[0] * X, abs=1e-9) == N1_STANDARD_4
    assert pytest.approx(CE_PD_SSD * X, abs=1e-12) == PD_SSD_GB_HOUR
    a3 = prices.MACHINES["a3-highgpu-8g"].standard or 0.0
    assert pytest.approx(a3, abs=1e-4) == 8 * H100 + A3_8G_VCPU * A3_CORE + A3_8G_GB * A3_RAM


def test_the_boot_disk_is_counted(settings: Settings) -> None:
    small = _plan(settings, "--machine CPU").spec.cost_per_hour()
    big = _plan(settings, "--machine CPU --boot-disk-size 500").spec.cost_per_hour()
    assert small == pytest.approx(N1_STANDARD_4 + 100 * PD_SSD_GB_HOUR, abs=1e-6)
    assert big == pytest.approx(N1_STANDARD_4 + 500 * PD_SSD_GB_HOUR, abs=1e-6)
    # Each replica has its own disk.
    two = _plan(settings, "--machine CPU --workers 1").spec.cost_per_hour()
    assert two == pytest.approx(2 * small, abs=1e-6)
    # pd-standard: Compute Engine's $0.04 a GB-month x 1.15 (derived).
    hdd = _plan(settings, "--machine CPU --boot-disk-type pd-standard")
    assert hdd.spec.cost_per_hour() == pytest.approx(N1_STANDARD_4 + 100 * 0.04 / 730 * X, abs=1e-6)
    assert "pd-standard boot disk x100 at" in hdd.to_text(script=False)
    # hyperdisk-balanced has no row read: the price is not listed, never the machine alone.
    hyper = _plan(settings, "--machine CPU --boot-disk-type hyperdisk-balanced")
    assert hyper.spec.cost_per_hour() is None
    assert "hyperdisk-balanced boot disk" in hyper.to_text(script=False)
    assert prices.boot_disk_price("hyperdisk-balanced", 100) is None
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
