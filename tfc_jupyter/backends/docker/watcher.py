"""The watcher of one docker job: ``python -m tfc_jupyter.backends.docker.watcher JOB_DIR``.

Started detached (its own session) by the docker backend, so the job survives a killed kernel.
It creates one container per replica from ``launch.json`` (host networking, the Vertex
variables, the job folder mounted at its own path), starts them, and then:

* copies each container's output into ``logs/<replica>.log`` as it is printed;
* marks the job RUNNING, SUCCEEDED, FAILED or CANCELLED in the job records;
* fails the job when a replica exits non-zero (stopping the others) or does not join the cluster
  by the start-up deadline, naming the replica and the notebook cell of the error;
* on SIGTERM (cancel) stops every container: SIGTERM, then SIGKILL after a grace period;
* ends parameter servers when the others are done, and enforces the job's timeout;
* removes every container of the job at the end, whatever happened.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfc_runtime.protocol import ONE_STREAM_ENV

from ...store.records import JobState
from ...util.files import open_private
from ..launch_file import RUNTIME, DockerLaunch
from ..watch_loop import JobWatcher, ReplicaState, describe_failure
from .backend import JOB_LABEL, REPLICA_LABEL

GRACE_S = 3
POLL_S = 0.25
LOG_DRAIN_S = 10.0


@dataclass
class Replica(ReplicaState):
    """One container of the job."""

    gpus: list[str] = field(default_factory=list)
    container: Any = None
    pump: threading.Thread | None = None


def _pump_logs(container: Any, path: Path) -> None:
    """Append the container's output to ``path`` until the container ends."""
    with open_private(path, buffering=0) as fh, contextlib.suppress(Exception):
        for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
            fh.write(chunk)


class Watcher(JobWatcher[Replica]):
    """Runs and watches the containers of one job folder (see the module docstring)."""

    poll_s = POLL_S
    quick_poll_s = POLL_S  # each poll asks the engine: no quicker start
    launch_type = DockerLaunch
    launch: DockerLaunch

    def __init__(self, job_dir: Path) -> None:
        import docker

        super().__init__(job_dir)
        self.replicas = [
            Replica(r.name, r.env, r.daemon, gpus=list(r.gpus)) for r in self.launch.replicas
        ]
        self.client = docker.from_env(timeout=60)

    def _create(self, replica: Replica) -> Any:
        from docker.types import DeviceRequest

        mounts = {p: {"bind": p, "mode": "rw"} for p in self.launch.mounts}
        devices = (
            [DeviceRequest(device_ids=replica.gpus, capabilities=[["gpu"]])]
            if replica.gpus
            else None
        )
        return self.client.containers.create(
            self.launch.image,
            command=list(self.launch.runtime_args),
            entrypoint=list(RUNTIME),
            name=f"tfc-{self.job_id}-{replica.name}",
            environment={**self.launch.env, **replica.env, ONE_STREAM_ENV: "1"},
            labels={JOB_LABEL: self.job_id, REPLICA_LABEL: replica.name},
            network_mode="host",
            volumes=mounts,
            user=self.launch.user,
            device_requests=devices,
        )

    def _start(self) -> None:
        for replica in self.replicas:
            replica.container = self._create(replica)
        for replica in self.replicas:
            replica.container.start()
            replica.pump = threading.Thread(
                target=_pump_logs,
                args=(replica.container, self.job_dir / "logs" / f"{replica.name}.log"),
                daemon=True,
            )
            replica.pump.start()
        handle = {
            "watcher_pid": os.getpid(),
            "image": self.launch.image,
            "containers": {r.name: r.container.id[:12] for r in self.replicas},
        }
        self.store.transition(
            self.job_id, JobState.RUNNING, mutate=lambda rec: {"handle": {**rec.handle, **handle}}
        )

    def _poll(self) -> None:
        """Update exit codes and ready flags."""
        for replica in self.replicas:
            if replica.exit_code is None and replica.container is not None:
                state = self.client.api.inspect_container(replica.container.id)["State"]
                if state.get("Status") in ("exited", "dead"):
                    replica.exit_code = int(state.get("ExitCode", -1))

    def _stop_all(self) -> None:
        """SIGTERM, then SIGKILL after the grace period (TensorFlow ignores SIGTERM)."""
        live = [r for r in self.replicas if r.container is not None and r.exit_code is None]
        threads = [
            threading.Thread(target=_quiet, args=(r.container.stop,), kwargs={"timeout": GRACE_S})
            for r in live
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(GRACE_S + 30)
        self._poll()

    def _remove_all(self) -> None:
        for replica in self.replicas:
            if replica.pump is not None:
                replica.pump.join(LOG_DRAIN_S)
        found = self.client.containers.list(
            all=True, filters={"label": f"{JOB_LABEL}={self.job_id}"}
        )
        for container in found:
            _quiet(container.remove, force=True)

    def _failure(self, replica: Replica) -> tuple[str, str | None]:
        """Exit codes 137/143 with no error file: the container was killed by that signal."""
        code = replica.exit_code or 0
        if code in (137, 143) and not (self.job_dir / "errors" / f"{replica.task}.json").exists():
            code = -(code - 128)  # killed by a signal (OOM killer, docker kill)
        return describe_failure(self.job_dir, replica.name, replica.task, code)

    def run(self) -> int:
        """Start the containers and watch them to the end; returns the watcher's exit code."""
        self.handle_signals()
        try:
            self._start()
            outcome = self.watch()
        except Exception as exc:  # an image that will not run, an engine that went away ...
            outcome = JobState.FAILED, f"could not run the containers: {exc}", None
        self.cancelling(outcome[0])
        try:
            self._stop_all()
        finally:
            with contextlib.suppress(Exception):
                self._remove_all()
        self.finish(outcome)
        return 0


def _quiet(fn: Any, *args: Any, **kwargs: Any) -> None:
    with contextlib.suppress(Exception):
        fn(*args, **kwargs)


def main(argv: list[str] | None = None) -> int:
    """Entry point (the docker backend starts it; users never need to)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tfc_jupyter.backends.docker.watcher JOB_DIR", file=sys.stderr)
        return 2
    return Watcher(Path(args[0])).run()


if __name__ == "__main__":
    sys.exit(main())
