"""How a Vertex AI job's code gets there: as a Python package on a prebuilt TensorFlow image
(nothing to build), or in an image built for it.

``--route auto`` (the default) takes the package route when nothing needs building: no
``--image`` or ``--parent-image``, a build bucket to upload the package to, no ``apt.txt``, every
requirement one pip can install at start, not a TPU job (its TensorFlow needs a TPU build), and a
prebuilt image with the notebook's TensorFlow. Otherwise an image is built, and the plan says
why. ``--route package`` insists (and says what stands in the way); ``--route image`` builds.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import SpecError
from ...image.context import Context
from ...job.spec import JobSpec
from ...notebook.requirements import NO_DEPS_PREFIX, RESOLVER_OPTIONS
from ...registry import Route
from . import prebuilt, wheel


def _blocker(spec: JobSpec, requirements: list[str], base_dir: Path) -> str | None:
    """Why the package route cannot carry this job (None: it can)."""
    if spec.image.image:
        return "--image names the image to run"
    if spec.image.parent_image:
        return "--parent-image asks for an image built on it"
    if spec.chief.is_tpu:
        return "a TPU job needs TensorFlow's TPU build, which the prebuilt images lack"
    if not spec.image.build_bucket:
        return "no build bucket to upload the package to (--build-bucket)"
    if (base_dir / "apt.txt").is_file():
        return "apt.txt asks for system packages, which only an image can hold"
    for line in requirements:
        text = line.strip()
        odd = text.startswith((*RESOLVER_OPTIONS, NO_DEPS_PREFIX, "-", ".", "/")) or "://" in text
        if odd and "@" not in text:  # NAME @ URL is a requirement pip takes at start
            return f"the requirement {text!r} is not one pip installs at start by name"
    return None


def choose_route(
    spec: JobSpec,
    requirements: list[str],
    base_dir: Path,
    *,
    asked: str,
    tf_version: str | None,
    extra_images: str | None = None,
    context: Context | None = None,
) -> Route:
    """The route of a Vertex AI job (``asked``: auto, package or image); the package route's
    wheel is built from ``context``, the build context an image would be built from.

    Raises:
        SpecError: ``--route package`` when the package route cannot carry the job.
    """
    if asked == "image":
        return Route("image", "asked for (--route image)")
    blocker = _blocker(spec, requirements, base_dir)
    gpu = spec.uses_gpus
    executor = None
    if blocker is None:
        try:
            executor = prebuilt.executor(
                tf_version, gpu=gpu, region=spec.google.region, extra=extra_images
            )
        except SpecError as exc:
            if asked == "package":
                raise
            blocker = exc.message
    if blocker is not None:
        if asked == "package":
            raise SpecError(
                f"the package route cannot carry this job: {blocker}",
                "drop --route package (an image is built), or remove what stands in the way",
                field="route",
            )
        return Route("image", blocker)
    assert executor is not None
    package = wheel.build(context, requirements) if context else None
    return Route(
        "package",
        f"nothing to build: the code goes as a Python package onto Vertex AI's prebuilt "
        f"TensorFlow {executor.tf_version} {'GPU' if gpu else 'CPU'} image",
        image=executor.uri,
        package=package,
        note=executor.ended_note() if package else None,
    )
