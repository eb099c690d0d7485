"""Stand-ins for IPython magics and shell lines in a converted notebook script.

The script does ``from tfc_runtime import nb as _tfc`` and calls, e.g., ``_tfc.system("ls $d")``
for ``!ls $d``. Each helper behaves as IPython does in a notebook kernel, minus the kernel.
Imports only the standard library.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import math
import os
import re
import runpy
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from string import Formatter
from typing import IO, Any

_BASH = "/bin/bash"


class _DollarFormatter(Formatter):
    """IPython's DollarFormatter: ``{expr}`` is evaluated, ``$name``/``$a.b`` substituted.

    ``$$name`` gives a literal ``$name``; ``{{``/``}}`` literal braces; a ``$name`` inside an
    open single-quoted stretch is left alone.
    """

    _dollar = re.compile(r"(.*?)\$(\$?[\w\.]+)(?=([^']*'[^']*')*[^']*$)")

    def parse(self, format_string: str) -> Iterator[tuple[str, str | None, str | None, str | None]]:
        """Yield (literal, field, spec, conversion), splitting ``$name`` fields out of literals."""
        for literal, field_name, spec, conversion in super().parse(format_string):
            done, text = 0, ""
            for m in self._dollar.finditer(literal):
                before, name = m.group(1, 2)
                if name.startswith("$"):  # $$name -> $name
                    text += before + name
                else:
                    yield (text + before, name, "", None)
                    text = ""
                done = m.end()
            yield (text + literal[done:], field_name, spec, conversion)

    def vformat(self, format_string: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        """Format, evaluating each field as a Python expression in ``kwargs``."""
        out: list[str] = []
        for literal, field_name, spec, conversion in self.parse(format_string):
            out.append(literal)
            if field_name is not None:
                expr = f"{field_name}:{spec}" if spec else field_name  # keeps slices whole
                value = eval(expr, dict(kwargs))
                out.append(self.format_field(self.convert_field(value, conversion), ""))
        return "".join(out)


_formatter = _DollarFormatter()


def expand(cmd: str, depth: int = 1) -> str:
    """Expand Python variables in ``cmd`` as IPython does, in the caller's namespace.

    ``depth`` counts frames up from this function (1: whoever called ``expand``). The namespace
    is the frame's globals updated with its locals. As in IPython, when any field fails to
    evaluate (e.g. ``$HOME`` with no Python name ``HOME``) the whole string is left unchanged.
    """
    try:
        frame = sys._getframe(depth)
    except ValueError:
        namespace: dict[str, Any] = {}
    else:
        namespace = {**frame.f_globals, **frame.f_locals}
    try:
        return _formatter.vformat(cmd, [], namespace)
    except Exception:
        return cmd


def _pump(src: IO[bytes], dst: IO[str]) -> None:
    """Copy ``src`` to ``dst`` line by line, flushing each line."""
    for raw in iter(src.readline, b""):
        dst.write(raw.decode(errors="replace"))
        dst.flush()
    src.close()


def system(cmd: str) -> int:
    """``!cmd``: run in bash, stream stdout+stderr to our stdout, return the exit status."""
    expanded = expand(cmd, depth=2)
    sys.stdout.flush()
    proc = subprocess.Popen(
        [_BASH, "-c", expanded],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    _pump(proc.stdout, sys.stdout)
    status = proc.wait()
    if status != 0:
        print(f"[tfc_runtime] !{expanded} exited with status {status}", file=sys.stderr, flush=True)
    return status


def getoutput(cmd: str) -> list[str]:
    """``x = !cmd``: run in bash, return stdout+stderr as a list of lines."""
    expanded = expand(cmd, depth=2)
    done = subprocess.run(
        [_BASH, "-c", expanded],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    return done.stdout.decode(errors="replace").splitlines()


_previous_dirs: list[str] = []


def _unquote(text: str) -> str:
    """``text`` without one pair of surrounding quotes."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def cd(path: str, *, depth: int = 2) -> None:
    """``%cd [-q] [PATH|-|-b NAME]``: change directory (home when empty, previous for ``-``, a
    bookmark's with ``-b``), print it; the folder joins ``%dhist``'s history."""
    arg = expand(path, depth=depth).strip()
    quiet = arg == "-q" or arg.startswith("-q ")
    if quiet:
        arg = arg[2:].strip()
    old = os.getcwd()
    if arg == "-":
        if not _previous_dirs:
            raise RuntimeError("%cd -: No previous directory to change to.")
        target = _previous_dirs[-1]
    elif arg.startswith("-b ") or (arg in _bookmarks and not os.path.isdir(arg)):
        name = arg[3:].strip() if arg.startswith("-b ") else arg
        if name not in _bookmarks:
            raise RuntimeError(f"Bookmark '{name}' not found.  Use '%bookmark -l' to see yours.")
        target = _bookmarks[name]
        print(f"(bookmark:{name}) -> {target}")
    else:
        target = os.path.expanduser(_unquote(arg) or "~")
    os.chdir(target)
    _previous_dirs.append(old)
    _dir_history.append(os.getcwd())
    if not quiet:
        print(os.getcwd())


