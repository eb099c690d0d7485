"""Which line of the notebook each swept name replaces in a trial, found before launch.

A sweep gives a trial its values with no change to the code (issue 37): the trial runs the job's
script with the assignment of each swept name replaced (``lr = 1e-3`` runs as ``lr = 0.0031``,
see :mod:`tfc_runtime.params`). The assignment is:

- the last top-level ``NAME = ...`` in a cell tagged ``parameters`` (papermill's convention,
  which notebooks already have); else
- the only top-level ``NAME = <plain value>`` in the job's cells; else
- none, where the code reads the name with ``tfc_jupyter.hp("NAME", default)`` (the trial's
  value, the default in the kernel).

A name set several times with no ``parameters`` cell, set only by a computation, or not set at
top level at all, is refused before launch with the fix.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from tfc_runtime.params import Target

from ..errors import SpecError
from ..notebook import syntax
from ..notebook.convert import Cell, Script
from .spec import Param, SweepSpec, sweep_spec

PARAMETERS_TAG = "parameters"
"""papermill's tag for the cell that holds a notebook's parameters."""


@dataclass(frozen=True)
class Replaced:
    """A swept name's assignment in the job: the runtime's target, and where it is written."""

    target: Target
    place: str
    """``cell 2, line 1`` (or ``train.py, line 4``)."""
    text: str
    """The assignment as written (its first line)."""

    def describe(self) -> str:
        """``lr: cell 2, line 1 (lr = 1e-3)``: what the plan shows."""
        return f"{self.target.name}: {self.place} ({self.text.strip()})"


@dataclass(frozen=True)
class _Assignment:
    line: int  # in the script
    cell: int | None
    place: str
    text: str
    plain: bool  # its value is a literal


def find_targets(
    script: Script, cells: Sequence[Cell], params: Sequence[Param]
) -> tuple[Replaced, ...]:
    """The assignment each parameter replaces, in ``params``' order.

    Raises:
        SpecError: a name this rule cannot place, with where it is set and the fix.
    """
    tree = syntax.parse(script.text)
    lines = script.text.splitlines()
    labels = {c.index: c for c in cells}
    tagged = {c.index for c in cells if PARAMETERS_TAG in c.tags}
    found: dict[str, list[_Assignment]] = {}
    for node in tree.body:
        name, value = _assigned(node)
        if name is None or value is None:
            continue
        where = script.locate(node.lineno)
        found.setdefault(name, []).append(
            _Assignment(
                node.lineno,
                where[0] if where else None,
                _place(script, labels, node.lineno),
                lines[node.lineno - 1],
                _plain(value),
            )
        )
    calls = _hp_calls(tree)
    out = []
    for param in params:
        try:
            if param.name not in found:
                _refuse_nested(param.name, tree, script, labels)
            chosen = _choose(param, found.get(param.name, []), tagged)
        except SpecError:
            if param.name not in calls:
                raise
            line = calls[param.name]  # hp("lr", 1e-3) reads it: nothing to replace
            target = Target(param.name, param.value_kind, 0)
            out.append(Replaced(target, _place(script, labels, line), lines[line - 1]))
            continue
        target = Target(param.name, param.value_kind, chosen.line)
        out.append(Replaced(target, chosen.place, chosen.text))
    return tuple(out)


def _choose(param: Param, assignments: list[_Assignment], tagged: set[int]) -> _Assignment:
    """The assignment that :func:`find_targets`' rule picks for ``param``, or its error."""
    name = param.name
    in_parameters = [a for a in assignments if a.cell in tagged]
    if in_parameters:
        return in_parameters[-1]
    plain = [a for a in assignments if a.plain]
    if len(plain) == 1:
        return plain[0]
    fix = (
        f"set it once to a plain value ({name} = ...) in a cell tagged {PARAMETERS_TAG!r} "
        "(Property Inspector, Cell Tags)"
    )
    if len(plain) > 1:
        places = "; ".join(a.place for a in plain)
        raise SpecError(
            f"--sweep {name}: it is set {len(plain)} times ({places}) and no cell is tagged "
            f"{PARAMETERS_TAG!r}, so a trial cannot tell which to replace",
            f"tag the cell that sets it {PARAMETERS_TAG!r}",
            field="sweep",
        )
    if assignments:
        first = assignments[0]
        raise SpecError(
            f"--sweep {name}: it is only computed ({first.place}: {first.text.strip()})",
            fix,
            field="sweep",
        )
    raise SpecError(
        f"--sweep {name}: the job's cells never assign {name} at top level", fix, field="sweep"
    )


