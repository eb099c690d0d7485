"""Google Cloud access, shared by Vertex AI and Cloud Build: credentials, errors that say what to
do, and retries.

The Google client libraries are imported only inside the functions that use them, so importing
this module costs nothing.

* :class:`Api`: a Google API as error messages name it (Vertex AI here; Cloud Build and Cloud
  Storage in :mod:`tfc_jupyter.backends.vertex.cloudbuild`).
* :func:`credentials`: anonymous for a loopback endpoint (a local test server), else
  application-default credentials.
* :func:`explain`: any error from the clients -> retry or not, and a one-line
  :class:`~tfc_jupyter.errors.BackendError` naming the fix, worded for the :class:`Api` called.
* :func:`call`: one API call with exponential backoff (and jitter) on transient errors (a
  per-minute rate limit, 5xx, timeouts, dropped connections), waiting at least what the server
  asked for (``Retry-After``, ``RetryInfo``), bounded in total time.

A 429 is told apart by its structure (:mod:`.quota`): a per-minute limit is
retried; a daily quota (:class:`DailyQuotaError`) and a resource quota (:class:`QuotaError`) are
not.
"""

from __future__ import annotations

import ipaddress
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from ....errors import BackendError
from . import roles
from .quota import Kind, Refusal, pacific_midnight, refusal, retry_after

T = TypeVar("T")


SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


AUTH_HINT = (
    "run `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS to a "
    "service-account key file), then launch again"
)


# JobSpec fields and the flags that set them, for "fix the field" hints.
_FLAGS = {  # the first key found in the field wins: the longer names first
    "psc_interface_config": "--psc-network-attachment",
    "reservation_affinity": "--reservation",
    "persistent_resource_id": "--persistent-resource",
    "disk_spec": "--boot-disk-type / --boot-disk-size",
    "container_spec.env": "--env",
    "machine_spec": "--machine / --gpus / --tpu",
    "replica_count": "--workers",
    "labels": "--label",
    "service_account": "--service-account",
    "network": "--network",
    "tensorboard": "--tensorboard (with --base-output-dir and --service-account)",
    "base_output_directory": "--base-output-dir",
    "timeout": "--timeout",
    "image_uri": "--image",
    "display_name": "--name",
}


@dataclass(frozen=True)
class Api:
    """A Google API as error messages name it: title, service to enable, role to ask for."""

    title: str
    service: str
    role: str
    endpoint_var: str
    not_found_hint: str = "check --project and --region (and the job id)"
    quota_hint: str = "or ask for fewer or smaller machines, or another --region"


VERTEX = Api(
    "Vertex AI",
    "aiplatform.googleapis.com",
    "the Vertex AI User role (roles/aiplatform.user)",
    "TFC_VERTEX_ENDPOINT",
)


LOGGING = Api(
    "Cloud Logging",
    "logging.googleapis.com",
    "the Logs Viewer role (roles/logging.viewer)",
    "TFC_LOGGING_ENDPOINT",
)


class Patience(Protocol):
    """How long :func:`call` keeps retrying (``VertexSettings``, Cloud Build's settings)."""

    @property
    def retry_total_s(self) -> float: ...  # all tries of one call

    @property
    def backoff_s(self) -> float: ...  # first wait; doubles up to 30 s


class QuotaError(BackendError):
    """Vertex AI refused the job for lack of quota (retrying does not help)."""

    http_status = 429


class DailyQuotaError(BackendError):
    """A daily quota is used up: retrying before it resets (midnight Pacific time) cannot help."""

    http_status = 429


class TransientError(BackendError):
    """An answer worth retrying (a per-minute rate limit, 5xx): ``retry_after`` is the wait the
    server asked for, None when it asked for none."""

    http_status = 503

    def __init__(self, message: str, hint: str = "", *, retry_after: float | None = None):
        super().__init__(message, hint)
        self.retry_after = retry_after


