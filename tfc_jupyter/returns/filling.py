"""A private copy of a job's file, read while a thread makes it (issue 49).

The border loads a Keras model from its own copy of the job's ``.keras`` file, never from the
job's (:func:`tfc_jupyter.returns.border.open_copy`). Copying 286 MB takes a few tenths of a
second; Keras spends about as long building the model from its ``config.json`` before it reads
a weight. :class:`Filling` lets the two overlap: a thread copies the file's end first (where a
zip lists its members), then the rest from the start in steps, and each read waits until the
bytes it asks for are in the copy. What is read is only ever the copy: bytes copied once, from
a size fixed when the copy began, never read again from the job's file.
"""

from __future__ import annotations

import errno
import io
import os
import threading
from pathlib import Path
from typing import Any

TAIL = 8 << 20
"""Bytes at the end of a file copied first: a zip's member list (at most 4 MB, the border's
cap) and its end record."""
STEP = 16 << 20
"""Bytes copied before readers waiting on them are woken."""

_REFUSED = frozenset(
    getattr(errno, name)
    for name in ("EXDEV", "ENOSYS", "EINVAL", "EOPNOTSUPP", "ENOTSUP", "EBADF", "EPERM",
                 "ETXTBSY", "EIO", "ENODATA")
    if hasattr(errno, name)
)  # fmt: skip
"""What ``copy_file_range`` answers where file systems do not copy that way."""


class Changed(OSError):
    """The job's file was shorter than when the copy began: it changed while it was copied."""


def copy_range(src: int, dst: int, start: int, end: int, fast: list[bool]) -> None:
    """Copy bytes ``start`` to ``end`` of ``src`` to the same place in ``dst``: by
    ``copy_file_range`` while ``fast[0]`` holds (cleared where file systems refuse it), else
    through a buffer. :class:`Changed` where ``src`` ends before ``end``."""
    pos = start
    while pos < end:
        count = 0
        if fast[0]:
            try:
                count = os.copy_file_range(src, dst, end - pos, pos, pos)
            except OSError as exc:
                if exc.errno not in _REFUSED:
                    raise
            if count == 0:
                fast[0] = False  # refused, or a file system that copies nothing this way
                continue
        else:
            data = os.pread(src, min(end - pos, 1 << 20), pos)
            count = len(data)
            if count:
                os.pwrite(dst, data, pos)
        if count == 0:
            raise Changed(errno.EIO, "it changed while it was copied")
        pos += count


class Filling(io.RawIOBase):
    """The private copy at ``path`` of the ``size`` first bytes of ``src`` (a descriptor this
    takes), as a read-only file while a thread fills it: a read waits for its bytes; once the
    copy failed, a read raises what failed (:class:`Changed`: the job's file got shorter).
    ``name`` is the copy's path; :meth:`finish` waits for the whole copy."""

    def __init__(self, src: int, path: Path, size: int) -> None:
        super().__init__()
        self.name = str(path)
        self.size = size
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self._pos = 0
        self._tail = max(0, size - TAIL)  # copied first
        self._head = 0  # bytes before it copied so far
        self._tail_done = False
        self._error: BaseException | None = None
        self._stop = False
        self._cond = threading.Condition()
        dst = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
        self._thread = threading.Thread(
            target=self._fill, args=(src, dst), name="tfc-copy", daemon=True
        )
        self._thread.start()

    def _fill(self, src: int, dst: int) -> None:
        fast = [hasattr(os, "copy_file_range")]
        try:
            copy_range(src, dst, self._tail, self.size, fast)
            with self._cond:
                self._tail_done = True
                self._cond.notify_all()
            while self._head < self._tail and not self._stop:
                end = min(self._head + STEP, self._tail)
                copy_range(src, dst, self._head, end, fast)
                with self._cond:
                    self._head = end
                    self._cond.notify_all()
        except BaseException as exc:  # a reader raises it
            with self._cond:
                self._error = exc
                self._cond.notify_all()
        finally:
            os.close(src)
            os.close(dst)

    def _has(self, start: int, end: int) -> bool:
        return end <= self._head or (self._tail_done and max(start, self._head) >= self._tail)

    def _wait(self, start: int, end: int) -> None:
        with self._cond:
            while not self._has(start, end):
                if self._error is not None:
                    raise OSError(f"{self.name}: {self._error}") from None
                self._cond.wait()

    def finish(self) -> Path:
        """Wait until the whole copy is made; its path (OSError: it could not be made)."""
        self._wait(0, self.size)
        return Path(self.name)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise OSError(errno.EINVAL, "a negative position")
        self._pos = base + offset
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        end = self.size if size is None or size < 0 else min(self.size, self._pos + size)
        if end <= self._pos:
            return b""
        self._wait(self._pos, end)
        data = os.pread(self._fd, end - self._pos, self._pos)
        while len(data) < end - self._pos:  # a read over 2 GB comes in parts
            more = os.pread(self._fd, end - self._pos - len(data), self._pos + len(data))
            if not more:
                raise OSError(errno.EIO, f"{self.name}: shorter than its copy")
            data += more
        self._pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def readall(self) -> bytes:
        return self.read(-1)

    def close(self) -> None:
        """Stop the copy (if it is not done) and close the file."""
        if self.closed:
            return
        self._stop = True
        self._thread.join()
        os.close(self._fd)
        super().close()
