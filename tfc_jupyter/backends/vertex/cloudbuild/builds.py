"""A Cloud Build build: create it (adopting one a lost answer created), poll it within a deadline,
cancel it; and its log as progress (Dockerfile steps, the push, the failing step)."""

from __future__ import annotations

import contextlib
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ....errors import BackendError
from ....image.names import CONTENT_LABEL
from ....image.progress import ANSI, LOG_TAIL, BuildError, Progress, build_error, report, short
from ..google.gcloud import Api
from . import client
from .client import json_body
from .settings import CloudBuildSettings
from .storage import LogReader, Storage

T = TypeVar("T")

DOCKER_BUILDER = "gcr.io/cloud-builders/docker"
BUILD_TAG = "tfc-jupyter"
TERMINAL = ("SUCCESS", "FAILURE", "INTERNAL_ERROR", "TIMEOUT", "CANCELLED", "EXPIRED")
_STEP_LINE = re.compile(r'^Step #(\d+)(?: - "[^"]*")?: ?(.*)$')
_DOCKER_STEP = re.compile(r"^Step (\d+)/(\d+) : (.*)$")
_DOCKER_ERROR = re.compile(
    r"^(The command .* returned|COPY failed|ADD failed|failed to|unable to|Error response from|"
    r"error |Error: |ERROR: )"
)
CLOUD_BUILD = Api(
    "Cloud Build",
    "cloudbuild.googleapis.com",
    "the Cloud Build Editor role (roles/cloudbuild.builds.editor)",
    "TFC_CLOUDBUILD_ENDPOINT",
    not_found_hint="check --project (and TFC_CLOUDBUILD_LOCATION if set)",
    quota_hint="or wait for running builds to end",
)


def build_request(
    uri: str,
    source: dict[str, Any],
    *,
    content_tag: str,
    cache_from: str | None,
    timeout_s: float,
    attempt: str,
) -> dict[str, Any]:
    """The ``Build`` to create: pull the cache image (may fail), ``docker build``, push."""
    steps: list[dict[str, Any]] = []
    args = ["build", "-t", uri, "--label", f"{CONTENT_LABEL}={content_tag}"]
    if cache_from:
        pull = {"id": "pull-cache", "name": DOCKER_BUILDER, "args": ["pull", cache_from]}
        steps.append({**pull, "allowFailure": True})
        args += ["--cache-from", cache_from]
    steps.append(
        {"id": "build", "name": DOCKER_BUILDER, "args": [*args, "."], "env": ["DOCKER_BUILDKIT=0"]}
    )
    return {
        "source": {"storageSource": source},
        "steps": steps,
        "images": [uri],
        "timeout": f"{max(int(timeout_s), 1)}s",
        "logsBucket": f"gs://{source['bucket']}",
        "options": {"logging": "GCS_ONLY"},
        "tags": [BUILD_TAG, attempt],
    }


