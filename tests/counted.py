"""Counted suites: the trust suites print cases tried and held, item by item.

``tests/test_security.py``, ``test_bad_input.py``, ``test_faults.py`` and ``test_secretscan.py``
each declare ``ITEMS`` (the promises they prove) and mark their tests with
``@pytest.mark.item("...")``. At the end of the run, a table says for each suite and item how
many cases were tried and how many held (passed); skips are listed with their reasons, so a
case that could not run here is never counted as held. ``check_items`` is each suite's own test
that every declared item has cases and every marked item is declared.

A promise proven beside the module it is about (``tests/test_logs.py`` for the log follower)
counts in a suite by name: ``@pytest.mark.item("...", suite="faults")``.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

SUITES = {
    "test_security.py": "security",
    "test_bad_input.py": "bad input",
    "test_faults.py": "faults",
    "test_secretscan.py": "secretscan",
    "test_border.py": "border",
}
# (suite, item) -> Counter(tried=, held=, skipped=)
TALLY: dict[tuple[str, str], collections.Counter[str]] = collections.defaultdict(
    collections.Counter
)
SKIPS: dict[str, list[str]] = collections.defaultdict(list)
_COUNTED: dict[str, tuple[str, str]] = {}  # nodeid -> (suite, item)


def suite_of(nodeid: str) -> str | None:
    """The counted suite a test belongs to by its file (None for the others)."""
    return SUITES.get(nodeid.split("::", 1)[0].rsplit("/", 1)[-1])


def counted_as(test: pytest.Item) -> tuple[str, str] | None:
    """``(suite, item)`` a test counts in: a test of a suite's file by its ``item`` marker, a
    test elsewhere by ``@pytest.mark.item("...", suite="faults")`` (a promise proven beside the
    module it is about); None when it is counted nowhere."""
    marker = test.get_closest_marker("item")
    suite = marker.kwargs.get("suite") if marker else None
    if suite is not None:
        assert suite in SUITES.values(), f"{test.nodeid}: no counted suite named {suite!r}"
        return str(suite), str(marker.args[0])  # type: ignore[union-attr]
    if suite_of(test.nodeid):
        return suite_of(test.nodeid) or "", str(marker.args[0]) if marker else "(suite checks)"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Remember what each counted test counts as, also in its reports' ``user_properties``:
    under pytest-xdist the reports reach a process that collected nothing."""
    for test in items:
        where = counted_as(test)
        if where:
            _COUNTED[test.nodeid] = where
            test.user_properties.append(("counted", list(where)))


def _counted_of(report: pytest.TestReport) -> tuple[str, str] | None:
    for name, value in report.user_properties:
        if name == "counted":
            return str(value[0]), str(value[1])
    return _COUNTED.get(report.nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count a case once: tried when it ran (or could not be set up), held when it passed.
    Under pytest-xdist only the controlling process counts (its workers' reports reach it)."""
    where = _counted_of(report)
    if where is None or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    suite, _ = key = where
    if report.when == "setup" and not report.passed:
        TALLY[key]["tried"] += 1
        if report.skipped:
            TALLY[key]["skipped"] += 1
            reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else ""
            SKIPS[suite].append(f"{report.nodeid.split('::', 1)[1]}: {reason}")
    elif report.when == "call":
        TALLY[key]["tried"] += 1
        if report.passed:
            TALLY[key]["held"] += 1
        elif report.skipped:
            TALLY[key]["skipped"] += 1
            reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else ""
            SKIPS[suite].append(f"{report.nodeid.split('::', 1)[1]}: {reason}")


def summary_lines() -> list[str]:
    """The table printed at the end of the run."""
    lines: list[str] = []
    for suite in dict.fromkeys(SUITES.values()):
        rows = {item: c for (s, item), c in TALLY.items() if s == suite}
        if not rows:
            continue
        tried = sum(c["tried"] for c in rows.values())
        held = sum(c["held"] for c in rows.values())
        lines.append(f"[{suite}] cases tried {tried}, held {held}")
        for item, c in sorted(rows.items()):
            skipped = f", skipped {c['skipped']}" if c["skipped"] else ""
            lines.append(f"    {c['tried']:>4} tried {c['held']:>4} held{skipped}  {item}")
        lines += [f"    skipped: {s}" for s in SKIPS.get(suite, [])]
    return lines


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the counted suites' table."""
    lines = summary_lines()
    if lines:
        terminalreporter.section("counted suites")
        for line in lines:
            terminalreporter.write_line(line)


def check_items(module: ModuleType) -> None:
    """Every item ``module.ITEMS`` declares is marked on some test there, and no test is marked
    with an item it does not declare (tests marked for a suite by name, in other files, count
    in that suite's table with items of their own)."""
    declared = set(module.ITEMS)
    marked: set[str] = set()
    for name in dir(module):
        fn: Callable[..., Any] = getattr(module, name)
        if name.startswith("test_") and callable(fn):
            for mark in getattr(fn, "pytestmark", []):
                if mark.name == "item" and "suite" not in mark.kwargs:
                    marked.add(str(mark.args[0]))
    assert declared - marked == set(), f"items without a case: {sorted(declared - marked)}"
    assert marked - declared == set(), f"items not declared in ITEMS: {sorted(marked - declared)}"
