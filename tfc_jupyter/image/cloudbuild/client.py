"""What every Cloud Build, Cloud Storage and registry request shares: an authorized session, the
reply's error as a Google API error, and retried calls (:func:`gcloud.call`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ... import gcloud
from ...gcloud import Api
from .settings import CloudBuildSettings, require

T = TypeVar("T")


def session(endpoint: str) -> Any:
    """An ``AuthorizedSession`` for ``endpoint`` (anonymous on loopback)."""
    require()
    from google.auth.transport.requests import AuthorizedSession

    return AuthorizedSession(gcloud.credentials(endpoint))


def call(
    settings: CloudBuildSettings, project: str, what: str, fn: Callable[[], T], api: Api, **kw: Any
) -> T:
    """:func:`gcloud.call` with Cloud Build's patience and location."""
    return gcloud.call(
        fn,
        what=what,
        project=project,
        region=settings.location or "global",
        settings=settings,
        api=api,
        **kw,
    )


def checked(reply: Any, ok: tuple[int, ...] = (200,)) -> Any:
    """The reply, or the Google API error it carries (for :func:`gcloud.explain`)."""
    if reply.status_code in ok:
        return reply
    from google.api_core import exceptions as gexc

    raise gexc.from_http_response(reply)


def json_body(reply: Any, *, missing: bool = False) -> Any:
    """The reply's JSON body (None for a 404 when ``missing`` is allowed)."""
    if missing and reply.status_code == 404:
        return None
    return checked(reply).json()
