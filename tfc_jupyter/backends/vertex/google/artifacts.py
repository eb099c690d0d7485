"""Artifact Registry and Container Registry, as the image builder meets them
(:data:`tfc_jupyter.registry.IMAGE_REGISTRIES`): the engine's login for a push or pull, and
what to do when a push is refused.

Google's client libraries are imported only when a login is asked for.
"""

from __future__ import annotations

from ....errors import BackendError, MissingDependency
from ....registry import IMAGE_REGISTRIES
from . import roles

AR_HOSTS = tuple(end for end, module in IMAGE_REGISTRIES.items() if module == __name__)
"""Registries that take Google credentials (Artifact Registry, Container Registry): the hosts
:data:`tfc_jupyter.registry.IMAGE_REGISTRIES` gives to this module, one list for both."""


def login(uri: str) -> dict[str, str] | None:
    """Push credentials: an OAuth token from application-default credentials for Artifact
    Registry and gcr.io; None elsewhere (the engine's own login, ``~/.docker/config.json``).

    The token goes to the engine with the push request only: never into a context or an image.

    Raises:
        MissingDependency: google-auth is not installed.
        BackendError: no credentials (the fix: log in, or another registry).
    """
    host = uri.split("/", 1)[0]
    if not host.endswith(AR_HOSTS):
        return None
    try:
        import google.auth
        import google.auth.exceptions
        from google.auth.transport.requests import Request
    except ImportError:
        raise MissingDependency("google-auth", "vertex", f"pushing to {host}") from None
    try:
        credentials, _ = google.auth.default(
            scopes=["https://www.googleapis.com/auth/cloud-platform"]
        )
        credentials.refresh(Request())
    except google.auth.exceptions.GoogleAuthError as exc:
        raise BackendError(
            f"cannot get credentials to push to {host}: {' '.join(str(exc).split())[:240]}",
            "run `gcloud auth application-default login`, or set TFC_REGISTRY to a registry "
            "you are logged in to",
        ) from None
    return {"username": "oauth2accesstoken", "password": str(credentials.token)}


def push_hint(error: str) -> str | None:
    """What to do when a push was refused: the role that holds the permission Artifact Registry
    named (``denied: Permission "artifactregistry.repositories.uploadArtifacts" denied on
    resource ...``); None when it named none."""
    role = roles.role_for(roles.permission_of(None, error))
    if role is None:
        return None
    return f"ask for {role.words()} on the {role.on}, or set TFC_REGISTRY to one you may push to"
