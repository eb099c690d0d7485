"""What a Google refusal means, read from its structure (Google's fixed sentence only where a
body has none).

Google answers a request over a quota with HTTP 429 (some APIs 403) and a ``google.rpc.Status``
body whose ``details`` say which quota: an ``ErrorInfo`` with a ``reason`` and metadata naming the
quota. Cloud Logging's per-minute read limit, as Google sends it (DefangLabs/defang issue 1268,
2025-06; snarfed/bridgy-fed issue 620, 2023-09, with ``quota_limit_value`` 60)::

    {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
      "message": "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per
                  minute' of service 'logging.googleapis.com' for consumer 'project_number:N'.",
      "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                   "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com",
                   "metadata": {"quota_metric": "logging.googleapis.com/read_requests",
                                "quota_limit": "ReadRequestsPerMinutePerProject",
                                "quota_limit_value": "60", "quota_unit": "1/min/{project}",
                                "quota_location": "global", "consumer": "projects/N",
                                "service": "logging.googleapis.com"}},
                  {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description":
                   "Request a higher quota limit.", "url":
                   "https://cloud.google.com/docs/quotas/help/request_increase"}]}]}}

A daily quota comes with the same reason; its ``quota_unit`` is ``1/d/{project}`` and its
``quota_limit`` ends ``PerDayPerProject`` (Google Tasks' ``defaultPerDayPerProject``, as quoted
in a public repository's notes). Vertex AI's "Resource management (CRUD) requests per minute per
region" limit on ``getCustomJob`` is a ``RATE_LIMIT_EXCEEDED`` of ``aiplatform.googleapis.com``
(GoogleCloudPlatform/vertex-ai-samples pull request 1000, 2022-09). A resource quota (GPUs,
CPUs) is ``RESOURCE_QUOTA_EXCEEDED`` (google/api/error_reason.proto) or, from Vertex AI's job
creation, a ``QuotaFailure`` naming the metric. APIs of the older JSON format (Cloud Storage)
say ``errors[].reason`` ``rateLimitExceeded`` / ``dailyLimitExceeded``.

Some bodies carry no structure at all, and then Google's fixed sentence is all there is to read.
Vertex AI's GPU quota on job creation comes bare (GoogleCloudPlatform/stable-diffusion-on-gcp
issue 12, 2023-12: ``{"error": {"code": 429, "message": "The following quota metrics exceed quota
limits: aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus", "status":
"RESOURCE_EXHAUSTED"}}``; the same sentence in google-deepmind/xmanager issue 29 and
GoogleCloudPlatform/vertex-ai-samples issue 700): a resource quota, never a rate limit. A bare
"Quota exceeded for quota metric 'M' and limit 'L' of service 'S'" is told by its limit's words
(``per day``: a daily quota; else a rate limit); a bare "Quota exceeded for S/M" by its metric's
name (``..._per_minute...``: a rate limit, ``..._per_day...``: daily, no window: a resource;
cocoindex-io/cocoindex issue 1151, 2025-10). Any other bare 429 is a rate limit.

:func:`refusal` reads that into a :class:`Refusal`: a per-minute limit (wait and retry), a daily
quota (retrying today does not help) or a resource quota (ask for more, or for less); with the
wait the server asked for (``Retry-After``, or a ``RetryInfo`` detail) when it asked for one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from enum import Enum
from typing import Any

RATE_REASONS = frozenset({"RATE_LIMIT_EXCEEDED", "rateLimitExceeded", "userRateLimitExceeded"})
DAILY_REASONS = frozenset({"dailyLimitExceeded", "dailyLimitExceededUnreg"})
RESOURCE_REASONS = frozenset({"RESOURCE_QUOTA_EXCEEDED", "quotaExceeded", "QUOTA_EXCEEDED"})
SERVICES = {
    "logging.googleapis.com": "Cloud Logging",
    "aiplatform.googleapis.com": "Vertex AI",
    "cloudbuild.googleapis.com": "Cloud Build",
    "storage.googleapis.com": "Cloud Storage",
}
QUOTAS_PAGE = "https://console.cloud.google.com/iam-admin/quotas"


class Kind(Enum):
    """What a refusal asks of the caller."""

    RATE = "rate"  # a per-minute (per-second, per-100-s) limit: wait, then try again
    DAILY = "daily"  # a per-day quota: used up until it resets
    RESOURCE = "resource"  # a resource quota (GPUs, CPUs): more quota or fewer machines


@dataclass(frozen=True)
class Refusal:
    """A quota refusal as its details describe it (fields empty where Google left them out)."""

    kind: Kind
    service: str = ""  # logging.googleapis.com
    metric: str = ""  # logging.googleapis.com/read_requests
    limit: str = ""  # ReadRequestsPerMinutePerProject
    value: str = ""  # 60
    unit: str = ""  # 1/min/{project}
    retry_after: float | None = None  # seconds the server asked for

    def service_title(self, default: str) -> str:
        """``Cloud Logging`` for ``logging.googleapis.com``; ``default`` when none is named."""
        return SERVICES.get(self.service, self.service or default)

    def quota_words(self) -> str:
        """``ReadRequestsPerMinutePerProject, 60 1/min/{project}``: the quota, for messages."""
        amount = " ".join(x for x in (self.value, self.unit) if x)
        return ", ".join(x for x in (self.limit or self.metric, amount) if x)

    def quotas_url(self, project: str) -> str:
        """The console's quota page for the project, filtered to this quota's metric."""
        url = f"{QUOTAS_PAGE}?project={project}"
        return url + (f"&metric={self.metric}" if self.metric else "")


def _window(unit: str, limit: str) -> str:
    """``d`` / ``min`` / ``s`` ...: the window of a quota, from its unit (``1/d/{project}``),
    else from its limit's name (``...PerDayPerProject``); ``""`` when neither says."""
    m = re.match(r"\d*/(\w+)/", unit)
    if m:
        return m.group(1)
    m = re.search(r"Per(Day|Minute|Second|100Seconds|Hour)", limit)
    return {"Day": "d", "Minute": "min", "Second": "s", "100Seconds": "100s", "Hour": "h"}.get(
        m.group(1) if m else "", ""
    )