class CloudBuilder:
    """One image build through Cloud Storage and Cloud Build (see :mod:`tfc_jupyter.cloudbuild`)."""

    def __init__(self, project: str, bucket: str, settings: CloudBuildSettings) -> None:
        self.project, self.bucket, self.settings = project, bucket, settings
        self.storage = Storage(project, bucket, settings)
        self.api = client.session(settings.api_url())
        self.parent = f"projects/{project}" + (
            f"/locations/{settings.location}" if settings.location else ""
        )
        self.attempt = f"tfc-{secrets.token_hex(6)}"  # finds our build after a lost answer
        self.log = BuildLog()

    def _call(self, what: str, fn: Callable[[], T], **kw: Any) -> T:
        return client.call(self.settings, self.project, what, fn, CLOUD_BUILD, **kw)

    def create(
        self, source: dict[str, Any], uri: str, content_tag: str, cache_from: str | None
    ) -> dict[str, Any]:
        """Create the build; returns the ``Build`` (from the operation's metadata)."""
        body = build_request(
            uri,
            source,
            content_tag=content_tag,
            cache_from=cache_from,
            timeout_s=self.settings.build_timeout_s,
            attempt=self.attempt,
        )
        url = f"{self.settings.api_url()}/v1/{self.parent}/builds"

        def adopt() -> dict[str, Any] | None:
            """A build that an earlier try created although its answer was lost."""
            found = json_body(
                self.api.get(
                    url,
                    params={"filter": f'tags="{self.attempt}"', "pageSize": 5},
                    timeout=self.settings.timeout_s,
                )
            )
            builds = found.get("builds") or []
            return {"metadata": {"build": builds[0]}} if builds else None

        operation = self._call(
            "creating the Cloud Build build",
            lambda: json_body(self.api.post(url, json=body, timeout=self.settings.timeout_s)),
            before_retry=adopt,
        )
        created = dict((operation.get("metadata") or {}).get("build") or {})
        if not created.get("id"):
            raise BackendError(
                "Cloud Build answered without a build id", "try again; report it if it persists"
            )
        report(Progress("build", f"Cloud Build {created['id']} {_state(created)}"))
        return created

    def follow(self, created: dict[str, Any], uri: str) -> dict[str, Any]:
        """Poll the build and stream its log into progress until it ends (bounded).

        Raises:
            BuildError: the build did not succeed.
            BackendError: past the deadline (the build is cancelled).
        """
        build_id = created["id"]
        url = f"{self.settings.api_url()}/v1/{self.parent}/builds/{build_id}"
        limit_s = self.settings.build_timeout_s + self.settings.queue_s
        deadline = time.monotonic() + limit_s
        reader = self._log_reader(created)
        self.log.uri = uri
        current, status = created, created.get("status")
        try:
            while True:
                current = self._call(
                    f"reading Cloud Build {build_id}",
                    lambda: json_body(self.api.get(url, timeout=self.settings.timeout_s)),
                )
                if current.get("status") != status:
                    status = current.get("status")
                    report(Progress("build", f"Cloud Build {build_id} {_state(current)}"))
                if reader is None:
                    reader = self._log_reader(current)
                if reader is not None:
                    self.log.feed(reader.read())
                if status in TERMINAL:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    self._cancel(url)
                    raise BackendError(
                        f"Cloud Build {build_id} did not end within {limit_s:g} s; "
                        "it was cancelled",
                        "raise TFC_BUILD_TIMEOUT (the build's own limit) or TFC_CLOUDBUILD_QUEUE "
                        "(the wait for a worker), or see the build in the Cloud console",
                    )
                time.sleep(min(self.settings.poll_s, left))
        except KeyboardInterrupt:
            self._cancel(url)
            raise
        if reader is not None:
            self._drain(reader)
        if status != "SUCCESS":
            raise self.log.failure(current, self.bucket)
        return current

    def _cancel(self, url: str) -> None:
        """Ask Cloud Build to stop the build (one try; it may have ended meanwhile)."""
        # best effort: the error that brought us here is what the user sees
        with contextlib.suppress(Exception):
            self.api.post(f"{url}:cancel", json={}, timeout=self.settings.timeout_s)

    def _log_reader(self, current: dict[str, Any]) -> LogReader | None:
        logs = str(current.get("logsBucket") or "")
        if not logs.startswith("gs://"):
            return None
        bucket, _, prefix = logs.removeprefix("gs://").partition("/")
        name = f"{prefix.strip('/')}/log-{current['id']}.txt".lstrip("/")
        return LogReader(self.storage, bucket, name)

    def _drain(self, reader: LogReader) -> None:
        """After the build ends: read the log until it is complete (a few bounded tries)."""
        for _ in range(10):
            self.log.feed(reader.read())
            if self.log.finished():
                break
            time.sleep(min(self.settings.poll_s, 1.0) / 2)
        self.log.feed(reader.flush())


def _state(current: dict[str, Any]) -> str:
    return {
        "QUEUED": "is queued",
        "PENDING": "is pending",
        "WORKING": "is building",
        "SUCCESS": "succeeded",
    }.get(str(current.get("status")), str(current.get("status", "")).lower())


