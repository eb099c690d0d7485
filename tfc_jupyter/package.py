"""The build context: exactly what goes into a job's image, and the tag that names it.

tfc.run packed the whole folder of the notebook (a virtualenv in it meant hours). Here the context
holds only the converted script and its source map, ``tfc_runtime``, the requirements, and what
the user declares with ``--include PATH``; a ``.tfcignore`` (gitignore syntax) next to the
notebook trims it further, and secrets never enter it, declared or not: :func:`secret_reason`
names every file it leaves out. A context over the size limit (``TFC_MAX_CONTEXT_MB``, 500 MB)
stops with one line listing the largest files.

The Dockerfile orders layers from least to most often changed (parent image, system packages from
an ``apt.txt`` next to the notebook, requirements, runtime, declared files, the script), so a code
change rebuilds one thin layer. Requirements are installed in a throw-away build stage: the pip
CA bundle (``PIP_CERT``) and the requirements file never reach the image. The image tag is a hash
of everything in the context, Dockerfile included, so an unchanged notebook names an image that
already exists. Nothing here imports docker; :mod:`tfc_jupyter.build` builds and pushes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from . import images, vertex_request
from .errors import SpecError
from .files import UnsafeFile, file_kind, read_regular
from .requirements import NO_DEPS_PREFIX, RESOLVER_OPTIONS
from .spec import JobSpec

if TYPE_CHECKING:
    from .plan import Plan

DEFAULT_LIMIT_MB = 500
IGNORE_FILE = ".tfcignore"
APT_FILE = "apt.txt"
RUNTIME_PATH = "/opt/tfc"
EPOCH = 315532800  # 1980-01-01: fixed mtimes make identical inputs identical layers
_SNIFF_BYTES = 1 << 20  # content checks read at most the first MiB of a file

# --------------------------------------------------------------------------- secrets
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
_PRIVATE_KEY = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_CREDENTIAL_TYPES = {
    "service_account": "service-account key",
    "authorized_user": "Google Cloud user credentials",
    "external_account": "Google Cloud credentials",
    "impersonated_service_account": "Google Cloud credentials",
}
_KUBE = re.compile(rb"^kind:\s*Config\s*$", re.MULTILINE)
_AWS = re.compile(rb"aws_secret_access_key\s*=", re.IGNORECASE)
_OAUTH = re.compile(rb'"(?:refresh_token|client_secret)"\s*:')  # OAuth tokens, client secrets


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
    if name.startswith(".env."):
        return "secret: .env file"
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
        return _secret_content(path)
    return None


def _secret_content(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return None
    if _PRIVATE_KEY.search(head):
        return "secret: contains a private key"
    head = head.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 BOM
    if b'"type"' in head and head.lstrip()[:1] == b"{":
        try:
            kind = json.loads(head.decode("utf-8", errors="replace")).get("type")
        except (ValueError, AttributeError):
            kind = next(
                (k for k in _CREDENTIAL_TYPES if re.search(rf'"type"\s*:\s*"{k}"'.encode(), head)),
                None,
            )
        if isinstance(kind, str) and kind in _CREDENTIAL_TYPES:
            return f"secret: {_CREDENTIAL_TYPES[kind]} (JSON)"
    if _OAUTH.search(head) and head.lstrip()[:1] == b"{":
        return "secret: OAuth credentials (JSON)"
    if _KUBE.search(head) and b"clusters:" in head:
        return "secret: kube config"
    if _AWS.search(head):
        return "secret: AWS credentials"
    return None


# --------------------------------------------------------------------------- context
@dataclass(frozen=True)
class Entry:
    """One file of the context: where it goes, its size and digest, and where it comes from."""

    arcname: str
    size: int
    digest: str
    source: Path | None = None  # a file on disk ...
    data: bytes | None = None  # ... or generated content
    mode: int = 0o644


@dataclass
class Context:
    """A build context: its files, its Dockerfile, and what was left out (and why)."""

    entries: list[Entry]
    dockerfile: str
    parent: str
    left_out: list[tuple[str, str]] = field(default_factory=list)
    declared: int = 0  # files that came from --include (or were found by planning)
    auto: list[str] = field(default_factory=list)  # paths planning found the code reads
    auto_over: tuple[int, list[str]] | None = None  # (bytes, paths) found but over the limit

    @property
    def size(self) -> int:
        """Bytes of file content in the context."""
        return sum(e.size for e in self.entries) + len(self.dockerfile)

    @property
    def tag(self) -> str:
        """16 hex digits naming exactly this content (the image tag)."""
        digest = hashlib.sha256(self.dockerfile.encode())
        for entry in sorted(self.entries, key=lambda e: e.arcname):
            digest.update(f"\0{entry.arcname}\0{entry.mode:o}\0{entry.digest}".encode())
        return digest.hexdigest()[:16]

    def largest(self, n: int = 5) -> list[Entry]:
        """The ``n`` largest files."""
        return sorted(self.entries, key=lambda e: e.size, reverse=True)[:n]

    def summary(self, limit: int | None = 8) -> str:
        """``7 files, 48 KB (2 declared); left out: .env (secret: .env file)``."""
        text = f"{len(self.entries) + 1} files, {human_size(self.size)}"
        if self.declared:
            text += f" ({self.declared} declared)"
        if self.left_out:
            text += "; left out: " + left_out_text(self.left_out, limit)
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (plan summary, job folder)."""
        return {
            "tag": self.tag,
            "files": len(self.entries) + 1,
            "bytes": self.size,
            "left_out": [{"path": p, "reason": why} for p, why in self.left_out],
            "auto_included": list(self.auto),
        }

    def write_tar(self, fileobj: BinaryIO) -> None:
        """The context as an uncompressed tar, reproducible (fixed owners and times)."""
        with tarfile.open(fileobj=fileobj, mode="w", format=tarfile.PAX_FORMAT) as tar:
            self._add(tar, "Dockerfile", io.BytesIO(self.dockerfile.encode()), 0o644)
            for entry in sorted(self.entries, key=lambda e: e.arcname):
                if entry.data is not None:
                    self._add(tar, entry.arcname, io.BytesIO(entry.data), entry.mode, entry.size)
                else:
                    assert entry.source is not None
                    with open(entry.source, "rb") as fh:
                        self._add(tar, entry.arcname, fh, entry.mode, entry.size)

    @staticmethod
    def _add(
        tar: tarfile.TarFile, name: str, fh: BinaryIO, mode: int, size: int | None = None
    ) -> None:
        info = tarfile.TarInfo(name)
        info.size = size if size is not None else len(fh.getbuffer())  # type: ignore[attr-defined]
        info.mode, info.mtime, info.uid, info.gid = mode, EPOCH, 0, 0
        tar.addfile(info, fh)

    def tar_bytes(self) -> bytes:
        """The tar in memory (small contexts, tests)."""
        buf = io.BytesIO()
        self.write_tar(buf)
        return buf.getvalue()


