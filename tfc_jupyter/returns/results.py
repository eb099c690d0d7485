"""What a job trained and saved, read back from its results file or its chief's log.

Inside the job the runtime (``tfc_runtime.results``) reports each Keras epoch's loss and
metrics, each round of a custom loop's Keras metrics (their values when the code resets them),
every saved model and a TensorBoard callback's folder, apart from what the code prints: as lines
of ``<job_dir>/results.jsonl`` (local, docker), or as ``[tfc_runtime] result {json}`` lines on the
chief's stderr, which reach ``<job_dir>/logs/chief.log`` (Vertex AI's logs). :func:`job_results`
reads both (only the bytes added since the last read), and :class:`Results` collects them as they
come, for the live plot.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfc_runtime.protocol import NONFINITE, RESULTS_FILE, read_report  # stdlib only

from .. import registry
from ..errors import SpecError
from ..store.logs import read_chunk, replicas

if TYPE_CHECKING:
    from ..store.records import JobRecord

MAX_EPOCHS = 100_000
MAX_POINTS = 2_000  # epochs the jobs API and plots show at most (evenly spaced)
"""Most epochs kept for one job (a report past it is dropped, never the job)."""
_MAX_NAME = 100
_MAX_METRICS = 50
LOOP = -1
"""The ``fit`` number of a custom loop's epochs (rounds of its metrics), as opposed to the 0, 1,
... of the code's ``fit`` calls."""


def parse(line: str, key: str | None = None) -> dict[str, Any] | None:
    """The report in a log line signed with the job's ``key``, or None (not a report, one that
    is not well formed, or a line the code printed that looks like one). ``key`` None reads
    the unsigned lines of a job launched before reports were signed. The report may follow a
    line the code left unfinished (a progress bar without its newline)."""
    text = read_report(line, key)
    return None if text is None else parse_json(text)


def parse_json(text: str) -> dict[str, Any] | None:
    """One report as the runtime writes it to its results file, or None."""
    try:
        event = json.loads(text)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("event"), str) else None


