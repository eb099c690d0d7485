"""A sweep trial's values, put where the notebook assigns them (standard library only).

A trial gets its values as Vertex AI passes them to a tuning trial, as the script's arguments
(``--lr=0.0031 --units=128``), wherever the product runs it. The product names each swept
variable with the script line that assigns it (``--params lr:float:12,units:int:14``, see
:func:`encode`); the runtime takes those arguments out of the script's ``sys.argv``
(:func:`take`) and replaces the value of each such assignment before the script runs
(:func:`override`): ``lr = 1e-3  # default`` runs as ``lr = 0.0031``, on the same line, so
tracebacks and "Go to cell" keep their places.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Value = int | float | str | bool
"""A swept value: what a trial's argument reads back as."""
KINDS = ("float", "int", "str", "any")
"""How a value written as text reads back (``any``: a Python literal, else the text)."""


@dataclass(frozen=True)
class Target:
    """A swept variable: its name, how its value reads, and the script line assigning it (0:
    the code reads it with ``hp(name, default)`` only)."""

    name: str
    kind: str
    line: int

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.kind not in KINDS or self.line < 0:
            raise ValueError(f"not a swept variable: {self.name!r}:{self.kind}:{self.line}")


def encode(targets: Sequence[Target]) -> str:
    """``lr:float:12,units:int:14``: the value of the runtime's ``--params``."""
    return ",".join(f"{t.name}:{t.kind}:{t.line}" for t in targets)


def decode(text: str) -> tuple[Target, ...]:
    """Read :func:`encode`'s text back.

    Raises:
        ValueError: a part that is not ``NAME:KIND:LINE``.
    """
    out = []
    for part in filter(None, text.split(",")):
        fields = part.split(":")
        if len(fields) != 3 or not fields[2].isdigit():
            raise ValueError(f"--params: {part!r} is not NAME:KIND:LINE")
        out.append(Target(fields[0], fields[1], int(fields[2])))
    return tuple(out)


def argument(name: str, value: object) -> str:
    """``--lr=0.0031``: a value as a trial's argument (as Vertex AI writes it)."""
    return f"--{name}={value}"


def read(text: str, kind: str) -> Value:
    """A value passed as text, read back as its kind.

    Raises:
        ValueError: not a number where one is needed.
    """
    if kind == "float":
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"{text!r} is not a finite number")
        return value
    if kind == "int":
        number = float(text)  # Vertex AI may write an integer as 64.0
        if not number.is_integer():
            raise ValueError(f"{text!r} is not a whole number")
        return int(number)
    if kind == "str":
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
    return value if isinstance(value, (int, float, str, bool)) else text


def take(args: Sequence[str], targets: Sequence[Target]) -> tuple[dict[str, Value], list[str]]:
    """The swept values among a script's arguments, and the arguments left for the script.

    ``--NAME=VALUE`` and ``--NAME VALUE`` are taken for each target's name (the last one
    wins, as argparse does); everything else is left, in order.

    Raises:
        ValueError: a value that does not read as its kind, or a name with no value.
    """
    kinds = {t.name: t.kind for t in targets}
    values: dict[str, Value] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        name, eq, text = word[2:].partition("=") if word.startswith("--") else ("", "", "")
        if name not in kinds:
            rest.append(word)
            i += 1
            continue
        if not eq:
            if i + 1 == len(args):
                raise ValueError(f"--{name} has no value")
            text, i = args[i + 1], i + 1
        try:
            values[name] = read(text, kinds[name])
        except ValueError as exc:
            raise ValueError(f"--{name}: {exc}") from None
        i += 1
    return values, rest


def override(tree: ast.Module, targets: Sequence[Target], values: Mapping[str, Value]) -> None:
    """Replace, in ``tree``, the value of each target's assignment by its value (targets with
    no value keep the notebook's). The assignment must be the top-level ``NAME = ...`` (or
    ``NAME: T = ...``) starting on the target's line.

    Raises:
        ValueError: a target whose line holds no such assignment (the script was changed).
    """
    for target in targets:
        if target.name not in values or target.line == 0:
            continue
        node = _assignment(tree, target)
        if node is None:
            raise ValueError(
                f"line {target.line} of the script does not assign {target.name} (was the job's "
                "script changed after it was planned?)"
            )
        constant = ast.Constant(values[target.name])
        node.value = ast.copy_location(constant, node.value or node)  # AnnAssign: has one
        ast.fix_missing_locations(node)


def _assignment(tree: ast.Module, target: Target) -> ast.Assign | ast.AnnAssign | None:
    """The top-level statement on ``target.line`` that assigns its name alone."""
    for node in tree.body:
        if node.lineno != target.line:
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            named = node.targets[0]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            named = node.target
        else:
            continue
        if isinstance(named, ast.Name) and named.id == target.name:
            return node
    return None


_current: dict[str, Value] = {}


def set_values(values: Mapping[str, Value]) -> None:
    """This trial's values, for :func:`hp` (the runtime sets them before the code runs)."""
    _current.clear()
    _current.update(values)


def hp(name: str, default: Value) -> Value:
    """``tfc_jupyter.hp(name, default)`` in a job: the trial's value of ``name``, else
    ``default`` (a job that is no trial, or a name it does not sweep)."""
    return _current.get(name, default)
