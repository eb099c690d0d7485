"""Notebook -> script: our converter against nbconvert's ``PythonExporter``, speed and result.

Over every ``.ipynb`` in ``../shared/corpus/`` beside the project root (override with
``--corpus``) and ``notebooks/``:

* **speed**: ours is read + select the cells + ``tfc_jupyter.notebook.convert.convert`` (what
  ``%%tfc_run`` and ``tfc-jupyter plan`` do); nbconvert's is ``nbformat.read`` +
  ``PythonExporter()``'s ``from_notebook_node`` (one exporter, reused). Same process, both
  imported and run once first (warm), timed notebook by notebook over the notebooks both
  convert, median of ``--passes`` (default 3) passes, alternating which goes first.
* **result**, without running corpus code: each script is compiled, and a script that still calls
  ``get_ipython()`` (without importing it) would stop at that line with a NameError under plain
  ``python``. Conversions we refuse with our one-line error (``cell 4, line 2: the magic %store
  cannot run in a job. Fix: ...``) are counted apart: they are answers, not crashes.
* **run**: only the scripts of ``notebooks/`` and the small fixtures in ``benchmarks/fixtures/``
  (one magic each: ``%env``, ``!cmd``, ``%%writefile``, ``%time``, ``%pip install``, display-only
  magics, and a notebook with none) are executed, each converter's script in a fresh temporary
  folder with ``python script.py`` and ``PYTHONPATH=runtime``, under a timeout.

    .venv/bin/python benchmarks/bench_convert.py [--passes 3] [--corpus DIR] [--no-run]
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbconvert import PythonExporter

from tfc_jupyter.errors import TfcError
from tfc_jupyter.notebook import capture, needs
from tfc_jupyter.notebook.convert import convert

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"  # ../shared/corpus from the project root
FIXTURES = ROOT / "benchmarks" / "fixtures"
RUN_TIMEOUT_S = 120


@dataclass
class Outcome:
    """What one converter made of one notebook."""

    status: str  # "script", "refused" (our one-line TfcError), "error" (any other exception)
    text: str = ""  # the script, or the error line

    def verdict(self) -> str:
        """``runs-clean``, ``calls get_ipython``, ``does not compile``, or the status."""
        if self.status != "script":
            return self.status
        try:
            tree = ast.parse(self.text)
            compile(tree, "<script>", "exec")
        except (SyntaxError, ValueError):
            return "does not compile"
        return "calls get_ipython" if _unbound_get_ipython(tree) else "no get_ipython"


def _unbound_get_ipython(tree: ast.Module) -> bool:
    """True when the script uses ``get_ipython`` without importing or defining it."""
    used = bound = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "get_ipython":
            used |= isinstance(node.ctx, ast.Load)
            bound |= not isinstance(node.ctx, ast.Load)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            bound |= any((a.asname or a.name) == "get_ipython" for a in node.names)
        elif isinstance(node, ast.FunctionDef) and node.name == "get_ipython":
            bound = True
    return used and not bound


def ours(path: Path) -> Outcome:
    """Our pipeline, as ``tfc-jupyter plan`` runs it: read, select the cells, convert."""
    try:
        nb = capture.read_notebook(path)
        selection = capture.select_cells(nb, path=path, how="benchmark")
        script = convert(selection.cells, base_dir=selection.base_dir, notebook=selection.name)
    except TfcError as exc:
        return Outcome("refused", str(exc))
    except Exception as exc:
        return Outcome("error", f"{type(exc).__name__}: {exc}")
    return Outcome("script", script.text)


def theirs(path: Path, exporter: PythonExporter) -> Outcome:
    """nbconvert: read with nbformat, then ``PythonExporter.from_notebook_node``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.read(path, as_version=4)
            text, _ = exporter.from_notebook_node(nb)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:120]
        return Outcome("error", f"{type(exc).__name__}: {first}")
    return Outcome("script", text)


def time_passes(paths: list[Path], exporter: PythonExporter, passes: int) -> tuple[float, float]:
    """Median over passes of the total seconds (ours, nbconvert's) over ``paths``."""
    totals: dict[str, list[float]] = {"ours": [], "nbconvert": []}
    for n in range(passes):
        spent = {"ours": 0.0, "nbconvert": 0.0}
        for path in paths:
            order = [("ours", ours), ("nbconvert", lambda p: theirs(p, exporter))]
            for name, func in order if n % 2 == 0 else order[::-1]:
                start = time.perf_counter()
                func(path)
                spent[name] += time.perf_counter() - start
        for name, seconds in spent.items():
            totals[name].append(seconds)
    return statistics.median(totals["ours"]), statistics.median(totals["nbconvert"])


