"""stdout and stderr kept apart line by line in one log (issue 49): whatever the two streams
write, in whatever order, each line of the log is one stream's, and each stream's text is what
the code wrote, but for the line ends put in between them (and the one that then ends nothing)."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st
from tfc_runtime import streams


class _Log:
    """One log both streams write to (as a replica's stdout and stderr share one file)."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, str]] = []  # (stream, text), in the order written


class _Into(io.TextIOBase):
    def __init__(self, log: _Log, name: str) -> None:
        self.log, self.name = log, name

    def write(self, text: str) -> int:
        self.log.parts.append((self.name, text))
        return len(text)


_TEXT = st.text(alphabet="ab\r\n%", max_size=8)


@given(st.lists(st.tuples(st.sampled_from(["out", "err"]), _TEXT), max_size=30))
def test_each_line_of_the_log_is_one_streams(writes: list[tuple[str, str]]) -> None:
    streams.end_line()  # nothing left open by another example
    log = _Log()
    wrapped = {n: streams.LineStream(_Into(log, n)) for n in ("out", "err")}  # type: ignore[arg-type]
    for name, text in writes:
        wrapped[name].write(text)
    whose: list[set[str]] = [set()]  # the streams each line of the log holds text of
    for name, text in log.parts:
        for i, piece in enumerate(text.split("\n")):
            if i:
                whose.append(set())
            if piece:
                whose[-1].add(name)
    assert all(len(names) <= 1 for names in whose), log.parts
    for name in ("out", "err"):  # the code's text, only line ends put in or taken out
        wrote = "".join(t for n, t in writes if n == name)
        logged = "".join(t for n, t in log.parts if n == name)
        assert logged.replace("\n", "") == wrote.replace("\n", "")


def test_an_unfinished_line_ends_before_what_follows() -> None:
    log = _Log()
    err = streams.LineStream(_Into(log, "err"))  # type: ignore[arg-type]
    err.write("\r 50%|#####")
    streams.end_line()
    streams.end_line()  # a line ended once
    assert "".join(t for _, t in log.parts) == "\r 50%|#####\n"


def test_a_line_ended_between_two_streams_makes_no_blank_line() -> None:
    """tqdm's bar (stderr) ends the code's ``\\r`` line (stdout); the ``print()`` that ends that
    line in Jupyter ends nothing more: the next line follows."""
    log = _Log()
    out = streams.LineStream(_Into(log, "out"))  # type: ignore[arg-type]
    err = streams.LineStream(_Into(log, "err"))  # type: ignore[arg-type]
    out.write("\rstep 4")
    err.write("\r100%|##|\n")
    assert out.write("\n") == 1
    out.write("done\n")
    assert "".join(t for _, t in log.parts) == "\rstep 4\n\r100%|##|\ndone\n"
