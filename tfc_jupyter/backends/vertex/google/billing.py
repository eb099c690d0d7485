"""Compute Engine's current prices from Google's Cloud Billing Catalog API, cached a day.

Where the user has Google Cloud credentials (``GOOGLE_APPLICATION_CREDENTIALS``, or gcloud's
application-default file under ``CLOUDSDK_CONFIG`` or ``~/.config/gcloud``; a loopback
``TFC_BILLING_ENDPOINT`` answers anonymously), :func:`current` reads the SKUs of Compute Engine
(service :data:`SERVICE`, ``GET /v1/services/6F81-5844-456A/skus``, every page) and keeps the
rates this package prices from it: N1 vCPU and memory, and the GPUs N1 machines take (T4, V100,
P100, P4), on demand and Spot, in one region. They are written to the tfc home
(``prices/billing-<region>.json``) and read from there for a day; a plan says "current, from the
Cloud Billing Catalog API" and when they were fetched. Without credentials, or when the API does
not answer, it gives None and plans keep the list prices of ``tfc_jupyter/job/prices.py``.
Importing it imports no Google library.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import gcloud

SERVICE = "6F81-5844-456A"
"""Compute Engine's service id in the Cloud Billing Catalog (``services/6F81-5844-456A``,
display name "Compute Engine")."""
ENDPOINT = "cloudbilling.googleapis.com"
ENDPOINT_VAR = "TFC_BILLING_ENDPOINT"
MAX_AGE_S = 24 * 3600.0
TIMEOUT_S = 10.0
MAX_PAGES = 200

KINDS: dict[str, str] = {
    "N1 Predefined Instance Core": "n1 vCPU",
    "N1 Predefined Instance Ram": "n1 GB",
    "Nvidia Tesla T4 GPU": "NVIDIA_TESLA_T4",
    "Nvidia Tesla V100 GPU": "NVIDIA_TESLA_V100",
    "Nvidia Tesla P100 GPU": "NVIDIA_TESLA_P100",
    "Nvidia Tesla P4 GPU": "NVIDIA_TESLA_P4",
}
"""SKU description (its start, less "Spot Preemptible ") -> the key this package prices by."""
_NOT = ("Commitment", "Workstation", "Sole Tenancy", "Reserved", "Custom", "DWS", "Calendar")


@dataclass(frozen=True)
class Current:
    """Compute Engine's current rates in ``region``: key -> (on demand, Spot) US dollars an hour
    (a Spot rate None where the catalog has none), fetched at ``fetched`` (epoch seconds) from
    ``source``; ``cached`` when read from the day's file rather than the API."""

    region: str
    rates: dict[str, tuple[float | None, float | None]]
    fetched: float
    source: str
    cached: bool = False

    @property
    def read(self) -> str:
        """The UTC date it was fetched, ``YYYY-MM-DD``."""
        return time.strftime("%Y-%m-%d", time.gmtime(self.fetched))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the cache file's form)."""
        return {
            "region": self.region,
            "rates": {k: list(v) for k, v in self.rates.items()},
            "fetched": self.fetched,
            "source": self.source,
        }


def endpoint() -> str:
    """The Cloud Billing API's endpoint (``TFC_BILLING_ENDPOINT`` for a test server)."""
    return os.environ.get(ENDPOINT_VAR) or ENDPOINT


def has_credentials(where: str) -> bool:
    """True when a call to ``where`` can be authorized without asking the user anything: a
    loopback test server, or application-default credentials on this machine (checked by
    their file, not by a call: no metadata server is probed)."""
    if gcloud.is_loopback(where):
        return True
    if os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
        return True
    config = os.environ.get("CLOUDSDK_CONFIG") or str(Path.home() / ".config" / "gcloud")
    return (Path(config) / "application_default_credentials.json").is_file()


def skus_url(where: str, service: str = SERVICE) -> str:
    """``https://cloudbilling.googleapis.com/v1/services/<service>/skus``."""
    return f"{gcloud.base_url(where)}/v1/services/{service}/skus"


def unit_price(sku: dict[str, Any]) -> float | None:
    """The SKU's price for one unit (its last tier), in its currency; None when it has none."""
    for info in sku.get("pricingInfo") or ():
        tiers = (info.get("pricingExpression") or {}).get("tieredRates") or []
        if tiers:
            price = tiers[-1].get("unitPrice") or {}
            return int(price.get("units") or 0) + int(price.get("nanos") or 0) / 1e9
    return None


def _kind(sku: dict[str, Any]) -> tuple[str, str] | None:
    """(key, ``standard`` or ``spot``) of a SKU this package prices by, else None."""
    description = str(sku.get("description") or "")
    usage = (sku.get("category") or {}).get("usageType")
    if usage not in ("OnDemand", "Preemptible") or any(w in description for w in _NOT):
        return None
    plain = description.removeprefix("Spot Preemptible ")
    for start, key in KINDS.items():
        if plain.startswith(start):
            return key, "standard" if usage == "OnDemand" else "spot"
    return None


def rates_from(
    skus: list[dict[str, Any]], region: str
) -> dict[str, tuple[float | None, float | None]]:
    """The rates :data:`KINDS` names, in ``region``, from the catalog's SKUs (USD only)."""
    found: dict[str, dict[str, float]] = {}
    for sku in skus:
        kind = _kind(sku)
        price = unit_price(sku)
        if kind is None or price is None or region not in (sku.get("serviceRegions") or ()):
            continue
        found.setdefault(kind[0], {})[kind[1]] = price
    return {
        key: (prices.get("standard"), prices.get("spot"))
        for key, prices in found.items()
        if "standard" in prices
    }


def fetch_skus(where: str, service: str = SERVICE) -> list[dict[str, Any]]:
    """Every SKU of ``service`` (all pages, in US dollars), over the wire."""
    session = gcloud.authorized_session(where)
    skus: list[dict[str, Any]] = []
    token = ""
    for _ in range(MAX_PAGES):
        params = {"currencyCode": "USD", "pageSize": "5000"}
        if token:
            params["pageToken"] = token
        reply = gcloud.checked(
            session.get(skus_url(where, service), params=params, timeout=TIMEOUT_S)
        )
        body = reply.json()
        skus += body.get("skus") or []
        token = body.get("nextPageToken") or ""
        if not token:
            break
    return skus


def _cache_file(home: Path, region: str) -> Path:
    return home / "prices" / f"billing-{region}.json"


def _cached(home: Path, region: str, now: float) -> Current | None:
    try:
        data = json.loads(_cache_file(home, region).read_text())
        fetched = float(data["fetched"])
        rates = {str(k): (v[0], v[1]) for k, v in dict(data["rates"]).items()}
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    if not 0 <= now - fetched < MAX_AGE_S:
        return None
    return Current(region, rates, fetched, str(data.get("source") or ""), cached=True)


def current(home: Path, region: str = "us-central1", now: float | None = None) -> Current | None:
    """Compute Engine's current rates in ``region``: the day's cached copy, else fetched (and
    cached) where the user has credentials; None without credentials or an answer."""
    now = time.time() if now is None else now
    kept = _cached(home, region, now)
    if kept is not None:
        return kept
    where = endpoint()
    if not has_credentials(where):
        return None
    try:
        rates = rates_from(fetch_skus(where), region)
    except Exception:  # no answer, refused, no google-auth: the list prices stand
        return None
    if not rates:
        return None
    fresh = Current(region, rates, now, skus_url(where))
    path = _cache_file(home, region)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(fresh.to_dict()))
    except OSError:
        pass  # an unwritable home: used this once, fetched again next time
    return fresh
