"""Fidelity: a notebook that runs in Jupyter runs the same way as a job with default flags.

Each notebook in ``tests/fidelity/`` is written the way TensorFlow's public guides and tutorials
are (their own strategies, custom loops, device set-up, checkpoints, SavedModel ...), as
percent-format source: ``# %%`` starts a code cell, the comment lines before the first one are
the notebook's markdown cell. Every case runs twice, with real TensorFlow and nothing mocked: in
a real kernel through nbclient, and as a local job with default flags. What the code printed must
be the same, line for line (the seeded ones print the same numbers). Some also run distributed
(``--workers 1``; ``--workers 2 --ps 1`` for ParameterServerStrategy): there, the job must
succeed and print the same lines, numbers aside where a second replica changes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbclient
import nbformat
import pytest
from jobutil import plan_for, run_job

from tfc_jupyter.returns.results import job_results
from tfc_jupyter.store.records import JobState

FIDELITY = Path(__file__).resolve().parent / "fidelity"
KERNEL_TIMEOUT_S = 180

# Lines besides what the code printed: TensorFlow's C++ logging (absl), its start-up banner, its
# Python logger (to stdout in an interactive kernel, at INFO), and the runtime's status lines.
_NOISE = re.compile(
    r"^(\[tfc_runtime\]"
    r"|(INFO|WARNING|ERROR):tensorflow:"
    r"|[IWEF]\d{4} [\d:.]+\s+\d+ \S+\]"
    r"|WARNING: All log messages before absl"
    r"|To enable the following instructions"
    r")"
)
_NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")


@dataclass(frozen=True)
class Case:
    """One fidelity notebook and how to compare its job."""

    name: str
    strategy: str = "none"  # what the plan decides with default flags
    workers: str | None = None  # distributed too: "same" lines, "shape" (numbers aside)
    workers_strategy: str = "none"  # what the plan decides with the distributed flags
    flags: str = "--workers 1"  # the distributed run's flags


CASES = [
    Case("custom_step_keras3"),  # issue 11, pattern 1
    Case("own_mirrored_fit", workers="same"),  # pattern 2 (and 3b: Mirrored inside workers)
    Case("own_mwms_custom_loop", workers="shape"),  # pattern 3
    Case("mirrored_inside_workers", workers="same"),  # pattern 3: signal 11 before
    Case("late_mwms"),  # pattern 4
    Case("complex_variable", workers="same"),  # pattern 5
    Case("logical_devices"),  # pattern 6
    Case("gpu_memory_growth", workers="same"),  # pattern 6, GPU form
    Case("autograph"),
    Case("keras_fit_callbacks", workers="shape", workers_strategy="multi_worker_mirrored"),
    Case("checkpoints"),
    Case("savedmodel_export"),
    Case("tfdata_pipeline"),
    Case("mixed_precision"),
    Case("ragged_sparse"),
    Case("tf_module"),
    Case("random_generators"),
    Case("eager_custom_training", workers="same"),
    Case("custom_train_step_fit"),
    Case("reads_files"),
    Case("estimator_free_keras_functional"),
    Case("own_ps_strategy", workers="same", flags="--workers 2 --ps 1"),
    Case("metrics_custom_loop"),
]
# Cases whose printed epochs are their Keras metrics: job.metrics must hold the same numbers.
_PRINTED_EPOCH = {
    "metrics_custom_loop": re.compile(
        r"Epoch (?P<epoch>\d+), Train accuracy: (?P<train_accuracy>\S+), "
        r"Test loss: (?P<test_loss>\S+), Test accuracy: (?P<test_accuracy>\S+)$"
    )
}


def notebook_from_percent(source: str) -> nbformat.NotebookNode:
    """A notebook from percent-format source (see the module docstring)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    head, *cells = re.split(r"^# %%[^\n]*\n", source, flags=re.M)
    intro = "\n".join(line.lstrip("# ") for line in head.strip().splitlines())
    if intro:
        nb.cells.append(nbformat.v4.new_markdown_cell(intro))
    for cell in cells:
        nb.cells.append(nbformat.v4.new_code_cell(cell.strip("\n")))
    return nb


def write_case(name: str, folder: Path) -> Path:
    """The case's notebook, written as ``folder/<name>.ipynb``."""
    path = folder / f"{name}.ipynb"
    nbformat.write(notebook_from_percent((FIDELITY / f"{name}.py").read_text()), path)
    return path


def jupyter_stdout(path: Path) -> list[str]:
    """Run the notebook in a real kernel (nbclient); the lines its cells printed to stdout."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=KERNEL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    text = "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream" and out.get("name") == "stdout"
    )
    return [ln for ln in text.splitlines() if ln.strip() and not _NOISE.match(ln)]


_WARNING = re.compile(r"^\S+\.py:\d+: \w*Warning: ")


def job_stdout(job_dir: Path, replica: str = "chief") -> list[str]:
    """What the replica's code printed: its log (stdout and stderr) less TensorFlow's and the
    runtime's lines and Python's warnings (stderr, which the Jupyter side leaves out)."""
    text = (job_dir / "logs" / f"{replica}.log").read_text(errors="replace")
    out: list[str] = []
    after_warning = False
    for line in text.splitlines():
        if after_warning and line.startswith("  "):  # the source line a warning quotes
            after_warning = False
            continue
        after_warning = bool(_WARNING.match(line))
        if line.strip() and not after_warning and not _NOISE.match(line):
            out.append(line)
    return out


def _shape(lines: list[str]) -> list[str]:
    return [_NUMBER.sub("N", line) for line in lines]


def test_cases_cover_every_notebook() -> None:
    assert {c.name for c in CASES} == {p.stem for p in FIDELITY.glob("*.py")}
    assert len(CASES) >= 20


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_job_prints_what_jupyter_prints(case: Case, tmp_path: Path) -> None:
    path = write_case(case.name, tmp_path)
    expected = jupyter_stdout(path)
    assert expected, f"{case.name} printed nothing in Jupyter"
    plan = plan_for(path)
    assert plan.spec.resolved_strategy().value == case.strategy, plan.spec.decided.strategy_reason
    _, record = run_job(path, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, record.error
    assert job_stdout(Path(record.job_dir)) == expected
    if case.name in _PRINTED_EPOCH:  # a custom loop's metrics come back as its epochs
        printed = [m.groupdict() for ln in expected if (m := _PRINTED_EPOCH[case.name].match(ln))]
        epochs = job_results(record.log_dir).epochs
        assert [e["epoch"] for e in epochs] == [int(p.pop("epoch")) for p in printed]
        for epoch, seen in zip(epochs, printed, strict=True):
            assert epoch["metrics"] == pytest.approx({k: float(v) for k, v in seen.items()})

    if case.workers is None:
        return
    plan = plan_for(path, case.flags)
    why = plan.spec.decided.strategy_reason
    assert plan.spec.resolved_strategy().value == case.workers_strategy, why
    _, record = run_job(path, tmp_path / "home", case.flags)
    assert record.state is JobState.SUCCEEDED, record.error
    got = job_stdout(Path(record.job_dir))
    if case.workers == "same":
        assert got == expected
    else:
        assert _shape(got) == _shape(expected)
