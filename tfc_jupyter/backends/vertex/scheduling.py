"""Where and when a Vertex AI job runs: flex-start, restarts, reservations, persistent
resources, boot disks, private networks, each checked as Vertex AI checks it against the job's
machines (:func:`check`, run on every spec of a Vertex AI job, a dry run's too), and the request
fields they make (:func:`disk_spec`, :func:`reservation_affinity`, read by :mod:`.request`).

The settings are Vertex AI's flags (:mod:`.options`), kept in the spec's Google Cloud part
(``JobSpec.google``), which refuses them on a backend that does not take them.
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import Fix, SpecError
from ...job import vertex_rules

JobSpec = Any  # a tfc_jupyter.job.spec.JobSpec (whose validation calls check)

FLEX_START_GPUS = (
    "NVIDIA_L4",
    "NVIDIA_TESLA_A100",
    "NVIDIA_A100_80GB",
    "NVIDIA_H100_80GB",
    "NVIDIA_H100_MEGA_80GB",
    "NVIDIA_H200_141GB",
    "NVIDIA_B200",
)
"""Accelerators Vertex AI's Dynamic Workload Scheduler (flex-start) takes: L4, A100, H100, H200
and B200, as its guide lists them (the H100 Mega is an H100)."""
FLEX_START_MAX_TIMEOUT_S = 7 * 86400
BOOT_DISK_TYPES = ("pd-ssd", "pd-standard", "hyperdisk-balanced")
BOOT_DISK_GB = (100, 64000)
HYPERDISK_ONLY = ("a3-ultragpu-", "a4-highgpu-", "n4-", "g4-")
"""Machines that boot from Hyperdisk only: Vertex AI's DiskSpec (v1 reference, updated
2026-04-01: "for A3U machines, the default value is hyperdisk-balanced") and Compute Engine's A4
(B200), N4 and G4 machine series, which take Hyperdisk volumes only (Compute Engine's machine
series pages, "Supported disk types", read 2026-11-26)."""
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
_RESERVATION = re.compile(
    r"projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/zones/[a-z]+-[a-z]+\d+-[a-z]"
    r"/reservations/[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
)

_ROLE_WORDS = {"worker": "workers", "ps": "parameter servers"}


def _pools(spec: JobSpec) -> list[tuple[str, object]]:
    """``(role in words, machine)`` of every pool the job has (``JobSpec.pools``)."""
    return [(_ROLE_WORDS.get(role, role), machine) for role, _, machine in spec.pools()]


def check(spec: JobSpec) -> None:
    """Refuse what Vertex AI would refuse of the job's Google Cloud settings and machines.

    Raises:
        SpecError: with the flag at fault and the fix.
    """
    _check_placement(spec)
    if spec.google.scheduling == "flex_start":
        _check_flex_start(spec)
    if spec.google.max_wait_s is not None and spec.google.scheduling != "flex_start":
        raise SpecError(
            "a maximum wait is flex-start's", "use --flex-start MAX_WAIT", field="max_wait_s"
        )
    if spec.google.reservation is not None:
        if spec.google.scheduling != "standard":
            raise SpecError(
                f"--reservation with {spec.google.scheduling.replace('_', '-')} scheduling: a "
                "reservation is capacity you hold, Spot and flex-start take other capacity",
                "drop --spot / --flex-start, or drop --reservation",
                field="reservation",
            )
        if spec.google.reservation != "any" and not _RESERVATION.fullmatch(spec.google.reservation):
            raise SpecError(
                f"--reservation {spec.google.reservation!r} is not a reservation",
                "write any (any matching reservation), or "
                "projects/PROJECT/zones/ZONE/reservations/NAME",
                field="reservation",
            )
    resource = spec.google.persistent_resource
    if resource is not None and not vertex_rules.PERSISTENT_RESOURCE_ID.fullmatch(resource):
        raise SpecError(
            f"--persistent-resource {resource!r} is not a persistent resource id",
            "use its id: 1-63 of a-z 0-9 -, starting with a letter, not ending with -",
            field="persistent_resource",
        )
    _check_disk(spec)


def _check_placement(spec: JobSpec) -> None:
    """Reservations, persistent resources and private networks, as Vertex AI takes them."""
    if spec.google.reservation is not None and spec.google.persistent_resource is not None:
        raise SpecError(
            "--reservation with --persistent-resource: the job runs on the persistent "
            "resource's machines, which it reserved when it was made",
            Fix.drop("reservation", after=" (or drop --persistent-resource)"),
            field="reservation",
        )
    _check_private_network(spec)


def _check_private_network(spec: JobSpec) -> None:
    """VPC peering (``--network``) or a Private Service Connect interface
    (``--psc-network-attachment``), as Vertex AI takes them (:mod:`vertex_rules`)."""
    attachment = spec.google.psc_network_attachment
    if attachment is not None:
        m = vertex_rules.NETWORK_ATTACHMENT.fullmatch(attachment)
        if m is None:
            raise SpecError(
                f"--psc-network-attachment {attachment!r} is not a network attachment",
                "write its name, or projects/PROJECT/regions/REGION/networkAttachments/NAME",
                field="psc_network_attachment",
            )
        if m.group("region") and m.group("region") != spec.google.region:
            raise SpecError(
                f"network attachment {m.group('name')} is in {m.group('region')}; the job runs in "
                f"{spec.google.region}, and Vertex AI attaches one of the job's region",
                f"use an attachment in {spec.google.region}, or --region {m.group('region')}",
                field="psc_network_attachment",
            )
        if spec.google.network is not None:
            raise SpecError(
                "--network (VPC peering) with --psc-network-attachment: a job reaches a private "
                "network one way",
                Fix.drop(
                    "network", after=" (Private Service Connect is Google's recommended path)"
                ),
                field="network",
            )
    if spec.google.network is None:
        return
    for role, machine in _pools(spec):
        kind = getattr(machine, "machine_type", "")
        if kind in vertex_rules.NO_VPC_PEERING:
            raise SpecError(
                f"--network: Vertex AI does not connect {kind} (the {role}) by VPC peering",
                "use --psc-network-attachment NAME (a Private Service Connect interface) instead",
                field="network",
            )


def _check_flex_start(spec: JobSpec) -> None:
    pools = _pools(spec)
    for role, machine in pools:
        accelerator = getattr(machine, "accelerator_type", None)
        if accelerator not in FLEX_START_GPUS:
            raise SpecError(
                f"flex-start schedules L4, A100, H100, H200 and B200 GPUs; the {role} have "
                f"{accelerator or 'no GPU'}",
                "use --gpu-type L4, A100, H100, H200 or B200 (or a machine with them), or drop "
                "--flex-start",
                field="scheduling",
            )
    if len({getattr(m, "machine_type", None) for _, m in pools}) > 1:
        raise SpecError(
            "flex-start needs the same machine in every pool",
            "drop --worker-machine / --ps-machine (or give them the chief's), or drop --flex-start",
            field="scheduling",
        )
    if spec.timeout_s is not None and spec.timeout_s > FLEX_START_MAX_TIMEOUT_S:
        raise SpecError(
            "a flex-start job runs at most 7 days", "use --timeout 7d or less", field="timeout"
        )


def _check_disk(spec: JobSpec) -> None:
    disk_set = (spec.google.boot_disk_type, spec.google.boot_disk_gb) != ("pd-ssd", 100)
    if disk_set and spec.chief.is_tpu:
        raise SpecError(
            "a TPU host has its own boot disk",
            "drop --boot-disk-type and --boot-disk-size",
            field="boot_disk_gb",
        )
    for role, machine in _pools(spec):
        kind = getattr(machine, "machine_type", "")
        asked = spec.google.boot_disk_type  # the default, pd-ssd, becomes hyperdisk-balanced there
        if kind.startswith(HYPERDISK_ONLY) and asked not in ("pd-ssd", "hyperdisk-balanced"):
            raise SpecError(
                f"--boot-disk-type {asked}: the {role} ({kind}) boot from Hyperdisk only",
                "drop --boot-disk-type (hyperdisk-balanced is used), or write hyperdisk-balanced",
                field="boot_disk_type",
            )
    if spec.google.boot_disk_type not in BOOT_DISK_TYPES:
        raise SpecError(
            f"--boot-disk-type {spec.google.boot_disk_type!r} is not a boot disk type",
            f"use one of {', '.join(BOOT_DISK_TYPES)}",
            field="boot_disk_type",
        )
    low, high = BOOT_DISK_GB
    if not low <= spec.google.boot_disk_gb <= high:
        raise SpecError(
            f"--boot-disk-size {spec.google.boot_disk_gb} is out of range",
            f"use {low} to {high} (GB)",
            field="boot_disk_gb",
        )


DISABLE_RETRIES_URL = (
    "https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec#Scheduling"
)
"""``Scheduling.disableRetries``: "If true, overrides Scheduling.restart_job_on_worker_restart to
false" (the v1 reference and the client libraries' copies of it, read 2026-11-29)."""


