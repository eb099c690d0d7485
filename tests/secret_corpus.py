"""The planted-secrets corpus: every form people leak, by content, in archives and by name.

Used by ``test_secretscan.py`` (the scanner finds each at its line) and ``test_security.py``
(each one, in a file a notebook reads, stops the plan without quoting the secret).
"""

from __future__ import annotations

import codecs
import io
import json
import zipfile

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
    """A zip of ``readme.txt`` and ``name``, the same bytes in every process: a test's id
    holds them, and pytest's two processes must collect the same ids (a member's default time
    is now, two seconds apart across a boundary)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, text in (("readme.txt", "nothing here"), (name, data)):
            archive.writestr(zipfile.ZipInfo(member, date_time=(2024, 1, 1, 0, 0, 0)), text)
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
