"""A sweep's trials as the user sees them: the :class:`Sweep` handle, its table and plot.

Shared by the sweeps this machine drives (:mod:`tfc_jupyter.trials.trials`, a job a trial) and
those a backend runs as one job (:mod:`tfc_jupyter.trials.tuned`, Vertex AI's tuning job): a
trial is its values, its state, its metric and curve, its time, and its job when it is one of
ours.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfc_runtime.params import Value

from ..util import tables

if TYPE_CHECKING:
    from ..client import Client, Job
    from ..sweep.spec import SweepSpec


@dataclass
class Trial:
    """One trial: its values, its job, and how it went."""

    number: int
    values: dict[str, Value]
    state: str
    """``running``, ``succeeded``, ``failed``, ``pruned`` or ``stopped`` (cancelled)."""
    job_id: str | None = None
    metric: float | None = None
    seconds: float | None = None
    note: str = ""
    curve: list[tuple[int, float]] = field(default_factory=list)
    """``(epoch, metric)`` as the job reported them."""


class Sweep:
    """A sweep's handle: its trials, the best one, and their table and plot."""

    def __init__(self, folder: Path, spec: SweepSpec, client: Client | None) -> None:
        self.folder = folder
        self.id = folder.name
        self.spec = spec
        self.client = client
        self.trials: list[Trial] = []
        self.job_id: str | None = None
        """The one job that runs the sweep, where its backend runs it so (Vertex AI's tuning
        job; :mod:`tfc_jupyter.trials.tuned`); None where each trial is a job of ours."""
        self.state = ""
        """That job's state (``running``, ``succeeded`` ...), and its error: :attr:`error`."""
        self.error = ""

    @property
    def best_trial(self) -> Trial | None:
        """The succeeded trial with the best metric (the first of equals)."""
        done = [t for t in self.trials if t.state == "succeeded" and t.metric is not None]
        if not done:
            return None
        sign = -1.0 if self.spec.goal == "max" else 1.0
        return min(done, key=lambda t: (sign * (t.metric or 0.0), t.number))

    @property
    def best(self) -> Job | None:
        """The best trial's job handle (its model, history, logs), or None (also where the
        trials are a tuning job's, not jobs of ours: see :attr:`best_trial` and :attr:`job`)."""
        trial = self.best_trial
        if self.client is None or trial is None or not trial.job_id:
            return None  # (a sweep read back for a view has no client)
        return self.client.job(trial.job_id)

    @property
    def going_on(self) -> bool:
        """The one job that runs the sweep has not ended (it was launched with --no-wait, or
        its following was interrupted)."""
        return bool(self.job_id) and self.state not in ("succeeded", "failed", "cancelled")

    @property
    def job(self) -> Job | None:
        """The handle of the one job that runs the sweep (a tuning job), or None."""
        return self.client.job(self.job_id) if self.job_id and self.client else None

    @property
    def stopped(self) -> str:
        """Why a sweep driven here ended before running its trials, in words (``sweep stopped:
        1 of 3 trials failed (trial 0: ZeroDivisionError ...); 2 trials not run``): its failed
        trials reached a third of them. "" while a trial runs, or when it did not stop."""
        failed = [t for t in self.trials if t.state == "failed"]
        if self.job_id or len(failed) < self.spec.max_failed:
            return ""
        if any(t.state == "running" for t in self.trials):
            return ""
        not_run = self.spec.trials - sum(t.state != "stopped" for t in self.trials)
        if not_run <= 0:
            return ""
        first = min(failed, key=lambda t: t.number)
        why = " ".join(first.note.split())
        why = why if len(why) <= 200 else why[:199] + "…"
        return (
            f"sweep stopped: {len(failed)} of {self.spec.trials} trials failed (trial "
            f"{first.number}: {why or 'no reason recorded'}); {_trials(not_run)} not run"
        )

    @property
    def failure(self) -> str:
        """Why the sweep failed, as a failed job's error: it stopped (:attr:`stopped`), or its
        one job failed (a tuning job); "" when it did not."""
        if self.job_id and self.state == "failed":
            return f"job {self.job_id} failed: {self.error or 'no reason recorded'}"
        return self.stopped

    def counts(self) -> dict[str, int]:
        """Trials in each state."""
        out: dict[str, int] = {}
        for t in self.trials:
            out[t.state] = out.get(t.state, 0) + 1
        return out

    def summary_line(self) -> str:
        """``sweep S: 6 trials (6 succeeded); best #3 val_accuracy 0.91 (lr=0.01, units=64)``."""
        parts = ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))
        text = f"sweep {self.id}: {len(self.trials)} of {self.spec.trials} trials"
        text += f" ({parts})" if parts else ""
        if self.job_id:
            text += f", job {self.job_id} {self.state}".rstrip()
            text += f": {self.error}" if self.error and self.state != "succeeded" else ""
        best = self.best_trial
        if best is not None:
            text += (
                f"; best #{best.number} {self.spec.metric} {_num(best.metric)} "
                f"({_values(best.values)})"
            )
            text += f", job {best.job_id}" if best.job_id else ""
        return text + (f"; {self.stopped}" if self.stopped else "")

    def _rows(self, *, notes: bool) -> list[list[str]]:
        """The header, then a row a trial: number, values, state, metric, time, job. The best
        trial's state is starred (``notes``: the state is followed by the trial's note)."""
        names = list(self.spec.names)
        best = self.best_trial
        rows = [["#", *names, "state", self.spec.metric, "time", "job"]]
        for t in self.trials:
            state = t.state + (f": {t.note}" if notes and t.note else "")
            rows.append(
                [
                    str(t.number),
                    *(_num(t.values.get(n)) for n in names),
                    state + ("*" if t is best and not notes else ""),
                    _num(t.metric),
                    f"{t.seconds:.0f} s" if t.seconds is not None else "",
                    t.job_id or "",
                ]
            )
        return rows

    def table(self) -> Any:
        """The trials as a pandas ``DataFrame``, a row a trial (indexed by its number): each
        swept value in its own column with its type, ``state``, the metric (a float), ``best``,
        ``seconds``, ``job`` and ``note``; Jupyter shows it as a table, and it sorts, filters
        and plots as any frame does. :meth:`table_text` is the same as plain text."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "sweep.table() is a pandas DataFrame and pandas is not installed. "
                "Fix: pip install pandas, or print(sweep.table_text())"
            ) from None
        best = self.best_trial
        rows = [
            {
                "trial": t.number,
                **{n: t.values.get(n) for n in self.spec.names},
                "state": t.state,
                self.spec.metric: math.nan if t.metric is None else float(t.metric),
                "best": t is best,
                "seconds": math.nan if t.seconds is None else float(t.seconds),
                "job": t.job_id or "",
                "note": t.note,
            }
            for t in self.trials
        ]
        columns = ["trial", *self.spec.names, "state", self.spec.metric]
        columns += ["best", "seconds", "job", "note"]
        return pd.DataFrame(rows, columns=columns).set_index("trial")

    def table_text(self) -> str:
        """The trials as a plain-text table (the best trial's state starred)."""
        return tables.table(self._rows(notes=False))

    def _repr_html_(self) -> str:
        head, *rows = self._rows(notes=True)
        best = self.best_trial
        cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        body = ""
        for t, row in zip(self.trials, rows, strict=True):
            mark = ' style="font-weight:bold"' if t is best else ""
            body += f"<tr{mark}>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        plot = sweep_svg(self) or ""
        title = html.escape(self.summary_line())
        return (
            f'<div class="tfc-sweep"><div>{title}</div>{plot}'
            f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table></div>"
        )

    def __repr__(self) -> str:
        return self.summary_line()


class SweepFailed(Exception):
    """A sweep the cell (or ``run()``) ran failed: it stopped as its trials failed, or its
    tuning job failed. The cell ends in error, as with a failed job (Run All stops there),
    shown as one line, not a traceback; ``sweep`` is the sweep (its table, its trials)."""

    def __init__(self, sweep: Sweep) -> None:
        super().__init__(f"{sweep.id}: {sweep.failure}")
        self.sweep = sweep

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback."""
        failed = [t for t in self.sweep.trials if t.state == "failed" and t.job_id]
        logs = f"; a failed trial's lines: %tfc_logs {failed[0].job_id}" if failed else ""
        return [
            f"\x1b[31mSweep {self.sweep.id} failed\x1b[0m: {self.sweep.failure}",
            f"Its trials: _tfc_sweep.table(){logs}",
        ]


def _trials(n: int) -> str:
    return f"{n} trial" + ("" if n == 1 else "s")


def trial_line(trial: Trial, metric: str) -> str:
    """``trial 3 running: lr=0.01, units=64 (job ID)``, ``trial 3 succeeded: val_accuracy
    0.91 in 12 s``, ``trial 4 failed: <why>``: one line a trial's change."""
    head = f"trial {trial.number} {trial.state}"
    if trial.state == "running":
        job = f" (job {trial.job_id})" if trial.job_id else ""
        return f"{head}: {_values(trial.values)}{job}"
    took = f" in {trial.seconds:.0f} s" if trial.seconds is not None else ""
    if trial.state == "succeeded":
        return f"{head}: {metric} {_num(trial.metric)}{took}"
    return f"{head}{took}" + (f": {trial.note}" if trial.note else "")


def trial_lines(write: Callable[[str], None]) -> Callable[[Sweep], None]:
    """An ``on_change`` for :func:`run_sweep` that writes each trial's :func:`trial_line`
    once, and again whenever it changes (a terminal's view of a sweep)."""
    said: dict[int, str] = {}

    def changed(sweep: Sweep) -> None:
        for trial in sweep.trials:
            line = trial_line(trial, sweep.spec.metric)
            if said.get(trial.number) != line:
                said[trial.number] = line
                write(line)

    return changed


def _num(value: Any) -> str:
    """A value for a table: numbers short, the rest as written."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _values(values: dict[str, Value]) -> str:
    return ", ".join(f"{k}={_num(v)}" for k, v in values.items())


def sweep_svg(sweep: Sweep, ink: str = "currentColor") -> str | None:
    """The metric by trial, and against each parameter: small panels in one SVG. Its text and
    frames are ``ink``: the page's text colour where the SVG is part of the page (the cell),
    a grey readable on light and dark themes where it is an image (the sweep tab)."""
    points = [t for t in sweep.trials if t.metric is not None]
    if not points:
        return None
    panels: list[tuple[str, list[tuple[Any, float, bool]], bool]] = [
        ("trial", [(t.number, t.metric or 0.0, t is sweep.best_trial) for t in points], False)
    ]
    for param in sweep.spec.params:
        pts = [(t.values.get(param.name), t.metric or 0.0, t is sweep.best_trial) for t in points]
        panels.append((param.name, pts, param.kind == "loguniform"))
    width, height, pad = 220, 160, 34
    parts = []
    for i, (label, pts, log) in enumerate(panels):
        x0 = i * (width + 10)
        parts.append(_panel(label, pts, log, x0, width, height, pad, sweep.spec.metric, ink))
    total = len(panels) * (width + 10)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="{height}" '
        f'viewBox="0 0 {total} {height}" style="max-width:100%;height:auto;color:inherit" '
        f'font-size="10" font-family="sans-serif">{"".join(parts)}</svg>'
    )


def _panel(
    label: str,
    pts: list[tuple[Any, float, bool]],
    log: bool,
    x0: int,
    width: int,
    height: int,
    pad: int,
    metric: str,
    ink: str = "currentColor",
) -> str:
    """One panel: ``metric`` (y) against ``label`` (x); categories spread evenly."""
    xs_raw = [p[0] for p in pts]
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs_raw)
    if numeric:
        xs = [math.log10(float(x)) if log and float(x) > 0 else float(x) for x in xs_raw]
    else:
        order = sorted({str(x) for x in xs_raw})
        xs = [float(order.index(str(x))) for x in xs_raw]
    ys = [p[1] for p in pts]
    lo_x, hi_x = min(xs), max(xs)
    lo_y, hi_y = min(ys), max(ys)
    span_x = (hi_x - lo_x) or 1.0
    span_y = (hi_y - lo_y) or 1.0
    inner_w, inner_h = width - pad - 8, height - pad - 14

    def sx(x: float) -> float:
        return x0 + pad + (x - lo_x) / span_x * inner_w if hi_x > lo_x else x0 + pad + inner_w / 2

    def sy(y: float) -> float:
        return 8 + (hi_y - y) / span_y * inner_h if hi_y > lo_y else 8 + inner_h / 2

    out = [
        f'<rect x="{x0 + pad}" y="8" width="{inner_w}" height="{inner_h}" fill="none" '
        f'stroke="{ink}" stroke-opacity="0.3"/>',
        f'<text x="{x0 + pad + inner_w / 2:.1f}" y="{height - 4}" text-anchor="middle" '
        f'fill="{ink}">{html.escape(label)}{" (log)" if log else ""}</text>',
        f'<text x="{x0 + 2}" y="12" fill="{ink}">{html.escape(_num(hi_y))}</text>',
        f'<text x="{x0 + 2}" y="{8 + inner_h}" fill="{ink}">{html.escape(_num(lo_y))}</text>',
    ]
    for x, y, best in zip(xs, ys, (p[2] for p in pts), strict=True):
        colour = "#e8710a" if best else "#1a73e8"
        out.append(
            f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="{5 if best else 3.5}" '
            f'fill="{colour}"><title>{html.escape(metric)} {_num(y)}</title></circle>'
        )
    return "".join(out)
