"""``python -m tfc_runtime [--strategy NAME] [--gpus N] [--source-map FILE] SCRIPT [ARGS...]``
(:class:`tfc_runtime.protocol.RuntimeArgs`).

The job's entry point: sets up the environment, builds the strategy, runs the converted
notebook script, and on failure names the notebook cell and line that raised.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import io
import json
import os
import re
import sys
import traceback
from collections.abc import Sequence
from types import TracebackType
from typing import NoReturn

from tfc_runtime import (
    crash,
    executed,
    hooks,
    hypertune,
    ipython_shim,
    params,
    reportkey,
    results,
    resume,
    runcell,
    sourcemap,
    streams,
    tfc_shim,
)
from tfc_runtime.cluster import ClusterInfo, cluster_info, ensure_tf_config, keras_tuner_env
from tfc_runtime.protocol import ONE_STREAM_ENV, USAGE, RuntimeArgs
from tfc_runtime.script import call_with_room, run_script
from tfc_runtime.strategy import (
    build_strategy,
    describe,
    prepare_keras,
    will_be_multi_worker,
)

_FRAME = re.compile(r'^(\s*File "(.*)", line (\d+), in .*)$')


def parse_args(argv: Sequence[str]) -> RuntimeArgs:
    """The runtime's command line (:class:`tfc_runtime.protocol.RuntimeArgs`, the type the
    product writes it with)."""
    try:
        return RuntimeArgs.from_argv(argv)
    except ValueError as exc:
        _usage_error(exc)


def _usage_error(exc: ValueError) -> NoReturn:
    """The usage and what is wrong with the command line, on stderr; exit status 2."""
    print(f"{USAGE}\npython -m tfc_runtime: error: {exc}", file=sys.stderr)
    raise SystemExit(2) from None


def _trial_values(args: RuntimeArgs) -> tuple[dict[str, params.Value], list[str]]:
    """A sweep trial's values, taken out of the script's arguments (which keep the rest), and
    said in the log; a value that does not read is a usage error."""
    if not args.params:
        return {}, list(args.args)
    try:
        values, rest = params.take(args.args, args.params)
    except ValueError as exc:
        _usage_error(exc)
    params.set_values(values)  # for tfc_jupyter.hp(name, default)
    shown = ", ".join(f"{k}={v!r}" for k, v in values.items()) or "the notebook's own"
    print(f"[tfc_runtime] trial values: {shown}")
    return values, rest


def _swept(
    tree: ast.Module, targets: Sequence[params.Target], values: dict[str, params.Value]
) -> ast.Module:
    """``tree`` with the trial's values in place of the notebook's assignments."""
    params.override(tree, targets, values)
    return tree


def _script_frames(tb: TracebackType | None, script: str) -> list[int]:
    """Line numbers of the traceback's frames that run ``script``, outermost first."""
    lines = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == script:
            lines.append(tb.tb_lineno)
        tb = tb.tb_next
    return lines


def _trim(tb: TracebackType | None, script: str) -> TracebackType | None:
    """The traceback from the first frame in ``script`` on (drops runpy and our frames)."""
    first = tb
    while first is not None and first.tb_frame.f_code.co_filename != script:
        first = first.tb_next
    return first or tb


def _annotated(exc: BaseException, script: str, smap: sourcemap.SourceMap) -> str:
    """The formatted traceback, each frame in ``script`` followed by its notebook location,
    without the runtime's own frames (:func:`tfc_runtime.crash.without_runtime`), its chained
    exceptions' too."""
    exc = exc.with_traceback(crash.without_runtime(_trim(exc.__traceback__, script)))
    seen, chained = {id(exc)}, [exc.__cause__, exc.__context__]
    while chained:
        link = chained.pop()
        if link is not None and id(link) not in seen:
            seen.add(id(link))
            link.with_traceback(crash.without_runtime(link.__traceback__))
            chained += [link.__cause__, link.__context__]
    out = io.StringIO()
    for chunk in traceback.format_exception(type(exc), exc, exc.__traceback__):
        for line in chunk.splitlines(keepends=True):
            m = _FRAME.match(line.rstrip("\n"))
            if m and m.group(2) == script and smap.locate(int(m.group(3))):
                line = f"{m.group(1)}   [{smap.describe(int(m.group(3)))}]\n"
            out.write(line)
    return out.getvalue()


