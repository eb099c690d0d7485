"""A local server that speaks the Cloud Storage JSON API and Cloud Build v1 subsets we use.

``tfc_jupyter.backends.vertex.cloudbuild`` talks to it over HTTP, unpatched
(``TFC_CLOUDBUILD_ENDPOINT=http://127.0.0.1:PORT``; a loopback endpoint gets anonymous credentials):

* Cloud Storage: ``POST /upload/storage/v1/b/B/o?uploadType=media&name=N``, ``GET
  /storage/v1/b/B``, ``GET /storage/v1/b/B/o/N`` (metadata; ``alt=media`` with ``Range``:
  206, or 416 past the end);
* Cloud Build: ``POST /v1/projects/P[/locations/L]/builds`` (answers an ``Operation``), ``GET
  .../builds`` (``filter`` on tags, images, status; ``pageSize``), ``GET .../builds/ID``, ``POST
  .../builds/ID:cancel``, ``GET /v1/operations/build/P/ID``;
* a registry's manifest lookup, ``HEAD|GET /v2/NAME/manifests/TAG``, for the images it "pushed"
  when no Docker engine runs the builds (with ``registry_token=True``, behind docker's token
  challenge: ``401 WWW-Authenticate: Bearer realm=".../v2/token"``).

Requests are validated as Google does (the bucket exists, object names, known fields, at least
one step and each with a name, image names, tags, timeout, logs bucket); errors are Google's JSON
bodies (Cloud Storage's with ``errors[]``, Cloud Build's with ``status``). Faults are injected
with ``inject(Fault(...))`` (``tests/vertex_server.py``'s: 429, 503, 403 ... on the next matching
``"METHOD /path"``), ``fail_next_build(step, message)`` and ``stall_next_build()``. Accepted builds
run in :mod:`gcp_runner`: with the local Docker engine when a client is given (really built and
pushed), else validated only; ``executor`` and each build's log say which. 127.0.0.1 only.

Standalone: ``python tests/gcp_server.py [--port N] [--bucket B ...] [--executor auto|validate]``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import itertools
import json
import re
import secrets
import signal
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import google_errors
from gcp_runner import TERMINAL, BuildRun, Injected, now, parse_gs
from google_errors import caller_denied
from vertex_server import ApiError, FakeServer, Fault, Received, parse_filter

_CODES = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "RESOURCE_EXHAUSTED": 429,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
}
_STORAGE_REASONS = {
    400: "invalid",
    401: "required",
    403: "forbidden",
    404: "notFound",
    429: "rateLimitExceeded",
    500: "backendError",
    503: "backendError",
}
_BUILD_FIELDS = set(
    (
        "source steps images timeout logsBucket options tags substitutions queueTtl serviceAccount "
        "availableSecrets"
    ).split()
)
_STEP_FIELDS = set(
    (
        "name args env dir id waitFor entrypoint secretEnv volumes timeout allowFailure "
        "allowExitCodes script"
    ).split()
)
_OPTIONS = set(
    (
        "logging machineType diskSizeGb logStreamingOption requestedVerifyOption "
        "dynamicSubstitutions env pool substitutionOption"
    ).split()
)
_LOGGING = set(
    "LOGGING_UNSPECIFIED LEGACY GCS_ONLY STACKDRIVER_ONLY CLOUD_LOGGING_ONLY NONE".split()
)
_IMAGE = re.compile(
    r"^[a-z0-9.-]+(:\d+)?(/[a-z0-9._-]+)+(:[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})?$"
)
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")


class StorageError(ApiError):
    """Cloud Storage's error body: ``{"error": {code, message, errors: [{reason, ...}]}}``."""

    def body(self) -> dict[str, Any]:
        """The JSON body."""
        code = _CODES[self.status]
        reason = _STORAGE_REASONS.get(code, "invalid")
        error: dict[str, Any] = {
            "code": code,
            "message": self.message,
            "errors": [{"message": self.message, "domain": "global", "reason": reason}],
        }
        if self.details:
            error["details"] = self.details
        return {"error": error}


