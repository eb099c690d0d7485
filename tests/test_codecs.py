"""Codecs (``tfc_runtime.codecs``): a kind of value is one file, found by an entry point in the
job and in the kernel; what a codec reads goes through the border."""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from IPython.utils.capture import capture_output
from tfc_runtime import codecs
from tfc_runtime.codecs.manifest import Manifest

from tfc_jupyter.returns.border import KernelCell
from tfc_jupyter.returns.returned import bring_back

# The whole of a kind of value, as an extension author writes it: one module.
FRACTION_CODEC = '''\
"""Fractions come back as fractions (not floats): "numerator/denominator" in a text file."""
from fractions import Fraction

from tfc_runtime.codecs import Codec, Stays


class FractionCodec(Codec):
    kind = "fraction"

    def claims(self, value):
        return type(value) is Fraction

    def write(self, value, name, out):
        file = f"fractions/{name}.txt"
        with open(out.path(file), "w") as f:
            f.write(f"{value.numerator}/{value.denominator}")
        return {"file": file}

    def read(self, entry, src):
        if not isinstance(entry.get("file"), str):
            raise Stays("fraction with no file")
        n, d = src.bytes(entry["file"]).decode("ascii").split("/")
        return Fraction(int(n), int(d))
'''
# ... and its package's metadata, as pip installs it: the entry point names the class.
ENTRY_POINTS = "[tfc_runtime.codecs]\nfraction = fraction_codec:FractionCodec\n"


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fraction codec installed in a folder on this process's and the job's path."""
    folder = tmp_path / "site"
    (folder / "fraction_codec-0.1.dist-info").mkdir(parents=True)
    (folder / "fraction_codec.py").write_text(FRACTION_CODEC)
    info = folder / "fraction_codec-0.1.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fraction-codec\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(folder))
    import os

    paths = [str(folder), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    codecs.reset()
    yield folder
    codecs.reset()


def test_the_registry_asks_keras_then_installed_codecs_then_values(plugin: Path) -> None:
    kinds = [c.kind for c in codecs.codecs()]
    assert kinds == [
        "model",
        "history",
        "callback",
        "hyperparameters",
        "tuner",
        "figure",
        "sklearn",
        "fraction",
        "value",
    ]
    fraction = codecs.claiming(Fraction(1, 3))
    assert fraction is not None and fraction.kind == "fraction"
    assert codecs.of_kind("value") is codecs.claiming([1, 2])
    assert codecs.claiming(Fraction(1, 3), early=True) is None


def test_a_second_codec_of_a_kind_is_not_used() -> None:
    class Other(codecs.Codec):
        kind = "value"

        def claims(self, value: Any) -> bool:
            return True

    codecs.reset()
    try:
        codecs.register(Other)
        assert [c.kind for c in codecs.codecs()].count("value") == 1
        assert not isinstance(codecs.of_kind("value"), Other)
        assert "second codec" in codecs.broken["value"]
    finally:
        codecs.reset()


def test_the_manifest_keeps_only_what_has_its_shape() -> None:
    manifest = Manifest.from_json(
        {"names": {"a": {"kind": "value", "value": 1}, "b": 3}, "stayed": {"ds": ["x"]},
         "order": "a", "out": 1, "version": "9"}
    )  # fmt: skip
    assert manifest == Manifest(names={"a": {"kind": "value", "value": 1}}, stayed={"ds": "['x']"})
    assert Manifest.from_json(manifest.to_json()) == manifest
    with pytest.raises(ValueError):
        Manifest.from_json([1])


def _job(tmp_path: Path, entry: dict[str, Any]) -> Path:
    job = tmp_path / f"job{len(list(tmp_path.glob('job*')))}"
    (job / "cell" / "fractions").mkdir(parents=True)
    (job / "cell" / "fractions" / "x.txt").write_text("1/3")
    (tmp_path / "secret.txt").write_text("2/3")
    (job / "cell" / "values.json").write_text(json.dumps({"names": {"x": entry}}))
    return job


@pytest.mark.parametrize(
    ("file", "stayed"),
    [
        ("../../secret.txt", "not a plain name"),
        (str(Path("/etc/hostname")), "not a relative path"),
        ("fractions", "not a file"),
    ],
)
def test_a_codec_reads_only_through_the_border(
    plugin: Path, tmp_path: Path, file: str, stayed: str
) -> None:
    namespace: dict[str, Any] = {}
    cell = KernelCell.from_source("x = f()")
    job = _job(tmp_path, {"kind": "fraction", "file": "fractions/x.txt"})
    assert bring_back(job, namespace, kernel_cell=cell).names == ["x"]
    assert namespace["x"] == Fraction(1, 3)
    namespace.clear()
    got = bring_back(
        _job(tmp_path, {"kind": "fraction", "file": file}), namespace, kernel_cell=cell
    )
    assert "x" not in namespace and stayed in got.stayed["x"], got
    got = bring_back(job, namespace, kernel_cell=cell, limit_mb=1e-6)
    assert "x" not in namespace and "over return_limit_mb" in got.stayed["x"], got


def test_a_kind_no_codec_here_reads_stays_in_the_job(tmp_path: Path) -> None:
    namespace: dict[str, Any] = {}
    job = _job(tmp_path, {"kind": "fraction", "file": "fractions/x.txt"})
    got = bring_back(job, namespace, kernel_cell=KernelCell.from_source("x = f()"))
    assert namespace == {} and got.stayed == {
        "x": "'fraction' value: no codec of that kind in this kernel"
    }


@pytest.fixture(scope="module")
def ip() -> Iterator[Any]:
    """The test IPython shell with the extension loaded."""
    from IPython.testing import globalipapp

    globalipapp.start_ipython()
    shell = globalipapp.get_ipython()
    assert shell is not None
    shell.run_line_magic("load_ext", "tfc_jupyter")
    yield shell


@pytest.mark.slow
@pytest.mark.usefixtures("tfc_env")
def test_a_kind_added_in_one_file_comes_back_from_a_real_job(
    plugin: Path, ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat

    body = "from fractions import Fraction\nhalf = Fraction(1, 2)\nthird = Fraction(2, 6)"
    line = "--strategy none"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(f"%%tfc_run {line}\n{body}")]
    nbformat.write(notebook, tmp_path / "job.ipynb")
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "job.ipynb"))
    with capture_output() as cap:
        result = ip.run_cell(f"%%tfc_run {line}\n{body}")
    assert result.error_in_exec is None, cap.stdout
    assert "Back in the kernel: Fraction, half, third" in cap.stdout, cap.stdout
    half, third = ip.user_ns["half"], ip.user_ns["third"]
    assert type(half) is Fraction and (half, third) == (Fraction(1, 2), Fraction(1, 3))


def test_a_codec_that_fails_leaves_its_name_in_the_job_and_the_rest_travels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the job: a codec writes only under the cell folder; one that fails (here: by
    asking for a path outside it) leaves its name in the job, said, and the others travel."""
    from types import SimpleNamespace

    from tfc_runtime import giveback

    class Outside(codecs.Codec):
        kind = "outside"

        def claims(self, value: Any) -> bool:
            return type(value) is Fraction

        def write(self, value: Any, name: str, out: codecs.Writer) -> dict[str, Any]:
            out.path("../escape.txt")
            return {}

    monkeypatch.setenv("TFC_JOB_DIR", str(tmp_path))
    state = SimpleNamespace(
        run_cell=1, binds=("f", "n"), reads=(), code=(), chief=True, out=None, started=0.0,
        workdir="",
    )  # fmt: skip
    codecs.reset()
    try:
        codecs.register(Outside)
        manifest = giveback.save_names(state, {"f": Fraction(1, 2), "n": 3})
    finally:
        codecs.reset()
    assert manifest is not None and manifest.names == {
        "n": {"kind": "value", "value": 3, "bytes": 8}
    }
    assert manifest.stayed["f"].startswith("Fraction that the outside codec could not write: ")
    assert not (tmp_path / "escape.txt").exists()
    written = json.loads((tmp_path / "cell" / "values.json").read_text())
    assert Manifest.from_json(written) == manifest
