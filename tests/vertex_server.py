"""A local server that speaks Vertex AI's CustomJob API and Cloud Logging's entries:list.

The real ``google-cloud-aiplatform`` and ``google-cloud-logging`` clients talk to it over REST,
unpatched (``api_endpoint="http://127.0.0.1:PORT"``, anonymous credentials):

* ``POST /v1/{parent}/customJobs``, ``GET /v1/{name}``, ``GET /v1/{parent}/customJobs``
  (``filter``, ``pageSize``, ``pageToken``), ``POST /v1/{name}:cancel``;
* the same for ``hyperparameterTuningJobs``, Vizier played here (:mod:`vertex_tuning`: each
  trial a custom job run for real, its metric read from the file the trial writes);
* ``POST /v2/entries:list`` with Cloud Logging's filter language (the subset log readers use).

Bodies go through the real proto types (``CustomJob.from_json``), so an unknown field or enum is
refused as Vertex refuses it; :mod:`vertex_validate` checks the rest (pool 0 with one replica,
machine types, accelerator counts, TPU shapes, labels). Errors are Google's JSON error bodies
(:mod:`google_errors`: the real services' rate-limit, daily-quota and permission bodies).
Faults are injected on request (:class:`Fault`: 429, 503, slow responses, auth and quota errors);
per-project quotas are kept for real when asked for (``log_reads`` entries.list calls and
``crud`` job calls a ``minute``, which tests shorten), and each accepted job runs for real
(:mod:`vertex_runner`: Docker containers, or local processes when no Docker engine answers).
It serves on 127.0.0.1 only.

Pools may be ``containerSpec`` or ``pythonPackageSpec`` (the package route: Vertex downloads the
``packageUris`` wheels, installs them in a container of ``executorImageUri`` and runs ``python -m
pythonModule args``). The packages are read from a fake Cloud Storage, ``tests/gcp_server.py``:
``VertexServer(storage_url=gcp.url)``, or ``server.storage_url = gcp.url`` before the job is
created; without Docker, register the executor image as a folder, ``server.add_image(
"us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest", folder)``.

Standalone: ``python tests/vertex_server.py [--port N] [--executor auto|docker|process]
[--image URI=FOLDER ...] [--storage-url URL]``; ``POST /_control/faults`` (a JSON list of faults)
and ``GET /_control/requests`` drive it from outside.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from google_errors import (
    Budget,
    Refused,
    gpu_quota,
    logging_read_daily,
    logging_read_rate,
    permission_denied,
    vertex_crud_rate,
)
from vertex_runner import (
    TERMINAL,
    AutoExecutor,
    Executor,
    JobRun,
    LogStore,
    ProcessExecutor,
    docker_executor,
    parse_rfc3339,
    rfc3339,
)
from vertex_tuning import TuningRun, check_study
from vertex_validate import error_message, validate

_GRPC_CODES = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "RESOURCE_EXHAUSTED": 429,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


def unsigned(body: dict[str, Any]) -> dict[str, Any]:
    """A create request's body without the report key each pool's environment must carry
    (made at launch, so not in the request a dry run shows): what the dry run showed."""
    from tfc_runtime.protocol import REPORT_KEY_ENV

    out = json.loads(json.dumps(body))
    spec = out.get("trialJobSpec") or out["jobSpec"]
    for pool in spec["workerPoolSpecs"]:
        for kind in ("containerSpec", "pythonPackageSpec"):
            if kind in pool:
                env = pool[kind]["env"]
                keys = [e for e in env if e["name"] == REPORT_KEY_ENV]
                assert len(keys) == 1 and re.fullmatch(r"[0-9a-f]{32}", keys[0]["value"]), env
                pool[kind]["env"] = [e for e in env if e["name"] != REPORT_KEY_ENV]
    return out


class ApiError(Exception):
    """An error answer: Google's ``{"error": {code, message, status, details}}``."""

    def __init__(
        self,
        status: str,
        message: str,
        details: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.details = status, message, details or []
        self.headers = dict(headers or {})  # Retry-After, where Google sends it

    @classmethod
    def of(cls, refused: Refused) -> ApiError:
        """The answer for one of :mod:`google_errors`' refusals."""
        return cls(refused.status, refused.message, list(refused.details), dict(refused.headers))

    def body(self) -> dict[str, Any]:
        """The JSON body."""
        error = {"code": _GRPC_CODES[self.status], "message": self.message, "status": self.status}
        if self.details:
            error["details"] = self.details
        return {"error": error}


@dataclass
class Fault:
    """A canned answer for the next request matching ``match`` (a regex on ``"POST /v1/..."``).

    With ``status`` the request is answered with that error; with ``status=None`` it is served
    normally after ``delay`` seconds (a slow response: the client may time out while the server
    still does the work, as real servers do).
    """

    status: str | None = "UNAVAILABLE"
    message: str = "The service is currently unavailable."
    match: str = ""
    delay: float = 0.0
    details: list[dict[str, Any]] = field(default_factory=list)
    after: bool = False  # delay the answer after doing the work (a lost or late response)
    headers: dict[str, str] = field(default_factory=dict)  # Retry-After ...

    @classmethod
    def of(cls, refused: Refused, match: str = "") -> Fault:
        """Answer with one of :mod:`google_errors`' refusals."""
        return cls(
            refused.status,
            refused.message,
            match,
            details=list(refused.details),
            headers=dict(refused.headers),
        )

    @classmethod
    def unavailable(cls, match: str = "", retry_after: float | None = None) -> Fault:
        """503 UNAVAILABLE, as during a brief outage (with ``Retry-After`` when given)."""
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
        return cls("UNAVAILABLE", "The service is currently unavailable.", match, headers=headers)

    @classmethod
    def rate_limited(cls, match: str = "", project: str = "test-project") -> Fault:
        """429 RATE_LIMIT_EXCEEDED, as Google words a per-minute limit: Cloud Logging's read
        limit on ``entries:list``, else Vertex AI's "Resource management (CRUD) requests"."""
        number = project_number(project)
        if "entries" in match:
            return cls.of(logging_read_rate(number), match)
        return cls.of(vertex_crud_rate(number), match)

    @classmethod
    def daily_quota(cls, match: str = "", project: str = "test-project") -> Fault:
        """429 RATE_LIMIT_EXCEEDED of a per-day quota (``1/d/{project}``)."""
        return cls.of(logging_read_daily(project_number(project)), match)

    @classmethod
    def not_found(cls, match: str = "") -> Fault:
        """404 NOT_FOUND, as for a job that was deleted."""
        return cls("NOT_FOUND", "The CustomJob does not exist.", match)

    @classmethod
    def slow(cls, delay: float, match: str = "", *, after: bool = False) -> Fault:
        """Serve normally, ``delay`` seconds late (``after``: do the work first, then wait)."""
        return cls(None, "", match, delay, after=after)

    @classmethod
    def quota(cls, metric: str = "custom_model_training_nvidia_t4_gpus", match: str = "") -> Fault:
        """429 RESOURCE_EXHAUSTED for a resource quota, as Vertex AI sends it on job creation:
        the sentence naming the metric and no details (:func:`google_errors.gpu_quota`)."""
        return cls.of(gpu_quota(metric), match)

    @classmethod
    def unauthenticated(cls, match: str = "") -> Fault:
        """401 UNAUTHENTICATED: expired or missing credentials."""
        message = (
            "Request had invalid authentication credentials. Expected OAuth 2 access token, "
            "login cookie or other valid authentication credential."
        )
        return cls("UNAUTHENTICATED", message, match)

    @classmethod
    def permission_denied(
        cls,
        project: str = "test-project",
        match: str = "",
        permission: str = "aiplatform.customJobs.create",
    ) -> Fault:
        """403 PERMISSION_DENIED: the account lacks a role (Vertex AI's body, naming the
        permission and the resource; :func:`google_errors.permission_denied`)."""
        where = f"//aiplatform.googleapis.com/projects/{project}/locations/us-central1"
        return cls.of(permission_denied(permission, where), match)

    @classmethod
    def api_disabled(cls, project: str = "test-project", match: str = "") -> Fault:
        """403 SERVICE_DISABLED: the Vertex AI API is off in the project."""
        message = (
            f"Vertex AI API has not been used in project {project} before or it is disabled. "
            "Enable it by visiting https://console.developers.google.com/apis/api/"
            f"aiplatform.googleapis.com/overview?project={project} then retry."
        )
        details = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "SERVICE_DISABLED",
                "domain": "googleapis.com",
            }
        ]
        return cls("PERMISSION_DENIED", message, match, details=details)


