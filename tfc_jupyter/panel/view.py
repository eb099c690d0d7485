"""The launch panel's widgets: a thin ipywidgets view over the model, launcher and watch.

Every decision is the model's (:mod:`.model`), every action the launcher's or the watch's
(:mod:`.launcher`); this module only lays out widgets, forwards the user's changes and renders
state. Renders come from the kernel's thread (user changes) and from the launch and watch
threads; one re-entrant lock serializes them. CSS classes ``tfc-*`` name the parts (tests use
them).
"""

from __future__ import annotations

import base64
import html
import threading
from typing import Any

import ipywidgets as w

from ..job import catalog
from ..job.spec import MAX_WORKERS
from ..jobs import Job
from ..planner.fields import FormField, choices, form_fields
from ..returns.plot import svg
from ..store.logs import in_order
from ..store.records import JobState, JobStore
from .launcher import JobWatch, Launcher
from .model import PanelModel

VIEW_LINES = 400
_STATE_COLORS = {"succeeded": "#1a7f37", "failed": "#cf222e", "cancelled": "#6e7781"}
_NEUTRAL = "#6e7781"  # a cancel asked for: no failure, no error colour
# The log box in the theme's colours (light or dark), the fixed ones as fallback outside Lab.
_LOG_BOX = (
    "flex-direction:column-reverse;border:1px solid var(--jp-border-color2, #d0d7de);"
    "background:var(--jp-layout-color2, #f6f8fa)"
)
_LOG_TEXT = "color:var(--jp-content-font-color1, #1f2328)"
_STAGE_MARKS = {"pending": "○", "running": "◐", "done": "✓", "skipped": "–", "failed": "✗"}
_COUNT_MAX = {"workers": MAX_WORKERS}  # a count's largest value (others: 1000)
_STYLE = {"description_width": "130px"}
_WIDE = w.Layout(width="100%")


def _control(field: FormField) -> Any:
    """The widget of one field, labelled with the option table's words."""
    common: dict[str, Any] = {"description": field.label, "style": _STYLE, "layout": _WIDE}
    if field.control == "choice":
        control: Any = w.Dropdown(**common)
    elif field.optional:  # may be empty (unset): a text box, read as the jobs API reads it
        control = w.Text(continuous_update=False, **common)
    elif field.control == "count":
        top = _COUNT_MAX.get(field.name, 1000)
        control = w.BoundedIntText(min=0, max=top, **common)
    elif field.control == "switch":
        control = w.Checkbox(indent=False, **common)
    elif field.control == "suggest":
        values = [str(v) for v, _ in choices(field.choices or "")]
        control = w.Combobox(options=values, ensure_option=False, continuous_update=False, **common)
    else:
        control = w.Text(continuous_update=False, **common)
    if hasattr(control, "placeholder"):
        control.placeholder = field.placeholder
    control.tooltip = field.help.replace("%%", "%")
    return control


def _typed(field: FormField, value: Any) -> Any:
    """A control's value as the model takes it: a count's number (an optional count's text
    stripped, "" unset; text that is no count is kept, so the check says why)."""
    if field.optional:
        text = str(value).strip()
        return None if not text else int(text) if text.isascii() and text.isdigit() else text
    if field.kind == "count":
        return int(value or 0)
    return value.strip() if isinstance(value, str) else value


def _shown(field: FormField, value: Any) -> Any:
    """A choice as its control shows it (an optional count's box: "" when unset)."""
    if field.optional:
        return "" if value is None else str(value)
    return value


def _esc(text: Any) -> str:
    return html.escape(str(text))


def _about(rate: float | None) -> str:
    """ "about $1.23 per hour", or "price not listed"."""
    return catalog.NOT_LISTED if rate is None else f"about ${rate:,.2f} per hour"


def _plot_html(watch: JobWatch) -> str:
    """The job's loss and metrics curves as an image (nothing before the first epoch ends)."""
    image = svg(watch.results, done=watch.record.state.is_terminal())
    if image is None:
        return ""
    data = base64.b64encode(image.encode()).decode()
    return f"<img alt='loss and metrics by epoch' src='data:image/svg+xml;base64,{data}'/>"


