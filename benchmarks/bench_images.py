"""Job images: what a submission costs when nothing changed, when one line changed, and what
goes into the build context, against tfc.run doing the same.

A notebook folder holds the notebook, a 1 GB data file (sparse: 1 GB on paper, nothing on disk)
and a virtualenv, as a data scientist's folder often does. Then, for each tool:

* **first submission**: build the image and push it to a registry;
* **second submission, unchanged notebook**: ours builds and pushes nothing (the tag is the
  content's hash, found in the registry); tfc.run packs the folder, builds under a fresh uuid tag
  and pushes again;
* **one-line change** in the notebook's code: ours rebuilds one layer and pushes it;
* **context**: the bytes the Docker engine receives (and that end up in the image).

tfc.run's side is its own code (``tensorflow_cloud.core.containerize.LocalContainerBuilder``, run
in ``benchmarks/.venv-tfc``, which ``bench_load.py`` creates) pointed at the same engine and
registry: ``gcp.get_project_name`` and the registry part of ``generate_image_uri`` are replaced
(no Google Cloud here), and its notebook preprocessing is replaced by our converted script. Its
entry point is the notebook file (``called_from_notebook=False``: the folder is packed, as in
``tfc.run(entry_point="train.ipynb")``). Both build on the same offline TensorFlow parent image.

Needs the test engine and registry (``eval "$(bash scripts/docker_services.sh start)"``); without
them only the context figures are measured. Every build, push and child has a deadline.

    .venv/bin/python benchmarks/bench_images.py [--runs 3] [--no-tfc]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from jobutil import plan_for  # noqa: E402

from tfc_jupyter.image import Progress, ensure_image, reporting  # noqa: E402
from tfc_jupyter.image import context as package  # noqa: E402
from tfc_jupyter.image import docker as build  # noqa: E402
from tfc_jupyter.util.files import human_size  # noqa: E402

TFC_PYTHON = ROOT / "benchmarks" / ".venv-tfc" / "bin" / "python"
CHILD_TIMEOUT_S = 900
DATA_BYTES = 1_000_000_000
TOKEN = f"{time.time():.0f}"

CELLS = [
    "import numpy as np\nimport tensorflow as tf\n",
    "# run {token}\nx = np.random.rand(256, 3).astype('float32')\ny = x.sum(axis=1)\n",
    "%%tfc_run --backend docker --parent-image {parent}\n"
    "model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])\n"
    "model.compile(optimizer='sgd', loss='mse')\n"
    "model.fit(x, y, epochs={epochs}, verbose=2)\n",
]

# Runs tfc.run's own container builder (in its environment) against our engine and registry.
TFC_CHILD = textwrap.dedent("""
    import json, os, sys, tarfile, time, uuid
    import docker
    from tensorflow_cloud.core import containerize, docker_config, gcp, machine_config
    notebook, script, parent, registry = sys.argv[1:5]
    gcp.get_project_name = lambda: "bench-project"
    containerize.generate_image_uri = lambda: f"{registry}/tf_cloud_train:{uuid.uuid4().hex}"
    client = docker.from_env(timeout=600)
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    docker.APIClient = lambda version="auto": client.api  # tfc ignores DOCKER_HOST otherwise
    out = []
    for run in sys.argv[5:]:
        if run == "change":
            with open(script, "a") as fh:
                fh.write("print('one more line')\\n")
        builder = containerize.LocalContainerBuilder(
            entry_point=notebook,
            preprocessed_entry_point=script,
            chief_config=machine_config.COMMON_MACHINE_CONFIGS["CPU"],
            worker_config=None,
            docker_config=docker_config.DockerConfig(parent_image=parent),
            called_from_notebook=False,
        )
        started = time.monotonic()
        builder._get_tar_file_path()
        packed = time.monotonic() - started
        uri = builder.get_docker_image()  # packs again, builds, pushes: what tfc.run does
        total = time.monotonic() - started - packed
        out.append({"run": run, "seconds": total, "pack_seconds": packed, "uri": uri,
                    "tar_gz_bytes": os.path.getsize(builder.tar_file_path)})
    for entry in out:
        client.images.remove(entry["uri"], force=True)
    for container in client.containers.list(all=True, filters={"status": "created"}):
        command = " ".join(container.attrs["Config"].get("Cmd") or [])
        leftover = "#(nop)" in command or "tfc_script.py" in command
        if container.attrs["Created"] >= started_at and leftover:  # tfc builds without rm=True
            container.remove(force=True)
    print(json.dumps(out))
""")


def make_folder(base: Path, parent: str) -> Path:
    """The notebook folder: notebook, sparse 1 GB data file, a virtualenv."""
    folder = base / "project"
    (folder / "data").mkdir(parents=True)
    with open(folder / "data" / "train.bin", "wb") as fh:
        fh.truncate(DATA_BYTES)
    subprocess.run(  # with pip: a small virtualenv (real ones hold hundreds of MB)
        [sys.executable, "-m", "venv", str(folder / ".venv")], check=True, timeout=300
    )
    write_notebook(folder / "train.ipynb", parent, epochs=2)
    return folder


def write_notebook(path: Path, parent: str, *, epochs: int) -> None:
    """The benchmark notebook (``epochs`` is the line a one-line change edits)."""
    nb = nbformat.v4.new_notebook()
    spec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["kernelspec"] = spec
    for source in CELLS:  # the token makes each benchmark run's content new to the registry
        text = source.format(parent=parent, epochs=epochs, token=TOKEN)
        nb.cells.append(nbformat.v4.new_code_cell(text))
    nbformat.write(nb, path)


def folder_bytes(folder: Path) -> tuple[int, int]:
    """(apparent bytes, files) of a folder, links followed as tfc.run's tar does."""
    total = files = 0
    for dirpath, _dirs, names in os.walk(folder, followlinks=True):
        for name in names:
            path = Path(dirpath) / name
            if path.is_file():
                total += path.stat().st_size
                files += 1
    return total, files


