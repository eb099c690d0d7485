"""What Vertex AI checks when a CustomJob is created, as the test server checks it.

Google's facts come from one source, the product's tables with their sources and dates:
:data:`tfc_jupyter.job.catalog.MACHINE_TYPES` (Vertex AI's training machine list) and
:mod:`tfc_jupyter.job.vertex_rules` (the GPU-by-machine table, machines without VPC peering,
Private Service Connect, the limits on env, names, ids and buckets), so the suite and the
product cannot disagree about what Google documents; the checks themselves are written here,
apart from the product's. :func:`validate` takes the parsed request and returns ``(field,
message)`` pairs; the server answers 400 INVALID_ARGUMENT with them in Vertex's own format
("List of found errors: 1.Field: ...; Message: ...").

A worker pool runs either a ``containerSpec`` (any image) or a ``pythonPackageSpec`` (the package
route: ``executorImageUri``, one of Vertex AI's prebuilt training images
``{us,europe,asia}-docker.pkg.dev/vertex-ai/training/NAME:latest``; ``packageUris``, at least one
``gs://bucket/object``; ``pythonModule``, a dotted module name), never both. The ``env`` of either
holds C-identifier names only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tfc_jupyter.backends.vertex import scheduling
from tfc_jupyter.job import catalog, vertex_rules

# Machine types a custom job may ask for: Vertex AI's training list.
MACHINE_TYPES: set[str] = set(catalog.MACHINE_TYPES)
TPU_V5E_TOPOLOGY = {m: t for m, (_, _, t) in vertex_rules.TPU_HOSTS.items() if t}
TPU_ENUMS = {"TPU_V2", "TPU_V3", "TPU_V4_POD", "TPU_V5_LITEPOD"}


def _label_ok(text: str, *, key: bool) -> bool:
    """Google Cloud's label rule: at most 63 lowercase letters (international ones allowed),
    digits, '_' and '-'; a key starts with a letter."""
    chars = all(c in "_-" or (c.isalnum() and not c.isupper()) for c in text)
    start = not key or (bool(text) and text[0].isalpha() and not text[0].isupper())
    return len(text) <= 63 and chars and start


_SERVICE_ACCOUNT = re.compile(r"^[a-z0-9.:_-]+@[a-z0-9.:-]+\.gserviceaccount\.com$")
_NETWORK = re.compile(r"^projects/\d+/global/networks/[a-z]([-a-z0-9]*[a-z0-9])?$")
_TENSORBOARD = re.compile(r"^projects/[^/]+/locations/[^/]+/tensorboards/[^/]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Vertex AI's prebuilt training containers, the executors of python_package_spec pools.
PREBUILT_TRAINING_IMAGE = re.compile(
    r"^(us|europe|asia)-docker\.pkg\.dev/vertex-ai/training/[a-z0-9._-]+:latest$"
)
_GS_OBJECT = re.compile(r"^gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]/[^\r\n]+$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

Problems = list[tuple[str, str]]


def built_in_gpus(machine_type: str) -> tuple[str, int] | None:
    """The GPUs that come with an accelerator-optimized machine type, else None."""
    return vertex_rules.BUILT_IN_GPUS.get(machine_type)


def _machine(at: str, spec: dict[str, Any], pool_index: int, replicas: int) -> Problems:
    out: Problems = []
    machine_type = spec.get("machineType", "")
    accel = spec.get("acceleratorType", "ACCELERATOR_TYPE_UNSPECIFIED")
    accel = "" if accel == "ACCELERATOR_TYPE_UNSPECIFIED" else accel
    count = int(spec.get("acceleratorCount", 0) or 0)
    topology = spec.get("tpuTopology", "")
    if not machine_type:
        return [(f"{at}.machine_type", "Required field is not set.")]
    if machine_type not in MACHINE_TYPES:
        return [(f"{at}.machine_type", f'Machine type "{machine_type}" is not supported.')]
    is_tpu = machine_type == "cloud-tpu" or machine_type in TPU_V5E_TOPOLOGY
    if is_tpu and (pool_index != 0 or replicas != 1):
        out.append(
            (
                f"{at}",
                "TPU machines are only supported in the first worker pool with one replica.",
            )
        )
    if machine_type == "cloud-tpu":
        if accel not in ("TPU_V2", "TPU_V3") or count != 8:
            out.append(
                (
                    f"{at}.accelerator_type",
                    "cloud-tpu requires accelerator_type TPU_V2 or "
                    f"TPU_V3 with accelerator_count 8, got {count} x {accel or 'none'}.",
                )
            )
        if topology:
            out.append((f"{at}.tpu_topology", "tpu_topology is not supported for cloud-tpu."))
        return out
    if machine_type in TPU_V5E_TOPOLOGY:
        if accel or count:
            out.append(
                (
                    f"{at}.accelerator_type",
                    f"{machine_type} takes no accelerator_type or "
                    "accelerator_count; the TPU chips come with the machine.",
                )
            )
        if topology != TPU_V5E_TOPOLOGY[machine_type]:
            out.append(
                (
                    f"{at}.tpu_topology",
                    f"{machine_type} requires tpu_topology "
                    f"{TPU_V5E_TOPOLOGY[machine_type]}, got {topology or 'none'}.",
                )
            )
        return out
    if topology:
        out.append((f"{at}.tpu_topology", f"tpu_topology is not supported for {machine_type}."))
    if accel in _ENDED:
        return [*out, (f"{at}.accelerator_type", f"{accel} has reached end of support.")]
    if accel in TPU_ENUMS:
        return [*out, (f"{at}.accelerator_type", f"{accel} requires a TPU machine type.")]
    if bool(accel) != bool(count):
        what = "accelerator_count must be positive" if accel else "accelerator_type is not set"
        return [
            *out,
            (
                f"{at}.accelerator_count" if accel else f"{at}.accelerator_type",
                f"{what} ({count} x {accel or 'none'}).",
            ),
        ]
    built_in = built_in_gpus(machine_type)
    if built_in and (accel, count) != built_in:
        out.append(
            (
                f"{at}.accelerator_count",
                f"{machine_type} requires {built_in[1]} x "
                f"{built_in[0]}, got {count} x {accel or 'none'}.",
            )
        )
    elif machine_type.startswith("n1-") and accel:
        allowed = vertex_rules.gpu_counts(machine_type, accel)
        if not allowed:
            out.append((f"{at}.accelerator_type", f"{accel} is not supported on {machine_type}."))
        elif count not in allowed:
            out.append(
                (
                    f"{at}.accelerator_count",
                    f"{count} x {accel} is not supported on {machine_type}; "
                    f"allowed counts are {', '.join(map(str, allowed))}.",
                )
            )
    elif not built_in and accel:
        out.append((f"{at}.accelerator_type", f"{machine_type} does not support accelerators."))
    return out


_ENDED = {catalog.GPUS[g][0] for g in catalog.RETIRED}


def _env(at: str, env: list[dict[str, Any]]) -> Problems:
    """Environment variable names: C identifiers, as Kubernetes (and Vertex) require; at most
    100 of them."""
    out: Problems = []
    if len(env) > vertex_rules.MAX_ENV_VARS:
        out.append((f"{at}.env", f"Maximum limit is {vertex_rules.MAX_ENV_VARS}, got {len(env)}."))
    for i, var in enumerate(env):
        name = var.get("name", "")
        if not name:
            out.append((f"{at}.env[{i}].name", "Required field is not set."))
        elif not _ENV_NAME.fullmatch(name):
            out.append(
                (
                    f"{at}.env[{i}].name",
                    f'"{name}" is not a valid environment variable name: it must start with a '
                    "letter or '_' and hold only letters, digits and '_'.",
                )
            )
    return out


def _package(at: str, spec: dict[str, Any]) -> Problems:
    """A python_package_spec: a prebuilt executor image, gs:// packages, a module to run."""
    out: Problems = []
    image = spec.get("executorImageUri", "")
    if not image:
        out.append((f"{at}.executor_image_uri", "Required field is not set."))
    elif not PREBUILT_TRAINING_IMAGE.fullmatch(image):
        out.append(
            (
                f"{at}.executor_image_uri",
                f'"{image}" is not a Vertex AI prebuilt training container: python_package_spec '
                "runs in one of us-, europe- or asia-docker.pkg.dev/vertex-ai/training/*:latest.",
            )
        )
    uris = spec.get("packageUris", [])
    if not uris:
        out.append((f"{at}.package_uris", "At least one package URI is required."))
    for i, uri in enumerate(uris):
        if not _GS_OBJECT.fullmatch(uri):
            out.append(
                (
                    f"{at}.package_uris[{i}]",
                    f'"{uri}" is not a Cloud Storage object: package URIs look like '
                    "gs://bucket/path/package.whl.",
                )
            )
    module = spec.get("pythonModule", "")
    if not module:
        out.append((f"{at}.python_module", "Required field is not set."))
    elif not _MODULE.fullmatch(module):
        out.append((f"{at}.python_module", f'"{module}" is not a Python module name.'))
    return out + _env(at, spec.get("env", []))


