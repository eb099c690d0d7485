"""``import tfc_jupyter as tfc`` inside an image that has no tfc_jupyter (docker, Vertex AI).

A TensorFlow Cloud script or notebook keeps its ``tfc.`` calls when it runs as a job. The
launch already checked them; in the job they only need to do what ``tensorflow_cloud`` did
there: ``tfc.remote()`` is True, ``tfc.run(...)`` returns None at once, and the configuration
types accept what they were given. :func:`install` puts this module in ``sys.modules`` as
``tfc_jupyter`` only when the real package cannot be imported (the local backend has it).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any


def remote() -> bool:
    """True: this runs inside a job."""
    return True


def run(*args: Any, **kwargs: Any) -> None:
    """Inside the job, ``tfc.run(...)`` returns None at once (as tfc.run did)."""
    return None


def run_cloudtuner(*args: Any, **kwargs: Any) -> None:
    """Inside the job, ``tfc.run_cloudtuner(...)`` returns None at once (as tfc.run)."""
    return None


def __getattr__(name: str) -> Any:
    """``tfc.CloudTuner`` and ``tfc.CloudOracle`` (Keras Tuner's, see
    :mod:`tfc_runtime.cloudtuner`)."""
    if name in ("CloudTuner", "CloudOracle"):
        from tfc_runtime import cloudtuner

        return getattr(cloudtuner, name)
    raise AttributeError(f"module 'tfc_jupyter' has no attribute {name!r}")


def hp(name: str, default: Any) -> Any:
    """``tfc_jupyter.hp(name, default)``: a sweep trial's value of ``name``, else ``default``."""
    from tfc_runtime.params import hp as trial_value

    return trial_value(name, default)


class _Config:
    """Accepts the arguments it was made with, and keeps them as attributes."""

    _fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for name, value in zip(self._fields, args, strict=False):
            setattr(self, name, value)
        for name, value in kwargs.items():
            setattr(self, name, value)


class MachineConfig(_Config):
    """``tfc.MachineConfig``: checked before launch; here it only holds its values."""

    _fields = ("cpu_cores", "memory", "accelerator_type", "accelerator_count")


class DockerConfig(_Config):
    """``tfc.DockerConfig``: used at launch; here it only holds its values."""

    _fields = ("image", "parent_image", "cache_from", "image_build_bucket")


class _Names(type):
    def __getattr__(cls, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        return name


class AcceleratorType(metaclass=_Names):
    """``tfc.AcceleratorType.NVIDIA_TESLA_T4`` and the rest: their names."""


class _Configs(dict):
    def __missing__(self, key: str) -> MachineConfig:
        return MachineConfig(name=key)


COMMON_MACHINE_CONFIGS = _Configs()


def is_tpu_config(config: Any) -> bool:
    """True for a TPU config (by its accelerator's name)."""
    return "TPU" in str(getattr(config, "accelerator_type", "")) or "TPU" in str(
        getattr(config, "name", "")
    )


def install() -> None:
    """Make ``import tfc_jupyter`` give this module when the package is not installed."""
    if "tfc_jupyter" in sys.modules or importlib.util.find_spec("tfc_jupyter") is not None:
        return
    module = types.ModuleType("tfc_jupyter", __doc__)
    for name in (
        "remote",
        "run",
        "MachineConfig",
        "DockerConfig",
        "AcceleratorType",
        "COMMON_MACHINE_CONFIGS",
        "is_tpu_config",
        "hp",
        "run_cloudtuner",
        "__getattr__",  # CloudTuner, CloudOracle: made when asked for
    ):
        setattr(module, name, globals()[name])
    sys.modules["tfc_jupyter"] = module