def our_submission(notebook: Path, client: Any) -> dict[str, Any]:
    """Plan + ensure_image(push=True), as the Vertex backend does; seconds and what happened."""
    pushed_bytes: list[int] = [0]

    def progress(event: Progress) -> None:
        if event.phase == "push" and event.total:
            pushed_bytes[0] = event.step

    started = time.monotonic()
    with reporting(progress):
        plan = plan_for(notebook, "--backend vertex")
        result = ensure_image(plan, push=True, client=client)
    return {
        "seconds": time.monotonic() - started,
        "built": result.built,
        "pushed": result.pushed,
        "rebuilt": result.rebuilt,
        "uri": result.uri,
        "pushed_bytes": pushed_bytes[0],
    }


def run_tfc(folder: Path, parent: str, registry: str, runs: list[str]) -> list[dict[str, Any]]:
    """tfc.run's builder in its own environment; one entry per run."""
    plan = plan_for(folder / "train.ipynb")
    script = folder.parent / "tfc_script.py"  # tfc writes its preprocessed script outside too
    script.write_text(plan.script.text)
    proc = subprocess.run(
        [
            str(TFC_PYTHON),
            "-c",
            TFC_CHILD,
            str(folder / "train.ipynb"),
            str(script),
            parent,
            registry,
            *runs,
        ],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        cwd=folder,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed")
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="repeats of the unchanged submission")
    parser.add_argument("--no-tfc", action="store_true", help="skip tfc.run's side")
    args = parser.parse_args(argv)
    parent = os.environ.get("TFC_TEST_PARENT_IMAGE", "tfc-test/tensorflow-cpu:2.21.0")
    registry = os.environ.get("TFC_TEST_REGISTRY", "")
    print(f"load average {os.getloadavg()[0]:.1f}; parent image {parent}")
    with tempfile.TemporaryDirectory(prefix="tfc-bench-images-") as tmp:
        os.environ["TFC_JUPYTER_HOME"] = str(Path(tmp) / "home")
        folder = make_folder(Path(tmp), parent)
        apparent, files = folder_bytes(folder)
        context = plan_for(folder / "train.ipynb").context
        venv_bytes, venv_files = folder_bytes(folder / ".venv")
        print(
            f"\nfolder: {human_size(apparent)} in {files} files (data/train.bin 1 GB "
            f"sparse, .venv {human_size(venv_bytes)} in {venv_files} files)"
        )
        print(
            f"our context: {human_size(context.size)} in {len(context.entries) + 1} "
            f"files (nothing declared)"
        )
        try:
            plan_for(folder / "train.ipynb", "--include .")
        except package.ContextTooLarge as exc:
            print(f"ours with --include . (the whole folder, declared): {exc}")
        if not registry:
            print("\nno TFC_TEST_REGISTRY: start the engine and registry to measure builds")
            return 0
        os.environ["TFC_REGISTRY"] = f"{registry}/bench"
        client = build.docker_client()
        first = our_submission(folder / "train.ipynb", client)
        assert first["built"] and first["pushed"], first
        print(f"\nours, first submission: {first['seconds']:.2f} s (built, pushed)")
        again = [our_submission(folder / "train.ipynb", client) for _ in range(args.runs)]
        assert not any(r["built"] or r["pushed"] for r in again), again
        median = statistics.median(r["seconds"] for r in again)
        print(
            f"ours, unchanged resubmission: median {median:.2f} s over {args.runs} "
            "(built: no, pushed: no)"
        )
        write_notebook(folder / "train.ipynb", parent, epochs=3)
        changed = our_submission(folder / "train.ipynb", client)
        print(
            f"ours, one-line change: {changed['seconds']:.2f} s, rebuilt {changed['rebuilt']}, "
            f"pushed {human_size(changed['pushed_bytes'])}"
        )
        for result in (first, changed):
            client.images.remove(result["uri"], force=True)
        if args.no_tfc or not TFC_PYTHON.exists():
            print("\ntfc.run side skipped" + ("" if args.no_tfc else f": no {TFC_PYTHON}"))
            return 0
        write_notebook(folder / "train.ipynb", parent, epochs=2)
        tfc = run_tfc(folder, parent, registry, ["first", "again", "change"])
        for entry in tfc:
            print(
                f"tfc.run, {entry['run']}: {entry['seconds']:.2f} s (packing alone "
                f"{entry['pack_seconds']:.2f} s, tar.gz {human_size(entry['tar_gz_bytes'])}"
                f", {human_size(apparent)} uncompressed), new tag {entry['uri'][-8:]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
