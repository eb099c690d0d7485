"""Secrets by content, in whole files, with a planted corpus of the forms people leak.

Every form is written under a neutral file name (so only its content can give it away), found,
and placed at its line. Counted (tests/counted.py): the run prints forms tried and held.
"""

from __future__ import annotations

import base64
import bz2
import codecs
import functools
import gzip
import io
import json
import lzma
import pickle
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import counted
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobutil import plan_for, write_notebook
from secret_corpus import ARCHIVE_FORMS, AWS_SECRET, CLEAN, CONTENT_FORMS, NAME_FORMS, PEM, SA

from tfc_jupyter.image.context import SecretInFile
from tfc_jupyter.util import secretscan

ITEMS = [
    "content forms are found at their line",
    "archives are opened",
    "secret file names",
    "no false alarm on ordinary files",
    "a file the job needs that holds a secret stops the plan",
    "a home folder packs no tool state and none of ours",
    "packed forms are opened",
    "a file is scanned whole, or not shipped",
    "tool credential files are known by name",
    "a Jupyter server token in saved outputs",
    "a real 2048-bit key in a UTF-32 array never ships",
]


def test_every_item_has_cases() -> None:
    counted.check_items(sys.modules[__name__])


@pytest.mark.item("content forms are found at their line")
@pytest.mark.parametrize(("form", "content", "line"), CONTENT_FORMS, ids=lambda v: str(v)[:40])
def test_content_forms_are_found_at_their_line(
    tmp_path: Path, form: str, content: str | bytes, line: int
) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    found = secretscan.scan_file(path)
    assert found is not None, form
    assert found.line == line, (form, found)


@pytest.mark.item("archives are opened")
@pytest.mark.parametrize(("form", "data"), ARCHIVE_FORMS, ids=lambda v: str(v)[:40])
def test_archives_are_opened(tmp_path: Path, form: str, data: bytes) -> None:
    path = tmp_path / "bundle.zip"
    path.write_bytes(data)
    found = secretscan.scan_file(path)
    assert found is not None and "in the archive" in found.what, form


@pytest.mark.item("secret file names")
@pytest.mark.parametrize("name", NAME_FORMS)
def test_names_are_secrets(name: str) -> None:
    assert secretscan.secret_reason(f"project/{name}") is not None


def test_the_corpus_has_forty_forms() -> None:
    assert len(CONTENT_FORMS) + len(ARCHIVE_FORMS) + len(NAME_FORMS) >= 40


@pytest.mark.item("no false alarm on ordinary files")
@pytest.mark.parametrize("content", CLEAN, ids=range(len(CLEAN)))
def test_no_false_alarm_on_ordinary_files(tmp_path: Path, content: str) -> None:
    path = tmp_path / "file.txt"
    path.write_text(content)
    assert secretscan.scan_file(path) is None
    assert (
        secretscan.secret_reason("env.py") is None
        and secretscan.secret_reason(".env.example") is None
    )


