"""REST handlers of the jobs API under ``/tfc-jupyter/`` (documented in ``openapi.yaml``).

Every handler is a jupyter_server ``APIHandler`` (JSON, XSRF-checked for cookie sessions) and
every HTTP method is ``@tornado.web.authenticated``; ``scripts/check_auth.py`` fails CI otherwise.
Handlers only parse the request and call the :class:`~.service.JobService` in a worker thread;
:meth:`TfcHandler.write_error` is the one place errors become HTTP: a ``TfcError`` answers with
its ``http_status`` and ``to_dict()``, anything else with a 500 that carries no traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tfc_runtime.protocol import json_safe
from tornado import web

from ..errors import SpecError, TfcError
from .service import JobService, parse_body

NAMESPACE = "tfc-jupyter"
SERVICE_KEY = "tfc_jupyter.service"
OPENAPI = Path(__file__).with_name("openapi.yaml")
T = TypeVar("T")


def error_body(exc: BaseException | None, status: int) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON body for an exception (the single error mapping)."""
    if isinstance(exc, TfcError):
        return exc.http_status, exc.to_dict()
    if isinstance(exc, web.HTTPError):
        message = exc.log_message or exc.reason or f"HTTP {exc.status_code}"
        if exc.args:
            with contextlib.suppress(TypeError, ValueError):
                message = message % exc.args
        return exc.status_code, _body("HTTPError", message, "")
    return status if status >= 500 else 500, _body(
        "InternalError",
        "the server could not handle this request",
        "see the Jupyter server's log for the details",
    )


def _body(error: str, message: str, hint: str) -> dict[str, Any]:
    """An error body of the same shape as :meth:`TfcError.to_dict` (nothing to translate)."""
    return {
        "error": error,
        "message": message,
        "hint": hint,
        "field": None,
        "ui_message": message,
        "ui_hint": hint,
        "fixes": [],
    }


class TfcHandler(APIHandler):
    """Base of the jobs API handlers: the service, JSON bodies and the error mapping."""

    @property
    def service(self) -> JobService:
        """The job service set up by the server extension."""
        service: JobService = self.settings[SERVICE_KEY]
        return service

    async def call(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a (blocking) service call in a worker thread, off the server's event loop."""
        return await asyncio.to_thread(func, *args, **kwargs)

    def int_arg(self, name: str, default: int) -> int:
        """An integer query argument, or a 400 naming it."""
        raw = self.get_query_argument(name, None)
        if raw is None or raw == "":
            return default
        try:
            return int(raw)
        except ValueError:
            raise SpecError(
                f"{name} must be a whole number, got {raw!r}", f"send ?{name}=N", field=name
            ) from None

    def raw_arg(self, name: str) -> str | None:
        """A query argument exactly as sent (tornado's own reading turns control characters
        into spaces and strips them: ``chief%00`` would read as ``chief``)."""
        values = self.request.query_arguments.get(name)
        return values[-1].decode("utf-8", errors="replace") if values else None

    def flag(self, name: str) -> bool:
        """A yes/no query argument: ``1`` or ``true`` is yes."""
        return self.get_query_argument(name, "") in ("1", "true")

    def reply(self, data: Any, status: int = 200) -> None:
        """Finish with a JSON body (a NaN or infinite metric as ``"NaN"``, ``"Infinity"``: the
        browser's ``JSON.parse`` takes no bare ``NaN``)."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(json_safe(data), default=str, allow_nan=False))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Every error of the API, as JSON ``{error, message, hint, field}``; no traceback."""
        exc_info = kwargs.get("exc_info")
        status, body = error_body(exc_info[1] if exc_info else None, status_code)
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))

    def log_exception(
        self,
        typ: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """A TfcError is the user's to fix: one log line. Anything else: the full traceback."""
        if isinstance(value, TfcError):
            self.log.info(
                "tfc-jupyter %s %s: %s %s",
                self.request.method,
                self.request.path,
                value.http_status,
                value,
            )
        else:
            super().log_exception(typ, value, tb)


class JobsHandler(TfcHandler):
    """``GET``: list jobs. ``POST``: create a job (or a dry run). ``DELETE``: clear the ended
    jobs from the list."""

    @web.authenticated
    async def get(self) -> None:
        """List recent jobs, newest first."""
        result = await self.call(
            self.service.list_jobs,
            limit=self.int_arg("limit", 50),
            state=self.get_query_argument("state", None),
            backend=self.get_query_argument("backend", None),
        )
        self.reply(result)

    @web.authenticated
    async def post(self) -> None:
        """Plan and launch a job from a notebook path or the notebook model sent."""
        body = await self.call(parse_body, self.request.body or b"")
        status, result = await self.call(self.service.create, body)
        self.reply(result, status)

    @web.authenticated
    async def delete(self) -> None:
        """Remove every ended job from the list (``?files=1``: their folders here too)."""
        self.reply(await self.call(self.service.clear, files=self.flag("files")))


class JobHandler(TfcHandler):
    """``GET``: one job. ``DELETE``: remove an ended job from the list."""

    @web.authenticated
    async def get(self, job_id: str) -> None:
        """One job's record, refreshed."""
        self.reply(await self.call(self.service.get, job_id))

    @web.authenticated
    async def delete(self, job_id: str) -> None:
        """Remove an ended job (``?files=1``: its folder here too); 409 while it runs."""
        self.reply(await self.call(self.service.delete, job_id, files=self.flag("files")))


class LogsHandler(TfcHandler):
    """``GET``: a replica's log from an offset."""

    @web.authenticated
    async def get(self, job_id: str) -> None:
        """Whole lines of one replica's log from ``offset``."""
        result = await self.call(
            self.service.logs,
            job_id,
            replica=self.raw_arg("replica") or None,
            offset=self.int_arg("offset", 0),
            limit=self.int_arg("limit", 256 * 1024),
            quiet=self.flag("quiet"),
        )
        self.reply(result)


class MetricsHandler(TfcHandler):
    """``GET``: what a job reported (Keras epochs, saved model) and its curves."""

    @web.authenticated
    async def get(self, job_id: str) -> None:
        """The job's metrics by epoch, the last ones, its model folder and plot (``run_cell=1``:
        only the fits its run cell made)."""
        self.reply(await self.call(self.service.metrics, job_id, run_cell=self.flag("run_cell")))


class CodeHandler(TfcHandler):
    """``GET``: the code a job ran (its notebook's path and code cells, as launched)."""

    @web.authenticated
    async def get(self, job_id: str) -> None:
        """The job's notebook, its code cells from the job folder (or its script)."""
        self.reply(await self.call(self.service.code, job_id))


class SweepHandler(TfcHandler):
    """``GET``: a sweep's trials, best one and plot, read back from its trial jobs."""

    @web.authenticated
    async def get(self, sweep_id: str) -> None:
        """The sweep's trials (values, state, metric, time, job), the best, the plot."""
        self.reply(await self.call(self.service.sweep, sweep_id))


class CancelHandler(TfcHandler):
    """``POST``: cancel a job."""

    @web.authenticated
    async def post(self, job_id: str) -> None:
        """Stop every process of the job."""
        self.reply(await self.call(self.service.cancel, job_id))


class TensorBoardHandler(TfcHandler):
    """``POST``: TensorBoard on a job's logs, on loopback."""

    @web.authenticated
    async def post(self, job_id: str) -> None:
        """Start (or find) TensorBoard on the job's TensorBoard folders here; its address."""
        self.reply(await self.call(self.service.tensorboard, job_id))


class MachinesHandler(TfcHandler):
    """``GET``: the machine catalog."""

    @web.authenticated
    async def get(self) -> None:
        """Every catalog machine with its price."""
        self.reply(await self.call(self.service.machines))


class DefaultsHandler(TfcHandler):
    """``GET``: the effective defaults and the job options."""

    @web.authenticated
    async def get(self) -> None:
        """Settings with their sources, backends, strategies and options."""
        self.reply(await self.call(self.service.defaults))


def openapi_document() -> str:
    """``openapi.yaml`` with ``CreateJob.options`` from the option table (installed backends'
    options included): each option's type and flag, and no other name; a plan's sweep method
    is one of the registered sweep methods (the file lists the built-in ones)."""
    import yaml

    from ..job.options import options_schema
    from ..sweep import methods

    document = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))
    schemas = document["components"]["schemas"]
    options = schemas["CreateJob"]["properties"]["options"]
    options.update({k: v for k, v in options_schema().items() if k != "type"})
    schemas["Plan"]["properties"]["sweep"]["properties"]["method"]["enum"] = methods.names()
    return str(yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100))


