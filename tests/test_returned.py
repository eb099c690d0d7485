"""The job is the cell: a notebook written as Keras notebooks are (data, model, a %%tfc_run
cell that fits, then cells that use what it made) runs top to bottom in a real kernel
(nbclient) as it runs in Jupyter, on the local backend (alone and with a worker) and on docker;
and what a job leaves for the kernel never runs code when it is loaded."""

from __future__ import annotations

import json
import os
from keyword import iskeyword
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobutil import JOB_DEADLINE_S, write_notebook

from tfc_jupyter.returns.border import KernelCell
from tfc_jupyter.returns.returned import bring_back, output

DATA = """\
import numpy as np
import tensorflow as tf
rng = np.random.default_rng(0)
x = rng.normal(size=(400, 4)).astype("float32")
y = (x @ np.array([1.0, -2.0, 0.5, 3.0], dtype="float32") > 0).astype("float32")"""
MODEL = """\
tf.keras.utils.set_random_seed(1)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
untrained = model.evaluate(x, y, verbose=0)"""
RUN = """\
%%tfc_run {flags}
history = model.fit(x, y, epochs=3, validation_split=0.2, verbose=0)
final = model.evaluate(x, y, verbose=0)
import matplotlib.pyplot as plt
import pandas as pd
plt.plot(history.history["loss"]); plt.show()
df = pd.DataFrame(history.history)
display(df)
ds = tf.data.Dataset.from_tensor_slices(x)
arr = np.arange(6).reshape(2, 3)
cfg = {{"lr": 0.01, "layers": [8, 1], "t": (1, float("nan"))}}
import os
os.makedirs("out", exist_ok=True)
df.to_csv("out/history.csv")
df.tail(1)"""
PLOT = """\
plt.plot(history.history['loss'])
plt.show()"""
CHECK = """\
import json
now = model.evaluate(x, y, verbose=0)
print("CHECK", json.dumps({
    "final": final, "now": now, "untrained": untrained,
    "history": type(history).__name__, "epoch": history.epoch, "params": history.params,
    "history_model": history.model is model, "keys": sorted(history.history),
    "arr": arr.tolist(), "cfg": repr(cfg), "df": type(df).__name__, "df_rows": len(df),
    "ds": "ds" in globals(), "load_model": type(_tfc_job.load_model()).__name__,
}))
model.fit(x, y, epochs=1, verbose=0)  # a further local fit continues from the trained model"""


def _executed(path: Path, monkeypatch: pytest.MonkeyPatch, timeout: float = JOB_DEADLINE_S) -> Any:
    """The notebook at ``path`` run top to bottom by nbclient in a real kernel that finds it
    (``JPY_SESSION_NAME``, as JupyterLab sets it); the executed notebook."""
    from nbclient import NotebookClient

    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=timeout, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return nb


