"""Secrets never enter a build context: found by name and by content, in whole files.

By name: credential folders and files (``.ssh/``, ``.aws/``, ``.env*``, keys, ``.netrc``,
``.pgpass``, Terraform state ...). By content, in the whole file (UTF-8, UTF-16 and UTF-32 text,
and the members of zip archives): our rules (private keys, Google Cloud credential JSON, OAuth
tokens, AWS, GitHub and Google API keys, docker registry auths) beside the detectors of
detect-secrets, a maintained scanner, when it is installed. Every finding names its line.
"""

from __future__ import annotations

import codecs
import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

SCAN_LIMIT = 64_000_000  # bytes of one file scanned with every rule; larger files: by name only
DETECT_SECRETS_LIMIT = 1_000_000  # detect-secrets runs per line: text files up to this size
ZIP_MEMBERS = 200
ZIP_MEMBER_LIMIT = 8_000_000


_NOT_ENV_FILES = (".example", ".sample", ".template", ".py", ".ipynb", ".md")


@dataclass(frozen=True)
class Finding:
    """A secret in a file: what it is, and the 1-based line (None when not line-shaped)."""

    what: str
    line: int | None = None


_SECRET_DIRS = {
    ".git",
    ".ssh",
    ".aws",
    ".gnupg",
    ".kube",
    ".docker",
    ".azure",
    ".hg",
    ".svn",
    ".huggingface",
    ".gcloud",
    ".terraform",
    ".password-store",
}
_SECRET_NAMES = {
    ".env": ".env file",
    ".envrc": ".env file",
    ".netrc": "netrc credentials",
    "_netrc": "netrc credentials",
    ".npmrc": "npm credentials",
    ".pypirc": "PyPI credentials",
    ".git-credentials": "git credentials",
    ".htpasswd": "password file",
    ".boto": "cloud credentials",
    ".s3cfg": "cloud credentials",
    ".dockercfg": "registry credentials",
    "kubeconfig": "kube config",
    "application_default_credentials.json": "Google Cloud credentials",
    "credentials.db": "Google Cloud credentials",
    "access_tokens.db": "Google Cloud credentials",
    "kaggle.json": "Kaggle API key",
    ".pgpass": "PostgreSQL passwords",
    ".my.cnf": "MySQL credentials",
    "credentials": "credentials file",
    "credentials.json": "credentials file",
    "secrets.json": "secrets file",
    "secrets.yaml": "secrets file",
    "secrets.yml": "secrets file",
    "secrets.toml": "secrets file",
    ".vault-token": "Vault token",
}
_SECRET_SUFFIXES = {
    ".pem": "private key or certificate (*.pem)",
    ".key": "private key (*.key)",
    ".p12": "key store (*.p12)",
    ".pfx": "key store (*.pfx)",
    ".jks": "key store (*.jks)",
    ".keystore": "key store",
    ".ppk": "private key (*.ppk)",
    ".kubeconfig": "kube config",
    ".env": ".env file",
}
_SSH_KEY = re.compile(r"^id_(rsa|dsa|ecdsa|ed25519)(_sk)?(\..*)?$")


def secret_reason(rel: str, path: Path | None = None) -> str | None:
    """Why the file at ``rel`` (path inside the notebook folder) is a secret, or None.

    By name: credential folders (``.git``, ``.ssh``, ``.aws``, ``.config/gcloud`` ...), ``.env``,
    keys (``*.pem``, ``*.key``, ``*.p12``, ``id_rsa*``), ``.netrc``, ``.npmrc``, ``.pypirc``, kube
    configs, ``kaggle.json``, Hugging Face tokens, ``client_secret*.json``. By content (first MiB,
    when ``path`` is given): private-key blocks, Google Cloud credential JSON (``"type":
    "service_account"`` ...), OAuth JSON (``refresh_token``, ``client_secret``), kube configs, AWS
    credentials.
    """
    parts = rel.split("/")
    for i, part in enumerate(parts[:-1]):
        lower = part.lower()
        if lower in _SECRET_DIRS:
            return f"secret: {part}/ folder"
        if lower == ".config" and i + 1 < len(parts) - 1 and parts[i + 1].lower() == "gcloud":
            return "secret: gcloud configuration"
    name = parts[-1].lower()
    if name in _SECRET_DIRS:
        return f"secret: {parts[-1]} folder"
    if name in _SECRET_NAMES:
        return f"secret: {_SECRET_NAMES[name]}"
    if name.startswith((".env.", "env.")) and not name.endswith(_NOT_ENV_FILES):
        return "secret: .env file"
    if name.startswith((".git-credentials", "git-credentials")):
        return "secret: git credentials"
    if name.startswith("terraform.tfstate") or name.endswith((".tfstate", ".tfstate.backup")):
        return "secret: Terraform state (holds resource secrets)"
    if name == "token" and len(parts) > 1 and parts[-2].lower() == "huggingface":
        return "secret: Hugging Face token"
    if name.startswith("client_secret") and name.endswith(".json"):
        return "secret: OAuth client secret"
    if _SSH_KEY.match(name):
        return "secret: SSH key"
    for suffix, what in _SECRET_SUFFIXES.items():
        if name.endswith(suffix):
            return f"secret: {what}"
    if path is not None:
        found = scan_file(path)
        if found is not None:
            return f"secret: {found.what}" + (f" (line {found.line})" if found.line else "")
    return None