class RegistryError(ApiError):
    """A registry's error body (the Docker registry API's, as Artifact Registry sends it):
    ``{"errors": [{"code": "DENIED", "message": ...}]}``; a HEAD's answer has no body."""

    def body(self) -> dict[str, Any]:
        """The JSON body."""
        code = "DENIED" if self.status == "PERMISSION_DENIED" else self.status
        return {"errors": [{"code": code, "message": self.message}]}


CREATE_BUILD = r"POST /v1/projects/[^/]+(/locations/[^/]+)?/builds$"


def permission_denied(match: str = CREATE_BUILD) -> Fault:
    """403 PERMISSION_DENIED as Cloud Build sends it: "The caller does not have permission",
    naming no permission, without details (:func:`google_errors.caller_denied`)."""
    return Fault.of(caller_denied(), match)


def storage_denied(
    permission: str = "storage.objects.create",
    match: str = r"POST /upload/storage/",
    account: str = "someone@test-project.iam.gserviceaccount.com",
) -> Fault:
    """Cloud Storage's 403 for ``permission`` (its JSON API's body, :class:`StorageError`;
    :func:`google_errors.storage_denied`)."""
    return Fault.of(google_errors.storage_denied(account, permission), match)


def registry_denied(
    permission: str = "artifactregistry.repositories.downloadArtifacts",
    match: str = r"(HEAD|GET) /v2/.+/manifests/",
    resource: str = "projects/test-project/locations/us/repositories/tfc",
) -> Fault:
    """Artifact Registry's 403: 'denied: Permission "P" denied on resource "R" (or it may not
    exist)' (GoogleCloudPlatform/cymbal-superstore pull request 4, 2023-12;
    google-github-actions/auth issue 50, 2021-11), in the registry API's body (none to a HEAD)."""
    message = f'Permission "{permission}" denied on resource "{resource}" (or it may not exist)'
    return Fault("PERMISSION_DENIED", message, match)


def api_disabled(project: str, match: str = CREATE_BUILD) -> Fault:
    """403 SERVICE_DISABLED: the Cloud Build API is off in the project."""
    return Fault(
        "PERMISSION_DENIED",
        f"Cloud Build API has not been used in project {project} before or it is disabled. "
        "Enable it by visiting https://console.developers.google.com/apis/api/"
        f"cloudbuild.googleapis.com/overview?project={project} then retry.",
        match,
        details=[
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "SERVICE_DISABLED",
                "domain": "googleapis.com",
            }
        ],
    )


@dataclass
class StoredObject:
    """One Cloud Storage object (one generation)."""

    bucket: str
    name: str
    data: bytes
    generation: int
    content_type: str = "application/octet-stream"
    created: str = field(default_factory=now)

    def resource(self) -> dict[str, Any]:
        """The object's JSON resource."""
        md5 = base64.b64encode(hashlib.md5(self.data, usedforsecurity=False).digest()).decode()
        return {
            "kind": "storage#object",
            "id": f"{self.bucket}/{self.name}/{self.generation}",
            "name": self.name,
            "bucket": self.bucket,
            "generation": str(self.generation),
            "metageneration": "1",
            "contentType": self.content_type,
            "size": str(len(self.data)),
            "md5Hash": md5,
            "timeCreated": self.created,
            "updated": now(),
        }


@dataclass
class Reply:
    """An HTTP answer."""

    code: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, value: Any, code: int = 200, **headers: str) -> Reply:
        """A JSON answer."""
        return cls(
            code, json.dumps(value).encode(), {"Content-Type": "application/json", **headers}
        )


