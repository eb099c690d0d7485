"""TensorFlow 2.15's Keras: a custom loop's metrics (``reset_states``) are its epochs.

The job is tests/runtime/custom_loop_job.py, run by ``python -m tfc_runtime`` in this
environment; the reports are read as ``tfc_jupyter.returns.results`` reads them (one JSON per line).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PREFIX = "[tfc_runtime] result "


@pytest.mark.parametrize("strategy", ["default", "mirrored"])
@pytest.mark.parametrize("when", ["end", "start"])
def test_custom_loop_rounds_are_reported(tmp_path: Path, strategy: str, when: str) -> None:
    (tmp_path / "train.py").write_text((ROOT / "tests/runtime/custom_loop_job.py").read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "TFC_JOB_DIR")}
    env.update(
        PYTHONPATH=str(ROOT / "runtime"),
        TF_CPP_MIN_LOG_LEVEL="2",
        LOOP_STRATEGY=strategy,
        LOOP_RESET=when,
    )
    done = subprocess.run(
        [sys.executable, "-m", "tfc_runtime", "--strategy", "none", "train.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    printed = json.loads(next(x for x in lines if x.startswith("PRINTED "))[8:])
    assert PREFIX not in done.stdout  # reports never share stdout with the code's prints
    reports = done.stderr.splitlines()
    events = [json.loads(x[len(PREFIX) :]) for x in reports if x.startswith(PREFIX)]
    rounds: dict[int, dict[str, float]] = {}
    for event in events:
        if event["event"] == "metric":
            rounds.setdefault(event["round"], {})[event["name"]] = event["value"]
    assert sorted(rounds) == [1, 2, 3]
    for number, seen in zip(sorted(rounds), printed, strict=True):
        assert rounds[number] == pytest.approx(seen)
    assert [e["epoch"] for e in events if e["event"] == "epoch"] == [1]  # the fit afterwards