@pytest.mark.item("a file the job needs that holds a secret stops the plan")
def test_a_named_file_with_a_secret_stops_the_plan(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(f"bucket: b\naws_secret_access_key: {AWS_SECRET}\n")
    nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    with pytest.raises(SecretInFile) as info:
        plan_for(nb, "--include config.yaml")
    text = str(info.value)
    assert "config.yaml, line 2 holds a secret (an AWS secret access key)" in text
    assert AWS_SECRET not in text and "Fix:" in text


@pytest.mark.item("a file the job needs that holds a secret stops the plan")
def test_a_password_in_db_ini_stops_the_plan(tmp_path: Path) -> None:
    """Issue 39: a ``db.ini`` with ``password=...`` shipped in the build context."""
    (tmp_path / "db.ini").write_text("[db]\nhost = localhost\npassword=hunter2-Xq9\n")
    nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    with pytest.raises(SecretInFile) as info:
        plan_for(nb, "--include db.ini")
    text = str(info.value)
    assert "db.ini, line 3 holds a secret (a password or key in a configuration file)" in text
    assert "hunter2" not in text and "Fix:" in text


@pytest.mark.item("a file the job needs that holds a secret stops the plan")
def test_a_file_the_code_reads_with_a_secret_stops_the_plan(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(SA)
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "%%tfc_run --backend docker --dry-run\nimport json\ncfg = json.load(open('settings.json'))",
    )
    with pytest.raises(SecretInFile, match=r"settings\.json, line 1 holds a secret"):
        plan_for(nb)


@pytest.mark.item("a home folder packs no tool state and none of ours")
def test_a_home_folder_packs_no_state_of_tools_or_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    jobs = home / ".local" / "share" / "jupyter" / "tfc_jupyter"
    (jobs / "jobs" / "j1").mkdir(parents=True)
    (jobs / "jobs" / "j1" / "launch.json").write_text('{"env": {}}')
    (home / ".cache" / "pip").mkdir(parents=True)
    (home / ".cache" / "pip" / "x").write_text("cache")
    own = home / "tfc-home"
    own.mkdir()
    (own / "jobs.sqlite").write_bytes(b"SQLite format 3\0")
    (home / "train.csv").write_text("a\n1\n")
    monkeypatch.setenv("TFC_JUPYTER_HOME", str(own))
    nb = write_notebook(home / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    plan = plan_for(nb, "--include .")
    assert plan.context is not None
    names = {e.arcname for e in plan.context.entries}
    assert "app/train.csv" in names
    assert not any(n.startswith(("app/.local", "app/.cache", "app/tfc-home")) for n in names)
    left = dict(plan.context.left_out)
    assert left[".local/"].startswith("tools' state") and left["tfc-home/"].startswith(
        "tfc_jupyter"
    )


# ---------------------------------------------------------------------- packed forms (issue 24.3)
def _tar_gz(name: str, data: bytes) -> bytes:
    out = io.BytesIO()  # no time in the bytes: the two test processes collect the same ids
    with (
        gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w") as tar,
    ):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _npy(*values: object) -> bytes:
    out = io.BytesIO()
    np.save(out, np.array(values))
    return out.getvalue()


def _npz(**arrays: object) -> bytes:
    out = io.BytesIO()
    np.savez(out, **{k: np.array(v) for k, v in arrays.items()})
    return out.getvalue()


_SA_FULL = json.dumps({"type": "service_account", "project_id": "p", "private_key": PEM})
_WRAPPED = base64.encodebytes(_SA_FULL.encode()).decode()
PACKED_FORMS = [
    ("key.json.gz", gzip.compress(_SA_FULL.encode(), mtime=0)),
    ("key.json.bz2", bz2.compress(_SA_FULL.encode())),
    ("key.json.xz", lzma.compress(_SA_FULL.encode())),
    ("bundle.tar.gz", _tar_gz("conf/settings.json", _SA_FULL.encode())),
    ("bundle.tar.gz", _tar_gz("data/deep.tar.gz", _tar_gz("key.json", SA.encode()))),
    (
        "values.yaml",
        f"kind: Secret\ndata:\n  key.json: {base64.b64encode(_SA_FULL.encode()).decode()}\n",
    ),
    ("values.yaml", "creds: |\n" + "".join(f"  {line}\n" for line in _WRAPPED.splitlines())),
    ("keys.npy", _npy(PEM, "another string")),
    ("arrays.npz", _npz(keys=[PEM], ids=[1, 2])),
    ("model.pkl.gz", gzip.compress(pickle.dumps({"weights": [0.5], "key": PEM}), mtime=0)),
    ("blob.bin", b"\x00\x01" * 500 + AWS_SECRET.join(["aws_secret_access_key = ", ""]).encode()),
]
PACKED_CLEAN = [
    ("table.npy", _npy(*range(1000))),
    ("names.npy", _npy("alpha", "beta", "gamma")),
    ("train.csv.gz", gzip.compress(b"x,y\n" + b"1.5,2.5\n" * 20000, mtime=0)),
    ("data.tar.gz", _tar_gz("train.csv", b"x,y\n1,2\n")),
    ("model.pkl", pickle.dumps({"weights": list(range(100))})),
    ("icon.yaml", f"png: {base64.b64encode(bytes(range(256)) * 8).decode()}\n"),
]


@pytest.mark.item("packed forms are opened")
@pytest.mark.parametrize(
    ("name", "data"), PACKED_FORMS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(PACKED_FORMS)]
)
def test_packed_forms_are_opened(tmp_path: Path, name: str, data: str | bytes) -> None:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    found = secretscan.scan_file(path)
    assert found is not None, name
    assert "private key" in found.what or "credentials" in found.what or "AWS" in found.what


@pytest.mark.item("packed forms are opened")
@pytest.mark.parametrize(
    ("name", "data"), PACKED_CLEAN, ids=[f"{n}-{i}" for i, (n, _) in enumerate(PACKED_CLEAN)]
)
def test_packed_clean_files_are_no_alarm(tmp_path: Path, name: str, data: str | bytes) -> None:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    assert secretscan.scan_file(path) is None


@pytest.mark.item("packed forms are opened")
def test_an_included_folder_leaves_a_packed_key_out(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.csv").write_text("x,y\n1,2\n")
    (data / "svc.json.gz").write_bytes(gzip.compress(_SA_FULL.encode(), mtime=0))
    nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    plan = plan_for(nb, "--include data")
    assert plan.context is not None
    names = {e.arcname for e in plan.context.entries}
    assert "app/data/train.csv" in names and "app/data/svc.json.gz" not in names
    assert "packed with gzip" in dict(plan.context.left_out)["data/svc.json.gz"]


@pytest.mark.item("a file is scanned whole, or not shipped")
def test_a_key_after_64_mb_is_found_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    row = b"0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9\n"
    rows = 66_000_000 // len(row) + 1
    with path.open("wb") as f:
        f.write(row * rows)
        f.write(f"aws_secret_access_key = {AWS_SECRET}\n".encode())
    found = secretscan.scan_file(path)
    assert found is not None and found.line == rows + 1, found


@pytest.mark.item("a file is scanned whole, or not shipped")
def test_a_key_across_a_window_edge_is_found(tmp_path: Path) -> None:
    path = tmp_path / "edge.txt"
    before = secretscan.SCAN_CHUNK - 10
    path.write_bytes(b"a" * before + b"\n" + PEM.encode())
    found = secretscan.scan_file(path)
    assert found is not None and found.line == 2


@pytest.mark.item("a file is scanned whole, or not shipped")
@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("broken.gz", gzip.compress(_SA_FULL.encode(), mtime=0)[:40]),
        ("broken.tar", b"\0" * 257 + b"ustar" + b"\xff" * 300),
    ],
)
def test_what_cannot_be_read_whole_is_not_shipped(tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    found = secretscan.scan_file(path)
    assert found is not None and "cannot be scanned whole" in found.what


@pytest.mark.item("a file is scanned whole, or not shipped")
def test_an_encrypted_zip_member_is_not_shipped(tmp_path: Path) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("data.txt", "hello")
    data = bytearray(out.getvalue())
    data[6] |= 0x1  # the local header's "encrypted" flag
    central = data.rfind(b"PK\x01\x02")
    data[central + 8] |= 0x1  # and the central directory's
    path = tmp_path / "locked.zip"
    path.write_bytes(bytes(data))
    found = secretscan.scan_file(path)
    assert found is not None and "encrypted" in found.what


TOOL_FILES = [
    ".databrickscfg",
    ".terraform.d/credentials.tfrc.json",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".snowflake/config.toml",
    ".snowflake/connections.toml",
    ".dbt/profiles.yml",
    ".config/gh/hosts.yml",
    ".kaggle/kaggle.json",
    "pip.conf",
    ".local/share/jupyter/runtime/jpserver-4242.json",
]


@pytest.mark.item("tool credential files are known by name")
@pytest.mark.parametrize("name", TOOL_FILES)
def test_tool_credential_files_are_known_by_name(name: str) -> None:
    assert secretscan.secret_reason(f"home/{name}") is not None, name


@pytest.mark.item("tool credential files are known by name")
def test_ordinary_files_of_the_same_names_elsewhere_are_not(tmp_path: Path) -> None:
    for name in ("settings.xml", "config.toml", "profiles.yml", "hosts.yml"):
        assert secretscan.secret_reason(f"project/{name}") is None, name


@pytest.mark.item("a Jupyter server token in saved outputs")
def test_a_jupyter_token_in_saved_outputs_stops_the_notebook(tmp_path: Path) -> None:
    token = "3f1c" * 12
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {
                "cell_type": "code",
                "id": "a",
                "metadata": {},
                "execution_count": 1,
                "source": "!jupyter server list",
                "outputs": [
                    {
                        "output_type": "stream",
                        "name": "stdout",
                        "text": f"http://127.0.0.1:8888/?token={token} :: /home/me\n",
                    }
                ],
            }
        ],
    }
    path = tmp_path / "servers.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    found = secretscan.scan_file(path)
    assert found is not None and found.what == "a Jupyter server token"
    assert secretscan.scan_text("see http://localhost:8888/lab?token=<your token>") is None


