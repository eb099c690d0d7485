"""stdout and stderr kept apart line by line in the job's log.

A replica's stdout and stderr go to one log (a file here, a pipe on docker, Cloud Logging on
Vertex AI), and the cell shows that log line by line, each ``\\r`` going back to its line's
start. Jupyter keeps the two streams in outputs of their own: a progress bar on stderr
(tqdm's ``\\r`` updates) and the code's own ``\\r`` prints on stdout never share a line
there. In one log they did: the print wrote over the bar, and what the cell showed was the two
spliced together.

:func:`install` wraps ``sys.stdout`` and ``sys.stderr``: when one stream writes while the
other's line is not ended, that line is ended first (a ``\\n`` in the log, on its own stream),
where Jupyter would start another output; the ``\\n`` its stream writes next ends that line
(no blank line). :func:`end_line` ends an unfinished line before
what is not a print (the traceback of a failed job, a rich output): Jupyter shows those
apart too. What the code wrote is unchanged otherwise, and the executed notebook records it
as written (:mod:`tfc_runtime.executed` wraps these streams). Standard library only.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import IO, Any

_lock = threading.RLock()
_open: list[IO[str]] = []  # the stream whose last line is not ended (at most one)
_ended: list[IO[str]] = []  # the stream whose line end_line() ended, nothing written since


class LineStream:
    """A text stream that ends the other stream's unfinished line before it writes."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        """Write ``text``, after ending the other stream's unfinished line."""
        if not isinstance(text, str) or not text:
            return self._stream.write(text)
        with _lock:
            if _open and _open[0] is not self._stream:
                end_line()
            given = len(text)
            if self._stream in _ended and text.startswith("\n"):
                text = text[1:]  # the end of the line end_line() ended: no blank line
            _ended[:] = [s for s in _ended if s is not self._stream]
            if not text:
                return given
            self._stream.write(text)
            _open[:] = [] if text.endswith("\n") else [self._stream]
        return given

    def writelines(self, lines: Any) -> None:
        """Write each of ``lines``."""
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def end_line() -> None:
    """End the unfinished line of either stream (a ``\\n`` on that stream); nothing when both
    ended theirs."""
    with _lock:
        if not _open:
            return
        stream = _open.pop()
        _ended.append(stream)
        with contextlib.suppress(Exception):  # a closed stream: nothing to end
            stream.write("\n")
            stream.flush()


def install() -> None:
    """Keep the job's stdout and stderr apart line by line (see the module docstring)."""
    if isinstance(sys.stdout, LineStream) or sys.stdout is None or sys.stderr is None:
        return
    sys.stdout = LineStream(sys.stdout)
    sys.stderr = LineStream(sys.stderr)