def _trials_html(watch: JobWatch) -> str:
    """The sweep the job belongs to: the cell's table and plot of its trials (the summary
    line alone where its trials cannot be read; nothing for a job of no sweep)."""
    if watch.sweep is None:
        return f"<div class='tfc-sweep'>{_esc(watch.sweep_summary)}</div>" if watch.sweep_id else ""
    table = watch.sweep._repr_html_()  # escaped by the table, as in the cell
    if watch.sweep_summary != watch.sweep.summary_line():  # what was not read, said
        table = f"<div>{_esc(watch.sweep_summary)}</div>{table}"
    return table


def _close_tree(widget: Any) -> None:
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    widget.close()


class LaunchPanel:
    """The panel: choices and a live summary, Launch with stages, a job watch, earlier jobs."""

    def __init__(self, model: PanelModel, store: JobStore, *, title: str = "") -> None:
        self.model, self.store = model, store
        self.launcher = Launcher(model, store, on_change=self._render_launch)
        self.watch: JobWatch | None = None
        self._lock = threading.RLock()
        self._syncing = False
        self._listed_end: str | None = None
        self.controls: dict[str, Any] = {}
        self.errors: dict[str, w.HTML] = {}
        rows = self._make_controls()
        self.summary = w.HTML().add_class("tfc-summary")
        self.reload = w.Button(
            description="Re-read notebook", icon="refresh", layout=w.Layout(width="auto")
        )
        self.reload.on_click(lambda _: self._reload())
        self.launch_button = w.Button(description="Launch", icon="rocket", button_style="primary")
        self.launch_button.add_class("tfc-launch")
        self.launch_button.on_click(lambda _: self.launcher.click())
        self.stages = w.HTML().add_class("tfc-stages")
        self.progress = w.IntProgress(min=0, max=100, value=0)
        self.message = w.HTML().add_class("tfc-message")
        self.state = w.HTML().add_class("tfc-state")
        self.cancel_button = w.Button(description="Cancel job", icon="stop", disabled=True)
        self.cancel_button.add_class("tfc-cancel")
        self.cancel_button.on_click(lambda _: self._cancel())
        self.replicas = w.ToggleButtons(options=["all"], value="all").add_class("tfc-replicas")
        self.replicas.observe(lambda _: self._render_watch(), names="value")
        self.log = w.HTML().add_class("tfc-log")
        self.plot = w.HTML().add_class("tfc-plot")
        self.trials = w.HTML().add_class("tfc-trials")  # a sweep's table, as its cell shows it
        self.verbose = w.Checkbox(
            value=False, description="TensorFlow's start-up lines", indent=False
        )
        self.verbose.add_class("tfc-verbose")
        self.verbose.observe(lambda _: self._render_watch(), names="value")
        self.jobs = w.Dropdown(
            description="Earlier jobs", style=_STYLE, layout=w.Layout(width="70%")
        )
        self.jobs.add_class("tfc-jobs")
        self.attach_button = w.Button(description="Attach", icon="link").add_class("tfc-attach")
        self.attach_button.on_click(lambda _: self._attach_selected())
        refresh = w.Button(description="Refresh list", icon="refresh")
        refresh.on_click(lambda _: self.refresh_jobs())
        close = w.Button(description="Close panel", icon="times").add_class("tfc-close")
        close.on_click(lambda _: self.close())
        header = w.HTML(f"<b style='font-size:1.15em'>tfc_jupyter launch panel</b> {_esc(title)}")
        self.widget = w.VBox(
            [
                w.HBox([header, close], layout=w.Layout(justify_content="space-between")),
                w.HBox(
                    [
                        w.VBox(rows, layout=w.Layout(width="52%", padding="0 12px 0 0")),
                        w.VBox([self.summary, self.reload], layout=w.Layout(width="48%")),
                    ]
                ),
                w.HBox([self.launch_button, self.progress, self.stages]),
                self.message,
                w.HBox([self.state, self.cancel_button]),
                self.plot,
                self.trials,
                w.HBox([self.replicas, self.verbose]),
                self.log,
                w.HBox([self.jobs, self.attach_button, refresh]),
            ],
            layout=w.Layout(border="1px solid #d0d7de", padding="8px"),
        ).add_class("tfc-panel")
        self.render()
        self.refresh_jobs()

    def _make_controls(self) -> list[Any]:
        """One control per field of the option table (:func:`form_fields`, as the JupyterLab
        form has them; CSS class ``tfc-<name>``), each with its error line, under its section's
        heading; first, the ``%%tfc_run`` cell to run (``tfc-cell``), shown when the notebook
        has several."""
        self.cell_choice = w.Dropdown(  # a layout of its own: it is hidden with one cell
            description="%%tfc_run cell", style=_STYLE, layout=w.Layout(width="100%")
        )
        self.cell_choice.add_class("tfc-cell")
        self.cell_choice.observe(self._on_cell, names="value")
        rows: list[Any] = [self.cell_choice]
        self.fields = {f.name: f for f in form_fields()}
        group = ""
        for field in self.fields.values():
            if field.group != group:
                group = field.group
                rows.append(w.HTML(f"<b>{_esc(group)}</b>").add_class("tfc-group"))
            control = _control(field)
            control.add_class(f"tfc-{field.name.replace('_', '-')}")
            control.observe(self._on_change(field.name), names="value")
            self.controls[field.name] = control
            self.errors[field.name] = w.HTML().add_class("tfc-field-error")
            rows += [control, self.errors[field.name]]
        return rows

    # ----------------------------------------------------------------- display, close
    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
        if self.model.display is not None:
            # One more output, updated in place with the choices' line: saved with the
            # notebook, it is the panel's memory (see panel/memory.py).
            self.model.display.show(
                self.model.line() if self.model.check.ok else None, self.model.current_cell()
            )

    def close(self) -> None:
        """Stop watching (the job goes on) and close the widgets."""
        if self.watch is not None:
            self.watch.stop()
        _close_tree(self.widget)

    # ----------------------------------------------------------------- choices
    def _on_change(self, name: str) -> Any:
        def handler(change: dict[str, Any]) -> None:
            if self._syncing:
                return
            self.model.update(**{name: _typed(self.fields[name], change["new"])})
            self.render()

        return handler

    def _on_cell(self, change: dict[str, Any]) -> None:
        if self._syncing or not isinstance(change["new"], int):
            return
        self.model.set_cell(change["new"])
        self.render()

    def _reload(self) -> None:
        self.model.reload()
        self.render()

    def render(self) -> None:
        """Show the choices (with impossible options marked), errors and the summary."""
        with self._lock:
            self._syncing = True
            try:
                cells = self.model.run_cells()
                cell_options = [(c.label, c.number) for c in cells]
                if list(self.cell_choice.options) != cell_options:
                    self.cell_choice.options = cell_options
                current = self.model.current_cell()
                if cells and self.cell_choice.value != current:
                    self.cell_choice.value = current
                self.cell_choice.layout.display = None if cells else "none"
                for name, control in self.controls.items():
                    if self.fields[name].control == "choice":
                        opts = [(o.label, o.value) for o in self.model.options(name)]
                        if list(control.options) != opts:
                            control.options = opts
                    value = _shown(self.fields[name], getattr(self.model.choices, name))
                    if control.value != value:
                        control.value = value
            finally:
                self._syncing = False
            check = self.model.check
            for name, box in self.errors.items():
                text = check.error if check.field == name else ""
                box.value = (
                    f"<div style='color:#cf222e;margin-left:134px'>✗ {_esc(text)}</div>"
                    if text
                    else ""
                )
            self.summary.value = self._summary_html()
            self.launch_button.disabled = not check.ok or self.launcher.busy
            if not check.ok and not self.launcher.busy and self.launcher.state != "failed":
                self.message.value = (
                    f"<div style='color:#cf222e'>Cannot launch: {_esc(check.error)}</div>"
                )
            elif check.ok and self.launcher.state == "idle":
                self.message.value = ""

    def _summary_html(self) -> str:
        summary = self.model.summary()
        if summary is None:
            return "<i>The summary appears when the choices make a valid job.</i>"

        def price(pool: dict[str, Any]) -> str:
            return (
                catalog.price_text(pool["cost_per_hour"]) if summary["billed"] else "this machine"
            )

        pools = "".join(
            f"<tr><td>{_esc(p['role'])} × {p['replicas']}</td><td><b>{_esc(p['machine'])}</b>"
            f"<br><small>{_esc(p['describe'])}</small></td>"
            f"<td style='text-align:right'>{price(p)}</td></tr>"
            for p in summary["pools"]
        )
        vertex_rate = summary["vertex_cost_per_hour"]
        if summary["billed"] and vertex_rate is None:
            cost = (
                f"<b>Cost: {catalog.NOT_LISTED}</b> <small>(see <a href='{catalog.PRICING_URL}' "
                "target='_blank' rel='noopener'>Vertex AI pricing</a>)</small>"
            )
        elif summary["billed"] and summary.get("cost_is_floor"):
            cost = (
                f"<b>From ${summary['cost_per_hour']:,.2f} per hour</b> "
                "<small>(Compute Engine Spot prices; Vertex AI adds a fee it does not publish)"
                "</small>"
            )
        elif summary["billed"]:
            cost = (
                f"<b>About ${summary['cost_per_hour']:,.2f} per hour</b> "
                f"<small>(list prices {catalog.PRICES_AS_OF}, an estimate)</small>"
            )
        else:
            cost = (
                "<b>Runs on this machine: nothing to pay</b> <small>(on Vertex AI, "
                f"{_about(vertex_rate)})</small>"
            )
        warnings = "".join(
            f"<div style='color:#9a6700'>⚠ {_esc(x)}</div>" for x in summary["warnings"]
        )
        saved = f", saved {summary['saved_at']}" if summary["saved_at"] else ""
        cells = ", ".join(map(str, summary["cells"])) or "none"
        reqs = ", ".join(summary["requirements"]) or "none"
        return (
            f"<div><b>Strategy</b> {_esc(summary['strategy'])} &middot; "
            f"<b>backend</b> {_esc(summary['backend'])}</div>"
            f"<table style='margin:4px 0'>{pools}</table>"
            f"<div class='tfc-cost'>{cost}</div>"
            f"<div><b>Job</b> cells {_esc(cells)} of {_esc(summary['notebook'])}{_esc(saved)}"
            f" &middot; requirements: <code>{_esc(reqs)}</code></div>{warnings}"
            f"<div style='margin-top:4px'><b>Same as</b> <code class='tfc-line' "
            f"style='user-select:all'>{_esc(summary['line'])}</code></div>"
        )

    # ----------------------------------------------------------------- launch
    def _render_launch(self) -> None:
        with self._lock:
            launcher = self.launcher
            marks = []
            for stage in launcher.stages:
                secs = f" {stage.seconds:.1f}s" if stage.seconds is not None else ""
                title = _esc(stage.detail)
                marks.append(
                    f"<span title='{title}' class='tfc-stage tfc-stage-{stage.status}'>"
                    f"{_STAGE_MARKS[stage.status]} {stage.name}{secs}</span>"
                )
            self.stages.value = " &nbsp; ".join(marks)
            share = 100 // len(launcher.stages)
            self.progress.value = sum(
                share if s.status in ("done", "skipped") else int(share * (s.fraction or 0))
                for s in launcher.stages
            )
            self.progress.bar_style = {"failed": "danger", "launched": "success"}.get(
                launcher.state, ""
            )
            self.launch_button.disabled = launcher.busy or not self.model.check.ok
            self.launch_button.description = "Launching…" if launcher.busy else "Launch"
            if launcher.state == "failed":
                failed = next((s.name for s in launcher.stages if s.status == "failed"), "")
                log = (
                    f"<details><summary>build log</summary><pre>{_esc(launcher.log_tail)}</pre>"
                    "</details>"
                    if launcher.log_tail
                    else ""
                )
                self.message.value = (
                    f"<div style='color:#cf222e'><b>{_esc(failed)} failed:</b> "
                    f"{_esc(launcher.error)}</div>{log}"
                )
            elif launcher.state == "launched" and launcher.job is not None:
                self.message.value = f"Launched <code>{_esc(launcher.job.id)}</code>."
                if self.watch is None or self.watch.first.id != launcher.job.id:
                    self.attach(launcher.job).follows_sweep = launcher.drives_sweep
                    self.refresh_jobs()

    # ----------------------------------------------------------------- watch
    def attach(self, job: Job) -> JobWatch:
        """Watch ``job`` here (stopping the previous watch)."""
        with self._lock:
            if self.watch is not None:
                self.watch.stop()
            self.watch = JobWatch(job, on_update=lambda _: self._render_watch())
            self.replicas.value = "all"
            self._render_watch()
            self.watch.start()
            return self.watch

    def _render_watch(self) -> None:
        with self._lock:
            watch = self.watch
            if watch is None:
                return
            rec = watch.record
            color = _STATE_COLORS.get(rec.state.value, "#0969da")
            links = "".join(
                f" &middot; <a href='{_esc(url)}' target='_blank' rel='noopener'>{label}</a>"
                for label, url in (
                    ("Vertex console", rec.console_url),
                    ("TensorBoard", rec.tensorboard_url),
                )
                if url
            )
            problem = watch.error or watch.cancel_error
            note = ""
            if rec.state in (JobState.CANCELLED, JobState.CANCELLING):
                # a cancel asked for is no failure: how it ended, if more than "cancelled"
                if rec.error and rec.error.strip() != "cancelled":
                    note = rec.error
            elif rec.error and rec.state is not JobState.SUCCEEDED:
                problem = rec.error
            error = f"<div style='color:#cf222e'>{_esc(problem)}</div>" if problem else ""
            if note:
                error += f"<div class='tfc-ended' style='color:{_NEUTRAL}'>{_esc(note)}</div>"
            self.state.value = (
                f"<div><code>{_esc(rec.id)}</code> on <b>{_esc(rec.backend)}</b>: "
                f"<b class='tfc-job-state' style='color:{color}'>{rec.state.value}</b>"
                f" &middot; <span class='tfc-elapsed'>{rec.elapsed:.1f} s</span>"
                f"{links}{error}</div>"
            )
            self.cancel_button.disabled = rec.state.is_terminal() or watch.cancelling
            if watch.ended and self._listed_end != rec.id:
                self._listed_end = rec.id
                self.refresh_jobs()  # the list shows how it ended
            self.plot.value = _plot_html(watch)
            self.trials.value = _trials_html(watch)
            names = ["all", *in_order(list(watch.lines))]  # chief first, whoever wrote first
            if list(self.replicas.options) != names:
                current = self.replicas.value
                self.replicas.options = names
                self.replicas.value = current if current in names else "all"
            replica = None if self.replicas.value == "all" else self.replicas.value
            lines = watch.text(replica, verbose=self.verbose.value).split("\n")[-VIEW_LINES:]
            body = _esc("\n".join(lines)) or "(no output yet)"
            self.log.value = (
                f"<div style='max-height:320px;overflow:auto;display:flex;{_LOG_BOX}'>"
                f"<pre style='margin:4px;font-size:12px;flex:none;{_LOG_TEXT}'>{body}</pre></div>"
            )

    def _cancel(self) -> None:
        watch = self.watch
        if watch is not None and not watch.record.state.is_terminal():
            self.cancel_button.disabled = True
            threading.Thread(target=watch.cancel, name="tfc-panel-cancel", daemon=True).start()

    # ----------------------------------------------------------------- earlier jobs
    def refresh_jobs(self) -> None:
        """List the job records (newest first; this notebook's marked)."""
        records = self.store.list(limit=30)
        mine = str(self.model.notebook) if self.model.notebook else None
        opts = [
            (
                f"{'• ' if mine and r.notebook == mine else ''}{r.id} · {r.backend} · "
                f"{r.state.value} · {r.elapsed:.0f} s",
                r.id,
            )
            for r in records
        ]
        with self._lock:
            current = self.jobs.value
            self.jobs.options = opts or [("no jobs yet", "")]
            values = [value for _, value in self.jobs.options]
            self.jobs.value = current if current in values else values[0]
            self.attach_button.disabled = not opts

    def _attach_selected(self) -> None:
        if self.jobs.value:
            self.attach(Job(self.jobs.value, self.store))