def _pools(pools: list[dict[str, Any]]) -> Problems:
    out: Problems = []
    if not pools or not pools[0]:
        return [("job_spec.worker_pool_specs[0]", "The first worker pool is required.")]
    if len(pools) > 4:
        out.append(("job_spec.worker_pool_specs", "At most 4 worker pools are allowed."))
    tpu = False
    for i, pool in enumerate(pools):
        at = f"job_spec.worker_pool_specs[{i}]"
        if not pool:
            continue  # an empty pool keeps a position
        replicas = int(pool.get("replicaCount", 0) or 0)
        if i == 0 and replicas != 1:
            out.append(
                (
                    f"{at}.replica_count",
                    "The first worker pool (the primary replica) "
                    f"must have exactly one replica, got {replicas}.",
                )
            )
        elif replicas < 1:
            out.append((f"{at}.replica_count", "replica_count must be at least 1."))
        machine = pool.get("machineSpec", {})
        tpu = tpu or machine.get("machineType") == "cloud-tpu"
        tpu = tpu or machine.get("machineType", "") in TPU_V5E_TOPOLOGY
        out += _machine(f"{at}.machine_spec", machine, i, replicas)
        container = pool.get("containerSpec")
        package = pool.get("pythonPackageSpec")
        if container is not None and not container.get("imageUri"):
            out.append((f"{at}.container_spec.image_uri", "Required field is not set."))
        if container is None and package is None:
            out.append(
                (f"{at}.container_spec", "A container_spec or python_package_spec is required.")
            )
        elif container is not None and package is not None:
            out.append(
                (
                    f"{at}.python_package_spec",
                    "Only one of container_spec and python_package_spec may be set.",
                )
            )
        if container is not None:
            out += _env(f"{at}.container_spec", container.get("env", []))
        if package is not None:
            out += _package(f"{at}.python_package_spec", package)
        disk = pool.get("diskSpec") or {}
        size = int(disk.get("bootDiskSizeGb", 100) or 100)
        if not 100 <= size <= 64000:
            out.append((f"{at}.disk_spec.boot_disk_size_gb", "Must be between 100 and 64000."))
    if tpu and any(p for p in pools[1:]):
        out.append(("job_spec.worker_pool_specs", "A TPU job uses the first worker pool only."))
    return out


