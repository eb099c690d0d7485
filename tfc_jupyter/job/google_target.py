"""What only Vertex AI reads of a job, its Google Cloud part: ``JobSpec.google``, typed.

Where the job runs in Google Cloud (region, project, service account, network, TensorBoard) and
how (scheduling, reservation, persistent resource, boot disk, web access). Each value is checked
here on its own; :mod:`.scheduling` checks them against the job's machines and backend (a
setting here on another backend would mean nothing, and is refused there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ..errors import SpecError
from .parts import SpecPart

SCHEDULING = ("standard", "spot", "flex_start")
_SERVICE_ACCOUNT = re.compile(
    r"^(?:[a-z][a-z0-9-]{4,28}[a-z0-9]@(?:[a-z0-9.:-]+)\.iam\.gserviceaccount\.com"
    r"|\d+-compute@developer\.gserviceaccount\.com"
    r"|[a-z0-9.:-]+@appspot\.gserviceaccount\.com)$"
)
_REGION = re.compile(r"^[a-z]+(?:-[a-z]+)+\d{1,2}$")
_PROJECT = re.compile(
    r"^(?:(?:[a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]|[1-9]\d{5,19})$"
)  # a project id (domain-scoped too), or a project number, as Vertex AI's resource names take


@dataclass(frozen=True)
class GoogleTarget(SpecPart):
    """A job's Vertex AI settings (defaults: what Vertex AI does when the request leaves them
    out). Construction checks each value's form; a bad one raises :class:`SpecError`."""

    KEY: ClassVar[str] = "google"

    region: str = "us-central1"
    project: str | None = None
    service_account: str | None = None
    scheduling: str = "standard"  # or spot, flex_start
    max_wait_s: int | None = None  # flex-start: how long to wait for the machines (0: no limit)
    restart_on_worker_restart: bool = False
    reservation: str | None = None  # "any", or projects/P/zones/Z/reservations/NAME
    persistent_resource: str | None = None
    boot_disk_type: str = "pd-ssd"
    boot_disk_gb: int = 100
    web_access: bool = False
    tensorboard: str | None = None
    network: str | None = None
    psc_network_attachment: str | None = None  # Private Service Connect interface

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
