"""The sweep methods (``--method``): one class per algorithm that picks a sweep's next values,
and the registry every surface reads them from.

A method says its name, its words in the UI (``bayes (learns from the trials so far)``), what
it needs of the swept values (a grid lists every value), how many trials it runs when
``--trials`` is not given and at most, and the Optuna sampler that picks a local sweep's values
(Optuna is imported only then). Defining a subclass with a ``name`` registers it
(:data:`METHODS`): the option's help and the form's choices list it, ``--method NAME`` plans,
and a local sweep uses its sampler. A backend that runs a sweep its own way (Vertex AI's tuning
job) names the methods it runs in its ``Traits.sweep_methods``; the plan refuses the others.

Standard library only: the option table, the plan and the magic's help read it without
importing an optimizer.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from ..errors import Fix, SpecError


class Swept(Protocol):
    """One swept parameter, as a method reads it (:class:`~.spec.Param`)."""

    @property
    def name(self) -> str: ...

    def grid(self) -> tuple[Any, ...] | None: ...


class Sweep(Protocol):
    """A whole sweep, as a method's sampler reads it (:class:`~.spec.SweepSpec`)."""

    @property
    def params(self) -> Sequence[Swept]: ...

    @property
    def trials(self) -> int: ...


class Method:
    """One way of choosing a sweep's next values. A subclass that sets :attr:`name` is
    registered in :data:`METHODS` as it is defined."""

    name: ClassVar[str] = ""
    """What ``--method`` takes; also the key of Vertex AI's algorithm (a backend's own map)."""
    about: ClassVar[str] = ""
    """What it does, a few words after its name in the form ("every combination")."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("name"):
            register(cls)

    @classmethod
    def label(cls) -> str:
        """Its name in the form's choices: ``grid (every combination)``."""
        return f"{cls.name} ({cls.about})" if cls.about else cls.name

    def check(self, params: Sequence[Swept], size: int | None) -> None:
        """Refuse what this method cannot sweep (``size``: the number of combinations, None
        when a parameter is a float range).

        Raises:
            SpecError: one line, with the fix.
        """

    def default_trials(self, size: int | None) -> int:
        """Trials when ``--trials`` is not given: 10, or fewer when the values make fewer
        combinations."""
        return min(size, 10) if size else 10

    def check_trials(self, trials: int, size: int | None) -> None:
        """Refuse a number of trials this method cannot run (by default, any number runs: the
        plan notes trials that repeat the combinations).

        Raises:
            SpecError: one line, with the fix.
        """

    def sampler(self, sweep: Sweep) -> Any:
        """The Optuna sampler that picks a local sweep's values (Optuna imported now)."""
        raise NotImplementedError(f"the {self.name} method has no sampler for a local sweep")

    def next_values(self, sweep: Sweep, ran: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """The values the next trial of a local sweep takes, given those of the trials that
        ran or run (``ran``: a stopped trial's are not there); None: the sampler picks them."""
        return None

    def left(self, sweep: Sweep, ran: Sequence[Mapping[str, Any]]) -> int | None:
        """How many more trials it has values for (None: as many as ``--trials`` asks)."""
        return None


METHODS: dict[str, type[Method]] = {}
"""Method name -> its class, in the order they were defined (the first is the default)."""

DEFAULT = "bayes"
"""The method a sweep uses when ``--method`` is not given."""


def register(cls: type[Method]) -> type[Method]:
    """Add a method to :data:`METHODS` (a subclass with a ``name`` is added as it is defined;
    this also works as a decorator)."""
    METHODS[cls.name] = cls
    return cls


def names() -> list[str]:
    """Every registered method's name, in their order."""
    return list(METHODS)


def either(items: Sequence[str], word: str = "or") -> str:
    """``a, b or c``."""
    return f" {word} ".join([", ".join(items[:-1]), items[-1]]) if len(items) > 1 else items[0]


def help_words() -> str:
    """The methods as ``--method``'s help lists them: ``bayes (default), random or grid``."""
    return either([f"{n} (default)" if n == DEFAULT else n for n in METHODS])


def get(name: str) -> Method:
    """The method called ``name``.

    Raises:
        SpecError: no method has that name, with the names that work.
    """
    cls = METHODS.get(name)
    if cls is None:
        raise SpecError(
            f"--method {name!r} is unknown",
            [Fix.set("method", known, verb="use") for known in METHODS],
            field="method",
        )
    return cls()


class Bayes(Method):
    """Each trial's values from what the trials so far scored: Optuna's TPE here, Vizier's
    Bayesian optimization on Vertex AI."""

    name = "bayes"
    about = "learns from the trials so far"

    def sampler(self, sweep: Sweep) -> Any:
        import optuna

        startup = min(10, max(2, sweep.trials // 3))
        return optuna.samplers.TPESampler(n_startup_trials=startup)


class Random(Method):
    """Each trial's values drawn at random."""

    name = "random"

    def sampler(self, sweep: Sweep) -> Any:
        import optuna

        return optuna.samplers.RandomSampler()


class Grid(Method):
    """Every combination of the listed values, each once: a float range cannot be listed."""

    name = "grid"
    about = "every combination"

    def check(self, params: Sequence[Swept], size: int | None) -> None:
        if size is None:
            floats = [p.name for p in params if p.grid() is None]
            raise SpecError(
                f"a grid cannot list {', '.join(floats)} (a float range): give it a list of values",
                [Fix.set("method", "random", verb="use"), Fix.set("method", "bayes", verb="use")],
                field="method",
            )

    def default_trials(self, size: int | None) -> int:
        return size if size is not None else 10

    def check_trials(self, trials: int, size: int | None) -> None:
        if size is not None and trials > size:
            raise SpecError(
                f"--trials {trials} is more than the grid's {size} combinations",
                Fix.set("trials", size, after=" or fewer"),
                field="trials",
            )

    def sampler(self, sweep: Sweep) -> Any:
        """Never asked: :meth:`next_values` gives each trial its values (Optuna's grid sampler
        counts a point whose trial was stopped, or asked and never launched, as done, and
        then runs a done point again)."""
        import optuna

        return optuna.samplers.RandomSampler()

    @staticmethod
    def _points(sweep: Sweep) -> list[tuple[Any, ...]]:
        return list(itertools.product(*(p.grid() or () for p in sweep.params)))

    def _open(self, sweep: Sweep, ran: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
        """The grid's points no trial ran or runs, in the grid's order."""
        names = [p.name for p in sweep.params]
        taken = {tuple(values.get(n) for n in names) for values in ran}
        return [point for point in self._points(sweep) if point not in taken]

    def next_values(self, sweep: Sweep, ran: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        points = self._open(sweep, ran)
        return dict(zip((p.name for p in sweep.params), points[0], strict=True)) if points else None

    def left(self, sweep: Sweep, ran: Sequence[Mapping[str, Any]]) -> int | None:
        return len(self._open(sweep, ran))