class OpenAPIHandler(TfcHandler):
    """``GET``: this API's OpenAPI document."""

    @web.authenticated
    def get(self) -> None:
        """The OpenAPI 3 description of the jobs API (YAML)."""
        self.set_header("Content-Type", "application/yaml")
        self.finish(openapi_document())


class NotFoundHandler(TfcHandler):
    """Any other path under ``/tfc-jupyter/``: a JSON 404 (after authentication)."""

    @web.authenticated
    def get(self, path: str) -> None:
        """Unknown endpoint (a job id over 200 characters is one too): named in at most 80
        characters, so an answer stays small whatever the request's size."""
        shown = path if len(path) <= 80 else f"{path[:60]}... ({len(path):,} characters)"
        raise web.HTTPError(404, "no such endpoint: /%s/%s", NAMESPACE, shown)

    post = delete = get


_JOB = r"(?P<job_id>[A-Za-z0-9][A-Za-z0-9._-]{0,199})"
_SWEEP = r"(?P<sweep_id>[A-Za-z0-9][A-Za-z0-9._-]{0,62})"  # a label's value
ROUTES: list[tuple[str, type[TfcHandler]]] = [
    ("jobs", JobsHandler),
    (f"jobs/{_JOB}", JobHandler),
    (f"jobs/{_JOB}/logs", LogsHandler),
    (f"jobs/{_JOB}/metrics", MetricsHandler),
    (f"jobs/{_JOB}/code", CodeHandler),
    (f"jobs/{_JOB}/cancel", CancelHandler),
    (f"jobs/{_JOB}/tensorboard", TensorBoardHandler),
    (f"sweeps/{_SWEEP}", SweepHandler),
    ("machines", MachinesHandler),
    ("defaults", DefaultsHandler),
    ("openapi.yaml", OpenAPIHandler),
    ("(?P<path>.*)", NotFoundHandler),
]


def setup_handlers(web_app: Any, service: JobService) -> None:
    """Register the API under ``<base_url>tfc-jupyter/``."""
    web_app.settings[SERVICE_KEY] = service
    base = url_path_join(web_app.settings.get("base_url", "/"), NAMESPACE)
    web_app.add_handlers(
        ".*$", [(url_path_join(base, pattern) + "/?$", handler) for pattern, handler in ROUTES]
    )