def run_script(text: str, timeout: float = RUN_TIMEOUT_S) -> tuple[str, str]:
    """``(kind, detail)`` of the script run alone: kind is ``ok``, ``NameError get_ipython``,
    ``timeout`` or the error's type; detail the last line it printed to stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "TFC_"))}
    env.update({"PYTHONPATH": str(ROOT / "runtime"), "TF_CPP_MIN_LOG_LEVEL": "3"})
    with tempfile.TemporaryDirectory(prefix="bench-convert-") as tmp:
        script = Path(tmp) / "script.py"
        script.write_text(text, encoding="utf-8")
        try:
            proc = subprocess.run(
                [sys.executable, str(script)],
                cwd=tmp,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return "timeout", f"ran past {timeout:g} s"
    if proc.returncode == 0:
        return "ok", ""
    last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    if "NameError" in last and "get_ipython" in last:
        return "NameError get_ipython", last
    return last.split(":")[0][:60], last


def _share(counts: Counter[str], key: str, total: int) -> str:
    return f"{counts[key]}/{total} ({100 * counts[key] / max(total, 1):.0f}%)"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passes", type=int, default=3, help="timed passes (median)")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="folder of .ipynb files")
    parser.add_argument("--no-run", action="store_true", help="skip executing fixture scripts")
    args = parser.parse_args(argv)
    paths = sorted(args.corpus.rglob("*.ipynb")) + sorted((ROOT / "notebooks").glob("*.ipynb"))
    exporter = PythonExporter()
    results: dict[Path, tuple[Outcome, Outcome]] = {
        p: (ours(p), theirs(p, exporter)) for p in paths
    }  # also the warm-up
    both = [p for p, (a, b) in results.items() if a.status == b.status == "script"]
    t_ours, t_theirs = time_passes(both, exporter, args.passes)
    print(f"{len(paths)} notebooks ({args.corpus} and notebooks/); both convert {len(both)}")
    print(
        f"speed over those {len(both)}, median of {args.passes} passes: ours {t_ours * 1000:.0f} "
        f"ms, nbconvert {t_theirs * 1000:.0f} ms; ratio nbconvert/ours = {t_theirs / t_ours:.2f}x"
    )
    ours_v = Counter(a.verdict() for a, _ in results.values())
    theirs_v = Counter(b.verdict() for _, b in results.values())
    n = len(paths)
    for name, counts in (("ours", ours_v), ("nbconvert", theirs_v)):
        print(f"{name:9s} " + ", ".join(f"{k}: {_share(counts, k, n)}" for k in sorted(counts)))
    for path, (a, _) in results.items():
        if a.status == "error":
            print(f"  CRASH (ours) {path.name}: {a.text}")
    _show_refusals(results)
    imports_figure([p for p, (a, _) in results.items() if a.status == "script"])
    if not args.no_run:
        run_fixtures(exporter)
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    return 0


def _show_refusals(results: dict[Path, tuple[Outcome, Outcome]]) -> None:
    reasons = Counter(
        re.sub(r"'[^']*'", "'...'", a.text.split(". Fix")[0].split(": ", 1)[-1].split(" (")[0])
        for a, _ in results.values()
        if a.status == "refused"
    )
    if reasons:
        print("our refusals: " + "; ".join(f"{r} x{c}" for r, c in reasons.most_common()))


def imports_figure(paths: list[Path]) -> None:
    """Of the notebooks we convert: how many would start in an image with everything they
    import. Ours adds imports at this kernel's versions (``needs.missing_imports``); tfc.run and
    nbconvert ship only the notebook's pip lines on TensorFlow's image. Depends on this
    environment: an import it does not have cannot be resolved by either."""
    ours_ok = theirs_ok = 0
    missing: Counter[str] = Counter()
    for path in paths:
        nb = capture.read_notebook(path)
        selection = capture.select_cells(nb, path=path, how="benchmark")
        script = convert(selection.cells, base_dir=selection.base_dir, notebook=selection.name)
        want = needs.missing_imports(script.imports, script.requirements.lines, path.parent)
        ours_ok += not want.unresolved
        theirs_ok += not want.unresolved and not want.requirements
        missing.update(want.unresolved)
    n = len(paths)
    print(
        f"start with every import (of {n} converted): ours {ours_ok} ({100 * ours_ok / n:.0f}%), "
        f"pip lines only (tfc.run, nbconvert) {theirs_ok} ({100 * theirs_ok / n:.0f}%)"
    )
    if missing:
        print("  not installed here: " + ", ".join(f"{m} x{c}" for m, c in missing.most_common(8)))


def run_fixtures(exporter: PythonExporter) -> None:
    """Execute both converters' scripts of notebooks/ and benchmarks/fixtures/ (trusted code)."""
    paths = sorted(FIXTURES.glob("*.ipynb")) + sorted((ROOT / "notebooks").glob("*.ipynb"))
    print(f"executed with `python script.py` ({len(paths)} trusted notebooks):")
    tally: dict[str, Counter[str]] = {"ours": Counter(), "nbconvert": Counter()}
    for path in paths:
        row: list[str] = []
        details: list[str] = []
        for name, outcome in (("ours", ours(path)), ("nbconvert", theirs(path, exporter))):
            kind, detail = (
                run_script(outcome.text)
                if outcome.status == "script"
                else (outcome.status, outcome.text)
            )
            tally[name][kind] += 1
            row.append(f"{name}: {kind}")
            if kind not in ("ok", "NameError get_ipython"):
                details.append(f"    {name}: {detail[:150]}")
        print(f"  {path.name:28s} " + "; ".join(row))
        print("\n".join(details), end="\n" if details else "")
    for name, counts in tally.items():
        print(f"{name:9s} runs: {_share(counts, 'ok', len(paths))}", end="; ")
        print(", ".join(f"{k} {v}" for k, v in counts.items() if k != "ok") or "no failures")


if __name__ == "__main__":
    sys.exit(main())
