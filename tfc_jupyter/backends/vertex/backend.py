"""The Vertex AI backend: the job as a Vertex AI ``CustomJob``, followed from this machine.

``submit`` finds the job's image (``--image``, or the content-addressed image built and pushed by
:mod:`tfc_jupyter.build`), creates the CustomJob with exactly the body a dry run shows
(:func:`tfc_jupyter.backends.vertex.request.custom_job_body`) through
google-cloud-aiplatform's ``JobServiceClient`` over REST, records the console link (and the
TensorBoard link when one is set), and starts a detached watcher (:mod:`.watcher`) that
polls the job's state and copies its Cloud Logging entries into ``<job_dir>/logs/<replica>.log``.
So ``Job.follow()``, ``%tfc_logs`` and ``%tfc_attach`` work as for local jobs, and the job
outlives the kernel. A plan with a sweep is one ``HyperparameterTuningJob`` instead
(:func:`~tfc_jupyter.backends.vertex.request.tuning_job_body`), created, watched and cancelled
the same way; its watcher keeps the trials in the job folder (:mod:`tfc_jupyter.trials.tuned`).

Transient API errors are retried with backoff within a bounded time; authentication, permission,
quota, not-found and invalid-argument errors stop at once with a one-line
:class:`~tfc_jupyter.errors.BackendError` that says what to do (see
:mod:`tfc_jupyter.google.gcloud`).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import BackendError, TfcError
from ...job.spec import JobSpec
from ...registry import Preview, Route, Traits
from ...returns import notify
from ...store.records import CANCEL_ASKED, REPORT_KEY, JobRecord, JobState, JobStore
from ...util.files import write_private
from .. import watch_lock
from ..watched import (
    LOG_NOTE,
    NOT_FOLLOWED,
    QUICK_STARTS,
    WATCHER_LOG,
    alive,
    followed_again,
    last_line,
    not_followed,
    package_pythonpath,
    quick_starts,
    start_watcher,
)
from . import api as vertex_api
from . import request as vertex_request
from . import scheduling
from .api import VertexSettings
from .google import gcloud
from .google.gcloud import RetryCount
from .options import VertexOptions

if TYPE_CHECKING:
    from ...config import Settings
    from ...image import ImageResult
    from ...image.context import Context
    from ...job.options import JobOptions
    from ...planner.plan import Plan
    from ...sweep.spec import SweepSpec

WATCH_FILE = "vertex.json"
MAX_WATCHER_STARTS = 4
"""Quick starts of a job's watcher in a row (each ended before it settled: see
:data:`~tfc_jupyter.backends.watched.QUICK_STARTS`) after which it is not started again by
itself: the job is recorded "not followed (status unknown)" (its state kept; a follow starts a
watcher again)."""


def cloud_build(
    spec: JobSpec, context: Context, uri: str, result: ImageResult, settings: Settings
) -> ImageResult:
    """Build and push ``uri`` with Google Cloud Build: the image builder's ``remote`` when no
    Docker engine answers here (:func:`tfc_jupyter.image.ensure_image`)."""
    from . import cloudbuild

    cb = cloudbuild.CloudBuildSettings.from_settings(settings)
    return cloudbuild.ensure_image(spec, context, uri, result, settings=cb)


def tensorboard_url(tensorboard: str, job_id: str) -> str:
    """The TensorBoard page of a job's experiment (as the aiplatform SDK prints it)."""
    parts = tensorboard.split("/")
    location = parts[3] if len(parts) > 3 else "us-central1"
    experiment = f"{tensorboard}/experiments/{job_id}".replace("/", "+")
    return f"https://{location}.tensorboard.googleusercontent.com/experiment/{experiment}"


