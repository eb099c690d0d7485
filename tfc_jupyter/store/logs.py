"""Reading a job's replica logs: the one reader behind the cell, the CLI, the panel and the API.

Every replica writes ``<job_dir>/logs/<replica>.log``. :func:`read_chunk` reads one log from a
byte offset, whole lines only (so a line being written is never cut), with a size bound;
:class:`LogTail` follows every replica's log with it, line by line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from tfc_runtime.protocol import RESULT_PREFIX as _REPORT  # the runtime's report lines
from tfc_runtime.protocol import ROLES

from ..util.files import open_regular

CHUNK = 1 << 20
"""Most bytes one read takes from one log."""
_ORDER = {role: i for i, role in enumerate(ROLES)}


class OffsetPastEnd(ValueError):
    """The offset asked for is past the end of the log (the caller names the fix)."""


def read_chunk(path: Path, offset: int, limit: int = CHUNK, *, final: bool) -> tuple[bytes, int]:
    """``(data, size)``: at most ``limit`` bytes of the log from ``offset``, cut after its last
    complete line (``final``: the job has ended, the last line is complete as it is). A single
    line longer than ``limit`` is cut at a UTF-8 character boundary. A missing log is empty,
    and so is anything that is not a regular file (a FIFO, a device): reading one could wait
    for ever.

    Raises:
        OffsetPastEnd: ``offset`` is past the end of the file.
    """
    try:
        fh = open_regular(path)  # a FIFO in the job's folder is never waited on
        if fh is None:
            return b"", 0  # not a log the job wrote: nothing to show
        with fh:
            size = fh.seek(0, 2)
            if offset > size:
                raise OffsetPastEnd(f"offset {offset} is past the end of the log ({size} bytes)")
            fh.seek(offset)
            data = fh.read(limit)
    except FileNotFoundError:
        if offset:
            raise OffsetPastEnd("that replica has no log yet") from None
        return b"", 0
    if not (final and offset + len(data) == size):
        cut = data.rfind(b"\n") + 1
        if cut:
            data = data[:cut]
        elif len(data) == limit:  # one long line: cut at a UTF-8 character boundary
            data = _utf8_prefix(data)
        else:
            data = b""  # a partial last line: wait for the rest
    return data, size


def _utf8_prefix(data: bytes) -> bytes:
    """``data`` less a multi-byte character cut at its end (unchanged if that leaves nothing)."""
    end = len(data)
    while end and (data[end - 1] & 0xC0) == 0x80:  # continuation bytes
        end -= 1
    if end and data[end - 1] >= 0xC0:  # the lead byte of the cut character
        end -= 1
    return data[:end] or data


def in_order(names: list[str]) -> list[str]:
    """Replica names chief first, then workers, parameter servers and the evaluator."""
    return sorted(names, key=lambda n: (_ORDER.get(n.split("-")[0], 9), n))


def replicas(log_dir: Path) -> list[str]:
    """Replica names with a log so far (chief first; the watcher's own log is not one)."""
    return in_order([p.stem for p in log_dir.glob("*.log") if p.stem != "supervisor"])


LONG_LINE = 64 << 20
"""The longest line a finished job's log gives whole (characters); longer ones come in pieces."""


class LogTail:
    """Follows every replica log of a job folder from an offset, line by line."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.offsets: dict[str, int] = {}

    def replicas(self) -> list[str]:
        """Replica names with a log so far (chief first)."""
        return replicas(self.log_dir)

    def read(self, *, final: bool = False) -> list[tuple[str, str]]:
        """New complete lines as ``(replica, line)``; ``final`` also takes unfinished last
        lines (the job has ended)."""
        return list(self.lines(final=final))

    def lines(self, *, final: bool = False) -> Iterator[tuple[str, str]]:
        """:meth:`read`, a chunk at a time: a log of any size is never held whole. With
        ``final`` (the job has ended), a line longer than a chunk comes whole, up to
        :data:`LONG_LINE` characters (then in pieces of that size)."""
        for name in self.replicas():
            offset = self.offsets.get(name, 0)
            carry = ""  # the start of a long line, with final
            while True:
                try:
                    data, size = read_chunk(self.log_dir / f"{name}.log", offset, final=final)
                except (OSError, OffsetPastEnd):  # replaced or truncated: nothing to add
                    break
                offset += len(data)
                text = data.decode("utf-8", errors="replace")
                long = final and data and b"\n" not in data and offset < size
                if long and len(carry) + len(text) < LONG_LINE:  # the start of a long line
                    carry += text
                    self.offsets[name] = offset
                    continue
                text, carry = carry + text, ""
                if text.endswith("\n"):
                    text = text[:-1]
                # "\n" alone ends a line: a "\r" rewrites it (a progress bar), see render()
                lines = text.split("\n") if text or data else []
                self.offsets[name] = offset
                for ln in lines:
                    yield name, ln[:-1] if ln.endswith("\r") else ln  # CRLF
                if not data or offset >= size:
                    break

    def partial(self, name: str, limit: int = 65536) -> str:
        """The line ``name`` is writing now, not yet ended (a progress bar between updates);
        "" when its log ends with a complete line."""
        return unfinished_line(self.log_dir / f"{name}.log", self.offsets.get(name, 0), limit)[0]


def unfinished_line(path: Path, offset: int, limit: int = 65536) -> tuple[str, bool]:
    """``(text, cut)``: the line being written at the end of the log past ``offset`` (where the
    complete lines read so far end), its last ``limit`` bytes at most (``cut``: it is longer);
    ``("", False)`` when the log ends with a complete line or has complete lines not read yet."""
    try:
        fh = open_regular(path)  # a FIFO in the job's folder is never waited on
        if fh is None:
            return "", False
        with fh:
            size = fh.seek(0, 2)
            if size <= offset:
                return "", False
            start = max(offset, size - limit)
            fh.seek(start)
            data = fh.read(limit)
    except OSError:
        return "", False
    if b"\n" in data:  # a complete line not read yet: it is read next
        return "", False
    return _utf8_prefix(data).decode("utf-8", errors="replace"), start > offset


# ---------------------------------------------------------------------------- what is shown
_NOISE = re.compile(
    "|".join(
        (
            # TensorFlow's C++ logging (info and warnings): in Jupyter it goes to the server's
            # terminal, never into the notebook, so the cell does not show it either.
            r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written",
            r"^[IW]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [\w.-]+:\d+\] ",
            r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] (tensorflow|external|xla)/",
            r"^To enable the following instructions: .* rebuild TensorFlow with the appropriate",
            # the runtime's status lines (its warnings, refusals, waits and failed commands are
            # kept; a failure is said once, at the end)
            r"^\[tfc_runtime\] (?!warning:|cannot |!|(fit|loop) \d+ (resumed|had ended))"
            r"(?!.*\bdeadline\b)",
        )
    )
)


_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")


def strip_ansi(text: str) -> str:
    """``text`` less its terminal escape sequences (colours, cursor moves)."""
    return _ANSI.sub("", text)


def _cells(segment: str) -> tuple[list[str], str]:
    """The visible characters of a stretch of text with no ``\r``, each with the colour codes
    written before it (a backspace deletes the character before it, as Jupyter does), and the
    codes left at its end."""
    cells: list[str] = []
    codes = ""
    for piece in re.split(r"(\x08|\x1b\[[0-?]*[ -/]*[@-~])", segment):
        if piece == "\x08":
            if cells:
                cells.pop()
        elif piece.startswith("\x1b"):
            codes += piece
        elif piece:
            cells += [codes + piece[0], *piece[1:]]
            codes = ""
    return cells, codes


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


_SGR = re.compile(r"\x1b\[[0-9;:]*m")


def colours_only(text: str) -> str:
    """``text`` safe to print on a terminal that shows colours: its colour codes kept, every
    other escape sequence (clipboard writes, screen clears, titles, resets, cursor moves) and
    control character removed (``\r`` and ``\t`` kept)."""
    out, last = [], 0
    for m in _SGR.finditer(text):
        out += [_plain(text[last : m.start()]), m.group(0)]
        last = m.end()
    return "".join([*out, _plain(text[last:])])


def _plain(text: str) -> str:
    return _CONTROL.sub(lambda m: "\r" if m.group(0) == "\r" else "", strip_ansi(text))


def printable(text: str) -> str:
    """``text`` safe to print on a terminal or in a listing: terminal escape sequences removed
    (a job's line cannot clear the screen or write the clipboard), other control characters
    shown as ``?``."""
    return _CONTROL.sub("?", strip_ansi(text))


def render(line: str) -> str:
    """A log line as Jupyter shows it once it is written: each ``\r`` goes back to the line's
    start and what follows writes over it (a progress bar's updates leave its latest state),
    each backspace deletes the character before it; colour codes are kept."""
    if "\r" not in line and "\x08" not in line:
        return line
    shown: list[str] = []
    codes = ""
    for segment in line.split("\r"):
        cells, codes_after = _cells(segment)
        shown[: len(cells)] = cells
        codes = codes_after or codes
    return "".join(shown) + codes


def shown(line: str, *, verbose: bool = False) -> str | None:
    """How a raw log line is shown (the cell, the CLI, the panel, the sidebar), or None for a
    line that is not: a runtime report is cut off the line it may follow (what came before it
    is the code's), ``\r`` and backspaces are applied (:func:`render`), and unless
    ``verbose`` TensorFlow's start-up chatter and the runtime's status lines are hidden."""
    cut = line.find(_REPORT)
    if cut >= 0:
        line = line[:cut]
        if not line.strip():
            return None
    text = render(line)
    if line.strip() and not strip_ansi(text).strip():
        return None  # a line the code wrote and then erased (a progress bar's last update)
    if not verbose and is_noise(text):
        return None
    return text


def shown_text(text: str, *, verbose: bool = False, ansi: bool = False) -> str:
    """A chunk of log lines as shown (see :func:`shown`), colour codes stripped unless
    ``ansi`` (the sidebar, the panel and a terminal that is not one cannot draw them)."""
    if not text:
        return ""  # nothing read is no line (an empty poll once drew an empty line)
    out = []
    for raw in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        line = shown(raw, verbose=verbose)
        if line is not None:
            out.append((line if ansi else strip_ansi(line)) + "\n")
    return "".join(out)


def pending_line(path: Path, offset: int, *, verbose: bool = False) -> str:
    """The latest state of the line being written at the end of the log (a progress bar being
    drawn, after its last ``\r``), as :func:`shown` shows it; "" when there is none or it is
    hidden. ``offset`` is where the complete lines end."""
    text, cut = unfinished_line(path, offset)
    if cut:  # read from its middle: from its latest update on
        text = text[text.find("\r") + 1 :] if "\r" in text else ""
    line = shown(text, verbose=verbose)
    return strip_ansi(line) if line else ""


def is_noise(line: str) -> bool:
    """True for a line the cell, the CLI and the panel hide unless asked (``--verbose``):
    TensorFlow's C++ start-up and info logging, and the runtime's own status lines. The job's
    log files keep every line."""
    return bool(_NOISE.match(line))


_TIMING = re.compile(r"\b\d+(\.\d+)?(ms|us|µs|s)(/(epoch|step|sample))?\b")


def _alike(line: str) -> str:
    """A line less its timings (``756ms/epoch``, ``1s``): Keras prints the same epoch line on
    every replica, but each with its own clock."""
    return _TIMING.sub("#", line)


class Merger:
    """Lines alike from several replicas, shown once with the replicas named (as Ray does
    across its cluster); every replica's own lines as they come. Lines that differ only in
    their timings (Keras' ``- 756ms/epoch``) are alike; the first replica's is shown.

    A line waits at most ``hold_s`` for the other replicas to print it too, and at most
    ``most`` lines wait (a backlog read at once goes on in bounded memory and time); with one
    replica nothing waits.
    """

    def __init__(self, replicas: int, hold_s: float = 1.0, most: int = 512) -> None:
        self.replicas = replicas
        self.hold_s = hold_s
        self.most = most
        self._pending: list[tuple[str, str, list[str], float]] = []

    def add(self, replica: str, line: str, now: float) -> list[tuple[list[str], str]]:
        """Take one line; returns what is ready to show, in order, as ``(replicas, line)``."""
        if self.replicas <= 1:
            return [([replica], line)]
        key = _alike(line)
        for alike, _, names, _ in self._pending:
            if alike == key and replica not in names:
                names.append(replica)
                break
        else:
            self._pending.append((key, line, [replica], now))
        out = self.ready(now)
        while len(self._pending) > self.most:  # the oldest goes: its wait is over
            _, text, names, _ = self._pending.pop(0)
            out.append((names, text))
        return out

    def ready(self, now: float, *, final: bool = False) -> list[tuple[list[str], str]]:
        """The lines whose wait is over (every one with ``final``)."""
        out = []
        while self._pending:
            _, text, names, since = self._pending[0]
            if not (final or len(names) >= self.replicas or now - since >= self.hold_s):
                break
            self._pending.pop(0)
            out.append((names, text))
        return out


OURS = "[tfc_jupyter] "
"""How tfc_jupyter's own notes start in a replica's log (a restart, said in each replica's)."""


def said(replicas: list[str], line: str) -> str:
    """A shown line with its replicas named (``[chief, worker-0] Epoch 1/3``); tfc_jupyter's
    own notes as they are: they are not a replica's words."""
    return line if line.startswith(OURS) else f"[{label(replicas)}] {line}"


def label(replicas: list[str]) -> str:
    """``chief``, ``chief, worker-0``; four or more: ``chief +3``."""
    names = in_order(replicas)
    return ", ".join(names) if len(names) <= 3 else f"{names[0]} +{len(names) - 1}"
