"""The job's code as a Python package: what the package route uploads instead of an image.

A pure wheel (``tfc_job-1.0-py3-none-any.whl``) made from the same build context an image would
be made from (:class:`tfc_jupyter.image.context.Context`), so both routes carry exactly the same
files:

* ``tfc_job/files/``: the script, its source map, and the files next to the notebook that the
  job needs (``--include`` and what planning found the code reads);
* ``tfc_job/task.py``: the entry point (``python -m tfc_job.task ARGS``): copies ``files/`` to
  a fresh working folder, changes into it, and runs ``tfc_runtime`` with ``ARGS``;
* ``tfc_runtime/``: the runtime, as the image has it;
* ``Requires-Dist``: the job's requirements, which Vertex AI's pip installs at start.

The archive is reproducible (sorted entries, fixed times), so unchanged code is the same bytes,
the same digest and the same object in the bucket: nothing to upload again.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from dataclasses import dataclass

from ...image.context import Context

NAME = "tfc_job"
VERSION = "1.0"
MODULE = f"{NAME}.task"
FILENAME = f"{NAME}-{VERSION}-py3-none-any.whl"
OBJECT_PREFIX = "tfc-jupyter/packages/"
CONTENT_TYPE = "application/zip"
_DATE = (1980, 1, 1, 0, 0, 0)

TASK = '''\
"""Entry point of a tfc_jupyter job run as a Python package (Vertex AI's package route)."""

import os
import shutil
import sys
import tempfile
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent / "files"
    work = Path(tempfile.mkdtemp(prefix="tfc-job-"))
    shutil.copytree(here, work, dirs_exist_ok=True)
    os.chdir(work)
    from tfc_runtime.__main__ import main as run

    return run(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
'''


@dataclass(frozen=True)
class JobPackage:
    """The wheel: its bytes and the content digest that names its object in the bucket."""

    data: bytes
    digest: str  # 16 hex digits of the wheel's sha256

    @property
    def filename(self) -> str:
        """The wheel's file name."""
        return FILENAME

    def object_name(self) -> str:
        """Where it goes in the build bucket: ``tfc-jupyter/packages/DIGEST/FILENAME``."""
        return f"{OBJECT_PREFIX}{self.digest}/{FILENAME}"

    def uri(self, bucket: str) -> str:
        """``gs://BUCKET/tfc-jupyter/packages/DIGEST/FILENAME``."""
        return f"gs://{bucket.removeprefix('gs://').rstrip('/')}/{self.object_name()}"


def _content(context: Context) -> list[tuple[str, bytes]]:
    """``(path in the wheel, bytes)`` of every file the job needs, from the build context."""
    files: list[tuple[str, bytes]] = [
        (f"{NAME}/__init__.py", b""),
        (f"{NAME}/task.py", TASK.encode()),
    ]
    for entry in context.entries:
        if entry.arcname.startswith(("app/", "code/")):
            target = f"{NAME}/files/{entry.arcname.split('/', 1)[1]}"
        elif entry.arcname.startswith("tfc/tfc_runtime/"):
            target = entry.arcname.removeprefix("tfc/")
        else:  # requirements files and the CA bundle are the image build's own
            continue
        if entry.data is not None:
            data = entry.data
        else:
            assert entry.source is not None
            data = entry.source.read_bytes()
        files.append((target, data))
    return sorted(files)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def build(context: Context, requirements: list[str]) -> JobPackage:
    """The job's wheel (see the module docstring); ``requirements`` become ``Requires-Dist``."""
    dist = f"{NAME}-{VERSION}.dist-info"
    metadata = [
        "Metadata-Version: 2.1",
        f"Name: {NAME.replace('_', '-')}",
        f"Version: {VERSION}",
        "Summary: a notebook's job, made by tfc_jupyter",
        *(f"Requires-Dist: {line}" for line in requirements),
    ]
    files = _content(context)
    files += [
        (f"{dist}/METADATA", ("\n".join(metadata) + "\n").encode()),
        (
            f"{dist}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: tfc_jupyter\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n",
        ),
    ]
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in files)
    record += f"{dist}/RECORD,,\n"
    files.append((f"{dist}/RECORD", record.encode()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    data = buf.getvalue()
    return JobPackage(data, hashlib.sha256(data).hexdigest()[:16])