class VertexBackend:
    """Runs jobs as Vertex AI custom jobs (see the module docstring)."""

    name = "vertex"
    options = VertexOptions
    """The options only Vertex AI takes, declared in its folder (``options.py``)."""
    traits = Traits(
        label="Vertex AI",
        runs_image=True,
        billed=True,
        tpus=True,
        needs_project=True,
        routes=True,
        scheduling=True,
        reports_in_logs=True,
        tunes=True,
        sweep_methods=frozenset(vertex_request.ALGORITHMS),  # those Vizier has an algorithm for
        model_place="on the Vertex AI machine",
        restarts="Vertex AI restarts a replica after VM maintenance, a preemption or a crash",
    )

    @classmethod
    def check_spec(cls, spec: JobSpec) -> None:
        """Refuse, as Vertex AI would, the spec's scheduling, placement, disks and networks
        against its machines (every spec of a Vertex AI job, a dry run's too)."""
        scheduling.check(spec)

    @classmethod
    def check_sweep(cls, sweep: SweepSpec) -> None:
        """Refuse, as Vizier would, a sweep's values (a discrete list over 1,000 values or with
        two closer than 1e-10, categories that read alike as text): the plan's check."""
        vertex_request.check_study(sweep)

    @classmethod
    def current_prices(cls, settings: Settings) -> Any:
        """Compute Engine's current prices (a :class:`~tfc_jupyter.job.prices.CurrentRates`)
        where the user has credentials, cached a day in the tfc home; None: the list stands."""
        from ...job import prices
        from ...store import records
        from .google import billing

        home = settings.get("home")
        return billing.current(Path(home) if home else records.default_home(), prices.REGION)

    @classmethod
    def plan_notes(cls, spec: JobSpec, options: JobOptions) -> list[str]:
        """What the plan says of Vertex AI's own options given together, and the boot disk
        chosen for the user (:func:`.scheduling.option_notes`); refuses what the machines cannot
        take as asked (an explicit pd-ssd boot disk on a Hyperdisk-only machine)."""
        own = vertex_request.own_options_of(options)
        return scheduling.option_notes(spec, own.boot_disk_type, own.disable_retries)

    @classmethod
    def route(
        cls,
        spec: JobSpec,
        requirements: list[str],
        base_dir: Path,
        *,
        asked: str,
        tf_version: str | None,
        extra_images: str | None,
        context: Context | None,
    ) -> Route:
        """How the job's code gets to Vertex AI: a package on a prebuilt image, built from
        ``context``, or an image (:func:`.route.choose_route`)."""
        from .route import choose_route

        return choose_route(
            spec,
            requirements,
            base_dir,
            asked=asked,
            tf_version=tf_version,
            extra_images=extra_images,
            context=context,
        )

    @classmethod
    def preview(cls, plan: Plan) -> Preview:
        """The exact CustomJob create request a launch sends (method, url, body)."""
        return vertex_request.preview(plan)

    def __init__(self, store: JobStore, *, settings: VertexSettings | None = None) -> None:
        self.store = store
        self.settings = settings or VertexSettings.load()

    @classmethod
    def from_settings(cls, store: JobStore, settings: Settings) -> VertexBackend:
        """The backend for ``store``, with the settings' endpoints and patience."""
        return cls(store, settings=VertexSettings.from_settings(settings))

    # -- the Backend protocol ---------------------------------------------------------------
    def check(self, spec: JobSpec) -> None:
        """Refuse before launch: no project, no client libraries, no image, no credentials."""
        if not spec.google.project:
            raise BackendError(
                "a Vertex AI job needs a Google Cloud project",
                "pass --project PROJECT_ID, or set GOOGLE_CLOUD_PROJECT",
                field="project",
            )
        vertex_api.require_clients()
        if spec.decided.route == "package":  # nothing to build: the package goes to the bucket
            from . import cloudbuild

            gcloud.credentials(cloudbuild.CloudBuildSettings.load().storage_url())
        elif not spec.image.image:  # built here (an engine answers) or by Cloud Build
            from ...image import docker

            try:
                docker.docker_client("building the job's image for Vertex AI")
            except BackendError as exc:
                if not spec.image.build_bucket:
                    raise BackendError(
                        exc.message,
                        "start Docker (or set DOCKER_HOST), pass --build-bucket BUCKET to build "
                        "with Cloud Build, or pass --image with an image you built",
                        field="image",
                    ) from None
                from . import cloudbuild

                cloudbuild.check(spec)
        gcloud.credentials(self.settings.api_endpoint(spec.google.region))

    def submit(self, record: JobRecord, plan: Plan) -> None:
        """Create the CustomJob (retrying transient errors) and start the watcher. A cancel
        that comes meanwhile wins: nothing more is built, uploaded or created after it, and a
        job Vertex AI created before it could be found is recorded and cancelled at once."""
        spec = plan.spec
        assert spec.google.project, "check() refuses a job without a project"
        if self._cancel_asked(record.id):
            return
        image, package_uri = spec.image.image, plan.package_uri
        built: dict[str, Any] | None = None
        if plan.package is not None and package_uri:  # the package route: upload, build nothing
            image = plan.image_uri
            built = {"package": package_uri, "uploaded": self._upload(plan)}
        elif not image:
            from ...image import ensure_image

            result = ensure_image(plan, push=True, remote=cloud_build)
            image, built = result.uri, {"built": result.built, "pushed": result.pushed}
        if plan.sweep is not None:  # a sweep: one tuning job, Vizier choosing each trial's values
            body = vertex_request.tuning_job_body(
                spec, plan.sweep.spec, image, package_uri, vertex_request.own_options(plan)
            )
        else:
            body = vertex_request.custom_job_body(  # as shown
                spec, image, package_uri=package_uri, own=vertex_request.own_options(plan)
            )
        key = secrets.token_hex(16)  # signs the reports that come with the logs (never shown)
        self.store.update(record.id, mutate=lambda rec: {"handle": {**rec.handle, REPORT_KEY: key}})
        body = vertex_request.with_report_key(body, key)
        job_dir = Path(record.job_dir)
        write_private(job_dir / "vertex_request.json", json.dumps(body, indent=2))
        if self._cancel_asked(record.id):  # during the build or the upload: create nothing
            return
        counter = RetryCount()
        job = self._create(spec, body, counter, tuning=plan.sweep is not None)
        resource = str(job["name"])
        vertex_id = resource.rsplit("/", 1)[-1]
        watch = {
            "job_id": record.id,
            "store": str(self.store.path),
            "resource_name": resource,
            "vertex_job_id": vertex_id,
            "project": spec.google.project,
            "region": spec.google.region,
            "created": job.get("createTime"),
            "timeout_s": spec.timeout_s,
            "settings": self.settings.to_dict(),
        }
        write_private(job_dir / WATCH_FILE, json.dumps(watch, indent=1))
        handle = {
            "resource_name": resource,
            "vertex_job_id": vertex_id,
            "image": image,
            "image_build": built,
            "endpoint": self.settings.api_endpoint(spec.google.region),
            "api_retries": counter.retries,
            "watcher_starts": 0,
            QUICK_STARTS: 0,
        }
        # The resource first, whatever the state: a cancel from now on finds what to cancel.
        created = self.store.update(
            record.id,
            mutate=lambda rec: {"handle": {**rec.handle, **handle}},
            console_url=vertex_request.console_url(
                spec, vertex_id, tuning=vertex_api.is_tuning(resource)
            ),
            tensorboard_url=tensorboard_url(spec.google.tensorboard, vertex_id)
            if spec.google.tensorboard
            else None,
        )
        if created.state in CANCEL_ASKED:  # asked while creating
            self._cancel_created(created, spec, resource)
            return
        moved = self.store.transition(
            record.id, JobState.from_vertex(str(job.get("state") or "JOB_STATE_QUEUED"))
        )
        if moved.state in CANCEL_ASKED:  # a cancel just won
            self._cancel_created(moved, spec, resource)
            return
        self._start_watcher(record.id, job_dir)

    def _cancel_asked(self, job_id: str) -> bool:
        return self.store.get(job_id).state in CANCEL_ASKED

    def _cancel_created(self, record: JobRecord, spec: JobSpec, resource: str) -> None:
        """Cancel at once a job Vertex AI created after its cancel was asked for, and say so in
        the record (which keeps its resource name, so it can be looked at)."""
        try:
            cancel = self._canceller(spec, resource)
            self._call(spec, "cancelling the job created during its cancel", cancel)
            said = f"cancelled during its launch; Vertex AI job {resource} was cancelled at once"
        except BackendError as exc:
            said = f"cancelled during its launch; cancelling Vertex AI job {resource} failed: {exc}"
        self.store.transition(record.id, JobState.CANCELLED)
        self.store.update(record.id, error=said[:500])

    def _upload(self, plan: Plan) -> bool:
        """Put the job's package in the build bucket, unless it is there (same bytes);
        True when it was uploaded."""
        from . import wheel
        from .cloudbuild import CloudBuildSettings, bucket_name
        from .cloudbuild.storage import Storage

        spec, package = plan.spec, plan.package
        assert package is not None and spec.google.project and spec.image.build_bucket
        settings = (
            CloudBuildSettings.from_settings(plan.settings)
            if plan.settings
            else CloudBuildSettings.load()
        )
        storage = Storage(spec.google.project, bucket_name(spec.image.build_bucket), settings)
        return storage.put(package.object_name(), package.data, wheel.CONTENT_TYPE)

    def refresh(self, record: JobRecord) -> JobRecord:
        """Restart a watcher that died before the job ended (it resumes where it stopped).

        Starts are counted only when quick: after :data:`MAX_WATCHER_STARTS` watchers in a row
        that each stopped before settling, the job is read once from Vertex AI: an end it
        reports is recorded, else the job is recorded "not followed (status unknown)" with its
        state kept, and no watcher is started by itself until the job is followed again
        (:meth:`follow_again`)."""
        if record.state.is_terminal() or not (Path(record.job_dir) / WATCH_FILE).exists():
            return record
        pid = record.handle.get("watcher_pid")
        watched = watch_lock.watched(Path(record.job_dir))  # its lock, though the pid be stale
        if watched or (pid and alive(pid)) or time.time() - record.updated_at < 2:
            return record
        fresh = self.store.get(record.id)
        if fresh.state.is_terminal() or fresh.handle.get("watcher_pid") != pid:
            return fresh
        if fresh.handle.get(NOT_FOLLOWED):  # said already: a follow starts one again
            return fresh
        if quick_starts(fresh.handle) >= MAX_WATCHER_STARTS:
            return self._stop_following(fresh)
        self._start_watcher(record.id, Path(record.job_dir))
        return self.store.get(record.id)

    def follow_again(self, record: JobRecord) -> JobRecord:
        """Follow again a job no watcher follows (recorded "not followed"): its watcher's
        starts counted afresh, one started now. Other records are returned as they are."""
        job_dir = Path(record.job_dir)
        if (
            record.state.is_terminal()
            or not record.handle.get(NOT_FOLLOWED)
            or not (job_dir / WATCH_FILE).exists()
            or watch_lock.watched(job_dir)
        ):
            return record

        def afresh(current: JobRecord) -> dict[str, Any]:
            fields = followed_again(current)
            return {**fields, "handle": {**fields["handle"], QUICK_STARTS: 0}}

        self.store.update(record.id, mutate=afresh)
        self._start_watcher(record.id, job_dir)
        return self.store.get(record.id)

    def _stop_following(self, record: JobRecord) -> JobRecord:
        """The watcher keeps stopping: the job's end as Vertex AI reports it, if it ended;
        else "not followed (status unknown)", its state kept."""
        try:
            seen: dict[str, Any] | None = self.status(record)
        except TfcError:  # the read refused, no client libraries: nothing is known
            seen = None
        if seen is not None and JobState(seen["state"]).is_terminal():
            return self._take_end(record, seen)
        last = last_line(Path(record.job_dir) / "logs" / WATCHER_LOG)
        why = (
            f"its watcher stopped {quick_starts(record.handle)} times in a row soon after "
            "starting" + (f" (last: {last})" if last else "")
        )
        return not_followed(self.store, record.id, why)

    def _take_end(self, record: JobRecord, seen: dict[str, Any]) -> JobRecord:
        """Record the end Vertex AI reported for a job no watcher follows (its logs may lack
        their last lines: the handle's ``log_note`` says so)."""
        state = JobState(seen["state"])
        error = None
        if state is JobState.FAILED:
            error = f"Vertex AI: {seen.get('error') or 'the job failed'}"[:500]
        elif state is JobState.CANCELLED:
            error = "cancelled"
        read = time.strftime("%H:%M", time.localtime(record.updated_at))
        note = f"logs read until {read}: the job ended while no watcher followed it"
        ended = self.store.transition(
            record.id,
            state,
            error=error,
            mutate=lambda r: {
                "handle": {
                    **followed_again(r)["handle"],
                    "vertex_state": seen.get("vertex_state"),
                    LOG_NOTE: r.handle.get(LOG_NOTE) or note,
                }
            },
        )
        notify.send(self.store, record.id)
        return ended

    def cancel(self, record: JobRecord, *, timeout: float = 20.0) -> JobRecord:
        """Ask Vertex AI to cancel the job; wait (bounded) for the watcher to see it end."""
        # Asked first, atomically: a launch that records its job after this sees it and cancels
        # that job itself; one that recorded it before is in the record this returns.
        record = self.store.transition(record.id, JobState.CANCELLING)
        if record.state.is_terminal():
            return record
        resource = record.handle.get("resource_name")
        if not resource:  # still being created: the launch cancels it once created
            return self.store.transition(record.id, JobState.CANCELLED, error="cancelled")
        spec = JobSpec.from_dict(record.spec)
        try:
            self._call(spec, "cancelling the job", self._canceller(spec, resource))
        except BackendError:  # e.g. "cannot cancel": fine if the job has just ended
            if not JobState(self.status(record)["state"]).is_terminal():
                raise
        self.store.transition(record.id, JobState.CANCELLING)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            current = self.refresh(self.store.get(record.id))
            if current.state.is_terminal():
                return current
            time.sleep(0.2)
        return self.store.get(record.id)

    # -- beyond the protocol ----------------------------------------------------------------
    def status(self, record: JobRecord) -> dict[str, Any]:
        """The job as Vertex AI reports it now (one API call): state, times, error."""
        spec = JobSpec.from_dict(record.spec)
        client = vertex_api.job_client(self.settings, spec.google.region)
        resource = record.handle["resource_name"]
        get = (
            client.get_hyperparameter_tuning_job
            if vertex_api.is_tuning(resource)
            else client.get_custom_job
        )
        job = self._call(
            spec, "reading the job", lambda: get(name=resource, timeout=self.settings.timeout_s)
        )
        summary = _summary(job, spec)
        fresh = self.store.get(record.id)
        if fresh.handle.get(NOT_FOLLOWED) and JobState(summary["state"]).is_terminal():
            self._take_end(fresh, summary)  # no watcher follows it: the record takes its end
        return summary

    def list_jobs(
        self, spec: JobSpec, *, filter_: str = "", limit: int = 50, ours: bool = True
    ) -> list[dict[str, Any]]:
        """Custom jobs in ``spec``'s project and region, newest first: those tfc_jupyter
        launched (label ``tfc-jupyter``) unless ``ours`` is False; ``filter_`` is Vertex AI's
        list filter (``display_name="x"``, ``state="JOB_STATE_RUNNING"`` ...)."""
        if not spec.google.project:
            raise BackendError(
                "listing Vertex AI jobs needs a project", "pass --project", field="project"
            )
        client = vertex_api.job_client(self.settings, spec.google.region)
        request = {"parent": vertex_request.parent_path(spec), "filter": filter_, "page_size": 100}
        pager = self._call(
            spec,
            "listing jobs",
            lambda: client.list_custom_jobs(request=request, timeout=self.settings.timeout_s),
        )
        out: list[dict[str, Any]] = []
        for job in pager:  # further pages are fetched as the loop goes
            if ours and not _ours(job):
                continue
            out.append(_summary(job, spec))
            if len(out) >= limit:
                break
        return out

    # -- internals --------------------------------------------------------------------------
    def _canceller(self, spec: JobSpec, resource: str) -> Any:
        """The call that cancels a job (a custom job, or a sweep's tuning job)."""
        client = vertex_api.job_client(self.settings, spec.google.region)
        cancel = (
            client.cancel_hyperparameter_tuning_job
            if vertex_api.is_tuning(resource)
            else client.cancel_custom_job
        )
        return lambda: cancel(name=resource, timeout=self.settings.timeout_s)

    def _call(self, spec: JobSpec, what: str, fn: Any, **kw: Any) -> Any:
        return gcloud.call(
            fn,
            what=what,
            project=spec.google.project or "",
            region=spec.google.region,
            settings=self.settings,
            **kw,
        )

    def _create(
        self, spec: JobSpec, body: dict[str, Any], counter: RetryCount, *, tuning: bool = False
    ) -> dict[str, Any]:
        """Create the CustomJob (``tuning``: the HyperparameterTuningJob) over Vertex AI's REST
        API, as the aiplatform client would send it (the body is already its JSON), without
        importing aiplatform: that import alone takes seconds, and launching is where the user
        waits. Errors are Google API errors,
        explained and retried as the client's are; a timed-out create is looked up before it
        is retried, so a job is never created twice."""
        session = vertex_api.rest_session(self.settings, spec.google.region)
        url = f"{vertex_api.rest_url(self.settings, spec.google.region)}/v1/"
        collection = vertex_api.TUNING if tuning else "customJobs"
        url += f"{vertex_request.parent_path(spec)}/{collection}"
        timeout = self.settings.timeout_s
        since = datetime.now(timezone.utc) - timedelta(minutes=2)  # clock skew
        name = json.dumps(body["displayName"], ensure_ascii=False)  # any UTF-8, '"' escaped
        flt = f'display_name={name} AND create_time>="{since:%Y-%m-%dT%H:%M:%SZ}"'
        known = {r.handle.get("resource_name") for r in self.store.list(backend="vertex")}

        def create() -> dict[str, Any]:
            reply = session.post(url, json=body, timeout=timeout)
            return dict(gcloud.checked(reply).json())

        def adopt() -> dict[str, Any] | None:
            """A job that an earlier, timed-out try created after all (so: no duplicate)."""
            reply = session.get(url, params={"filter": flt}, timeout=timeout)
            for found in gcloud.checked(reply).json().get(collection, []):
                if found.get("name") in known:
                    continue
                if vertex_api.same_job(found, body, tuning=tuning):
                    return dict(found)
            return None

        return self._call(spec, "creating the job", create, counter=counter, before_retry=adopt)

    def _start_watcher(self, job_id: str, job_dir: Path) -> None:
        pid = start_watcher(
            "tfc_jupyter.backends.vertex.watcher",
            job_dir,
            {**os.environ, "PYTHONPATH": package_pythonpath(), "PYTHONUNBUFFERED": "1"},
        )
        self.store.update(
            job_id,
            mutate=lambda r: {
                "handle": {
                    **r.handle,
                    "watcher_pid": pid,
                    "watcher_starts": int(r.handle.get("watcher_starts", 0)) + 1,
                    QUICK_STARTS: quick_starts(r.handle) + 1,
                }
            },
        )