@dataclass
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    answer: int = 0


def project_number(project: str) -> str:
    """A stable 12-digit project number for a project id (job names use numbers)."""
    if project.isdigit():
        return project
    return str(int(hashlib.sha256(project.encode()).hexdigest(), 16) % 10**12).rjust(12, "1")


# ------------------------------------------------------------------------------- filters
_TERM = re.compile(
    r"\s*(?P<key>[A-Za-z_][\w.-]*)\s*(?P<op>>=|<=|!=|=|>|<|:)\s*"
    r'(?P<value>"(?:[^"\\]|\\.)*"|[^\s"()]+)\s*'
)


def parse_filter(text: str) -> list[tuple[str, str, str]]:
    """``a="x" AND b>=y`` -> ``[(key, op, value)]``; only AND-joined comparisons."""
    terms, rest = [], text.strip()
    while rest:
        m = _TERM.match(rest)
        if not m:
            raise ApiError("INVALID_ARGUMENT", f"Unparseable filter: {text}")
        value = m.group("value")
        if value.startswith('"'):
            value = json.loads(value)
        terms.append((m.group("key"), m.group("op"), value))
        rest = rest[m.end() :]
        if rest.startswith("AND "):
            rest = rest[4:]
        elif rest and re.match(r"(OR|NOT)\b", rest):
            raise ApiError("INVALID_ARGUMENT", "The test server supports AND filters only.")
    return terms


