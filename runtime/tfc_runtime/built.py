"""The strategy the runtime built for this job (set by :mod:`tfc_runtime.strategy`, read by the
TPU and Estimator helpers), kept apart so that they need not import one another."""

from __future__ import annotations

from typing import Any

_current: Any = None


def current_strategy() -> Any:
    """The strategy the runtime built for this job (None when it built none)."""
    return _current


def set_current(strategy: Any) -> None:
    """Record the strategy the runtime built (None: none)."""
    global _current
    _current = strategy