def _summary(job: Any, spec: JobSpec) -> dict[str, Any]:
    vertex_id = str(job.name).rsplit("/", 1)[-1]
    return {
        "name": job.name,
        "display_name": job.display_name,
        "state": JobState.from_vertex(job.state.name).value,
        "vertex_state": job.state.name,
        "create_time": job.create_time.isoformat() if job.create_time else None,
        "end_time": job.end_time.isoformat() if job.end_time else None,
        "error": job.error.message or None,
        "console_url": vertex_request.console_url(
            spec, vertex_id, tuning=vertex_api.is_tuning(str(job.name))
        ),
    }


def stop_watcher(record: JobRecord) -> None:
    """End a job's watcher process (tests and cleanup; the job itself goes on)."""
    pid = record.handle.get("watcher_pid")
    if pid and alive(pid):
        os.kill(int(pid), signal.SIGKILL)


def _ours(job: Any) -> bool:
    """A job tfc_jupyter launched: its ``tfc-jupyter`` label, or, where 64 labels of the user's
    left no room for ours, the job name every replica of ours gets (``TFC_JOB_NAME``)."""
    if "tfc-jupyter" in job.labels:
        return True
    for pool in job.job_spec.worker_pool_specs:
        for kind in (pool.container_spec, pool.python_package_spec):
            if any(variable.name == "TFC_JOB_NAME" for variable in kind.env):
                return True
    return False
