"""Cold-process cost of ``%load_ext tfc_jupyter`` against ``import tensorflow_cloud``.

Each figure is measured in a fresh process, inside it: the child creates an IPython shell, then
times ``%load_ext tfc_jupyter`` (or ``import tensorflow_cloud``) with ``time.perf_counter`` around
that one call. (Subtracting two process medians, as this benchmark once did, printed a negative
load time on a busy machine.) Runs are interleaved, each series is the median of ``--runs``
(default 7) after one discarded warm-up run (so the disk cache is warm: this is the cost of the
imports, not of reading the disk), and its spread is printed beside it: min, max and the
interquartile range as a share of the median, so a reader can tell a steady figure from noise.

``tensorflow-cloud`` lives in its own environment, ``benchmarks/.venv-tfc`` (created here with
``uv`` when missing, ignored by git), because it pulls the full ``tensorflow`` wheel and a long
list of Google Cloud and Beam packages. Each child also reports which heavy modules (TensorFlow,
aiplatform, docker, nbconvert) it left in ``sys.modules``.

    .venv/bin/python benchmarks/bench_load.py [--runs 7] [--no-install]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TFC_VENV = ROOT / "benchmarks" / ".venv-tfc"
HEAVY = ("tensorflow", "google.cloud.aiplatform", "docker", "nbconvert")
CHILD_TIMEOUT_S = 120
INSTALL_TIMEOUT_S = 900

# Runs in the child: make a shell, then do the thing being measured, then report sys.modules.
CHILD = """
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
mode = sys.argv[1]
start = time.perf_counter()
if mode == "load_ext":
    shell.run_line_magic("load_ext", "tfc_jupyter")
    assert "tfc_run" in shell.magics_manager.magics["cell"], "%%tfc_run not registered"
elif mode == "import_tfc":
    import tensorflow_cloud
seconds = time.perf_counter() - start
print(json.dumps({"heavy": [m for m in HEAVY if m in sys.modules], "modules": len(sys.modules),
                  "seconds": seconds}))
""".replace("HEAVY", repr(HEAVY))


def _child_env(ipython_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update({"IPYTHONDIR": ipython_dir, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return env


def run_child(python: Path, mode: str, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """Wall seconds of one fresh child and what it reported; RuntimeError when it fails."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [str(python), "-c", CHILD, mode],
            capture_output=True,
            text=True,
            env=env,
            timeout=CHILD_TIMEOUT_S,
            cwd=tempfile.gettempdir(),
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{mode} did not finish within {CHILD_TIMEOUT_S} s") from None
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{mode} exited with status {proc.returncode}: {tail}")
    return elapsed, json.loads(proc.stdout.strip().splitlines()[-1])