Matcher = Callable[[dict[str, Any]], bool]


def compile_filter(text: str, alias: dict[str, str] | None = None) -> Matcher:
    """Cloud Logging's filter language, as much as log readers use: comparisons, ``AND`` (or
    none: juxtaposed), ``OR``, parentheses. ``OR`` binds tighter than ``AND``, as in Google's
    language (cloud.google.com/logging/docs/view/logging-query-language, Boolean operators:
    ``a OR NOT b AND NOT c OR d`` is ``(a OR (NOT b)) AND ((NOT c) OR d)``); NOT is not kept."""
    rest = text.strip()
    names = dict(alias or {})

    def skip(pattern: str) -> bool:
        nonlocal rest
        m = re.match(rf"\s*(?:{pattern})\s*", rest)
        if m:
            rest = rest[m.end() :]
        return m is not None

    def atom() -> Matcher:
        nonlocal rest
        if skip(r"\("):
            inner = conjunction()
            if not skip(r"\)"):
                raise ApiError("INVALID_ARGUMENT", f"Unbalanced parentheses in filter: {text}")
            return inner
        m = _TERM.match(rest)
        if not m:
            raise ApiError("INVALID_ARGUMENT", f"Unparseable filter: {text}")
        rest = rest[m.end() :]
        key, op, value = m.group("key"), m.group("op"), m.group("value")
        if value.startswith('"'):
            value = json.loads(value)
        return lambda item: matches(item, [(key, op, value)], names)

    def disjunction() -> Matcher:
        parts = [atom()]
        while skip(r"OR\b"):
            parts.append(atom())
        return parts[0] if len(parts) == 1 else lambda item: any(p(item) for p in parts)

    def conjunction() -> Matcher:
        parts = [disjunction()]
        while rest and not rest.lstrip().startswith(")"):
            skip(r"AND\b")
            parts.append(disjunction())
        return lambda item: all(p(item) for p in parts)

    if not rest:
        return lambda item: True
    matcher = conjunction()
    if rest.strip():
        raise ApiError("INVALID_ARGUMENT", f"Unparseable filter: {text}")
    return matcher


def _lookup(item: dict[str, Any], key: str) -> Any:
    value: Any = item
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _compare(actual: Any, op: str, wanted: str, key: str) -> bool:
    if actual is None:
        return op == "!="
    if key.endswith("timestamp") or key.endswith("_time") or key.endswith("Time"):
        a, b = parse_rfc3339(str(actual)), parse_rfc3339(wanted)
    else:
        a, b = str(actual), wanted
    ops: dict[str, Callable[[Any, Any], bool]] = {
        "=": lambda x, y: x == y,
        "!=": lambda x, y: x != y,
        ">": lambda x, y: x > y,
        "<": lambda x, y: x < y,
        ">=": lambda x, y: x >= y,
        "<=": lambda x, y: x <= y,
        ":": lambda x, y: str(y) in str(x),
    }
    return ops[op](a, b)


