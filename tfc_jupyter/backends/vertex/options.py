"""Vertex AI's own options: flags only a Vertex AI job takes, declared here and nowhere else.

Each field is one flag (:func:`tfc_jupyter.job.options.option`): the magic, the CLI and its
help, ``run()``, the jobs API and its schema, the form and the panel take it from here; another
backend refuses it (it would mean nothing there). :meth:`VertexOptions.google` puts the ones
planning and prices read into the spec's Google Cloud part (``JobSpec.google``, checked there
as Vertex AI checks them, :mod:`.scheduling`); :mod:`.request` reads the others from the plan's
options (:func:`.request.own_options`). The Google Cloud settings other backends use too (region,
project, service account, Spot, network, TensorBoard, the route) are portable options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import SpecError
from ...job.options import option
from ...job.spec import parse_duration


@dataclass(frozen=True)
class VertexOptions:
    """The options of a Vertex AI job its backend declares (defaults: Vertex AI's own)."""

    flex_start: str | None = option(
        None,
        "Vertex AI flex-start (Dynamic Workload Scheduler): the job waits for its L4, A100 or "
        "H100 GPUs, at most MAX_WAIT (default 1d; 0: no limit).",
        metavar="MAX_WAIT",
        const="",
    )
    restart_on_worker_restart: bool = option(
        False, "Vertex AI: restart the whole job when a worker restarts."
    )
    disable_retries: bool = option(
        False,
        "Vertex AI: never retry the job after an internal error once it has started (Vertex AI "
        "retries it by default).",
    )
    reservation: str | None = option(
        None,
        "Vertex AI: run on reserved capacity: any, or projects/P/zones/Z/reservations/NAME.",
        metavar="RESERVATION",
    )
    persistent_resource: str | None = option(
        None, "Vertex AI: run on this persistent resource (its id).", metavar="ID"
    )
    boot_disk_type: str | None = option(
        None,
        "Vertex AI boot disk: pd-ssd (default), pd-standard, hyperdisk-balanced.",
        metavar="TYPE",
    )
    boot_disk_size: int | None = option(
        None, "Vertex AI boot disk size in GB (100 to 64000; default 100).", metavar="GB"
    )
    web_access: bool = option(
        False, "Vertex AI: an interactive shell into the running job, from the console."
    )
    psc_network_attachment: str | None = option(
        None,
        "Vertex AI: reach a private network through this Private Service Connect interface "
        "(a network attachment in the job's region; Google's recommended path).",
        metavar="ATTACHMENT",
    )

    def google(self, *, spot: bool) -> dict[str, Any]:
        """The fields of ``JobSpec.google`` these options set (``spot``: the portable
        ``--spot``, which flex-start excludes)."""
        if spot and self.flex_start is not None:
            raise SpecError(
                "--spot and --flex-start together: a job is scheduled one way",
                "drop one of them",
                field="scheduling",
            )
        flex = self.flex_start is not None
        return {
            "scheduling": "spot" if spot else "flex_start" if flex else "standard",
            "max_wait_s": _max_wait(self.flex_start),
            "restart_on_worker_restart": self.restart_on_worker_restart,
            "reservation": self.reservation,
            "persistent_resource": self.persistent_resource,
            "boot_disk_type": self.boot_disk_type or "pd-ssd",
            "boot_disk_gb": self.boot_disk_size if self.boot_disk_size is not None else 100,
            "web_access": self.web_access,
            "psc_network_attachment": self.psc_network_attachment,
        }


def _max_wait(text: str | None) -> int | None:
    """``--flex-start MAX_WAIT`` in seconds: None for Vertex AI's default, 0 for no limit."""
    if text is None or not text.strip():
        return None
    if text.strip() == "0":
        return 0
    try:
        return parse_duration(text)
    except SpecError:
        raise SpecError(
            f"--flex-start {text!r} is not a maximum wait",
            "write it like 2h or 1d (0: no limit), at most 30 days",
            field="max_wait_s",
        ) from None


VERTEX_DEFAULTS = VertexOptions()
"""Every option at its default (a job that sets none of them)."""
