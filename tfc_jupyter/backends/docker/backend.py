"""The docker backend: the job's image, run on this machine, as Vertex AI would run it.

The image is the one Vertex AI would run (:func:`tfc_jupyter.image.ensure_image`: built only
when its content is new). Chief, workers, parameter servers and evaluator run as containers with
host networking and exactly the variables Vertex sets (``CLUSTER_SPEC``, ``TF_CONFIG``,
``AIP_*``, ``CLOUD_ML_JOB_ID``) on free loopback ports, and the container command Vertex runs
(``python -m tfc_runtime ...``), so a job rehearsed here runs unchanged on Vertex.

A detached watcher process (:mod:`.watcher`) starts the containers, copies each one's
output into ``<job_dir>/logs/<replica>.log``, writes the state to the job records, stops the
others when a replica fails, enforces the start-up deadline and the timeout, and removes the
containers at the end: the job outlives a killed kernel, and ``Job.follow()``, ``%tfc_logs`` and
``%tfc_attach`` work as for the local backend. The job folder is mounted at the same path in every
container, for the runtime's ready markers and error records (``TFC_JOB_DIR``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfc_runtime import protocol

from ...errors import BackendError
from ...image import ensure_image
from ...image.docker import docker_client
from ...job import replica
from ...job.replica import container_args, job_env
from ...job.spec import JobSpec, check_runnable
from ...registry import Preview, Traits
from ...store.records import JobRecord
from ...util.ports import free_ports
from ..launch_file import RUNTIME, DockerLaunch, ReplicaLaunch
from ..local.backend import (
    RUNTIME_PARENT,
    cluster_env,
    gpu_split,
    is_daemon,
    local_gpu_count,
)
from ..watched import (
    WatchedBackend,
    mark_pending,
    package_pythonpath,
    start_watcher,
    write_launch,
)

if TYPE_CHECKING:
    from ...planner.plan import Plan

JOB_LABEL = "org.tfc-jupyter.job"
REPLICA_LABEL = "org.tfc-jupyter.replica"


def container_env(spec: JobSpec, job_id: str, job_dir: Path) -> dict[str, str]:
    """The variables every replica gets besides its cluster ones (as on Vertex, plus the job
    folder for the runtime's markers)."""
    env = {**job_env(spec, job_id, str(job_dir)), "TF_CPP_MIN_LOG_LEVEL": "1"}
    if os.getuid() != 0:
        env["HOME"] = "/tmp"  # the container runs as this user, who has no home there
    return env


def remove_containers(job_id: str, client: Any = None) -> int:
    """Force-remove every container of a job (by label); how many there were."""
    try:
        client = client or docker_client()
        found = client.containers.list(all=True, filters={"label": f"{JOB_LABEL}={job_id}"})
    except Exception:
        return 0
    for container in found:
        with contextlib.suppress(Exception):
            container.remove(force=True)
    return len(found)


class DockerBackend(WatchedBackend):
    """Runs jobs as containers of their image on this machine (see the module docstring)."""

    name = "docker"
    watcher = "watcher"
    traits = Traits(
        label="Docker on this machine",
        runs_image=True,
        image_here=True,
        on_this_machine=True,
        sweep_methods=None,  # every method: its sweeps run here, the local driver's sampler
        model_place="inside its container, which is gone",
    )

    @classmethod
    def preview(cls, plan: Plan) -> Preview:
        """The containers a launch starts here, from the plan's image: each replica's command
        and cluster variables, on the host's network (``--backend vertex --dry-run`` shows the
        same job as Vertex AI's request)."""
        request = replica.launch_preview(
            plan.spec,
            RUNTIME,
            script=protocol.SCRIPT,
            source_map=protocol.SOURCE_MAP,
            image=plan.image_uri,
            network="host",
            mounts=[replica.JOB_DIR],
        )
        return Preview("Containers on this machine", request, replica.launch_text(request))

    def check(self, spec: JobSpec) -> None:
        """Refuse TPU jobs, and say what is missing when there is no docker package or engine."""
        check_runnable(spec)  # TPU jobs: this machine has no TPU
        try:
            docker_client("the docker backend")
        except BackendError as exc:
            raise BackendError(exc.message, f"{exc.hint}, or use --backend local") from None

    def submit(self, record: JobRecord, plan: Plan) -> None:
        """Build (or reuse) the image, write the launch file, start the detached watcher; a
        cancel that comes meanwhile wins (nothing more starts, a started watcher is stopped)."""
        spec = plan.spec
        job_dir = Path(record.job_dir)
        if self.cancel_asked(record.id):
            return
        image = ensure_image(plan, push=False)
        if self.cancel_asked(record.id):  # during the build: start no container
            return
        base_env = container_env(spec, record.id, job_dir)
        replicas = cluster_env(spec, record.id, free_ports(spec.replica_count))
        n_gpus = local_gpu_count() if spec.chief.gpu_count else 0
        gpus = gpu_split(n_gpus, len(replicas), spec.chief.gpu_count)
        launch = DockerLaunch(
            job_id=record.id,
            store=str(self.store.path),
            image=image.uri,
            runtime_args=tuple(container_args(spec)),
            env=base_env,
            mounts=(str(job_dir),),
            user=None if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}",
            startup_timeout=self.startup_timeout,
            timeout=spec.timeout_s,
            replicas=tuple(
                ReplicaLaunch(
                    name=name,
                    daemon=is_daemon(spec, name),
                    env=env,
                    gpus=tuple(g for g in gpu.split(",") if g),  # no GPUs here: CPU, as locally
                )
                for (name, env), gpu in zip(replicas, gpus, strict=True)
            ),
        )
        write_launch(job_dir, launch)
        pid = start_watcher(
            "tfc_jupyter.backends.docker.watcher",
            job_dir,
            {**os.environ, "PYTHONPATH": package_pythonpath(str(RUNTIME_PARENT))},
        )
        pending = mark_pending(
            self.store,
            record.id,
            {
                "watcher_pid": pid,
                "image": image.uri,
                "image_built": image.built,
                "containers": {},
            },
        )
        self.stop_if_cancelled(pending)

    def cleanup(self, record: JobRecord) -> None:
        """Remove the job's containers (their watcher is gone)."""
        remove_containers(record.id)