def left_out_text(left_out: list[tuple[str, str]], limit: int | None = 8) -> str:
    """``a (why), b (why) and 3 more``."""
    shown = left_out if limit is None else left_out[:limit]
    text = ", ".join(f"{path} ({why})" for path, why in shown)
    return text + (f" and {len(left_out) - len(shown)} more" if len(left_out) > len(shown) else "")


class ContextTooLarge(SpecError):
    """The declared files make a build context over the size limit."""


def human_size(n: float) -> str:
    """``1.2 GB``, ``340 KB``, ``12 B``."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" or n >= 100 else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def limit_bytes() -> int:
    """The context size limit: ``TFC_MAX_CONTEXT_MB`` (default 500) megabytes."""
    raw = os.environ.get("TFC_MAX_CONTEXT_MB", "").strip()
    try:
        return int(float(raw) * 1_000_000) if raw else DEFAULT_LIMIT_MB * 1_000_000
    except ValueError:
        raise SpecError(
            f"TFC_MAX_CONTEXT_MB={raw!r} is not a number", "set it to megabytes, e.g. 2000"
        ) from None


_DIGESTS: dict[tuple[str, int, int, int], str] = {}


def file_digest(path: Path) -> str:
    """sha256 of a file, remembered by (path, size, mtime, inode) for this process."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def _generated(arcname: str, data: bytes, mode: int = 0o644) -> Entry:
    return Entry(arcname, len(data), hashlib.sha256(data).hexdigest(), data=data, mode=mode)


def _on_disk(arcname: str, path: Path) -> Entry:
    mode = 0o755 if os.access(path, os.X_OK) else 0o644
    return Entry(arcname, path.stat().st_size, file_digest(path), source=path, mode=mode)


