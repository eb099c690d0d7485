"""Image naming: the parent image for a job, and the content-addressed name of its image.

The tag is a hash of everything that goes into the image (:attr:`.context.Context.tag`), so an
unchanged notebook maps to an image that already exists and nothing is rebuilt. Building and
pushing are :mod:`.docker`'s and :mod:`.cloudbuild`'s; planning only needs the name.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from ..job.spec import BackendName, JobSpec

RUNTIME_DIR = Path(__file__).resolve().parents[2] / "runtime" / "tfc_runtime"
REPOSITORY = "tfc-jupyter"
CONTENT_LABEL = "org.tfc-jupyter.content"
"""The image label holding the hash of the context it was built from."""


def local_tensorflow_version() -> str | None:
    """The TensorFlow version installed here, read from package metadata (no import)."""
    for dist in ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-macos"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


#: The last TensorFlow with tf.estimator (RunConfig, TPUConfig): Estimator jobs run on it.
ESTIMATOR_TF = "2.15.1"
# TPU jobs: Vertex AI runs TPUs as TPU VMs, which need TensorFlow's TPU-VM build and libtpu in
# the image (a tensorflow/tensorflow image has neither). The newest Vertex AI prebuilt training
# image with them is TensorFlow 2.15 for TPU v2/v3 (Vertex publishes none for TF >= 2.16, and
# none for v5e: a v5e job should pass --parent-image with TensorFlow's TPU-VM wheel and
# libtpu.so). 2.15 also keeps TPUEstimator for Estimator code. Regional copies: us, europe, asia.
TPU_IMAGE = "{region}-docker.pkg.dev/vertex-ai/training/tf-tpu.2-15.cp310:latest"
TPU_IMAGE_TF = "2.15"


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:2] if x.isdigit())


def tpu_parent_image(region: str) -> str:
    """The TPU-VM TensorFlow image (see ``TPU_IMAGE``), from the registry nearest ``region``."""
    prefix = region.split("-", 1)[0]
    where = {"europe": "europe", "asia": "asia", "australia": "asia", "me": "europe"}
    return TPU_IMAGE.format(region=where.get(prefix, "us"))


def parent_image(spec: JobSpec, tf_version: str | None = None) -> str:
    """The base image: ``--parent-image``, else TensorFlow's image for the version and device.

    TPU jobs get the TPU-VM image (``TPU_IMAGE``); Estimator jobs TensorFlow 2.15 (the last with
    tf.estimator) unless this machine's TensorFlow is older.
    """
    if spec.image.parent_image:
        return spec.image.parent_image
    if spec.chief.is_tpu:
        return tpu_parent_image(spec.region)
    version = tf_version or local_tensorflow_version() or "latest"
    version = ".".join(version.split(".")[:3]) if version != "latest" else version
    if spec.estimator and (version == "latest" or _version_tuple(version) > (2, 15)):
        version = ESTIMATOR_TF
    suffix = "-gpu" if spec.chief.gpu_count or (spec.worker and spec.worker.gpu_count) else ""
    return f"tensorflow/tensorflow:{version}{suffix}"


def image_repository(spec: JobSpec) -> str:
    """Where the job's image is pushed: the configured registry, else Artifact Registry.

    A docker-backend job with neither a registry nor a project keeps a local name
    (``tfc-jupyter/NAME:TAG``): it runs on this machine and is never pushed.
    """
    if spec.image.registry:
        return spec.image.registry.rstrip("/")
    if spec.backend is BackendName.DOCKER and not spec.project:
        return REPOSITORY
    project = spec.project or "PROJECT"
    return f"{spec.region}-docker.pkg.dev/{project}/{REPOSITORY}"


def image_name(spec: JobSpec) -> str:
    """The image name within the repository, derived from the job name."""
    slug = "".join(c if c.isalnum() else "-" for c in spec.name.lower()).strip("-")
    return "-".join(filter(None, slug.split("-")))[:60] or "notebook"


def image_uri(spec: JobSpec, tag: str) -> str:
    """``repository/name:tag`` of the job's image."""
    return f"{image_repository(spec)}/{image_name(spec)}:{tag}"


def planned_image_uri(spec: JobSpec, tag: str | None) -> str:
    """The image the job runs: ``--image``, else repository/name:<hash of the build context>."""
    if spec.image.image:
        return spec.image.image
    if tag is None:
        raise ValueError("a job without --image needs its build context to be named")
    return image_uri(spec, tag)