_dir_stack: list[str] = []
_dir_history: list[str] = [os.getcwd()]
_bookmarks: dict[str, str] = {}


def _home_short(path: str) -> str:
    home = os.path.expanduser("~")
    return path.replace(home, "~", 1) if path.startswith(home) else path


def pushd(path: str = "") -> list[str]:
    """``%pushd [DIR]``: put the current folder on the stack, go to ``DIR``; the stack."""
    here = _home_short(os.getcwd())
    if path.strip():
        cd(path, depth=3)
    _dir_stack.insert(0, here)
    return dirs()


def popd(arg: str = "") -> None:
    """``%popd``: go to the folder on top of the stack, taken off it."""
    if not _dir_stack:
        raise RuntimeError("%popd on empty stack")
    top = _dir_stack.pop(0)
    cd(top, depth=3)
    print("popd ->", top)


def dirs(arg: str = "") -> list[str]:
    """``%dirs``: the folder stack."""
    return _dir_stack


def dhist(arg: str = "") -> None:
    """``%dhist [N [M]]``: the folders visited (IPython's ``_dh``), as IPython prints them."""
    bounds = [int(n) for n in arg.split()] if arg.strip() else []
    start, stop = 0, len(_dir_history)
    if len(bounds) == 1:
        start = max(len(_dir_history) - bounds[0], 0)
    elif len(bounds) == 2:
        start, stop = bounds[0], min(bounds[1], len(_dir_history))
    print("Directory history (kept in _dh)")
    for i in range(start, stop):
        print(f"{i}: {_dir_history[i]}")


def bookmark(arg: str = "") -> None:
    """``%bookmark NAME [DIR]``, ``-l``, ``-d NAME``, ``-r``: folders by name for ``%cd -b``
    (this job's own: the kernel's are kept in its profile, which a job does not have)."""
    words = shlex.split(expand(arg, depth=2))
    if not words or words == ["-l"]:
        if _bookmarks:
            print("Current bookmarks:")
            for name in sorted(_bookmarks):
                print(f"{name:<{max(map(len, _bookmarks))}} -> {_bookmarks[name]}")
        return
    if words[0] == "-r":
        _bookmarks.clear()
    elif words[0] == "-d":
        if len(words) < 2 or words[1] not in _bookmarks:
            raise RuntimeError(f"%bookmark -d: no bookmark {words[1:]!r} to delete")
        del _bookmarks[words[1]]
    else:
        _bookmarks[words[0]] = os.path.abspath(os.path.expanduser(words[1])) if len(words) > 1 \
            else os.getcwd()  # fmt: skip


_KEPT_BY_RESET = frozenset({"_tfc", "get_ipython", "display"})
"""Names the job's script holds that are not the notebook's (IPython keeps its own so)."""


def who_ls(namespace: dict[str, Any], arg: str = "") -> list[str]:
    """``%who_ls [TYPE ...]``: the notebook's names, sorted (none with a leading underscore),
    only those of the types named when some are."""
    names = [n for n in namespace if not n.startswith("_") and n not in _KEPT_BY_RESET]
    types = set(arg.split())
    if types:
        names = [n for n in names if type(namespace[n]).__name__ in types]
    return sorted(names)


def reset(namespace: dict[str, Any], arg: str = "") -> None:
    """``%reset -f [in|out|dhist|array]``: delete the notebook's names (``-f``: no question,
    as the job has no one to ask), or only its arrays; the histories are the kernel's."""
    words = [w for w in arg.split() if not w.startswith("-")]
    if "dhist" in words:
        del _dir_history[:]
    if words and words != ["array"]:
        return  # in / out: the kernel's input and output histories, which a job does not keep
    for name in list(namespace):
        if name.startswith("__") or name in _KEPT_BY_RESET:
            continue
        if words == ["array"] and type(namespace[name]).__name__ != "ndarray":
            continue
        del namespace[name]


