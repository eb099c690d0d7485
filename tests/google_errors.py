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


def permission_denied(permission: str, resource: str = "") -> Refused:
    """403 PERMISSION_DENIED with ``ErrorInfo`` IAM_PERMISSION_DENIED (domain
    ``iam.googleapis.com``, the permission in its metadata), as Vertex AI and Cloud Logging
    answer an account without the role. Cloud Logging names no resource: "Permission
    'logging.logEntries.create' denied on resource (or it may not exist)." (kubeflow/pipelines
    pull request 12591, 2025-12; apache/airflow issue 25812, 2022-08); Vertex AI names it."""
    meta = {"permission": permission} | ({"resource": resource} if resource else {})
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "IAM_PERMISSION_DENIED",
        "domain": "iam.googleapis.com",
        "metadata": meta,
    }
    where = f"resource '{resource}'" if resource else "resource"
    message = f"Permission '{permission}' denied on {where} (or it may not exist)."
    return Refused("PERMISSION_DENIED", message, [info])


def permission_denied_bare(permission: str) -> Refused:
    """The same 403 over gRPC as clients print it, without details: "PERMISSION_DENIED:
    Permission 'logging.sinks.create' denied on resource (or it may not exist)."
    (googleapis/java-logging pull request 1548, 2024-02)."""
    return Refused(
        "PERMISSION_DENIED", f"Permission '{permission}' denied on resource (or it may not exist)."
    )


def caller_denied() -> Refused:
    """Cloud Build's 403: "PERMISSION_DENIED: The caller does not have permission", naming no
    permission and carrying no details (GoogleCloudPlatform/cortex-data-foundation issue 10,
    2022-07; googlecodelabs/monolith-to-microservices issue 109, 2025-06)."""
    return Refused("PERMISSION_DENIED", "The caller does not have permission")


def storage_denied(
    account: str, permission: str, what: str = "the Google Cloud Storage object"
) -> Refused:
    """Cloud Storage's 403 (its JSON API: ``errors[].reason`` ``forbidden``, no status, added by
    the server's StorageError): "X does not have storage.objects.create access to the Google
    Cloud Storage object. Permission 'storage.objects.create' denied on resource (or it may not
    exist)." (data-integrations/google-cloud pull request 1503, 2025-01; the older form without
    its second sentence: ThouCheese/cloud-storage-rs issue 102, 2022-03)."""
    return Refused(
        "PERMISSION_DENIED",
        f"{account} does not have {permission} access to {what}. Permission '{permission}' "
        "denied on resource (or it may not exist).",
    )


def gpu_quota(metric: str = "custom_model_training_nvidia_t4_gpus") -> Refused:
    """Vertex AI's resource quota on job creation, as Google sends it: 429 RESOURCE_EXHAUSTED
    with the sentence and nothing else, no details (GoogleCloudPlatform/stable-diffusion-on-gcp
    issue 12, 2023-12: "The following quota metrics exceed quota limits:
    aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"; the same words in
    google-deepmind/xmanager issue 29, 2022-08, for ``custom_model_training_tpu_v2``)."""
    return Refused(
        "RESOURCE_EXHAUSTED",
        f"The following quota metrics exceed quota limits: aiplatform.googleapis.com/{metric}",
    )


def accelerator_quota_failure(project: str, count: int = 2, gpu: str = "K80") -> Refused:
    """AI Platform Training's older 429 for GPUs: a ``QuotaFailure`` whose subject is the project
    (GoogleCloudPlatform/training-data-analyst issue 2284, 2023-04)."""
    limits = "0 A100, 0 K80, 0 P100, 0 P4, 0 T4, 0 TPU_V2, 0 TPU_V2_POD, 0 TPU_V3, 0 V100"
    words = f"The request for {count} {gpu} accelerators exceeds the allowed maximum of {limits}"
    message = (
        f"Quota failure for project {project}. {words} accelerators. To read more about Cloud ML "
        "Engine quota, see https://cloud.google.com/ml-engine/quotas."
    )
    violation = {"subject": project, "description": f"{words} accelerators."}
    failure = {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]}
    return Refused("RESOURCE_EXHAUSTED", message, [failure])


def rate_bare(number: str, metric: str, limit: str, service: str) -> Refused:
    """A per-minute (or per-day) limit as gRPC clients print it, with no details: "429 Quota
    exceeded for quota metric 'Vertex AI Gemini model requests' and limit 'Requests per minute'
    of service 'aiplatform.googleapis.com' for consumer 'projects/...'" (a Vertex AI error page's
    stack trace, theneuralbase.com, 2026-04)."""
    return Refused(
        "RESOURCE_EXHAUSTED",
        f"Quota exceeded for quota metric '{metric}' and limit '{limit}' of service '{service}' "
        f"for consumer 'project_number:{number}'.",
    )


def exhausted_bare() -> Refused:
    """The bare 429 that names nothing: "Resource has been exhausted (e.g. check quota)."
    (Aider-AI/aider issue 1263, 2024-08, a Vertex AI answer): a rate of requests, retried."""
    return Refused("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).")


def metric_quota_bare(metric: str) -> Refused:
    """A 429 naming only its metric: "Quota exceeded for
    aiplatform.googleapis.com/embed_content_input_tokens_per_minute_per_base_model with base
    model: gemini-embedding. Please submit a quota increase request." (cocoindex-io/cocoindex
    issue 1151, 2025-10): the metric's name says its window."""
    return Refused(
        "RESOURCE_EXHAUSTED",
        f"Quota exceeded for aiplatform.googleapis.com/{metric}. Please submit a quota increase "
        "request. https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai.",
    )


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