class GcpServer(FakeServer):
    """The server (see the module docstring). ``start()``, then ``url``; ``stop()`` ends it.

    Args:
        buckets: the buckets that exist.
        docker: a docker SDK client to run builds with (else builds are validated only).
        queue_delay: seconds a build stays QUEUED.
        log_interval: how often a running build's log object is rewritten.
        registry_token: put the registry behind docker's token challenge.
    """

    handler_attr = "gcp"
    stop_join_s = 30.0

    def __init__(
        self,
        *,
        buckets: tuple[str, ...] = ("tfc-test-builds",),
        docker: Any = None,
        queue_delay: float = 0.05,
        log_interval: float = 0.1,
        registry_token: bool = False,
    ) -> None:
        self.objects: dict[str, dict[str, StoredObject]] = {b: {} for b in buckets}
        self.docker = docker
        self.executor = "docker" if docker is not None else "validate"
        self.queue_delay, self.log_interval = queue_delay, log_interval
        self.registry_token = registry_token
        super().__init__()
        self.builds: dict[str, BuildRun] = {}
        self.images: dict[str, str] = {}  # our registry: "repository:tag" -> digest
        self.tokens: set[str] = set()
        self.token_requests: list[dict[str, str]] = []
        self.injected: list[Injected] = []
        self._generations = itertools.count(int(time.time() * 1e6))

    # -- control ----------------------------------------------------------------------------
    @property
    def host(self) -> str:
        """``127.0.0.1:PORT`` (the registry's host in image names)."""
        return self.url.removeprefix("http://")

    def _runs(self) -> list[Any]:
        return list(self.builds.values())

    def fail_next_build(self, step: int, message: str) -> None:
        """Make the next build's docker build fail at Dockerfile step ``step`` with ``message``."""
        with self._lock:
            self.injected.append(Injected(step=step, message=message))

    def stall_next_build(self) -> None:
        """Keep the next build WORKING (past its timeout) until it is cancelled."""
        with self._lock:
            self.injected.append(Injected(stall=True))

    def object(self, bucket: str, name: str) -> StoredObject | None:
        """The latest generation of an object."""
        with self._lock:
            return self.objects.get(bucket, {}).get(name)

    def wait_builds(self, timeout: float = 30.0) -> None:
        """Wait (bounded) until every build has ended."""
        deadline = time.monotonic() + timeout
        while any(run.status() not in TERMINAL for run in list(self.builds.values())):
            if time.monotonic() > deadline:
                raise AssertionError("builds still running")
            time.sleep(0.05)

    # -- routing ----------------------------------------------------------------------------
    def handle(
        self, method: str, raw_path: str, query: dict[str, list[str]], headers: Any, body: bytes
    ) -> Reply:
        """Answer one request (or raise :class:`ApiError`)."""
        storage = raw_path.startswith(("/storage/", "/upload/storage/"))
        fault = self._take_fault(f"{method} {raw_path}")
        if fault is not None and fault.after:  # do the work, answer late (a lost answer)
            reply = self._route(method, raw_path, query, headers, body)
            time.sleep(fault.delay)
            return reply
        if fault is not None:
            time.sleep(fault.delay)
            if fault.status:
                registry = raw_path.startswith("/v2/")
                error = StorageError if storage else RegistryError if registry else ApiError
                raise error(fault.status, fault.message, fault.details, fault.headers)
        return self._route(method, raw_path, query, headers, body)

    def _route(
        self, method: str, raw_path: str, query: dict[str, list[str]], headers: Any, body: bytes
    ) -> Reply:
        if raw_path.startswith(("/storage/", "/upload/storage/")):
            return self._storage(method, raw_path, query, headers, body)
        if raw_path.startswith("/v2/"):
            return self._registry(method, raw_path, query, headers)
        if raw_path.startswith("/v1/"):
            return self._cloudbuild(method, raw_path, query, body)
        raise ApiError("NOT_FOUND", f"The requested URL {raw_path} was not found on this server.")

    # -- Cloud Storage ----------------------------------------------------------------------
    def _bucket(self, name: str) -> dict[str, StoredObject]:
        if name not in self.objects:
            raise StorageError("NOT_FOUND", "The specified bucket does not exist.")
        return self.objects[name]

    def _storage(
        self, method: str, path: str, query: dict[str, list[str]], headers: Any, body: bytes
    ) -> Reply:
        m = re.fullmatch(r"/upload/storage/v1/b/([^/]+)/o", path)
        if m and method == "POST":
            return self._upload(unquote(m.group(1)), query, headers, body)
        m = re.fullmatch(r"/storage/v1/b/([^/]+)", path)
        if m and method == "GET":
            name = unquote(m.group(1))
            self._bucket(name)
            return Reply.json({"kind": "storage#bucket", "name": name, "id": name})
        m = re.fullmatch(r"/storage/v1/b/([^/]+)/o", path)
        if m and method == "GET":  # objects.list: by prefix, a page at a time
            bucket, prefix = unquote(m.group(1)), query.get("prefix", [""])[0]
            size = int(query.get("maxResults", ["1000"])[0])
            start = int(query.get("pageToken", ["0"])[0] or 0)
            with self._lock:
                found = sorted(n for n in self._bucket(bucket) if n.startswith(prefix))
                page = [self._bucket(bucket)[n].resource() for n in found[start : start + size]]
            listing: dict[str, Any] = {"kind": "storage#objects", "items": page}
            if start + size < len(found):
                listing["nextPageToken"] = str(start + size)
            return Reply.json(listing)
        m = re.fullmatch(r"/storage/v1/b/([^/]+)/o/([^/]+)", path)
        if m and method == "GET":
            bucket, name = unquote(m.group(1)), unquote(m.group(2))
            with self._lock:
                obj = self._bucket(bucket).get(name)
            if obj is None:
                raise StorageError("NOT_FOUND", f"No such object: {bucket}/{name}")
            if query.get("alt", [""])[0] == "media":
                return _media(obj, headers.get("Range"))
            return Reply.json(obj.resource())
        raise StorageError("NOT_FOUND", f"Not Found: {method} {path}")

    def _upload(self, bucket: str, query: dict[str, list[str]], headers: Any, body: bytes) -> Reply:
        kind = query.get("uploadType", [""])[0]
        if kind != "media":
            raise StorageError(
                "INVALID_ARGUMENT",
                f"Upload type {kind or '(none)'} is not supported by this test server (media only)",
            )
        name = query.get("name", [""])[0]
        problem = _object_name_problem(name)
        if problem:
            raise StorageError("INVALID_ARGUMENT", problem)
        with self._lock:
            self._bucket(bucket)
        self.put(bucket, name, body, headers.get("Content-Type") or "application/octet-stream")
        obj = self.object(bucket, name)
        assert obj is not None
        return Reply.json(obj.resource())

    def put(self, bucket: str, name: str, data: bytes, content_type: str = "text/plain") -> None:
        """Store a new generation of an object."""
        with self._lock:
            self._bucket(bucket)[name] = StoredObject(
                bucket, name, data, next(self._generations), content_type
            )

    def _read(self, bucket: str, name: str, generation: str | None) -> bytes | None:
        obj = self.object(bucket, name)
        if obj is None or (generation and str(obj.generation) != str(generation)):
            return None
        return obj.data

    # -- Cloud Build ------------------------------------------------------------------------
    def _cloudbuild(self, method: str, path: str, query: dict[str, list[str]], raw: bytes) -> Reply:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            raise ApiError("INVALID_ARGUMENT", "Invalid JSON payload received.") from None
        m = re.fullmatch(r"/v1/operations/build/([^/]+)/([^/]+)", path)
        if m and method == "GET":
            run = self.builds.get(
                base64.urlsafe_b64decode(m.group(2) + "==").decode(errors="replace")
            )
            if run is None:
                raise ApiError("NOT_FOUND", f"operation {path[4:]} not found")
            return Reply.json(_operation(run.snapshot()))
        m = re.fullmatch(
            r"/v1/projects/([^/]+)(?:/locations/([^/]+))?/builds(?:/([^/:]+))?(:cancel)?", path
        )
        if not m:
            raise ApiError("NOT_FOUND", f"The requested URL {path} was not found on this server.")
        project, location, build_id, cancel = m.groups()
        location = location or "global"
        if build_id is None and method == "POST" and not cancel:
            return Reply.json(_operation(self._create(project, location, body)))
        if build_id is None and method == "GET":
            return Reply.json(self._list(project, location, query))
        run = self.builds.get(build_id or "")
        if run is None or run.resource["projectId"] != project:
            raise ApiError("NOT_FOUND", f"build {build_id} not found")
        if run.resource["name"].split("/")[3] != location:
            raise ApiError("NOT_FOUND", f"build {build_id} not found in location {location}")
        if method == "GET" and not cancel:
            return Reply.json(run.snapshot())
        if method == "POST" and cancel:
            run.cancel_requested.set()
            return Reply.json(run.snapshot())
        raise ApiError("NOT_FOUND", f"Method {method} is not allowed on {path}.")

    def _create(self, project: str, location: str, body: Any) -> dict[str, Any]:
        problem = self._build_problem(body)
        if problem:
            raise ApiError("INVALID_ARGUMENT", problem)
        build_id = str(uuid.uuid4())
        resource = {
            **body,
            "id": build_id,
            "name": f"projects/{project}/locations/{location}/builds/{build_id}",
            "projectId": project,
            "status": "QUEUED",
            "createTime": now(),
            "timeout": body.get("timeout", "600s"),
            "logUrl": f"https://console.cloud.google.com/cloud-build/builds;region={location}/"
            f"{build_id}?project={project}",
            "steps": [dict(step) for step in body["steps"]],
        }
        logs = body.get("logsBucket")
        write_log = None
        if logs:
            bucket, prefix = parse_gs(logs)
            name = f"{prefix}/log-{build_id}.txt".lstrip("/")

            def write_log(text: str) -> None:
                self.put(bucket, name, text.encode(), "text/plain")

        with self._lock:
            injected = self.injected.pop(0) if self.injected else None
        run = BuildRun(
            resource,
            read_object=self._read,
            write_log=write_log,
            docker=self.docker,
            images=self.images,
            injected=injected,
            queue_delay=self.queue_delay,
            log_interval=self.log_interval,
        )
        self.builds[build_id] = run
        run.start()
        return run.snapshot()

    def _build_problem(self, body: Any) -> str:
        """What Cloud Build would refuse in a ``Build`` (empty when nothing)."""
        if not isinstance(body, dict):
            return "Invalid JSON payload received. Expected an object."
        for key in body:
            if key not in _BUILD_FIELDS:
                return _unknown(key, "build")
        steps = body.get("steps")
        if not isinstance(steps, list) or not steps:
            return "invalid build: build must have at least one step"
        for i, step in enumerate(steps):
            if not isinstance(step, dict):
                return f"invalid build: step {i} is not an object"
            unknown = set(step) - _STEP_FIELDS
            if unknown:
                return _unknown(sorted(unknown)[0], f"build.steps[{i}]")
            if not step.get("name"):
                return f"invalid .steps field: build step {i} must specify name"
            for key in ("args", "env"):
                value = step.get(key, [])
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    return f"invalid .steps field: build step {i} {key} must be a list of strings"
            if any("=" not in v for v in step.get("env", [])):
                return f"invalid .steps field: build step {i} env must be KEY=VALUE"
        images = body.get("images", [])
        if not isinstance(images, list) or not all(isinstance(x, str) for x in images):
            return "invalid .images field: must be a list of strings"
        for image in images:
            if not _IMAGE.fullmatch(image):
                return f"invalid .images field: invalid image name {image!r}"
        source = (body.get("source") or {}).get("storageSource")
        if not isinstance(source, dict) or not source.get("bucket") or not source.get("object"):
            return "invalid .source field: storageSource with bucket and object is required"
        if set(source) - {"bucket", "object", "generation"}:
            return "Invalid JSON payload received. Unknown name at 'build.source.storage_source'."
        if not _BUCKET.fullmatch(source["bucket"]) or _object_name_problem(source["object"]):
            return "invalid .source.storageSource field: invalid bucket or object name"
        timeout = body.get("timeout", "600s")
        m = re.fullmatch(r"(\d+)(\.\d{1,9})?s", str(timeout))
        if not m or not 1 <= float(timeout[:-1]) <= 86400:
            return f"invalid timeout {timeout!r}: must be between 1s and 24h"
        logs = body.get("logsBucket")
        if logs is not None:
            try:
                bucket, _ = parse_gs(str(logs))
            except ValueError:
                return f"invalid logsBucket {logs!r}: must be gs://BUCKET[/PATH]"
            if bucket not in self.objects:
                return f"invalid logsBucket {logs!r}: the bucket does not exist"
        options = body.get("options", {})
        if not isinstance(options, dict) or set(options) - _OPTIONS:
            return "Invalid JSON payload received. Unknown name at 'build.options'."
        if options.get("logging", "LEGACY") not in _LOGGING:
            return f"Invalid value at 'build.options.logging': {options['logging']!r}"
        for tag in body.get("tags", []):
            if not isinstance(tag, str) or not _TAG.fullmatch(tag):
                return f"invalid build tag {tag!r}: must match {_TAG.pattern}"
        return ""

    def _list(self, project: str, location: str, query: dict[str, list[str]]) -> dict[str, Any]:
        terms = parse_filter(query.get("filter", [""])[0])
        builds = [
            run.snapshot()
            for run in list(self.builds.values())
            if run.resource["projectId"] == project
            and f"/locations/{location}/" in run.resource["name"]
        ]
        for key, op, value in terms:
            if op != "=" or key not in ("tags", "images", "status", "id", "build_id"):
                raise ApiError("INVALID_ARGUMENT", f"unsupported filter term {key}{op}{value}")
            field_ = "id" if key == "build_id" else key
            builds = [
                b
                for b in builds
                if (
                    value in b.get(field_, [])
                    if field_ in ("tags", "images")
                    else b.get(field_) == value
                )
            ]
        builds.sort(key=lambda b: b["createTime"], reverse=True)
        size = int(query.get("pageSize", ["0"])[0]) or 100
        start = int(query.get("pageToken", ["0"])[0] or 0)
        page = builds[start : start + size]
        token = str(start + size) if start + size < len(builds) else ""
        return {"builds": page, **({"nextPageToken": token} if token else {})}

    # -- registry ---------------------------------------------------------------------------
    def _registry(self, method: str, path: str, query: dict[str, list[str]], headers: Any) -> Reply:
        if path == "/v2/token":
            token = secrets.token_hex(8)
            with self._lock:
                self.tokens.add(token)
                self.token_requests.append(
                    {"scope": query.get("scope", [""])[0], "auth": headers.get("Authorization", "")}
                )
            return Reply.json({"token": token, "access_token": token, "expires_in": 300})
        m = re.fullmatch(r"/v2/(.+)/manifests/([^/]+)", path)
        if not m or method not in ("HEAD", "GET"):
            return _registry_error(404, "NAME_UNKNOWN", "repository name not known to registry")
        name, tag = m.groups()
        if self.registry_token:
            auth = headers.get("Authorization", "")
            if not (auth.startswith("Bearer ") and auth[7:] in self.tokens):
                challenge = (
                    f'Bearer realm="{self.url}/v2/token",service="gcp-test-registry",'
                    f'scope="repository:{name}:pull"'
                )
                reply = _registry_error(401, "UNAUTHORIZED", "authentication required")
                reply.headers["WWW-Authenticate"] = challenge
                return reply
        digest = self.images.get(f"{name}:{tag}")
        if digest is None:
            return _registry_error(404, "MANIFEST_UNKNOWN", f"manifest unknown: {name}:{tag}")
        media = "application/vnd.docker.distribution.manifest.v2+json"
        return Reply(200, b"{}", {"Content-Type": media, "Docker-Content-Digest": digest})