def option_notes(spec: JobSpec, asked_disk: str | None, disable_retries: bool) -> list[str]:
    """What the plan says of Vertex AI's options given together (``asked_disk``: the
    ``--boot-disk-type`` given, None when left out; ``disable_retries``: ``--disable-retries``).

    Raises:
        SpecError: ``--boot-disk-type pd-ssd`` given for a machine that boots from Hyperdisk
            only (it became hyperdisk-balanced without a word).
    """
    notes: list[str] = []
    if disable_retries and spec.google.restart_on_worker_restart:
        notes.append(
            "--restart-on-worker-restart does nothing with --disable-retries: Vertex AI turns it "
            "off when retries are disabled; drop one of them"
        )
    hyper = [
        (r, str(getattr(m, "machine_type", ""))) for r, m in _pools(spec) if _hyperdisk_only(m)
    ]
    if hyper and asked_disk == "pd-ssd":
        role, kind = hyper[0]
        raise SpecError(
            f"--boot-disk-type pd-ssd: the {role} ({kind}) boot from Hyperdisk only",
            [Fix.set("boot_disk_type", "hyperdisk-balanced"), Fix.drop("boot_disk_type")],
            field="boot_disk_type",
        )
    if hyper and asked_disk is None:
        kinds = ", ".join(dict.fromkeys(kind for _, kind in hyper))
        notes.append(f"boot disk: hyperdisk-balanced for {kinds} (the only type it boots from)")
    return notes