def reset_selective(namespace: dict[str, Any], arg: str = "") -> None:
    """``%reset_selective -f REGEX``: delete the notebook's names that match ``REGEX``."""
    pattern = " ".join(w for w in arg.split() if w != "-f")
    matches = re.compile(pattern)
    for name in list(namespace):
        if not name.startswith("__") and name not in _KEPT_BY_RESET and matches.search(name):
            del namespace[name]


_aliases: dict[str, str] = {}


def alias(arg: str = "") -> None:
    """``%alias NAME COMMAND`` (``%s`` and ``%l`` in it as IPython reads them); with no
    argument, the aliases made in this job."""
    name, _, command = arg.strip().partition(" ")
    if not name:
        print(f"Total number of aliases: {len(_aliases)}")
        for item in sorted(_aliases.items()):
            print(item)
        return
    _aliases[name] = command.strip()


def unalias(arg: str = "") -> None:
    """``%unalias NAME``."""
    _aliases.pop(arg.strip(), None)


def alias_command(name: str, arg: str) -> str:
    """The shell line ``%NAME ARGS`` runs for an alias: ``%l`` is the whole line, each ``%s``
    takes one word, the other words follow (as IPython's aliases)."""
    command = _aliases.get(name, name)
    if "%l" in command:
        return command.replace("%l", arg)
    words = arg.split()
    count = command.count("%s")
    if count > len(words):
        raise RuntimeError(f"Alias <{name}> requires {count} arguments, {len(words)} given.")
    for word in words[:count]:
        command = command.replace("%s", word, 1)
    return " ".join([command, *words[count:]]).strip()


def _hide(key: str, value: str) -> str:
    """``<hidden>`` for likely secrets, as IPython's ``%env`` listing does."""
    return "<hidden>" if any(s in key.lower() for s in ("key", "token", "secret")) else value


def env(arg: str = "") -> None:
    """``%env``: list all (secrets hidden), ``%env K`` print one, ``%env K=V``/``K V`` set."""
    arg = expand(arg, depth=2)
    if not arg.strip():
        print({k: _hide(k, v) for k, v in os.environ.items()})
        return
    bits = arg.split("=" if "=" in arg else " ", 1)
    if len(bits) == 1:
        key = arg.strip()
        if key not in os.environ:
            raise KeyError(f"Environment does not have key: {key}")
        print(os.environ[key])
        return
    key, value = bits[0].strip(), bits[1].strip()
    if re.search(r"\s", key):
        raise ValueError(f"refusing to set env var with whitespace: {key!r}")
    os.environ[key] = value
    print(f"env: {key}={value}")


def writefile(line: str, body: str) -> None:
    """``%%writefile [-a|--append] FILE``: write (or append) ``body``, report like IPython."""
    words = shlex.split(expand(line, depth=2))
    append = any(w in ("-a", "--append") for w in words)
    names = [w for w in words if w not in ("-a", "--append")]
    if len(names) != 1:
        raise ValueError(f"%%writefile needs one file name, got {line!r}")
    filename = os.path.expanduser(names[0])
    if not os.path.exists(filename):
        print(f"Writing {filename}")
    else:
        print(f"{'Appending to' if append else 'Overwriting'} {filename}")
    with open(filename, "a" if append else "w", encoding="utf-8") as f:
        f.write(body)


class ScriptResult:
    """What a ``%%bash``-style cell leaves behind: ``out``/``err`` (text, or the live streams of
    a ``--bg`` script) and ``proc`` (the Popen), as IPython binds ``--out``/``--err``/``--proc``."""

    def __init__(self, proc: subprocess.Popen[bytes], out: Any = None, err: Any = None) -> None:
        self.proc = proc
        self.out = out
        self.err = err


_bg_processes: list[subprocess.Popen[bytes]] = []


def _text_stream(stream: IO[bytes] | None) -> IO[str] | None:
    return io.TextIOWrapper(stream, errors="replace") if stream is not None else None