def _unknown(name: str, where: str) -> str:
    return (
        f"Invalid JSON payload received. Unknown name \"{name}\" at '{where}': Cannot find field."
    )


def _registry_error(code: int, error: str, message: str) -> Reply:
    return Reply.json({"errors": [{"code": error, "message": message, "detail": None}]}, code)


def _operation(build: dict[str, Any]) -> dict[str, Any]:
    """The long-running operation of a build (``done`` and ``response`` once it ended)."""
    encoded = base64.urlsafe_b64encode(build["id"].encode()).decode().rstrip("=")
    op: dict[str, Any] = {
        "name": f"operations/build/{build['projectId']}/{encoded}",
        "metadata": {
            "@type": "type.googleapis.com/google.devtools.cloudbuild.v1.BuildOperationMetadata",
            "build": build,
        },
    }
    if build["status"] in TERMINAL:
        op["done"] = True
        op["response"] = {
            "@type": "type.googleapis.com/google.devtools.cloudbuild.v1.Build",
            **build,
        }
    return op


def _object_name_problem(name: str) -> str:
    """Cloud Storage's object naming rules (empty when the name is fine)."""
    if not name:
        return "Required parameter: name"
    if len(name.encode()) > 1024:
        return "The object name is too long (over 1024 bytes)."
    if "\r" in name or "\n" in name or name in (".", ".."):
        return f"Invalid object name: {name!r}"
    if name.startswith(".well-known/acme-challenge/"):
        return "Object names may not start with .well-known/acme-challenge/."
    return ""