_BARE_RESOURCE = re.compile(
    r"(?:The following quota metrics exceed quota limits:|Quota exceeded for) "
    r"((?:[a-z0-9-]+\.)+googleapis\.com)/(\w+)"
)
_BARE_RATE = re.compile(
    r"Quota exceeded for quota (?:metric|group) '([^']*)' and limit '([^']*)' of service "
    r"'([^']*)'"
)


def _bare(exc: Any, wait: float | None) -> Refusal | None:
    """A refusal told by Google's own sentence, for a body without details (see above)."""
    text = str(getattr(exc, "message", None) or exc)
    m = _BARE_RESOURCE.search(text)
    if m:
        window = re.search(r"per_(day|minute|second|hour)", m.group(2))
        kind = Kind.RESOURCE if window is None else Kind.DAILY if window[1] == "day" else Kind.RATE
        metric = f"{m.group(1)}/{m.group(2)}"
        return Refusal(kind, service=m.group(1), metric=metric, retry_after=wait)
    m = _BARE_RATE.search(text)
    if m:
        daily = re.search(r"\bper day\b", m.group(2), re.IGNORECASE)
        return Refusal(
            Kind.DAILY if daily else Kind.RATE,
            service=m.group(3),
            limit=m.group(2),  # its words ("Read requests per minute"): no metric's id
            retry_after=wait,
        )
    return None


def _details(exc: Any) -> list[dict[str, Any]]:
    return [d for d in (getattr(exc, "details", None) or []) if isinstance(d, dict)]


