"""Image naming: the parent image for a job, and a content-addressed tag.

The tag is a hash of everything that goes into the image, so an unchanged notebook maps to an
image that already exists and nothing is rebuilt. (Building and pushing come with the docker and
Vertex backends; planning only needs the name.)
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

from .spec import JobSpec

RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime" / "tfc_runtime"
REPOSITORY = "tfc-jupyter"


def local_tensorflow_version() -> str | None:
    """The TensorFlow version installed here, read from package metadata (no import)."""
    for dist in ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-macos"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def parent_image(spec: JobSpec, tf_version: str | None = None) -> str:
    """The base image: ``--parent-image``, else TensorFlow's image for the version and device."""
    if spec.image.parent_image:
        return spec.image.parent_image
    version = tf_version or local_tensorflow_version() or "latest"
    version = ".".join(version.split(".")[:3]) if version != "latest" else version
    if spec.chief.is_tpu:
        return f"us-docker.pkg.dev/vertex-ai/training/tf-tpu.{_short(version)}.py310:latest"
    suffix = "-gpu" if spec.chief.gpu_count or (spec.worker and spec.worker.gpu_count) else ""
    return f"tensorflow/tensorflow:{version}{suffix}"


def _short(version: str) -> str:
    parts = version.split(".")
    return "-".join(parts[:2]) if len(parts) >= 2 else version


def runtime_digest() -> str:
    """A hash of the bundled tfc_runtime sources (they are copied into every image)."""
    digest = hashlib.sha256()
    root = RUNTIME_DIR
    if not root.is_dir():  # installed wheel: the package sits next to tfc_jupyter
        import tfc_runtime

        root = Path(tfc_runtime.__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def content_tag(
    *,
    script: str,
    requirements: list[str] | tuple[str, ...],
    parent: str,
    extra: dict[str, str] | None = None,
) -> str:
    """A 16-hex tag naming the image that holds exactly these inputs."""
    payload = json.dumps(
        {
            "script": script,
            "requirements": list(requirements),
            "parent": parent,
            "runtime": runtime_digest(),
            "extra": extra or {},
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def image_repository(spec: JobSpec) -> str:
    """Where the job's image is pushed: the configured registry, else Artifact Registry."""
    if spec.image.registry:
        return spec.image.registry.rstrip("/")
    project = spec.project or "PROJECT"
    return f"{spec.region}-docker.pkg.dev/{project}/{REPOSITORY}"


def image_name(spec: JobSpec) -> str:
    """The image name within the repository, derived from the job name."""
    slug = "".join(c if c.isalnum() else "-" for c in spec.name.lower()).strip("-")
    return "-".join(filter(None, slug.split("-")))[:60] or "notebook"


def planned_image_uri(spec: JobSpec, script: str, requirements: list[str]) -> str:
    """The full image URI the job would run: ``--image``, else repository/name:content-tag."""
    if spec.image.image:
        return spec.image.image
    tag = content_tag(script=script, requirements=requirements, parent=parent_image(spec))
    return f"{image_repository(spec)}/{image_name(spec)}:{tag}"
