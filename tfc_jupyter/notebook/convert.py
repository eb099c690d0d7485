"""Notebook cells -> one plain Python script that runs under ``python`` (no IPython).

IPython's own input transformers turn magics and shell lines into ``get_ipython()`` calls; this
module then rewrites every such call, by its position in the syntax tree, into plain Python:

* ``%pip install`` / ``!pip install`` become the job's requirements and leave the script;
* magics that mean something in a job (``!cmd``, ``%env``, ``%cd``, ``%%writefile``, ``%%time``,
  ``%%bash`` ...) call a small helper in ``tfc_runtime.nb``;
* display-only magics (``%matplotlib``, ``%load_ext``, ``%tensorboard``, ``%config`` ...) are
  dropped;
* anything else is refused with the cell, the line and the fix.

Every script line keeps its notebook location (a source map), so the job reports errors as
"cell 7, line 3". See :data:`RULES` for the table shown in ``%%tfc_run?`` and the README.
"""

from __future__ import annotations

import ast
import keyword
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConversionError, ConversionErrors, RequirementsError
from . import syntax
from .requirements import Requirements, parse_pip_args, shell_pip_args

SKIP_TAGS = frozenset({"tfc-skip", "tfc-local-only"})
Location = tuple[int, int] | None

_DROP_LINE = frozenset(
    "matplotlib load_ext reload_ext unload_ext tensorboard config autoreload aimport pinfo pinfo2 "
    "pdef pdoc psource pfile precision pprint xmode pdb who whos lsmagic magic history "
    "hist colors autocall automagic doctest_mode page quickref debug tb notebook qtconsole "
    "connect_info autosave gui alias_magic pycat clear less more".split()
)
_SHELL_ALIASES = frozenset(
    ["ls", "cat", "cp", "mv", "rm", "mkdir", "rmdir", "ll", "lf", "lk", "lx", "ldir"]
)
_TIMED = frozenset({"time", "timeit", "prun"})
_DROP_CELL = frozenset(["html", "HTML", "markdown", "javascript", "js", "latex", "svg"])
_SCRIPT_CELL = {
    "bash": "bash",
    "sh": "sh",
    "python": "python3",
    "python3": "python3",
    "perl": "perl",
    "ruby": "ruby",
}
_NO_OP = {
    "tensorflow_version": "%tensorflow_version is Colab's TensorFlow picker: a no-op in a job, "
    "which runs the TensorFlow of its image (or of this kernel, locally)",
    **dict.fromkeys(
        ("logstart", "logstop", "logon", "logoff", "logstate"),
        "IPython's input log is the kernel's: left out of the job (its own log is its output)",
    ),
    "save": "%save writes the kernel's input history to a file: left out of the job",
}
_AUTOMAGIC_NAMES = (
    _DROP_LINE
    | _SHELL_ALIASES
    | _TIMED
    | set(_NO_OP)
    | {"pip", "env", "cd", "pushd", "popd", "dirs", "dhist", "pwd", "run", "system", "sx"}
    | {"pylab", "killbgscripts", "reset", "reset_selective", "bookmark", "alias", "unalias"}
    | {"who_ls"}
)
_AUTOMAGIC = re.compile(
    r"^(?P<indent>\s*)(?P<name>" + "|".join(sorted(_AUTOMAGIC_NAMES)) + r")(?P<rest>(?:\s.*)?)$"
)
# After the name: an assignment, annotation or operator means Python, not a magic.
_NOT_MAGIC_REST = re.compile(r"^\s*(?:[-+*/%&|^@<>!]?=(?!=)|:|,|\*\*=|//=|>>=|<<=|==)")
_SHADOWING = syntax.python_builtins() | frozenset(keyword.kwlist)
_TIMEIT_OPTS = re.compile(r"^\s*(?:-[nr]\s*\d+\s+|-[tcqo]\s+|-p\s*\d+\s+)*")
_SCRIPT_HINT = re.compile(
    r",? or tag the cell tfc-skip|tag the cell tfc-skip to leave it out of the job, or "
)
HINT_SKIP = "tag the cell tfc-skip to leave it out of the job, or rewrite the line in Python"

