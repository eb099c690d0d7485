"""What a sweep tries: its parameters (``--sweep "lr=loguniform(1e-4,1e-1)"``), how many trials,
how many at once, the metric and its goal, and the method that picks the next values (its
checks are the method's own: :mod:`.methods`).

A parameter is written as the magic and the CLI take it, ``NAME=SPACE``:

- ``uniform(LOW, HIGH)``: a float between LOW and HIGH;
- ``loguniform(LOW, HIGH)``: a float between LOW and HIGH (both above 0), on a log scale;
- ``int(LOW, HIGH)`` or ``int(LOW, HIGH, STEP)``: an integer from LOW to HIGH, both included;
- ``[A, B, C]``: one of the listed values (numbers, strings or booleans).

:meth:`Param.text` writes a parameter back in the same words (``parse_param(p.text()) == p``).
Standard library only: the plan and the magic's help read it without importing an optimizer.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

from ..errors import Fix, SpecError
from . import methods

Kind = Literal["uniform", "loguniform", "int", "choice"]
Goal = Literal["min", "max"]
Choice = int | float | str | bool

GOALS: tuple[Goal, ...] = ("min", "max")
DEFAULT_METRIC = "val_loss"
"""Keras Tuner's default objective: the validation loss, to be made as small as possible."""

_SPACE_HELP = "uniform(LOW,HIGH), loguniform(LOW,HIGH), int(LOW,HIGH[,STEP]) or [A,B,...]"
_FIX = f'write NAME=SPACE, SPACE one of {_SPACE_HELP}: --sweep "lr=loguniform(1e-4,1e-1)"'
_MAX_CHOICES = 10_000


@dataclass(frozen=True)
class Param:
    """One swept name and the values it may take."""

    name: str
    kind: Kind
    low: float | None = None
    """The smallest value (``uniform``, ``loguniform``, ``int``)."""
    high: float | None = None
    """The largest value, included."""
    step: int = 1
    """The step of an ``int`` range."""
    choices: tuple[Choice, ...] = ()
    """The values of a ``[A, B, ...]`` list, in its order."""

    def text(self) -> str:
        """The parameter in the words :func:`parse_param` reads: ``NAME=SPACE``."""
        return f"{self.name}={self.space}"

    @property
    def space(self) -> str:
        """Its values as written after ``NAME=``: ``loguniform(0.0001, 0.1)``, ``[64, 128]``."""
        if self.kind == "choice":
            return f"[{', '.join(repr(c) for c in self.choices)}]"
        bounds = f"{self.low!r}, {self.high!r}"
        if self.kind == "int":
            bounds = f"{int(self.low or 0)}, {int(self.high or 0)}"
            if self.step != 1:
                bounds += f", {self.step}"
        return f"{self.kind}({bounds})"

    @property
    def value_kind(self) -> str:
        """How a value passed as text (``--lr=0.01``) reads back: ``float``, ``int``, ``str``
        or ``any`` (a list of mixed types: read as a Python literal, else as text)."""
        if self.kind in ("uniform", "loguniform"):
            return "float"
        if self.kind == "int":
            return "int"
        types = {type(c) for c in self.choices}
        if types == {int}:
            return "int"
        if types <= {int, float}:
            return "float"
        return "str" if types == {str} else "any"

    def grid(self) -> tuple[Choice, ...] | None:
        """Every value, for a grid: a list's values or an ``int`` range; None for a float
        range (a grid cannot list it)."""
        if self.kind == "choice":
            return self.choices
        if self.kind == "int" and self.low is not None and self.high is not None:
            return tuple(range(int(self.low), int(self.high) + 1, self.step))
        return None


@dataclass(frozen=True)
class SweepSpec:
    """A whole sweep: the parameters, the trials and how the best one is chosen."""

    params: tuple[Param, ...]
    trials: int = 10
    """Trials in all (for ``grid``, at most the grid's size)."""
    parallel: int = 1
    """Trials running at once."""
    metric: str = DEFAULT_METRIC
    """The reported metric that ranks trials (a Keras log name, or a custom loop's metric)."""
    goal: Goal = "min"
    method: str = methods.DEFAULT
    """The name of the method that picks the next values (:mod:`.methods`)."""
    prune: bool = False
    """Stop a trial whose metric falls behind the others' median at the same epoch."""
    names: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(p.name for p in self.params))

    @property
    def max_failed(self) -> int:
        """Failed trials that stop the sweep: a third of its trials (Vertex AI's
        ``maxFailedTrialCount``, and the driver's rule here)."""
        return max(1, math.ceil(self.trials / 3))

    def grid_size(self) -> int | None:
        """The number of value combinations, or None when a parameter is a float range."""
        sizes = [p.grid() for p in self.params]
        if any(s is None for s in sizes):
            return None
        return math.prod(len(s or ()) for s in sizes)


