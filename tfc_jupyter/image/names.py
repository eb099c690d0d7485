"""Image naming: the parent image for a job, and the content-addressed name of its image.

The tag is a hash of everything that goes into the image (:attr:`.context.Context.tag`), so an
unchanged notebook maps to an image that already exists and nothing is rebuilt. Building and
pushing are :mod:`.docker`'s and :mod:`.cloudbuild`'s; planning only needs the name.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from pathlib import Path

from .. import registry
from ..job.spec import JobSpec

RUNTIME_DIR = Path(__file__).resolve().parents[2] / "runtime" / "tfc_runtime"
REPOSITORY = "tfc-jupyter"
CONTENT_LABEL = "org.tfc-jupyter.content"
"""The image label holding the hash of the context it was built from."""


_TENSORFLOW_DISTS = ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-macos")
_DIST_INFO = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)\.dist-info$")


def _dist_key(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def dist_info_versions(names: tuple[str, ...], path: list[str] | None = None) -> dict[str, str]:
    """``{name: version}`` of the distributions ``names`` found as ``NAME-VERSION.dist-info``
    folders on ``path`` (default ``sys.path``; the first entry that has one wins, as
    ``importlib.metadata`` finds it). A listing of each folder, without importing
    ``importlib.metadata`` (about 12 ms, on every plan)."""
    wanted = {_dist_key(n): n for n in names}
    found: dict[str, str] = {}
    for entry in sys.path if path is None else path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:  # a zip file, a missing folder
            continue
        for item in listing:
            match = _DIST_INFO.match(item)
            if match is None:
                continue
            name = wanted.get(_dist_key(match.group("name")))
            if name is not None and name not in found:
                found[name] = match.group("version")
        if len(found) == len(wanted):
            break
    return found


def local_tensorflow_version() -> str | None:
    """The TensorFlow version installed here, read from package metadata (no import): its
    ``.dist-info`` folder's name, else (an egg, a zip) ``importlib.metadata``."""
    found = dist_info_versions(_TENSORFLOW_DISTS)
    for dist in _TENSORFLOW_DISTS:
        if dist in found:
            return found[dist]
    from importlib import metadata

    for dist in _TENSORFLOW_DISTS:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


#: The last TensorFlow with tf.estimator (RunConfig, TPUConfig): Estimator jobs run on it.
ESTIMATOR_TF = "2.15.1"
# TPU jobs: Vertex AI runs TPUs as TPU VMs, which need TensorFlow's TPU-VM build and libtpu in
# the image (a tensorflow/tensorflow image has neither). Vertex AI's prebuilt TPU images may be
# past their end of availability, and there is none for v5e, so the image is built as Vertex AI's
# TPU guide ("Training with TPU accelerators") builds a custom TPU container: Python 3.10, the
# TPU-VM wheel of TensorFlow, libtpu.so in /lib, and for v5e the PJRT runtime's variables.
TPU_BASE = "python:3.10-slim"
TPU_BUILDS: dict[str, tuple[str, str, str]] = {
    "2.15": (
        "2.15.0",
        "https://storage.googleapis.com/cloud-tpu-tpuvm-artifacts/tensorflow/tf-2.15.0/"
        "tensorflow-2.15.0-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "https://storage.googleapis.com/cloud-tpu-tpuvm-artifacts/libtpu/1.9.0/libtpu.so",
    ),
}
"""TensorFlow minor -> (version, its TPU-VM wheel, the libtpu it goes with), as listed in
Vertex AI's TPU guide (2026-11). 2.15 also keeps TPUEstimator for Estimator code."""
# Sources (read 2026-11-29): Vertex AI's "Training with TPU accelerators"
# (https://cloud.google.com/vertex-ai/docs/training/training-with-tpu-vm) gives the wheel and
# libtpu URLs above for TensorFlow 2.15, and only for it. Cloud TPU's "TPU software versions"
# (https://cloud.google.com/tpu/docs/runtimes) pairs TensorFlow 2.18.0 with libtpu.so 1.12.0
# (2.17.1 with 1.11.1, 2.16.2 with 1.10.1) but names no TPU-VM wheel URL for them, so Keras
# jobs stay on 2.15 until a Google page names the 2.18 wheel (no URL is guessed here).
TPU_IMAGE_TF = "2.15"
TPU_PJRT_ENV = {
    "NEXT_PLUGGABLE_DEVICE_USE_C_API": "true",
    "TF_PLUGGABLE_DEVICE_LIBRARY_PATH": "/lib/libtpu.so",
}
"""TPU v5e runs TensorFlow through the PJRT runtime (Cloud TPU's runtimes guide)."""


