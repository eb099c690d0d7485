"""The border: everything a job gives back enters the kernel and the notebook's folder here.

A job's folder (and its ``gs://`` output place) is written by code the kernel does not
control: a docker container has it mounted read-write, a Vertex AI job or anyone who can write
its bucket fills it. So what comes back is untrusted input, read under one written policy
(``docs/border.md``), whatever the backend:

* **Reading** (:func:`read_bytes`, :func:`read_json`, :func:`copy_out`): a path under the job
  folder is walked one part at a time, no link followed (``O_NOFOLLOW``), only regular files
  opened (a FIFO or a device is never waited on), every read bounded by bytes actually read.
* **Archives** (:class:`Arrays`, :func:`check_zip`): ``.npz`` and ``.keras`` files are zips;
  their members' sizes are counted as they are decompressed, never as the zip declares them,
  and a central directory past :data:`MAX_ZIP_DIRECTORY` is refused before it is parsed.
* **Names** (:func:`admit_names`): only names the run cell binds by the kernel's own parse of
  its own copy of the cell (:class:`KernelCell`), never a dunder, IPython's names or ours.
* **Files** (:func:`place_files`): only regular files, to plain relative paths, never into
  dot folders or over dotfiles, the notebook or another notebook; never through a link.
* **Outputs** (:func:`safe_bundle`): as Jupyter shows an untrusted notebook's outputs.

The kernel never executes a byte from the job's folder: the code a returned model needs comes
from :class:`KernelCell`, which is what the kernel launched, kept outside the job folder.
Every refusal is one line naming what was refused and why; nothing here raises past
:class:`Refused`.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import io
import json
import keyword
import os
import re
import stat
import struct
import sys
import tempfile
import unicodedata
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfc_runtime import codecs

from ..util.files import KIND, human_size, write_private

if TYPE_CHECKING:
    from .once import ReadOnce

MAX_NAMES = 1000
"""Names one job may set in the kernel."""
MAX_OUTPUTS = 500
"""Rich outputs of one job shown in the cell; the rest are counted in one line."""
MAX_OUTPUT_BYTES = 64 << 20
"""Bytes of one output file read back at most."""
MAX_ZIP_DIRECTORY = 4 << 20
"""Bytes of a zip's central directory (its list of members) parsed at most."""
MAX_DEPTH = 100
"""Nesting of a returned JSON tree walked at most."""
MAX_DISPLAY_ID = 200
"""Characters of a display id a job names."""
MAX_LISTED = 200_000
"""Entries of a job's ``files/`` looked at (each past the caps is counted, not copied)."""
KEPT = "kept"
"""The job home's folder of the kernel's own copies of what it launched (outside job folders)."""

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class Refused(codecs.Unreadable):
    """What came back is not taken; ``str()`` is one line saying what and why (a codec reading
    a value catches it as :class:`tfc_runtime.codecs.Unreadable`)."""


class OverLimit(Refused, codecs.OverLimit):
    """More bytes than the limit were read or decompressed."""


# -- reading the job's folder ---------------------------------------------------------------


def bad_part(part: str) -> str | None:
    """Why one part of a relative path from a job is refused (None: it is a plain name)."""
    if part in ("", ".", ".."):
        return "not a plain name"
    if "\x00" in part or "/" in part or "\\" in part:
        return "a NUL or a separator in a name"
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in part):
        return "a control character in a name"
    if len(part.encode("utf-8", "surrogatepass")) > 255:
        return "a name over 255 bytes"
    return None


def parts_of(rel: str) -> list[str]:
    """The parts of a relative path a job named; :class:`Refused` for an absolute path, ``..``,
    NUL or control characters."""
    if not isinstance(rel, str) or not rel or rel.startswith("/"):
        raise Refused(f"{str(rel)[:80]!r}: not a relative path")
    parts = rel.split("/")
    for part in parts:
        why = bad_part(part)
        if why:
            raise Refused(f"{rel[:80]!r}: {why}")
    return parts


def _walk_open(root: Path, rel: str) -> int:
    """A descriptor of the regular file ``root/rel``, no link followed on the way."""
    parts = parts_of(rel)
    fd = os.open(root, _DIR)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:
                raise _why(exc, rel) from None
            os.close(fd)
            fd = nxt
        try:
            out = os.open(parts[-1], _FILE, dir_fd=fd)
        except OSError as exc:
            raise _why(exc, rel) from None
    finally:
        os.close(fd)
    mode = os.fstat(out).st_mode
    if not stat.S_ISREG(mode):
        os.close(out)
        raise Refused(f"{rel}: {KIND.get(stat.S_IFMT(mode), 'not a regular file')}, not a file")
    return out


def _why(exc: OSError, rel: str) -> OSError | Refused:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return Refused(f"{rel}: a link, not followed")
    return exc  # FileNotFoundError and the like: the caller's to say


