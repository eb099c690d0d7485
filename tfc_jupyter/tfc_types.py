"""TensorFlow Cloud's public types, for ``import tfc_jupyter as tfc``.

``MachineConfig``, ``AcceleratorType``, ``COMMON_MACHINE_CONFIGS`` and ``DockerConfig`` take the
arguments and defaults ``tensorflow_cloud`` documents, and check a machine when it is made, as
``tfc.MachineConfig(...)`` did (a ``ValueError``), against Vertex AI's catalog of today
(:mod:`tfc_jupyter.job.catalog`): K80 and P100 GPUs are gone (end of support 2024-05-01 and
2026-09-15), so ``COMMON_MACHINE_CONFIGS["K80_1X"]`` and ``["P100_1X"]`` name the fix instead of a
machine that cannot run.

Each maps onto the job's options (:func:`machine_options`): a config equal to a preset is that
preset (``T4_1X``), any other is its n1 machine type plus its GPUs, a TPU config is
``--tpu v3-8`` (or ``v2-8``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from .errors import SpecError


class ConfigError(SpecError, ValueError):
    """A machine or Docker configuration that cannot run: a ``ValueError``, as tfc.run raised,
    and a one-line :class:`~tfc_jupyter.errors.TfcError` naming the fix."""


class AcceleratorType(enum.Enum):
    """Accelerators, as ``tfc.AcceleratorType`` names them (values: the catalog's GPU names),
    plus the GPUs Vertex AI added since."""

    NO_ACCELERATOR = "CPU"
    NVIDIA_TESLA_K80 = "K80"
    NVIDIA_TESLA_P100 = "P100"
    NVIDIA_TESLA_V100 = "V100"
    NVIDIA_TESLA_P4 = "P4"
    NVIDIA_TESLA_T4 = "T4"
    NVIDIA_TESLA_A100 = "A100"
    NVIDIA_A100_80GB = "A100_80GB"
    NVIDIA_L4 = "L4"
    NVIDIA_H100_80GB = "H100"
    TPU_V2 = "TPU_V2"
    TPU_V3 = "TPU_V3"

    @classmethod
    def all(cls) -> tuple[AcceleratorType, ...]:
        """Every member (``tfc.AcceleratorType.all()``)."""
        return tuple(cls)

    @classmethod
    def validate(cls, key: Any) -> None:
        """Raise ``ValueError`` unless ``key`` is a member."""
        if key not in cls.all():
            raise ConfigError(
                f"Invalid accelerator key provided: {key!r}",
                "use a tfc.AcceleratorType member, e.g. tfc.AcceleratorType.NVIDIA_TESLA_T4",
                field="accelerator_type",
            )

    @property
    def is_tpu(self) -> bool:
        """True for TPU_V2 and TPU_V3."""
        return self.value.startswith("TPU_")


# n1 machine types by (vCPUs, GB of memory), as tfc.run derived them.
_N1_RATIOS = {3.75: "standard", 6.5: "highmem", 0.9: "highcpu"}
_N1_SIZES = (2, 4, 8, 16, 32, 64, 96)


def n1_machine_type(cpu_cores: Any, memory: Any) -> str:
    """The n1 machine type with ``cpu_cores`` vCPUs and ``memory`` GB (``(8, 30)``:
    ``n1-standard-8``; memory is rounded as tfc.run wrote it: 15, 30, 13, 14.4 ...).

    Raises:
        ConfigError: no n1 machine has that shape.
    """
    whole = isinstance(cpu_cores, int) and not isinstance(cpu_cores, bool)
    sized = isinstance(memory, (int, float)) and not isinstance(memory, bool)
    if whole and sized and cpu_cores in _N1_SIZES:
        for ratio, family in _N1_RATIOS.items():
            near = abs(memory - cpu_cores * ratio) < 1.0
            if near and (family != "highcpu" or cpu_cores >= 16):
                return f"n1-{family}-{cpu_cores}"
    raise ConfigError(
        f"Invalid machine configuration: no machine has cpu_cores={cpu_cores!r} and "
        f"memory={memory!r}",
        "use n1 shapes (cpu_cores 4, 8, 16, 32, 64 or 96 with memory 3.75 GB per core, e.g. "
        "cpu_cores=8, memory=30) or a tfc.COMMON_MACHINE_CONFIGS entry",
        field="cpu_cores",
    )


class MachineConfig:
    """One machine of the job, as ``tfc.MachineConfig`` describes it.

    Args:
        cpu_cores: virtual CPUs (default 8). Ignored for a TPU.
        memory: GB of memory (default 30). Ignored for a TPU.
        accelerator_type: an :class:`AcceleratorType` (default ``"auto"``: a T4).
        accelerator_count: accelerators (default 1; 8 for a TPU).

    Raises:
        ValueError: a machine Vertex AI does not offer, naming the fix.
    """

    def __init__(
        self,
        cpu_cores: int | None = 8,
        memory: float | None = 30,
        accelerator_type: AcceleratorType | str = "auto",
        accelerator_count: int = 1,
    ) -> None:
        self.cpu_cores = cpu_cores
        self.memory = memory
        self.accelerator_type: Any = accelerator_type
        self.accelerator_count = accelerator_count
        if self.accelerator_type == "auto":
            self.accelerator_type = AcceleratorType.NVIDIA_TESLA_T4
        self.validate()

    def validate(self) -> None:
        """Check the machine against Vertex AI's catalog (``ValueError`` naming the fix)."""
        machine_options(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MachineConfig):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        if is_tpu_config(self):
            return (None, None, self.accelerator_type, self.accelerator_count)
        return (self.cpu_cores, self.memory, self.accelerator_type, self.accelerator_count)

    def __repr__(self) -> str:
        kind = getattr(self.accelerator_type, "name", self.accelerator_type)
        return (
            f"MachineConfig(cpu_cores={self.cpu_cores!r}, memory={self.memory!r}, "
            f"accelerator_type=AcceleratorType.{kind}, "
            f"accelerator_count={self.accelerator_count!r})"
        )


def is_tpu_config(config: Any) -> bool:
    """True for a TPU machine config (``tfc.is_tpu_config``)."""
    kind = getattr(config, "accelerator_type", None)
    return isinstance(kind, AcceleratorType) and kind.is_tpu


@dataclass(frozen=True)
class MachineOptions:
    """A :class:`MachineConfig` as job options: a catalog name (``T4_1X``, ``n1-highmem-8``),
    its GPUs (count and type, 0 / None for none) or its TPU (``v3-8``)."""

    machine: str | None = None
    gpus: int = 0
    gpu_type: str | None = None
    tpu: str | None = None


def machine_options(config: MachineConfig) -> MachineOptions:
    """The catalog machine of ``config``.

    Raises:
        ConfigError: not a machine Vertex AI runs (K80s, impossible GPU counts ...).
    """
    from .job import catalog

    kind = config.accelerator_type
    AcceleratorType.validate(kind)
    count = config.accelerator_count
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ConfigError(
            f"Invalid machine configuration: accelerator_count {count!r} is not a whole number",
            "pass accelerator_count=1 (or 2, 4, 8)",
            field="accelerator_count",
        )
    if kind.is_tpu:
        if count != 8:
            raise ConfigError(
                f"Invalid machine configuration: a {kind.value} config with {count} cores "
                "(a TPU host has 8)",
                "pass accelerator_count=8, or use tfc.COMMON_MACHINE_CONFIGS['TPU']",
                field="accelerator_count",
            )
        return MachineOptions(tpu="v2-8" if kind is AcceleratorType.TPU_V2 else "v3-8")
    machine_type = n1_machine_type(config.cpu_cores, config.memory)
    if kind is AcceleratorType.NO_ACCELERATOR:
        if count:
            raise ConfigError(
                f"Invalid machine configuration: a CPU config with accelerator_count={count}",
                "pass accelerator_count=0, or an accelerator_type",
                field="accelerator_count",
            )
        return MachineOptions(machine="CPU" if machine_type == "n1-standard-4" else machine_type)
    try:
        machine = catalog.gpu_machine(kind.value, count, machine_type)
    except SpecError as exc:
        raise ConfigError(
            f"Invalid machine configuration: {exc.message}", exc.hint, field="accelerator_type"
        ) from None
    preset = catalog.PRESETS.get(f"{kind.value}_{count}X")
    if preset is not None and preset.machine_type == machine.machine_type:
        return MachineOptions(machine=preset.name, gpus=count, gpu_type=kind.value)
    return MachineOptions(machine=machine_type, gpus=count, gpu_type=kind.value)


class _CommonConfigs(dict[str, MachineConfig]):
    """``COMMON_MACHINE_CONFIGS``: a name Vertex AI no longer runs (``K80_1X``) names the fix."""

    def __missing__(self, key: str) -> MachineConfig:
        from .job import catalog

        gpu = str(key).split("_")[0].upper()
        if gpu in catalog.RETIRED:
            ended, _, instead = catalog.RETIRED[gpu]
            raise ConfigError(
                f"{gpu} GPUs reached end of support on Google Cloud on {ended}",
                f"use COMMON_MACHINE_CONFIGS[{str(key).replace(gpu, instead)!r}]",
                field="chief_config",
            )
        raise ConfigError(
            f"COMMON_MACHINE_CONFIGS has no {key!r}", f"use one of: {', '.join(self)}"
        )


def _gpu(kind: AcceleratorType, count: int, cpus: int) -> MachineConfig:
    return MachineConfig(cpus, round(cpus * 3.75), kind, count)


COMMON_MACHINE_CONFIGS: dict[str, MachineConfig] = _CommonConfigs(
    {
        "CPU": MachineConfig(4, 15, AcceleratorType.NO_ACCELERATOR, 0),
        "P4_1X": _gpu(AcceleratorType.NVIDIA_TESLA_P4, 1, 8),
        "P4_4X": _gpu(AcceleratorType.NVIDIA_TESLA_P4, 4, 16),
        "V100_1X": _gpu(AcceleratorType.NVIDIA_TESLA_V100, 1, 8),
        "V100_4X": _gpu(AcceleratorType.NVIDIA_TESLA_V100, 4, 16),
        "T4_1X": _gpu(AcceleratorType.NVIDIA_TESLA_T4, 1, 8),
        "T4_4X": _gpu(AcceleratorType.NVIDIA_TESLA_T4, 4, 16),
        "TPU": MachineConfig(None, None, AcceleratorType.TPU_V3, 8),
    }
)
"""tfc.run's machine presets (K80 and P100 ones refused with the fix: both reached end of support,
K80 on 2024-05-01, P100 on 2026-09-15)."""


@dataclass
class DockerConfig:
    """Image settings, as ``tfc.DockerConfig``: the image to build (``image``), its
    ``parent_image``, an image to reuse layers from (``cache_from``) and a Cloud Storage bucket
    to build in with Cloud Build (``image_build_bucket``). All optional: by default the image is
    built locally when the backend needs one, tagged by its content."""

    image: str | None = None
    parent_image: str | None = None
    cache_from: str | None = None
    image_build_bucket: str | None = None