# Content rules: (pattern, what). Each is searched in the whole decoded text.
_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"), "a private key"),
    (
        re.compile(
            r'"type"\s*:\s*"(?:service_account|authorized_user|external_account|'
            r'impersonated_service_account)"'
        ),
        "Google Cloud credentials (JSON)",
    ),
    # (also escaped inside a JSON string: a notebook output that printed the credentials)
    (
        re.compile(r'\\?"(?:refresh_token|client_secret)\\?"\s*:\s*\\?"[^"\\]+'),
        "OAuth credentials",
    ),
    (
        re.compile(
            r"(?im)aws_secret_access_key[\"'\]]*\s*[:=]+\s*"
            r"(?:[\"'][^\"'\s]{4,}[\"']|[^\s\"'#(\[{$<]{4,}\s*$)"
        ),
        "an AWS secret access key",
    ),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key id"),
    (
        re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}"),
        "a GitHub token",
    ),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), "a Google API key"),
    (re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}"), "a Google OAuth access token"),
    (re.compile(r"\bxox[abposr]-[0-9A-Za-z-]{10,}"), "a Slack token"),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), "a Hugging Face token"),
    (re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}"), "an OpenAI-style API key"),
    (re.compile(r'"auths"\s*:\s*\{[^}]*"auth"\s*:\s*"[A-Za-z0-9+/=]{8,}'), "registry credentials"),
    (re.compile(r"(?m)^kind:\s*Config\s*$(?s:.*)^clusters:"), "a kube config"),
    (re.compile(r"(?m)^[^:#\s]+:\d+:[^:\s]+:[^:\s]+:\S+$"), "PostgreSQL passwords (.pgpass)"),
    (re.compile(r"(?i)gs_secret_access_key\s*=\s*\S+"), "cloud credentials"),
]


def _decode(data: bytes) -> str:
    """Text of a file: UTF-32/16 by their BOM, else UTF-8 (undecodable bytes replaced)."""
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    if data[:2000].count(b"\0") > 200 and data[1:2000:2].count(0) > 500:  # UTF-16 LE, no BOM
        return data.decode("utf-16-le", errors="replace")
    return data.decode("utf-8", errors="replace")


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def scan_text(text: str) -> Finding | None:
    """The first secret in ``text`` by our rules, then by detect-secrets' detectors."""
    best: Finding | None = None
    for pattern, what in _RULES:
        m = pattern.search(text)
        if m and (best is None or _line_of(text, m.start()) < (best.line or 0)):
            best = Finding(what, _line_of(text, m.start()))
    if best is not None:
        return best
    if len(text) <= DETECT_SECRETS_LIMIT:
        return _detect_secrets(text)
    return None


# detect-secrets' detectors with few false positives on data files (no entropy or keyword ones).
_DETECTORS = (
    "AWSKeyDetector",
    "ArtifactoryDetector",
    "AzureStorageKeyDetector",
    "BasicAuthDetector",
    "CloudantDetector",
    "DiscordBotTokenDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "JwtTokenDetector",
    "MailchimpDetector",
    "NpmDetector",
    "OpenAIDetector",
    "PrivateKeyDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SoftlayerDetector",
    "SquareOAuthDetector",
    "StripeDetector",
    "TelegramBotTokenDetector",
    "TwilioKeyDetector",
)


def _detect_secrets(text: str) -> Finding | None:
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import transient_settings
    except ImportError:  # an optional extra: our rules still apply
        return None
    config = {"plugins_used": [{"name": name} for name in _DETECTORS]}
    try:
        with transient_settings(config):
            for number, line in enumerate(text.splitlines(), start=1):
                for secret in scan_line(line):
                    return Finding(f"{secret.type} (detect-secrets)", number)
    except Exception:  # a detector that fails on odd input: our rules have run already
        return None
    return None


def _scan_zip(data: bytes) -> Finding | None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError):
        return None
    with archive:
        for info in archive.infolist()[:ZIP_MEMBERS]:
            if info.is_dir():
                continue
            named = secret_reason(info.filename)
            if named:
                return Finding(f"{named.removeprefix('secret: ')} in the archive ({info.filename})")
            if info.file_size > ZIP_MEMBER_LIMIT:
                continue
            try:
                inner = archive.read(info)
            except (zipfile.BadZipFile, RuntimeError, ValueError, OSError):
                continue
            found = scan_text(_decode(inner))
            if found:
                return Finding(f"{found.what} in the archive ({info.filename})")
    return None


def scan_bytes(data: bytes) -> Finding | None:
    """The first secret in a file's bytes (see the module docstring)."""
    if data[:4] == b"PK\x03\x04":
        return _scan_zip(data)
    return scan_text(_decode(data))


_SCANNED: dict[tuple[str, int, int, int], Finding | None] = {}


def scan_file(path: Path) -> Finding | None:
    """The first secret in a regular file of at most :data:`SCAN_LIMIT` bytes (None beyond);
    remembered by (path, size, mtime, inode) for this process, as plans are made again often."""
    from .files import UnsafeFile, read_regular

    try:
        st = path.stat()
    except OSError:
        return None
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _SCANNED:
        try:
            data = read_regular(path, SCAN_LIMIT, "file")
        except (OSError, UnsafeFile):
            return None
        _SCANNED[key] = scan_bytes(data)
    return _SCANNED[key]
