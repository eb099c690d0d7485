"""A job's Google Cloud part: ``JobSpec.google``, typed.

Where the job runs in Google Cloud (region, project, service account, network, TensorBoard) and
how (scheduling, reservation, persistent resource, boot disk, web access). Each value's form is
checked here on its own; a setting only a backend with a trait takes (the ``scheduling`` fields,
Vertex AI's) is refused on another (:meth:`GoogleTarget.check_backend`); the backend that takes
them checks them against the job's machines as its service would (Vertex AI's
``backends/vertex/scheduling.py``, through :func:`tfc_jupyter.job.spec.check_target`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from .. import registry
from ..errors import Fix, SpecError
from ..registry import Traits
from .parts import SpecPart

SCHEDULING = ("standard", "spot", "flex_start")
_SERVICE_ACCOUNT = re.compile(
    r"^(?:[a-z][a-z0-9-]{4,28}[a-z0-9]@(?:[a-z0-9.:-]+)\.iam\.gserviceaccount\.com"
    r"|\d+-compute@developer\.gserviceaccount\.com"
    r"|[a-z0-9.:-]+@appspot\.gserviceaccount\.com)$"
)
_REGION = re.compile(r"^[a-z]+(?:-[a-z]+)+\d{1,2}$")
_NETWORK = re.compile(r"projects/\d+/global/networks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_TENSORBOARD = re.compile(r"projects/[^/\s]+/locations/[a-z0-9-]+/tensorboards/\d+")
_PROJECT = re.compile(
    r"^(?:(?:[a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]|[1-9]\d{5,19})$"
)  # a project id (domain-scoped too), or a project number, as Vertex AI's resource names take


def _scheduled(flag: str, default: Any) -> Any:
    """A field only a backend with the ``scheduling`` trait takes (Vertex AI's), set by
    ``flag``: on another backend it would mean nothing, and is refused."""
    return field(default=default, metadata={"trait": "scheduling", "flag": flag})


@dataclass(frozen=True)
class GoogleTarget(SpecPart):
    """A job's Vertex AI settings (defaults: what Vertex AI does when the request leaves them
    out). Construction checks each value's form; a bad one raises :class:`SpecError`."""

    KEY: ClassVar[str] = "google"

    region: str = "us-central1"
    project: str | None = None
    service_account: str | None = None
    scheduling: str = "standard"  # or spot, flex_start
    # flex-start: how long to wait for the machines (0: no limit)
    max_wait_s: int | None = _scheduled("--flex-start", None)
    restart_on_worker_restart: bool = _scheduled("--restart-on-worker-restart", False)
    # "any", or projects/P/zones/Z/reservations/NAME
    reservation: str | None = _scheduled("--reservation", None)
    persistent_resource: str | None = _scheduled("--persistent-resource", None)
    boot_disk_type: str = _scheduled("--boot-disk-type", "pd-ssd")
    boot_disk_gb: int = _scheduled("--boot-disk-size", 100)
    web_access: bool = _scheduled("--web-access", False)
    tensorboard: str | None = None
    network: str | None = None
    # a Private Service Connect interface
    psc_network_attachment: str | None = _scheduled("--psc-network-attachment", None)

    def __post_init__(self) -> None:
        if self.scheduling not in SCHEDULING:
            raise SpecError(
                f"unknown scheduling {self.scheduling!r}",
                "use standard, spot or flex_start",
                field="scheduling",
            )
        if self.service_account and not _SERVICE_ACCOUNT.fullmatch(self.service_account):
            raise SpecError(
                f"service account {self.service_account!r} is not a service account email",
                "use NAME@PROJECT.iam.gserviceaccount.com",
                field="service_account",
            )
        if not _REGION.fullmatch(self.region):
            raise SpecError(
                f"region {self.region!r} is not a Google Cloud region",
                "use a region such as us-central1 or europe-west4",
                field="region",
            )
        if self.project is not None and not _PROJECT.fullmatch(self.project):
            raise SpecError(
                f"project {self.project!r} is not a Google Cloud project id",
                "use the project id (6-30 of a-z 0-9 -, starting with a letter) or its number, "
                "not its name",
                field="project",
            )
        if self.network is not None and not _NETWORK.fullmatch(self.network):
            raise SpecError(  # Vertex AI's CustomJobSpec.network (v1 REST reference, 2026-11)
                f"--network {self.network!r} is not a network's resource name",
                "write projects/PROJECT_NUMBER/global/networks/"
                f"{self.network.rsplit('/', 1)[-1]} (the project's number, not its id)",
                field="network",
            )
        if self.tensorboard is not None and not _TENSORBOARD.fullmatch(self.tensorboard):
            raise SpecError(
                f"--tensorboard {self.tensorboard!r} is not a TensorBoard instance's name",
                "write projects/PROJECT/locations/REGION/tensorboards/ID",
                field="tensorboard",
            )

    def check_backend(self, backend: str, traits: Traits) -> None:
        """Refuse a setting the job's backend does not take (``traits``): it would silently mean
        nothing there. The first one given names the flag, and the backends that take it."""
        for f in fields(self):
            trait = f.metadata.get("trait")
            if trait is None or getattr(traits, trait):
                continue
            given = getattr(self, f.name) != f.default
            if f.name == "max_wait_s" and self.scheduling == "flex_start":
                given = True  # --flex-start, with a maximum wait or not
            if given:
                flag = f.metadata["flag"]
                raise SpecError(
                    f"{flag} is a {registry.label_of(trait)} setting; on the {backend} backend "
                    "it would mean nothing",
                    (Fix.drop(flag[2:].replace("-", "_")), *registry.fixes_instead(trait)),
                    field="scheduling"
                    if f.name == "max_wait_s" and self.max_wait_s is None
                    else f.name,
                )