RULES: list[tuple[str, str]] = [
    ("%pip install / !pip install (and pip3, python -m pip)", "become the job's requirements"),
    ("pip install --no-deps X; --use-deprecated=..., --use-feature=...", "kept for the image"),
    ("!cmd, x = !cmd, %system, %sx, %ls %cp %mv %rm %mkdir %cat", "run in the job (bash)"),
    ("automagic: ls -la, cd data, pip install x on a line of their own", "the magic, as IPython"),
    ("%env, %cd, %run, %pwd, %pylab", "translated (tfc_runtime.nb)"),
    ("%time, %timeit, %prun and %%time, %%timeit, %%prun", "run once, timed"),
    ("%%writefile, %%bash, %%sh, %%script, %%python3, %%perl, %%ruby", "run in the job"),
    ("%%bash --bg/--out V/--err V/--proc V/--no-raise-error, %killbgscripts", "as IPython"),
    ("%%capture [NAME]", "NAME holds .stdout, .stderr, .outputs, .show()"),
    ("%tensorflow_version (Colab)", "a no-op, with a note"),
    (
        "%matplotlib, %load_ext, %tensorboard, %config, %autoreload, obj?, %who ...",
        "dropped (display only)",
    ),
    ("%%html, %%markdown, %%javascript, %%latex, %%svg", "dropped (display only)"),
    ("%pip list/show/freeze/uninstall", "dropped"),
    ("anything else (%store, %conda, %sql, %%bigquery ...)", "refused: tag the cell tfc-skip"),
    ("cells tagged tfc-skip or tfc-local-only", "left out of the job"),
]


@dataclass(frozen=True)
class Cell:
    """A code cell to convert: its 1-based position in the notebook, source and tags."""

    index: int
    source: str
    tags: tuple[str, ...] = ()
    label: str = "cell"  # "cell", "In" (kernel history), or a script's file name

    @property
    def place(self) -> str:
        """``cell 3``, ``In 3``, or a script's name (``train.py``: the file is one cell)."""
        return self.label if self.label.endswith((".py", ".pyw")) else f"{self.label} {self.index}"


@dataclass
class Script:
    """The converted job: script text, its source map, requirements and what was changed."""

    text: str
    source_map: list[Location]
    requirements: Requirements
    notes: list[str] = field(default_factory=list)
    cells: list[int] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)

    def source_map_json(
        self, notebook: str, *, script: bool = False, run_cell: int | None = None
    ) -> dict[str, object]:
        """The source map file ``tfc_runtime`` reads (see ``tfc_runtime.sourcemap``);
        ``script``: the job is a ``.py`` file (places read ``train.py, line 3``); ``run_cell``:
        the ``%%tfc_run`` cell, whose names and outputs go back (``tfc_runtime.runcell``)."""
        data: dict[str, object] = {
            "version": 1,
            "notebook": notebook,
            "lines": [list(loc) if loc else None for loc in self.source_map],
        }
        if script:
            data["script"] = True
        if run_cell is not None and not script:
            data["run_cell"] = run_cell
        return data

    def locate(self, script_line: int) -> Location:
        """The (cell, line) of a 1-based script line, or None for generated lines."""
        if 1 <= script_line <= len(self.source_map):
            return self.source_map[script_line - 1]
        return None