def tpu_steps(spec: JobSpec) -> list[str]:
    """The Dockerfile lines that make a TPU image on :data:`TPU_BASE` (none with
    ``--parent-image``, which is then a TPU-ready image of the user's)."""
    if not spec.chief.is_tpu or spec.image.parent_image:
        return []
    _, wheel, libtpu = TPU_BUILDS[TPU_IMAGE_TF]
    lines = [
        f"RUN python3 -m pip install --no-cache-dir {wheel}",
        f"ADD {libtpu} /lib/libtpu.so",
    ]
    if spec.chief.tpu_topology:  # v5e
        lines.append("ENV " + " ".join(f"{k}={v}" for k, v in TPU_PJRT_ENV.items()))
    return lines


def tpu_image_note(spec: JobSpec) -> str:
    """What the plan says about a TPU job's image."""
    version, _, libtpu = TPU_BUILDS[TPU_IMAGE_TF]
    libtpu_version = libtpu.rsplit("/", 2)[-2]
    pjrt = ", with the PJRT runtime v5e needs" if spec.chief.tpu_topology else ""
    return (
        f"TPU job: the image is built on {TPU_BASE} with TensorFlow {version}'s TPU-VM wheel and "
        f"libtpu {libtpu_version}{pjrt}, as Vertex AI's TPU guide builds one (its prebuilt TPU "
        "images may be past their end of availability, and there is none for v5e); "
        "--parent-image with a TPU-ready image of yours skips this"
    )


def tpu_parent_warning(parent: str) -> str:
    """The plan's warning for a TPU job on a ``--parent-image`` that names no TPU build."""
    return (
        f"TPU job on --parent-image {parent}, which names no TPU build: the job needs "
        "TensorFlow's TPU-VM build and libtpu in the image (a tensorflow/tensorflow image has "
        "neither), or TPUClusterResolver finds no TPU; drop --parent-image to have one built"
    )


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:2] if x.isdigit())


def parent_image(spec: JobSpec, tf_version: str | None = None) -> str:
    """The base image: ``--parent-image``, else TensorFlow's image for the version and device.

    TPU jobs are built on ``TPU_BASE`` (see :func:`tpu_steps`); Estimator jobs get TensorFlow 2.15
    (the last with tf.estimator) unless this machine's TensorFlow is older.
    """
    if spec.image.parent_image:
        return spec.image.parent_image
    if spec.chief.is_tpu:
        return TPU_BASE
    version = tf_version or local_tensorflow_version() or "latest"
    version = ".".join(version.split(".")[:3]) if version != "latest" else version
    if spec.decided.estimator and (version == "latest" or _version_tuple(version) > (2, 15)):
        version = ESTIMATOR_TF
    suffix = "-gpu" if spec.uses_gpus else ""
    return f"tensorflow/tensorflow:{version}{suffix}"


def image_repository(spec: JobSpec) -> str:
    """Where the job's image is pushed: the configured registry, else Artifact Registry.

    A job whose image runs on this machine (Docker), with neither a registry nor a project,
    keeps a local name (``tfc-jupyter/NAME:TAG``): it is never pushed.
    """
    if spec.image.registry:
        return spec.image.registry.rstrip("/")
    if registry.traits(spec.backend).image_here and not spec.google.project:
        return REPOSITORY
    project = spec.google.project or "PROJECT"
    return f"{spec.google.region}-docker.pkg.dev/{project}/{REPOSITORY}"


def image_name(spec: JobSpec) -> str:
    """The image name within the repository, derived from the job name (its ASCII letters and
    digits: ``Modèle été`` -> ``modele-ete``; a name in another script gives ``notebook``)."""
    folded = unicodedata.normalize("NFKD", spec.name).encode("ascii", "ignore").decode()
    slug = "".join(c if c.isalnum() else "-" for c in folded.lower()).strip("-")
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