def finite_number(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (a string, a bool, NaN, infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def metric_number(value: Any) -> float | None:
    """A reported metric as a float, NaN and infinity included (the runtime writes them as
    ``"NaN"``, ``"Infinity"``, ``"-Infinity"``); None for anything else."""
    if isinstance(value, str):
        return NONFINITE.get(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def value_text(value: float) -> str:
    """``NaN``, ``inf`` or ``-inf`` for a value that is not a number to plot."""
    return "NaN" if math.isnan(value) else "inf" if value > 0 else "-inf"


@dataclass
class Results:
    """A job's reported results: epochs (with their ``fit`` call, or :data:`LOOP` for a custom
    loop's rounds), saved models, TensorBoard folders. No epochs for code that keeps no Keras
    metrics."""

    epochs: list[dict[str, Any]] = field(default_factory=list)
    fits: list[dict[str, Any]] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    saved_with: list[dict[str, str]] = field(default_factory=list)
    tensorboard: list[str] = field(default_factory=list)
    _loop_rows: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)
    _last_epoch: dict[int, int] = field(default_factory=dict, repr=False)  # fit -> last epoch
    refused: list[dict[str, str]] = field(default_factory=list)
    """Paths the job reported that are outside its own folders, never read (:func:`confined`):
    ``{"what": "model" | "tensorboard", "path": ..., "why": ...}``."""

    def _loop_round(self, event: dict[str, Any]) -> bool:
        """A custom loop's metric round: into that round's epoch row (made when first seen)."""
        name, value, number = (
            event.get("name"),
            metric_number(event.get("value")),
            _int(event.get("round")),
        )
        if not isinstance(name, str) or value is None or number < 1:
            return False
        row = self._loop_rows.get(number)
        if row is None:
            if len(self.epochs) >= MAX_EPOCHS:
                return False
            row = {
                "fit": LOOP,
                "epoch": number,
                "time": finite_number(event.get("time")),
                "metrics": {},
            }
            self._loop_rows[number] = row
            self.epochs.append(row)
        if len(row["metrics"]) < _MAX_METRICS or name[:_MAX_NAME] in row["metrics"]:
            row["metrics"][name[:_MAX_NAME]] = value
        return True

    def add(self, event: dict[str, Any]) -> bool:
        """Take one report; True when it changed what a plot shows (a new epoch or round)."""
        kind = event.get("event")
        if kind == "metric":
            return self._loop_round(event)
        if kind == "epoch" and len(self.epochs) < MAX_EPOCHS:
            call, epoch = _int(event.get("fit")), _int(event.get("epoch"))
            if epoch <= self._last_epoch.get(call, -1):  # a restarted job went back to it
                self.epochs = [e for e in self.epochs if e["fit"] != call or e["epoch"] < epoch]
            self._last_epoch[call] = epoch
            raw = event.get("metrics")
            metrics = {
                str(k)[:_MAX_NAME]: number
                for k, v in (raw.items() if isinstance(raw, dict) else ())
                if (number := metric_number(v)) is not None
            }
            self.epochs.append(
                {
                    "fit": call,
                    "epoch": epoch,
                    "time": finite_number(event.get("time")),
                    "metrics": dict(list(metrics.items())[:_MAX_METRICS]),
                }
            )
            return True
        if kind == "fit":  # again after a restart: the same call, once
            made = {"fit": _int(event.get("fit")), "epochs": event.get("epochs")}
            if isinstance(event.get("run_cell"), bool):
                made["run_cell"] = event["run_cell"]
            self.fits = [f for f in self.fits if f["fit"] != made["fit"]] + [made]
        elif kind == "saved" and isinstance(event.get("path"), str):
            self.saved.append(event["path"])
            self.saved_with.append({k: str(event.get(k) or "") for k in ("path", "how", "library")})
        elif (
            kind == "tensorboard"
            and isinstance(event.get("log_dir"), str)
            and event["log_dir"] not in self.tensorboard
        ):
            self.tensorboard.append(event["log_dir"])
        return False

    def of_run_cell(self) -> Results:
        """These results without the fits the cells above a run cell made (their ``fit``
        report says ``run_cell: false``): what the run cell's plot shows, as Jupyter shows the
        run cell's own fits only. A job of no run cell, or of an older runtime, keeps them all."""
        above = {f["fit"] for f in self.fits if f.get("run_cell") is False}
        if not above:
            return self
        kept = self.copy()
        kept.epochs = [e for e in kept.epochs if e["fit"] not in above]
        kept.fits = [f for f in kept.fits if f["fit"] not in above]
        return kept

    def add_line(self, line: str) -> bool:
        """Take a log line (anything but a report is ignored); True for a new epoch."""
        event = parse(line)
        return self.add(event) if event is not None else False

    @property
    def names(self) -> list[str]:
        """Every metric reported, in the order first seen (``loss``, ``accuracy``, ...)."""
        seen: dict[str, None] = {}
        for epoch in self.epochs:
            seen.update(dict.fromkeys(epoch["metrics"]))
        return list(seen)

    @property
    def last(self) -> dict[str, float] | None:
        """The last epoch's metrics (None before the first epoch ends)."""
        return dict(self.epochs[-1]["metrics"]) if self.epochs else None

    @property
    def not_finite(self) -> dict[str, tuple[str, int, int]]:
        """Each metric that became NaN or infinite: its value's word (``NaN``, ``inf``), and
        the ``fit`` call and epoch where it first did, in the order found."""
        found: dict[str, tuple[str, int, int]] = {}
        for epoch in self.epochs:
            for name, value in epoch["metrics"].items():
                if name not in found and not math.isfinite(value):
                    found[name] = (value_text(value), epoch["fit"], epoch["epoch"])
        return found

    @property
    def flags(self) -> list[str]:
        """What a row or plot should warn of: ``loss is NaN from epoch 3``, a metric each (a
        custom loop's rounds say ``round``; a second ``fit`` call is named)."""
        several = len({e["fit"] for e in self.epochs}) > 1
        out = []
        for name, (word, fit, epoch) in self.not_finite.items():
            where = f"round {epoch}" if fit == LOOP else f"epoch {epoch}"
            if several and fit != LOOP:
                where += f" of fit {fit + 1}"
            out.append(f"{name} is {word} from {where}")
        return out

    @property
    def model_dir(self) -> str | None:
        """Where the code last saved a model (as the job saw the path), else None."""
        return self.saved[-1] if self.saved else None

    def copy(self) -> Results:
        """A copy the caller may keep (the cached one keeps growing)."""
        epochs = [{**e, "metrics": dict(e["metrics"])} for e in self.epochs]
        rows = {e["epoch"]: e for e in epochs if e["fit"] == LOOP}
        return Results(
            epochs,
            list(self.fits),
            list(self.saved),
            list(self.saved_with),
            list(self.tensorboard),
            rows,
            dict(self._last_epoch),
            [dict(r) for r in self.refused],
        )

    def downsampled(self, limit: int = MAX_POINTS) -> Results:
        """A copy with at most about ``limit`` epochs, for plots and the jobs API: evenly
        spaced, with each ``fit`` call's first and last epoch and the very last one kept. The
        job's own results (``job.metrics``) stay whole."""
        if len(self.epochs) <= limit:
            return self
        stride = -(-len(self.epochs) // limit)
        last = len(self.epochs) - 1
        kept = [
            e
            for i, e in enumerate(self.epochs)
            if i % stride == 0
            or i == last
            or e["fit"] != self.epochs[i - 1]["fit"]
            or e["fit"] != self.epochs[min(i + 1, last)]["fit"]
        ]
        return Results(
            kept, self.fits, self.saved, self.saved_with, self.tensorboard, refused=self.refused
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: names, epochs, last, model_dir, saved and tensorboard."""
        return {
            "names": self.names,
            "epochs": self.epochs,
            "last": self.last,
            "model_dir": self.model_dir,
            "saved": self.saved,
            "tensorboard": self.tensorboard,
            "flags": self.flags,
        }


_HELD_OUT = ("val_", "test_", "eval_", "valid_", "validation_")


def loss_name(names: list[str]) -> str | None:
    """The loss among metric names: ``loss`` (Keras ``fit``), else a custom loop's training loss
    (``train_loss``, not ``test_loss``), else any name ending in ``loss``; None without one."""
    if "loss" in names:
        return "loss"
    losses = sorted(n for n in names if n.endswith("loss"))
    trained = [n for n in losses if not n.startswith(_HELD_OUT)]
    return next(iter(trained or losses), None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _new_events(
    path: Path, offset: int, parse_line: Callable[[str], dict[str, Any] | None]
) -> tuple[list[dict[str, Any]], int]:
    """The reports in the complete lines written to ``path`` since ``offset`` (a report being
    written is read next time), and the offset after them.

    Raises:
        OSError, ValueError: the file was replaced or truncated.
    """
    events: list[dict[str, Any]] = []
    while True:
        data, size = read_chunk(path, offset, final=False)
        offset += len(data)
        for line in data.decode("utf-8", errors="replace").split("\n"):
            event = parse_line(line)
            if event is not None:
                events.append(event)
        if not data or offset >= size:
            return events, offset


class _Reader:
    """A job's reports, read from where the last read stopped: its results file (local,
    docker) and, with ``in_logs``, its chief's log (Vertex AI's reports come with the logs)."""

    def __init__(self, log_dir: Path, in_logs: bool, key: str | None = None) -> None:
        self.log_dir = log_dir
        self.in_logs = in_logs
        self.key = key
        self.offsets: dict[Path, int] = {}
        self.results = Results()

    def read(self) -> Results:
        files: list[tuple[Path, Callable[[str], dict[str, Any] | None]]] = [
            (self.log_dir.parent / RESULTS_FILE, parse_json)
        ]
        chief = chief_log(self.log_dir) if self.in_logs else None
        if chief is not None:
            files.append((chief, lambda line: parse(line, self.key)))
        for path, parse_line in files:
            try:
                events, self.offsets[path] = _new_events(
                    path, self.offsets.get(path, 0), parse_line
                )
            except (OSError, ValueError):  # replaced or truncated: read it all again
                self.offsets, self.results = {}, Results()
                return self.results
            for event in events:
                self.results.add(event)
        return self.results


_CACHE: OrderedDict[tuple[Path, bool, str | None], _Reader] = OrderedDict()
_CACHE_SIZE = 256
_LOCK = threading.Lock()


class ResultFeed:
    """A job's reports as they are written to its results file (local and docker jobs; a
    Vertex AI job's come with its log lines: :func:`parse` them)."""

    def __init__(self, log_dir: str | Path) -> None:
        self.path = Path(log_dir).parent / RESULTS_FILE
        self.offset = 0

    def read(self) -> list[dict[str, Any]]:
        """The reports written since the last read (complete lines only)."""
        try:
            events, self.offset = _new_events(self.path, self.offset, parse_json)
        except (OSError, ValueError):
            return []
        return events


def chief_log(log_dir: Path) -> Path | None:
    """The log of the replica whose results are the job's (the chief), if it has one yet."""
    names = replicas(log_dir)
    return log_dir / f"{names[0]}.log" if names else None


def job_results(log_dir: str | Path, *, in_logs: bool = False, key: str | None = None) -> Results:
    """A job's results so far, from its log folder: its results file, and with ``in_logs``
    the report lines of its chief's log signed with ``key`` (a backend whose reports come
    there: its ``Traits.reports_in_logs``). Each log is read once: later calls read only what
    was added (the jobs API lists many jobs at every poll). A copy is returned."""
    path = Path(log_dir)
    with _LOCK:
        cached = (path, in_logs, key)
        reader = _CACHE.pop(cached, None) or _Reader(path, in_logs, key)
        _CACHE[cached] = reader
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
        return reader.read().copy()


def _gs_parts(uri: str) -> list[str]:
    return [p for p in uri[len("gs://") :].split("/") if p]


def outside_reason(path: str, roots: Sequence[str]) -> str | None:
    """Why the kernel must not read a path a job reported (a saved model, a TensorBoard
    folder), or None when it lies inside one of ``roots``, the job's own folders (folders on
    this machine, and ``gs://`` prefixes). A folder is judged with links resolved, and only a
    ``gs://`` path is taken from the cloud."""
    if not path or any(ord(c) < 32 for c in path):
        return "not a usable path"
    if "://" in path:
        if not path.startswith("gs://"):
            return "only gs:// paths are read from the cloud"
        parts = _gs_parts(path)
        if any(p in (".", "..") for p in path[len("gs://") :].split("/")):
            return "a path with . or .. in it"
        for root in roots:
            if root.startswith("gs://") and parts[: len(_gs_parts(root))] == _gs_parts(root):
                return None
        return "outside the job's base output folder"
    if not os.path.isabs(path):
        return "not an absolute path"
    local = [r for r in roots if r and "://" not in r and os.path.isabs(r)]
    try:
        near = [os.path.realpath(r) for r in local]
        if not any(_under(os.path.normpath(path), r) for r in [*local, *near]):
            return "outside the job's folders"  # no look at the file system needed
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return "not a usable path"
    return None if any(_under(real, r) for r in near) else "outside the job's folders"


def _under(path: str, root: str) -> bool:
    root = os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def confined(results: Results, roots: Sequence[str]) -> Results:
    """``results`` with only the saved models and TensorBoard folders inside ``roots`` (the
    job's own folders): the one place a job's reports are judged before the kernel, the CLI or
    the jobs API reads, loads or serves what they name (:func:`outside_reason`). What was left
    out is in ``refused``. A copy."""
    out = results.copy()
    if not out.saved and not out.tensorboard:
        return out
    said: dict[str, str | None] = {}

    def ok(what: str, path: str) -> bool:
        if path not in said:
            said[path] = outside_reason(path, roots)
            if said[path] is not None:
                out.refused.append({"what": what, "path": path, "why": str(said[path])})
        return said[path] is None

    out.saved = [p for p in out.saved if ok("model", p)]
    out.saved_with = [s for s in out.saved_with if said.get(s["path"]) is None]
    out.tensorboard = [d for d in out.tensorboard if ok("tensorboard", d)]
    return out


def fetch_gs(uri: str, record: JobRecord, settings: Any = None) -> str:
    """A model saved under ``gs://`` (a Vertex AI job's ``AIP_MODEL_DIR``), downloaded through
    our Cloud Storage client into the job folder (``downloaded/BUCKET/...``): the local path of
    the file, or of the folder that holds the prefix's objects.

    Raises:
        TfcError: nothing is there, or Cloud Storage refuses (one line with the fix).
    """
    from ..registry import store_for

    storage, name = store_for(uri, record, settings)
    here = Path(record.job_dir or ".") / "downloaded" / storage.bucket
    names = storage.names(name)
    if name in names:  # one file (model.keras)
        storage.download(name, here / name)
        return str(here / name)
    folder = name.rstrip("/") + "/"
    inside = [n for n in names if n.startswith(folder) and not n.endswith("/")]
    if not inside:
        raise SpecError(
            f"job {record.id}'s model at {uri} is not there (no object under it)",
            "check the job's logs for its save, and that the bucket is the one it wrote to",
        )
    for each in inside:
        storage.download(each, here / each)
    return str(here / folder)


def load_saved(
    record: JobRecord, results: Results, model_dir: str | None, settings: Any = None
) -> Any:
    """Load the model a job saved (see :meth:`tfc_jupyter.jobs.Job.load_model`); one saved
    under ``gs://`` is downloaded first (:func:`fetch_gs`).

    Raises:
        TfcError: the job saved no model, or it is not where this machine can read it.
    """
    refused = [r for r in results.refused if r["what"] == "model"]
    if not model_dir and refused:
        raise SpecError(
            f"job {record.id} reported its model at {refused[-1]['path']!r}, which is not read: "
            f"{refused[-1]['why']} (its job folder, or its --base-output-dir)",
            "save it under tfc_runtime.model_dir() (kept in the job folder on this machine, "
            "in --base-output-dir on Vertex AI)",
        )
    if not model_dir:
        raise SpecError(
            f"job {record.id} saved no model",
            "save it in the notebook, e.g. model.save('model.keras') or "
            "model.save(os.path.join(tfc_runtime.model_dir(), 'model.keras'))",
        )
    library = next(
        (s["library"] for s in reversed(results.saved_with) if s["path"] == model_dir), ""
    )
    from .returned import cell_model

    left = cell_model(record.job_dir)
    if left is not None and left[0] == model_dir:
        library = left[1]
    if model_dir.startswith("gs://"):
        model_dir = fetch_gs(model_dir, record, settings)
    if "://" not in model_dir and not Path(model_dir).exists():
        where = registry.traits(record.backend).model_place
        raise SpecError(
            f"job {record.id} saved its model at {model_dir} {where}",
            "save it under tfc_runtime.model_dir() (kept in the job folder on this machine, "
            "in --base-output-dir on Vertex AI)",
        )
    if model_dir.endswith((".keras", ".h5")):
        _check_archive(Path(model_dir), settings)
        keras = importlib.import_module("tf_keras" if library == "tf_keras" else "keras")
        return keras.models.load_model(model_dir, safe_mode=True)
    if library == "tf_keras":
        return importlib.import_module("tf_keras").models.load_model(model_dir)
    import tensorflow as tf

    return tf.saved_model.load(model_dir)


def _check_archive(path: Path, settings: Any) -> None:
    """A model file a job left, read as the border reads one (:mod:`tfc_jupyter.returns.border`): a
    regular file (no link), and a ``.keras`` decompressed within ``return_limit_mb``.

    Raises:
        SpecError: it is not, in one line.
    """
    import os
    import stat

    from ..config import current_settings
    from . import border

    limit = int(float((settings or current_settings()).get("return_limit_mb")) * (1 << 20))
    try:
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise border.Refused(f"{path.name}: a link or not a regular file")
        if path.suffix == ".keras":
            border.check_zip(path, limit, path.name)
    except (border.Refused, OSError) as exc:
        raise SpecError(
            f"the model file {str(path)!r} is not read: {exc}",
            "set c.TfcConfig.return_limit_mb higher if the model is that large, or check "
            "what wrote the file",
        ) from None