def read_bytes(root: Path | str, rel: str, limit: int) -> bytes:
    """The bytes of ``root/rel`` (see the module's docstring), at most ``limit``.

    Raises:
        Refused: a link, not a regular file, or over ``limit``.
        OSError: it cannot be read (FileNotFoundError: there is none).
    """
    fd = _walk_open(Path(root), rel)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise OverLimit(f"{rel}: over {human_size(limit)}")
    return data


def read_json(root: Path | str, rel: str, limit: int) -> Any:
    """``root/rel`` parsed as JSON, at most ``limit`` bytes and :data:`MAX_DEPTH` deep.

    Raises:
        Refused: as :func:`read_bytes`, or it is not JSON (one line).
        OSError: it cannot be read.
    """
    data = read_bytes(root, rel, limit)
    if _depth_over(data, MAX_DEPTH):
        raise Refused(f"{rel}: nested over {MAX_DEPTH} levels deep")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise Refused(f"{rel}: not JSON ({str(exc)[:80]})") from None


def _depth_over(data: bytes, limit: int) -> bool:
    """Whether JSON text nests brackets deeper than ``limit`` (strings skipped)."""
    depth = 0
    for match in re.finditer(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', data):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif token in (b"]", b"}"):
            depth -= 1
    return False


def copy_out(root: Path | str, rel: str, limit: int, into: Path) -> Path:
    """Copy ``root/rel`` (at most ``limit`` bytes actually read) to a private file in ``into``:
    what is then checked and loaded is what was read, whatever the job folder holds later. The
    bytes are copied by the operating system (:func:`os.copy_file_range`, else
    :func:`os.sendfile`: a 286 MB model in a tenth of a second), through a buffer where the file
    systems do neither.

    Raises:
        Refused, OSError: as :func:`read_bytes`.
    """
    fd = _walk_open(Path(root), rel)
    target = into / Path(rel).name
    try:
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o600)
        try:
            _copy_fd(fd, out, limit, rel)
        finally:
            os.close(out)
    finally:
        os.close(fd)
    return target


def open_copy(root: Path | str, rel: str, limit: int, into: Path) -> ReadOnce:
    """``root/rel``'s private copy, made as it is read: each byte read from the job's file once,
    kept in memory and served from there after (:class:`~tfc_jupyter.returns.once.ReadOnce`),
    so that checking and loading it read it once in all; at most its size when it is opened,
    within ``limit``. Its path in ``into`` is written when one is asked for (``finish``).

    Raises:
        Refused, OSError: as :func:`read_bytes`.
    """
    from .once import ReadOnce

    fd = _walk_open(Path(root), rel)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise OverLimit(f"{rel}: over {human_size(limit)}")
        return ReadOnce(fd, into / Path(rel).name, size)
    except BaseException:
        os.close(fd)
        raise


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_STEP = 256 << 20
"""Bytes one system call is asked to copy at most."""


def _copy_fd(src: int, dst: int, limit: int, rel: str) -> int:
    """Copy ``src`` from its position to its end into ``dst``; the bytes copied, counted as
    copied (:class:`OverLimit` once they pass ``limit``). Each way is tried in turn: one the
    file systems refuse, or that copies nothing at the start (procfs, some FUSE file systems:
    a size of 0 for a file that has bytes), gives way to the next; reading is the last."""
    ways = [way for way in (getattr(os, "copy_file_range", None), _sendfile) if way is not None]
    total = 0
    while True:
        want = min(_STEP, limit + 1 - total)
        try:
            count = ways[0](src, dst, want) if ways else _read_write(src, dst, want)
        except OSError as exc:
            if ways and exc.errno in _NOT_THIS_WAY:
                ways.pop(0)
                continue
            raise
        if count == 0 and ways and total == 0:
            ways.pop(0)
            continue
        if count == 0:
            return total
        total += count
        if total > limit:
            raise OverLimit(f"{rel}: over {human_size(limit)}")


def _sendfile(src: int, dst: int, count: int) -> int:
    return os.sendfile(dst, src, None, count)


def _read_write(src: int, dst: int, count: int) -> int:
    data = os.read(src, min(count, 1 << 20))
    left = memoryview(data)
    while left:
        left = left[os.write(dst, left) :]
    return len(data)


_NOT_THIS_WAY = frozenset(
    getattr(errno, name)
    for name in ("EXDEV", "ENOSYS", "EINVAL", "EOPNOTSUPP", "ENOTSUP", "EBADF", "EPERM",
                 "ETXTBSY", "ENOTSOCK", "EIO", "ENODATA")
    if hasattr(errno, name)
)  # fmt: skip
"""What ``copy_file_range`` or ``sendfile`` answer where a file system does not copy that way."""


# -- archives -------------------------------------------------------------------------------


