"""Secrets by content, in whole files, with a planted corpus of the forms people leak.

Every form is written under a neutral file name (so only its content can give it away), found,
and placed at its line. Counted: the suite prints forms tried and forms held.
"""

from __future__ import annotations

import codecs
import io
import json
import zipfile
from pathlib import Path

import pytest
from jobutil import plan_for, write_notebook

from tfc_jupyter import secretscan
from tfc_jupyter.package import SecretInFile

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8PLANTED"
GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
GOOGLE_KEY = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
SA = json.dumps({"type": "service_account", "private_key_id": "abc", "client_email": "x@y"})
OAUTH = json.dumps({"refresh_token": "1//0gPLANTEDtoken", "client_id": "c"})

# (form, file content, line of the secret)
CONTENT_FORMS: list[tuple[str, str | bytes, int]] = [
    (
        "env assignment in code",
        f'import os\nos.environ["AWS_SECRET_ACCESS_KEY"] = "{AWS_SECRET}"\n',
        2,
    ),
    ("AWS key in YAML", f"aws:\n  aws_secret_access_key: {AWS_SECRET}\n", 2),
    ("AWS key in a dict", f'creds = {{"aws_secret_access_key": "{AWS_SECRET}"}}\n', 1),
    ("AWS key in ini", f"[default]\naws_secret_access_key = {AWS_SECRET}\n", 2),
    ("AWS key, upper case", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n", 1),
    ("AWS access key id", "key_id = 'AKIAIOSFODNN7PLANTED'\n", 1),
    ("AWS session key id", "x\nsession = 'ASIAIOSFODNN7PLANTED'\n", 2),
    ("GitHub classic token", f"GITHUB_TOKEN={GH}\n", 1),
    ("GitHub fine-grained token", "t = 'github_pat_" + "A" * 22 + "_" + "b" * 59 + "'\n", 1),
    ("GitHub app token", "a\nb\ntoken: ghs_" + "x" * 36 + "\n", 3),
    ("Google API key", f"const key = '{GOOGLE_KEY}';\n", 1),
    ("Google OAuth access token", "auth = 'Bearer ya29.a0AfH6SMBPLANTEDtokenvalue0123'\n", 1),
    ("service-account key", SA, 1),
    ("service-account key, pretty", json.dumps(json.loads(SA), indent=2), 2),
    ("authorized user", json.dumps({"type": "authorized_user", "client_secret": "s"}), 1),
    ("external account", json.dumps({"type": "external_account", "audience": "a"}), 1),
    ("OAuth refresh token", OAUTH, 1),
    ("OAuth client secret", json.dumps({"installed": {"client_secret": "GOCSPX-abc"}}), 1),
    (
        "notebook output with a refresh token",
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "outputs": [{"text": ['{"refresh_token": "1//0gSECRET"}']}],
                        "source": "print(creds)",
                    }
                ]
            },
            indent=1,
        ),
        8,
    ),
    ("RSA private key", PEM, 1),
    ("EC private key", PEM.replace("RSA", "EC"), 1),
    ("OpenSSH private key", PEM.replace("RSA", "OPENSSH"), 1),
    ("PGP private key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQ\n", 1),
    ("key after the first MiB", "x = 1\n" * 200_000 + PEM, 200_001),
    ("UTF-16 service-account key", codecs.BOM_UTF16_LE + SA.encode("utf-16-le"), 1),
    ("UTF-32 private key", codecs.BOM_UTF32_LE + PEM.encode("utf-32-le"), 1),
    ("UTF-8 BOM JSON", codecs.BOM_UTF8 + SA.encode(), 1),
    ("docker config.json", json.dumps({"auths": {"r.io": {"auth": "dXNlcjpwYXNzd29yZA=="}}}), 1),
    ("kube config", "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n", 2),
    (".pgpass line", "localhost:5432:db:admin:PLANTEDpassword\n", 1),
    ("Slack token", "SLACK=xoxb-1234567890-PLANTEDslacktoken\n", 1),
    ("Hugging Face token", "HF_TOKEN = 'hf_" + "a1B2" * 9 + "'\n", 1),
    ("OpenAI key", "openai.api_key = 'sk-proj-" + "A1b2" * 10 + "'\n", 1),
    ("boto gs key", "[Credentials]\ngs_secret_access_key = PLANTEDboto\n", 2),
    ("Stripe key (detect-secrets)", "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'\n", 1),
    ("basic auth URL (detect-secrets)", "url = 'https://admin:hunter2pass@db.example.com/x'\n", 1),
    ("npm token (detect-secrets)", "//registry.npmjs.org/:_authToken=npm_" + "a" * 36 + "\n", 1),
    ("PyPI token (detect-secrets)", "password = pypi-AgEIcHlwaS5vcmc" + "A" * 80 + "\n", 1),
    ("Twilio key (detect-secrets)", "TWILIO = 'SK" + "0123456789abcdef" * 2 + "'\n", 1),
    (
        "JWT (detect-secrets)",
        "jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'\n",
        1,
    ),
]


