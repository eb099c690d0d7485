"""Secrets never enter a build context: found by name and by content, in whole files.

By name: credential folders and files (``.ssh/``, ``.aws/``, ``.env*``, keys, ``.netrc``,
``.pgpass``, Terraform state, tools' credential files ...). By content, in the whole file,
window by window however large: UTF-8, UTF-16 and UTF-32 text, the strings inside binary data
(NumPy string arrays, pickles), gzip/bzip2/xz streams, zip and tar members, and what base64
blocks decode to, nested up to :data:`NEST_LIMIT` deep. A file that cannot be read whole (broken,
encrypted, too large unpacked) is a finding too: it is never shipped unscanned. Our rules
(private keys, Google Cloud credential JSON, OAuth tokens, AWS, GitHub and Google API keys,
docker registry auths, Jupyter server tokens) beside the detectors of detect-secrets, a
maintained scanner, when it is installed. Every finding in text names its line.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import codecs
import gzip
import io
import lzma
import os
import re
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

SCAN_CHUNK = 8_000_000  # bytes scanned at a time; windows overlap by OVERLAP, so nothing is cut
OVERLAP = 262_144
UNPACK_LIMIT = 4_000_000_000  # bytes one file may come to, unpacked; beyond, it is not shipped
NEST_LIMIT = 4  # archives in archives, packed streams, base64 blocks: how deep
ARCHIVE_MEMBERS = 100_000
NESTED_ARCHIVE_LIMIT = 256_000_000  # a zip inside a packed stream is opened in memory up to this
DETECT_SECRETS_LIMIT = 1_000_000  # detect-secrets runs per line: text files up to this size


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
    ".m2",  # Maven: settings.xml and settings-security.xml hold server passwords
    ".snowflake",  # config.toml, connections.toml
    ".dbt",  # profiles.yml: warehouse passwords
    ".terraform.d",  # credentials.tfrc.json: Terraform Cloud tokens
    ".databricks",
    ".kaggle",
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
    ".databrickscfg": "Databricks credentials",
    "credentials.tfrc.json": "Terraform Cloud credentials",
    "credentials.toml": "credentials file",  # Cargo's, and others'
    "settings-security.xml": "Maven credentials",
    "connections.toml": "Snowflake credentials",
    ".pip.conf": "pip configuration (index credentials)",
    "pip.conf": "pip configuration (index credentials)",
    "pip.ini": "pip configuration (index credentials)",
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
_CONFIGS = {
    "gcloud": "gcloud configuration",
    "gh": "GitHub CLI credentials",
    "hub": "GitHub credentials",
    "op": "1Password CLI configuration",
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
        if lower == ".config" and i + 1 < len(parts) - 1 and parts[i + 1].lower() in _CONFIGS:
            return f"secret: {_CONFIGS[parts[i + 1].lower()]}"
        if lower == ".cargo" and parts[-1].lower().startswith("credentials"):
            return "secret: Cargo credentials"
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
    if name.startswith(("jpserver-", "nbserver-")) and name.endswith(".json"):
        return "secret: Jupyter server credentials"
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
    (re.compile(r"[?&]token=[0-9a-f]{32,}\b"), "a Jupyter server token"),
]


_LITERALS = {
    "OAuth credentials": ("refresh_token", "client_secret"),
    "an AWS secret access key": ("aws_secret_access_key",),
    "an AWS access key id": ("AKIA", "ASIA"),
    "a GitHub token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "a Google API key": ("AIza",),
    "a Google OAuth access token": ("ya29.",),
    "a Slack token": ("xox",),
    "a Hugging Face token": ("hf_",),
    "an OpenAI-style API key": ("sk-",),
    "a kube config": ("clusters:",),
    "cloud credentials": ("gs_secret_access_key",),
    "a Jupyter server token": ("token=",),
}
"""Literals one of which every match of a rule holds: a fast find before the regex."""
_ANY_CASE = {"an AWS secret access key", "cloud credentials"}


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def scan_text(text: str, *, detect: bool = True) -> Finding | None:
    """The first secret in ``text`` by our rules, then (``detect``) by detect-secrets'."""
    best: Finding | None = None
    lowered: str | None = None
    for pattern, what in _RULES:
        literals = _LITERALS.get(what)
        if literals:  # a rule whose match holds a literal: skip it unless the text has one
            if what in _ANY_CASE:
                lowered = text.lower() if lowered is None else lowered
                if not any(x in lowered for x in literals):
                    continue
            elif not any(x in text for x in literals):
                continue
        m = pattern.search(text)
        if m and (best is None or _line_of(text, m.start()) < (best.line or 0)):
            best = Finding(what, _line_of(text, m.start()))
    if best is not None:
        return best
    if detect and len(text) <= DETECT_SECRETS_LIMIT:
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