class _Out:
    """Script lines with their notebook locations."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.where: list[Location] = []

    def add(self, text: str, where: Location) -> None:
        for line in text.split("\n"):
            self.lines.append(line)
            self.where.append(where)


def _lit(text: str) -> str:
    return repr(text)


def _join_continuations(lines: list[str]) -> list[str]:
    """Join backslash-continued magic/shell lines as IPython does, keeping the line count."""
    out = list(lines)
    i = 0
    while i < len(out):
        stripped = out[i].lstrip()
        is_escape = stripped.startswith(("!", "%")) or re.match(r"^\w+\s*=\s*[!%]", stripped)
        if is_escape and out[i].endswith("\\"):
            j = i
            while out[i].endswith("\\") and j + 1 < len(out):
                out[i] = out[i][:-1] + " " + out[j + 1].strip()
                out[j + 1] = ""
                j += 1
            i = j + 1
        else:
            i += 1
    return out


class _CellConverter:
    def __init__(
        self,
        cell: Cell,
        base_dir: Path,
        reqs: Requirements,
        notes: list[str],
        bound: frozenset[str] = _SHADOWING,
        future: list[tuple[str, list[Location]]] | None = None,
        aliases: dict[str, str] | None = None,
    ) -> None:
        self.cell = cell
        self.aliases = aliases if aliases is not None else {}  # %alias NAME CMD, cells above
        self.base_dir = base_dir
        self.reqs = reqs
        self.notes = notes
        self.bound = bound  # names the notebook binds, and Python's own (made once, not a cell)
        self.future = future  # the cell's `from __future__` lines, for the script's top

    def error(self, message: str, line: int, hint: str = HINT_SKIP) -> ConversionError:
        err = ConversionError(message, hint, cell=self.cell.index, line=line)
        if self.cell.label != "cell":
            err.message = err.message.replace(f"cell {self.cell.index}", self.cell.place, 1)
        if self.cell.place == self.cell.label:  # a script: no cell to tag
            err.hint = _SCRIPT_HINT.sub("", err.hint).strip(" ,") or "rewrite the line in Python"
        return err

    def note(self, line: int, text: str) -> None:
        self.notes.append(f"{self.cell.place}, line {line}: {text}")

    # ------------------------------------------------------------------ cells
    def convert(self, out: _Out, source: str, first_line: int = 1) -> None:
        lines = source.split("\n")
        k = next((i for i, line in enumerate(lines) if line.strip()), None)
        if k is None:
            return
        if lines[k].startswith("%%"):
            self._cell_magic(out, lines, k, first_line)
        else:
            self._code(out, "\n".join(lines), first_line)

    def _cell_magic(self, out: _Out, lines: list[str], k: int, first_line: int) -> None:
        head = lines[k][2:]
        name, _, args = head.partition(" ")
        name = name.strip()
        body = "\n".join(lines[k + 1 :])
        at = (self.cell.index, first_line + k)
        line_no = first_line + k
        if name == "tfc_run":
            self.convert(out, body, line_no + 1)
        elif name in _TIMED:
            out.add("_tfc.time_start()", at)
            self.convert(out, body, line_no + 1)
            out.add(f"_tfc.time_end({_lit(f'%%{name}')})", at)
            if name != "time":
                self.note(line_no, f"%%{name} runs its body once, timed")
        elif name == "capture":
            target, kwargs = self._capture_args(args, line_no)
            out.add(f"{target} = _tfc.capture_start({kwargs})", at)
            self.convert(out, body, line_no + 1)
            out.add(f"_tfc.capture_end({target})", at)
        elif name in ("writefile", "file"):
            text = body if body.endswith("\n") or not body else body + "\n"
            out.add(f"_tfc.writefile({_lit(args.strip())}, {_lit(text)})", at)
        elif name == "script" or name in _SCRIPT_CELL:
            out.add(self._script_cell(name, args, body, line_no), at)
        elif name in _DROP_CELL:
            self.note(line_no, f"%%{name} dropped (display only)")
        elif name in ("sx", "!"):  # the body's output, as a list of lines (the cell's value)
            out.add(f"_tfc.getoutput({_lit(body)})", at)
        else:
            raise self.error(f"the cell magic %%{name} cannot run in a job", line_no)

    def _capture_args(self, args: str, line: int) -> tuple[str, str]:
        """``%%capture [--no-stdout] [--no-stderr] [--no-display] [NAME]`` -> (target, kwargs)."""
        names: list[str] = []
        keep = {"stdout": True, "stderr": True, "display": True}
        for word in args.split():
            if word in ("--no-stdout", "--no-stderr", "--no-display"):
                keep[word[5:]] = False
            elif word.isidentifier() and not keyword.iskeyword(word) and not names:
                names.append(word)
            else:
                raise self.error(
                    f"%%capture {args.strip()!r}: {word!r} is not a variable name",
                    line,
                    "write %%capture NAME with a Python identifier, or %%capture alone",
                )
        kwargs = ", ".join(f"{k}=False" for k, v in keep.items() if not v)
        return (names[0] if names else "_tfc_captured"), kwargs

    def _script_cell(self, name: str, args: str, body: str, line: int) -> str:
        """``%%bash [--bg] [--out V] [--err V] [--proc V] [--no-raise-error] [args]`` (and
        ``%%script PROG ...``) with IPython's meaning of the flags, as one script line."""
        try:
            words = shlex.split(args)
        except ValueError as exc:
            raise self.error(f"cannot read %%{name} {args.strip()!r}: {exc}", line) from None
        if name == "script":
            if not words:
                raise self.error("%%script needs a program", line, "write %%script bash")
            program, words = words[0], words[1:]
        else:
            program = _SCRIPT_CELL[name]
        flags: dict[str, str | bool] = {}
        rest: list[str] = []
        i = 0
        while i < len(words):
            word = words[i]
            key, eq, inline = word.partition("=")
            if key in ("--out", "--err", "--proc"):
                value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
                if not value.isidentifier() or keyword.iskeyword(value):
                    raise self.error(
                        f"%%{name} {key} needs a variable name, got {value!r}",
                        line,
                        f"write {key} NAME with a Python identifier",
                    )
                flags[key[2:]] = value
                i += 1 if eq else 2
            elif word in ("--bg", "--no-raise-error"):
                flags[word[2:]] = True
                i += 1
            else:
                rest.append(word)
                i += 1
        call = [_lit(program), _lit(body), _lit(shlex.join(rest))]
        if flags.get("bg"):
            call.append("bg=True")
        call += [f"{k}=True" for k in ("out", "err") if k in flags]
        if flags.get("no-raise-error"):
            call.append("raise_error=False")
        text = f"_tfc_script = _tfc.run_script({', '.join(call)})"
        for key in ("out", "err", "proc"):
            if key in flags:
                text += f"; {flags[key]} = _tfc_script.{key}"
        return text

    def _automagic(self, lines: list[str]) -> list[str]:
        """Lines that IPython runs as a magic through automagic (``ls -la``, ``cd data``, ``pip
        install x`` on a line of its own), written with their ``%``; names the notebook binds
        shadow the magic, as they do in IPython."""
        out = []
        for line in lines:
            m = _AUTOMAGIC.match(line)
            if (
                m
                and m.group("name") not in self.bound
                and not _NOT_MAGIC_REST.match(m.group("rest"))
            ):
                line = f"{m.group('indent')}%{m.group('name')}{m.group('rest')}"
            out.append(line)
        return out

    # ------------------------------------------------------------------ code
    def _code(self, out: _Out, code: str, first_line: int) -> None:
        lines = _join_continuations(code.split("\n"))
        # IPython drops leading blank lines; drop them here so script lines keep their place
        skip = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
        if skip == len(lines):
            return
        lines, first_line = lines[skip:], first_line + skip
        try:
            transformed = _transform("\n".join(self._automagic(lines)))
        except SyntaxError as exc:
            raise self.error(
                f"cannot read this cell ({exc.msg})",
                first_line + (exc.lineno or 1) - 1,
                "fix the syntax",
            ) from None
        t_lines = transformed.split("\n")
        if t_lines and t_lines[-1] == "" and len(t_lines) == len(lines) + 1:
            t_lines.pop()
        try:
            tree = ast.parse("\n".join(t_lines))
        except SyntaxError as exc:
            raise self.error(
                f"invalid Python syntax: {exc.msg}",
                first_line + (exc.lineno or 1) - 1,
                "fix the syntax, or tag the cell tfc-skip",
            ) from None
        new_lines = self._rewrite(tree, t_lines, first_line)
        same = len(new_lines) == len(lines)

        def at(i: int) -> int:
            return first_line + (i if same else min(i, len(lines) - 1))

        new_lines = self._hoist_future(tree, new_lines, at)
        for i, text in enumerate(new_lines):
            out.add(text, (self.cell.index, at(i)))

    def _hoist_future(
        self, tree: ast.Module, lines: list[str], at: Callable[[int], int]
    ) -> list[str]:
        """The ``from __future__`` imports that open the cell (legal in Jupyter, which compiles
        each cell alone) go to the script's top with their cell and line (a future import
        anywhere else is a SyntaxError in Jupyter too, and stays one); here their lines become
        comments, so every line below keeps its place."""
        if self.future is None:
            return lines
        nodes = list(tree.body)
        first = nodes[0] if nodes else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            nodes = nodes[isinstance(first.value.value, str) :]  # a docstring may come first
        raw = [line.encode("utf-8") for line in lines]
        for node in nodes:
            if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
                break
            l0, l1 = node.lineno - 1, (node.end_lineno or node.lineno) - 1
            c0, c1 = node.col_offset, node.end_col_offset or 0
            span = b"\n".join(raw[l0 : l1 + 1])
            seg = span[c0 : len(span) - len(raw[l1]) + c1].split(b"\n")
            where: list[Location] = [(self.cell.index, at(l0 + i)) for i in range(len(seg))]
            self.future.append((b"\n".join(seg).decode("utf-8"), where))
            before = raw[l0][:c0].rstrip()
            before = before[:-1].rstrip() if before.endswith(b";") else before
            after = raw[l1][c1:].lstrip()
            after = after[1:].lstrip() if after.startswith(b";") else after
            moved = b"# (moved to the top of the script) " + seg[0]
            if l0 == l1:
                if before and after:
                    sep = b"  " if after.startswith(b"#") else b"; "
                    raw[l0] = before + sep + after
                else:
                    raw[l0] = before or after or moved
            else:
                raw[l0 : l1 + 1] = [before or moved, *[b"#"] * (l1 - l0 - 1), after or b"#"]
        return [b.decode("utf-8") for b in raw]

    def _rewrite(self, tree: ast.Module, lines: list[str], first_line: int) -> list[str]:
        raw = [line.encode("utf-8") for line in lines]
        edits: list[tuple[int, int, int, int, str]] = []
        handled: set[int] = set()
        for node in ast.walk(tree):
            if id(node) in handled:
                continue
            if isinstance(node, ast.Expr) and _ipython_call(node.value):
                text = self._translate(node.value, first_line, statement=True)  # type: ignore[arg-type]
                handled.update(id(n) for n in ast.walk(node))
                edits.append(_span(node, text))
            elif isinstance(node, ast.Call) and _ipython_call(node):
                text = self._translate(node, first_line, statement=False)
                handled.update(id(n) for n in ast.walk(node))
                edits.append(_span(node, text))
        for l0, c0, l1, c1, text in sorted(edits, reverse=True):
            pad = "\n" * (l1 - l0)
            merged = raw[l0][:c0] + (text + pad).encode("utf-8") + raw[l1][c1:]
            raw[l0 : l1 + 1] = merged.split(b"\n")
        return [b.decode("utf-8") for b in raw]

    def _translate(self, call: ast.Call, first_line: int, *, statement: bool) -> str:
        assert isinstance(call.func, ast.Attribute)
        method = call.func.attr
        line = first_line + call.lineno - 1
        args = call.args
        consts = [a.value if isinstance(a, ast.Constant) else None for a in args]
        if method in ("system", "getoutput") and len(args) == 1:
            cmd = consts[0]
            if isinstance(cmd, str):
                pip = self._shell_pip(cmd, line)
                if pip is not None:
                    return pip if statement else "[]"
            helper = "_tfc.system" if method == "system" else "_tfc.getoutput"
            return f"{helper}({ast.unparse(args[0])})"
        if (
            method == "run_cell_magic"
            and statement
            and len(args) == 3
            and all(isinstance(c, str) for c in consts)
        ):  # kernel history holds cells as IPython transformed them
            name, magic_args, body = (str(c) for c in consts)
            sub = _Out()
            self._cell_magic(sub, [f"%%{name} {magic_args}", *body.split("\n")], 0, line)
            return "\n".join(sub.lines) or "pass"
        if (
            method == "run_line_magic"
            and len(args) == 2
            and all(isinstance(c, str) for c in consts)
        ):
            return self._line_magic(str(consts[0]), str(consts[1]), line, statement)
        raise self.error(
            f"get_ipython().{method}(...) needs IPython, which the job does not have", line
        )

    def _shell_pip(self, cmd: str, line: int) -> str | None:
        try:
            pip_args = shell_pip_args(cmd)
            if pip_args is None:
                return None
            return self._pip(pip_args, line)
        except RequirementsError as exc:
            raise self.error(exc.message, line, exc.hint) from None

    def _pip(self, args: str, line: int) -> str:
        try:
            command = parse_pip_args(args, self.base_dir, self.reqs, f" ({self.cell.place})")
        except RequirementsError as exc:
            raise self.error(exc.message, line, exc.hint) from None
        if command != "install":
            self.note(line, f"pip {command} dropped")
        return "pass"

    def _line_magic(self, name: str, arg: str, line: int, statement: bool) -> str:
        value = "None"
        if name == "pip":
            return self._pip(arg, line) if statement else value
        if name in ("conda", "mamba"):
            raise self.error(
                f"%{name} cannot install into the job's environment",
                line,
                "use %pip install (the job installs pip requirements)",
            )
        if name == "env":
            return f"_tfc.env({_lit(arg)})"
        if name == "cd":
            return f"_tfc.cd({_lit(arg)})"
        if name in ("pushd", "popd", "dirs", "dhist", "bookmark"):
            return f"_tfc.{name}({_lit(arg)})"
        if name == "who_ls":
            return f"_tfc.who_ls(globals(), {_lit(arg)})"
        if name in ("reset", "reset_selective"):
            if not re.search(r"(^|\s)-f(\s|$)", arg):
                self.note(line, f"%{name} without -f asks first in Jupyter; a job cannot answer: "
                          "nothing is deleted (write -f)")  # fmt: skip
                return "pass" if statement else value
            return f"_tfc.{name}(globals(), {_lit(arg)})"
        if name == "alias":
            alias, _, command = arg.strip().partition(" ")
            if alias and command.strip():
                self.aliases[alias] = command.strip()
            return f"_tfc.alias({_lit(arg)})"
        if name == "unalias":
            self.aliases.pop(arg.strip(), None)
            return f"_tfc.unalias({_lit(arg)})"
        if name in self.aliases:
            return f"_tfc.system(_tfc.alias_command({_lit(name)}, {_lit(arg)}))"
        if name == "pwd":
            return "__import__('os').getcwd()"
        if name == "run":
            return f"_tfc.run_path({_lit(arg)})"
        if name in ("system", "sx"):
            helper = "_tfc.system" if statement and name == "system" else "_tfc.getoutput"
            return f"{helper}({_lit(arg)})"
        if name in _SHELL_ALIASES:
            command = {
                "ll": "ls -F -l",
                "lf": "ls -F -l",
                "lk": "ls -F -l",
                "lx": "ls -F -l",
                "ldir": "ls -F -d",
            }.get(name, name)
            return f"_tfc.system({_lit(f'{command} {arg}'.strip())})"
        if name == "killbgscripts":
            return "_tfc.kill_bg_scripts()" if statement else value
        if name in _NO_OP:
            self.note(line, _NO_OP[name])
            return "pass" if statement else value
        if name == "pylab":
            self.note(line, "%pylab became `from pylab import *`")
            return "from pylab import *" if statement else value
        if name in _TIMED:
            return self._timed(name, arg, line, statement)
        if name in _DROP_LINE or name.startswith("tfc_"):
            self.note(line, f"%{name} dropped (display only)")
            return "pass" if statement else value
        raise self.error(f"the magic %{name} cannot run in a job", line)

    def _timed(self, name: str, arg: str, line: int, statement: bool) -> str:
        code = _TIMEIT_OPTS.sub("", arg) if name != "time" else arg
        if name != "time":
            self.note(line, f"%{name} runs its statement once, timed")
        if not statement:
            try:
                ast.parse(code, mode="eval")
            except SyntaxError:
                raise self.error(f"%{name} {code!r} is not an expression", line) from None
            return f"({code})"
        try:
            body = ast.parse(code).body
        except SyntaxError as exc:
            raise self.error(f"%{name}: {exc.msg}", line, "fix the statement") from None
        simple = len(body) == 1 and not isinstance(
            body[0],
            ast.FunctionDef
            | ast.ClassDef
            | ast.If
            | ast.For
            | ast.While
            | ast.With
            | ast.Try
            | ast.AsyncFunctionDef,
        )
        if not simple or "\n" in code.strip():
            raise self.error(
                f"%{name} with a compound statement", line, f"use %%{name} on a cell of its own"
            )
        return f"_tfc.time_start(); {code.strip()}; _tfc.time_end()"