def validate(body: dict[str, Any]) -> Problems:
    """Problems Vertex AI would report for a create request, as ``(field, message)`` pairs.

    ``body`` is the CustomJob as JSON after a round trip through the proto (camelCase, enum
    names), so unknown fields and enum values have already been refused.
    """
    out: Problems = []
    name = body.get("displayName", "")
    if not name:
        out.append(("display_name", "Required field is not set."))
    elif len(name) > 128:
        out.append(("display_name", "The display name is longer than 128 characters."))
    labels = body.get("labels", {})
    if len(labels) > 64:
        out.append(("labels", f"At most 64 labels are allowed, got {len(labels)}."))
    for key, value in labels.items():
        if not _label_ok(key, key=True) or key.startswith("goog"):
            out.append(
                (
                    f"labels[{key!r}]",
                    "Label keys start with a lowercase letter and hold "
                    "at most 63 lowercase letters, digits, '_' or '-'.",
                )
            )
        if not _label_ok(value, key=False):
            out.append(
                (
                    f"labels[{key!r}]",
                    "Label values hold at most 63 lowercase letters, digits, '_' or '-'.",
                )
            )
    spec = body.get("jobSpec", {})
    out += _pools(spec.get("workerPoolSpecs", []))
    account = spec.get("serviceAccount", "")
    if account and not _SERVICE_ACCOUNT.match(account):
        out.append(("job_spec.service_account", f'"{account}" is not a service account.'))
    network = spec.get("network", "")
    if network and not _NETWORK.match(network):
        out.append(
            (
                "job_spec.network",
                "The network must look like "
                "projects/{project_number}/global/networks/{network_name}.",
            )
        )
    tensorboard = spec.get("tensorboard", "")
    if tensorboard:
        if not _TENSORBOARD.match(tensorboard):
            out.append(
                (
                    "job_spec.tensorboard",
                    "The TensorBoard must look like "
                    "projects/{project}/locations/{location}/tensorboards/{id}.",
                )
            )
        if not spec.get("baseOutputDirectory", {}).get("outputUriPrefix"):
            out.append(
                (
                    "job_spec.base_output_directory",
                    "A base output directory is required when a TensorBoard is set.",
                )
            )
        if not account:
            out.append(
                (
                    "job_spec.service_account",
                    "A service account is required when a TensorBoard is set.",
                )
            )
    base = spec.get("baseOutputDirectory", {}).get("outputUriPrefix", "")
    if base and not base.startswith("gs://"):
        out.append(
            (
                "job_spec.base_output_directory.output_uri_prefix",
                "The base output directory must be a gs:// URI.",
            )
        )
    timeout = spec.get("scheduling", {}).get("timeout")
    if timeout is not None and float(timeout.rstrip("s") or 0) <= 0:
        out.append(("job_spec.scheduling.timeout", "The timeout must be positive."))
    out += _scheduling(spec)
    resource = spec.get("persistentResourceId", "")
    if resource and not vertex_rules.PERSISTENT_RESOURCE_ID.fullmatch(resource):
        out.append(("job_spec.persistent_resource_id", "Invalid persistent resource id."))
    if base.startswith("gs://") and vertex_rules.gcs_bucket(base) is None:
        out.append(
            (
                "job_spec.base_output_directory.output_uri_prefix",
                f'"{base}" names no Cloud Storage bucket.',
            )
        )
    out += _network(spec)
    out += _reservations([p for p in spec.get("workerPoolSpecs", []) if p])
    return out