def report_failure(exc: BaseException, script: str, smap: sourcemap.SourceMap) -> dict[str, object]:
    """Print the annotated traceback and a last summary line; return the error record."""
    text = _annotated(exc, script, smap)
    frames = _script_frames(exc.__traceback__, script)
    script_line: int | None = frames[-1] if frames else None
    if script_line is None and isinstance(exc, SyntaxError) and exc.filename == script:
        script_line = exc.lineno
    where = smap.locate(script_line) if script_line else None
    place = smap.describe(script_line) if script_line else "startup"
    summary = crash.summary(exc)
    sys.stdout.flush()
    streams.end_line()  # a progress bar's last update is a line of its own, as in Jupyter
    sys.stderr.write(text)
    sys.stderr.write(f"[tfc_runtime] job failed at {place}: {summary}\n")
    sys.stderr.flush()
    return _record(where, script_line, exc, text, place if where else None)


def _record(
    where: tuple[int, int] | None,
    script_line: int | None,
    exc: BaseException,
    text: str,
    place: str | None = None,
) -> dict[str, object]:
    """The errors/<task>.json record (``summary``: the one line that says what went wrong;
    ``place``: where, in the notebook's or the script's words: ``cell 7, line 3``)."""
    return {
        "cell": where[0] if where else None,
        "line": where[1] if where else None,
        "place": place,
        "script_line": script_line,
        "type": type(exc).__name__,
        "message": str(exc),
        "summary": crash.summary(exc),
        "traceback": text,
    }


def _write_error(record: dict[str, object]) -> None:
    """Save the error record as ``$TFC_JOB_DIR/errors/<task_type>-<task_index>.json``."""
    job_dir = os.environ.get("TFC_JOB_DIR")
    if not job_dir:
        return
    try:
        info = cluster_info()
        name = f"{info.task_type}-{info.task_index}"
    except RuntimeError:  # the cluster variables themselves are what failed
        name = "unknown-0"
    folder = os.path.join(job_dir, "errors")
    path = os.path.join(folder, f"{name}.json")
    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # owner-only, as logs
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
    except OSError:  # a full disk: the line already printed says what failed (no traceback)
        with contextlib.suppress(OSError):
            os.unlink(path)  # never half a record


def _failed(exc: Exception, script: str, smap: sourcemap.SourceMap, alone: bool) -> None:
    """The job failed: its error said and recorded, the names bound before the failing
    statement sent back (partial), the executed notebook written with the error at its cell."""
    record = report_failure(exc, script, smap)
    _write_error(record)
    executed.error(exc, record.get("cell"), str(record.get("traceback") or ""))
    frames = _script_frames(exc.__traceback__, script)
    main = sys.modules.get("__main__")
    if frames and smap.cells and main is not None and getattr(main, "__file__", None) != __file__:
        runcell.partial(vars(main), frames[0], smap, alone)
    executed.write()


def _mark_ready(info: ClusterInfo) -> None:
    """Touch ``$TFC_JOB_DIR/status/<task_type>-<task_index>.ready``: this task joined the job.

    The local backend's supervisor watches for it to tell a slow start from a stuck one.
    """
    job_dir = os.environ.get("TFC_JOB_DIR")
    if job_dir:
        folder = os.path.join(job_dir, "status")
        os.makedirs(folder, exist_ok=True)
        marker = os.path.join(folder, f"{info.task_type}-{info.task_index}.ready")
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600))


def _one_stream() -> None:
    """stderr into the stdout pipe, where the backend asks (:data:`~tfc_runtime.protocol.
    ONE_STREAM_ENV`: docker's engine reads the two apart, so their lines could swap places)."""
    if os.environ.pop(ONE_STREAM_ENV, "") != "1":
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(sys.stdout.fileno(), sys.stderr.fileno())