_MANAGER: list[Any] = []
# What IPython's transformers act on: magics, shell lines, help, pasted prompts (>>> / In [1]:)
_PLAIN = re.compile(r"[%!?]|^\s*(?:>>>|\.\.\.|In \[\d*\]:)", re.M)


def _transform(code: str) -> str:
    """IPython's input transformation (one shared manager). Cells with no % ! ? and no
    indentation of the whole cell (IPython's ``leading_indent``) skip it."""
    if not _PLAIN.search(code) and not code[:1].isspace():
        return code if code.endswith("\n") else code + "\n"
    if not _MANAGER:
        from IPython.core.inputtransformer2 import TransformerManager

        _MANAGER.append(TransformerManager())
    return str(_MANAGER[0].transform_cell(code))


def _ipython_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "get_ipython"
    )


def _span(node: ast.stmt | ast.expr, text: str) -> tuple[int, int, int, int, str]:
    return (
        node.lineno - 1,
        node.col_offset,
        (node.end_lineno or node.lineno) - 1,
        node.end_col_offset or 0,
        text,
    )


def _names(nodes: Iterable[ast.AST]) -> tuple[set[str], set[str], set[str]]:
    """The names ``nodes`` (a tree's, walked) load, bind and import."""
    loaded: set[str] = set()
    bound: set[str] = set()
    imports: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imports.add(alias.name.split(".")[0])
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.module and node.level == 0:
                imports.add(node.module.split(".")[0])
            bound.update(alias.asname or alias.name for alias in node.names)
    return loaded, bound, imports