def _hyperdisk_only(machine: Any) -> bool:
    return str(getattr(machine, "machine_type", "")).startswith(HYPERDISK_ONLY)


def boot_disk_type(spec: JobSpec, machine_type: str = "") -> str:
    """The boot disk type a pool of ``machine_type`` gets: the one asked for, else the
    machine's default (hyperdisk-balanced on A3 Ultra and A4, pd-ssd elsewhere)."""
    if machine_type.startswith(HYPERDISK_ONLY) and spec.google.boot_disk_type == "pd-ssd":
        return "hyperdisk-balanced"
    return str(spec.google.boot_disk_type)


def _shape(machine: Any) -> tuple[object, ...]:
    """What a reservation holds of a machine: its type and accelerators."""
    return (machine.machine_type, machine.accelerator_type, machine.accelerator_count)


def disk_spec(spec: JobSpec, machine_type: str = "") -> dict[str, object]:
    """A pool's ``diskSpec`` (for a pool of ``machine_type``)."""
    return {
        "bootDiskType": boot_disk_type(spec, machine_type),
        "bootDiskSizeGb": spec.google.boot_disk_gb,
    }


def reservation_affinity(spec: JobSpec, machine: Any = None) -> dict[str, object] | None:
    """A pool's ``machineSpec.reservationAffinity`` (None: Vertex AI's default).

    A named reservation holds VMs of one shape, the chief's: a pool of another ``machine`` (CPU
    parameter servers, an evaluator elsewhere) could not consume it and runs on demand.
    """
    if spec.google.reservation is None:
        return None
    if spec.google.reservation == "any":
        return {"reservationAffinityType": "ANY_RESERVATION"}
    if machine is not None and _shape(machine) != _shape(spec.chief):
        return None
    return {
        "reservationAffinityType": "SPECIFIC_RESERVATION",
        "key": RESERVATION_KEY,
        "values": [spec.google.reservation],
    }
