"""The build bucket through the Cloud Storage JSON API: the context's upload, the build log's
reads (from a byte offset)."""

from __future__ import annotations

import base64
import codecs
import gzip
import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import quote

from ....image import context as package
from ....image.progress import Progress, report
from ....util.files import human_size
from ..google.gcloud import Api
from . import client
from .client import checked, json_body
from .settings import CloudBuildSettings

T = TypeVar("T")

OBJECT_PREFIX = "tfc-jupyter/"
MAX_LISTED = 10_000  # objects of one model folder downloaded at most
STORAGE = Api(
    "Cloud Storage",
    "storage.googleapis.com",
    "the Storage Object Admin role (roles/storage.objectAdmin) on the build bucket",
    "TFC_STORAGE_ENDPOINT",
    not_found_hint="check --build-bucket: the bucket must exist (gcloud storage buckets create)",
    quota_hint="or wait a minute and launch again",
)


class Storage:
    """The build bucket of ``project`` (and the buckets the build logs to)."""

    def __init__(self, project: str, bucket: str, settings: CloudBuildSettings) -> None:
        self.project, self.bucket, self.settings = project, bucket, settings
        self.session = client.session(settings.storage_url())
        self.api = replace(
            STORAGE,
            not_found_hint=f"check --build-bucket: gs://{bucket} must exist in project "
            f"{project} (gcloud storage buckets create gs://{bucket} --project {project})",
        )

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn`` retried as Cloud Storage errors say."""
        return client.call(self.settings, self.project, what, fn, self.api)

    def object_url(self, bucket: str, name: str) -> str:
        """The JSON API URL of object ``name`` in ``bucket``."""
        return f"{self.settings.storage_url()}/storage/v1/b/{bucket}/o/{quote(name, safe='')}"

    def names(self, prefix: str, limit: int = MAX_LISTED) -> list[str]:
        """Names of the bucket's objects under ``prefix`` (every page, at most ``limit``)."""
        found: list[str] = []
        token = ""
        while True:

            def page(token: str = token) -> Any:
                params = {
                    "prefix": prefix,
                    "maxResults": "1000",
                    "fields": "items/name,nextPageToken",
                }
                if token:
                    params["pageToken"] = token
                url = f"{self.settings.storage_url()}/storage/v1/b/{self.bucket}/o"
                return json_body(
                    self.session.get(url, params=params, timeout=self.settings.timeout_s)
                )

            listing = self.call(f"listing gs://{self.bucket}/{prefix}", page) or {}
            found += [str(item["name"]) for item in listing.get("items", []) if "name" in item]
            token = str(listing.get("nextPageToken") or "")
            if not token or len(found) >= limit:
                return found[:limit]

    def download(self, name: str, dest: Path) -> int:
        """Object ``name`` into the file ``dest`` (streamed); its size."""
        where = f"gs://{self.bucket}/{name}"

        def get() -> int:
            reply = self.session.get(
                self.object_url(self.bucket, name),
                params={"alt": "media"},
                stream=True,
                timeout=self.settings.timeout_s,
            )
            checked(reply)
            dest.parent.mkdir(parents=True, exist_ok=True)
            size = 0
            with open(dest, "wb") as fh:
                for chunk in reply.iter_content(1 << 20):
                    fh.write(chunk)
                    size += len(chunk)
            return size

        report(Progress("download", f"downloading {where}"))
        return self.call(f"downloading {where}", get)

    def upload(self, context: package.Context) -> dict[str, Any]:
        """Put the context's tarball in the bucket (unless the same bytes are there); returns
        the build's ``storageSource``."""
        name = f"{OBJECT_PREFIX}{context.tag}.tar.gz"
        where = f"gs://{self.bucket}/{name}"
        fh, size, md5 = tarball(context)

        def body() -> Any:
            fh.seek(0)
            return _Reading(fh, size, where)

        try:
            meta, _ = self._put_once(
                name, md5, size, body, "application/gzip", "context", "the build context"
            )
        finally:
            fh.close()
        source = {"bucket": self.bucket, "object": name}
        if meta and meta.get("generation"):
            source["generation"] = str(meta["generation"])
        return source

    def put(self, name: str, data: bytes, content_type: str) -> bool:
        """Put ``data`` at ``name`` in the bucket unless the same bytes are there (its MD5);
        True when it was uploaded."""
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        _, sent = self._put_once(
            name, md5, len(data), lambda: data, content_type, "package", "the job's package"
        )
        return sent

    def _put_once(
        self,
        name: str,
        md5: str,
        size: int,
        body: Callable[[], Any],
        content_type: str,
        phase: str,
        what: str,
    ) -> tuple[Any, bool]:
        """Look the object up; upload ``body()`` unless the same bytes (``md5``) are there.
        Returns its metadata and whether it was uploaded; progress is reported as ``phase``."""
        where = f"gs://{self.bucket}/{name}"
        url = self.object_url(self.bucket, name)

        def look() -> Any:
            return json_body(self.session.get(url, timeout=self.settings.timeout_s), missing=True)

        meta = self.call(f"looking up {where}", look)
        if meta and meta.get("md5Hash") == md5:
            report(Progress(phase, f"{where} is there already ({human_size(size)})"))
            return meta, False

        def send() -> Any:
            return json_body(
                self.session.post(
                    f"{self.settings.storage_url()}/upload/storage/v1/b/{self.bucket}/o",
                    params={"uploadType": "media", "name": name},
                    data=body(),
                    headers={"Content-Type": content_type},
                    timeout=max(self.settings.timeout_s, size / 1e6),  # >= 1 MB/s
                )
            )

        report(Progress(phase, f"uploading {human_size(size)} to {where}"))
        return self.call(f"uploading {what} to {where}", send), True