class _Walker:
    """Collects the declared files under the notebook folder, applying every exclusion."""

    def __init__(self, base: Path) -> None:
        self.base = base.resolve()
        self.files: dict[str, Path] = {}
        self.left_out: list[tuple[str, str]] = []
        self.ignore: Any = None
        ignore_file = self.base / IGNORE_FILE
        if ignore_file.is_file():
            from pathspec import GitIgnoreSpec

            text = read_regular(ignore_file, 1_000_000, IGNORE_FILE).decode("utf-8", "replace")
            self.ignore = GitIgnoreSpec.from_lines(text.splitlines())

    def leave(self, rel: str, reason: str) -> None:
        """Record a left-out path once (not again under a folder left out already)."""
        under = any(rel.startswith(p) for p, _ in self.left_out if p.endswith("/"))
        if not under and (rel, reason) not in self.left_out:
            self.left_out.append((rel, reason))

    def _excluded(self, rel: str, path: Path, is_dir: bool) -> str | None:
        reason = secret_reason(rel, None if is_dir else path)
        if reason is None and is_dir and secret_reason(rel + "/x") is not None:
            reason = secret_reason(rel + "/x")
        if reason is None and path.is_symlink():
            target = path.resolve()
            reason = secret_reason(target.name, None if is_dir else target)
        if reason:
            return reason
        if self.ignore is not None and self.ignore.match_file(rel + ("/" if is_dir else "")):
            return IGNORE_FILE
        name = rel.rsplit("/", 1)[-1]
        if is_dir and ((path / "pyvenv.cfg").exists() or (path / "conda-meta").is_dir()):
            return "virtualenv"
        if is_dir and name in ("__pycache__", ".ipynb_checkpoints", "node_modules"):
            return "cache folder"
        if name.endswith((".pyc", ".pyo")) or name == IGNORE_FILE:
            return "not needed"
        return None

    def add(self, declared: str) -> None:
        """Add one ``--include`` path (a file or a folder, relative to the notebook)."""
        raw = Path(declared).expanduser()
        path = raw if raw.is_absolute() else self.base / raw
        resolved = Path(os.path.normpath(path.absolute()))
        try:
            rel = resolved.relative_to(self.base).as_posix()
        except ValueError:
            raise SpecError(
                f"--include {declared}: it is outside the notebook's folder {self.base}",
                "copy or link it into the notebook's folder, where the job finds it by the same "
                "relative path",
                field="include",
            ) from None
        if not path.exists():
            raise SpecError(
                f"--include {declared}: no such file or folder in {self.base}",
                "check the path (it is relative to the notebook's folder)",
                field="include",
            )
        if rel in ("", "."):
            self._walk(self.base, "")
            return
        kind = file_kind(path)
        if kind and kind != "a folder":
            raise SpecError(
                f"--include {declared}: it is {kind}, not a file or folder",
                "include regular files and folders only",
                field="include",
            )
        reason = self._excluded(rel, path, path.is_dir())
        if reason:
            self.leave(rel + ("/" if path.is_dir() else ""), reason)
        elif path.is_dir():
            self._walk(path, rel)
        else:
            self.files[rel] = path

    def _walk(self, folder: Path, rel: str) -> None:
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            self.leave((rel or ".") + "/", f"unreadable: {exc.strerror}")
            return
        for name in names:
            path = folder / name
            child = f"{rel}/{name}" if rel else name
            is_dir = path.is_dir()
            kind = file_kind(path)
            if kind and not is_dir:  # a FIFO, device or socket: never read
                self.leave(child, f"{kind}, not a file")
                continue
            reason = self._excluded(child, path, is_dir)
            if reason:
                if reason not in ("not needed", "cache folder"):
                    self.leave(child + ("/" if is_dir else ""), reason)
            elif is_dir and path.is_symlink():
                self.leave(child + "/", "linked folder: --include it by name")
            elif is_dir:
                self._walk(path, child)
            elif path.is_file():
                self.files[child] = path


def _apt_packages(base: Path) -> list[str]:
    """Debian packages listed in ``apt.txt`` next to the notebook (repo2docker's convention)."""
    path = base / APT_FILE
    if not path.is_file():
        return []
    names = []
    try:
        text = read_regular(path, 64_000, APT_FILE).decode("utf-8", "replace")
    except UnsafeFile as exc:
        raise SpecError(exc.message, exc.hint, field="include") from None
    for line in text.splitlines():
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if not re.fullmatch(r"[a-z0-9][a-z0-9+.:=~-]*", name):
            raise SpecError(
                f"{APT_FILE}: {name!r} is not a Debian package name",
                f"list one package per line in {APT_FILE}",
                field="include",
            )
        names.append(name)
    return sorted(set(names))


