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
already exists. Nothing here imports docker; :mod:`.docker` and :mod:`.cloudbuild` build and push.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from tfc_runtime import protocol

from ..config import Settings, current_settings
from ..errors import SpecError
from ..job.spec import JobSpec
from ..notebook.requirements import NO_DEPS_PREFIX, RESOLVER_OPTIONS
from ..util import secretscan
from ..util.files import UnsafeFile, file_kind, human_size, leads_out, read_regular, real_path
from . import names

IGNORE_FILE = ".tfcignore"
APT_FILE = "apt.txt"
RUNTIME_PATH = "/opt/tfc"
EPOCH = 315532800  # 1980-01-01: fixed mtimes make identical inputs identical layers

# Secrets: by name and by content, in tfc_jupyter.util.secretscan (re-exported for callers
# and tests).
secret_reason = secretscan.secret_reason


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

    def listing(self, limit: int = 60) -> list[str]:
        """``  app/data/train.csv  12 KB`` lines: what goes into the image (the largest first
        past ``limit``), then what was left out and why."""
        entries = sorted(self.entries, key=_arcname)
        if len(entries) > limit:
            entries = sorted(self.largest(limit), key=_arcname)
        lines = [f"  {e.arcname}  {human_size(e.size)}" for e in entries]
        if len(self.entries) > limit:
            lines.append(f"  ... and {len(self.entries) - limit} smaller files (plan --json)")
        lines += [f"  left out: {path} ({why})" for path, why in self.left_out]
        return lines

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (plan summary, job folder)."""
        return {
            "tag": self.tag,
            "files": [{"path": "Dockerfile", "bytes": len(self.dockerfile)}]
            + [{"path": e.arcname, "bytes": e.size} for e in sorted(self.entries, key=_arcname)],
            "file_count": len(self.entries) + 1,
            "bytes": self.size,
            "left_out": [{"path": p, "why": why, "reason": why} for p, why in self.left_out],
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


def listed(paths: Sequence[str], limit: int = 12) -> str:
    """``a, b, c and 40 more``: paths named in one line (a pattern may match thousands)."""
    more = len(paths) - limit
    return ", ".join(paths[:limit]) + (f" and {more} more" if more > 0 else "")


class SecretInFile(SpecError):
    """A file the job needs (named, or read by the code) holds a secret."""


_TOOL_STATE = frozenset(
    {".cache", ".local", ".ipython", ".jupyter", ".npm", ".conda", ".mamba", ".vscode-server"}
)


def _own_state(path: Path) -> bool:
    """True for tfc_jupyter's own home (job records, logs, launch files)."""
    from ..store.records import default_home

    try:
        return path.resolve() == Path(default_home()).resolve()
    except (OSError, RuntimeError):
        return False


def _arcname(entry: Entry) -> str:
    return entry.arcname


class ContextTooLarge(SpecError):
    """The declared files make a build context over the size limit."""


def limit_bytes(settings: Settings | None = None) -> int:
    """The context size limit: the ``max_context_mb`` setting (``TFC_MAX_CONTEXT_MB``,
    default 500) in bytes."""
    return int((settings or current_settings()).seconds("max_context_mb") * 1_000_000)


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


def _bad_ignore_line(path: Path, lines: list[str]) -> SpecError:
    """The first line of an ignore file that is not a pattern, as one line with the fix."""
    from pathspec import GitIgnoreSpec

    for number, line in enumerate(lines, start=1):
        try:
            GitIgnoreSpec.from_lines([line])
        except ValueError:
            return SpecError(
                f"{path.name} line {number}, {line.strip()!r}, is not a pattern (git's "
                "ignore rules)",
                "fix or delete that line: write a lone [ as \\[, and end no line with \\",
                field="include",
            )
    return SpecError(f"{path.name} cannot be read as ignore patterns", "check its lines")


