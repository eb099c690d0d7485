"""Planning Estimator and TPU jobs: tf.estimator detection, TensorFlow 2.15 and TPU-VM images,
what the plan says, and the TPU Keras example notebook (dry run, and its code on this CPU)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jobutil import plan_for

from tfc_jupyter.config import Settings
from tfc_jupyter.image import names as images
from tfc_jupyter.job import options
from tfc_jupyter.job.spec import Decisions, JobSpec, Strategy
from tfc_jupyter.notebook.capture import Selection
from tfc_jupyter.notebook.convert import Cell, convert
from tfc_jupyter.planner.plan import Plan, make_plan, uses_estimator

ROOT = Path(__file__).resolve().parents[1]
TPU_NOTEBOOK = ROOT / "notebooks" / "tpu_keras.ipynb"


def _plan(settings: Settings, source: str, line: str = "") -> Plan:
    sel = Selection(cells=[Cell(1, source)], notebook=None, how="test")
    return make_plan(sel, options.parse_line(line), settings)


@pytest.mark.parametrize(
    "source",
    [
        "import tensorflow as tf\nest = tf.estimator.Estimator(model_fn)",
        "import tensorflow as tfx\nconfig = tfx.estimator.RunConfig()",
        "import tensorflow as tf\nc = tf.compat.v1.estimator.tpu.TPUConfig()",
        "from tensorflow import estimator\nestimator.RunConfig()",
        "from tensorflow.estimator import RunConfig\nRunConfig()",
        "from tensorflow.compat.v1 import estimator as est\n",
        "import tensorflow.estimator\n",
        "import tensorflow_estimator as te\n",
        "from tensorflow_estimator.python.estimator import run_config\n",
    ],
)
def test_estimator_use_is_detected(source: str) -> None:
    assert uses_estimator(convert([Cell(1, source)]))


@pytest.mark.parametrize(
    "source",
    [
        "import tensorflow as tf\nmodel = tf.keras.Sequential()",
        "text = 'tf.estimator is gone'\n# tf.estimator in a comment",
        "from sklearn.base import BaseEstimator\nmodel.estimator = BaseEstimator()",
        "import numpy as np\nnp.estimator = 1",
    ],
)
def test_other_code_is_not_estimator_code(source: str) -> None:
    assert not uses_estimator(convert([Cell(1, source)]))


def test_estimator_jobs_get_tensorflow_2_15_and_say_so(settings: Settings) -> None:
    source = (
        "import tensorflow as tf\nconfig = tf.estimator.RunConfig()\nmodel = x = None\nmodel.fit(x)"
    )
    plan = _plan(settings, source, "--workers 2")
    assert plan.spec.decided.estimator
    assert plan.parent_image == "tensorflow/tensorflow:2.15.1"
    notes = " ".join(plan.script.notes)
    assert "uses tf.estimator, which TensorFlow removed in 2.16" in notes
    assert not [r for r in plan.requirements if r.startswith("tf-keras")]  # Keras 2 in 2.15
    assert "uses tf.estimator" in plan.to_text(script=False)
    gpu = _plan(settings, source, "--gpus 1")
    assert gpu.parent_image == "tensorflow/tensorflow:2.15.1-gpu"
    older = JobSpec(decided=Decisions(estimator=True))
    assert images.parent_image(older, "2.12.0") == "tensorflow/tensorflow:2.12.0"
    plain = _plan(settings, "import tensorflow as tf\nx = tf.constant(1)")
    assert not plain.spec.decided.estimator and "2.15.1" not in plain.parent_image


def test_tpu_jobs_get_an_image_built_with_tensorflows_tpu_wheel_and_libtpu(
    settings: Settings,
) -> None:
    """Vertex AI's prebuilt TPU images may be gone and there is none for v5e: the image is built
    as Vertex AI's TPU guide builds one, and the plan says so."""
    plan = _plan(settings, "x = 1", "--tpu v3-8 --backend vertex --region europe-west4")
    assert plan.parent_image == images.TPU_BASE == "python:3.10-slim"
    assert plan.context is not None
    lines = plan.context.dockerfile.splitlines()
    version, wheel, libtpu = images.TPU_BUILDS["2.15"]
    assert lines[:3] == [
        "FROM python:3.10-slim AS system",
        f"RUN python3 -m pip install --no-cache-dir {wheel}",
        f"ADD {libtpu} /lib/libtpu.so",
    ]
    assert wheel.endswith(
        "tensorflow-2.15.0-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    )
    assert "PJRT" not in plan.context.dockerfile and "NEXT_PLUGGABLE" not in plan.context.dockerfile
    (note,) = [n for n in plan.script.notes if n.startswith("TPU job")]
    assert f"TensorFlow {version}'s TPU-VM wheel and libtpu 1.9.0" in note
    assert "--parent-image" in note and not [w for w in plan.warnings if "TPU" in w]
    # v5e: the PJRT runtime's variables too.
    v5e = _plan(settings, "x = 1", "--tpu v5e-4 --backend vertex")
    assert v5e.context is not None
    assert (
        "ENV NEXT_PLUGGABLE_DEVICE_USE_C_API=true TF_PLUGGABLE_DEVICE_LIBRARY_PATH=/lib/libtpu.so"
        in v5e.context.dockerfile.splitlines()
    )
    assert any("the PJRT runtime v5e needs" in n for n in v5e.script.notes)
    # A TPU-ready image of the user's: built on as it is, nothing added.
    own = _plan(settings, "x = 1", "--tpu v5e-4 --backend vertex --parent-image my/tpu-image:1")
    assert own.parent_image == "my/tpu-image:1"
    assert own.context is not None and "libtpu" not in own.context.dockerfile


def test_tpu_notebook_dry_run_shows_the_vertex_request(tfc_env: Path) -> None:
    plan = plan_for(TPU_NOTEBOOK, "--backend vertex --project my-project --image registry.test/x:1")
    assert plan.spec.resolved_strategy() is Strategy.TPU
    (pool,) = plan.request()["body"]["jobSpec"]["workerPoolSpecs"]
    assert pool["machineSpec"] == {
        "machineType": "cloud-tpu",
        "acceleratorType": "TPU_V3",
        "acceleratorCount": 8,
    }
    args = pool["containerSpec"]["args"]
    assert args[args.index("--strategy") + 1] == "tpu"
    text = plan.to_text(script=True)
    assert "--- Vertex AI request ---" in text and "distribute_datasets_from_function" in text


@pytest.mark.slow
def test_tpu_notebook_code_runs_on_this_cpu(tfc_env: Path, tmp_path: Path) -> None:
    """The same script, under OneDeviceStrategy: the TPU is the only thing missing here."""
    (tmp_path / "script.py").write_text(plan_for(TPU_NOTEBOOK).script.text)
    done = subprocess.run(
        [sys.executable, "-m", "tfc_runtime", "--strategy", "one_device", "script.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert done.returncode == 0, done.stderr
    assert "replicas: 1 global batch: 64" in done.stdout
    for what in ("fit", "custom loop"):
        found = re.search(rf"^{what}: loss (\S+) -> (\S+)$", done.stdout, re.MULTILINE)
        assert found, done.stdout
        assert float(found.group(2)) < float(found.group(1)) / 5