# Installed without their dependencies: tf-keras asks for `tensorflow`, which a parent image with
# `tensorflow-cpu` (or a TPU build) satisfies under another name; pip would add a second TensorFlow.
NO_DEPS = {"tf-keras", "tf_keras"}


def _split_requirements(lines: list[str]) -> tuple[list[str], list[str]]:
    """``(requirements, those installed with --no-deps)``: tf-keras-like ones, and what the
    notebook itself installed with ``pip install --no-deps``."""
    plain: list[str] = []
    no_deps: list[str] = []
    for line in lines:
        if line.startswith(NO_DEPS_PREFIX):
            no_deps.append(line.removeprefix(NO_DEPS_PREFIX))
            continue
        name = re.split(r"[\s<>=!~;\[@]", line.strip(), maxsplit=1)[0].lower()
        (no_deps if name in NO_DEPS else plain).append(line)
    return plain, no_deps


def _pip_options(lines: list[str]) -> str:
    """Resolver options (``--use-deprecated=...``) for the pip command line: pip does not read
    them from a requirements file."""
    return "".join(f" {line}" for line in lines if line.startswith(RESOLVER_OPTIONS))


def dockerfile(
    parent: str, *, apt: list[str], requirements: list[str], ca: bool, declared: bool
) -> str:
    """The Dockerfile: layers from least to most often changed (see the module docstring)."""
    lines = [f"FROM {parent} AS system"]
    if apt:
        lines.append(
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
            f"--no-install-recommends {' '.join(apt)} && rm -rf /var/lib/apt/lists/*"
        )
    options = _pip_options(requirements)
    plain, no_deps = _split_requirements(
        [r for r in requirements if not r.startswith(RESOLVER_OPTIONS)]
    )
    if requirements:
        pip = f"python3 -m pip install --root /tfc-deps{options}"
        # never empty: the classic builder fails on a later step after an empty COPY --from
        steps = [f"mkdir -p /tfc-deps{RUNTIME_PATH}", f"touch /tfc-deps{RUNTIME_PATH}/.deps"]
        if plain:
            steps.append(f"{pip} -r /tmp/tfc/requirements.txt")
        if no_deps:
            steps.append(f"{pip} --no-deps -r /tmp/tfc/requirements-no-deps.txt")
        lines += [
            "",
            "# requirements, installed in a throw-away stage: the CA bundle stays here",
            "FROM system AS deps",
            "ENV PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 "
            "PIP_ROOT_USER_ACTION=ignore PIP_DEFAULT_TIMEOUT=120",
        ]
        if ca:
            lines += ["COPY tfc/ca.crt /tmp/tfc-ca.crt", "ENV PIP_CERT=/tmp/tfc-ca.crt"]
        lines += ["COPY tfc/requirements*.txt /tmp/tfc/", "RUN " + " && ".join(steps)]
    lines += ["", "FROM system"]
    if requirements:
        lines.append("COPY --from=deps /tfc-deps/ /")
    lines += [
        f"COPY tfc/tfc_runtime {RUNTIME_PATH}/tfc_runtime",
        f"ENV PYTHONPATH={RUNTIME_PATH} PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1",
        f"WORKDIR {vertex_request.WORKDIR}",
        'ENTRYPOINT ["python", "-m", "tfc_runtime"]',
    ]
    if declared:
        lines.append(f"COPY app/ {vertex_request.WORKDIR}/")
    lines.append(f"COPY code/ {vertex_request.WORKDIR}/")
    return "\n".join(lines) + "\n"


def _runtime_entries() -> list[Entry]:
    root = images.RUNTIME_DIR
    if not root.is_dir():  # installed wheel: the package sits next to tfc_jupyter
        import tfc_runtime

        root = Path(tfc_runtime.__file__).parent
    return [
        _on_disk(f"tfc/tfc_runtime/{p.relative_to(root).as_posix()}", p)
        for p in sorted(root.rglob("*.py"))
    ]


def _ca_bundle() -> Path | None:
    """The CA bundle pip is told to trust here (``PIP_CERT``), for the throw-away pip stage."""
    value = os.environ.get("PIP_CERT", "").strip()
    return Path(value) if value and Path(value).is_file() else None


