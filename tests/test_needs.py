"""What the notebook needs goes with it: imports become pinned requirements, files it reads go
into the image, and what cannot be resolved is a warning naming the fix (issue 12)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest
from jobutil import plan_for, write_notebook

from tfc_jupyter.image import context as package
from tfc_jupyter.image.context import SecretInFile
from tfc_jupyter.notebook import needs


def test_imports_the_image_lacks_are_pinned(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("X = 1\n")
    got = needs.missing_imports(
        [
            "os",
            "json",
            "numpy",
            "tensorflow",
            "keras",
            "psutil",
            "yaml",
            "helpers",
            "surely_absent",
        ],
        ["six"],
        tmp_path,
    )
    assert got.requirements == [
        f"psutil=={metadata.version('psutil')}",
        f"pyyaml=={metadata.version('pyyaml')}",
    ]
    assert got.unresolved == ["surely_absent"]
    assert got.local_modules == ["helpers"]


def test_asked_requirements_are_not_added_twice(tmp_path: Path) -> None:
    got = needs.missing_imports(["psutil", "yaml"], ["psutil>=5", "PyYAML"], tmp_path)
    assert got.requirements == []


def test_data_paths_are_the_files_next_to_the_notebook(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text("a,b\n1,2\n")
    (tmp_path / "x.npy").write_bytes(b"\x93NUMPY")
    (tmp_path / "labels.txt").write_text("cat\ndog\n")
    code = (
        "import pandas as pd, numpy as np\n"
        "df = pd.read_csv('data/train.csv')\n"
        "x = np.load('x.npy')\n"
        "labels = open('labels.txt').read().split()\n"
        "also = 'data'\n"
        "remote = pd.read_csv('https://example.com/data.csv')\n"
        "system = open('/etc/hostname')\n"
        "up = open('../outside.txt')\n"
        "missing = open('not-there.txt')\n"
    )
    assert needs.data_paths(code, tmp_path) == ["x.npy", "labels.txt", "data"]


def test_a_docker_plan_takes_imports_and_files(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text("a,b\n1,2\n")
    (tmp_path / "data" / ".env").write_text("API_KEY=x\n")
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "import psutil, yaml\nimport surely_absent_module",
        "rows = open('data/train.csv').read()",
        "%%tfc_run --backend docker --dry-run\nprint(len(rows))",
    )
    plan = plan_for(nb)
    assert f"psutil=={metadata.version('psutil')}" in plan.requirements
    assert any("added for the notebook's imports" in n for n in plan.script.notes)
    assert any("import surely_absent_module: not installed" in w for w in plan.warnings)
    assert plan.context is not None
    names = {e.arcname for e in plan.context.entries}
    assert "app/data/train.csv" in names
    assert not any(n.endswith(".env") for n in names)
    assert plan.context.to_dict()["auto_included"] == ["data/train.csv"]


def test_code_that_reads_a_secret_file_stops_the_plan(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("API_KEY=x\n")
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "%%tfc_run --backend docker --dry-run\nsecret = open('.env').read()",
    )
    with pytest.raises(SecretInFile, match=r"the code reads \.env \(secret: \.env file\)"):
        plan_for(nb)


def test_too_much_data_is_a_warning_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(package, "AUTO_LIMIT_MB", 0.00001)
    (tmp_path / "big.bin").write_bytes(b"\0" * 100)
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "%%tfc_run --backend docker --dry-run\ndata = open('big.bin', 'rb').read()",
    )
    plan = plan_for(nb)
    assert plan.context is not None and "app/big.bin" not in {
        e.arcname for e in plan.context.entries
    }
    assert any("the code reads big.bin" in w and "gs://" in w for w in plan.warnings)


def test_a_local_plan_adds_nothing(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", "import psutil\nopen('nb.ipynb')")
    plan = plan_for(nb)
    assert plan.requirements == []


def test_imports_of_the_shipped_modules_are_followed(tmp_path: Path) -> None:
    """helpers.py (shipped with the job) imports psutil, a package folder's module imports a
    helper that imports yaml, a guarded import is the code's business: the image gets what each
    needs, and the plan says who imported it."""
    from importlib import metadata

    (tmp_path / "helpers.py").write_text("import json\nimport psutil\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .inner import f\n")
    (tmp_path / "pkg" / "inner.py").write_text(
        "import more\ntry:\n    import not_installed_anywhere\nexcept ImportError:\n    pass\n"
    )
    (tmp_path / "more.py").write_text("\n\nimport yaml\n")
    want = needs.missing_imports({"helpers", "pkg"}, [], tmp_path)
    assert sorted(want.local_modules) == ["helpers", "more", "pkg"]
    psutil = f"psutil=={metadata.version('psutil')}"
    yaml = f"pyyaml=={metadata.version('pyyaml')}"
    assert psutil in want.requirements and yaml in want.requirements
    assert want.origins[psutil] == "imported by helpers.py, line 2"
    assert want.origins[yaml] == "imported by more.py, line 3"
    assert want.unresolved == []


def test_packages_loaded_on_demand_are_added_with_why(tmp_path: Path) -> None:
    """No import names TensorBoard when the code uses Keras' TensorBoard callback (TensorFlow
    2.21 no longer requires it): the rule adds it, at this kernel's version, saying why."""
    text = "import tensorflow as tf\n\ncb = tf.keras.callbacks.TensorBoard('logs')\n"
    also = needs.on_demand(text)
    assert also == [("tensorboard", "Keras' TensorBoard callback needs it: script line 3")]
    want = needs.missing_imports({"tensorflow"}, [], tmp_path, also=also)
    line = f"tensorboard=={metadata.version('tensorboard')}"
    assert want.requirements == [line]
    assert want.origins[line] == "Keras' TensorBoard callback needs it: script line 3"
    assert needs.on_demand("df = pd.read_parquet('x.parquet')\n")[0][0] == "pyarrow"
    assert needs.on_demand("model.save('m.h5')\n")[0][0] == "h5py"
    assert needs.on_demand("print('nothing on demand')\n") == []