_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
)
_STRINGS = (  # runs of printable text inside binary data: ASCII, UTF-16 LE, UTF-32 LE
    (re.compile(rb"[\t\n\r\x20-\x7e]{8,}"), "ascii"),
    (re.compile(rb"(?:[\t\n\r\x20-\x7e]\x00){8,}"), "utf-16-le"),
    (re.compile(rb"(?:[\t\n\r\x20-\x7e]\x00\x00\x00){8,}"), "utf-32-le"),
)
_BASE64_LINE = re.compile(r"[A-Za-z0-9+/_-]{40,}={0,2}")
_BASE64_BLOCK = re.compile(r"(?m)(?:^[ \t]*[A-Za-z0-9+/]{16,}={0,2}[ \t]*(?:\n|$)){2,}")


class _Budget:
    """Bytes one file may unpack to, in all (its archives, packed streams and base64 blocks)."""

    def __init__(self) -> None:
        self.left = UNPACK_LIMIT

    def take(self, n: int) -> bool:
        self.left -= n
        return self.left >= 0


class _Unscannable(Exception):
    """The file cannot be read whole: it is not shipped (a finding says why)."""


class _Head:
    """A stream whose first bytes were read to tell its format, readable from its start."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head, self.rest = head, rest

    def read(self, n: int = -1) -> bytes:
        if self.head:
            if n < 0:
                out, self.head = self.head + self.rest.read(), b""
                return out
            out, self.head = self.head[:n], self.head[n:]
            if len(out) < n:
                out += self.rest.read(n - len(out))
            return out
        return self.rest.read(n)


def _printable(data: bytes) -> bool:
    """Mostly text: worth scanning as decoded base64 (random bytes are not)."""
    sample = data[:4096]
    text = sum(1 for b in sample if 32 <= b < 127 or b in (9, 10, 13))
    return (
        text >= 0.85 * len(sample)
        or any(data.startswith(m) for m, _ in _MAGIC)
        or (data[:4] == b"PK\x03\x04")
    )


def _base64_blocks(text: str) -> list[tuple[int, str]]:
    """``(offset, base64 text)`` of each long base64 run, single-line or wrapped."""
    found = [(m.start(), re.sub(r"\s+", "", m.group())) for m in _BASE64_BLOCK.finditer(text)]
    found += [(m.start(), m.group()) for m in _BASE64_LINE.finditer(text)]
    return found[:10_000]


def _decode_base64(block: str) -> bytes | None:
    try:
        if "-" in block or "_" in block:
            return base64.urlsafe_b64decode(block + "=" * (-len(block) % 4))
        return base64.b64decode(block + "=" * (-len(block) % 4))
    except (ValueError, binascii.Error):
        return None


def _scan_window(
    data: bytes, codec: str, depth: int, budget: _Budget, detect: bool
) -> Finding | None:
    """The first secret in one window of a stream: its text, the strings inside binary data,
    and what its base64 blocks decode to."""
    binary = codec == "utf-8" and b"\x00" in data
    if binary:  # what a secret in binary data can be: its printable runs (scanned, decoded)
        runs = [(m.group().decode("ascii"), m.start()) for m in _STRINGS[0][0].finditer(data)]
        text = "\n".join(run for run, _ in runs)
        for pattern, encoding in _STRINGS[1:]:
            wide = [m.group().decode(encoding, errors="replace") for m in pattern.finditer(data)]
            found = scan_text("\n".join(wide), detect=False) if wide else None
            if found is not None:
                return Finding(f"{found.what} (in binary data)")
    else:
        text = data.decode(codec, errors="replace")
    found = scan_text(text, detect=detect and not binary)
    if found is not None:
        return Finding(f"{found.what} (in binary data)") if binary else found
    if depth >= NEST_LIMIT:
        return None
    for offset, block in _base64_blocks(text):
        decoded = _decode_base64(block)
        if decoded is None or len(decoded) < 24 or not _printable(decoded):
            continue
        if not budget.take(len(decoded)):
            raise _Unscannable(f"it unpacks to over {UNPACK_LIMIT // 1_000_000} MB")
        inner = _scan_stream(io.BytesIO(decoded), depth + 1, budget)
        if inner is not None:
            line = None if binary else _line_of(text, offset)
            return Finding(f"{inner.what} (base64-encoded)", line)
    return None


def _scan_plain(f: Any, head: bytes, depth: int, budget: _Budget) -> Finding | None:
    """Scan a stream as text (or binary with strings in it), window by window, whole."""
    codec, rest_codec = _codecs(head)
    newline = "\n".encode(rest_codec)
    lines_before, tail, first = 0, b"", True
    stream = _Head(head, f)
    while True:
        chunk = stream.read(SCAN_CHUNK)
        if not chunk and not first:
            return None
        if not budget.take(len(chunk)):
            raise _Unscannable(f"it unpacks to over {UNPACK_LIMIT // 1_000_000} MB")
        window = tail + chunk
        whole = first and len(chunk) < SCAN_CHUNK
        detect = whole and len(window) <= DETECT_SECRETS_LIMIT
        found = _scan_window(window, codec if first else rest_codec, depth, budget, detect)
        if found is not None:
            line = None if found.line is None else lines_before + found.line
            return Finding(found.what, line)
        if whole or not chunk:
            return None
        keep = len(window) - OVERLAP
        keep -= keep % 4  # UTF-16/32 stay aligned
        lines_before += window[:keep].count(newline)
        tail, first = window[keep:], False


def _codecs(head: bytes) -> tuple[str, str]:
    """The text encoding of a stream by its start: UTF-32/16 by their BOM, UTF-16 LE by its
    zero bytes, else UTF-8 (undecodable bytes replaced); for its first window and the rest.

    Text with no BOM whose every other byte is zero is UTF-16 LE, unless the bytes between
    those are mostly zero too: then it is UTF-32 (a NumPy string array, say), scanned as binary
    data, whose UTF-32 strings are found wherever they start."""
    for bom, codec, rest in (
        (codecs.BOM_UTF32_LE, "utf-32", "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32", "utf-32-be"),
        (codecs.BOM_UTF16_LE, "utf-16", "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16", "utf-16-be"),
    ):
        if head.startswith(bom):
            return codec, rest
    sample = head[:2000]
    odd_zeros, even_zeros = sample[1::2].count(0), sample[0::2].count(0)
    if sample.count(0) > 200 and odd_zeros > 500 and even_zeros < len(sample) // 8:
        return "utf-16-le", "utf-16-le"  # UTF-16 LE, no BOM (UTF-32 has zeros in both)
    return "utf-8", "utf-8"


def _scan_zip(head: bytes, f: Any, depth: int, budget: _Budget) -> Finding | None:
    if not isinstance(f, (io.BufferedReader, io.BytesIO)):  # inside another: open it in memory
        data = _Head(head, f).read(NESTED_ARCHIVE_LIMIT + 1)
        if len(data) > NESTED_ARCHIVE_LIMIT:
            raise _Unscannable("it holds a zip archive too large to open inside another")
        f = io.BytesIO(data)
    f.seek(0)
    try:
        archive = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, ValueError):
        f.seek(0)
        return _scan_plain(f, f.read(4096), depth, budget)
    with archive:
        members = archive.infolist()
        if len(members) > ARCHIVE_MEMBERS:
            raise _Unscannable(f"an archive of over {ARCHIVE_MEMBERS} members")
        for info in members:
            if info.is_dir():
                continue
            named = secret_reason(info.filename)
            if named:
                return Finding(f"{named.removeprefix('secret: ')} in the archive ({info.filename})")
            try:
                with archive.open(info) as member:
                    found = _scan_stream(member, depth + 1, budget)
            except RuntimeError:  # encrypted
                raise _Unscannable(f"{info.filename} in it is encrypted") from None
            except (zipfile.BadZipFile, ValueError, OSError, EOFError, zlib.error):
                raise _Unscannable(f"{info.filename} in it cannot be read") from None
            if found:
                return Finding(f"{found.what} in the archive ({info.filename})")
    return None


def _scan_tar(f: Any, depth: int, budget: _Budget) -> Finding | None:
    try:
        with tarfile.open(fileobj=f, mode="r|") as archive:
            for count, member in enumerate(archive):
                if count >= ARCHIVE_MEMBERS:
                    raise _Unscannable(f"an archive of over {ARCHIVE_MEMBERS} members")
                named = secret_reason(member.name)
                if named:
                    return Finding(
                        f"{named.removeprefix('secret: ')} in the archive ({member.name})"
                    )
                if not member.isfile():
                    continue
                extracted = archive.extractfile(member)
                if extracted is None:
                    continue
                found = _scan_stream(extracted, depth + 1, budget)
                if found:
                    return Finding(f"{found.what} in the archive ({member.name})")
    except (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise _Unscannable(f"its tar archive cannot be read ({exc})") from None
    return None


def _unpacker(kind: str, source: Any) -> Any:
    """A reader of the unpacked bytes of a gzip, bzip2 or xz stream."""
    if kind == "gzip":
        return gzip.GzipFile(fileobj=source, mode="rb")
    if kind == "bzip2":
        return bz2.BZ2File(source, mode="rb")
    return lzma.LZMAFile(source, mode="rb")


def _scan_stream(f: Any, depth: int, budget: _Budget) -> Finding | None:
    """The first secret in a stream, opened by its format: gzip, bzip2 and xz are unpacked,
    zip and tar archives opened member by member, the rest scanned as text and binary."""
    head = f.read(4096)
    if depth > NEST_LIMIT:
        raise _Unscannable(f"it nests archives over {NEST_LIMIT} deep")
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            source: Any = _Head(head, f)
            try:
                with _unpacker(kind, source) as unpacked:
                    found = _scan_stream(unpacked, depth + 1, budget)
            except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError):
                raise _Unscannable(f"its {kind} data cannot be unpacked") from None
            return (
                None if found is None else Finding(f"{found.what} (packed with {kind})", found.line)
            )
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return _scan_zip(head, f, depth, budget)
    if len(head) > 262 and head[257:262] == b"ustar":
        return _scan_tar(_Head(head, f), depth, budget)
    return _scan_plain(f, head, depth, budget)


def scan_bytes(data: bytes) -> Finding | None:
    """The first secret in a file's bytes (see the module docstring)."""
    try:
        return _scan_stream(io.BytesIO(data), 0, _Budget())
    except _Unscannable as exc:
        return Finding(f"a file that cannot be scanned whole: {exc}")