def _run(tmp_path: Path, flags: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    path = write_notebook(
        tmp_path / "keras.ipynb",
        "%load_ext tfc_jupyter",
        DATA,
        MODEL,
        RUN.format(flags=flags),
        PLOT,
        CHECK,
    )
    return _executed(path, monkeypatch, JOB_DEADLINE_S * 2)


def _check(nb: Any, folder: Path, model: str = "model") -> dict[str, Any]:
    run, plot, check = nb.cells[3], nb.cells[4], nb.cells[5]
    text = "".join(o.get("text", "") for o in check.outputs if o.output_type == "stream")
    got = json.loads(text.split("CHECK ", 1)[1].splitlines()[0])
    # model.evaluate in the kernel is the job's final evaluation: the trained model came back.
    assert abs(got["now"][0] - got["final"][0]) < 1e-4, got
    assert abs(got["now"][0] - got["untrained"][0]) > 1e-3, got
    assert got["history"] == "History" and got["epoch"] == [0, 1, 2]
    assert got["params"]["epochs"] == 3 and got["history_model"] is True
    assert {"loss", "val_loss"} <= set(got["keys"])
    assert got["arr"] == [[0, 1, 2], [3, 4, 5]] and got["cfg"].endswith("(1, nan)}")
    assert got["df"] == "DataFrame" and got["df_rows"] == 3
    assert got["ds"] is False  # a tf.data.Dataset stays in the job, and is said to
    assert got["load_model"] == "Sequential"
    # The run cell shows what the job showed: the figure, the table, its Out[].
    kinds = [(o.output_type, sorted(o.get("data", {}))) for o in run.outputs]
    assert ("display_data", ["image/png", "text/plain"]) in kinds, kinds
    tables = [o for o in run.outputs if o.output_type == "display_data"
              and "<table" in o.get("data", {}).get("text/html", "")]  # fmt: skip
    assert len(tables) == 1
    (out,) = [o for o in run.outputs if o.output_type == "execute_result"]
    assert "<table" in out.data["text/html"]
    streamed = "".join(o.get("text", "") for o in run.outputs if o.output_type == "stream")
    assert "stayed in the job: ds (tf.data.Dataset)" in streamed
    assert f"Back in the kernel: {model}, history, final, df, arr, cfg" in streamed
    # The next cell, which nearly every Keras notebook has, plots in the kernel.
    assert any("image/png" in o.get("data", {}) for o in plot.outputs), plot.outputs
    # What the cell wrote is next to the notebook, wherever the job ran.
    written = (folder / "out" / "history.csv").read_text().splitlines()
    assert written[0] == ",loss,accuracy,val_loss,val_accuracy" or "loss" in written[0]
    assert len(written) == 4
    return got


@pytest.mark.slow
def test_a_keras_notebook_runs_as_in_jupyter_locally(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = _run(tmp_path, "", monkeypatch)
    _check(nb, tmp_path)
    streamed = "".join(o.get("text", "") for o in nb.cells[3].outputs if "text" in o)
    assert "Files the cell wrote" not in streamed  # a local job writes there itself


@pytest.mark.slow
def test_a_keras_notebook_runs_as_in_jupyter_with_a_worker(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = _run(tmp_path, "--workers 1", monkeypatch)
    # tf-keras trained it (multi-worker fit); this kernel's tf.keras is Keras 3 (issue 49)
    _check(nb, tmp_path, "model (tf-keras model, rebuilt in Keras 3 with its weights)")
    streamed = "".join(o.get("text", "") for o in nb.cells[3].outputs if "text" in o)
    assert "[worker-0]" not in streamed  # the worker's displays are the chief's


@pytest.mark.slow
def test_a_keras_notebook_runs_as_in_jupyter_on_docker(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch, tf_parent_image: str
) -> None:
    nb = _run(tmp_path, f"--backend docker --parent-image {tf_parent_image}", monkeypatch)
    _check(nb, tmp_path)
    streamed = "".join(o.get("text", "") for o in nb.cells[3].outputs if "text" in o)
    assert "Files the cell wrote, next to the notebook: out/history.csv" in streamed


# -- loading never runs the job's code ---------------------------------------------------------


def test_a_model_file_crafted_to_run_code_on_load_does_not_run_it(tmp_path: Path) -> None:
    import keras

    marker = tmp_path / "ran.txt"
    job = tmp_path / "job"
    (job / "cell" / "models").mkdir(parents=True)
    touch = f"lambda t: (open({str(marker)!r}, 'w').write('ran'), t)[1]"
    evil = keras.Sequential([keras.Input((2,)), keras.layers.Lambda(eval(touch))])
    evil.save(job / "cell" / "models" / "model.keras")
    marker.unlink()  # saving traced it once
    manifest = {
        "version": 1,
        "names": {"model": {"kind": "model", "file": "models/model.keras", "library": "keras"}},
        "stayed": {},
    }
    (job / "cell" / "values.json").write_text(json.dumps(manifest))
    namespace: dict[str, Any] = {}
    got = bring_back(job, namespace, kernel_cell=KernelCell.from_source("model = make()"))
    assert not marker.exists()
    assert "model" not in namespace
    assert "Keras model that does not load here" in got.stayed["model"]
    assert "Lambda" in got.stayed["model"] or "safe" in got.stayed["model"]


def _saved_by_the_job(job: Path, namespace: dict[str, Any]) -> None:
    """Fill ``job`` as a finished job's run cell binding ``namespace`` leaves it (the runtime's
    own writer, as in a job)."""
    import time
    from types import SimpleNamespace

    from tfc_runtime import giveback

    state = SimpleNamespace(run_cell=0, binds=tuple(namespace), reads=(), code=(), chief=True,
                            out=None, started=time.time(), workdir="")  # fmt: skip
    os.environ["TFC_JOB_DIR"] = str(job)
    try:
        giveback.save_names(state, namespace)  # type: ignore[arg-type]
    finally:
        del os.environ["TFC_JOB_DIR"]


def test_a_trained_model_comes_back_whole_from_the_copy_read_as_it_is_made(
    tmp_path: Path,
) -> None:
    """A Keras model the job trained comes back through the border's copy read while it is made
    (Keras 3 loads from the open copy): its weights and its optimizer's state as the job left
    them; and one safe mode refuses (a Lambda layer) loads its weights into the kernel's model
    of that name, from the finished copy."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, x[:, :1], epochs=2, verbose=0)
    job = tmp_path / "jobs" / "job"
    job.mkdir(parents=True)
    _saved_by_the_job(job, {"model": model})
    namespace: dict[str, Any] = {}
    got = bring_back(job, namespace, kernel_cell=KernelCell.from_source("model = make()"))
    assert got.names == ["model"], got.line()
    back = namespace["model"]
    assert back is not model
    for mine, theirs in zip(back.weights, model.weights, strict=True):
        assert np.array_equal(mine.numpy(), theirs.numpy())
    assert int(back.optimizer.iterations.numpy()) == int(model.optimizer.iterations.numpy()) == 4

    lam = keras.Sequential([keras.Input((4,)), keras.layers.Lambda(lambda t: t * 2.0),
                            keras.layers.Dense(1)])  # fmt: skip
    other = tmp_path / "jobs" / "other"
    other.mkdir()
    _saved_by_the_job(other, {"lam": lam})
    earlier = keras.Sequential([keras.Input((4,)), keras.layers.Lambda(lambda t: t * 2.0),
                                keras.layers.Dense(1)])  # fmt: skip
    namespace = {"lam": earlier}
    got = bring_back(other, namespace, kernel_cell=KernelCell.from_source("lam = make()"))
    assert got.names == ["lam"], got.line()
    assert namespace["lam"] is earlier
    assert np.array_equal(earlier.weights[0].numpy(), lam.weights[0].numpy())


def test_an_output_is_read_by_its_number_never_by_a_path_the_job_wrote(tmp_path: Path) -> None:
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "1.json").write_text(
        json.dumps({"output_type": "display_data", "data": {"text/plain": "ok"}, "metadata": {}})
    )
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"data": {"text/plain": "secret"}}))
    got = output({"event": "output", "n": 1, "file": str(secret)}, str(tmp_path))
    assert got is not None and got["data"] == {"text/plain": "ok"}
    assert output({"event": "output", "n": "../secret"}, str(tmp_path)) is None


def test_a_failed_or_foreign_job_sets_nothing(tmp_path: Path) -> None:
    namespace = {"model": "kernel's"}
    assert bring_back(tmp_path, namespace).line() == ""
    assert namespace == {"model": "kernel's"}
    (tmp_path / "cell").mkdir()
    (tmp_path / "cell" / "values.json").write_text("{not json")
    got = bring_back(tmp_path, namespace)
    assert got.problems and namespace == {"model": "kernel's"}
    assert os.path.exists(tmp_path / "cell" / "values.json")


@pytest.mark.slow
def test_the_cli_prints_where_the_cells_outputs_were_saved(tmp_path: Path, tfc_env: Path) -> None:
    import subprocess
    import sys

    path = write_notebook(
        tmp_path / "fig.ipynb",
        "import matplotlib.pyplot as plt",
        "%%tfc_run\nplt.plot([1, 3, 2])\nplt.show()\n6 * 7",
    )
    done = subprocess.run(
        [sys.executable, "-m", "tfc_jupyter.cli", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=JOB_DEADLINE_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    figure = next(line for line in lines if line.startswith("[output] <Figure"))
    saved = Path(figure.split("(saved: ", 1)[1].rstrip(")"))
    assert saved.name == "1.png" and saved.read_bytes().startswith(b"\x89PNG")
    assert any(line.startswith("[Out] 42  (saved: ") for line in lines), lines


def test_files_come_back_without_overwriting_newer_ones(tmp_path: Path) -> None:
    from tfc_jupyter.returns.returned import bring_files

    job, here = tmp_path / "job", tmp_path / "nb"
    (job / "files" / "out").mkdir(parents=True)
    (job / "files" / "out" / "a.csv").write_text("job's a")
    (job / "files" / "b.txt").write_text("job's b")
    (job / "files" / "c.txt").write_text("job's c")
    here.mkdir()
    (here / "b.txt").write_text("yours, newer")
    (tmp_path / "elsewhere").mkdir()
    (here / "c.txt").symlink_to(tmp_path / "elsewhere" / "c.txt")
    lines = bring_files(job, here, started=0.0)
    assert (here / "out" / "a.csv").read_text() == "job's a"
    assert (here / "b.txt").read_text() == "yours, newer"
    assert not (tmp_path / "elsewhere" / "c.txt").exists()
    assert lines[0] == "Files the cell wrote, next to the notebook: out/a.csv"
    assert "b.txt (yours changed since the job started" in lines[1]
    assert "c.txt (a link here: not followed)" in lines[1]
    assert bring_files(job, here, started=0.0) == lines[1:]  # again: a.csv is not redone
    assert bring_files(job, here, started=0.0, limit_mb=0)[-1].startswith("! over return_limit")


# -- Vertex AI: what the cell leaves under the base output folder comes back -------------------

OUT_BUCKET = "tfc-outputs"


@pytest.mark.slow
def test_names_and_files_come_back_from_a_vertex_job(
    tfc_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The package route (no Docker), the test Vertex AI and Cloud Storage servers: the job's
    runtime writes the cell's names and files under --base-output-dir through the storage
    server, and the magic brings them back into the kernel and next to the notebook."""
    from IPython.testing import globalipapp
    from IPython.utils.capture import capture_output
    from test_package_route import BUCKET, package_servers

    from tfc_jupyter.backends.vertex.backend import stop_watcher
    from tfc_jupyter.jobs import store_for

    with package_servers(tmp_path, monkeypatch, (BUCKET, OUT_BUCKET)) as (gcs, _):
        flags = (
            f"--backend vertex --project my-proj-1 --build-bucket {BUCKET} "
            f"--base-output-dir gs://{OUT_BUCKET}/run --env STORAGE_EMULATOR_HOST={gcs.url}"
        )
        body = "y = x * 2\nnotes = {'ü': [1.5, None]}\nopen('made.txt', 'w').write('from the job')"
        nb = write_notebook(tmp_path / "v.ipynb", "x = 21", f"%%tfc_run {flags}\n{body}")
        monkeypatch.setenv("JPY_SESSION_NAME", str(nb))
        globalipapp.start_ipython()
        ip = globalipapp.get_ipython()
        ip.run_line_magic("load_ext", "tfc_jupyter")
        ip.user_ns["x"] = 21
        try:
            with capture_output() as cap:
                ip.run_cell_magic("tfc_run", flags, body)
        finally:
            for record in store_for(Path(os.environ["TFC_JUPYTER_HOME"])).list(limit=None):
                stop_watcher(record)
        assert ip.user_ns["y"] == 42, cap.stdout
        assert ip.user_ns["notes"] == {"ü": [1.5, None]}
        assert (tmp_path / "made.txt").read_text() == "from the job"
        assert "Files the cell wrote, next to the notebook: made.txt" in cap.stdout
        assert gcs.object(OUT_BUCKET, "run/cell/values.json") is not None


@pytest.mark.slow
def test_a_failed_job_sets_nothing_when_told_and_a_wait_brings_names_back(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.testing import globalipapp
    from IPython.utils.capture import capture_output

    from tfc_jupyter.magics import JobFailed

    failing = "model2 = 'new'\nraise ValueError('boom')"
    later = "z = 5\nw = [z] * 2"
    nb = write_notebook(
        tmp_path / "f.ipynb",
        "model2 = 'old'",
        f"%%tfc_run\n{failing}",
        f"%%tfc_run --no-wait\n{later}",
    )
    monkeypatch.setenv("JPY_SESSION_NAME", str(nb))
    globalipapp.start_ipython()
    ip = globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "tfc_jupyter")
    ip.user_ns["model2"] = "old"
    ip.config.TfcConfig.partial_names = False  # a failed job's names made before it: not set
    try:
        with capture_output(), pytest.raises(JobFailed) as info:
            ip.run_cell_magic("tfc_run", "", failing)
    finally:
        del ip.config.TfcConfig["partial_names"]
    assert ip.user_ns["model2"] == "old"
    assert "model2 in this kernel is from before this cell (it did not end)" in str(info.value)
    with capture_output():
        job = ip.run_cell_magic("tfc_run", "--no-wait", later)
    assert "z" not in ip.user_ns  # not waited for: nothing yet
    with capture_output() as cap:
        job.wait(JOB_DEADLINE_S)  # in the kernel, a wait sets the cell's names
    assert ip.user_ns["z"] == 5 and ip.user_ns["w"] == [5, 5], cap.stdout
    assert "Back in the kernel: z, w." in cap.stdout
    with capture_output() as cap:
        ip.run_line_magic("tfc_attach", job.id)
    assert "Back in the kernel" not in cap.stdout  # once a job


@pytest.mark.slow
def test_with_no_notebook_file_the_job_starts_where_the_kernel_started(
    tmp_path: Path, tfc_env: Path
) -> None:
    """nbconvert or papermill give the kernel no notebook path: the job is the input history,
    and starts in the kernel's first folder, so a `%cd` of a cell above runs again from there."""
    import subprocess
    import sys

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.txt").write_text("found it")
    code = """
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_cell("%load_ext tfc_jupyter", store_history=True)
ip.run_cell("%cd sub", store_history=True)
ip.run_cell("%%tfc_run\\nprint(open('x.txt').read())\\ny = 1", store_history=True)
print("Y", ip.user_ns.get("y"))
"""
    env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=JOB_DEADLINE_S,
        check=False,
    )
    assert "\nfound it\n" in done.stdout, (done.stdout, done.stderr)  # as the cell's print
    assert "without the cells' tags" in done.stdout
    assert "Y 1" in done.stdout


PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/"
    "iZk9HQAAAABJRU5ErkJggg=="
)
ORDER = f"""%%tfc_run{{flags}}
print('before')
display({{{{'shown': 1}}}})
import base64
from IPython.display import Image
display(Image(data=base64.b64decode("{PNG}")))
import time
for i in range(3):
    print('after', i)
    time.sleep(0.05)"""


def _in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str) -> None:
    """Prints, a dict's and an image's display come in the cell in the order they were made,
    the image as an image (``image/png``), as Jupyter shows them."""
    body = ORDER.format(flags=flags)
    path = write_notebook(tmp_path / "order.ipynb", "%load_ext tfc_jupyter", body)
    nb = _executed(path, monkeypatch)
    seen = []
    for o in nb.cells[1].outputs:
        data = o.get("data", {})
        text = o.get("text", "") or data.get("text/plain", "")
        if "image/png" in data:
            seen.append("image")
        for line in text.splitlines():  # whole lines: "succeeded after 0.4 s" is not one
            if line in ("before", "{'shown': 1}", "after 0"):
                seen.append(line)
    import pprint

    expected = ["before", "{'shown': 1}", "image", "after 0"]
    assert seen == expected, pprint.pformat(nb.cells[1].outputs)


