"""A job's file read once: the border's private copy of it, in memory, made as it is read
(issue 49).

The border loads a Keras model from its own copy of the job's ``.keras`` file, never from the
job's (:func:`tfc_jupyter.returns.border.open_copy`): what is checked is what is loaded,
whatever the job does to its file meanwhile. Copying 286 MB to a file and then reading it back
cost a third more than Keras' own load of the file. :class:`ReadOnce` is that copy without the
second pass: each byte of the job's file is read from it at most once, into this process's
memory, and every read after that (the zip check's, then Keras') is served from what was read.
A read of bytes not read yet reads exactly those; Keras' one read of a model's weights is then
a single read whose bytes are handed over as they are, not copied again.
"""

from __future__ import annotations

import bisect
import errno
import io
import os
from pathlib import Path
from typing import Any


class Changed(OSError):
    """The job's file ended before the size it had when it was opened."""


class ReadOnce(io.RawIOBase):
    """The ``size`` first bytes of the open file ``fd`` (a descriptor this takes), each read
    from it once and kept: a read-only, seekable file of what was read. ``name`` is ``path``,
    where :meth:`finish` writes the whole copy (owner-only) when a path is needed."""

    def __init__(self, fd: int, path: Path, size: int) -> None:
        super().__init__()
        self.name = str(path)
        self.size = size
        self._fd = fd
        self._pos = 0
        self._starts: list[int] = []  # the pieces read, by where they start (none overlap)
        self._pieces: list[bytes] = []

    def _fill(self, start: int, end: int) -> None:
        """Read from the job's file what of ``start``..``end`` was never read."""
        at = start
        while at < end:
            i = bisect.bisect_right(self._starts, at) - 1  # the piece at or before ``at``
            if i >= 0 and at < self._starts[i] + len(self._pieces[i]):
                at = self._starts[i] + len(self._pieces[i])  # read already
                continue
            gap_end = min(self._starts[i + 1] if i + 1 < len(self._starts) else self.size, end)
            data = os.pread(self._fd, gap_end - at, at)
            while len(data) < gap_end - at:  # a read over 2 GB comes in parts
                more = os.pread(self._fd, gap_end - at - len(data), at + len(data))
                if not more:
                    raise Changed(errno.EIO, f"{self.name}: it changed while it was read")
                data += more
            self._starts.insert(i + 1, at)
            self._pieces.insert(i + 1, data)
            at = gap_end

    def _get(self, start: int, end: int) -> bytes:
        """Bytes ``start``..``end``, as read: one piece as it is when one holds them all."""
        self._fill(start, end)
        i = bisect.bisect_right(self._starts, start) - 1
        first, piece = self._starts[i], self._pieces[i]
        if first == start and first + len(piece) == end:
            return piece  # Keras' read of a model's weights: handed over, not copied
        if first + len(piece) >= end:
            return piece[start - first : end - first]
        parts = []
        while start < end:
            first, piece = self._starts[i], self._pieces[i]
            parts.append(piece[start - first : end - first])
            start, i = first + len(piece), i + 1
        return b"".join(parts)

    def read(self, size: int | None = -1) -> bytes:
        end = self.size if size is None or size < 0 else min(self.size, self._pos + size)
        if end <= self._pos:
            return b""
        data = self._get(self._pos, end)
        self._pos = end
        return data

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def readall(self) -> bytes:
        return self.read(-1)

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

    def finish(self) -> Path:
        """The whole copy written to :attr:`name` (owner-only), from what was read and what was
        not read yet (read now, once); its path."""
        self._fill(0, self.size)
        fd = os.open(self.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            for piece in self._pieces:
                out.write(piece)
        return Path(self.name)

    def close(self) -> None:
        """Close the job's file; what was read is let go."""
        if not self.closed:
            os.close(self._fd)
            self._starts, self._pieces = [], []
        super().close()