def convert(
    cells: Sequence[Cell],
    *,
    base_dir: Path | str = ".",
    notebook: str = "notebook",
    extra_requirements: Requirements | None = None,
) -> Script:
    """Convert code cells (in job order) into a plain Python script.

    Args:
        cells: the job's code cells, in notebook order; tagged cells are skipped here too.
        base_dir: folder that relative requirements files (``-r x.txt``) are read from.
        notebook: the notebook's name, for the header and the source map.
        extra_requirements: requirements merged first (``--requirements FILE``).

    Raises:
        ConversionError: a cell that cannot become plain Python, naming cell, line and fix.
    """
    reqs = extra_requirements if extra_requirements is not None else Requirements()
    notes: list[str] = []
    body = _Out()
    used: list[int] = []
    errors: list[ConversionError] = []
    job_cells = [c for c in cells if not SKIP_TAGS & set(c.tags) and c.source.strip()]
    bound = _bound_names(job_cells) | _SHADOWING
    future: list[tuple[str, list[Location]]] = []
    aliases: dict[str, str] = {}
    for cell in job_cells:
        used.append(cell.index)
        body.add(f"# %% {cell.place}", None)
        try:
            _refuse_nul(cell)
            converter = _CellConverter(cell, Path(base_dir), reqs, notes, bound, future, aliases)
            converter.convert(body, cell.source)
        except ConversionError as exc:  # go on: every refusal is reported in one run
            errors.append(exc)
        body.add("", None)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConversionErrors(errors)
    top = _Out()
    for statement, places in future:
        for line, where in zip(statement.split("\n"), places, strict=True):
            top.add(line, where)
    notes[:0] = _future_notes(future, job_cells)
    text = "\n".join(top.lines + body.lines)
    nodes = _check_compiles(text, top.where + body.where, cells[0].label if cells else "cell").nodes
    loaded, names, imports = _names(nodes)
    leftover = _leftover_ipython(nodes, body.where) if "get_ipython" not in names else None
    if leftover is not None:
        raise leftover
    head = _Out()
    head.add(f"# Generated by tfc_jupyter from {_comment(notebook)}: edit the notebook.", None)
    head.lines += top.lines  # a future import must come before any other statement
    head.where += top.where
    if "_tfc" in loaded:
        head.add("from tfc_runtime import nb as _tfc", None)
    if "display" in loaded and "display" not in names:
        head.add("from tfc_runtime.nb import display", None)
    if "get_ipython" in loaded and "get_ipython" not in names:
        head.add("from tfc_runtime.nb import get_ipython  # None: no IPython in a job", None)
    head.add("", None)
    return Script(
        text="\n".join(head.lines + body.lines).rstrip("\n") + "\n",
        source_map=head.where + body.where,
        requirements=reqs,
        notes=notes + [f"requirement {n}" for n in reqs.notes],
        cells=used,
        imports=imports,
    )