_SCANNED: dict[tuple[str, int, int, int], Finding | None] = {}

CONFIG_SUFFIXES = (".ini", ".cfg", ".conf", ".cnf", ".properties")
"""Configuration files whose ``key = value`` lines are read for passwords and keys by name
(``db.ini``'s ``password = ...``): detect-secrets' keyword detector, told the file's type."""
_NOT_A_SECRET = re.compile(
    r"(?i)^(|none|null|nil|true|false|yes|no|on|off|\d+|<[^>]*>|\$\{?\w+\}?.*|%\(\w+\)s.*)$"
)
"""A value a keyword names that is not a secret: a switch, a number, a ``<placeholder>``, a
variable (``${DB_PASSWORD}``, ``$dir/key.pem``, ``%(name)s``)."""
_KEY_VALUE = re.compile(r"^\s*[^=:#;]+[=:]\s*['\"]?(?P<value>[^'\"#;]*)")
_SECRET_KEY = re.compile(
    r"(?i)^\s*(?:[\w.-]*[_.-])?(password|passwd|pwd|secret|token|(api|secret|private|access)"
    r"[_-]?key)\s*[=:]"
)
"""Our rule beside detect-secrets': a key whose last word names a password or a key (the
detector misses some values, such as ``password=:00000``)."""
_COMMENT = ("#", ";", "!")


