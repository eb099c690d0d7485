"""Vertex AI's rules for a custom job, as Google documents them, each with its source and date.

One source for the product and the test server: :mod:`tfc_jupyter.job.catalog` (machines and
GPUs), :mod:`tfc_jupyter.backends.vertex.scheduling`, :mod:`tfc_jupyter.job.spec` and the
request builder check a job against these tables, and the test server's validator
(``tests/vertex_validate.py``) refuses requests by the same tables, so the suite and the product
cannot disagree.

Where the reference corpus this was written from lacked a page, the comment says so and the
choice made is the conservative one (refuse what is not documented as taken).
"""

from __future__ import annotations

import re

CHECKED = "2026-11-26"
"""When these facts were read."""

TRAINING_COMPUTE_URL = "https://cloud.google.com/vertex-ai/docs/training/configure-compute"
"""Vertex AI, "Configure compute resources for custom training": the machine types custom
training takes and the GPU-by-machine table. The reference corpus searched on 2026-11-26 held
only a Portuguese copy of this page, without its tables: the families and rows issue 35 quotes
(N4, C2, e2-standard-32, e2-highmem-*, e2-highcpu-*, M1, n1-highmem-2/4/32/64/96,
n1-highcpu-64/96, a2-megagpu-16g, G4; T4 on 32-vCPU N1 only x2 or x4; no P100 on n1-standard-64)
are taken as quoted, and the sizes within a family follow Compute Engine's predefined types,
narrowed where unsure (e2-highcpu: 16 and 32 only; no P100 on any 64- or 96-vCPU N1)."""

# ------------------------------------------------------------------ GPUs on N1 machines
# Vertex AI's GPU table for N1 machines (TRAINING_COMPUTE_URL, "GPUs", read 2026-11-26): the
# counts of each GPU a machine takes. Stricter than Compute Engine's vCPU limits: Vertex AI
# takes T4 on a 32-vCPU N1 machine only as 2 or 4, and no P100 on 64 or 96 vCPUs.
Counts = dict[str, tuple[int, ...]]
_UP_TO_8: Counts = {
    "NVIDIA_TESLA_T4": (1, 2, 4),
    "NVIDIA_TESLA_P4": (1, 2, 4),
    "NVIDIA_TESLA_V100": (1, 2, 4, 8),
    "NVIDIA_TESLA_P100": (1, 2, 4),
}
_16: Counts = {**_UP_TO_8, "NVIDIA_TESLA_V100": (2, 4, 8)}
_32: Counts = {
    "NVIDIA_TESLA_T4": (2, 4),
    "NVIDIA_TESLA_P4": (2, 4),
    "NVIDIA_TESLA_V100": (4, 8),
    "NVIDIA_TESLA_P100": (2, 4),
}
# 64 and 96 vCPUs: no P100 (the table's "n1-highcpu-64: 4 x P100" cell was not confirmed in the
# corpus; P100 is past its end of support anyway, so none is the conservative reading).
_64_UP: Counts = {"NVIDIA_TESLA_T4": (4,), "NVIDIA_TESLA_P4": (4,), "NVIDIA_TESLA_V100": (8,)}
N1_GPUS: dict[str, Counts] = {
    "n1-standard-4": _UP_TO_8,
    "n1-standard-8": _UP_TO_8,
    "n1-standard-16": _16,
    "n1-standard-32": _32,
    "n1-standard-64": _64_UP,
    "n1-standard-96": _64_UP,
    "n1-highmem-2": _UP_TO_8,
    "n1-highmem-4": _UP_TO_8,
    "n1-highmem-8": _UP_TO_8,
    "n1-highmem-16": _16,
    "n1-highmem-32": _32,
    "n1-highmem-64": _64_UP,
    "n1-highmem-96": _64_UP,
    "n1-highcpu-16": _16,
    "n1-highcpu-32": _32,
    "n1-highcpu-64": _64_UP,
    "n1-highcpu-96": _64_UP,
}
"""N1 machine type -> {GPU enum: the counts Vertex AI takes on it}."""