def _future_notes(future: list[tuple[str, list[Location]]], cells: Sequence[Cell]) -> list[str]:
    """A note for each ``from __future__`` import moved up past cells above it that it did
    not apply to: in Jupyter it applies from its cell on, in the job (one module) to every
    cell."""
    first = cells[0].index if cells else None
    places = {c.index: c.place for c in cells}
    seen: set[str] = set()
    notes = []
    for statement, (where, *_) in future:
        node = ast.parse(statement).body[0]
        assert isinstance(node, ast.ImportFrom)
        features = {alias.name for alias in node.names}
        if where is not None and where[0] != first and features - seen:
            notes.append(
                f"{places.get(where[0], f'cell {where[0]}')}, line {where[1]}: "
                f"{ast.unparse(node)} moved to the top of the script (one module): it "
                "applies to the cells above it too, where in Jupyter it applies from that cell on"
            )
        seen |= features
    return notes


def _refuse_nul(cell: Cell) -> None:
    """A NUL character in a cell: IPython refuses to run it ("source code string cannot
    contain null bytes"), so the job would not run it either; dropping it would run other code.
    """
    if "\x00" in cell.source:
        line = cell.source[: cell.source.index("\x00")].count("\n") + 1
        raise ConversionError(
            "holds a NUL character, which Python refuses to run",
            "delete it from the cell (a string can spell it '\\x00')",
            cell=cell.index,
            line=line,
        )


