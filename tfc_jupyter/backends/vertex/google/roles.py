"""Which role holds a permission Google refused: one table, permission prefix -> role.

Google names the permission it refused, in one of its forms (the forms :func:`permission_of`
reads):

* an ``ErrorInfo`` with reason ``IAM_PERMISSION_DENIED`` whose metadata holds ``permission``
  (Vertex AI, Cloud Logging: "Permission 'logging.logEntries.list' denied on resource (or it may
  not exist)." with domain ``iam.googleapis.com``, kubeflow/pipelines pull request 12591);
* the words ``Permission 'P' denied`` (Vertex AI, Cloud Logging, Cloud Storage's newer
  messages) or ``Permission "P" denied`` (Artifact Registry's ``denied: Permission
  "artifactregistry.repositories.uploadArtifacts" denied on resource "projects/..."``,
  GoogleCloudPlatform/cymbal-superstore pull request 4);
* Cloud Storage's ``X does not have storage.objects.create access to ...`` (its JSON API's
  ``errors[].reason`` ``forbidden``, googleapis/google-cloud-php issue 1040).

Cloud Build says only "The caller does not have permission": no permission, so the API's own
role is named (:class:`tfc_jupyter.google.gcloud.Api`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Role:
    """A predefined role: its title, its id, what it is granted on, where Google lists it."""

    title: str
    id: str
    on: str  # "project", "service account", "bucket", "repository"
    source: str

    def words(self) -> str:
        """``the Logs Viewer role (roles/logging.viewer)``."""
        return f"the {self.title} role ({self.id})"


_VERTEX = "https://cloud.google.com/vertex-ai/docs/general/access-control"
_LOGGING = "https://cloud.google.com/logging/docs/access-control"
_STORAGE = "https://cloud.google.com/storage/docs/access-control/iam-roles"
_BUILD = "https://cloud.google.com/build/docs/iam-roles-permissions"
_REGISTRY = "https://cloud.google.com/artifact-registry/docs/access-control"
_IAM = "https://cloud.google.com/iam/docs/service-account-permissions"
_USAGE = "https://cloud.google.com/service-usage/docs/access-control"

ROLES: dict[str, Role] = {  # the longest prefix of the permission wins
    "aiplatform.": Role("Vertex AI User", "roles/aiplatform.user", "project", _VERTEX),
    "logging.": Role("Logs Viewer", "roles/logging.viewer", "project", _LOGGING),
    "storage.objects.get": Role(
        "Storage Object Viewer", "roles/storage.objectViewer", "bucket", _STORAGE
    ),
    "storage.objects.list": Role(
        "Storage Object Viewer", "roles/storage.objectViewer", "bucket", _STORAGE
    ),
    "storage.objects.": Role("Storage Object User", "roles/storage.objectUser", "bucket", _STORAGE),
    "storage.buckets.": Role("Storage Admin", "roles/storage.admin", "project", _STORAGE),
    "cloudbuild.builds.": Role(
        "Cloud Build Editor", "roles/cloudbuild.builds.editor", "project", _BUILD
    ),
    "artifactregistry.repositories.downloadArtifacts": Role(
        "Artifact Registry Reader", "roles/artifactregistry.reader", "repository", _REGISTRY
    ),
    "artifactregistry.repositories.create": Role(
        "Artifact Registry Administrator", "roles/artifactregistry.admin", "project", _REGISTRY
    ),
    "artifactregistry.": Role(
        "Artifact Registry Writer", "roles/artifactregistry.writer", "repository", _REGISTRY
    ),
    "iam.serviceAccounts.actAs": Role(
        "Service Account User", "roles/iam.serviceAccountUser", "service account", _IAM
    ),
    "serviceusage.services.use": Role(
        "Service Usage Consumer", "roles/serviceusage.serviceUsageConsumer", "project", _USAGE
    ),
}
"""Permission prefix -> the predefined role with the least else that holds it (each from the
service's access-control page, read 2026-11-29)."""

_NAMED = re.compile(r"""Permission ['"]([a-z][\w]*(?:\.[\w]+)+)['"] denied""")
_STORAGE_WORDS = re.compile(r"does not have ([a-z]+\.[a-z]+\.[a-zA-Z]+) access")
_ANY = re.compile(r"""(?:permission|Permission) ['"]?([a-z][a-z]+\.[a-zA-Z]+\.[a-zA-Z]+)['"]?""")


def permission_of(exc: Any, text: str = "") -> str:
    """The permission a refusal names (``logging.logEntries.list``), ``""`` when none."""
    for detail in getattr(exc, "details", None) or []:
        if isinstance(detail, dict) and detail.get("reason") == "IAM_PERMISSION_DENIED":
            permission = (detail.get("metadata") or {}).get("permission")
            if permission:
                return str(permission)
    words = text or str(getattr(exc, "message", None) or exc)
    for pattern in (_NAMED, _STORAGE_WORDS, _ANY):
        m = pattern.search(words)
        if m:
            return m.group(1)
    return ""


def role_for(permission: str) -> Role | None:
    """The role holding ``permission`` (the table's longest prefix of it), None when the table
    has none."""
    found = [prefix for prefix in ROLES if permission.startswith(prefix)]
    return ROLES[max(found, key=len)] if found else None