def _typed(details: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [d for d in details if str(d.get("@type", "")).endswith(f"google.rpc.{name}")]


def _seconds(text: str) -> float | None:
    """``"30s"`` / ``"1.5s"`` (a protobuf Duration in JSON) -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", text or "")
    return float(m.group(1)) if m else None


def retry_after(exc: Any, now: datetime | None = None) -> float | None:
    """The wait the server asked for: a ``Retry-After`` header (seconds or an HTTP date), else a
    ``RetryInfo`` detail's ``retryDelay``; None when it asked for none."""
    response = getattr(exc, "response", None)
    header = ""
    if response is not None and getattr(response, "headers", None) is not None:
        header = str(response.headers.get("Retry-After") or "").strip()
    if header:
        if re.fullmatch(r"\d+(\.\d+)?", header):
            return float(header)
        try:
            when = parsedate_to_datetime(header)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            moment = now or datetime.now(timezone.utc)
            return max(0.0, (when - moment).total_seconds())
    for info in _typed(_details(exc), "RetryInfo"):
        delay = _seconds(str(info.get("retryDelay", "")))
        if delay is not None:
            return delay
    return None


def refusal(exc: Any) -> Refusal | None:
    """The quota refusal ``exc`` (a Google API error) carries, None when it is no refusal.

    Only the structure counts: ``ErrorInfo.reason`` and its ``quota_unit`` / ``quota_limit``,
    ``QuotaFailure``, the old format's ``errors[].reason``, the HTTP status; without details,
    Google's fixed sentences (:func:`_bare`). A 429 that says nothing more is a per-minute limit
    (wait and retry).
    """
    code = getattr(exc, "code", None)
    details = _details(exc)
    wait = retry_after(exc)
    for info in _typed(details, "ErrorInfo"):
        reason = str(info.get("reason") or "")
        meta = {str(k): str(v) for k, v in (info.get("metadata") or {}).items()}
        unit, limit = meta.get("quota_unit", ""), meta.get("quota_limit", "")
        if reason in RATE_REASONS:
            kind = Kind.DAILY if _window(unit, limit) == "d" else Kind.RATE
        elif reason in RESOURCE_REASONS:
            kind = Kind.RESOURCE
        else:
            continue
        return Refusal(
            kind,
            service=meta.get("service", ""),
            metric=meta.get("quota_metric", ""),
            limit=limit,
            value=meta.get("quota_limit_value", ""),
            unit=unit,
            retry_after=wait,
        )
    for error in getattr(exc, "errors", None) or []:
        reason = str(error.get("reason", "")) if isinstance(error, dict) else ""
        if reason in DAILY_REASONS:
            return Refusal(Kind.DAILY, retry_after=wait)
        if reason in RATE_REASONS:
            return Refusal(Kind.RATE, retry_after=wait)
        if reason in RESOURCE_REASONS:
            return Refusal(Kind.RESOURCE, retry_after=wait)
    bare = _bare(exc, wait) if code in (403, 429) else None
    if code == 429:
        for failure in _typed(details, "QuotaFailure"):
            return _quota_failure(failure, bare, wait)
    if bare is not None:
        return bare
    return Refusal(Kind.RATE, retry_after=wait) if code == 429 else None


def _quota_failure(failure: dict[str, Any], bare: Refusal | None, wait: float | None) -> Refusal:
    """A ``QuotaFailure``: a resource quota, its metric from the violation (``quotaMetric``, a
    subject naming one) or from the message; AI Platform's subject is the project, no metric
    (GoogleCloudPlatform/training-data-analyst issue 2284)."""
    violations = failure.get("violations") or [{}]
    first = violations[0] if isinstance(violations[0], dict) else {}
    subject = str(first.get("subject", ""))
    metric = str(first.get("quotaMetric", "")) or (bare.metric if bare else "")
    metric = metric or (subject if ".googleapis.com/" in subject else "")
    service = metric.split("/", 1)[0] if ".googleapis.com/" in metric else ""
    return Refusal(Kind.RESOURCE, service=service, metric=metric, retry_after=wait)


def pacific_midnight(now: datetime | None = None) -> datetime:
    """The next midnight in Pacific time, when Google's daily quotas reset (Google: "The quota
    will be reset at midnight Pacific Time (PT)", in its ``dailyLimitExceeded`` answers)."""
    moment = now or datetime.now(timezone.utc)
    try:
        from zoneinfo import ZoneInfo

        pacific: Any = ZoneInfo("America/Los_Angeles")
    except Exception:  # no time zone database: Pacific standard time
        pacific = timezone(timedelta(hours=-8))
    local = moment.astimezone(pacific)
    midnight = (local + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight.astimezone(timezone.utc)