def _comment(text: str) -> str:
    """``text`` safe inside a one-line comment (no line breaks of any kind, no control
    characters: a file name can hold a terminal escape)."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split()) or "notebook"


def _leftover_ipython(nodes: Iterable[ast.AST], where: list[Location]) -> ConversionError | None:
    """An error for code that uses IPython's shell object (``get_ipython().events``...); None
    when ``get_ipython()`` is only called for its value (None in a job, as outside IPython)."""
    lines = [
        n.lineno
        for n in nodes
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Name)
        and n.value.func.id == "get_ipython"
    ]
    if not lines:
        return None
    loc = where[min(lines) - 1] if min(lines) <= len(where) else None
    message = "get_ipython().… uses IPython's shell, which the job does not have"
    if loc:
        return ConversionError(message, HINT_SKIP, cell=loc[0], line=loc[1])
    return ConversionError(message, HINT_SKIP)


def _bound_names(cells: Sequence[Cell]) -> frozenset[str]:
    """Names the notebook's cells bind (those that parse as Python): they shadow automagic."""
    bound: set[str] = set()
    for cell in cells:
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        bound |= _names(ast.walk(tree))[1]
    return frozenset(bound)


def _check_compiles(text: str, where: list[Location], label: str) -> syntax.Parsed:
    """The script's shared parse (:mod:`.syntax`), once it is known to compile."""
    try:
        shared = syntax.parsed(text)
        notebook = not label.endswith((".py", ".pyw"))  # IPython runs a cell's top-level await
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if notebook else 0
        compile(shared.tree, "<job script>", "exec", flags=flags)
    except SyntaxError as exc:
        loc = where[(exc.lineno or 1) - 1] if exc.lineno and exc.lineno <= len(where) else None
        script = label.endswith((".py", ".pyw"))
        hint = "fix the syntax" + ("" if script else ", or tag the cell tfc-skip")
        if "await" in (exc.msg or ""):
            hint = "wrap the asynchronous code in a function and call asyncio.run(...)"
        if loc:
            err = ConversionError(f"{exc.msg}", hint, cell=loc[0], line=loc[1])
            if script:
                err.message = err.message.replace(f"cell {loc[0]}", label, 1)
            raise err from None
        raise ConversionError(f"the script does not compile: {exc.msg}", hint) from None
    return shared