def ensure_tfc_venv(install: bool) -> tuple[Path | None, str]:
    """The tensorflow-cloud environment's python, or None and the exact reason it is missing."""
    python = TFC_VENV / "bin" / "python"
    probe = "import tensorflow_cloud, importlib.metadata as m; print(m.version('tensorflow-cloud'))"
    if not python.exists() and install:
        uv = shutil.which("uv")
        if uv is None:
            return None, "uv is not installed (pip install uv)"
        env = {**os.environ, "VIRTUAL_ENV": str(TFC_VENV), "UV_NATIVE_TLS": "1"}
        env.setdefault("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")  # as bootstrap.sh
        base = getattr(sys, "_base_executable", sys.executable)
        steps = [
            [uv, "venv", "-q", str(TFC_VENV), "--python", base],
            [uv, "pip", "install", "-q", "--compile-bytecode", "tensorflow-cloud", "ipython"],
        ]
        print(f"creating {TFC_VENV.relative_to(ROOT)} (tensorflow-cloud, ipython) with uv ...")
        for step in steps:
            try:
                proc = subprocess.run(
                    step, capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT_S
                )
            except subprocess.TimeoutExpired:
                shutil.rmtree(TFC_VENV, ignore_errors=True)
                return None, f"`{' '.join(step[:3])}` ran past {INSTALL_TIMEOUT_S} s"
            if proc.returncode != 0:
                shutil.rmtree(TFC_VENV, ignore_errors=True)
                lines = [x for x in proc.stderr.splitlines() if "deprecated" not in x]
                return None, f"`{' '.join(step[:4])}` failed: {' | '.join(lines[-3:])}"
    if not python.exists():
        return None, f"{TFC_VENV.relative_to(ROOT)} does not exist (run without --no-install)"
    try:
        proc = subprocess.run(
            [str(python), "-c", probe],
            capture_output=True,
            text=True,
            env=_child_env(tempfile.gettempdir()),
            timeout=CHILD_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return None, f"import tensorflow_cloud ran past {CHILD_TIMEOUT_S} s"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"import tensorflow_cloud fails on Python {sys.version.split()[0]}: {tail}"
    return python, f"tensorflow-cloud {proc.stdout.strip()}"


@dataclass
class Series:
    """One measured series: in-process seconds of each run, the median process wall time, and
    what the child left in sys.modules."""

    seconds: list[float]
    wall_median_s: float
    heavy: list[str]
    modules: int

    @property
    def median_s(self) -> float:
        """Median in-process seconds."""
        return statistics.median(self.seconds)

    def spread(self) -> str:
        """``min 17 / max 25 ms, IQR 12% of the median``."""
        values = sorted(self.seconds)
        q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        iqr = (q[2] - q[0]) / self.median_s * 100 if self.median_s else 0.0
        return (
            f"min {values[0] * 1000:.0f} / max {values[-1] * 1000:.0f} ms, "
            f"IQR {iqr:.0f}% of the median"
        )


def measure(runs: int, tfc_python: Path | None) -> dict[str, Series]:
    """Every series, interleaved run by run (run 0 warms the disk cache and is discarded)."""
    series: dict[str, tuple[Path, str]] = {
        "ours_shell": (Path(sys.executable), "shell"),
        "ours_load": (Path(sys.executable), "load_ext"),
    }
    if tfc_python is not None:
        series["tfc_shell"] = (tfc_python, "shell")
        series["tfc_import"] = (tfc_python, "import_tfc")
    times: dict[str, list[float]] = {name: [] for name in series}
    inside: dict[str, list[float]] = {name: [] for name in series}
    seen: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-load-") as ipython_dir:
        env = _child_env(ipython_dir)
        for i in range(runs + 1):
            for name, (python, mode) in series.items():
                elapsed, seen[name] = run_child(python, mode, env)
                if i:
                    times[name].append(elapsed)
                    inside[name].append(float(seen[name]["seconds"]))
    return {
        name: Series(
            inside[name], statistics.median(values), seen[name]["heavy"], seen[name]["modules"]
        )
        for name, values in times.items()
    }


def _report(label: str, shell: Series, loaded: Series) -> float:
    """Print one side; returns its cost in seconds (timed inside the process)."""
    cost = loaded.median_s
    print(
        f"{label}: {cost * 1000:.0f} ms in-process ({loaded.spread()}); process wall time "
        f"{loaded.wall_median_s:.3f} s, shell only {shell.wall_median_s:.3f} s; heavy modules: "
        f"{', '.join(loaded.heavy) or 'none'} ({loaded.modules} modules in sys.modules)"
    )
    return cost


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per series (median)")
    parser.add_argument(
        "--no-install", action="store_true", help="do not create benchmarks/.venv-tfc"
    )
    args = parser.parse_args(argv)
    tfc_python, tfc_note = ensure_tfc_venv(install=not args.no_install)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, median of {args.runs} runs")
    result = measure(args.runs, tfc_python)
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    ours = _report("%load_ext tfc_jupyter", result["ours_shell"], result["ours_load"])
    if tfc_python is None:
        print(f"import tensorflow_cloud: not measured: {tfc_note}")
        return 0
    tfc = _report(
        f"import tensorflow_cloud ({tfc_note})", result["tfc_shell"], result["tfc_import"]
    )
    print(f"ratio: import tensorflow_cloud / %load_ext tfc_jupyter = {tfc / ours:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