class LogReader:
    """Reads a build's log object from a byte offset: only what is new each time."""

    def __init__(self, storage: Storage, bucket: str, name: str) -> None:
        self.storage, self.bucket, self.name = storage, bucket, name
        self.offset = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._partial = ""

    def read(self) -> list[str]:
        """Complete new lines (none while the log does not exist yet)."""
        s = self.storage

        def get() -> bytes:
            reply = s.session.get(
                s.object_url(self.bucket, self.name),
                params={"alt": "media"},
                headers={"Range": f"bytes={self.offset}-"},
                timeout=s.settings.timeout_s,
            )
            if reply.status_code in (404, 416):  # not written yet / nothing new
                return b""
            checked(reply, (200, 206))
            data = bytes(reply.content)
            return data if reply.status_code == 206 else data[self.offset :]

        data = s.call(f"reading the log of gs://{self.bucket}/{self.name}", get)
        self.offset += len(data)
        text = self._partial + self._decoder.decode(data)
        *lines, self._partial = text.split("\n")
        return lines

    def flush(self) -> list[str]:
        """The last line, when the log does not end with a newline."""
        rest, self._partial = self._partial + self._decoder.decode(b"", final=True), ""
        return [rest] if rest else []


def tarball(context: package.Context) -> tuple[IO[bytes], int, str]:
    """The context as a reproducible ``.tar.gz`` (spooled to disk past 32 MB): ``(file, size,
    base64 MD5)`` as Cloud Storage reports it."""
    spool = tempfile.SpooledTemporaryFile(max_size=32 << 20)  # noqa: SIM115 (returned)
    with gzip.GzipFile(filename="", mode="wb", fileobj=spool, mtime=0) as gz:
        context.write_tar(gz)  # type: ignore[arg-type]
    size = spool.tell()
    spool.seek(0)
    md5 = hashlib.md5(usedforsecurity=False)
    for block in iter(lambda: spool.read(1 << 20), b""):
        md5.update(block)
    spool.seek(0)
    return spool, size, base64.b64encode(md5.digest()).decode()


class _Reading:
    """A request body that reports upload progress as it is read."""

    def __init__(self, fh: IO[bytes], size: int, where: str) -> None:
        self.fh, self.size, self.where, self.sent, self._tenth = fh, size, where, 0, -1

    def __len__(self) -> int:
        return self.size

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n)
        self.sent += len(data)
        tenth = self.sent * 10 // max(self.size, 1)
        if data and tenth != self._tenth:
            self._tenth = tenth
            sent, total = human_size(self.sent), human_size(self.size)
            message = f"uploading {sent} / {total} to {self.where}"
            report(Progress("context", message, self.sent, self.size))
        return data


def open_uri(uri: str, record: Any, settings: Any = None) -> tuple[Storage, str]:
    """Our Cloud Storage client for the bucket of a ``gs://`` URI a job wrote to, with the
    job's Google Cloud project as its record keeps it, and the URI's path in the bucket
    (:data:`tfc_jupyter.registry.STORES`)."""
    from ....config import current_settings
    from ....job.google_target import GoogleTarget

    bucket, _, path = uri.removeprefix("gs://").partition("/")
    project = str(GoogleTarget.raw(record.spec).get("project") or "")
    cloud = CloudBuildSettings.from_settings(settings or current_settings())
    return Storage(project, bucket, cloud), path
