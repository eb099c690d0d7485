"""Vertex AI's prebuilt TensorFlow training containers: the executors of the package route.

A job that needs nothing built runs its code as a Python package on one of these images
(``pythonPackageSpec.executorImageUri``); the image must carry the notebook's TensorFlow
(major.minor) and a GPU build when the job has GPUs. The list is data, with the date it was
taken from Vertex AI's "Prebuilt containers for custom training" page; Vertex AI adds versions
later than this list knows, and ``c.TfcConfig.prebuilt_images`` (``TFC_PREBUILT_IMAGES``)
adds them, or another region's copy of a listed one:
``2.17=europe-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest,2.17-gpu=...``.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from ...errors import SpecError

LISTED = "2026-11"
"""When this list was taken."""
# (TensorFlow major.minor, GPU build) -> image name in vertex-ai/training (Python 3.10 builds).
IMAGES: dict[tuple[str, bool], str] = {
    ("2.12", False): "tf-cpu.2-12.py310",
    ("2.12", True): "tf-gpu.2-12.py310",
    ("2.13", False): "tf-cpu.2-13.py310",
    ("2.13", True): "tf-gpu.2-13.py310",
    ("2.14", False): "tf-cpu.2-14.py310",
    ("2.14", True): "tf-gpu.2-14.py310",
    ("2.15", False): "tf-cpu.2-15.py310",
    ("2.15", True): "tf-gpu.2-15.py310",
    ("2.16", False): "tf-cpu.2-16.py310",
    ("2.16", True): "tf-gpu.2-16.py310",
    ("2.17", False): "tf-cpu.2-17.py310",
    ("2.17", True): "tf-gpu.2-17.py310",
}
END_OF_AVAILABILITY: dict[str, str] = {
    "2.12": "2025-06-30",
    # 2.13 and 2.14: https://cloud.google.com/vertex-ai/docs/supported-frameworks-list (custom
    # training, TensorFlow; read 2026-11-26): "2.14 (Python 3.10) ... 2025年9月26日", "2.13
    # (Python 3.10) ... 2025年7月5日" (the page's Chinese copy; both dates earlier than the
    # 2025-11-14 given before, which is 2.15's).
    "2.13": "2025-07-05",
    "2.14": "2025-09-26",
    "2.15": "2025-11-14",
    "2.16": "2026-06-28",
    "2.17": "2026-07-11",
}
"""TensorFlow major.minor -> the end of availability of its prebuilt training images, from
Vertex AI's "Supported frameworks" list (custom training, taken 2026-11). After it, Google may
remove the image: a plan that uses one says so."""
_EXTRA = re.compile(r"\s*(\d+\.\d+)(-gpu)?\s*=\s*(\S+)\s*")
_URI = re.compile(r"[a-z0-9.-]+(:\d+)?/[A-Za-z0-9._/-]+(:[A-Za-z0-9._-]+)?")


@dataclass(frozen=True)
class Executor:
    """The prebuilt image a package job runs on, and why it is that one."""

    uri: str
    tf_version: str
    gpu: bool

    def ended(self, today: datetime.date | None = None) -> str | None:
        """The end-of-availability date this image has passed (None: still offered, or one
        added by the setting, whose date we do not know)."""
        date = END_OF_AVAILABILITY.get(self.tf_version)
        if date is None or "/vertex-ai/training/" not in self.uri:
            return None
        return date if (today or datetime.date.today()).isoformat() > date else None

    def ended_note(self, today: datetime.date | None = None) -> str | None:
        """The plan's warning for an image past its end of availability, with the choice."""
        date = self.ended(today)
        if date is None:
            return None
        return (
            f"Vertex AI's prebuilt TensorFlow {self.tf_version} training image reached its end "
            f"of availability on {date} (Google's supported-frameworks list, {LISTED}): Google "
            "may remove it. --route image builds an image with this kernel's TensorFlow instead"
        )


def _registry(region: str) -> str:
    """The Artifact Registry host nearest ``region`` (us, europe or asia)."""
    prefix = region.split("-", 1)[0]
    where = {"europe": "europe", "asia": "asia", "australia": "asia", "me": "europe"}
    return f"{where.get(prefix, 'us')}-docker.pkg.dev"


def extra_images(text: str | None) -> dict[tuple[str, bool], str]:
    """``c.TfcConfig.prebuilt_images`` read: ``VERSION[-gpu]=URI`` pairs, comma separated.

    Raises:
        SpecError: a pair that does not read, with the fix.
    """
    found: dict[tuple[str, bool], str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        m = _EXTRA.fullmatch(item)
        if not m or not _URI.fullmatch(m.group(3)):
            raise SpecError(
                f"prebuilt_images item {item.strip()!r} does not read",
                "write VERSION=URI or VERSION-gpu=URI, e.g. "
                "2.17=europe-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest",
                field="prebuilt_images",
            )
        found[(m.group(1), bool(m.group(2)))] = m.group(3)
    return found


def executor(
    tf_version: str | None, *, gpu: bool, region: str, extra: str | None = None
) -> Executor:
    """The prebuilt training image for this TensorFlow (major.minor) and device.

    Raises:
        SpecError: Vertex AI offers no such image (as far as this list and the setting know).
    """
    if not tf_version:
        raise SpecError(
            "TensorFlow is not installed in this kernel, so no prebuilt image can match it",
            "install TensorFlow here, or use --route image",
            field="route",
        )
    minor = ".".join(tf_version.split(".")[:2])
    added = extra_images(extra)
    if (minor, gpu) in added:
        return Executor(added[(minor, gpu)], minor, gpu)
    name = IMAGES.get((minor, gpu))
    if name is None:
        offered = sorted({v for v, g in (*IMAGES, *added) if g == gpu}, key=_key)
        device = "GPU" if gpu else "CPU"
        raise SpecError(
            f"Vertex AI has no prebuilt {device} training image for TensorFlow {minor} (this "
            f"list, {LISTED}, has {', '.join(offered)})",
            "use --route image (an image with this TensorFlow is built), or add the image "
            f"Vertex AI now offers: c.TfcConfig.prebuilt_images = '{minor}"
            f"{'-gpu' if gpu else ''}=URI'",
            field="route",
        )
    return Executor(f"{_registry(region)}/vertex-ai/training/{name}:latest", minor, gpu)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))