def _hp_calls(tree: ast.Module) -> dict[str, int]:
    """Names the code reads with ``hp("name", default)`` (``tfc_jupyter.hp``, ``tfc.hp``): the
    script line of the first such call each."""
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        first = node.args[0]
        if called == "hp" and isinstance(first, ast.Constant) and isinstance(first.value, str):
            out.setdefault(first.value, node.lineno)
    return out


def _refuse_nested(name: str, tree: ast.Module, script: Script, labels: dict[int, Cell]) -> None:
    """Refuse a name that is set only inside a block (an ``if``, a ``for``, a function)."""
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            place = _place(script, labels, getattr(node, "lineno", 0))
            raise SpecError(
                f"--sweep {name}: it is only set inside a block ({place})",
                f"set it to a plain value at the top of a cell tagged {PARAMETERS_TAG!r}, "
                "before the block that uses it",
                field="sweep",
            )


def _assigned(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    """The name and value of ``NAME = value`` or ``NAME: T = value``; else ``(None, None)``."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value = node.targets[0], node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target, value = node.target, node.value
    else:
        return None, None
    return (target.id, value) if isinstance(target, ast.Name) else (None, None)


def _plain(value: ast.expr) -> bool:
    """A literal value (``1e-3``, ``-2``, ``'relu'``, ``[64, 128]``)."""
    try:
        ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _place(script: Script, cells: dict[int, Cell], line: int) -> str:
    """Where script line ``line`` is written: ``cell 2, line 1``, or ``train.py, line 4``."""
    where = script.locate(line)
    cell = cells.get(where[0]) if where else None
    if cell is None or where is None:
        return "the job's script"
    return f"{cell.place}, line {where[1]}"


@dataclass(frozen=True)
class SweepPlan:
    """A sweep as planned: what it tries, and the line each name replaces."""

    spec: SweepSpec
    replaced: tuple[Replaced, ...]

    @property
    def targets(self) -> tuple[Target, ...]:
        """The runtime's view: each name, its kind and its script line."""
        return tuple(r.target for r in self.replaced)

    def lines(self) -> list[str]:
        """The plan's ``sweep`` lines: the trials, then each name, its line and its values."""
        spec = self.spec
        out = [
            f"sweep: {spec.trials} trials, {spec.parallel} at once, {spec.method}; best: "
            f"{'highest' if spec.goal == 'max' else 'lowest'} {spec.metric}"
            + ("; poor trials stopped early" if spec.prune else "")
        ]
        for param, replaced in zip(spec.params, self.replaced, strict=True):
            out.append(f"  {replaced.describe()} <- {param.space}")
        return out

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (the plan's summary)."""
        spec = self.spec
        return {
            "trials": spec.trials,
            "parallel": spec.parallel,
            "metric": spec.metric,
            "goal": spec.goal,
            "method": spec.method,
            "prune": spec.prune,
            "params": [
                {
                    "name": p.name,
                    "space": p.space,
                    "replaces": r.place,
                    "line": r.text.strip(),
                }
                for p, r in zip(spec.params, self.replaced, strict=True)
            ],
        }


def plan_sweep(
    script: Script,
    cells: Sequence[Cell],
    params: Sequence[str],
    *,
    trials: int | None,
    parallel: int,
    metric: str | None,
    goal: str | None,
    method: str,
    prune: bool,
) -> SweepPlan:
    """The sweep of ``--sweep`` values over the job's script.

    Raises:
        SpecError: a parameter, a combination or a name the notebook does not assign.
    """
    spec = sweep_spec(
        params,
        trials=trials,
        parallel=parallel,
        metric=metric,
        goal=goal,
        method=method,
        prune=prune,
    )
    return SweepPlan(spec, find_targets(script, cells, spec.params))
