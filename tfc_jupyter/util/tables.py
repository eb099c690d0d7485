"""Aligned text tables, as ``%tfc_jobs``, ``%tfc_machines`` and ``%tfc_config`` print them."""

from __future__ import annotations

from collections.abc import Sequence


def table(rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, two spaces apart; the first row is the header."""
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )
