"""A local server that speaks the Cloud Billing Catalog API's SKU listing, as Google does.

``tfc_jupyter.backends.vertex.google.billing`` talks to it over HTTP, unpatched
(``TFC_BILLING_ENDPOINT=http://127.0.0.1:PORT``; a loopback endpoint gets anonymous credentials):

* ``GET /v1/services/{service}/skus`` with ``currencyCode``, ``pageSize`` (at most 5000; the
  server's own ``page_size`` caps it, so that clients must follow ``nextPageToken``) and
  ``pageToken``. An unknown service is a 404, a bad page token or currency a 400, Google's
  JSON error bodies. Faults are injected with ``inject(Fault(...))`` (``tests/vertex_server.py``).

SKUs are added with :func:`sku` (Google's fields: ``name``, ``skuId``, ``description``,
``category``, ``serviceRegions``, ``pricingInfo[].pricingExpression.tieredRates[].unitPrice``).
127.0.0.1 only.
"""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from vertex_server import ApiError, FakeServer, Received

COMPUTE_ENGINE = "6F81-5844-456A"


def sku(
    sku_id: str,
    description: str,
    price: float,
    *,
    usage: str = "OnDemand",
    group: str = "GPU",
    regions: tuple[str, ...] = ("us-central1",),
    unit: str = "h",
) -> dict[str, Any]:
    """A Compute Engine SKU as the catalog lists it (``price`` in US dollars a ``unit``)."""
    units = int(price)
    return {
        "name": f"services/{COMPUTE_ENGINE}/skus/{sku_id}",
        "skuId": sku_id,
        "description": description,
        "category": {
            "serviceDisplayName": "Compute Engine",
            "resourceFamily": "Compute",
            "resourceGroup": group,
            "usageType": usage,
        },
        "serviceRegions": list(regions),
        "pricingInfo": [
            {
                "effectiveTime": "2026-11-29T00:00:00Z",
                "pricingExpression": {
                    "usageUnit": unit,
                    "displayQuantity": 1,
                    "tieredRates": [
                        {
                            "startUsageAmount": 0,
                            "unitPrice": {
                                "currencyCode": "USD",
                                "units": str(units),
                                "nanos": round((price - units) * 1e9),
                            },
                        }
                    ],
                },
                "currencyConversionRate": 1,
            }
        ],
        "serviceProviderName": "Google",
    }


class BillingServer(FakeServer):
    """The server: ``skus`` are Compute Engine's; ``page_size`` caps each page."""

    handler_attr = "billing"

    def __init__(self, skus: list[dict[str, Any]], *, page_size: int = 2) -> None:
        super().__init__()
        self.skus = list(skus)
        self.page_size = page_size

    def answer(self, path: str, query: dict[str, list[str]]) -> dict[str, Any]:
        """The body for ``GET path?query`` (or an :class:`ApiError`)."""
        m = re.fullmatch(r"/v1/services/([^/]+)/skus", path)
        if not m:
            raise ApiError("NOT_FOUND", f"The requested URL {path} was not found on this server.")
        if m.group(1) != COMPUTE_ENGINE:
            raise ApiError("NOT_FOUND", f"Service {m.group(1)} was not found.")
        currency = query.get("currencyCode", ["USD"])[0]
        if currency != "USD":
            raise ApiError("INVALID_ARGUMENT", f"Currency {currency} is not supported here.")
        asked = int(query.get("pageSize", ["5000"])[0] or 5000)
        if not 0 < asked <= 5000:
            raise ApiError("INVALID_ARGUMENT", "page_size must be between 1 and 5000.")
        token = query.get("pageToken", ["0"])[0] or "0"
        if not token.isdigit() or int(token) > len(self.skus):
            raise ApiError("INVALID_ARGUMENT", f"Invalid page token {token!r}.")
        start, size = int(token), min(asked, self.page_size)
        page = self.skus[start : start + size]
        more = start + size < len(self.skus)
        return {"skus": page, "nextPageToken": str(start + size) if more else ""}


class _Handler(BaseHTTPRequestHandler):
    billing: BillingServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        state = self.billing
        received = Received("GET", url.path, query, None)
        with state._lock:
            state.requests.append(received)
        fault = state._take_fault(f"GET {url.path}")
        try:
            if fault is not None and fault.status is not None:
                raise ApiError(fault.status, fault.message, fault.details)
            code, body = 200, state.answer(url.path, query)
        except ApiError as exc:
            code, body = exc.body()["error"]["code"], exc.body()
        received.answer = code
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


BillingServer.handler = _Handler