def _zip(fh: Any, what: str) -> zipfile.ZipFile:
    """A zip whose member list is at most :data:`MAX_ZIP_DIRECTORY` bytes."""
    try:
        end = zipfile._EndRecData(fh)  # type: ignore[attr-defined]  # the end record only
    except OSError:
        end = None
    if not end:
        raise Refused(f"{what}: not a zip archive")
    if end[zipfile._ECD_SIZE] > MAX_ZIP_DIRECTORY:  # type: ignore[attr-defined]
        raise Refused(f"{what}: a zip listing over {human_size(MAX_ZIP_DIRECTORY)} of members")
    try:
        return zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise Refused(f"{what}: not a zip archive ({str(exc)[:60]})") from None


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, what: str) -> Iterator[bytes]:
    """A member's bytes as decompressed, :class:`Refused` once they pass ``limit``."""
    total = 0
    try:
        with zf.open(info) as member:
            while chunk := member.read(1 << 20):
                total += len(chunk)
                if total > limit:
                    raise OverLimit(f"{what}: over {human_size(limit)} once decompressed")
                yield chunk
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise Refused(f"{what}: a damaged zip member ({str(exc)[:60]})") from None


def check_zip(path: Path | io.RawIOBase, limit: int, what: str) -> int:
    """The bytes the zip at ``path`` (or ``path``, an open file) gives once decompressed, every
    member counted (a member read more than once, counted each time): :class:`Refused` past
    ``limit`` (a zip bomb), or for a file that is not a zip. A compressed member is decompressed
    (nothing kept), its real bytes counted. A stored member (a Keras ``.keras`` file's are) is
    counted by its size, unread: its bytes are its data as they lie in the file, never more than
    its size (:mod:`zipfile` stops there), and its two sizes must agree and its data lie in the
    file."""
    if not isinstance(path, Path):
        return _check_zip(path, limit, what)
    with open(path, "rb") as fh:
        return _check_zip(fh, limit, what)


def _check_zip(fh: Any, limit: int, what: str) -> int:
    total = 0
    with _zip(fh, what) as zf:
        end = fh.seek(0, io.SEEK_END)
        for info in zf.infolist():
            if info.compress_type == zipfile.ZIP_STORED:
                _stored(fh, info, end, what)
                if total + info.file_size > limit:
                    raise OverLimit(f"{what}: over {human_size(limit)} once decompressed")
                total += info.file_size
                continue
            for chunk in _member(zf, info, limit - total, what):
                total += len(chunk)
    return total


_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
"""A zip member's local header (APPNOTE 4.3.7): its last two fields the lengths of its name and
of its extra field, which the member's data follow."""


def _stored(fh: Any, info: zipfile.ZipInfo, end: int, what: str) -> None:
    """:class:`Refused` unless a stored member's sizes agree and its data, after its local
    header, lie within the file's ``end``."""
    if not 0 <= info.header_offset < end:  # a damaged central directory points anywhere
        raise Refused(f"{what}: a damaged zip member ({info.filename[:60]!r})")
    fh.seek(info.header_offset)
    head = fh.read(_LOCAL_HEADER.size)
    if info.file_size != info.compress_size or len(head) != _LOCAL_HEADER.size:
        raise Refused(f"{what}: a damaged zip member ({info.filename[:60]!r})")
    fields = _LOCAL_HEADER.unpack(head)
    start = info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]
    if fields[0] != b"PK\x03\x04" or start + info.compress_size > end:
        raise Refused(f"{what}: a damaged zip member ({info.filename[:60]!r})")


class Budget:
    """Bytes that may still be read and decompressed."""

    def __init__(self, limit: float) -> None:
        self.left = int(limit)

    def take(self, count: int, what: str) -> None:
        """Spend ``count`` bytes; :class:`Refused` when there are not that many left."""
        if count > self.left:
            raise OverLimit(f"{what} is over return_limit_mb")
        self.left -= count


class Arrays(Mapping[str, Any]):
    """The arrays of a job's ``.npz``, read one at a time as a value needs them: each member's
    decompressed bytes count against :attr:`budget` (set per name), its header's shape must fit
    what was really read, and ``allow_pickle`` is never set."""

    def __init__(self, fh: Any, what: str) -> None:
        self.zip = _zip(fh, what)
        self.what = what
        self.budget = Budget(0)
        self._keys = {
            i.filename[:-4]: i for i in self.zip.infolist() if i.filename.endswith(".npy")
        }
        self._read: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key in self._read:
            return self._read[key]
        info = self._keys[key]
        data = bytearray()  # the array's own memory: no second copy of it is made
        for chunk in _member(self.zip, info, self.budget.left, f"{self.what} {key}"):
            data += chunk
        self.budget.take(len(data), f"array {key}")
        self._read[key] = array = _npy(data, f"{self.what} {key}")
        return array

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def close(self) -> None:
        """Close the archive."""
        self.zip.close()