def run_script(
    program: str,
    body: str,
    args: str = "",
    *,
    bg: bool = False,
    out: bool = False,
    err: bool = False,
    raise_error: bool = True,
) -> ScriptResult:
    """``%%bash``, ``%%sh``, ``%%script PROG``...: run PROG with ``body`` on stdin, as IPython.

    stdout and stderr stream to ours, unless ``out``/``err`` keep them (as text; as streams for
    a ``bg`` script). ``bg``: start it and go on (``%killbgscripts`` or the end of the job stops
    it). A non-zero status raises CalledProcessError unless ``raise_error`` is false.
    """
    argv = [program, *shlex.split(expand(args, depth=2))]
    sys.stdout.flush()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(body.encode())
        proc.stdin.close()
    except BrokenPipeError:
        pass
    if bg:
        _bg_processes.append(proc)
        pumps = [(proc.stdout, sys.stdout, out), (proc.stderr, sys.stderr, err)]
        for src, dst, keep in pumps:
            if not keep:
                threading.Thread(target=_pump, args=(src, dst), daemon=True).start()
        print(f"Starting job # {len(_bg_processes) - 1} in a separate thread.", flush=True)
        return ScriptResult(
            proc,
            _text_stream(proc.stdout) if out else None,
            _text_stream(proc.stderr) if err else None,
        )
    kept: dict[str, list[bytes]] = {"out": [], "err": []}

    def collect(src: IO[bytes], key: str) -> None:
        kept[key] = list(iter(src.readline, b""))

    threads = [
        threading.Thread(target=collect, args=(proc.stdout, "out"), daemon=True)
        if out
        else threading.Thread(target=_pump, args=(proc.stdout, sys.stdout), daemon=True),
        threading.Thread(target=collect, args=(proc.stderr, "err"), daemon=True)
        if err
        else threading.Thread(target=_pump, args=(proc.stderr, sys.stderr), daemon=True),
    ]
    for t in threads:
        t.start()
    status = proc.wait()
    for t in threads:
        t.join()
    result = ScriptResult(
        proc,
        b"".join(kept["out"]).decode(errors="replace") if out else None,
        b"".join(kept["err"]).decode(errors="replace") if err else None,
    )
    if status != 0 and raise_error:
        raise subprocess.CalledProcessError(status, argv)
    return result


def kill_bg_scripts() -> None:
    """``%killbgscripts``: stop every ``%%bash --bg`` script (SIGINT, SIGTERM, then SIGKILL)."""
    import signal

    live = [p for p in _bg_processes if p.poll() is None]
    for sig, wait in ((signal.SIGINT, 0.1), (signal.SIGTERM, 0.1), (signal.SIGKILL, 1.0)):
        for proc in live:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.send_signal(sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(p.poll() is None for p in live):
            time.sleep(0.02)
    for proc in live:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
    _bg_processes.clear()
    print("All background processes were killed.", flush=True)


def _kill_at_exit() -> None:
    if any(p.poll() is None for p in _bg_processes):
        kill_bg_scripts()


atexit.register(_kill_at_exit)


class CapturedIO:
    """What ``%%capture NAME`` binds: ``stdout``, ``stderr``, ``outputs`` and ``show()``."""

    def __init__(self) -> None:
        self._stdout = io.StringIO()
        self._stderr = io.StringIO()
        self.outputs: list[object] = []
        self._saved: tuple[Any, Any] | None = None

    @property
    def stdout(self) -> str:
        """What the cell printed."""
        return self._stdout.getvalue()

    @property
    def stderr(self) -> str:
        """What the cell wrote to stderr."""
        return self._stderr.getvalue()

    def show(self) -> None:
        """Write what was captured, as IPython's ``CapturedIO.show()``."""
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)
        for obj in self.outputs:
            display(obj)
        sys.stdout.flush()

    __call__ = show

    def __str__(self) -> str:
        return self.stdout


_captures: list[tuple[CapturedIO, bool]] = []


def capture_start(stdout: bool = True, stderr: bool = True, display: bool = True) -> CapturedIO:
    """Start ``%%capture``: the cell's output goes into the returned object, not the log."""
    cap = CapturedIO()
    sys.stdout.flush()
    sys.stderr.flush()
    cap._saved = (sys.stdout, sys.stderr)
    if stdout:
        sys.stdout = cap._stdout
    if stderr:
        sys.stderr = cap._stderr
    _captures.append((cap, display))
    return cap


def capture_end(cap: CapturedIO) -> None:
    """End ``%%capture``: output goes to the log again."""
    if cap._saved is not None:
        sys.stdout, sys.stderr = cap._saved
        cap._saved = None
    _captures[:] = [(c, d) for c, d in _captures if c is not cap]


def get_ipython() -> None:
    """There is no IPython in a job: ``get_ipython()`` returns None, as in plain ``python``."""
    return None


_timings: list[tuple[float, float, float]] = []


def time_start() -> tuple[float, float, float]:
    """Start a ``%time``/``%%time`` measurement: (wall, user CPU, system CPU) now, kept here
    for :func:`time_end` (the notebook's namespace holds no name of ours)."""
    t = os.times()
    _timings.append(start := (time.time(), t.user, t.system))
    return start


