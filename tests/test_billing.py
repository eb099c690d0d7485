"""Current prices from the Cloud Billing Catalog API (tfc_jupyter.backends.vertex.google.
billing), over the wire against tests/billing_server.py, and how a plan uses them: N1 and its
GPUs at Compute Engine's current rates (x1.15 on demand, the Spot floor with --spot), cached a
day, said as such.

The SKU prices below are the fake's, not Google's: each test works out what the plan must say
from what the fake served.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from billing_server import BillingServer, sku
from hypothesis import given
from hypothesis import strategies as st
from vertex_server import Fault

from tfc_jupyter.backends.vertex.google import billing
from tfc_jupyter.config import Settings
from tfc_jupyter.job import options, prices
from tfc_jupyter.notebook.capture import Selection
from tfc_jupyter.notebook.convert import Cell
from tfc_jupyter.planner.plan import Plan, make_plan
from tfc_jupyter.store import records

CORE, RAM, T4, V100 = 0.031611, 0.004237, 0.41, 2.55  # the fake's on-demand prices
SPOT_CORE, SPOT_RAM, SPOT_T4 = 0.0099, 0.0013, 0.12  # and Spot
SKUS = [
    sku("A1", "N1 Predefined Instance Core running in Americas", CORE, group="N1Standard"),
    sku("A2", "N1 Predefined Instance Ram running in Americas", RAM, group="N1Standard"),
    sku("A3", "Spot Preemptible N1 Predefined Instance Core running in Americas", SPOT_CORE,
        usage="Preemptible", group="N1Standard"),
    sku("A4", "Spot Preemptible N1 Predefined Instance Ram running in Americas", SPOT_RAM,
        usage="Preemptible", group="N1Standard"),
    sku("B1", "Nvidia Tesla T4 GPU running in Americas", T4),
    sku("B2", "Nvidia Tesla T4 GPU attached to Spot Preemptible VMs running in Americas",
        SPOT_T4, usage="Preemptible"),
    sku("B3", "Nvidia Tesla V100 GPU running in Americas", V100),
    # not ours: a commitment, a workstation, another region, storage
    sku("C1", "Commitment v1: Nvidia Tesla T4 GPU in Americas for 1 Year", 0.2, usage="Commit1Yr"),
    sku("C2", "Nvidia Tesla T4 GPU running in Americas Virtual Workstation", 9.0),
    sku("C3", "Nvidia Tesla T4 GPU running in EMEA", 7.0, regions=("europe-west4",)),
    sku("C4", "Storage PD Capacity", 0.04, group="PDStandard"),
]  # fmt: skip
DISK, SPOT_DISK = (prices.boot_disk_price("pd-ssd", 100, s) or 0.0 for s in ("standard", "spot"))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> Iterator[BillingServer]:
    with BillingServer(SKUS, page_size=3) as fake:
        monkeypatch.setenv(billing.ENDPOINT_VAR, fake.url)
        yield fake


def _plan(settings: Settings, line: str) -> Plan:
    sel = Selection(cells=[Cell(1, "print('hi')")], notebook=None, how="test")
    return make_plan(
        sel, options.parse_line("--backend vertex --project my-proj-1 " + line), settings
    )


def _cache() -> Path:
    return records.default_home() / "prices" / "billing-us-central1.json"


def test_a_plan_prices_n1_and_its_gpus_at_current_rates(
    server: BillingServer, settings: Settings
) -> None:
    plan = _plan(settings, "--machine T4_1X")
    summary = plan.summary()
    expected = prices.VERTEX_OVER_COMPUTE_ENGINE * (8 * CORE + 30 * RAM + T4) + DISK
    assert summary["cost_per_hour"] == pytest.approx(expected, abs=1e-6)
    current = summary["current_prices"]
    url = f"{server.url}/v1/services/{billing.SERVICE}/skus"
    assert current["source"] == url and not current["cached"]
    assert current["read"] == time.strftime("%Y-%m-%d", time.gmtime())
    rows = {r["part"]: r for r in summary["prices"][0]["rows"]}
    for part in ("n1-standard-8 vCPU", "n1-standard-8 memory", "NVIDIA_TESLA_T4"):
        assert rows[part]["label"] == "derived" and rows[part]["source"] == url, rows
    assert "current Compute Engine prices from the Cloud Billing Catalog API, fetched" in (
        plan.to_text(script=False)
    )
    # every page was read (3 SKUs a page), in US dollars; what was not ours was left out
    pages = server.received("GET", "/skus$")
    assert len(pages) == -(-len(SKUS) // 3) and all(p.answer == 200 for p in pages)
    assert all(p.query["currencyCode"] == ["USD"] for p in pages)
    assert json.loads(_cache().read_text())["rates"]["NVIDIA_TESLA_T4"] == [T4, SPOT_T4]


def test_current_prices_are_cached_a_day(server: BillingServer, settings: Settings) -> None:
    _plan(settings, "--machine CPU")
    asked = len(server.requests)
    again = _plan(settings, "--machine V100_1X")
    assert len(server.requests) == asked  # read from the day's file
    assert again.summary()["current_prices"]["cached"] is True
    assert "(cached a day)" in again.to_text(script=False)
    v100 = prices.VERTEX_OVER_COMPUTE_ENGINE * (8 * CORE + 30 * RAM + V100) + DISK
    assert again.summary()["cost_per_hour"] == pytest.approx(v100, abs=1e-6)
    data = json.loads(_cache().read_text())
    data["fetched"] -= billing.MAX_AGE_S + 1  # a day old: asked again
    _cache().write_text(json.dumps(data))
    assert _plan(settings, "--machine CPU").summary()["current_prices"]["cached"] is False
    assert len(server.requests) > asked


def test_spot_takes_the_current_spot_floor(server: BillingServer, settings: Settings) -> None:
    summary = _plan(settings, "--machine T4_1X --spot").summary()
    floor = 8 * SPOT_CORE + 30 * SPOT_RAM + SPOT_T4 + SPOT_DISK
    assert summary["cost_per_hour"] == pytest.approx(floor, abs=1e-6)
    assert summary["cost_is_floor"]
    labels = {r["label"] for r in summary["prices"][0]["rows"]}
    assert labels == {"floor"}


def test_other_machines_keep_the_list_prices(server: BillingServer, settings: Settings) -> None:
    summary = _plan(settings, "--machine A100_1X").summary()
    a2, _ = summary["prices"][0]["rows"]
    assert a2["source"] == prices.COMPUTE_ENGINE_URL and a2["label"] == "derived"
    assert summary["cost_per_hour"] == pytest.approx(
        prices.pool_price("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1), abs=1e-6
    )


def test_refused_or_without_credentials_the_list_prices_stand(
    server: BillingServer, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.inject(Fault("PERMISSION_DENIED", "The caller does not have permission", "skus"))
    plan = _plan(settings, "--machine T4_1X")
    assert plan.summary()["current_prices"] is None and not _cache().exists()
    listed = prices.pool_price("n1-standard-8", "NVIDIA_TESLA_T4", 1)
    assert plan.summary()["cost_per_hour"] == pytest.approx(listed, abs=1e-6)
    assert "Cloud Billing" not in plan.to_text(script=False)
    # Google's own endpoint, and no credentials on this machine: nothing is asked at all
    monkeypatch.delenv(billing.ENDPOINT_VAR)
    asked = len(server.requests)
    assert not billing.has_credentials(billing.endpoint())
    assert _plan(settings, "--machine T4_1X").summary()["current_prices"] is None
    assert len(server.requests) == asked
    # a local job is billed nothing: its plan asks nothing either
    monkeypatch.setenv(billing.ENDPOINT_VAR, server.url)
    sel = Selection(cells=[Cell(1, "print('hi')")], notebook=None, how="test")
    make_plan(sel, options.parse_line("--backend local"), settings)
    assert len(server.requests) == asked


@given(st.integers(0, 10_000), st.integers(0, 999_999_999))
def test_a_unit_price_is_units_and_nanos(units: int, nanos: int) -> None:
    tiers = [
        {"unitPrice": {"units": "0", "nanos": 0}},
        {"unitPrice": {"units": str(units), "nanos": nanos}},
    ]
    price = billing.unit_price({"pricingInfo": [{"pricingExpression": {"tieredRates": tiers}}]})
    assert price == pytest.approx(units + nanos / 1e9, abs=1e-9)
    assert billing.unit_price({"pricingInfo": []}) is None
