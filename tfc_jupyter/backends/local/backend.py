"""The local backend (the default): the job's replicas as processes on this machine.

Each replica gets exactly the environment Vertex AI would give it (``CLUSTER_SPEC``,
``TF_CONFIG``, ``AIP_*``, ``CLOUD_ML_JOB_ID``) on free loopback ports, so a job rehearsed here runs
unchanged on Vertex. A detached supervisor process (:mod:`.supervisor`) runs and watches
them, so the job outlives a killed kernel and can be re-attached.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import BackendError, Fix
from ...image.names import local_tensorflow_version
from ...job import replica
from ...job.replica import job_env, replica_env, runtime_args
from ...job.spec import JobSpec, check_runnable
from ...notebook.requirements import (
    TENSORFLOW_DISTRIBUTIONS,
    canonical_name,
    installed,
    unsatisfied,
)
from ...registry import Preview, Traits
from ...store.records import JobRecord
from ...util.files import open_private
from ...util.ports import free_ports
from .. import spare
from ..launch_file import LocalLaunch, ReplicaLaunch
from ..watch_loop import VERTEX_RESTARTS
from ..watched import (
    WATCHER_LOG,
    WatchedBackend,
    mark_pending,
    package_pythonpath,
    same_process,
    start_watcher,
    started_at,
    write_launch,
)
from . import warm

if TYPE_CHECKING:
    from ...planner.plan import Plan

RUNTIME_PARENT = Path(__file__).resolve().parents[2] / "runtime"
_DROP_ENV = ("JPY_", "PYDEVD_", "VSCODE_", "KERNEL_")


def local_gpu_count() -> int:
    """GPUs on this machine, from ``nvidia-smi -L`` (never imports TensorFlow)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        visible = [d for d in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]
        return len(visible)
    exe = shutil.which("nvidia-smi")
    if not exe:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def gpu_split(total: int, replicas: int, per_replica: int) -> list[str]:
    """``CUDA_VISIBLE_DEVICES`` for each replica: ``per_replica`` GPUs each while they last."""
    if total == 0:
        return ["" for _ in range(replicas)]
    each = per_replica or max(1, total // replicas)
    out = []
    for i in range(replicas):
        ids = [str((i * each + k) % total) for k in range(each)]
        out.append(",".join(ids))
    return out


def cluster_env(spec: JobSpec, job_id: str, ports: list[int]) -> list[tuple[str, dict[str, str]]]:
    """``(replica name, env)`` for every replica, as Vertex AI sets them, each on its own
    loopback port (:func:`tfc_jupyter.job.replica.replica_env`)."""
    return replica_env(spec, job_id, (f"127.0.0.1:{p}" for p in ports))


def is_daemon(spec: JobSpec, name: str) -> bool:
    """Replicas that never end by themselves and are stopped when the others are done:
    parameter servers, and workers serving the code's own ParameterServerStrategy."""
    return name.startswith("ps-") or (spec.decided.serve and name.startswith("worker-"))


REPLICA_MEMORY_GB = 0.6  # a TensorFlow process at rest: what each replica needs at least
REPLICAS_PER_CORE = 4


def available_memory() -> int:
    """Bytes of memory available now: ``MemAvailable`` of ``/proc/meminfo`` on Linux (what
    psutil reports, without importing it on every launch), else psutil's answer."""
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    import psutil

    return int(psutil.virtual_memory().available)


def check_capacity(spec: JobSpec, cores: int | None = None, free_gb: float | None = None) -> None:
    """Refuse a local job this machine cannot hold: its processes against the cores and the
    memory available now, naming both and the fix."""
    cores = cores or os.cpu_count() or 1
    if free_gb is None:
        free_gb = available_memory() / 1e9
    n = spec.replica_count
    most = max(1, min(int(free_gb * 0.8 / REPLICA_MEMORY_GB), REPLICAS_PER_CORE * cores))
    if n > most:
        raise BackendError(
            f"a local job of {n} TensorFlow processes needs about {n * REPLICA_MEMORY_GB:.0f} GB "
            f"of memory and {n / REPLICAS_PER_CORE:.0f}+ cores; this machine has {cores} cores "
            f"and {free_gb:.1f} GB available",
            f"use at most {most} processes here (--workers {max(0, most - 1)} or fewer), or "
            "--backend vertex",
            field="workers",
        )


def check_gpus(spec: JobSpec, available: int | None = None) -> None:
    """Refuse GPUs asked for on a machine that has none (the job would train on the CPU, slowly
    and without a word)."""
    asked = max(m.gpu_count for m in (spec.chief, spec.worker or spec.chief))
    if not asked:
        return
    found = local_gpu_count() if available is None else available
    if found == 0:
        raise BackendError(
            f"{asked} GPU(s) per machine asked for, and this machine has none (nvidia-smi "
            "lists no GPU, or CUDA_VISIBLE_DEVICES hides them)",
            (
                Fix.drop("gpus", after=" (and --gpu-type) to train on this machine's CPU"),
                Fix.set("backend", "vertex", verb="use", after=" for GPUs"),
            ),
            field="gpus",
        )


def check_estimator_tensorflow(spec: JobSpec, tf_version: str | None = None) -> None:
    """Refuse an Estimator job when this environment's TensorFlow (>= 2.16) has no tf.estimator."""
    if not spec.decided.estimator:
        return
    version = tf_version or local_tensorflow_version()
    if version is None or tuple(int(x) for x in version.split(".")[:2] if x.isdigit()) <= (2, 15):
        return
    raise BackendError(
        f"this job uses tf.estimator, which TensorFlow {version} (this kernel's) no longer has: "
        "Estimator was removed in TensorFlow 2.16",
        "run the notebook in a TensorFlow 2.15 environment (pip install tensorflow-cpu==2.15.1 "
        "tensorflow-estimator~=2.15.0; scripts/bootstrap_tf215.sh makes one), or use "
        "--backend docker or vertex, whose image has TensorFlow 2.15",
        field="backend",
    )


def check_requirements(lines: list[str]) -> list[str]:
    """Requirements that this environment (the local backend's) does not satisfy."""
    return unsatisfied(lines)[0]


def inherited_env() -> dict[str, str]:
    """This process's environment as the replicas inherit it (the kernel's own variables out)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(_DROP_ENV)}


def common_env(
    inherited: dict[str, str], spec: JobSpec, job_id: str, job_dir: Path
) -> dict[str, str]:
    """The variables every replica of the job gets on top of ``inherited``."""
    common: dict[str, str] = {
        "TF_CPP_MIN_LOG_LEVEL": inherited.get("TF_CPP_MIN_LOG_LEVEL", "1"),
        **job_env(spec, job_id, str(job_dir)),
    }
    if inherited.get("MPLBACKEND", "").startswith("module://"):
        common["MPLBACKEND"] = "Agg"
    common.update(
        {
            "PYTHONPATH": inherited.get("PYTHONPATH", ""),  # the kernel's, for the replicas
            "TFC_REMOTE": "1",
            "TMPDIR": str(job_dir / "tmp"),  # task_save_path folders private to this job
        }
    )
    return common


def keep_warm(home: Path) -> None:
    """Start the warm runtime of this process's local jobs that import TensorFlow ahead of the
    first (:mod:`.warm`): the kernel calls it once its notebook has imported TensorFlow."""
    warm.keep()
    inherited = inherited_env()
    common = common_env(inherited, JobSpec(), "job", home)
    args = runtime_args(JobSpec(), "script.py", "script.map.json")
    warm.prepare(warm.wanted_env(inherited, common, {}, args), home)


class LocalBackend(WatchedBackend):
    """Runs jobs as processes of this machine's Python (see the module docstring)."""

    name = "local"
    watcher = "supervisor"
    traits = Traits(
        label="this machine",
        on_this_machine=True,
        sweep_methods=None,  # every method: its sweeps run here, the local driver's sampler
        restarts=(
            "a replica killed here (out of memory, by hand) is restarted, up to "
            f"{VERTEX_RESTARTS} times, as on Vertex AI"
        ),
        keeps_backups=True,
    )

    @classmethod
    def preview(cls, plan: Plan) -> Preview:
        """The processes a launch starts here: each replica's command and cluster variables
        (``--backend vertex --dry-run`` shows the same job as Vertex AI's request)."""
        job_dir = replica.JOB_DIR
        request = replica.launch_preview(
            plan.spec,
            (sys.executable, "-m", "tfc_runtime"),
            script=f"{job_dir}/script.py",
            source_map=f"{job_dir}/script.map.json",
            folder=str(plan.selection.base_dir),
            restarts=VERTEX_RESTARTS,
        )
        return Preview("Processes on this machine", request, replica.launch_text(request))

    def check(self, spec: JobSpec) -> None:
        """Refuse before launch what this machine cannot run, naming the fix."""
        check_runnable(spec)
        check_capacity(spec)
        check_gpus(spec)
        check_estimator_tensorflow(spec)
        missing = check_requirements(list(spec.requirements))
        tensorflow = [m for m in missing if canonical_name(m) in TENSORFLOW_DISTRIBUTIONS]
        if tensorflow:
            have = installed("tensorflow")
            raise BackendError(
                "the local backend runs in this kernel's environment, whose TensorFlow "
                f"({' '.join(have) if have else 'none'}) does not match {', '.join(tensorflow)}",
                "run the notebook in an environment with that TensorFlow, or use --backend "
                "docker (its image installs it); installing another TensorFlow distribution "
                "here would put two in one environment",
                field="requirements",
            )
        if missing:
            quoted = " ".join(f"'{m.split(' (have')[0]}'" for m in missing)
            raise BackendError(
                "the local backend runs in this kernel's environment, which lacks: "
                + ", ".join(missing),
                f"%pip install {quoted} and run again, or use --backend docker",
                field="requirements",
            )

    def submit(self, record: JobRecord, plan: Plan) -> None:
        """Write the launch file and start the detached supervisor (unless a cancel came
        first; one that comes while it starts is carried out once it has)."""
        if self.cancel_asked(record.id):
            return
        spec, cwd = plan.spec, plan.selection.base_dir
        job_dir = Path(record.job_dir)
        replicas = cluster_env(spec, record.id, free_ports(spec.replica_count))
        n_gpus = local_gpu_count()
        gpus = gpu_split(n_gpus, len(replicas), spec.chief.gpu_count)
        # launch.json holds only the job's own variables: the kernel's environment (tokens,
        # cloud keys) reaches the replicas through the supervisor's process, never the disk.
        inherited = inherited_env()
        common = common_env(inherited, spec, record.id, job_dir)
        (job_dir / "tmp").mkdir(mode=0o700, exist_ok=True)
        args = runtime_args(spec, str(job_dir / "script.py"), str(job_dir / "script.map.json"))
        launch = LocalLaunch(
            job_id=record.id,
            store=str(self.store.path),
            cwd=str(cwd),
            python=sys.executable,
            env=common,
            runtime_args=tuple(args),
            startup_timeout=self.startup_timeout,
            timeout=spec.timeout_s,
            restarts=VERTEX_RESTARTS,  # a replica killed here is restarted, as on Vertex AI
            replicas=tuple(
                ReplicaLaunch(
                    name=name,
                    daemon=is_daemon(spec, name),
                    env={**env, "CUDA_VISIBLE_DEVICES": gpu} if n_gpus else env,
                )
                for (name, env), gpu in zip(replicas, gpus, strict=True)
            ),
        )
        write_launch(job_dir, launch)
        open_private(job_dir / "logs" / WATCHER_LOG).close()  # a full disk says so here
        supervisor_env = {
            **inherited,
            **common,
            "PYTHONPATH": package_pythonpath(str(RUNTIME_PARENT)),
        }
        pid = spare.claim(job_dir)  # a supervisor started ahead (tfc-jupyter run), else now
        wanted = None
        if pid is None and warm.uses_tensorflow(plan.script.imports):
            # forked from the warm runtime when one is ready; else started cold, as before,
            # and a process that launches jobs for a while starts one for the next job
            wanted = warm.wanted_env(inherited, common, launch.replicas[0].env, args)
            if warm.kept():
                warm.prepare(wanted, Path(self.store.path).parent)
            pid = warm.claim(job_dir, supervisor_env, wanted)
        if pid is None:
            pid = start_watcher(
                "tfc_jupyter.backends.local.supervisor", job_dir, supervisor_env, what="supervisor"
            )
        handle: dict[str, Any] = {
            "watcher_pid": pid,
            "supervisor_started": started_at(pid),
            "replicas": {},
        }
        self.stop_if_cancelled(mark_pending(self.store, record.id, handle))

    def cleanup(self, record: JobRecord) -> None:
        """Kill every replica's process group, and every process the job's code left (their
        supervisor, the subreaper that would have collected them, is gone)."""
        _kill_replicas(record.handle)
        kill_left_behind(record.id)


def _kill_replicas(handle: dict[str, Any]) -> None:
    """SIGKILL each replica's process group, if it is still the process the job started."""
    started = handle.get("replicas_started") or {}
    for name, pid in (handle.get("replicas") or {}).items():
        if not same_process(int(pid), started.get(name)):
            continue  # gone, or the pid now belongs to another process: never signal it
        with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
            os.killpg(int(pid), signal.SIGKILL)


def kill_left_behind(job_id: str) -> list[int]:
    """SIGKILL this user's processes that carry the job's id in the environment they started
    with (``TFC_JOB_ID``, which every replica gets and its children inherit): what the job's
    code started in a session of its own, or as a daemon, outlives a supervisor killed with
    SIGKILL (orphans then go to init, not to it). Never this process or its parents. The pids
    killed."""
    import psutil

    mine = os.getuid()
    spared = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    wanted = f"{job_id}"
    killed = []
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.pid in spared or proc.info["uids"] is None or proc.info["uids"].real != mine:
                continue
            if proc.environ().get("TFC_JOB_ID") != wanted:
                continue
            proc.kill()
            killed.append(proc.pid)
        except (psutil.Error, OSError):
            continue  # gone meanwhile, or not ours to read
    return killed