_NPY_HEAD = 1 << 17
"""Bytes of an ``.npy`` member its header is read from (numpy writes headers of a few
hundred bytes, and reads none over 10,000 by default)."""


def _npy(data: bytearray, what: str) -> Any:
    """One ``.npy`` member: a plain array whose header fits its bytes, over ``data`` itself
    (writable, as ``numpy.load`` gives it)."""
    import numpy as np
    from numpy.lib import format as npformat

    fp = io.BytesIO(bytes(data[:_NPY_HEAD]))  # the header only
    try:
        version = npformat.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = npformat.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = npformat.read_array_header_2_0(fp)
        else:
            raise ValueError(f"npy format {version}")
        if dtype.hasobject:
            raise ValueError("an array of Python objects")
        count = 1
        for n in shape:
            count *= int(n)
        if count * dtype.itemsize != len(data) - fp.tell():
            raise ValueError("its header does not match its size")
        array = np.frombuffer(data, dtype=dtype, count=count, offset=fp.tell())
        return array.reshape(shape, order="F" if fortran else "C")
    except (ValueError, TypeError, OverflowError, SyntaxError) as exc:
        raise Refused(f"{what}: not a plain array ({str(exc)[:80]})") from None


def tree_bytes(tree: Any) -> int:
    """Bytes a returned JSON tree holds outside its arrays: its strings' and numbers'."""
    total, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise Refused(f"a value nested over {MAX_DEPTH} levels deep")
        if isinstance(node, str):
            total += len(node)
        elif isinstance(node, dict):
            stack.extend((k, depth + 1) for k in node)
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
        else:
            total += 8
    return total


# -- names ----------------------------------------------------------------------------------

IPYTHON_NAMES = frozenset(
    "In Out _ __ ___ _i _ii _iii _ih _oh _dh get_ipython exit quit display".split()
)
"""Names IPython keeps in a kernel's namespace, never set by a job."""
_IPYTHON_NUMBERED = re.compile(r"_i?\d+")