def _zip_of(name: str, data: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "nothing here")
        archive.writestr(name, data)
    return buffer.getvalue()


ARCHIVE_FORMS = [
    ("a zip holding an SSH key", _zip_of("keys/id_rsa", "anything")),
    ("a zip holding a service-account key by content", _zip_of("data/x.json", SA)),
    ("a zip holding a .env", _zip_of("app/.env", "TOKEN=x")),
]

NAME_FORMS = [
    ".env",
    "env.production",
    ".env.local",
    "git-credentials.bak",
    ".git-credentials.old",
    ".pgpass",
    "terraform.tfstate",
    "prod.tfstate.backup",
    "id_ed25519",
    "server.pem",
    "kubeconfig",
    "credentials",
    "secrets.yaml",
    ".vault-token",
]

CLEAN = [
    "a,b,c\n1,2,3\n" * 1000,
    "import tensorflow as tf\nmodel = tf.keras.Sequential()\nmodel.fit(x, y)\n",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n",
    json.dumps({"type": "model_config", "layers": [1, 2, 3]}),
    "password = os.environ['DB_PASSWORD']\n",
    "url = 'https://example.com/data.csv'\n",
]

_tally = {"tried": 0, "held": 0}


@pytest.fixture(scope="module", autouse=True)
def _count() -> object:
    yield
    print(f"\n[secretscan] planted forms tried {_tally['tried']}, held {_tally['held']}")


@pytest.mark.parametrize(("form", "content", "line"), CONTENT_FORMS, ids=lambda v: str(v)[:40])
def test_content_forms_are_found_at_their_line(
    tmp_path: Path, form: str, content: str | bytes, line: int
) -> None:
    _tally["tried"] += 1
    path = tmp_path / "notes.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    found = secretscan.scan_file(path)
    assert found is not None, form
    assert found.line == line, (form, found)
    _tally["held"] += 1


@pytest.mark.parametrize(("form", "data"), ARCHIVE_FORMS, ids=lambda v: str(v)[:40])
def test_archives_are_opened(tmp_path: Path, form: str, data: bytes) -> None:
    _tally["tried"] += 1
    path = tmp_path / "bundle.zip"
    path.write_bytes(data)
    found = secretscan.scan_file(path)
    assert found is not None and "in the archive" in found.what, form
    _tally["held"] += 1


@pytest.mark.parametrize("name", NAME_FORMS)
def test_names_are_secrets(name: str) -> None:
    _tally["tried"] += 1
    assert secretscan.secret_reason(f"project/{name}") is not None
    _tally["held"] += 1


def test_the_corpus_has_forty_forms() -> None:
    assert len(CONTENT_FORMS) + len(ARCHIVE_FORMS) + len(NAME_FORMS) >= 40


@pytest.mark.parametrize("content", CLEAN, ids=range(len(CLEAN)))
def test_no_false_alarm_on_ordinary_files(tmp_path: Path, content: str) -> None:
    path = tmp_path / "file.txt"
    path.write_text(content)
    assert secretscan.scan_file(path) is None
    assert (
        secretscan.secret_reason("env.py") is None
        and secretscan.secret_reason(".env.example") is None
    )


def test_a_named_file_with_a_secret_stops_the_plan(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(f"bucket: b\naws_secret_access_key: {AWS_SECRET}\n")
    nb = write_notebook(tmp_path / "nb.ipynb", "%%tfc_run --backend docker --dry-run\nx = 1")
    with pytest.raises(SecretInFile) as info:
        plan_for(nb, "--include config.yaml")
    text = str(info.value)
    assert "config.yaml, line 2 holds a secret (an AWS secret access key)" in text
    assert AWS_SECRET not in text and "Fix:" in text


def test_a_file_the_code_reads_with_a_secret_stops_the_plan(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(SA)
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "%%tfc_run --backend docker --dry-run\nimport json\ncfg = json.load(open('settings.json'))",
    )
    with pytest.raises(SecretInFile, match=r"settings\.json, line 1 holds a secret"):
        plan_for(nb)


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