_LOWER_IS_BETTER = frozenset(
    "loss error err mae mse rmse mape smape msle rmsle mase perplexity time hinge kld kl "
    "divergence logcosh crossentropy wer cer fid latency".split()
)
_HIGHER_IS_BETTER = frozenset(
    "acc accuracy auc prc precision recall f1 fbeta iou score reward map r2 psnr ssim "
    "similarity bleu rouge ndcg mrr".split()
)


def default_goal(metric: str) -> Goal | None:
    """``min`` for a loss or an error, ``max`` for an accuracy or a score, read from the
    name's words (``val_mape`` is an error, though ``map`` is a score: whole words, not parts
    of words); None when the name says neither (the user passes ``--goal``)."""
    words = [w for w in re.split(r"[^a-z0-9]+", metric.lower()) if w and not w.isdigit()]
    if any(w in _LOWER_IS_BETTER for w in words):
        return "min"
    if any(w in _HIGHER_IS_BETTER or w.endswith("accuracy") for w in words):
        return "max"
    return None


def parse_param(text: str) -> Param:
    """Read one ``--sweep`` value, ``NAME=SPACE``.

    Raises:
        SpecError: one line naming what is wrong and how to write it.
    """
    name, eq, space = text.partition("=")
    name, space = name.strip(), space.strip()
    if not eq or not space:
        raise SpecError(f"--sweep {text!r} has no values", _FIX)
    if not name.isidentifier() or keyword.iskeyword(name):
        raise SpecError(
            f"--sweep {text!r}: {name!r} is not a Python name",
            "name the variable the notebook assigns, e.g. lr=loguniform(1e-4,1e-1)",
        )
    try:
        node = ast.parse(space, mode="eval").body
    except (SyntaxError, ValueError):
        raise SpecError(f"--sweep {text!r}: cannot read {space!r}", _FIX) from None
    if isinstance(node, (ast.List, ast.Tuple)):
        return Param(name, "choice", choices=_choices(text, node))
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords):
        raise SpecError(f"--sweep {text!r}: {space!r} is not a range or a list", _FIX)
    kind = node.func.id
    if kind not in ("uniform", "loguniform", "int"):
        raise SpecError(f"--sweep {text!r}: unknown range {kind!r}", _FIX)
    bounds = [_number(text, arg) for arg in node.args]
    if kind == "int":
        return _int_range(text, name, bounds)
    if len(bounds) != 2:
        raise SpecError(f"--sweep {text!r}: {kind} takes LOW and HIGH", _FIX)
    low, high = (float(b) for b in bounds)
    if not (math.isfinite(low) and math.isfinite(high)) or not low < high:
        raise SpecError(
            f"--sweep {text!r}: LOW must be below HIGH, both finite",
            f"e.g. {name}={kind}(0.001, 0.1)",
        )
    if kind == "loguniform" and low <= 0:
        raise SpecError(
            f"--sweep {text!r}: a log scale starts above 0",
            f"e.g. {name}=loguniform(1e-5, {high!r}), or {name}=uniform(...)",
        )
    return Param(name, "loguniform" if kind == "loguniform" else "uniform", low, high)