@dataclass
class BuildLog:
    """Cloud Build's log as progress: the Dockerfile steps of the docker build, then the push;
    and, when the build fails, the step and the tail to show."""

    uri: str = ""
    lines: list[str] = field(default_factory=list)
    by_step: dict[int, list[str]] = field(default_factory=dict)  # build step -> its lines
    steps: dict[int, list[tuple[str, bool]]] = field(default_factory=dict)  # Dockerfile steps

    def feed(self, lines: list[str]) -> None:
        """Take new log lines, reporting Dockerfile steps and the push."""
        for raw in lines:
            line = ANSI.sub("", raw).rstrip("\r")
            self.lines.append(line)
            m = _STEP_LINE.match(line)
            if m:
                n, text = int(m.group(1)), m.group(2)
                self.by_step.setdefault(n, []).append(text)
                self._docker_line(n, text)
            elif line == "PUSH":
                report(Progress("push", f"Cloud Build is pushing {self.uri}"))

    def _docker_line(self, n: int, text: str) -> None:
        steps = self.steps.setdefault(n, [])
        m = _DOCKER_STEP.match(text)
        if m:
            done, total, instruction = int(m.group(1)), int(m.group(2)), m.group(3).strip()
            steps.append((instruction, False))
            report(Progress("build", f"step {done}/{total}: {instruction[:100]}", done, total))
        elif text.strip() == "---> Using cache" and steps:
            steps[-1] = (steps[-1][0], True)

    def finished(self) -> bool:
        """Whether the log has its last line (``DONE``, or ``ERROR`` and its reason)."""
        return any(line in ("DONE", "ERROR") for line in self.lines[-5:])

    def docker_steps(self) -> list[tuple[str, bool]]:
        """``[(instruction, from cache)]`` of the docker build step(s)."""
        return [s for n in sorted(self.steps) for s in self.steps[n]]

    def failure(self, current: dict[str, Any], bucket: str) -> BuildError:
        """One line for a build that did not succeed, after its log's tail."""
        build_id = current.get("id", "")
        status = str(current.get("status", ""))
        info = current.get("failureInfo") or {}
        detail = " ".join(str(info.get("detail") or current.get("statusDetail") or status).split())
        kind = str(info.get("type") or status)
        failed = [
            i
            for i, step in enumerate(current.get("steps") or [])
            if step.get("status") in ("FAILURE", "TIMEOUT", "INTERNAL_ERROR", "CANCELLED")
            and not step.get("allowFailure")
        ]
        after = [line for line in self.lines if not _STEP_LINE.match(line)][-3:]
        if failed and self.steps.get(failed[0]):
            n = failed[0]
            lines = self.by_step.get(n, [])
            errors = [line.strip() for line in lines if _DOCKER_ERROR.match(line.strip())]
            message = errors[-1] if errors else detail
            error = build_error(message, self.steps[n], lines + after)
            return BuildError(
                f"{error.message} (Cloud Build {build_id}, build step #{n})", error.hint, error.log
            )
        tail = self.lines[-LOG_TAIL:]
        if tail:
            report(Progress("log", "\n".join(tail)))
        hints = {
            "TIMEOUT": "the build ran past its timeout: raise TFC_BUILD_TIMEOUT (seconds)",
            "PUSH_FAILED": "let Cloud Build's service account push to the registry "
            "(roles/artifactregistry.writer), or set TFC_REGISTRY to one it may push to",
            "FETCH_SOURCE_FAILED": f"let Cloud Build's service account read gs://{bucket} "
            "(roles/storage.objectViewer)",
            "CANCELLED": "it was cancelled (in the console or by another tool); launch again",
        }
        where = f" at build step #{failed[0]}" if failed else ""
        return BuildError(
            f"Cloud Build {build_id} failed{where} ({kind}): {short(detail)}",
            hints.get(kind, "see the build log above and in the Cloud console"),
            tail,
        )