def _keyword_in_config(path: Path) -> Finding | None:
    """A password, secret or key assigned in a small configuration file (its ``key = value``
    lines), by our :data:`_SECRET_KEY` and detect-secrets' keyword detector (told the file's
    type) when it is installed; a value that is a switch, a number or a variable's name is
    not one."""
    try:
        with path.open("rb") as f:
            data = f.read(DETECT_SECRETS_LIMIT + 1)
    except OSError:
        return None
    if len(data) > DETECT_SECRETS_LIMIT:
        return None  # the whole-file rules have scanned it; a config file is small
    lines = [
        "" if line.lstrip().startswith(_COMMENT) else line
        for line in data.decode("utf-8", "replace").splitlines()
    ]
    keyed = {n for n, line in enumerate(lines, 1) if _SECRET_KEY.match(line)}
    keyed |= _keyword_lines(path.name, lines)
    for number in sorted(keyed):
        m = _KEY_VALUE.match(lines[number - 1])
        if m is None or not _NOT_A_SECRET.match(m.group("value").strip()):
            return Finding("a password or key in a configuration file", number)
    return None


def _keyword_lines(name: str, lines: list[str]) -> set[int]:
    """The lines detect-secrets' keyword detector flags in a file called ``name``."""
    try:
        from detect_secrets.plugins.keyword import KeywordDetector
        from detect_secrets.settings import transient_settings
    except ImportError:  # an optional extra: our rule alone
        return set()
    detector = KeywordDetector()
    try:
        with transient_settings({"plugins_used": [{"name": "KeywordDetector"}]}):
            return {
                n
                for n, line in enumerate(lines, 1)
                if detector.analyze_line(filename=name, line=line, line_number=n)
            }
    except Exception:  # a detector that fails on odd input: our rule has run
        return set()


def scan_file(path: Path) -> Finding | None:
    """The first secret in a regular file, read whole (packed streams and archives opened);
    a file that cannot be read whole is a finding too, so it is never shipped unscanned.
    Remembered by (path, size, mtime, inode) for this process, as plans are made again often."""
    from .files import KIND

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return (
                None
                if stat.S_ISDIR(st.st_mode)
                else Finding(
                    f"{KIND.get(stat.S_IFMT(st.st_mode), 'not a regular file')}, not scanned"
                )
            )
        key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
        if key not in _SCANNED:
            try:
                _SCANNED[key] = _scan_stream(f, 0, _Budget())
                if _SCANNED[key] is None and path.name.lower().endswith(CONFIG_SUFFIXES):
                    _SCANNED[key] = _keyword_in_config(path)
            except _Unscannable as exc:
                _SCANNED[key] = Finding(f"a file that cannot be scanned whole: {exc}")
            except OSError:
                return None
        return _SCANNED[key]
