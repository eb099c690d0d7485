"""The jobs API's work, free of tornado: JSON-ready input in, JSON-ready dicts out.

The REST handlers (:mod:`.handlers`) only move JSON between HTTP and a :class:`JobService`; every
failure here is a :class:`~tfc_jupyter.errors.TfcError`, which the handlers map to HTTP in one
place. Launching follows the same core path as ``%%tfc_run``: a Selection from
:mod:`~tfc_jupyter.notebook.capture`, :func:`~tfc_jupyter.planner.plan.make_plan`,
:func:`~tfc_jupyter.jobs.launch`, and the same job records, so kernels and the server see each
other's jobs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import __version__, jobs
from ..client import Client
from ..config import Settings, load_settings
from ..errors import SpecError, TfcError, TooLarge
from ..job import catalog, options
from ..job.options import JobOptions
from ..jobs import job_dict, sweep_refusal
from ..notebook import capture
from ..planner.plan import Plan
from ..store import logs
from ..store.records import JobRecord, JobState, JobStore
from ..util import masking
from ..util.files import confined

_REPLICA = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
LOG_CHUNK = 256 * 1024
CODE_BYTES = 8 << 20  # a job folder's script.map.json or script.py read for its code
"""Most bytes of one replica log returned by one logs request."""
MAX_LIST = 500
MAX_CELLS = 10_000  # cells of a notebook sent in a request
MAX_BODY_BYTES = 64_000_000  # a request's body
MAX_BODY_VALUES = 2_000_000
"""Most JSON values in a request's body (objects, arrays and their members): 15 million empty
objects fit in 42 MB and would take 4 GB to read; a notebook of :data:`MAX_CELLS` cells has a
few hundred thousand."""
MAX_BODY_DEPTH = 100
"""Deepest nesting of objects and arrays in a request's body (a notebook's is under 10)."""
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
"""A JSON string, escapes included (its braces and commas are not the body's)."""


def json_values(raw: bytes) -> int:
    """How many values the JSON text ``raw`` holds, counted before it is read: each object or
    array, and each member after the first (a comma outside strings). Strings are skipped
    whole, so a notebook's braces and commas in its code do not count."""
    bare = _STRING.sub(b"", raw)
    return bare.count(b"{") + bare.count(b"[") + bare.count(b",")


def _depth(value: Any) -> int:
    """The deepest nesting of objects and arrays in ``value``, walked without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        members = item.values() if isinstance(item, dict) else item
        deepest = max(deepest, depth)
        todo.extend((m, depth + 1) for m in members if isinstance(m, (dict, list)))
    return deepest if isinstance(value, (dict, list)) else 0


def parse_body(raw: bytes) -> dict[str, Any]:
    """A request's body as a JSON object, read within limits on bytes, values and depth.

    Raises:
        TooLarge: over :data:`MAX_BODY_BYTES` or :data:`MAX_BODY_VALUES` (413).
        SpecError: not JSON, too deep, or not an object (400).
    """
    fix = "send the notebook without its outputs, or launch its saved file"
    if len(raw) > MAX_BODY_BYTES:
        raise TooLarge(
            f"the request is {len(raw)} bytes; the limit is {MAX_BODY_BYTES}", fix, field="body"
        )
    values = json_values(raw)
    if values > MAX_BODY_VALUES:
        raise TooLarge(
            f"the request holds {values} JSON values; the limit is {MAX_BODY_VALUES}",
            fix,
            field="body",
        )
    too_deep = SpecError(
        f"the body is nested deeper than {MAX_BODY_DEPTH} levels",
        "send a flatter JSON object",
        field="body",
    )
    try:
        data = json.loads(raw or b"{}")
    except ValueError as exc:
        raise SpecError(
            f"the body is not JSON ({exc})", "send a JSON object", field="body"
        ) from None
    except RecursionError:
        raise too_deep from None
    if not isinstance(data, dict):
        raise SpecError("the body must be a JSON object", "send {...}", field="body")
    if _depth(data) > MAX_BODY_DEPTH:
        raise too_deep
    return data


def parse_options(raw: Any) -> JobOptions:
    """Request ``options`` (``{"workers": 1, "machine": "CPU", ...}``) as typed options,
    each checked on its own so an error names it (:meth:`JobOptions.from_json`).

    Raises:
        SpecError: not an object, an unknown option or a bad value (``field`` is the option).
    """
    return JobOptions.from_json(raw)


class JobService:
    """Everything the REST API does, one method per endpoint.

    Args:
        root_dir: the server's root folder; notebook paths in requests are relative to it.
        settings: returns the effective defaults (read anew for each request, so edits to
            ``jupyter_server_config`` or ``TFC_*`` variables apply without a restart).
    """

    def __init__(
        self,
        root_dir: str | Path,
        settings: Callable[[], Settings] = load_settings,
        kernel_pid: Callable[[str], int | None] | None = None,
    ) -> None:
        self.root_dir = Path(root_dir).expanduser().resolve()
        self._settings = settings
        self._kernel_pid = kernel_pid

    def job_json(self, record: JobRecord) -> dict[str, Any]:
        """A job as the API returns it (:func:`~tfc_jupyter.jobs.job_dict`), and whether the
        kernel that set its names is gone since (restarted, or shut down): ``returned_gone``."""
        data = job_dict(record)
        data["returned_gone"] = self._gone(record.returned_kernel)
        return data

    def _gone(self, kernel: str | None) -> bool:
        """Whether the kernel ``ID/PID`` runs no more as that process (its id unknown to this
        server: shut down; another process: restarted). False where it cannot be told."""
        kid, _, pid = (kernel or "").partition("/")
        if self._kernel_pid is None or not kid or not pid.isdigit():
            return False
        try:
            now = self._kernel_pid(kid)
        except Exception:  # the kernel manager's own trouble: cannot tell
            return False
        return now is not None and now != int(pid)

    # ---------------------------------------------------------------- helpers
    def client(self) -> Client:
        """The one way in, with the settings as they are now (read anew for each request)."""
        return Client(self._settings())

    def store(self) -> JobStore:
        """The job-record store kernels use too (``TFC_JUPYTER_HOME`` or the Jupyter data dir)."""
        return self.client().store

    def _record(self, client: Client, job_id: str) -> JobRecord:
        """The record, brought up to date by its backend when it is still running (with the
        request's settings, read once)."""
        record = client.store.get(job_id)
        if record.state.is_terminal():
            return record
        try:
            return jobs.backend_for(record.backend, client.store, client.settings).refresh(record)
        except TfcError:  # a backend this server cannot reach: show what the record says
            return record

    def _notebook_path(self, raw: Any) -> Path:
        if not isinstance(raw, str) or not raw.strip():
            raise SpecError(
                "'path' is required: the notebook's path under the server root",
                'send "path": "folder/notebook.ipynb"',
                field="path",
            )
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            raise SpecError(
                "'path' holds a character that is not text (a lone surrogate)",
                "send the path as UTF-8 text",
                field="path",
            ) from None
        if "\0" in raw or len(raw) > 4096 or any(len(p.encode()) > 255 for p in raw.split("/")):
            raise SpecError(
                "'path' is not a usable file path (a NUL byte, or a name over 255 bytes)",
                "send the notebook's path relative to the root folder",
                field="path",
            )
        path = (self.root_dir / raw.strip().lstrip("/")).resolve()
        if not path.is_relative_to(self.root_dir) or path == self.root_dir:
            raise SpecError(
                f"path {raw!r} is outside the server's root folder (or is that folder itself)",
                'send the notebook\'s path relative to the root folder ("dir/nb.ipynb")',
                field="path",
            )
        if path.suffix not in (".ipynb", ".py"):
            raise SpecError(
                f"path {raw!r} is not a notebook (.ipynb) or a Python script (.py)",
                "send the path of an .ipynb or .py file",
                field="path",
            )
        if not _is(path.parent, "dir", raw):
            raise SpecError(
                f"the folder of {raw!r} does not exist", "save the notebook", field="path"
            )
        return path

    def _confine(self, ns: JobOptions, base: Path) -> None:
        """Requirements files and ``include`` paths of a request stay inside the root folder
        (the CLI and the magic may name any file of their user; a web request may not)."""
        for key, flag in (("requirements", "requirements"), ("include", "include")):
            for item in getattr(ns, key):
                try:
                    target = (base / str(item)).resolve()
                except RuntimeError:  # a loop of links: said in one line by the plan
                    continue
                if not target.is_relative_to(self.root_dir):
                    raise SpecError(
                        f"{flag} {item!r} is outside the server's root folder",
                        "name a file inside the root folder, relative to the notebook",
                        field=key,
                    )

    def _script(self, path: Path, body: Mapping[str, Any]) -> capture.Selection:
        """A ``.py`` entry point: the editor's text (``source``) or the saved file."""
        if body.get("notebook") is not None or body.get("cell") is not None:
            raise SpecError(
                f"{path.name} is a script: 'notebook' and 'cell' name notebook content",
                "send the script's text as 'source', or nothing to read the saved file",
                field="notebook",
            )
        source = body.get("source")
        if source is None:
            if not _is(path, "file", body["path"]):
                raise SpecError(
                    f"script {body['path']!r} not found under the server's root folder",
                    "save it first, or send its text as 'source'",
                    field="path",
                )
            return capture.read_script(path, how="saved script file")
        limit = capture.SCRIPT_LIMIT
        if not isinstance(source, str) or len(source.encode("utf-8", "replace")) > limit:
            raise SpecError(
                f"'source' must be the script's text (at most {limit // 1_000_000} MB)",
                "send the editor's text as a string",
                field="source",
            )
        selection = capture.script_selection(path, source, how="the editor's text")
        if body.get("dirty"):
            selection.warnings.append(
                f"{path.name} has unsaved edits: the job runs the script as shown in the editor"
            )
        return selection

    def _selection(self, body: Mapping[str, Any]) -> capture.Selection:
        path = self._notebook_path(body.get("path"))
        if path.suffix == ".py":
            return self._script(path, body)
        cell = body.get("cell")
        if cell is not None and (isinstance(cell, bool) or not isinstance(cell, int)):
            raise SpecError(
                "'cell' must be a whole number", "send the cell's 1-based position", field="cell"
            )
        model = body.get("notebook")
        if model is not None:
            nb = capture.notebook_from_model(_checked_model(model))
            how = "live notebook model"
        elif _is(path, "file", body["path"]):
            nb = capture.read_notebook(path)
            how = "saved notebook file"
        else:
            raise SpecError(
                f"notebook {body['path']!r} not found under the server's root folder",
                "save it first, or send its content as 'notebook'",
                field="path",
            )
        selection = capture.select_cells(nb, path=path, how=how, cell_number=cell)
        if model is not None and body.get("dirty"):
            selection.warnings.append(
                f"{path.name} has unsaved edits: the job runs the notebook as shown in the editor"
            )
        return selection

    # ---------------------------------------------------------------- endpoints
    def create(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """Plan a job from a notebook (the live model, or the saved file) and launch it.

        Returns ``(201, {"job", "plan"})``, or ``(200, {"dry_run": true, "plan", "text",
        "script"})`` when ``options.dry_run`` is true.
        """
        request = parse_options(body.get("options"))
        selection = self._selection(body)
        self._confine(request, selection.base_dir)
        replace = body.get("replace", False)
        if not isinstance(replace, bool):
            raise SpecError(
                "'replace' must be true or false", "send replace: true", field="replace"
            )
        cell = JobOptions.from_line(selection.magic_line)
        ns = request.over(cell, replace=replace)
        if ns.notify != cell.notify:  # a form sends the cell's --notify back as it was shown
            ns = dataclasses.replace(ns, notify=masking.unmasked(ns.notify, cell.notify))
        self._confine(ns, selection.base_dir)  # the request's paths and the cell's flags
        client = self.client()
        with confined(self.root_dir):  # and every file the plan follows from there
            plan = client.plan(selection, ns)
        # said by the dry run, as the launch would say it; a sweep this machine runs is
        # driven by a process of its own (tfc_jupyter.trials.driver), not refused
        refusal = sweep_refusal(plan, driven=True)
        if refusal is not None and plan.refused is None:
            plan = dataclasses.replace(plan, refused=refusal)
        driven = plan.sweep is not None and sweep_refusal(plan) is not None
        if ns.dry_run:
            out = {
                "dry_run": True,
                "plan": plan.summary(),
                "text": plan.to_text(script=False),
                "script": plan.script.text,
                "sweep": (
                    "it would run as a sweep: its trials are jobs of their own"
                    if driven and plan.refused is None
                    else None
                ),
            }
            return 200, out
        if driven:
            return 202, self._start_sweep(client, plan, selection)
        job = client.submit(plan)
        return 201, {"job": job_dict(client.store.get(job.id)), "plan": plan.summary()}

    def _start_sweep(
        self, client: Client, plan: Plan, selection: capture.Selection
    ) -> dict[str, Any]:
        """Start the driver of a sweep this machine runs (its own process: it outlives the
        server); the sidebar follows it at ``sweeps/ID``."""
        from ..trials.driver import start_driver

        if plan.refused is not None:  # what launching its first trial would say
            raise plan.refused
        started = start_driver(client, plan, selection, root=self.root_dir)
        return {
            "sweep": started.sweep_id,
            "trials": started.trials,
            "parallel": started.parallel,
            "path": f"sweeps/{started.sweep_id}",
            "driver": {"pid": started.pid, "log": str(started.log)},
            "plan": plan.summary(),
        }

    def list_jobs(
        self, *, limit: int = 50, state: str | None = None, backend: str | None = None
    ) -> dict[str, Any]:
        """Recent jobs, newest first (any backend, launched by the server or by kernels)."""
        if not 1 <= limit <= MAX_LIST:
            raise SpecError(f"limit must be 1 to {MAX_LIST}", "send ?limit=50", field="limit")
        states = None
        if state:
            try:
                states = [JobState(s.strip()) for s in state.split(",")]
            except ValueError:
                raise SpecError(
                    f"unknown state in {state!r}",
                    f"use one of: {', '.join(s.value for s in JobState)}",
                    field="state",
                ) from None
        client = self.client()
        records = client.store.list(limit=limit, backend=backend or None, states=states)
        return {"jobs": [self.job_json(self._record(client, r.id)) for r in records]}

    def get(self, job_id: str) -> dict[str, Any]:
        """One job (an id or a unique prefix)."""
        return self.job_json(self._record(self.client(), job_id))

    def logs(
        self,
        job_id: str,
        *,
        replica: str | None = None,
        offset: int = 0,
        limit: int = LOG_CHUNK,
        quiet: bool = False,
    ) -> dict[str, Any]:
        """A replica's log from byte ``offset``: whole lines, at most ``limit`` bytes.

        Follow a job by calling again with ``offset=next_offset`` until ``terminal`` is true
        and ``more`` is false. ``quiet`` leaves TensorFlow's start-up chatter and the runtime's
        status lines out of ``text``, and shows each line as a notebook would (``\r``
        updates of a progress bar as their latest state, no colour codes; the offsets still
        count every byte of the file); a line longer than ``limit``, which comes in pieces,
        is passed as it is. ``partial`` is the latest state of the line being written at the
        end (a progress bar being drawn): show it after ``text`` until the next call.
        """
        record = self._record(self.client(), job_id)
        replicas = logs.replicas(Path(record.log_dir))
        name = replica or (replicas[0] if replicas else "chief")
        if not _REPLICA.fullmatch(name):
            raise SpecError(
                f"bad replica name {name!r}",
                f"use one of: {', '.join(replicas) or 'chief'}",
                field="replica",
            )
        if offset < 0:
            raise SpecError("offset must be 0 or more", "send ?offset=0", field="offset")
        if not 1 <= limit <= 4 * LOG_CHUNK:
            raise SpecError("limit must be 1 to 1048576 bytes", "leave it out", field="limit")
        try:
            data, size = logs.read_chunk(
                Path(record.log_dir) / f"{name}.log",
                offset,
                limit,
                final=record.state.is_terminal(),
            )
        except logs.OffsetPastEnd as exc:
            raise SpecError(str(exc), "start again from offset 0", field="offset") from None
        text, next_offset = data.decode("utf-8", errors="replace"), offset + len(data)
        if quiet:  # as the cell shows it: progress bars at their latest state, no colour codes
            text = logs.shown_text(text)
        path = Path(record.log_dir) / f"{name}.log"
        pending = next_offset < size
        partial = logs.pending_line(path, next_offset, verbose=not quiet) if pending else ""
        return {
            "job_id": record.id,
            "replica": name,
            "replicas": replicas,
            "offset": offset,
            "next_offset": next_offset,
            "size": size,
            # Another call now gives more only when this one brought lines: an unfinished last
            # line (a progress bar being drawn) waits for its newline, and is sent as partial.
            "more": bool(data) and next_offset < size,
            "text": text,
            "partial": partial,
            "state": record.state.value,
            "terminal": record.state.is_terminal(),
        }

    def metrics(self, job_id: str, *, run_cell: bool = False) -> dict[str, Any]:
        """What the job reported: each Keras epoch's loss and metrics, the last ones, where it
        saved its model, and the curves as an SVG image (``svg``: None before an epoch ends).
        ``run_cell``: only the fits the job's run cell made, not those of the cells above it
        (what the run cell's output draws, as its live plot did)."""
        from ..jobs import results_of
        from ..returns.plot import svg

        client = self.client()
        record = self._record(client, job_id)
        results = results_of(record)
        if run_cell:
            results = results.of_run_cell()
        shown = results.downsampled()  # a job of 100k rounds answers in a few hundred KB
        return {
            "job_id": record.id,
            "state": record.state.value,
            "terminal": record.state.is_terminal(),
            **shown.to_dict(),
            "epoch_count": len(results.epochs),
            "model_dir": jobs.model_dir(record, results),
            "svg": svg(shown, done=record.state.is_terminal()),
        }

    def code(self, job_id: str) -> dict[str, Any]:
        """The code a job ran, as launched: its notebook's path, and its code cells (index and
        source) from the job folder's ``script.map.json``; ``script``: ``script.py``'s text when
        the map names no cells (a ``.py`` entry point); ``missing``: why neither is there. The
        folder is read through the border (no link followed, 8 MB at most)."""
        from ..returns import border

        record = self._record(self.client(), job_id)
        out: dict[str, Any] = {"job_id": record.id, "notebook": record.notebook, "cells": []}
        out.update(script=None, missing=None)
        if not record.job_dir:
            out["missing"] = "the job has no folder on this machine"
            return out
        try:
            smap = border.read_json(record.job_dir, "script.map.json", CODE_BYTES)
            cells = smap.get("cells") if isinstance(smap, dict) else None
            out["cells"] = [
                {"cell": c["cell"], "source": c["source"]}
                for c in (cells if isinstance(cells, list) else [])
                if isinstance(c, dict)
                and isinstance(c.get("cell"), int)
                and isinstance(c.get("source"), str)
            ]
            if not out["cells"]:
                data = border.read_bytes(record.job_dir, "script.py", CODE_BYTES)
                out["script"] = data.decode("utf-8", errors="replace")
        except (border.Refused, OSError) as exc:
            out["missing"] = f"its code is not readable in its folder: {exc}"
        return out

    def sweep(self, sweep_id: str) -> dict[str, Any]:
        """A sweep read back from its trial jobs: each trial's values, state, metric, time and
        job, the best one, a summary line and the plot (``tfc_jupyter.trials.sweep_jobs``)."""
        from ..trials.sweep_jobs import sweep_json

        return sweep_json(self.store(), sweep_id)

    def tensorboard(self, job_id: str) -> dict[str, Any]:
        """TensorBoard on the job's TensorBoard folders here, started by this server on
        loopback (the same one again while it runs): ``{"url": "http://127.0.0.1:PORT/"}``."""
        from ..returns.tensorboard import serve

        client = self.client()
        record = self._record(client, job_id)
        return {"job_id": record.id, "url": serve(client.job(record.id))}

    def delete(self, job_id: str, *, files: bool = False) -> dict[str, Any]:
        """Remove an ended job from the list (``files``: its folder too); 409 while it runs."""
        return job_dict(self.client().delete(job_id, files=files))

    def clear(self, *, files: bool = False) -> dict[str, Any]:
        """Remove every ended job from the list (``files``: their folders too); running and
        queued jobs stay. ``{"deleted": [ids]}``."""
        client = self.client()
        ended = [r for r in client.store.list(limit=None) if r.state.is_terminal()]
        deleted = []
        for record in ended:
            with contextlib.suppress(TfcError):  # gone meanwhile
                deleted.append(client.delete(record.id, files=files).id)
        return {"deleted": deleted}

    def cancel(self, job_id: str) -> dict[str, Any]:
        """Stop every process of a job (bounded wait); 409 when it has already ended."""
        return job_dict(self.client().cancel(job_id))

    def machines(self) -> dict[str, Any]:
        """The machine catalog with prices, GPU and TPU types."""
        return {
            "machines": [
                {**m.to_dict(), "description": m.describe()} for m in catalog.catalog_rows()
            ],
            "gpu_types": list(catalog.OFFERED_GPU_TYPES),
            "tpu_types": list(catalog.TPU_TYPES),
            "prices_as_of": catalog.PRICES_AS_OF,
            "pricing_url": catalog.PRICING_URL,
        }

    def defaults(self) -> dict[str, Any]:
        """The effective defaults (and where each came from), and the options a job takes."""
        from .. import registry
        from ..job.spec import Strategy
        from ..planner import fields

        settings = self._settings()
        shown = settings.to_dict()
        told = shown["notify"]["value"]
        if told:  # the notify setting's URLs, as every other place shows them
            shown["notify"]["value"] = " ".join(masking.shown_all(str(told).split()))
        return {
            "version": __version__,
            "settings": shown,
            "backends": registry.names(),
            "strategies": [s.value for s in Strategy],
            "options": [
                {
                    "name": f.name,
                    "flag": f.option,
                    "help": f.help.replace("%%", "%"),
                    "repeatable": f.kind == "list",
                    "boolean": f.kind == "switch",
                    "kind": f.kind,
                    "default": list(f.default) if f.kind == "list" else f.default,
                }
                for f in options.FIELDS
                if f.flag.in_json
            ],
            "fields": fields.fields_json(str(settings.get("machine") or "CPU")),
            "root_dir": str(self.root_dir),
            "jobs_home": str(Client(settings).store.path.parent),
        }


def _cell_ok(cell: Any) -> bool:
    """A cell of a notebook model: a mapping whose source is text (or a list of texts), whose
    metadata is a mapping and whose tags are a list of texts."""
    if not isinstance(cell, Mapping):
        return False
    source = cell.get("source", "")
    if not (
        isinstance(source, str)
        or (isinstance(source, list) and all(isinstance(x, str) for x in source))
    ):
        return False
    metadata = cell.get("metadata", {})
    if not isinstance(metadata, Mapping):
        return False
    tags = metadata.get("tags", [])
    return tags is None or (isinstance(tags, list) and all(isinstance(t, str) for t in tags))


def _checked_model(model: Any) -> Mapping[str, Any]:
    """The notebook JSON sent, checked enough that selecting its cells cannot crash."""
    cells = model.get("cells") if isinstance(model, Mapping) else None
    if isinstance(cells, list) and len(cells) > MAX_CELLS:
        raise TooLarge(
            f"the notebook sent has {len(cells)} cells; the limit is {MAX_CELLS}",
            "split the notebook, or launch its saved file (send no 'notebook')",
            field="notebook",
        )
    ok = isinstance(cells, list) and all(_cell_ok(c) for c in cells)
    if not ok:
        raise SpecError(
            "the notebook model is not valid: it needs a list of cells with text sources, "
            "metadata objects and tags lists",
            "send the notebook's JSON (the model's toJSON())",
            field="notebook",
        )
    return dict(model)


def _is(path: Path, kind: str, raw: object) -> bool:
    """``path`` is a folder (``kind`` "dir") or a file; a folder the server's user may not
    read on the way is a 400 naming the path, never a PermissionError's 500."""
    try:
        return path.is_dir() if kind == "dir" else path.is_file()
    except OSError as exc:
        raise SpecError(
            f"cannot read {raw!r}: {exc.strerror or exc}",
            "check the permissions of the path and its folders (the Jupyter server's user must "
            "be able to read them)",
            field="path",
        ) from None