def matches(item: dict[str, Any], terms: list[tuple[str, str, str]], alias: dict[str, str]) -> bool:
    """Whether a JSON resource passes every term (``alias`` maps snake_case to JSON keys)."""
    for key, op, value in terms:
        path = alias.get(key, key)
        if key.startswith("labels."):
            path = "labels." + key.split(".", 1)[1]
        if not _compare(_lookup(item, path), op, value, path):
            return False
    return True


def _page(items: list[Any], size: int, token: str) -> tuple[list[Any], str]:
    start = int(token or 0)
    size = size if size > 0 else 100
    end = start + size
    return items[start:end], (str(end) if end < len(items) else "")


# ------------------------------------------------------------------------------- the server
class FakeServer:
    """What the fake Google servers share: a loopback HTTP server in a daemon thread, the log of
    requests received, and a queue of injected faults. A subclass sets ``handler`` (its request
    handler class, which reaches the server as ``handler_attr``) and lists its running work in
    :meth:`_runs` so that :meth:`stop` ends it (bounded by ``stop_join_s``)."""

    handler: type[BaseHTTPRequestHandler]
    handler_attr = "server_state"
    stop_join_s = 20.0

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self, port: int = 0) -> Any:
        """Listen on 127.0.0.1 (``port``, default a free one) and serve in a daemon thread."""
        handler = type("Handler", (self.handler,), {self.handler_attr: self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def _runs(self) -> list[Any]:
        """Work still going on (objects with ``cancel_requested`` and ``thread``)."""
        return []

    def stop(self) -> None:
        """Stop serving; cancel the running work and wait for it (bounded)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        runs = self._runs()
        for run in runs:
            run.cancel_requested.set()
        for run in runs:
            if run.thread is not None:
                run.thread.join(self.stop_join_s)

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def inject(self, *faults: Fault) -> None:
        """Queue canned answers; each is used once, by the first request it matches."""
        with self._lock:
            self.faults.extend(faults)

    def received(self, method: str, pattern: str = "") -> list[Received]:
        """Requests of ``method`` whose path matches ``pattern``."""
        with self._lock:
            return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    def _take_fault(self, request: str) -> Fault | None:
        with self._lock:
            for i, fault in enumerate(self.faults):
                if re.search(fault.match, request):
                    return self.faults.pop(i)
        return None


class VertexServer(FakeServer):
    """The server (see the module docstring). ``start()``, then ``url``; ``stop()`` ends it.

    Args:
        executor: ``auto`` (registered folder images as processes, other images in Docker
            when an engine answers), ``docker``, ``process``, or an :class:`Executor`.
        images: image URI -> folder, for the process executor.
        provision_delay: seconds in each of QUEUED and PENDING.
        log_delay: Cloud Logging's ingestion delay, in seconds.
        log_reads: Cloud Logging's read quota, entries.list calls a ``minute`` per project
            (Google's default: 60); None: no quota kept.
        crud: Vertex AI's job calls (create, get, list, cancel) a ``minute`` per project;
            None: no quota kept.
        minute: the quotas' window in seconds (60 at Google; shorter in tests).
        storage_url: the Cloud Storage JSON API endpoint (``GcpServer.url``) that the packages of
            ``pythonPackageSpec`` pools are downloaded from; a loopback URL only. Also settable
            after start (``server.storage_url = gcp.url``); a job reads it when created.
    """

    handler_attr = "vertex"

    def __init__(
        self,
        *,
        executor: str | Executor = "auto",
        images: dict[str, Path] | None = None,
        provision_delay: float = 0.1,
        log_delay: float = 0.0,
        storage_url: str | None = None,
        log_reads: int | None = None,
        crud: int | None = None,
        minute: float = 60.0,
    ) -> None:
        self.images: dict[str, Path] = dict(images or {})
        self.storage_url = storage_url
        self.executor = self._executor(executor)
        self.provision_delay = provision_delay
        self.logs = LogStore(log_delay)
        self.log_budget = (
            Budget(log_reads, minute, logging_read_rate) if log_reads is not None else None
        )
        self.crud_budget = (
            Budget(crud, minute, lambda n, limit: vertex_crud_rate(n, limit=limit))
            if crud is not None
            else None
        )
        super().__init__()
        self.jobs: dict[str, JobRun] = {}
        self.trial_jobs: dict[str, JobRun] = {}  # tuning trials' custom jobs (not listed)
        self.tuning_jobs: dict[str, TuningRun] = {}
        self.failing_jobs: list[str] = []
        self._ids = itertools.count(int(time.time() * 1000) % 10**12 * 10**6)

    def _executor(self, kind: str | Executor) -> Executor:
        if not isinstance(kind, str):
            return kind
        process = ProcessExecutor(self.images)
        if kind == "process":
            return process
        docker = docker_executor()
        if kind == "docker" and docker is None:
            raise RuntimeError("no Docker engine answers (set DOCKER_HOST)")
        return AutoExecutor(process, docker) if kind == "auto" else docker  # type: ignore[return-value]

    # -- control ----------------------------------------------------------------------------
    def _runs(self) -> list[Any]:
        return [*self.tuning_jobs.values(), *self.jobs.values(), *self.trial_jobs.values()]

    def fail_next_job(self, message: str) -> None:
        """Accept the next created job, then fail it with ``message`` before it runs."""
        with self._lock:
            self.failing_jobs.append(message)

    def add_image(self, uri: str, folder: Path) -> None:
        """Register a folder as the contents of an image (for the process executor): a
        container image's files, or a ``pythonPackageSpec`` executor image's own modules (on
        ``PYTHONPATH`` after the installed packages)."""
        self.images[uri] = Path(folder)

    def job(self, job_id: str) -> JobRun:
        """A job by numeric id or resource name."""
        key = job_id.rsplit("/", 1)[-1]
        return self.jobs.get(key) or self.trial_jobs[key]

    def tuning_job(self, job_id: str) -> TuningRun:
        """A tuning job by numeric id or resource name."""
        return self.tuning_jobs[job_id.rsplit("/", 1)[-1]]

    # -- the API ----------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        """Answer one request (a JSON-ready dict) or raise :class:`ApiError`."""
        fault = self._take_fault(f"{method} {path}")
        if fault is not None:
            if fault.delay and not fault.after:
                time.sleep(fault.delay)
            if fault.status:
                raise ApiError(fault.status, fault.message, fault.details, fault.headers)
            if fault.after:
                answer = self._serve(method, path, query, body)
                time.sleep(fault.delay)
                return answer
        self._charge(path, body)
        return self._serve(method, path, query, body)

    def _charge(self, path: str, body: Any) -> None:
        """Count the request against its project's quota; raise the 429 when it is spent."""
        refused = None
        if path == "/v2/entries:list" and self.log_budget is not None:
            names = body.get("resourceNames", []) if isinstance(body, dict) else []
            if names and str(names[0]).startswith("projects/"):
                refused = self.log_budget.charge(project_number(str(names[0]).split("/")[1]))
        m = re.match(r"/v1/projects/([^/]+)/locations/[^/]+/(customJobs|hyperparameterTun)", path)
        if m and self.crud_budget is not None:
            refused = self.crud_budget.charge(project_number(m.group(1)))
        if refused is not None:
            raise ApiError.of(refused)

    def _serve(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        if path.startswith("/_control/"):
            return self._control(method, path, body)
        if method == "POST" and path == "/v2/entries:list":
            return self._list_entries(body or {})
        m = re.fullmatch(
            r"/v1/projects/([^/]+)/locations/([^/]+)/(customJobs|hyperparameterTuningJobs)"
            r"(?:/(\d+))?(:cancel)?",
            path,
        )
        if not m:
            raise ApiError("NOT_FOUND", f"The requested URL {path} was not found on this server.")
        project, location, collection, job_id, cancel = m.groups()
        tuning = collection == "hyperparameterTuningJobs"
        if job_id is None and method == "POST":
            create = self._create_tuning if tuning else self._create
            return create(project, location, body)
        if job_id is None and method == "GET":
            return self._list_jobs(project, location, query, tuning=tuning)
        kind = "HyperparameterTuningJob" if tuning else "CustomJob"
        run: JobRun | TuningRun | None = (
            self.tuning_jobs.get(job_id or "")
            if tuning
            else self.jobs.get(job_id or "") or self.trial_jobs.get(job_id or "")
        )
        if run is None or project_number(run.project) != project_number(project):
            raise ApiError("NOT_FOUND", f"The {kind} {job_id} does not exist.")
        if method == "GET" and not cancel:
            return run.snapshot()
        if method == "POST" and cancel:
            state = run.state()
            if state in TERMINAL:
                raise ApiError(
                    "FAILED_PRECONDITION", f"Cannot cancel {kind} {job_id} in state {state}."
                )
            run.cancel_requested.set()
            return {}
        raise ApiError("NOT_FOUND", f"Method {method} is not allowed on {path}.")

    def _control(self, method: str, path: str, body: Any) -> Any:
        if method == "POST" and path == "/_control/faults":
            self.inject(*(Fault(**f) for f in body))
            return {}
        if method == "GET" and path == "/_control/requests":
            with self._lock:
                return {"requests": [asdict(r) for r in self.requests]}
        raise ApiError("NOT_FOUND", f"No control endpoint {method} {path}.")

    def _create(self, project: str, location: str, body: Any) -> dict[str, Any]:
        from google.cloud.aiplatform_v1.types import CustomJob

        resource = _parsed(CustomJob, body)
        _refuse(validate(resource))
        with self._lock:
            fail_with = self.failing_jobs.pop(0) if self.failing_jobs else None
        run = self._job_run(project, location, resource, fail_with)
        self.jobs[run.job_id] = run
        run.start()
        return run.snapshot()

    def _job_run(
        self, project: str, location: str, resource: dict[str, Any], fail_with: str | None = None
    ) -> JobRun:
        """A CustomJob resource named, stamped and ready to run."""
        job_id = str(next(self._ids))
        _stamp(
            resource, f"projects/{project_number(project)}/locations/{location}/customJobs/{job_id}"
        )
        return JobRun(
            resource,
            project,
            self.executor,
            self.logs,
            self.provision_delay,
            fail_with,
            storage_url=self.storage_url,
        )

    def _create_tuning(self, project: str, location: str, body: Any) -> dict[str, Any]:
        from google.cloud.aiplatform_v1.types import HyperparameterTuningJob

        resource = _parsed(HyperparameterTuningJob, body)
        as_custom = {"displayName": resource.get("displayName", ""),
                     "jobSpec": resource.get("trialJobSpec", {}),
                     "labels": resource.get("labels", {})}  # fmt: skip
        problems = [(f.replace("job_spec", "trial_job_spec", 1), d) for f, d in validate(as_custom)]
        _refuse(problems + check_study(resource))
        job_id = str(next(self._ids))
        name = f"projects/{project_number(project)}/locations/{location}"
        _stamp(resource, f"{name}/hyperparameterTuningJobs/{job_id}")
        resource.pop("trials", None)

        def start_trial(
            trial: dict[str, Any], labels: dict[str, str], env: dict[str, str], collect: Any
        ) -> JobRun:
            run = self._job_run(project, location, trial)
            run.log_as, run.log_labels, run.extra_env, run.collect = job_id, labels, env, collect
            self.trial_jobs[run.job_id] = run
            run.start()
            return run

        tuning = TuningRun(resource, project, start_trial)
        self.tuning_jobs[job_id] = tuning
        tuning.start()
        return tuning.snapshot()

    def _list_jobs(
        self, project: str, location: str, query: dict[str, list[str]], *, tuning: bool = False
    ) -> Any:
        terms = parse_filter(query.get("filter", [""])[0])
        alias = {"display_name": "displayName", "create_time": "createTime", "state": "state"}
        number = project_number(project)
        every: list[Any] = list((self.tuning_jobs if tuning else self.jobs).values())
        runs = [r for r in every if project_number(r.project) == number]
        jobs = [r.snapshot() for r in runs]
        jobs = [j for j in jobs if f"/locations/{location}/" in j["name"]]
        jobs = [j for j in jobs if matches(j, terms, alias)]
        jobs.sort(key=lambda j: j["createTime"], reverse=True)
        size = int(query.get("pageSize", ["0"])[0])
        page, token = _page(jobs, size, query.get("pageToken", [""])[0])
        key = "hyperparameterTuningJobs" if tuning else "customJobs"
        return {key: page, **({"nextPageToken": token} if token else {})}

    def _list_entries(self, body: dict[str, Any]) -> Any:
        projects = [
            n.split("/", 1)[1] for n in body.get("resourceNames", []) if n.startswith("projects/")
        ]
        if not projects:
            raise ApiError("INVALID_ARGUMENT", "resource_names: at least one project is required")
        wanted = compile_filter(body.get("filter", ""))
        entries = [
            e
            for e in self.logs.visible()
            if e["resource"]["labels"]["project_id"] in projects and wanted(e)
        ]
        if body.get("orderBy", "timestamp asc").endswith("desc"):
            entries.reverse()
        page, token = _page(entries, int(body.get("pageSize", 0)), body.get("pageToken", ""))
        return {"entries": page, **({"nextPageToken": token} if token else {})}


def _parsed(kind: Any, body: Any) -> dict[str, Any]:
    """A create request's body read strictly as the ``aiplatform_v1`` type ``kind`` (an unknown
    field or enum refused as Vertex AI refuses it), as the resource's JSON."""
    from google.protobuf.json_format import MessageToDict

    try:
        message = kind.from_json(json.dumps(body), ignore_unknown_fields=False)
    except Exception as exc:
        raise ApiError("INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}") from None
    return dict(MessageToDict(kind.pb(message)))


def _refuse(problems: list[tuple[str, str]]) -> None:
    """Vertex AI's 400 for a body with problems (``(field, message)`` pairs), if any."""
    if problems:
        violations = [{"field": f, "description": d} for f, d in problems]
        detail = {
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": violations,
        }
        raise ApiError("INVALID_ARGUMENT", error_message(problems), [detail])


def _stamp(resource: dict[str, Any], name: str) -> None:
    """Give a created resource its name and queued state (what the caller sent is dropped)."""
    now = rfc3339(datetime.now(timezone.utc))
    for key in ("name", "state", "createTime", "startTime", "endTime", "updateTime", "error"):
        resource.pop(key, None)
    resource.update(name=name, state="JOB_STATE_QUEUED", createTime=now, updateTime=now)


class _Handler(BaseHTTPRequestHandler):
    """HTTP plumbing: JSON in, JSON out, errors as Google error bodies."""

    vertex: VertexServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        record = Received(method, parts.path, parse_qs(parts.query), None)
        try:
            record.body = json.loads(raw) if raw else None
        except ValueError:
            record.body = raw.decode("utf-8", "replace")
        with self.vertex._lock:
            self.vertex.requests.append(record)
        try:
            if isinstance(record.body, str):
                raise ApiError("INVALID_ARGUMENT", "Invalid JSON payload received.")
            headers: dict[str, str] = {}
            code, answer = 200, self.vertex.handle(method, parts.path, record.query, record.body)
        except ApiError as exc:
            code, answer, headers = _GRPC_CODES[exc.status], exc.body(), exc.headers
        record.answer = code
        data = json.dumps(answer).encode()
        try:
            self.send_response(code)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (a slow-response fault): the work is done anyway
            pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")


VertexServer.handler = _Handler


# ------------------------------------------------------------------------------- pytest
try:
    import pytest
except ImportError:  # standalone use needs no pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture
    def vertex_server() -> Iterator[VertexServer]:
        """A started server on a free loopback port; stopped (jobs ended) even when a test fails."""
        server = VertexServer().start()
        try:
            yield server
        finally:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted."""
    parser = argparse.ArgumentParser(description="A local Vertex AI CustomJob + Logging server.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--executor", default="auto", choices=("auto", "docker", "process"))
    parser.add_argument("--image", action="append", default=[], metavar="URI=FOLDER")
    parser.add_argument("--provision-delay", type=float, default=0.5)
    parser.add_argument(
        "--storage-url",
        default=None,
        metavar="URL",
        help="the Cloud Storage endpoint package jobs download from (tests/gcp_server.py's URL)",
    )
    args = parser.parse_args(argv)
    images = {k: Path(v) for k, _, v in (item.partition("=") for item in args.image)}
    server = VertexServer(
        executor=args.executor,
        images=images,
        provision_delay=args.provision_delay,
        storage_url=args.storage_url,
    ).start(args.port)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    kind = server.executor.name
    print(f"Vertex AI test server on {server.url} (executor: {kind})", flush=True)
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