def name_refusal(name: str) -> str | None:
    """Why ``name`` is never set in the kernel by a job (None: it may be)."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        return "not a Python name"
    if name.startswith("__") and name.endswith("__"):
        return "a dunder"
    if name in IPYTHON_NAMES or _IPYTHON_NUMBERED.fullmatch(name):
        return "IPython's own"
    if name.startswith("_tfc"):
        return "this extension's own"
    return None


KEPT_CELL = "cell.json"


@dataclass
class KernelCell:
    """The kernel's own copy of a job's run cell (the script and source map it launched, kept
    outside the job folder): its ``import``, ``def`` and ``class`` statements and the names it
    binds, by the kernel's own parse."""

    statements: list[ast.stmt] = field(default_factory=list)
    script: list[ast.stmt] = field(default_factory=list)
    """Every statement it launched (the cells above the run cell too)."""

    @classmethod
    def parse(cls, script: str, source_map: str) -> KernelCell | None:
        """The run cell of a launched script (None: it has no run cell, or does not parse)."""
        from tfc_runtime import sourcemap

        try:
            smap = sourcemap.parse(json.loads(source_map))
            tree = ast.parse(script)
        except (ValueError, SyntaxError, TypeError, KeyError, RecursionError):
            return None
        if smap.run_cell is None:
            return None
        mine = [
            n
            for n in tree.body
            if (where := smap.locate(n.lineno)) is not None and where[0] == smap.run_cell
        ]
        return cls(mine, tree.body)

    @classmethod
    def before(
        cls, script: str, source_map: str, script_line: int
    ) -> tuple[KernelCell, str] | None:
        """What a failed job ran before its failing statement (the one holding ``script_line``),
        by the kernel's own parse of what it launched: the run cell's statements wholly before
        it (none when it failed above the run cell), else every cell's; and where that statement
        starts (``cell 4, line 5``). None: nothing ran before it, or the copy does not parse."""
        from tfc_runtime import sourcemap
        from tfc_runtime.runcell import before_failure

        try:
            smap = sourcemap.parse(json.loads(source_map))
            tree = ast.parse(script)
        except (ValueError, SyntaxError, TypeError, KeyError, RecursionError):
            return None
        if smap.script:
            return None
        cells = tuple((n, w[0] if (w := smap.locate(n.lineno)) else None) for n in tree.body)
        found = before_failure(cells, script_line, smap.run_cell)
        if found is None or not found[1]:
            return None
        return cls(found[1]), smap.describe(found[0].lineno)

    @classmethod
    def kept_before(
        cls, home: Path, job_id: str, script_line: int
    ) -> tuple[KernelCell, str] | None:
        """:meth:`before` of the copy :func:`keep` wrote at launch (None: none was kept)."""
        try:
            data = json.loads((home / KEPT / job_id / KEPT_CELL).read_text(encoding="utf-8"))
            return cls.before(str(data["script"]), str(data["map"]), script_line)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @classmethod
    def from_source(cls, source: str) -> KernelCell:
        """A cell's Python source, as the kernel parses it (SyntaxError: it does not parse)."""
        return cls(ast.parse(source).body)

    @classmethod
    def kept(cls, home: Path, job_id: str) -> KernelCell | None:
        """The copy :func:`keep` wrote at launch (None: none was kept)."""
        try:
            data = json.loads((home / KEPT / job_id / KEPT_CELL).read_text(encoding="utf-8"))
            return cls.parse(str(data["script"]), str(data["map"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def binds(self) -> list[str]:
        """Names the cell binds at top level."""
        from tfc_runtime.runcell import bound_names

        return bound_names(self.statements)

    def reads(self) -> list[str]:
        """Names the cell reads (a model it trains)."""
        from tfc_runtime.runcell import read_names

        return read_names(self.statements)

    def could_bind(self) -> set[str]:
        """Names the code it launched can bind: every cell's top-level bindings and the names
        its functions declare ``global``. A name the run cell changed without binding it (an
        object changed in place, a ``global`` set by a call) is set here only if it is one."""
        from tfc_runtime.runcell import bound_names

        names = set(bound_names(self.script))
        for node in self.script:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Global):
                    names.update(inner.names)
        return names

    def code(self) -> ast.Module:
        """Its ``import``, ``def`` and ``class`` statements (no ``__future__`` import)."""
        from tfc_runtime.runcell import CODE

        body: list[ast.stmt] = [
            n
            for n in self.statements
            if isinstance(n, CODE)
            and not (isinstance(n, ast.ImportFrom) and n.module == "__future__")
        ]
        return ast.Module(body=body, type_ignores=[])

    def code_names(self) -> set[str]:
        """Names its ``import``, ``def`` and ``class`` statements bind."""
        from tfc_runtime.runcell import bound_names

        return set(bound_names(self.code().body))


def keep(home: Path, job_id: str, script: str, source_map: str) -> None:
    """Keep the kernel's own copy of what it launched, outside the job folder, owner-only."""
    (home / KEPT).mkdir(mode=0o700, exist_ok=True)  # owner-only, as the rest of the home
    folder = home / KEPT / job_id
    folder.mkdir(mode=0o700, exist_ok=True)
    write_private(folder / KEPT_CELL, json.dumps({"script": script, "map": source_map}))


def home_of(job_dir: str | Path) -> Path:
    """The job home a job folder (``<home>/jobs/<id>``) belongs to."""
    return Path(job_dir).parent.parent


def admit_names(listed: Iterable[str], allowed: set[str]) -> tuple[list[str], dict[str, str]]:
    """``(names to set, {name: why skipped})``: a name must be one the run cell binds by the
    kernel's parse (``allowed``), none of :func:`name_refusal`'s, at most :data:`MAX_NAMES`."""
    admitted: list[str] = []
    skipped: dict[str, str] = {}
    for name in listed:
        why = name_refusal(name) or (None if name in allowed else "not bound by the run cell")
        if why is None and len(admitted) >= MAX_NAMES:
            why = f"over {MAX_NAMES} names"
        if why is None:
            admitted.append(name)
        elif len(skipped) < 50:
            skipped[str(name)[:60]] = why
    return admitted, skipped


# -- outputs --------------------------------------------------------------------------------

_SAFE_AS_IS = frozenset({"text/plain", "text/latex", "application/json", "image/png", "image/jpeg"})
_SANITIZED = frozenset({"text/html", "text/markdown"})
_TAGS = frozenset(
    "a abbr acronym b blockquote code em i li ol strong ul p div span br hr pre table"
    " thead tbody tfoot tr th td caption colgroup col h1 h2 h3 h4 h5 h6 img sub sup small"
    " dl dt dd del ins s u kbd samp var details summary progress figure figcaption mark q"
    " cite tt".split()
)
_ATTRIBUTES = {
    "*": {"class", "title", "align", "colspan", "rowspan", "border", "style", "dir", "lang"},
    "a": {"href", "rel"},
    "img": {"src", "alt", "width", "height"},
    "progress": {"value", "max"},
    "ol": {"start"},
}
_INLINE_IMAGE = re.compile(r"data:image/(png|jpeg|gif|svg\+xml)[;,]", re.IGNORECASE)


_WHOLE = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)


def _attribute(tag: str, name: str, value: str) -> bool:
    """Whether an attribute stays: those of :data:`_ATTRIBUTES`; an inline (``data:``) URL only
    as an image's ``src``."""
    if name not in _ATTRIBUTES["*"] and name not in _ATTRIBUTES.get(tag, ()):
        return False
    if value.strip().lower().startswith("data:"):
        return tag == "img" and name == "src" and bool(_INLINE_IMAGE.match(value.strip()))
    return True


def sanitize_html(text: str) -> str:
    """HTML as Jupyter shows an untrusted notebook's: scripts, event handlers, ``<style>``,
    forms and frames escaped (bleach, with the tags tables and figures need), URLs limited to
    ``http``, ``https``, ``mailto`` and inline images, styles to safe CSS properties."""
    import bleach
    from bleach.css_sanitizer import CSSSanitizer

    text = _WHOLE.sub("", text)  # their content too (a DataFrame's <style> block): bleach
    return str(  # escapes whatever this misses
        bleach.clean(
            text,
            tags=_TAGS,
            attributes=_attribute,
            protocols={"http", "https", "mailto", "data"},
            css_sanitizer=CSSSanitizer(),
            strip=False,
            strip_comments=True,
        )
    )


def _svg_as_image(svg: str) -> str:
    """An SVG shown as an image (``<img src="data:...">``): a browser runs no script in it."""
    import base64

    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img src="data:image/svg+xml;base64,{data}" alt="SVG output of the job">'


def safe_bundle(data: Mapping[str, Any]) -> dict[str, Any]:
    """A job's MIME bundle as Jupyter shows an untrusted notebook's outputs: plain text,
    images, JSON and LaTeX as they are; HTML and Markdown sanitized (:func:`sanitize_html`);
    an SVG as an inert image; JavaScript and every other type dropped."""
    out: dict[str, Any] = {}
    for mime, value in data.items():
        if mime in _SAFE_AS_IS:
            out[mime] = value
        elif mime in _SANITIZED and isinstance(value, (str, list)):
            text = "".join(value) if isinstance(value, list) else value
            out[mime] = sanitize_html(text)
        elif mime == "image/svg+xml" and "text/html" not in data and isinstance(value, str):
            out["text/html"] = _svg_as_image(value)
    if not out:
        out["text/plain"] = "<an output of the job that is not shown: " + ", ".join(
            sorted(str(k)[:40] for k in data)[:5]
        ) + ">"  # fmt: skip
    return out


def display_id(value: Any) -> str | None:
    """A display id a job named, if it is a short plain string (else None: a new output)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value or len(value) > MAX_DISPLAY_ID:
        return None
    return value if re.fullmatch(r"[\w.:-]+", value) else None


# -- files ----------------------------------------------------------------------------------


@dataclass
class Placed:
    """What :func:`place_files` did: files copied, refused (path, why), over the caps."""

    copied: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    over: list[str] = field(default_factory=list)  # the first ten
    over_count: int = 0
    deleted: list[str] = field(default_factory=list)  # files the cell deleted, deleted here
    linked: list[str] = field(default_factory=list)  # links the cell made, made here

    def left_over(self, rel: str) -> None:
        """A file past the caps: it stays in the job folder."""
        self.over_count += 1
        if len(self.over) < 10:
            self.over.append(rel)

    def lines(self, limit_mb: float, max_files: int, source: Path) -> list[str]:
        """The lines the cell shows."""
        out = []
        if self.copied:
            more = f" and {len(self.copied) - 20} more" if len(self.copied) > 20 else ""
            out.append("Files the cell wrote, next to the notebook: "
                       + ", ".join(self.copied[:20]) + more)  # fmt: skip
        for what, done in (("Deleted by the cell", self.deleted), ("Links it made", self.linked)):
            if done:
                more = f" and {len(done) - 20} more" if len(done) > 20 else ""
                out.append(f"{what}, next to the notebook: " + ", ".join(done[:20]) + more)
        if self.refused:
            more = f" and {len(self.refused) - 10} more" if len(self.refused) > 10 else ""
            out.append(
                "! not copied: " + "; ".join(f"{p} ({why})" for p, why in self.refused[:10]) + more
            )
        if self.over:
            out.append(
                f"! over return_limit_mb ({limit_mb:g} MB) or return_max_files ({max_files}), "
                f"left in {source}: " + ", ".join(self.over)
                + (f" and {self.over_count - 10} more" if self.over_count > 10 else "")
            )  # fmt: skip
        return out


def file_refusal(parts: list[str], dest: Path, notebook: Path | None) -> str | None:
    """Why a returned file may not be put at ``dest/<parts>`` (None: it may)."""
    for part in parts:
        why = bad_part(part)
        if why:
            return why
        if part.startswith("."):
            return "a dotfile or dot folder: never written"
    target = dest.joinpath(*parts)
    if notebook is not None and target == notebook:
        return "the notebook itself"
    if target.suffix == ".ipynb" and os.path.lexists(target):
        return "a notebook of yours"
    if (len(parts) == 1 and target.suffix in (".py", ".so")) or target.suffix == ".pth":
        stem = target.name.split(".")[0]
        if target.suffix == ".pth" or _shadows(stem):
            return f"it would take the place of the module {stem} in the next import"
    return None


def _shadows(module: str) -> bool:
    """Whether a ``module.py`` next to the notebook would hide a module the kernel imports."""
    if module in ("sitecustomize", "usercustomize"):  # Python runs these when it starts
        return True
    if module in sys.stdlib_module_names or module in sys.builtin_module_names:
        return True
    if module in sys.modules:
        return True
    from importlib.machinery import PathFinder

    here = {"", os.getcwd()}
    return PathFinder.find_spec(module, [p for p in sys.path if p not in here]) is not None


def _real_folder(dest: Path, parts: list[str]) -> str | None:
    """Why the folders leading to ``dest/<parts>`` cannot hold a file (a link, a file in the
    way); None when each is a real folder or is not there yet."""
    here = dest
    for part in parts[:-1]:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(mode):
            return "a link here: not followed"
        if not stat.S_ISDIR(mode):
            return f"{here.name} here is a file, not a folder"
    try:
        mode = os.lstat(dest.joinpath(*parts)).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        return "a link here: not followed"
    if not stat.S_ISREG(mode):
        return "a folder or special file here"
    return None


def _listing(source: Path, limit: int) -> Iterator[tuple[list[str], int | str]]:
    """``(parts, size or why not)`` of each entry under ``source``, no link followed, at most
    ``limit`` entries looked at."""
    seen = 0
    stack: list[tuple[Path, list[str]]] = [(source, [])]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        for entry in listed:
            seen += 1
            if seen > limit:
                yield [*prefix, entry.name], "over the number of files looked at"
                return
            parts = [*prefix, entry.name]
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                stack.append((Path(entry.path), parts))
            elif stat.S_ISREG(info.st_mode):
                yield parts, info.st_size
            else:
                kind = "a link" if stat.S_ISLNK(info.st_mode) else KIND.get(
                    stat.S_IFMT(info.st_mode), "not a regular file")  # fmt: skip
                yield parts, f"{kind}, not a file"


def place_files(
    job_dir: Path | str,
    leaf: str,
    dest: Path | str,
    started: float,
    *,
    limit_mb: float,
    max_files: int,
    notebook: Path | None = None,
) -> Placed:
    """Put the regular files under ``job_dir/leaf`` next to the notebook (``dest``), under the
    policy of the module's docstring: a file the user changed since ``started`` is kept (the
    job's stays in the job folder, said); past ``limit_mb`` or ``max_files`` the rest stays.
    Each file is written to a temporary name beside its place, then renamed over it (a link
    there is replaced, never followed)."""
    placed = Placed()
    root = Path(job_dir)
    try:
        if not stat.S_ISDIR(os.lstat(root / leaf).st_mode):
            placed.refused.append((leaf, "not a folder"))
            return placed
    except FileNotFoundError:
        return placed
    dest = Path(dest).resolve()
    total, limit = 0, int(limit_mb * (1 << 20))
    for parts, size in _listing(root / leaf, max(100 * max_files, MAX_LISTED)):
        rel = "/".join(parts)
        if isinstance(size, str):
            placed.refused.append((rel, size))
            continue
        why = file_refusal(parts, dest, notebook) or _real_folder(dest, parts)
        if why:
            placed.refused.append((rel, why))
            continue
        target = dest.joinpath(*parts)
        if len(placed.copied) >= max_files or total + size > limit:
            placed.left_over(rel)
            continue
        try:
            data = read_bytes(root, f"{leaf}/{rel}", limit - total)
        except (Refused, OSError) as exc:
            placed.refused.append((rel, str(exc).split(": ", 1)[-1][:80]))
            continue
        with contextlib.suppress(OSError):
            info = os.lstat(target)
            if stat.S_ISREG(info.st_mode) and target.read_bytes() == data:
                continue  # brought back already (a re-attach)
            if info.st_mtime > started:
                placed.refused.append((rel, "yours changed since the job started; the "
                                       f"job's is in {root / leaf / rel}"))  # fmt: skip
                continue
        try:
            _write_beside(target, data)
        except OSError as exc:
            placed.refused.append((rel, exc.strerror or str(exc)))
            continue
        total += len(data)
        placed.copied.append(rel)
    return placed


MAX_CHANGES = 10_000
"""Deletions and links one job applies next to the notebook at most."""


def _change_refusal(parts: list[str], dest: Path, notebook: Path | None) -> str | None:
    """Why the place ``dest/<parts>`` may not be deleted or made a link (None: it may): a
    dotfile or dot folder, a notebook, a link or a file on the way."""
    for part in parts:
        why = bad_part(part) or ("a dotfile or dot folder" if part.startswith(".") else None)
        if why:
            return why
    target = dest.joinpath(*parts)
    if target.suffix == ".ipynb" or (notebook is not None and target == notebook):
        return "a notebook: never deleted or replaced"
    here = dest
    for part in parts[:-1]:
        here = here / part
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return "a link or a file on the way: not followed"
    return None


def _link_refusal(rel: str, target: Any, dest: Path) -> str | None:
    """Why a link the cell made at ``rel`` pointing to ``target`` is not made here: it points
    outside the notebook's folder (absolute, up past it, through a link that leaves it) or into
    a dot folder."""
    if not isinstance(target, str) or not target or bad_part(target.replace("/", "_")):
        return "a link with an unreadable target: not made"
    if os.path.isabs(target):
        return f"a link to {target}, outside the notebook's folder: not made"
    inside = os.path.normpath(os.path.join(os.path.dirname(rel), target))
    if inside == ".." or inside.startswith("../") or inside == ".":
        return f"a link to {target}, outside the notebook's folder: not made"
    if any(part.startswith(".") for part in inside.split("/")):
        return f"a link to {target}, into a dot folder: not made"
    if inside == os.path.normpath(rel):
        return "a link to itself: not made"
    if not Path(os.path.realpath(dest.joinpath(inside))).is_relative_to(dest):
        return f"a link to {target}, through a link out of the notebook's folder: not made"
    return None


def _changes(job_dir: Path) -> tuple[list[str], dict[str, Any]]:
    """The files the cell deleted and the links it made (the job folder's ``files.json``,
    read through the border); empty when there is none or it is not readable."""
    try:
        data = read_json(job_dir, "files.json", MAX_OUTPUT_BYTES)
    except (OSError, Refused):
        return [], {}
    if not isinstance(data, dict):
        return [], {}
    deleted, links = data.get("deleted"), data.get("links")
    deleted = [d for d in deleted if isinstance(d, str)] if isinstance(deleted, list) else []
    links = dict(links) if isinstance(links, dict) else {}
    return deleted[:MAX_CHANGES], dict(list(links.items())[:MAX_CHANGES])


def apply_changes(
    job_dir: Path | str, dest: Path | str, started: float, placed: Placed, notebook: Path | None
) -> None:
    """Delete next to the notebook (``dest``) the files the run cell deleted in its image, and
    make the links it made that point inside the folder (the others are named), under the
    border's rules: never a dotfile, a dot folder or a notebook, never through a link, never a
    file the user changed since ``started``; a link never over a file."""
    dest = Path(dest).resolve()
    deleted, links = _changes(Path(job_dir))
    for rel in deleted:
        try:
            parts = parts_of(rel)
        except Refused as exc:
            placed.refused.append((rel[:80], str(exc)[:80]))
            continue
        target = dest.joinpath(*parts)
        why = _change_refusal(parts, dest, notebook)
        try:
            info = os.lstat(target)
        except (FileNotFoundError, NotADirectoryError):
            continue  # not here either
        if why is None and not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            why = "a folder or special file here"
        if why is None and info.st_mtime > started:
            why = "yours changed since the job started: kept"
        if why is None:
            try:
                target.unlink()
                placed.deleted.append(rel)
                continue
            except OSError as exc:
                why = exc.strerror or str(exc)
        placed.refused.append((rel, f"deleted by the cell, kept: {why}"))
    for rel, to in links.items():
        _make_link(dest, str(rel), to, placed, notebook)


def _make_link(dest: Path, rel: str, to: Any, placed: Placed, notebook: Path | None) -> None:
    """Make one link the cell made (see :func:`apply_changes`)."""
    try:
        parts = parts_of(rel)
    except Refused as exc:
        placed.refused.append((rel[:80], str(exc)[:80]))
        return
    why = _change_refusal(parts, dest, notebook) or _link_refusal(rel, to, dest)
    place = dest.joinpath(*parts)
    if why is None and os.path.lexists(place):
        if os.path.islink(place) and os.readlink(place) == to:
            return  # made already (a re-attach)
        why = "something is there already: kept"
    if why is None:
        try:
            place.parent.mkdir(parents=True, exist_ok=True)
            tmp = place.parent / f".tfc-link-{os.getpid()}-{place.name}"[:255]
            os.symlink(str(to), tmp)
            os.replace(tmp, place)
            placed.linked.append(f"{rel} -> {to}")
            return
        except OSError as exc:
            why = exc.strerror or str(exc)
    placed.refused.append((rel, why))


def _write_beside(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` through a temporary file beside it, renamed over it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tfc-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def object_name(prefix: str, name: str) -> list[str] | None:
    """The relative parts of a bucket object ``name`` under ``prefix`` (None: refused, an
    absolute path, ``..``, NUL or a control character)."""
    if not name.startswith(prefix) or name.endswith("/"):
        return None
    try:
        return parts_of(name[len(prefix) :])
    except Refused:
        return None