def _media(obj: StoredObject, range_header: str | None) -> Reply:
    """The object's bytes, or the ``Range: bytes=N-`` part of them (206; 416 past the end)."""
    data = obj.data
    headers = {"Content-Type": obj.content_type, "x-goog-generation": str(obj.generation)}
    if not range_header:
        return Reply(200, data, headers)
    m = re.fullmatch(r"bytes=(\d+)-(\d*)", range_header.strip())
    if not m:
        return Reply(200, data, headers)
    start = int(m.group(1))
    end = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
    if start >= len(data):
        body = StorageError(
            "INVALID_ARGUMENT", "The requested range cannot be satisfied."
        ).body()  # Google answers 416 with this message
        body["error"]["code"] = 416
        return Reply(416, json.dumps(body).encode(), {"Content-Range": f"bytes */{len(data)}"})
    headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
    return Reply(206, data[start : end + 1], headers)


class _Handler(BaseHTTPRequestHandler):
    """HTTP plumbing: bytes in, bytes out, errors as Google's bodies."""

    gcp: GcpServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        record = Received(method, parts.path, parse_qs(parts.query), None)
        try:
            record.body = json.loads(raw) if raw and raw[:1] in b"{[" else (raw or None)
        except ValueError:
            record.body = raw
        with self.gcp._lock:
            self.gcp.requests.append(record)
        try:
            reply = self.gcp.handle(method, parts.path, record.query, self.headers, raw)
        except ApiError as exc:
            reply = Reply.json(exc.body(), _CODES[exc.status], **exc.headers)
        record.answer = reply.code
        try:
            self.send_response(reply.code)
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(reply.body)
        except OSError:  # the client gave up
            pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def do_POST(self) -> None:
        self._serve("POST")


GcpServer.handler = _Handler


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted."""
    parser = argparse.ArgumentParser(description="A local Cloud Storage + Cloud Build server.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--bucket", action="append", default=[])
    parser.add_argument("--executor", default="auto", choices=("auto", "validate"))
    args = parser.parse_args(argv)
    client = None
    if args.executor == "auto":
        try:
            import docker

            client = docker.from_env(timeout=10)
            client.ping()
        except Exception:
            client = None
    server = GcpServer(buckets=tuple(args.bucket or ["tfc-test-builds"]), docker=client)
    server.start(args.port)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    print(
        f"Cloud Storage + Cloud Build test server on {server.url} ({server.executor})", flush=True
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
