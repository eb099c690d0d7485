"""Errors in the UI's own words: "set Workers to 0" in the panel and the form, where the magic
says "drop --workers".

A fix given as data (:class:`tfc_jupyter.errors.Fix`: an option, drop or set, a value) is worded
here with the option table's labels (:func:`fix_in_ui`). A fix given as text names its flags, and
:func:`ui_words` says the same with the names the launch panel and the JupyterLab form show. A
flag with no control there (``--include``, ``--build-bucket`` ...) is left as the flag, which is
what a user would then type on the cell.
"""

from __future__ import annotations

import re
from typing import Protocol

LABELS: dict[str, str] = {}
"""Flag -> the label of its control in the panel and the form, as each option declares it in the
option table (``tfc_jupyter.job.options``), which registers them here when it is imported (this
module sits below it: the errors it words are raised there); installed backends' options are
registered when their fields are read (``options.backend_fields``)."""
DROPPED: dict[str, str] = {}
"""What dropping a flag is in the UI (a control has no "absent"; it has a neutral value):
``set <label> to <neutral>``, registered with the labels from each option that declares both."""

_FLAG = r"--[a-z][a-z-]*"
_DROP = re.compile(rf"\b(?:drop|remove|leave out) ({_FLAG})")
_SET = re.compile(rf"\b(?:add|pass|use|ask for|give|set) ({_FLAG})(?: ([^\s,;:)]+))?")
_BARE = re.compile(rf"(?<![\w-])({_FLAG})(?: ([^\s,;:)]+))?")
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*$|^N$")
_WORDS = {"or", "and", "for", "to", "with", "the", "a", "in", "on", "instead", "too", "only"}


def _value(raw: str | None) -> str | None:
    """A value worth saying: not a placeholder (``N``, ``PROJECT_ID``), not another flag."""
    if raw is None or _PLACEHOLDER.match(raw) or raw.startswith("-") or raw in _WORDS:
        return None
    return raw


def _rest(match: re.Match[str]) -> str:
    """The word after a flag that is not its value (kept), or nothing for a placeholder."""
    word = match.group(2)
    return "" if word is None or _PLACEHOLDER.match(word) else f" {word}"


def _drop(match: re.Match[str]) -> str:
    flag = match.group(1)
    if flag in DROPPED:
        return DROPPED[flag]
    return f"clear {LABELS[flag]}" if flag in LABELS else match.group(0)


def _set(match: re.Match[str]) -> str:
    flag, value = match.group(1), _value(match.group(2))
    if flag not in LABELS:
        return match.group(0)
    if value is None:
        return f"set {LABELS[flag]}{_rest(match)}"
    return f"set {LABELS[flag]} to {value}"


def _bare(match: re.Match[str]) -> str:
    flag, value = match.group(1), _value(match.group(2))
    if flag not in LABELS:
        return match.group(0)
    if value is None:
        return f"{LABELS[flag]}{_rest(match)}"
    return f"{LABELS[flag]} {value}"


def ui_words(text: str) -> str:
    """``text`` with each flag said as the panel and the form say it: ``drop --workers`` ->
    ``set Workers to 0``, ``pass --project PROJECT_ID`` -> ``set Project``, ``--tpu v3-8`` ->
    ``TPU v3-8``: with the labels the option table taught (the server and the panel import
    it; a flag it has not taught is left as it is)."""
    if "--" not in text:
        return text
    text = _DROP.sub(_drop, text)
    text = _SET.sub(_set, text)
    return _BARE.sub(_bare, text)


class _Fix(Protocol):
    """What :func:`fix_in_ui` reads of a :class:`tfc_jupyter.errors.Fix` (this module sits
    below it)."""

    @property
    def action(self) -> str: ...

    @property
    def value(self) -> str | None: ...

    @property
    def after(self) -> str: ...

    @property
    def flag(self) -> str: ...

    def in_flags(self) -> str: ...


def fix_in_ui(fix: _Fix) -> str:
    """A :class:`~tfc_jupyter.errors.Fix` in the panel's and the form's words: ``set Workers to
    0`` (dropped: the control's neutral value), ``set GPU type to L4``, ``set Project`` (the user
    picks); an option with no control there keeps its flag's words."""
    label = LABELS.get(fix.flag)
    after = ui_words(fix.after) if fix.after else ""
    if label is None:
        return fix.in_flags()
    if fix.action == "drop":
        return DROPPED.get(fix.flag, f"clear {label}") + after
    if fix.value is None:
        return f"set {label}{after}"
    return f"set {label} to {fix.value}{after}"