# ------------------------------------------------------------------ GPUs built into machines
_L4_ON_G2 = {4: 1, 8: 1, 12: 1, 16: 1, 32: 1, 24: 2, 48: 4, 96: 8}
BUILT_IN_GPUS: dict[str, tuple[str, int]] = {
    **{f"a2-highgpu-{n}g": ("NVIDIA_TESLA_A100", n) for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": ("NVIDIA_TESLA_A100", 16),
    **{f"a2-ultragpu-{n}g": ("NVIDIA_A100_80GB", n) for n in (1, 2, 4, 8)},
    **{f"g2-standard-{v}": ("NVIDIA_L4", n) for v, n in _L4_ON_G2.items()},
    # G4 (RTX PRO 6000 Blackwell): 48 vCPUs per GPU (Compute Engine "GPU machine types", G4).
    **{f"g4-standard-{48 * n}": ("NVIDIA_RTX_PRO_6000", n) for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": ("NVIDIA_H100_80GB", n) for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": ("NVIDIA_H100_MEGA_80GB", 8),
    "a3-ultragpu-8g": ("NVIDIA_H200_141GB", 8),
    "a4-highgpu-8g": ("NVIDIA_B200", 8),
    "a4x-highgpu-4g": ("NVIDIA_GB200", 4),
}
"""Accelerator-optimized machine type -> (GPU enum, count): the request must name exactly
these (TRAINING_COMPUTE_URL, read 2026-11-26)."""

TPU_HOSTS: dict[str, tuple[tuple[str, ...], int, str | None]] = {
    "cloud-tpu": (("TPU_V2", "TPU_V3"), 8, None),
    "ct5lp-hightpu-1t": ((), 0, "1x1"),
    "ct5lp-hightpu-4t": ((), 0, "2x2"),
    "ct5lp-hightpu-8t": ((), 0, "2x4"),
}
"""TPU host -> (accelerator enums it takes, their count, its v5e topology) (Vertex AI
"Training with TPU accelerators", read 2026-11-26)."""


def gpu_counts(machine_type: str, accelerator: str) -> tuple[int, ...]:
    """The counts of ``accelerator`` Vertex AI takes on ``machine_type`` (empty: none)."""
    built_in = BUILT_IN_GPUS.get(machine_type)
    if built_in is not None:
        return (built_in[1],) if built_in[0] == accelerator else ()
    return N1_GPUS.get(machine_type, {}).get(accelerator, ())


# ------------------------------------------------------------------ networking
NO_VPC_PEERING = ("a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g")
"""Machines Vertex AI runs without VPC Network Peering (H100 Mega, H200, B200): a job on them
reaches a private network through a Private Service Connect interface only
(TRAINING_COMPUTE_URL, its A3 Mega / A3 Ultra / A4 notes, read 2026-11-26)."""
PSC_URL = "https://cloud.google.com/vertex-ai/docs/training/psc-i-egress"
"""Vertex AI, "Use Private Service Connect interface for Vertex AI Training" (read 2026-11-26):
"recommended for private connectivity"; the request names a network attachment in
``pscInterfaceConfig.networkAttachment``, one "within the region and user project". Whether a
job may also set ``network`` (VPC peering) is not documented there: both together are refused
(the conservative choice)."""
NETWORK_ATTACHMENT = re.compile(
    r"(?:projects/(?P<project>[^/\s]+)/regions/(?P<region>[a-z0-9-]+)/networkAttachments/)?"
    r"(?P<name>[a-z]([-a-z0-9]{0,61}[a-z0-9])?)"
)
"""A network attachment: its name (Compute Engine's RFC 1035 names) or full resource name."""

# ------------------------------------------------------------------ limits of the request
MAX_ENV_VARS = 100
"""Environment variables of one container (``ContainerSpec.env`` and ``PythonPackageSpec.env``:
"Maximum limit is 100", aiplatform v1 reference, read 2026-11-26)."""
ENV_EXPANSION_URL = "https://cloud.google.com/vertex-ai/docs/reference/rest/v1/EnvVar"
"""``EnvVar.value``: "Variables that reference a $(VAR_NAME) are expanded using the previous
defined environment variables in the container ... The $(VAR_NAME) syntax can be escaped with a
double $$, ie: $$(VAR_NAME)" (read 2026-11-26); Kubernetes' EnvVar, which this follows, reduces
every ``$$`` to ``$`` (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/
pod-v1/#environment-variables)."""
DISPLAY_NAME_MAX = 128
"""``CustomJob.display_name``: "up to 128 characters long and can consist of any UTF-8
characters" (aiplatform v1 reference, read 2026-11-26)."""
PERSISTENT_RESOURCE_ID = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")
"""A persistent resource id: "The maximum length is 63 characters, and valid characters are
/^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/" (CreatePersistentResourceRequest, read 2026-11-26): 1 to
63 characters."""
BUCKET = re.compile(r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]")
"""A Cloud Storage bucket name: 3-63 characters (up to 222 with dots) of a-z 0-9 ``- _ .``,
starting and ending with a letter or digit (https://cloud.google.com/storage/docs/buckets
#naming, read 2026-11-26)."""
BUCKET_NAMING_URL = "https://cloud.google.com/storage/docs/buckets#naming"
"""Cloud Storage's naming rules (read 2026-11-29): besides the characters and lengths, "Bucket
names cannot begin with the "goog" prefix", "cannot contain "google" or close misspellings,
such as "g00gle"", and "cannot be represented as an IP address in dotted-decimal notation"."""
_LOOKALIKE = str.maketrans("013", "ole")  # g00gle, goog1e, ...: digits read as letters
_NEAR_GOOGLE = re.compile(r"goo{1,2}g{1,2}le|gogle|googel|goolge")
""""google" and its close misspellings, as Cloud Storage refuses them (its example g00gle; a
letter doubled, dropped or two swapped), in a name with its digits read as letters and its
separators left out (goo-gle)."""
GCS_PREFIX = re.compile(r"gs://(?P<bucket>[^/]*)(?:/.*)?")


def bucket_problem(name: str) -> str:
    """Why ``name`` is no Cloud Storage bucket name (:data:`BUCKET_NAMING_URL`), ``""`` when it
    is one: the one rule every option that takes a bucket is checked by."""
    if not BUCKET.fullmatch(name) or not all(0 < len(part) <= 63 for part in name.split(".")):
        return (
            "is not a Cloud Storage bucket name (3-63 of a-z 0-9 - _ ., starting and ending with a "
            "letter or digit; parts between dots at most 63)"
        )
    if name.startswith("goog"):
        return 'begins with "goog", which Cloud Storage keeps for Google'
    if _NEAR_GOOGLE.search(re.sub(r"[-_.]", "", name.translate(_LOOKALIKE))):
        return 'contains "google" or a close misspelling of it, which Cloud Storage refuses'
    if re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", name):
        return "is an IP address, which Cloud Storage refuses as a bucket name"
    return ""


def bucket_given(value: str) -> tuple[str, str]:
    """``gs://my-bucket`` or ``my-bucket`` (a bucket option's value) -> ``(name, problem)``:
    the bucket's name and why it is none (:func:`bucket_problem`; a path is no bucket)."""
    name = value.strip().removeprefix("gs://").rstrip("/")
    if "/" in name:
        return name, "is a path, not a bucket (leave out what follows the bucket's name)"
    return name, bucket_problem(name)


def bucket_ok(name: str) -> bool:
    """Whether ``name`` is a Cloud Storage bucket name (:func:`bucket_problem`)."""
    return not bucket_problem(name)


def gcs_bucket(uri: str) -> str | None:
    """The bucket of a ``gs://BUCKET[/PATH]`` URI, or None when it names no valid bucket."""
    m = GCS_PREFIX.fullmatch(uri)
    if m is None or not bucket_ok(m.group("bucket")):
        return None
    return m.group("bucket")
