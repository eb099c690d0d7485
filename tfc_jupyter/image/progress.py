"""What image builds share, wherever they run (the Docker engine here, or Cloud Build): progress
events and their reporter, the result, and the one-line error of a failed build.

Progress goes to the reporter installed with :func:`reporting` (the magic renders a bar in the
cell, the panel its stages); by default, one line per step on stderr.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TextIO

from tfc_runtime.imports import PREFIX as IMPORT_PREFIX  # the image check's lines

from ..errors import BackendError
from .context import APT_FILE

LOG_TAIL = 40
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# ------------------------------------------------------------------------------ progress
@dataclass(frozen=True)
class Progress:
    """One progress event: ``phase`` is context, build, push, log (a failed build's tail) or
    done; ``step``/``total`` count build steps or pushed bytes."""

    phase: str
    message: str
    step: int = 0
    total: int = 0


ProgressFn = Callable[[Progress], None]
_REPORTER: ContextVar[ProgressFn | None] = ContextVar("tfc_build_progress", default=None)


class LineProgress:
    """Plain text: one line per build step, a line per tenth of a push (terminals, the CLI)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self._pushed = -1

    def __call__(self, event: Progress) -> None:
        stream = self.stream or sys.stderr
        if event.phase == "push" and event.total:
            tenth = event.step * 10 // event.total
            if tenth == self._pushed:
                return
            self._pushed = tenth
        stream.write(f"[image] {event.message}\n")
        stream.flush()


@contextmanager
def reporting(fn: ProgressFn) -> Iterator[None]:
    """Send build and push progress to ``fn`` within the block."""
    token = _REPORTER.set(fn)
    try:
        yield
    finally:
        _REPORTER.reset(token)


def report(event: Progress) -> None:
    """Hand one event to the current reporter (default: :class:`LineProgress` on stderr)."""
    (_REPORTER.get() or LineProgress())(event)


# ------------------------------------------------------------------------------ results
class BuildError(BackendError):
    """The image build failed: one line naming the step; ``log`` holds the log's tail."""

    def __init__(self, message: str, hint: str, log: list[str]) -> None:
        super().__init__(message, hint)
        self.log = log


@dataclass
class ImageResult:
    """What :func:`ensure_image` did: the image's URI, whether it built and pushed."""

    uri: str
    tag: str = ""
    built: bool = False
    pushed: bool = False
    steps: list[tuple[str, bool]] = field(default_factory=list)  # (instruction, from cache)
    context_bytes: int = 0
    seconds: float = 0.0

    @property
    def rebuilt(self) -> list[str]:
        """Layer-making instructions (RUN, COPY, ADD) that ran instead of coming from cache."""
        return [
            text
            for text, cached in self.steps
            if not cached and text.split(" ", 1)[0] in ("RUN", "COPY", "ADD")
        ]


def short(exc: BaseException | str, limit: int = 240) -> str:
    """``exc`` as one line of at most ``limit`` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3].rsplit(" ", 1)[0] + "..."


def build_error(error: str, steps: list[tuple[str, bool]], log: list[str]) -> BuildError:
    """One line naming the failing step, and the log's tail from that step on."""
    # "The command '/bin/sh -c <the whole RUN line>' returned ...": the step names it already
    error = re.sub(r"^The command '.*' returned", "the command returned", error, flags=re.S)
    start = max((i for i, line in enumerate(log) if line.startswith("Step ")), default=0)
    tail = log[max(start, len(log) - LOG_TAIL) :] if len(log) - start > LOG_TAIL else log[start:]
    report(Progress("log", "\n".join(tail)))
    instruction = steps[-1][0] if steps else ""
    what = instruction[:80]
    hint = "see the build log above, which ends with the failing step"
    if "pip install" in instruction:
        what = "pip install of the requirements"
        hint = "a requirement cannot be installed in the image: see the pip output above"
    elif "apt-get" in instruction:
        what = f"apt-get install of {APT_FILE}"
        hint = f"a package in {APT_FILE} cannot be installed: see the log above"
    lacking = [line.split(IMPORT_PREFIX, 1)[1] for line in log if IMPORT_PREFIX in line]
    if "tfc_runtime.imports" in instruction and lacking:
        first = lacking[0].split(":", 1)[0]  # "pandas (helpers.py, line 1)"
        module = first.split(" (", 1)[0]
        more = f" (and {len(lacking) - 1} more: see the log above)" if len(lacking) > 1 else ""
        return BuildError(
            f"the image lacks {first}, which the job imports{more}: the job would die there",
            f"add %pip install {module} (its package name) to the notebook, or --requirements",
            tail,
        )
    where = f"step {len(steps)} ({what})" if steps else "the start"
    return BuildError(f"the image build failed at {where}: {short(error)}", hint, tail)