_FIXTURE = HealthCheck.function_scoped_fixture
_CONFIG_KEYS = ("password", "db_password", "secret_key", "api_key", "client_secret", "pwd")
_SECRET_VALUE = st.text(
    st.characters(codec="utf-8", categories=("L", "N", "P", "S"), exclude_characters="#;'\"$"),
    min_size=6,
    max_size=40,
).filter(lambda v: not v.isdigit() and v.lower() not in ("none", "null", "true", "false"))


@pytest.mark.item("content forms are found at their line")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key=st.sampled_from(_CONFIG_KEYS),
    value=_SECRET_VALUE,
    sep=st.sampled_from(["=", " = ", ": ", "="]),
    quote=st.sampled_from(["", "'", '"']),
    suffix=st.sampled_from(secretscan.CONFIG_SUFFIXES),
    above=st.integers(0, 3),
)
def test_a_password_in_a_configuration_file_is_found_at_its_line(
    tmp_path_factory: pytest.TempPathFactory,
    key: str,
    value: str,
    sep: str,
    quote: str,
    suffix: str,
    above: int,
) -> None:
    """``db.ini``'s ``password = ...`` (issue 39): a configuration file's key that names a
    password or a key, whatever its value's characters, stops the file at its line."""
    path = tmp_path_factory.mktemp("config") / f"db{suffix}"
    lines = ["[client]"] + [f"host{i} = db{i}.example.com" for i in range(above)]
    path.write_text("\n".join([*lines, f"{key}{sep}{quote}{value}{quote}", "port = 5432"]) + "\n")
    found = secretscan.scan_file(path)
    assert found is not None and found.line == len(lines) + 1, (path.read_text(), found)