_FLEX_GPUS = {
    "NVIDIA_L4",
    "NVIDIA_TESLA_A100",
    "NVIDIA_A100_80GB",
    "NVIDIA_H100_80GB",
    "NVIDIA_H100_MEGA_80GB",
    "NVIDIA_H200_141GB",
    "NVIDIA_B200",
}
_RESERVATION = re.compile(r"projects/[^/]+/zones/[^/]+/reservations/[^/]+")
_DISK_TYPES = {"pd-ssd", "pd-standard", "hyperdisk-balanced"}


def _scheduling(spec: dict[str, Any]) -> Problems:
    """Flex-start (Dynamic Workload Scheduler), reservations and boot disks, as Vertex AI's
    documentation states their rules."""
    out: Problems = []
    when = spec.get("scheduling", {})
    pools = [p for p in spec.get("workerPoolSpecs", []) if p]
    if when.get("strategy") == "FLEX_START":
        machines = {json.dumps(p.get("machineSpec", {}), sort_keys=True) for p in pools}
        if len(machines) > 1:
            out.append(
                ("job_spec.worker_pool_specs", "Flex-start needs the same machine in every pool.")
            )
        for i, pool in enumerate(pools):
            if pool.get("machineSpec", {}).get("acceleratorType") not in _FLEX_GPUS:
                out.append(
                    (
                        f"job_spec.worker_pool_specs[{i}].machine_spec.accelerator_type",
                        "Flex-start supports L4, A100, H100, H200 and B200 GPUs only.",
                    )
                )
        timeout = float(str(when.get("timeout", "604800s")).rstrip("s") or 0)
        if timeout > 7 * 86400:
            out.append(("job_spec.scheduling.timeout", "Flex-start jobs run at most 7 days."))
    elif "maxWaitDuration" in when:
        out.append(("job_spec.scheduling.max_wait_duration", "Only for the FLEX_START strategy."))
    for i, pool in enumerate(pools):
        affinity = pool.get("machineSpec", {}).get("reservationAffinity")
        if affinity:
            kind = affinity.get("reservationAffinityType")
            if when.get("strategy") in ("SPOT", "FLEX_START"):
                out.append(
                    (
                        f"job_spec.worker_pool_specs[{i}].machine_spec.reservation_affinity",
                        "Reservations cannot be used with Spot VMs or flex-start.",
                    )
                )
            values = affinity.get("values", [])
            if kind == "SPECIFIC_RESERVATION" and (
                affinity.get("key") != "compute.googleapis.com/reservation-name"
                or len(values) != 1
                or not _RESERVATION.fullmatch(values[0])
            ):
                out.append(
                    (
                        f"job_spec.worker_pool_specs[{i}].machine_spec.reservation_affinity",
                        "A specific reservation needs the key "
                        "compute.googleapis.com/reservation-name and one reservation name.",
                    )
                )
        disk = pool.get("diskSpec") or {}
        disk_type = disk.get("bootDiskType", "")  # unset: the machine's default
        if disk_type and disk_type not in _DISK_TYPES:
            out.append(
                (f"job_spec.worker_pool_specs[{i}].disk_spec.boot_disk_type", "Invalid type.")
            )
        kind = pool.get("machineSpec", {}).get("machineType", "")
        if kind.startswith(scheduling.HYPERDISK_ONLY) and disk_type.startswith("pd-"):
            out.append(
                (
                    f"job_spec.worker_pool_specs[{i}].disk_spec.boot_disk_type",
                    f"{kind} boots from Hyperdisk only, not {disk_type}.",
                )
            )
    return out