def is_loopback(endpoint: str) -> bool:
    """True for ``http://127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT`` ..."""
    host = urlsplit(endpoint if "//" in endpoint else f"//{endpoint}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def credentials(endpoint: str) -> Any:
    """Anonymous credentials for a loopback endpoint, else application-default ones."""
    if is_loopback(endpoint):
        from google.auth.credentials import AnonymousCredentials

        return AnonymousCredentials()
    import google.auth
    import google.auth.exceptions

    try:
        creds, _ = google.auth.default(scopes=SCOPES)
    except google.auth.exceptions.DefaultCredentialsError:
        raise BackendError("no Google Cloud credentials were found", AUTH_HINT) from None
    return creds


def base_url(endpoint: str) -> str:
    """``host:port`` -> ``https://host:port`` (``http://`` on loopback); URLs stay."""
    if "//" in endpoint:
        return endpoint.rstrip("/")
    scheme = "http" if is_loopback(endpoint) else "https"
    return f"{scheme}://{endpoint.rstrip('/')}"


def authorized_session(endpoint: str) -> Any:
    """A ``requests`` session authorized for ``endpoint`` (anonymous on loopback); the caller
    checks first that google-auth is installed."""
    from google.auth.transport.requests import AuthorizedSession

    return AuthorizedSession(credentials(endpoint))


def checked(reply: Any, ok: tuple[int, ...] = (200,)) -> Any:
    """The reply, or the Google API error it carries: the exception class the client libraries
    raise over REST, so :func:`explain` reads both alike."""
    if reply.status_code in ok:
        return reply
    from google.api_core import exceptions as gexc

    raise gexc.from_http_response(reply)


# ------------------------------------------------------------------------------- errors
def _field(exc: Any) -> tuple[str, str]:
    """The field at fault and its problem, from a 400's details or Vertex's message."""
    for detail in getattr(exc, "details", None) or []:
        if isinstance(detail, dict):
            for violation in detail.get("fieldViolations", []):
                return violation.get("field", ""), violation.get("description", "")
    text = str(getattr(exc, "message", exc))
    m = re.search(r"Field: ([\w.\[\]'\"-]+); Message: ([^\t]+)", text)
    if m:
        return m.group(1), m.group(2).strip()
    m = re.search(r"at '([\w.\[\]]+)'", text)
    return (m.group(1) if m else ""), _message(exc)


def _message(exc: Any) -> str:
    """The server's own words, without the method and URL the client puts first."""
    text = str(getattr(exc, "message", None) or exc)
    text = re.sub(r"^(GET|POST|DELETE|PATCH|PUT) \S+: ", "", text)
    return " ".join(text.split())[:400]


def _reason(exc: Any) -> str:
    reason = getattr(exc, "reason", None) or ""
    for detail in getattr(exc, "details", None) or []:
        if isinstance(detail, dict) and detail.get("reason"):
            reason = reason or detail["reason"]
    return str(reason)


def _flag_for(field: str) -> str:
    for key, flag in _FLAGS.items():
        if key in field:
            return f" ({flag})"
    return ""


def explain(
    exc: BaseException, *, project: str, region: str, what: str, api: Api = VERTEX
) -> tuple[bool, Exception]:
    """``(transient, error)``: whether to retry, and the one-line error to raise otherwise.

    ``what`` names the call ("creating the job") for the message; ``api`` the API called.
    """
    if isinstance(exc, BackendError):
        return False, exc
    import requests
    from google.api_core import exceptions as gexc
    from google.auth import exceptions as auth_exc

    where = f"project {project}, region {region}"
    if isinstance(exc, requests.exceptions.Timeout | gexc.DeadlineExceeded):
        return True, BackendError(
            f"{api.title} did not answer in time while {what}",
            "try again later; check your network",
        )
    if isinstance(exc, requests.exceptions.ConnectionError | auth_exc.TransportError):
        return True, BackendError(
            f"could not reach Google Cloud while {what}: {_message(exc)}",
            f"check your network (and {api.endpoint_var} if set)",
        )
    if isinstance(exc, auth_exc.GoogleAuthError):  # refresh failed, no credentials ...
        return False, BackendError(f"Google Cloud credentials failed: {_message(exc)}", AUTH_HINT)
    if not isinstance(exc, gexc.GoogleAPICallError):
        return False, BackendError(
            f"{what} failed: {type(exc).__name__}: {_message(exc)}",
            "see the job's logs/supervisor.log; report it if it persists",
        )
    code, text = getattr(exc, "code", None), _message(exc)
    refused = refusal(exc)
    if refused is not None:
        return _refused(refused, text, project=project, where=where, api=api)
    if isinstance(exc, gexc.Unauthorized):  # 401 (Unauthenticated over gRPC)
        return False, BackendError(f"{api.title} refused the credentials: {text}", AUTH_HINT)
    if isinstance(exc, gexc.Forbidden):  # 403 (PermissionDenied over gRPC)
        return False, _forbidden(exc, text, project=project, where=where, api=api)
    if code in (500, 502, 503, 504) or isinstance(exc, gexc.ServerError):
        return True, TransientError(
            f"{api.title} is unavailable ({code}): {text}",
            "try again later (https://status.cloud.google.com)",
            retry_after=retry_after(exc),
        )
    if isinstance(exc, gexc.NotFound):
        return False, BackendError(f"not found in {where}: {text}", api.not_found_hint)
    if isinstance(exc, gexc.ClientError):  # 400: INVALID_ARGUMENT, FAILED_PRECONDITION ...
        field, problem = _field(exc)
        if field:
            return False, BackendError(
                f"{api.title} rejected {field}: {problem}",
                f"fix {field}{_flag_for(field)} and launch again",
                field=field,
            )
        return False, BackendError(
            f"{api.title} rejected the request: {text}",
            "fix the job settings it names and launch again",
        )
    return False, BackendError(f"{what} failed ({code}): {text}", "try again later")


def _forbidden(exc: Any, text: str, *, project: str, where: str, api: Api) -> BackendError:
    """A 403's one-line error: the API to enable, or the role that holds the permission refused
    (:mod:`.roles`; the API's own role when Google named none)."""
    if _reason(exc) == "SERVICE_DISABLED" or re.search(r"has not been used|is disabled", text):
        return BackendError(
            f"the {api.title} API is not enabled in project {project}",
            f"run `gcloud services enable {api.service} --project {project}` "
            "(or enable it in the console), wait a minute, then launch again",
        )
    role = roles.role_for(roles.permission_of(exc, text))
    if role is None:
        ask = f"ask for {api.role} in project {project}"
    elif role.on == "project":
        ask = f"ask for {role.words()} in project {project}"
    else:
        ask = f"ask for {role.words()} on the {role.on} (or in project {project})"
    return BackendError(
        f"permission denied in {where}: {text}",
        f"{ask}, or use --project with a project you can use",
    )


def _resource_hint(refused: Refusal, api: Api) -> str:
    """What else than more quota: fewer GPUs for a GPU quota, else the API's words."""
    if re.search(r"gpus?$|_gpu_", refused.metric):
        return "or ask for fewer GPUs (--gpus, --workers), another --gpu-type, or another --region"
    return api.quota_hint


def _refused(
    refused: Refusal, text: str, *, project: str, where: str, api: Api
) -> tuple[bool, Exception]:
    """A quota refusal's one-line error: a rate limit is retried; a daily or resource quota
    is not."""
    title = refused.service_title(api.title)
    quota = refused.quota_words()
    if refused.kind is Kind.DAILY:
        resets = pacific_midnight().astimezone().strftime("%H:%M")
        return False, DailyQuotaError(
            f"{title}'s daily quota is used up in project {project}"
            + (f" ({quota})" if quota else ""),
            f"wait until it resets at midnight Pacific time ({resets} here), or request a higher "
            f"limit ({refused.quotas_url(project)})",
        )
    if refused.kind is Kind.RESOURCE:
        return False, QuotaError(
            f"{title} quota exceeded in {where}: {text}",
            f"request more quota in the console ({refused.quotas_url(project)}), "
            + _resource_hint(refused, api),
        )
    return True, TransientError(
        f"{title} is rate-limiting requests" + (f" ({quota})" if quota else "") + f": {text}",
        "wait a minute and try again; if it persists, request a higher limit "
        f"({refused.quotas_url(project)})",
        retry_after=refused.retry_after,
    )


def pause(error: BaseException, wait: float) -> float:
    """How long to wait before the next try: ``wait`` (the backoff) with up to 20% of jitter,
    and at least what the server asked for."""
    asked = getattr(error, "retry_after", None) or 0.0
    return max(wait * (1.0 + 0.2 * random.random()), float(asked))


@dataclass
class RetryCount:
    """How many times calls were retried (reported in the job record)."""

    retries: int = 0


def call(
    fn: Callable[[], T],
    *,
    what: str,
    project: str,
    region: str,
    settings: Patience,
    counter: RetryCount | None = None,
    before_retry: Callable[[], T | None] | None = None,
    total_s: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    api: Api = VERTEX,
) -> T:
    """Run ``fn``; retry transient errors with exponential backoff within ``total_s``.

    ``before_retry`` runs before each retry and may return a result that ends the retries (the
    create call uses it to adopt a job that a timed-out request created after all).

    Raises:
        BackendError: a permanent error, or the last transient one when time ran out.
    """
    budget = settings.retry_total_s if total_s is None else total_s
    deadline = time.monotonic() + budget
    wait = settings.backoff_s
    tries = 0
    while True:
        tries += 1
        try:
            return fn()
        except Exception as exc:
            transient, error = explain(exc, project=project, region=region, what=what, api=api)
            if not transient:
                raise error from None
            delay = pause(error, wait)
            if time.monotonic() + delay > deadline:
                assert isinstance(error, BackendError)
                raise type(error)(
                    f"{error.message} (gave up after {tries} tries in {budget:g} s)", error.hint
                ) from None
        sleep(delay)
        wait = min(wait * 2, 30.0)
        if counter is not None:
            counter.retries += 1
        if before_retry is not None:
            adopted = _quietly(before_retry)
            if adopted is not None:
                return adopted


def _quietly(fn: Callable[[], T | None]) -> T | None:
    try:
        return fn()
    except Exception:  # the check before a retry is best effort; the retry itself reports
        return None