def _number(text: str, node: ast.expr) -> int | float:
    """A literal number (``1e-4``, ``-3``), or the error naming the argument."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"--sweep {text!r}: {ast.unparse(node)!r} is not a number", _FIX)
    return value


def _int_range(text: str, name: str, bounds: list[int | float]) -> Param:
    """``int(LOW, HIGH[, STEP])``, checked."""
    if len(bounds) not in (2, 3) or not all(isinstance(b, int) for b in bounds):
        raise SpecError(
            f"--sweep {text!r}: int takes whole numbers LOW, HIGH and maybe STEP",
            f"e.g. {name}=int(32, 256, 32)",
        )
    low, high, step = int(bounds[0]), int(bounds[1]), int(bounds[2]) if len(bounds) == 3 else 1
    if not low < high or step < 1:
        raise SpecError(
            f"--sweep {text!r}: LOW must be below HIGH and STEP at least 1",
            f"e.g. {name}=int(32, 256, 32)",
        )
    if (high - low) % step:
        raise SpecError(
            f"--sweep {text!r}: HIGH is not LOW plus a number of STEPs",
            f"e.g. {name}=int({low}, {low + step * max(1, (high - low) // step)}, {step})",
        )
    return Param(name, "int", float(low), float(high), step)


_CONTROL = ("Cc", "Cs", "Zl", "Zp")
"""Characters a swept string may not hold: controls (NUL, line breaks), lone surrogates."""


def _same_value(a: Choice, b: Choice) -> bool:
    """Two listed values a trial cannot tell apart: equal strings, or numbers equal as numbers
    (``1``, ``1.0`` and ``True``: Optuna records each as the first listed)."""
    if isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    return a == b


def _choices(text: str, node: ast.List | ast.Tuple) -> tuple[Choice, ...]:
    """The values of a ``[A, B, ...]`` list: literals, none twice, at least one."""
    values: list[Choice] = []
    for element in node.elts:
        try:
            value = ast.literal_eval(element)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value = None
        if not isinstance(value, (int, float, str, bool)) or (
            isinstance(value, float) and not math.isfinite(value)
        ):
            raise SpecError(
                f"--sweep {text!r}: {ast.unparse(element)!r} is not a number, string or boolean",
                "list plain values, e.g. units=[64, 128, 256] or act=['relu', 'tanh']",
            )
        if isinstance(value, str) and any(unicodedata.category(c) in _CONTROL for c in value):
            raise SpecError(
                f"--sweep {text[:80]!r}: {value[:40]!r} holds a control character (NUL, a line "
                "break ...)",
                "list values without control characters",
            )
        same = next((v for v in values if _same_value(v, value)), None)
        if same is not None:
            raise SpecError(
                f"--sweep {text[:80]!r} lists {value!r} twice"
                if type(same) is type(value)
                else f"--sweep {text[:80]!r} lists {same!r} and {value!r}, equal as numbers (a "
                "trial would run the first for both)",
                "list each value once",
            )
        values.append(value)
    if not values:
        raise SpecError(f"--sweep {text!r} lists no values", "e.g. units=[64, 128, 256]")
    if len(values) > _MAX_CHOICES:
        raise SpecError(f"--sweep {text!r} lists {len(values)} values", "list at most 10,000")
    return tuple(values)


def sweep_spec(
    params: Sequence[str],
    *,
    trials: int | None = None,
    parallel: int = 1,
    metric: str | None = None,
    goal: str | None = None,
    method: str = methods.DEFAULT,
    prune: bool = False,
) -> SweepSpec:
    """The sweep of ``--sweep`` values and the options beside them, checked together.

    Raises:
        SpecError: a parameter that does not read, a name swept twice, a grid with a float
            range, a goal the metric's name does not imply and that is not given ...
    """
    parsed = tuple(parse_param(p) for p in params)
    if not parsed:
        raise SpecError("a sweep needs a parameter", _FIX)
    seen: set[str] = set()
    for p in parsed:
        if p.name in seen:
            raise SpecError(f"--sweep names {p.name!r} twice", "give each name one --sweep")
        seen.add(p.name)
    how = methods.get(method)
    name = metric or DEFAULT_METRIC
    if not name.strip() or any(c.isspace() or not c.isprintable() for c in name):
        raise SpecError(
            f"--metric {name!r} is not a metric name",
            Fix.give("metric", "NAME", after=" (a name the job reports, e.g. val_accuracy)"),
            field="metric",
        )
    chosen = goal or default_goal(name)
    if chosen not in GOALS:
        raise SpecError(
            f"--goal {goal!r} is not min or max"
            if goal
            else f"cannot tell whether {name!r} should go up or down",
            [Fix.set("goal", g, after=f" with --metric {name}") for g in ("max", "min")],
            field="goal",
        )
    spec = SweepSpec(parsed, 1, 1, name, cast(Goal, chosen), method, prune)
    size = spec.grid_size()
    how.check(parsed, size)
    count = trials if trials is not None else how.default_trials(size)
    check_counts(count, parallel)
    how.check_trials(count, size)
    return SweepSpec(parsed, count, min(parallel, count), name, cast(Goal, chosen), method, prune)


MAX_TRIALS = 10_000
"""The most trials a sweep runs, and runs at once (``--trials``, ``--parallel``)."""


def check_counts(trials: int, parallel: int) -> None:
    """Refuse a number of trials, or of trials at once, below 1 or over :data:`MAX_TRIALS`.

    Raises:
        SpecError: one line, the fixes as data (``field``: the flag at fault).
    """
    if trials < 1:
        raise SpecError(
            f"--trials {trials} runs no trial",
            [Fix.drop("trials", after=" (10 trials, or the whole grid)"), Fix.give("trials", "N")],
            field="trials",
        )
    if trials > MAX_TRIALS:
        raise SpecError(
            f"--trials {trials} is over {MAX_TRIALS:,}",
            Fix.set("trials", MAX_TRIALS, after=" or fewer"),
            field="trials",
        )
    if parallel < 1:
        raise SpecError(
            f"--parallel {parallel} runs no trial at once",
            [Fix.drop("parallel", after=" (one at a time)"), Fix.give("parallel", "N")],
            field="parallel",
        )
    if parallel > MAX_TRIALS:
        raise SpecError(
            f"--parallel {parallel} is over {MAX_TRIALS:,}",
            Fix.set("parallel", min(trials, MAX_TRIALS), after=" or fewer"),
            field="parallel",
        )
