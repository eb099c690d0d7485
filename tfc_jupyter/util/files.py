"""Files: reading the ones a user names safely, writing our own owner-only.

A FIFO, a device (``/dev/zero``) or a socket is refused, never read: reading one hangs or never
ends. Every read has a size bound. Errors are one line naming the file and the fix.

What the product writes for a job (scripts, launch files, logs, outcomes, requests) may hold
what the user's code printed or the job's variables: :func:`write_private` and
:func:`open_private` create it owner-only (0600) whatever the umask.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

from ..errors import SpecError, TfcError

KIND = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


class UnsafeFile(TfcError):
    """A named file that is not a regular file, or is over its size bound."""


def file_kind(path: Path) -> str | None:
    """``"a FIFO"``-style words when ``path`` (links followed) is not a regular file; None when
    it is one, or does not exist."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else KIND.get(stat.S_IFMT(mode), "not a regular file")


def human_size(n: float) -> str:
    """A size as people read it: ``12 B``, ``3.4 KB``, ``340 KB``, ``1 MB``, ``1.2 GB`` (powers
    of 1000)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            whole = unit == "B" or n >= 100
            return f"{n:.0f} {unit}" if whole else f"{n:.1f}".removesuffix(".0") + f" {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def write_private(path: Path, text: str, *, atomic: bool = False) -> None:
    """Write ``text`` to ``path``, owner-only (0600). ``atomic``: through a temporary file
    beside it, so a reader sees the old content or the new, never half of it."""
    target = path.with_name(f".{path.name}.tmp") if atomic else path
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if atomic:
            os.replace(target, path)
    except BaseException:
        if atomic:
            with contextlib.suppress(OSError):
                os.unlink(target)
        raise


def open_private(path: Path, mode: str = "ab", **kwargs: Any) -> IO[Any]:
    """Open ``path`` to append (``"ab"`` or ``"a"``), creating it owner-only (0600) whatever the
    umask: job logs may hold what the user's code printed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    return os.fdopen(fd, mode, **kwargs)


def mount_of(path: Path | str) -> Path:
    """The mount point holding ``path`` (its nearest existing folder when it does not exist)."""
    here = Path(os.path.abspath(path))
    while not here.exists() and here != here.parent:
        here = here.parent
    while not os.path.ismount(here) and here != here.parent:
        here = here.parent
    return here


def is_disk_full(exc: BaseException) -> bool:
    """True for an error that says the disk (or the user's quota) is full."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return "no space left" in text or "database or disk is full" in text


def disk_full(path: Path | str, need: int | None = None) -> str:
    """``the disk at /home (holding /home/me/x) is full: 12 KB free, about 2 MB needed``."""
    mount = mount_of(path)
    try:
        free = f"{human_size(shutil.disk_usage(mount).free)} free"
    except OSError:
        free = "free space unknown"
    needed = f", about {human_size(need)} needed" if need else ""
    return f"the disk at {mount} (holding {path}) is full: {free}{needed}"


_READ_NOW = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
"""Open for reading without waiting: O_NONBLOCK opens a FIFO with no writer at once."""


def open_regular(path: Path | str) -> IO[bytes] | None:
    """``path`` open for reading; None where it is not a regular file (a FIFO or a device is
    never waited on).

    Raises:
        OSError: it cannot be opened (FileNotFoundError: there is none).
    """
    fd = os.open(path, _READ_NOW)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def read_regular(path: Path | str, limit: int, what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Raises:
        OSError: it cannot be opened (missing, no permission).
        UnsafeFile: it is not a regular file, or is larger than ``limit``.
    """
    fd = os.open(path, _READ_NOW)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = KIND.get(stat.S_IFMT(mode), "not a regular file")
            raise UnsafeFile(
                f"cannot read {what} {str(path)!r}: it is {kind}, not a file",
                "name a regular file",
            )
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise UnsafeFile(
                    f"{what} {str(path)!r} is over {human_size(limit)}",
                    "name a smaller file (is it the right one?)",
                )
        return b"".join(chunks)
    finally:
        os.close(fd)


_ROOT: ContextVar[Path | None] = ContextVar("tfc_jupyter_root", default=None)


@contextlib.contextmanager
def confined(root: Path) -> Iterator[None]:
    """Within it, every file a plan follows (requirements files, ``-r`` lines, ``--include``
    paths and the links in them) must really be inside ``root``: the jobs API's server root.
    The CLI and the magic set none: their user may name any file of theirs."""
    token = _ROOT.set(Path(root).resolve())
    try:
        yield
    finally:
        _ROOT.reset(token)


LINK_LOOP = "a loop of symbolic links"
OUTSIDE_ROOT = "links out of the root"


def leads_out(path: Path) -> str | None:
    """Why a file may not go with a job: :data:`LINK_LOOP`, or (within :func:`confined`)
    :data:`OUTSIDE_ROOT`; None when it may."""
    try:
        real = Path(path).resolve()
    except (RuntimeError, OSError):  # a loop of links (RuntimeError up to Python 3.12)
        return LINK_LOOP
    root = _ROOT.get()
    return OUTSIDE_ROOT if root is not None and not real.is_relative_to(root) else None


def real_path(path: Path, what: str, field: str) -> None:
    """Refuse a path that is a loop of links, or that leads out of the :func:`confined` root.

    Raises:
        SpecError: naming the path and the fix.
    """
    why = leads_out(path)
    if why == LINK_LOOP:
        raise SpecError(
            f"{what} {str(path)!r} is a loop of symbolic links",
            "point the link at a file, or name the file itself",
            field=field,
        )
    if why == OUTSIDE_ROOT:
        raise SpecError(
            f"{what} {str(path)!r} leads outside the server's root folder",
            "name a file inside the root folder (a link may not point out of it)",
            field=field,
        )
