"""A job's loss and metrics curves as one small SVG image.

The same picture is shown by the ``%%tfc_run`` cell, the launch panel and the JupyterLab sidebar
(the jobs API sends it), drawn here without a plotting library: the kernel of a notebook that
never imported matplotlib does not start to for a plot. Metric names come from the user's model;
they are escaped, and the SVG holds no script, so it is safe as an ``<img>`` source.
"""

from __future__ import annotations

import math
import re
from html import escape
from typing import Any

from .results import Results, value_text

COLORS = ("#1f77b4", "#d46b08", "#2ca02c", "#d62728", "#9467bd", "#b0705f", "#c75aa3")
"""Curve colours, each at least 3:1 against a light theme's white and a dark theme's
#212121 (WCAG's contrast for graphics): the image has no background of its own, so it sits on
the notebook's, the panel's or the tab's, light or dark."""
INK = "#808080"  # text, axes and the frame: readable on white and on a dark theme
GRID = "#999999"
PANEL_W, PANEL_H = 320, 190
_LEFT, _RIGHT, _TOP, _BOTTOM = 46, 10, 34, 26


def _groups(names: list[str]) -> list[tuple[str, list[str]]]:
    """Loss curves in one panel, every other metric in a second (each ``val_x`` beside ``x``)."""
    losses = [n for n in names if "loss" in n]
    others = [n for n in names if "loss" not in n]
    return [(title, group) for title, group in (("loss", losses), ("metrics", others)) if group]


def _fmt(value: float) -> str:
    """3 significant digits, short: ``0.0123``, ``12.3``, ``1.07e4``, ``2.5e-5`` (an exponent
    without its ``+`` and leading zeros: ``1.07e+04`` is 8 characters the axis has no room for)."""
    text = f"{value:.3g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def _label_room(*labels: str) -> int:
    """Pixels left of the plot for its y-axis labels (10 px sans-serif: at most 6 px a
    character, and a gap), never less than :data:`_LEFT`."""
    return max(_LEFT, 10 + 6 * max(len(label) for label in labels))


def _panel(results: Results, title: str, names: list[str], x0: int) -> list[str]:
    """One panel's SVG elements, its left edge at ``x0``."""
    epochs = results.epochs
    count = len(epochs)
    everything = [e["metrics"][n] for e in epochs for n in names if n in e["metrics"]]
    values = [v for v in everything if math.isfinite(v)] or [0.0]  # NaN and inf: not on the axis
    low, high = min(values), max(values)
    if high - low < 1e-12:
        low, high = low - 0.5, high + 0.5
    room = _label_room(_fmt(high), _fmt(low))
    w, h = PANEL_W - room - _RIGHT, PANEL_H - _TOP - _BOTTOM
    left, top = x0 + room, _TOP

    def x(i: int) -> float:
        return left + (w * i / (count - 1) if count > 1 else w / 2)

    def y(v: float) -> float:
        return top + h * (high - v) / (high - low)

    out = [
        f'<text x="{x0 + 8}" y="14" font-weight="bold">{_text(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="{INK}"/>',
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">{_fmt(high)}</text>',
        f'<text x="{left - 4}" y="{top + h}" text-anchor="end">{_fmt(low)}</text>',
        f'<text x="{left}" y="{top + h + 16}">1</text>',
        f'<text x="{left + w}" y="{top + h + 16}" text-anchor="end">epoch {count}</text>',
    ]
    for i in range(1, count):  # a new fit() call starts: a dashed line
        if epochs[i]["fit"] != epochs[i - 1]["fit"]:
            xi = x(i) - (w / (count - 1)) / 2
            out.append(
                f'<line x1="{xi:.1f}" y1="{top}" x2="{xi:.1f}" y2="{top + h}" '
                f'stroke="{GRID}" stroke-dasharray="3,3"/>'
            )
    bases = [n for n in names if not n.startswith("val_")]
    bases += [n[4:] for n in names if n.startswith("val_") and n[4:] not in bases]
    legend_x = x0 + 8
    for name in names:
        base = name[4:] if name.startswith("val_") else name
        color = COLORS[bases.index(base) % len(COLORS)]
        dash = ' stroke-dasharray="5,3"' if name.startswith("val_") else ""
        for points in _runs(epochs, name, x, y):  # a NaN or inf epoch breaks the curve
            if len(points) == 1:
                px, py = points[0]
                out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="{color}"/>')
            else:
                path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
                out.append(
                    f'<polyline points="{path}" fill="none" stroke="{color}" '
                    f'stroke-width="1.6"{dash}/>'
                )
        last = epochs[-1]["metrics"].get(name)
        label = f"{name} {_value(last)}" if last is not None else name
        out.append(f'<text x="{legend_x}" y="27" fill="{color}">{_text(label[:40])}</text>')
        legend_x += 8 + 6 * min(len(label), 40)
    bad = [(n, where) for n, where in results.not_finite.items() if n in names]
    if bad:  # where the first metric of this panel stopped being a number, and the words
        name, (_, fit, number) = bad[0]
        i = next(i for i, e in enumerate(epochs) if e["fit"] == fit and e["epoch"] == number)
        out.append(
            f'<line x1="{x(i):.1f}" y1="{top}" x2="{x(i):.1f}" y2="{top + h}" '
            f'stroke="{ALERT}" stroke-dasharray="2,2"/>'
        )
        flag = next(f for f in results.flags if f.startswith(f"{name} is "))
        out.append(
            f'<text x="{left + w / 2:.1f}" y="{top + h / 2:.1f}" text-anchor="middle" '
            f'fill="{ALERT}" class="tfc-plot-flag">{_text(flag[:50])}</text>'
        )
    return out


ALERT = "#e53935"  # a metric that is NaN or infinite (3:1 on white and on #212121)


def _value(value: float) -> str:
    return _fmt(value) if math.isfinite(value) else value_text(value)


def _runs(
    epochs: list[dict[str, Any]], name: str, x: Any, y: Any
) -> list[list[tuple[float, float]]]:
    """The curve of ``name`` as runs of finite points (a NaN or infinite value ends a run)."""
    runs: list[list[tuple[float, float]]] = [[]]
    for i, epoch in enumerate(epochs):
        value = epoch["metrics"].get(name)
        if value is None:
            continue
        if math.isfinite(value):
            runs[-1].append((x(i), y(value)))
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]")


def _text(value: str) -> str:
    """A label as SVG text: escaped, and characters XML cannot hold (a control character in a
    metric's name) shown as ``?``, so the image stays valid."""
    return escape(_NOT_XML.sub("?", value))


def svg(results: Results, *, done: bool = False) -> str | None:
    """The curves of every reported metric by epoch (None before the first epoch ends).

    Loss and validation loss share one panel, other metrics the next; ``val_`` curves are
    dashed in their metric's color, and a dashed vertical line marks each new ``fit`` call.
    """
    if not results.epochs:
        return None
    groups = _groups(results.names)
    width = PANEL_W * len(groups)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{PANEL_H}" '
        f'viewBox="0 0 {width} {PANEL_H}" font-family="sans-serif" font-size="10" '
        f'fill="{INK}" style="max-width:100%;height:auto" class="tfc-plot">',  # no background
    ]
    for i, (title, names) in enumerate(groups):
        parts += _panel(results, title, names, PANEL_W * i)
    if not done and results.fits and isinstance(results.fits[-1].get("epochs"), int):
        total = results.fits[-1]["epochs"]
        current = results.epochs[-1]["epoch"]
        parts.append(
            f'<text x="{width - 8}" y="14" text-anchor="end">epoch {current}/{total}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
