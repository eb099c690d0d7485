"""What every Cloud Build, Cloud Storage and registry request shares: an authorized session, the
reply's error as a Google API error, and retried calls (:func:`gcloud.call`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..google import gcloud
from ..google.gcloud import Api, checked
from .settings import CloudBuildSettings, require

T = TypeVar("T")


def session(endpoint: str) -> Any:
    """An ``AuthorizedSession`` for ``endpoint`` (anonymous on loopback)."""
    require()
    return gcloud.authorized_session(endpoint)


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


def json_body(reply: Any, *, missing: bool = False) -> Any:
    """The reply's JSON body (None for a 404 when ``missing`` is allowed)."""
    if missing and reply.status_code == 404:
        return None
    return checked(reply).json()