def _line_buffered() -> None:
    """Stream logs: line-buffered stdout/stderr here, unbuffered Python in child processes."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(line_buffering=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")


def _freeze_tensorflow(module: object) -> None:
    """Keep the objects alive once TensorFlow is imported out of the garbage collector's
    sight (``gc.freeze``), when the runtime or the notebook first imports it.

    Importing TensorFlow leaves about 280,000 objects that live as long as the process, and no
    garbage (a collection right after finds none). Python's collector scanned them all again in
    every full collection, and at exit its last collections took 0.7 s of every replica's end
    before the job could be reported done. Frozen, they are never scanned: a replica exits in
    about 0.07 s, and its full collections are shorter. What the notebook makes after the import
    (its models, files and summary writers) is collected, finalized and flushed as before; what
    it made before, usually only imports, is frozen too (a reference cycle of it is not
    collected, nor finalized at exit).
    """
    gc.freeze()


def _serve(info: ClusterInfo) -> int:
    """A worker or ps task of the code's ParameterServerStrategy: serve until stopped.

    The chief (the coordinator) runs the notebook and sends these tasks its functions and
    variables, as TensorFlow's parameter server guide has every non-chief task do.
    """
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=info.task_type,
        task_index=info.task_index,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    print(f"[tfc_runtime] task {info.describe()}: serving the chief's ParameterServerStrategy")
    _mark_ready(info)
    server.join()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; the exit status (a script's SystemExit passes through unchanged)."""
    reportkey.take()  # first: a process started with the report key starts again without it
    args = parse_args(sys.argv[1:] if argv is None else argv)
    _one_stream()
    _line_buffered()
    streams.install()  # stdout and stderr apart line by line, as Jupyter keeps them
    os.environ["TFC_REMOTE"] = "1"
    os.environ["TF_KERAS_RUNNING_REMOTELY"] = "1"
    if os.environ.get("TFC_JOB_DIR"):  # the script may change directory
        os.environ["TFC_JOB_DIR"] = os.path.abspath(os.environ["TFC_JOB_DIR"])
    script = os.path.abspath(args.script)
    try:
        smap = sourcemap.load(args.source_map) if args.source_map else sourcemap.SourceMap()
        info = cluster_info()  # before ensure_tf_config, to report where it came from
        ensure_tf_config()
        prepare_keras(args.strategy, legacy=args.legacy_keras)
        if args.serve:
            os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
        if args.keras_tuner:  # the code's own names win
            for name, value in keras_tuner_env(info).items():
                os.environ.setdefault(name, value)
        if will_be_multi_worker(args.strategy):  # the strategy waits for every task to join
            print(f"[tfc_runtime] task {info.describe()}: waiting for the cluster to join")
        strategy = build_strategy(args.strategy, gpus=args.gpus)
    except (OSError, RuntimeError, ValueError) as exc:
        sys.stdout.flush()
        print(f"[tfc_runtime] cannot start the job: {exc}", file=sys.stderr, flush=True)
        _write_error(_record(None, None, exc, ""))
        return 1
    task = f"{info.task_type}-{info.task_index}"
    crash.enable_fault_log(task)
    if args.serve and info.task_type in ("worker", "ps"):
        return _serve(info)
    print(f"[tfc_runtime] task {info.describe()}, strategy {describe(strategy)}")
    _mark_ready(info)
    crash.track_position(script, task, smap.describe)
    if info.is_chief:
        results.install(several_tasks=sum(map(len, info.cluster.values())) > 1)
        if args.hp_metric:
            hypertune.install(args.hp_metric)  # what Vertex AI reads of a tuning trial
    resume.install()  # every task: all restore a fit's backup, as Keras asks
    runcell.install(chief=info.is_chief)  # the run cell's outputs and names go back
    executed.install(smap.cells, smap.notebook, chief=info.is_chief)  # executed.ipynb
    alone = sum(map(len, info.cluster.values())) <= 1
    hooks.when_imported("tensorflow", _freeze_tensorflow, "the job's exit is slower")
    # A .py entry point runs as `python train.py` runs it in its folder (the job's working
    # folder): __file__, sys.argv[0] and sys.path[0] are that file's, not the job's copy.
    entry = os.path.basename(smap.notebook) if smap.script and smap.notebook else None
    swept, script_args = _trial_values(args)
    sys.argv = [entry or args.script, *script_args]
    sys.path.insert(0, os.getcwd() if entry else os.path.dirname(script))
    tfc_shim.install()  # `import tfc_jupyter as tfc` in an image without it
    __import__("tfc_runtime.globs").globs.install()  # a glob that matches nothing: a warning
    ipython_shim.install()  # `from IPython.display import display` in an image without it
    try:
        run_script(
            script,
            lambda tree, text: runcell.transform(_swept(tree, args.params, swept), smap, text),
            file=os.path.join(os.getcwd(), entry) if entry else None,
        )
    except SystemExit as exc:
        executed.write()
        results.finish()
        if exc.code in (None, 0):
            resume.finish()
        raise
    except Exception as exc:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__  # out of any %%capture
        _failed(exc, script, smap, alone)
        return 1
    executed.write()
    results.finish()  # the custom loop's last round
    resume.finish()  # ended well: the backups for a restart are not needed
    return 0


if __name__ == "__main__":
    sys.exit(call_with_room(main))  # TensorFlow's import and the notebook: see tfc_runtime.script