def _format_time(seconds: float, precision: int = 3) -> str:
    """A timespan as IPython prints it: ``1.23 s``, ``45.6 ms``, ``2min 3s``."""
    if seconds >= 60.0:
        parts, left = [], seconds
        for suffix, length in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
            value = int(left / length)
            if value > 0:
                left %= length
                parts.append(f"{value}{suffix}")
            if left < 1:
                break
        return " ".join(parts)
    units = ["s", "ms", "us", "ns"]
    try:
        "\u03bc".encode(getattr(sys.stdout, "encoding", None) or "ascii")
        units[2] = "\u03bcs"
    except (UnicodeEncodeError, LookupError):
        pass
    order = 3 if seconds <= 0 else min(-(math.floor(math.log10(seconds)) // 3), 3)
    return f"{seconds * 1000**order:.{precision}g} {units[order]}"


def time_end(label: str = "") -> None:
    """Finish ``%time``: print ``CPU times: user ..., sys: ..., total: ...`` and ``Wall time``,
    from the last :func:`time_start`.

    ``label`` names what was timed (e.g. ``%%time``); like IPython, the output does not show it.
    """
    start = _timings.pop() if _timings else time_start()
    wall = time.time() - start[0]
    t = os.times()
    user, system_ = t.user - start[1], t.system - start[2]
    print(
        f"CPU times: user {_format_time(user)}, sys: {_format_time(system_)}, "
        f"total: {_format_time(user + system_)}"
    )
    print(f"Wall time: {_format_time(wall)}")


def run_path(line: str) -> None:
    """``%run [-i] script.py args``: run like ``python script.py args``, then (as IPython) copy
    the script's globals into the caller's (with ``-i``: run in the caller's globals)."""
    words = shlex.split(expand(line, depth=2))
    caller = sys._getframe(1).f_globals
    inplace = bool(words) and words[0] == "-i"
    words = words[1:] if inplace else words
    if not words:
        raise ValueError("%run needs a file name")
    filename = os.path.expanduser(words[0])
    if not os.path.exists(filename) and os.path.exists(filename + ".py"):
        filename += ".py"
    saved = sys.argv
    sys.argv = [filename, *(os.path.expanduser(w) for w in words[1:])]
    try:
        if filename.endswith(".ipynb"):  # IPython runs a notebook's code cells
            code = compile(notebook_code(filename), filename, "exec")
            namespace = caller if inplace else {"__name__": "__main__", "__file__": filename}
            exec(code, namespace)
            if not inplace:
                caller.update({k: v for k, v in namespace.items() if not k.startswith("__")})
            return
        if inplace:
            with open(filename, encoding="utf-8") as f:
                code = compile(f.read(), filename, "exec")
            exec(code, caller)
            return
        result = runpy.run_path(filename, run_name="__main__")
    finally:
        sys.argv = saved
    caller.update({k: v for k, v in result.items() if not k.startswith("__")})


def notebook_code(path: str) -> str:
    """The code cells of a notebook file as one script, as ``%run other.ipynb`` runs them.
    IPython-only lines (``%magic``, ``!shell``) and ``%%`` cells cannot run without IPython:
    each is left out, and said on stderr. Line numbers are kept (a left-out line is ``pass``)."""
    import json

    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    out: list[str] = []
    for number, cell in enumerate(nb.get("cells") or [], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        if text.lstrip().startswith("%%"):
            print(f"[tfc_runtime] warning: %run {path}: cell {number} is a %% magic cell, "
                  "left out", file=sys.stderr)  # fmt: skip
            continue
        for line in text.split("\n"):
            stripped = line.lstrip()
            if stripped.startswith(("%", "!")):
                indent = line[: len(line) - len(stripped)]
                print(f"[tfc_runtime] warning: %run {path}: cell {number}: {stripped[:60]!r} "
                      "needs IPython, left out", file=sys.stderr)  # fmt: skip
                line = f"{indent}pass"
            out.append(line)
        out.append("")
    return "\n".join(out)


def display(*objs: object, **options: Any) -> Any:
    """Notebook ``display``: inside a ``%%capture`` that keeps displays, the objects go into
    its ``outputs``; in the run cell, their rich forms go back to the notebook
    (:mod:`tfc_runtime.runcell`); elsewhere each is printed (``str`` as is, anything else by
    repr)."""
    for cap, keep in reversed(_captures):
        if keep:
            cap.outputs.extend(objs)
            return
    from tfc_runtime import runcell

    if runcell.in_the_cell():
        return runcell.show(*objs, **options)
    for obj in objs:
        print(obj if isinstance(obj, str) else repr(obj))