@pytest.mark.item("no false alarm on ordinary files")
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key=st.sampled_from((*_CONFIG_KEYS, "password_min_length", "use_api_key")),
    value=st.sampled_from(["None", "null", "true", "off", "8", "${DB_PASSWORD}", "$API_KEY", ""]),
    suffix=st.sampled_from(secretscan.CONFIG_SUFFIXES),
    ordinary=st.lists(
        st.tuples(
            st.sampled_from(["learning_rate", "batch_size", "tokenizer", "max_tokens", "host"]),
            st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=12),
        ),
        max_size=5,
    ),
)
def test_a_configuration_file_of_switches_and_variables_is_no_alarm(
    tmp_path_factory: pytest.TempPathFactory,
    key: str,
    value: str,
    suffix: str,
    ordinary: list[tuple[str, str]],
) -> None:
    """A key that names a password whose value is a switch, a number or a variable holds no
    secret, and an ordinary training config is no alarm."""
    path = tmp_path_factory.mktemp("config") / f"train{suffix}"
    lines = [f"{k} = {v}" for k, v in ordinary] + [f"{key} = {value}"]
    path.write_text("\n".join(lines) + "\n")
    assert secretscan.scan_file(path) is None, path.read_text()


# ------------------------------------------------- a real key in a UTF-32 array (issue 46)
@functools.cache
def _real_key(form: str) -> str:
    """A fresh 2048-bit RSA private key in PEM (``pkcs8``: ``BEGIN PRIVATE KEY``;
    ``traditional``: ``BEGIN RSA PRIVATE KEY``), made for this run and kept in no file of the
    repository: by the cryptography package, else by ``openssl``."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
    except ImportError:
        return _openssl_key(form)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    kind = serialization.PrivateFormat
    return key.private_bytes(
        serialization.Encoding.PEM,
        kind.TraditionalOpenSSL if form == "traditional" else kind.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _openssl_key(form: str) -> str:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("neither the cryptography package nor openssl is here to make a real key")
    made = [openssl, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
    pem = subprocess.run(made, capture_output=True, text=True, check=True, timeout=120).stdout
    if form == "traditional":
        again = [openssl, "pkey", "-traditional"]
        pem = subprocess.run(
            again, input=pem, capture_output=True, text=True, check=True, timeout=60
        ).stdout
    return pem


def _npz_of(arrays: dict[str, np.ndarray], *, compressed: bool = False) -> bytes:
    out = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(out, **arrays)
    return out.getvalue()


def _npy_of(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


_UTF32_KEY_FORMS = {  # name: (file name, its bytes for a key)
    "npy, the key alone": ("keys.npy", lambda k: _npy_of(np.array([k]))),
    "npy, among names": ("keys.npy", lambda k: _npy_of(np.array(["alpha", k, "gamma"]))),
    "npy, a 2-d table": ("table.npy", lambda k: _npy_of(np.array([["id", "7"], ["key", k]]))),
    "npy, big-endian": ("keys.npy", lambda k: _npy_of(np.array([k], dtype=f">U{len(k)}"))),
    "npz": ("arrays.npz", lambda k: _npz_of({"keys": np.array([k]), "ids": np.arange(3)})),
    "npz, compressed": (
        "arrays.npz",
        lambda k: _npz_of({"ids": np.arange(3), "keys": np.array(["x", k])}, compressed=True),
    ),
}


@pytest.mark.item("a real 2048-bit key in a UTF-32 array never ships")
@pytest.mark.parametrize("key_form", ["pkcs8", "traditional"])
@pytest.mark.parametrize("form", sorted(_UTF32_KEY_FORMS))
def test_a_real_key_in_a_utf32_array_is_found(tmp_path: Path, key_form: str, form: str) -> None:
    """NumPy keeps strings as UTF-32: a real key's 1,700 characters fill the file's start
    with zero bytes, which once read it as UTF-16 (and found nothing)."""
    key = _real_key(key_form)
    assert len(key) > 1600 and "PRIVATE KEY-----" in key
    name, make = _UTF32_KEY_FORMS[form]
    path = tmp_path / name
    path.write_bytes(make(key))
    found = secretscan.scan_file(path)
    assert found is not None and "a private key" in found.what, (form, found)
    body = "".join(key.splitlines()[1:-1])
    assert body[:40] not in found.what


@pytest.mark.item("a real 2048-bit key in a UTF-32 array never ships")
def test_an_included_folder_leaves_real_keys_in_arrays_out(tmp_path: Path) -> None:
    key = _real_key("pkcs8")
    data = tmp_path / "data"
    data.mkdir()
    (data / "table.npy").write_bytes(_npy_of(np.arange(100)))
    (data / "keys.npy").write_bytes(_npy_of(np.array(["first", key])))
    (data / "arrays.npz").write_bytes(_npz_of({"keys": np.array([key])}, compressed=True))
    nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    plan = plan_for(nb, "--include data")
    assert plan.context is not None
    names = {e.arcname for e in plan.context.entries}
    assert "app/data/table.npy" in names
    assert not names & {"app/data/keys.npy", "app/data/arrays.npz"}, names
    left = dict(plan.context.left_out)
    assert "private key" in left["data/keys.npy"] and "private key" in left["data/arrays.npz"]


@pytest.mark.item("a real 2048-bit key in a UTF-32 array never ships")
@pytest.mark.parametrize(
    "data",
    [
        _npy_of(np.array(["lorem ipsum dolor sit amet " * 80, "consectetur " * 150])),
        _npz_of({"notes": np.array(["a plain line of text\n" * 90] * 3)}),
    ],
    ids=["npy", "npz"],
)
def test_long_plain_strings_in_utf32_arrays_are_no_alarm(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "notes.npz"
    path.write_bytes(data)
    assert secretscan.scan_file(path) is None


@pytest.mark.item("a real 2048-bit key in a UTF-32 array never ships")
def test_utf16_text_with_no_bom_is_still_read_as_utf16(tmp_path: Path) -> None:
    """The other side of the rule that tells UTF-32 from UTF-16 by its zero bytes."""
    text = "name: trainer\n" * 60 + _real_key("pkcs8")
    path = tmp_path / "notes.txt"
    path.write_bytes(text.encode("utf-16-le"))
    found = secretscan.scan_file(path)
    assert found is not None and found.what == "a private key" and found.line == 61, found
    path.write_bytes(codecs.BOM_UTF32_LE + text.encode("utf-32-le"))
    found = secretscan.scan_file(path)
    assert found is not None and found.line == 61, found