def test_a_notebook_importing_scikit_learn_gets_skops_where_the_kernel_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A docker or Vertex AI job writes the scikit-learn models its run cell binds through skops
    for the kernel: the image gets skops at this kernel's version, said why; a kernel without
    skops asks for none (it could not read the model; the cell says to install it)."""
    text = "import numpy as np\nfrom sklearn.linear_model import LinearRegression\n"
    also = needs.on_demand(text)
    assert also == [("skops", "scikit-learn models the run cell binds come back through it: "
                     "script line 2")]  # fmt: skip
    want = needs.missing_imports({"numpy", "sklearn"}, [], tmp_path, also=also)
    assert f"skops=={metadata.version('skops')}" in want.requirements
    assert f"scikit-learn=={metadata.version('scikit-learn')}" in want.requirements
    assert needs.on_demand("x = 'sklearn is named in a string only'\n") == []
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "skops" else real(name, *a)
    )
    assert needs.on_demand(text) == []


def test_a_notebook_importing_keras_tuner_gets_tensorboard(tmp_path: Path) -> None:
    """Keras Tuner's trials import ``tensorboard.plugins.hparams`` with TensorFlow's backend,
    though no import of the notebook names it (TensorFlow 2.21 no longer requires it): a docker
    or Vertex AI image gets it, at this kernel's version, said why."""
    text = "import numpy as np\nimport keras_tuner as kt\n"
    also = needs.on_demand(text)
    assert ("tensorboard", "Keras Tuner's trials import it with TensorFlow's backend: "
            "script line 2") in also  # fmt: skip
    want = needs.missing_imports({"numpy", "keras_tuner"}, [], tmp_path, also=also)
    assert f"tensorboard=={metadata.version('tensorboard')}" in want.requirements
