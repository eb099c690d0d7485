"""Errors in the UI's own words: "set Workers to 0" in the panel and the form, where the magic
says "drop --workers".

Every error names its fix once, in flags (the magic and the CLI take flags). :func:`ui_words`
says the same fix with the names the launch panel and the JupyterLab form show; a flag with no
control there (``--include``, ``--build-bucket`` ...) is left as the flag, which is what a user
would then type on the cell.
"""

from __future__ import annotations

import re

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