class _Walker:
    """Collects the declared files under the notebook folder, applying every exclusion."""

    def __init__(self, base: Path, limit: int | None = None) -> None:
        self.base = base.resolve()
        self.limit = limit  # the context's size limit: files are judged by size before reading
        self.files: dict[str, Path] = {}
        self.left_out: list[tuple[str, str]] = []
        self.ignore: Any = None
        ignore_file = self.base / IGNORE_FILE
        if ignore_file.is_file():
            from pathspec import GitIgnoreSpec

            text = read_regular(ignore_file, 1_000_000, IGNORE_FILE).decode("utf-8", "replace")
            lines = text.splitlines()
            try:
                self.ignore = GitIgnoreSpec.from_lines(lines)
            except ValueError:  # pathspec's GitIgnorePatternError: say which line
                raise _bad_ignore_line(ignore_file, lines) from None

    def leave(self, rel: str, reason: str) -> None:
        """Record a left-out path once (not again under a folder left out already)."""
        under = any(rel.startswith(p) for p, _ in self.left_out if p.endswith("/"))
        if not under and (rel, reason) not in self.left_out:
            self.left_out.append((rel, reason))

    def _excluded(self, rel: str, path: Path, is_dir: bool, content: bool = True) -> str | None:
        """Why ``rel`` stays out (None: it may go in); ``content``: read a file for secrets
        too (a walk reads them after judging their sizes: :meth:`scan_contents`)."""
        reason = secret_reason(rel, None if is_dir or not content else path)
        if reason is None and is_dir and secret_reason(rel + "/x") is not None:
            reason = secret_reason(rel + "/x")
        if reason is None and path.is_symlink():
            reason = leads_out(path)
            target = path.resolve() if reason is None else None
            if target is not None:
                reason = secret_reason(target.name, None if is_dir or not content else target)
        if reason:
            return reason
        if self.ignore is not None and self.ignore.match_file(rel + ("/" if is_dir else "")):
            return IGNORE_FILE
        name = rel.rsplit("/", 1)[-1]
        if is_dir and ((path / "pyvenv.cfg").exists() or (path / "conda-meta").is_dir()):
            return "virtualenv"
        if is_dir and name in ("__pycache__", ".ipynb_checkpoints", "node_modules"):
            return "cache folder"
        if is_dir and name in _TOOL_STATE:
            return "tools' state and caches (a home folder's)"
        if is_dir and _own_state(path):
            return "tfc_jupyter's own job records"
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
        real_path(path, "--include", "include")  # no loop; inside the server root (REST)
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
        if not path.is_dir():  # a file named on purpose: a secret in it stops the plan
            self._judge_size({rel: _size(path)})  # before reading it whole
            found = secretscan.scan_file(path)
            named = secret_reason(rel) or secret_reason(path.resolve().name)
            if found is not None or named is not None:
                what = found.what if found else str(named).removeprefix("secret: ")
                line = f", line {found.line}" if found and found.line else ""
                raise SecretInFile(
                    f"{rel}{line} holds a secret ({what}): it never goes into an image",
                    "take the secret out of the file (read it from the environment or Secret "
                    f"Manager in the job), or do not include {rel}",
                    field="include",
                )
        reason = self._excluded(rel, path, path.is_dir(), content=False)
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
            reason = self._excluded(child, path, is_dir, content=False)
            if reason:
                if reason not in ("not needed", "cache folder"):
                    self.leave(child + ("/" if is_dir else ""), reason)
            elif is_dir and path.is_symlink():
                self.leave(child + "/", "linked folder: --include it by name")
            elif is_dir:
                self._walk(path, child)
            elif path.is_file():
                self.files[child] = path

    def _judge_size(self, sizes: dict[str, int]) -> None:
        """Stop files that make the context too large before any of them is read (a sparse
        10 GB file was read whole for secrets, for minutes, before the size refused it)."""
        if self.limit is not None and sum(sizes.values()) > self.limit:
            raise too_large(sizes, self.limit)

    def scan_contents(self) -> None:
        """Judge the walked files by their sizes, then read each for secrets: one that holds
        a secret is left out, with the reason."""
        self._judge_size({rel: _size(path) for rel, path in self.files.items()})
        for rel, path in list(self.files.items()):
            reason = self._excluded(rel, path, False)  # now with the contents (links' too)
            if reason:
                del self.files[rel]
                self.leave(rel, reason)


