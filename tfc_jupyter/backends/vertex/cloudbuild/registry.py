"""Whether the registry has the image already (``HEAD /v2/<name>/manifests/<tag>``), with an
OAuth token for Artifact Registry and gcr.io, or the token a registry's challenge hands out."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from ....errors import BackendError
from ....image.progress import Progress, report
from ..google import artifacts, gcloud, roles
from ..google.gcloud import Api
from . import client
from .settings import CloudBuildSettings, base_url

REGISTRY = Api(
    "the image registry",
    "artifactregistry.googleapis.com",
    "the Artifact Registry Reader role (roles/artifactregistry.reader)",
    "TFC_REGISTRY",
)
READ_PERMISSION = "artifactregistry.repositories.downloadArtifacts"
"""What a manifest's lookup needs (Artifact Registry's access control)."""
_MANIFESTS = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)


def in_registry(uri: str, settings: CloudBuildSettings, *, project: str = "") -> bool:
    """True when the registry has ``uri`` (False when it has not, or cannot say).

    Artifact Registry and gcr.io get the application-default OAuth token; any registry's token
    challenge (``WWW-Authenticate: Bearer realm=...``) is answered, anonymously elsewhere.
    """
    import requests

    host, _, rest = uri.partition("/")
    name, _, tag = rest.rpartition(":")
    if not name or "/" in tag:
        return False
    url = f"{base_url(host)}/v2/{name}/manifests/{tag}"
    try:
        auth = artifacts.login(uri)
    except BackendError:  # Cloud Build pushes with its own account: building is still possible
        auth = None
    token = auth["password"] if auth else None

    def head() -> bool:
        headers = {"Accept": ", ".join(_MANIFESTS)}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        reply = requests.head(url, headers=headers, timeout=settings.timeout_s)
        if reply.status_code == 401:
            bearer = _registry_token(reply, name, token, settings.timeout_s)
            if bearer:
                headers["Authorization"] = f"Bearer {bearer}"
                reply = requests.head(url, headers=headers, timeout=settings.timeout_s)
        if reply.status_code == 429 or reply.status_code >= 500:
            client.checked(reply)
        if reply.status_code == 403:  # a HEAD's refusal has no body: the reader's role
            role = roles.role_for(READ_PERMISSION)
            report(
                Progress(
                    "context",
                    f"the registry refused to say whether it has {uri} (403): building it; to "
                    f"reuse built images, ask for {role.words() if role else REGISTRY.role} on "
                    "the repository",
                )
            )
        return reply.status_code == 200

    try:
        return client.call(
            settings,
            project,
            f"looking up {uri}",
            head,
            REGISTRY,
            total_s=min(settings.retry_total_s, 30.0),  # a lookup: building is the fallback
        )
    except BackendError as exc:
        report(Progress("context", f"cannot tell whether the registry has {uri}: {exc.message}"))
        return False


def _registry_token(reply: Any, name: str, token: str | None, timeout: float) -> str | None:
    """A registry token from the challenge's realm (docker's token flow), or None."""
    import requests

    challenge = reply.headers.get("WWW-Authenticate", "")
    if not challenge.lower().startswith("bearer "):
        return None
    params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    realm = params.pop("realm", "")
    parts = urlsplit(realm)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    params.setdefault("scope", f"repository:{name}:pull")
    secure = parts.scheme == "https" or gcloud.is_loopback(realm)
    auth = ("oauth2accesstoken", token) if token and secure else None  # never in clear text
    try:
        answer = requests.get(realm, params=params, auth=auth, timeout=timeout)
        body = answer.json() if answer.status_code == 200 else {}
    except (requests.RequestException, ValueError):
        return None
    value = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    return str(value) if value else None
