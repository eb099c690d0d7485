"""Google's refusals as Google sends them, for the test servers: bodies and per-project budgets.

Each body is a ``google.rpc.Status`` in JSON (``{"error": {code, message, status, details}}``),
worded and structured as the real services answer (sources in each function). A
:class:`Budget` is a real per-project rate quota: ``limit`` requests in any ``window`` seconds (a
minute at Google; a scaled minute in tests, so that a test takes seconds), answered with the
service's own 429 once spent.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

HELP = {
    "@type": "type.googleapis.com/google.rpc.Help",
    "links": [
        {
            "description": "Request a higher quota limit.",
            "url": "https://cloud.google.com/docs/quotas/help/request_increase",
        }
    ],
}


@dataclass(frozen=True)
class Refused:
    """One refusal: the gRPC status name, the message, the details, the HTTP headers."""

    status: str
    message: str
    details: list[dict[str, Any]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)


def _quota(
    number: str,
    service: str,
    metric: str,
    metric_words: str,
    limit: str,
    limit_words: str,
    value: int,
    unit: str,
    location: str = "global",
) -> Refused:
    message = (
        f"Quota exceeded for quota metric '{metric_words}' and limit '{limit_words}' of service "
        f"'{service}' for consumer 'project_number:{number}'."
    )
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "RATE_LIMIT_EXCEEDED",
        "domain": "googleapis.com",
        "metadata": {
            "consumer": f"projects/{number}",
            "quota_limit": limit,
            "quota_limit_value": str(value),
            "quota_location": location,
            "quota_metric": metric,
            "quota_unit": unit,
            "service": service,
        },
    }
    return Refused("RESOURCE_EXHAUSTED", message, [info, HELP])


def logging_read_rate(number: str, limit: int = 60) -> Refused:
    """Cloud Logging's "Read requests per minute" 429 (entries.list), as Google sends it: the
    message, ``ErrorInfo`` RATE_LIMIT_EXCEEDED with ``ReadRequestsPerMinutePerProject`` and unit
    ``1/min/{project}``, and a ``Help`` link. Sources: DefangLabs/defang issue 1268 (2025-06, the
    full details), snarfed/bridgy-fed issue 620 (2023-09, ``quota_limit_value`` 60)."""
    return _quota(
        number,
        "logging.googleapis.com",
        "logging.googleapis.com/read_requests",
        "Read requests",
        "ReadRequestsPerMinutePerProject",
        "Read requests per minute",
        limit,
        "1/min/{project}",
    )


def logging_read_daily(number: str, limit: int = 100000) -> Refused:
    """A daily read quota used up: the same reason, ``RATE_LIMIT_EXCEEDED``, with a per-day limit
    and unit ``1/d/{project}``, as Google sends daily quotas (Google Tasks'
    ``defaultPerDayPerProject``, ``1/d/{project}``, quoted in a public repository's notes). The
    limit's name follows the per-minute one's pattern."""
    return _quota(
        number,
        "logging.googleapis.com",
        "logging.googleapis.com/read_requests",
        "Read requests",
        "ReadRequestsPerDayPerProject",
        "Read requests per day",
        limit,
        "1/d/{project}",
    )


def vertex_crud_rate(number: str, region: str = "us-central1", limit: int = 600) -> Refused:
    """Vertex AI's "Resource management (CRUD) requests per minute per region" 429, on
    getCustomJob and the other job calls (GoogleCloudPlatform/vertex-ai-samples pull request
    1000, 2022-09: "429 Quota exceeded for quota metric 'Resource management (CRUD) requests' and
    limit 'Resource management (CRUD) requests per minute per region' of service
    'aiplatform.googleapis.com' ... reason: RATE_LIMIT_EXCEEDED")."""
    return _quota(
        number,
        "aiplatform.googleapis.com",
        "aiplatform.googleapis.com/resource_management_requests",
        "Resource management (CRUD) requests",
        "ResourceManagementRequestsPerMinutePerProjectPerRegion",
        "Resource management (CRUD) requests per minute per region",
        limit,
        "1/min/{project}/{region}",
        location=region,
    )


def permission_denied(permission: str, resource: str) -> Refused:
    """403 PERMISSION_DENIED with ``ErrorInfo`` IAM_PERMISSION_DENIED, as Vertex AI and Cloud
    Logging answer an account without the role."""
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "IAM_PERMISSION_DENIED",
        "domain": "iam.googleapis.com",
        "metadata": {"permission": permission, "resource": resource},
    }
    message = f"Permission '{permission}' denied on resource '{resource}' (or it may not exist)."
    return Refused("PERMISSION_DENIED", message, [info])


def unavailable(retry_after: float | None = None) -> Refused:
    """503 UNAVAILABLE; with ``Retry-After`` when given (HTTP's way to ask for a wait, RFC 9110
    section 10.2.3)."""
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return Refused("UNAVAILABLE", "The service is currently unavailable.", [], headers)


def internal() -> Refused:
    """500 INTERNAL, as Google words it."""
    return Refused("INTERNAL", "Internal error encountered.")


@dataclass
class Budget:
    """A per-project rate quota: ``limit`` requests in any ``window`` seconds, then ``refuse``.

    ``charge`` counts a request of ``project`` and returns the refusal when the budget is spent
    (refused requests are counted too: stricter than needed, a client that keeps knocking
    stays refused). ``limit`` and ``window`` may change while a test runs (``limit=0``: every
    request refused). ``peak`` is the most requests of one project seen in any window.
    """

    limit: int
    window: float
    refuse: Callable[[str, int], Refused]  # (project number, limit) -> the answer
    used: dict[str, deque[float]] = field(default_factory=dict)
    refused: int = 0
    answered: int = 0
    peak: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def charge(self, project: str) -> Refused | None:
        """Count one request; the refusal when over the budget, else None."""
        now = time.monotonic()
        with self._lock:
            times = self.used.setdefault(project, deque())
            while times and now - times[0] >= self.window:
                times.popleft()
            over = len(times) >= self.limit
            times.append(now)
            self.peak = max(self.peak, len(times))
            if over:
                self.refused += 1
                return self.refuse(project, self.limit)
            self.answered += 1
            return None
