"""Vertex AI without Docker: plan + submit to "submitted" by the package route, first time and
unchanged, against the image route on the same notebook and the same servers.

The servers are the test suite's, on loopback: ``tests/vertex_server.py`` (Vertex AI's REST API,
which validates the request) and ``tests/gcp_server.py`` (Cloud Storage, the build bucket). A
notebook with no extra requirements is planned and launched with ``tfc_jupyter.jobs.launch``, as
``%%tfc_run --backend vertex`` does; the clock stops when the job record holds the Vertex AI
resource name (the create call returned), which is what the user waits for before the cell
follows the job. Each route is measured in a fresh process (cold: imports, credentials, first
upload) and then once more in the same process with the notebook unchanged.

* **package route**: this kernel's TensorFlow is mapped to a prebuilt image name
  (``TFC_PREBUILT_IMAGES``); the wheel is uploaded the first time and found (same bytes) after.
* **image route**: ``--route image``: the image is built with the test Docker engine on its
  TensorFlow image (``TFC_TEST_PARENT_IMAGE``) and pushed to the test registry
  (``TFC_TEST_REGISTRY``; ``eval "$(bash scripts/docker_services.sh start)"``), as a Vertex job
  without the package route does. Skipped, saying so, without them.

Goal (issue 16): under 3 s cold, under 1 s unchanged, for the package route.

    .venv/bin/python benchmarks/bench_package.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT), str(ROOT / "runtime")]
BUCKET = "tfc-bench-builds"

CHILD = r"""
import json, os, sys, time
started = time.monotonic()
from pathlib import Path
from jobutil import plan_for
from tfc_jupyter.backends.vertex.backend import stop_watcher
from tfc_jupyter.image import reporting
from tfc_jupyter.jobs import launch, store_for

nb, flags = Path(sys.argv[1]), sys.argv[2]
store = store_for(Path(os.environ["TFC_JUPYTER_HOME"]))
times = []
for _ in range(2):  # cold, then unchanged
    t0 = time.monotonic() if times else started
    with reporting(lambda event: None):
        job = launch(plan_for(nb, flags), store=store)
    record = job.record()
    assert record.handle.get("resource_name"), record
    times.append(time.monotonic() - t0)
    build = record.handle.get("image_build") or {}
    job.cancel()
    stop_watcher(job.record())
print(json.dumps({"cold": times[0], "unchanged": times[1], "last": build}))
"""


def _measure(nb: Path, flags: str, env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(nb), flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    if done.returncode:
        raise SystemExit(f"run failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    from gcp_server import GcpServer
    from jobutil import write_notebook
    from vertex_server import VertexServer

    from tfc_jupyter.image.names import local_tensorflow_version

    tf = ".".join((local_tensorflow_version() or "0.0").split(".")[:2])
    executor = f"us-docker.pkg.dev/vertex-ai/training/tf-cpu.{tf.replace('.', '-')}.py311:latest"
    print(f"load average {os.getloadavg()[0]:.2f}, TensorFlow {tf}, {args.runs} runs per route")
    with (
        tempfile.TemporaryDirectory() as tmp,
        GcpServer(buckets=(BUCKET,)) as gcs,
        VertexServer(executor="process") as vertex,
    ):
        base = {
            **os.environ,
            "TFC_VERTEX_ENDPOINT": vertex.url,
            "TFC_STORAGE_ENDPOINT": gcs.url,
            "TFC_CLOUDBUILD_ENDPOINT": gcs.url,
            "TFC_PREBUILT_IMAGES": f"{tf}={executor}",
            "TFC_VERTEX_POLL": "0.5",
            "TFC_VERTEX_LOG_READS": "600",
            "PYTHONPATH": os.pathsep.join(sys.path[:3]),
        }
        routes = {"package": f"--backend vertex --project bench-proj --build-bucket {BUCKET}"}
        registry = os.environ.get("TFC_TEST_REGISTRY", "")
        parent = os.environ.get("TFC_TEST_PARENT_IMAGE", "")  # the test engine's TF image
        if registry and parent:
            base["TFC_REGISTRY"] = f"{registry}/bench"
            routes["image"] = routes["package"] + f" --route image --parent-image {parent}"
        results: dict[str, list[dict[str, float]]] = {r: [] for r in routes}
        for i in range(args.runs):
            for route, flags in routes.items():
                folder = Path(tmp) / f"{route}-{i}"
                folder.mkdir()
                nb = write_notebook(
                    folder / "train.ipynb",
                    f"%%tfc_run\nprint('run {i} {time.time_ns()}')",  # new content each run
                )
                env = {**base, "TFC_JUPYTER_HOME": str(folder / "home")}
                results[route].append(_measure(nb, flags, env))
    for route, runs in results.items():
        cold = statistics.median(r["cold"] for r in runs)
        again = statistics.median(r["unchanged"] for r in runs)
        print(
            f"{route:8s} route: plan + submit cold {cold:.2f} s, unchanged {again:.2f} s "
            f"(median of {len(runs)}; min cold {min(r['cold'] for r in runs):.2f} s)"
        )
    if "image" not in results:
        print(
            "image route: skipped (no TFC_TEST_REGISTRY: "
            'eval "$(bash scripts/docker_services.sh start)")'
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