@pytest.mark.slow
def test_outputs_keep_their_order_with_the_printed_lines(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _in_order(tmp_path, monkeypatch, "")


@pytest.mark.slow
def test_outputs_keep_their_order_with_the_printed_lines_on_docker(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch, tf_parent_image: str
) -> None:
    """A container's log is a pipe: each output's place is a mark line in it (issue 49)."""
    _in_order(tmp_path, monkeypatch, f" --backend docker --parent-image {tf_parent_image}")


@pytest.mark.slow
def test_display_handles_and_clear_output_work_as_in_jupyter(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live plot redrawn each epoch (clear_output(wait=True), then plt.show()) leaves one
    figure; a display handle's update replaces its output; the cell's log lines stay."""
    body = """%%tfc_run
from IPython.display import display, clear_output
import matplotlib.pyplot as plt
for epoch in range(3):
    clear_output(wait=True)
    plt.plot(range(epoch + 2)); plt.show()
    print("epoch", epoch)
h = display("first", display_id=True)
h.update("second")"""
    path = write_notebook(tmp_path / "live.ipynb", "%load_ext tfc_jupyter", body)
    nb = _executed(path, monkeypatch)
    outputs = nb.cells[1].outputs
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1, outputs
    plain = [o.get("data", {}).get("text/plain") for o in outputs]
    assert "'second'" in plain and "'first'" not in plain
    streamed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert all(f"\nepoch {i}\n" in f"\n{streamed}" for i in range(3)), streamed


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_entry = st.fixed_dictionaries(
    {"kind": st.sampled_from(["value", "model", "history", "code", "other"])},
    optional={"value": _json, "file": st.text(max_size=12), "library": st.text(max_size=8),
              "history": _json, "epoch": _json, "bytes": _json, "model": _json},
)  # fmt: skip


@given(
    st.one_of(
        _json,
        st.fixed_dictionaries(
            {"names": st.dictionaries(st.text(max_size=6), _entry, max_size=4)},
            optional={"stayed": _json, "out": _json},
        ),
    )
)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_manifest_a_job_folder_holds_never_breaks_the_kernel(
    tmp_path: Path, manifest: Any
) -> None:
    """Whatever ``cell/values.json`` holds (a crafted or corrupt file), bringing it back says
    what it could not read and raises nothing."""
    job = tmp_path / "job"
    (job / "cell").mkdir(parents=True, exist_ok=True)
    (job / "cell" / "values.json").write_text(json.dumps(manifest))
    namespace: dict[str, Any] = {}
    listed = manifest.get("names") if isinstance(manifest, dict) else None
    names = [n for n in listed or {} if n.isidentifier()] if isinstance(listed, dict) else []
    cell = KernelCell.from_source("\n".join(f"{n} = 1" for n in names if not iskeyword(n)))
    got = bring_back(job, namespace, kernel_cell=cell)
    assert set(namespace) <= set(got.names) | {"__builtins__"}
