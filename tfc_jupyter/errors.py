"""One exception family for the whole product.

Every error a user can cause or meet carries a ``hint`` that names the fix. The edges show
``str(error)``: one line, message and hint, never a traceback (the magic raises ``UsageError``
with it, the CLI prints it and exits 2, the REST API maps ``http_status``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fix:
    """A fix as data: what to do with one option (``drop`` it, or ``set`` it to ``value``).

    Each surface words it in its own terms: the magic and the CLI in flags
    (:meth:`in_flags`: "drop --workers", "pass --project PROJECT_ID"), the panel and the form
    with their labels ("set Workers to 0", :func:`tfc_jupyter.words.fix_in_ui`), and the jobs
    API as this data, which the form applies with one click.
    """

    action: str
    """``drop`` (leave the option out) or ``set`` (give it ``value``)."""
    option: str
    """The option, as :class:`~tfc_jupyter.job.options.JobOptions` names it (``gpu_type``)."""
    value: str | None = None
    """What to set it to; None: the user picks one (``placeholder`` names it: ``N``)."""
    placeholder: str = ""
    verb: str = ""
    """The flags' verb for a ``set`` ("pass", "add", "use"; default "pass")."""
    after: str = ""
    """Words after it, as the flags say them (" (or auto)", ": --tpu picks the host")."""
    items: bool = False
    """``value`` is a list option's items, joined by spaces: the flags give the flag once an
    item ("use --label a=1 --label b=2"), the form's list field takes the text as it is."""

    @classmethod
    def drop(cls, option: str, *, after: str = "") -> Fix:
        """Leave ``option`` out (in the UI: set its control to its neutral value)."""
        return cls("drop", option, after=after)

    @classmethod
    def set(cls, option: str, value: Any, *, verb: str = "", after: str = "") -> Fix:
        """Give ``option`` this value."""
        return cls("set", option, str(value), verb=verb, after=after)

    @classmethod
    def set_items(cls, option: str, items: Sequence[str], *, verb: str = "") -> Fix:
        """Give a repeatable ``option`` these items (no spaces in them), in place of its own."""
        return cls("set", option, " ".join(items), verb=verb, items=True)

    @classmethod
    def give(cls, option: str, placeholder: str = "", *, verb: str = "", after: str = "") -> Fix:
        """Give ``option`` a value the user picks (``placeholder`` names it in the flags)."""
        return cls("set", option, None, placeholder, verb=verb, after=after)

    @property
    def flag(self) -> str:
        """The option's flag (``--gpu-type``)."""
        return "--" + self.option.replace("_", "-")

    def in_flags(self) -> str:
        """The fix as the magic and the CLI say it."""
        if self.action == "drop":
            return f"drop {self.flag}{self.after}"
        value = self.value if self.value is not None else self.placeholder
        if self.items and value:
            flags = " ".join(f"{self.flag} {item}" for item in value.split())
            return f"{self.verb or 'pass'} {flags}{self.after}"
        words = [self.verb or "pass", self.flag] + ([value] if value else [])
        return " ".join(words) + self.after

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the data, and the fix in the flags' words and the UI's."""
        from .words import fix_in_ui

        return {
            "action": self.action,
            "option": self.option,
            "value": self.value,
            "text": self.in_flags(),
            "ui_text": fix_in_ui(self),
        }


def _fixes(hint: str | Fix | Sequence[Fix]) -> tuple[str, tuple[Fix, ...]]:
    """A hint given as text or as fixes: its text (fixes joined by ", or ") and the fixes."""
    if isinstance(hint, str):
        return hint, ()
    fixes = (hint,) if isinstance(hint, Fix) else tuple(hint)
    return ", or ".join(f.in_flags() for f in fixes), fixes


class TfcError(Exception):
    """Base class of every tfc_jupyter error.

    Args:
        message: what went wrong, one sentence.
        hint: what to do about it ("pass --workers 1", "tag the cell tfc-skip" ...), as text or
            as :class:`Fix` data (one, or several: any of them fixes it), which each surface
            words in its own terms.
        field: the JobSpec field or flag at fault, when there is one.
    """

    http_status = 400

    def __init__(
        self, message: str, hint: str | Fix | Sequence[Fix] = "", *, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint, self.fixes = _fixes(hint)
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

    def ui_hint(self) -> str:
        """The fix in the UI's words: its :class:`Fix` data worded with the labels, else the
        hint's flags said as the panel and the form say them."""
        from .words import fix_in_ui, ui_words

        if self.fixes:
            return ", or ".join(fix_in_ui(f) for f in self.fixes)
        return ui_words(self.hint)

    def ui_text(self) -> str:
        """``str(self)`` in the launch panel's and the form's words ("set Workers to 0" where
        the magic says "drop --workers"; see :mod:`tfc_jupyter.words`)."""
        from .words import ui_words

        if not self.fixes:
            return ui_words(str(self))
        message = " ".join(ui_words(self.message).split())
        hint = " ".join(self.ui_hint().split())
        return f"{message.rstrip('.')}. Fix: {hint}" if hint else message

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form for the REST API and job records (``ui_message`` and ``ui_hint``:
        the same in the UI's words; ``fixes``: the fix as data, when it is given so)."""
        from .words import ui_words

        return {
            "error": type(self).__name__,
            "message": self.message,
            "hint": self.hint,
            "field": self.field,
            "ui_message": ui_words(self.message),
            "ui_hint": self.ui_hint(),
            "fixes": [f.to_dict() for f in self.fixes],
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