def make_context(
    spec: JobSpec,
    *,
    script: str,
    source_map: str,
    requirements: list[str] | tuple[str, ...],
    base_dir: Path,
    check_limit: bool = True,
    auto_include: Sequence[str] = (),
) -> Context:
    """The build context of a job (see the module docstring).

    ``auto_include``: notebook-relative paths planning found the code reads (see
    :mod:`tfc_jupyter.needs`); they join the declared files while together they stay under
    :data:`AUTO_LIMIT_MB`, with the same exclusions (secrets never go in).

    Raises:
        SpecError: a declared path is missing or outside the notebook's folder, or ``apt.txt``
            is malformed.
        ContextTooLarge: the context is over the limit (when ``check_limit``).
    """
    walker = _Walker(base_dir)
    for declared in spec.image.include:
        walker.add(declared)
    auto, auto_over = _add_found(walker, base_dir, auto_include)
    for reserved in (vertex_request.SCRIPT, vertex_request.SOURCE_MAP):
        if reserved in walker.files:
            del walker.files[reserved]
            walker.leave(reserved, "reserved for the job's script")
    entries = []
    for rel, path in sorted(walker.files.items()):
        try:
            entries.append(_on_disk(f"app/{rel}", path))
        except OSError as exc:
            walker.leave(rel, f"unreadable: {exc.strerror}")
    n_declared = len(entries)  # --include and found files: both go to app/
    entries += _runtime_entries()
    entries += [
        _generated(f"code/{vertex_request.SCRIPT}", script.encode()),
        _generated(f"code/{vertex_request.SOURCE_MAP}", source_map.encode()),
    ]
    reqs = [line.strip() for line in requirements if line.strip()]
    ca = _ca_bundle() if reqs else None
    files = _split_requirements([r for r in reqs if not r.startswith(RESOLVER_OPTIONS)])
    for name, lines in zip(("requirements.txt", "requirements-no-deps.txt"), files, strict=True):
        if lines:
            entries.append(_generated(f"tfc/{name}", "".join(f"{r}\n" for r in lines).encode()))
    if ca is not None:
        entries.append(_on_disk("tfc/ca.crt", ca))
    parent = images.parent_image(spec)
    text = dockerfile(
        parent,
        apt=_apt_packages(base_dir),
        requirements=reqs,
        ca=ca is not None,
        declared=n_declared > 0,
    )
    context = Context(entries, text, parent, walker.left_out, n_declared, auto, auto_over)
    if check_limit:
        check_size(context)
    return context


AUTO_LIMIT_MB = 100


def _add_found(
    walker: _Walker, base_dir: Path, paths: Sequence[str]
) -> tuple[list[str], tuple[int, list[str]] | None]:
    """Add the paths the code reads to ``walker`` when they fit under the limit; returns the
    paths added, or ``(bytes, paths)`` when they were too large."""
    found = _Walker(base_dir)
    used: list[str] = []
    for rel in paths:
        before = len(found.files)
        try:
            found.add(rel)
        except SpecError:
            continue
        if len(found.files) > before:
            used.append(rel)
    new = {r: p for r, p in found.files.items() if r not in walker.files}
    walker.left_out += [item for item in found.left_out if item not in walker.left_out]
    total = 0
    for path in new.values():
        try:
            total += path.stat().st_size
        except OSError:
            continue
    if total > AUTO_LIMIT_MB * 1_000_000:
        return [], (total, used)
    walker.files.update(new)
    return used, None


def check_size(context: Context, limit: int | None = None) -> None:
    """Stop a context over the limit with one line that lists its largest files."""
    limit = limit_bytes() if limit is None else limit
    if context.size <= limit:
        return
    declared = [e for e in context.largest(len(context.entries)) if e.arcname.startswith("app/")]
    largest = ", ".join(
        f"{e.arcname.removeprefix('app/')} {human_size(e.size)}"
        for e in (declared or context.entries)[:5]
    )
    raise ContextTooLarge(
        f"the image's build context is {human_size(context.size)}, over the "
        f"{human_size(limit)} limit; largest files: {largest}",
        f"leave big files out ({IGNORE_FILE} or fewer --include), read data from cloud storage "
        "in the job, or raise TFC_MAX_CONTEXT_MB",
        field="include",
    )


def from_plan(plan: Plan, *, check_limit: bool = True) -> Context:
    """The build context of a planned job."""
    return make_context(
        plan.spec,
        script=plan.script.text,
        source_map=json.dumps(plan.script.source_map_json(plan.selection.name)),
        requirements=plan.requirements,
        base_dir=plan.selection.base_dir,
        check_limit=check_limit,
    )
