"""One exception family for the whole product.

Every error a user can cause or meet carries a ``hint`` that names the fix. The edges show
``str(error)``: one line, message and hint, never a traceback (the magic raises ``UsageError``
with it, the CLI prints it and exits 2, the REST API maps ``http_status``).
"""

from __future__ import annotations


class TfcError(Exception):
    """Base class of every tfc_jupyter error.

    Args:
        message: what went wrong, one sentence.
        hint: what to do about it ("pass --workers 1", "tag the cell tfc-skip" ...).
        field: the JobSpec field or flag at fault, when there is one.
    """

    http_status = 400

    def __init__(self, message: str, hint: str = "", *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.field = field

    def __str__(self) -> str:
        text = " ".join(self.message.split())
        if self.hint:
            text = f"{text.rstrip('.')}. Fix: {' '.join(self.hint.split())}"
        return text

    def _render_traceback_(self) -> list[str]:
        """What IPython shows when the error reaches a cell (``job.load_model()``): one line,
        not a traceback."""
        return [f"\x1b[31m{type(self).__name__}\x1b[0m: {self}"]

    def ui_text(self) -> str:
        """``str(self)`` in the launch panel's and the form's words ("set Workers to 0" where
        the magic says "drop --workers"; see :mod:`tfc_jupyter.words`)."""
        from .words import ui_words

        return ui_words(str(self))

    def to_dict(self) -> dict[str, str | None]:
        """A JSON-ready form for the REST API and job records (``ui_message`` and ``ui_hint``:
        the same in the UI's words)."""
        from .words import ui_words

        return {
            "error": type(self).__name__,
            "message": self.message,
            "hint": self.hint,
            "field": self.field,
            "ui_message": ui_words(self.message),
            "ui_hint": ui_words(self.hint),
        }


class SpecError(TfcError):
    """A job specification that cannot run: bad machine, count, strategy, label ..."""


class CaptureError(TfcError):
    """The notebook to run cannot be found or read."""


class ConversionError(TfcError):
    """A cell cannot be turned into plain Python (unsupported magic, syntax error ...)."""

    def __init__(
        self,
        message: str,
        hint: str = "",
        *,
        cell: int | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        where = ""
        if cell is not None:
            where = f"cell {cell}" + (f", line {line}" if line is not None else "") + ": "
        super().__init__(where + message, hint, field=field)
        self.cell = cell
        self.line = line


class ConversionErrors(ConversionError):
    """Several cells cannot be converted: every one is reported in one run, a line each."""

    def __init__(self, errors: list[ConversionError]) -> None:
        first = errors[0]
        super().__init__(
            f"{len(errors)} cells cannot run in a job: " + "; ".join(e.message for e in errors),
            first.hint,
        )
        self.errors = errors
        self.cell, self.line = first.cell, first.line

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


class RequirementsError(TfcError):
    """A pip requirement or requirements file that cannot be used."""


class ConfigError(TfcError):
    """A configuration value (traitlets config or environment variable) that is invalid."""


class TooLarge(SpecError):
    """A request over a limit the server keeps (its size, its cells): 413, naming the limit."""

    http_status = 413


class JobNotFound(TfcError):
    """No job with that id in the job records."""

    http_status = 404


class JobConflict(TfcError):
    """The job is in a state that does not allow the request (cancel a finished job ...)."""

    http_status = 409


class BackendError(TfcError):
    """A backend (local processes, Docker, Vertex AI) failed to do what was asked."""

    http_status = 502


class MissingDependency(TfcError):
    """An optional package is needed for this feature and is not installed."""

    def __init__(self, package: str, extra: str, feature: str) -> None:
        super().__init__(
            f"{feature} needs the '{package}' package, which is not installed",
            f"pip install 'tfc_jupyter[{extra}]'",
        )
        self.package = package
        self.extra = extra