def _network(spec: dict[str, Any]) -> Problems:
    """VPC peering where Vertex AI offers it, a Private Service Connect interface otherwise."""
    out: Problems = []
    pools = [p for p in spec.get("workerPoolSpecs", []) if p]
    psc = spec.get("pscInterfaceConfig", {}).get("networkAttachment", "")
    if spec.get("network"):
        for i, pool in enumerate(pools):
            kind = pool.get("machineSpec", {}).get("machineType", "")
            if kind in vertex_rules.NO_VPC_PEERING:
                out.append(
                    (
                        "job_spec.network",
                        f"VPC Network Peering is not supported for {kind} (worker pool {i}); "
                        "use a Private Service Connect interface.",
                    )
                )
        if psc:
            out.append(("job_spec.psc_interface_config", "Set network or PSC-I, not both."))
    if psc and not vertex_rules.NETWORK_ATTACHMENT.fullmatch(psc):
        out.append(
            (
                "job_spec.psc_interface_config.network_attachment",
                f'"{psc}" is not a network attachment.',
            )
        )
    return out


def _reservations(pools: list[dict[str, Any]]) -> Problems:
    """A specific reservation holds VMs of one shape: a pool of another cannot consume it."""
    out: Problems = []
    shapes = {}
    for i, pool in enumerate(pools):
        machine = dict(pool.get("machineSpec", {}))
        affinity = machine.pop("reservationAffinity", {})
        if affinity.get("reservationAffinityType") == "SPECIFIC_RESERVATION":
            shapes[i] = json.dumps(machine, sort_keys=True)
    if len(set(shapes.values())) > 1:
        out.append(
            (
                "job_spec.worker_pool_specs",
                "A specific reservation holds one machine shape; worker pools "
                f"{', '.join(map(str, shapes))} differ.",
            )
        )
    return out


def container_env(env: list[dict[str, Any]]) -> dict[str, str]:
    """The variables a container gets from ``env``, expanded as Vertex AI (after Kubernetes)
    expands them: ``$(NAME)`` of a variable defined before is replaced, ``$$`` becomes ``$``,
    anything else is kept."""
    seen: dict[str, str] = {}
    for var in env:
        value, out, i = var.get("value", ""), [], 0
        while i < len(value):
            if value[i] == "$" and i + 1 < len(value) and value[i + 1] == "$":
                out.append("$")
                i += 2
            elif value[i] == "$" and value.startswith("(", i + 1) and ")" in value[i + 2 :]:
                end = value.index(")", i + 2)
                name = value[i + 2 : end]
                out.append(seen.get(name, value[i : end + 1]))
                i = end + 1
            else:
                out.append(value[i])
                i += 1
        seen[var["name"]] = "".join(out)
    return seen


def error_message(problems: Problems) -> str:
    """Vertex AI's wording for a list of field problems."""
    items = "".join(f"{i}.Field: {f}; Message: {m}\t" for i, (f, m) in enumerate(problems, 1))
    return f"List of found errors:\t{items}"
