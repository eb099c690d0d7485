"""A second run cell continues the first (issue 49): what an earlier ``%%tfc_run`` cell brought
back into the kernel is sent into the later job, so ``model.fit`` there goes on from the first
job's weights and optimizer state, as it does when both cells run in Jupyter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jobutil import in_kernel, write_notebook

from tfc_jupyter.job import options
from tfc_jupyter.notebook import carry
from tfc_jupyter.notebook.capture import read_notebook, select_cells
from tfc_jupyter.planner.plan import make_plan

DATA = """\
import numpy as np
import tensorflow as tf
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 4)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")"""
FIRST = """\
%%tfc_run
tf.keras.utils.set_random_seed(1)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="binary_crossentropy")
history = model.fit(x, y, epochs=2, batch_size=32, verbose=0)
first = model.evaluate(x, y, verbose=0)"""
BETWEEN = """\
w1 = [w.tolist() for w in model.get_weights()]
steps1 = int(model.optimizer.iterations.numpy())"""
SECOND = """\
%%tfc_run
start = [w.tolist() for w in model.get_weights()]
steps_at_start = int(model.optimizer.iterations.numpy())
history2 = model.fit(x, y, epochs=2, batch_size=32, verbose=0)
second = model.evaluate(x, y, verbose=0)"""
CHECK = """\
print("CHECK", json.dumps({"same_start": start == w1, "steps": [steps1, steps_at_start,
      int(model.optimizer.iterations.numpy())], "better": second < first,
      "epochs": history2.epoch}))"""


@pytest.mark.slow
def test_a_second_run_cell_continues_the_first_in_a_real_kernel(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_notebook(
        tmp_path / "two.ipynb", "%load_ext tfc_jupyter\nimport json", DATA, FIRST, BETWEEN,
        SECOND, CHECK,
    )  # fmt: skip
    nb = in_kernel(path)
    for cell in nb.cells:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, "\n".join(o["evalue"] + "\n".join(o["traceback"]) for o in errors)
    said = "".join(o.get("text", "") for o in nb.cells[4].outputs if o.output_type == "stream")
    assert "Back in the kernel: model, start, steps_at_start, history2, second." in said, said
    text = "".join(o.get("text", "") for o in nb.cells[5].outputs if o.output_type == "stream")
    got = json.loads(text.split("CHECK ", 1)[1].splitlines()[0])
    # the second job started from the first's weights and optimizer state (16 steps: 2 x 8)
    assert got == {"same_start": True, "steps": [16, 16, 32], "better": True, "epochs": [0, 1]}


def _selection(tmp_path: Path) -> Any:
    path = write_notebook(tmp_path / "two.ipynb", DATA, FIRST, BETWEEN, SECOND)
    body = SECOND.split("\n", 1)[1]
    return select_cells(read_notebook(path), path=path, how="test", magic_line="", body=body)


def test_a_name_only_an_earlier_run_cell_bound_is_received_where_the_kernel_holds_it(
    tmp_path: Path, settings: Any
) -> None:
    selection = _selection(tmp_path)
    carry.carry(selection, {"model": object(), "history": object(), "x": 1})
    assert selection.carried == {"model": 2}  # what later cells read; history is not read
    received = next(c for c in selection.cells if c.index == 2)
    assert received.source.endswith(
        f"model, = {carry.RECEIVE}('model')  # from the kernel: what this cell made"
    )
    plan = make_plan(selection, options.parse_line(""), settings)  # no refusal: it is bound
    assert plan.refused is None and "cell 2 (%%tfc_run): model come from the kernel" in " ".join(
        plan.selection.notes
    )


def test_without_the_kernel_holding_it_the_job_is_refused_as_before(
    tmp_path: Path, settings: Any
) -> None:
    from tfc_jupyter.errors import ConversionError

    selection = _selection(tmp_path)
    carry.carry(selection, {})  # a restarted kernel: nothing came back
    assert selection.carried == {}
    with pytest.raises(ConversionError, match="bound only by the %%tfc_run cell 2"):
        make_plan(selection, options.parse_line(""), settings)