def _size(path: Path) -> int:
    """A file's size in bytes, as ``stat`` says (0 when it cannot be read)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def exclusions(base_dir: Path) -> Callable[[str, Path, bool], str | None]:
    """``(notebook-relative path, path, is a folder) -> why it stays out of an image`` (None:
    it may go in): the rules an included folder is walked with (secrets by name and content,
    ``.tfcignore``, virtualenvs, caches, tools' state, tfc_jupyter's job records, links out of
    the folder), for what the code reads by pattern (:func:`tfc_jupyter.notebook.needs.
    read_patterns`)."""
    return _Walker(base_dir)._excluded


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
    parent: str,
    *,
    apt: list[str],
    requirements: list[str],
    ca: bool,
    declared: bool,
    system: Sequence[str] = (),
) -> str:
    """The Dockerfile: layers from least to most often changed (see the module docstring);
    ``system``: lines that make the parent a TensorFlow image (a TPU job's)."""
    lines = [f"FROM {parent} AS system", *system]
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
        f"WORKDIR {protocol.WORKDIR}",
        'ENTRYPOINT ["python", "-m", "tfc_runtime"]',
    ]
    if declared:
        lines.append(f"COPY app/ {protocol.WORKDIR}/")
    lines.append(f"COPY code/ {protocol.WORKDIR}/")
    # last: a job that would die at an import fails here, naming it, before any queue or bill
    lines.append(f"RUN python -m tfc_runtime.imports {protocol.SCRIPT}")
    return "\n".join(lines) + "\n"


def _runtime_entries() -> list[Entry]:
    root = names.RUNTIME_DIR
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
    limit: int | None = None,
) -> Context:
    """The build context of a job (see the module docstring).

    ``auto_include``: notebook-relative paths planning found the code reads (see
    :mod:`tfc_jupyter.notebook.needs`); they join the declared files while together they stay under
    :data:`AUTO_LIMIT_MB`, with the same exclusions (secrets never go in).

    Raises:
        SpecError: a declared path is missing or outside the notebook's folder, or ``apt.txt``
            is malformed.
        ContextTooLarge: the context is over the limit (when ``check_limit``).
    """
    walker = _Walker(base_dir, (limit_bytes() if limit is None else limit) if check_limit else None)
    for declared in spec.image.include:
        walker.add(declared)
    walker.scan_contents()
    auto, auto_over = _add_found(walker, base_dir, auto_include)
    for reserved in (protocol.SCRIPT, protocol.SOURCE_MAP):
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
        _generated(f"code/{protocol.SCRIPT}", script.encode()),
        _generated(f"code/{protocol.SOURCE_MAP}", source_map.encode()),
    ]
    reqs = [line.strip() for line in requirements if line.strip()]
    ca = _ca_bundle() if reqs else None
    files = _split_requirements([r for r in reqs if not r.startswith(RESOLVER_OPTIONS)])
    for name, lines in zip(("requirements.txt", "requirements-no-deps.txt"), files, strict=True):
        if lines:
            entries.append(_generated(f"tfc/{name}", "".join(f"{r}\n" for r in lines).encode()))
    if ca is not None:
        entries.append(_on_disk("tfc/ca.crt", ca))
    parent = names.parent_image(spec)
    text = dockerfile(
        parent,
        apt=_apt_packages(base_dir),
        requirements=reqs,
        ca=ca is not None,
        declared=n_declared > 0,
        system=names.tpu_steps(spec),
    )
    context = Context(entries, text, parent, walker.left_out, n_declared, auto, auto_over)
    if check_limit:
        check_size(context, limit)
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
        named = secret_reason(rel)
        if named is not None:
            raise SecretInFile(
                f"the code reads {rel} ({named}): a secret never goes into an image",
                "give the job the values another way (Secret Manager, or the environment of "
                f"the job), or tag the cell that reads {rel} tfc-skip",
                field="include",
            )
        try:
            found.add(rel)
        except SecretInFile:
            raise
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
    sizes = {e.arcname.removeprefix("app/"): e.size for e in (declared or context.entries)}
    raise too_large(sizes, limit, context.size)


def too_large(sizes: dict[str, int], limit: int, total: int | None = None) -> ContextTooLarge:
    """The one-line refusal of a context of ``total`` bytes (default: the files' sum) over
    ``limit``, naming its five largest ``sizes``."""
    total = sum(sizes.values()) if total is None else total
    top = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    largest = ", ".join(f"{rel} {human_size(size)}" for rel, size in top)
    return ContextTooLarge(
        f"the image's build context is {human_size(total)}, over the "
        f"{human_size(limit)} limit; largest files: {largest}",
        f"leave big files out ({IGNORE_FILE} or fewer --include), read data from cloud storage "
        "in the job, or raise TFC_MAX_CONTEXT_MB",
        field="include",
    )
