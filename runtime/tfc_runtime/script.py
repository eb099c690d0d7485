"""The notebook's script, run as Python runs a script (``python script.py``), in a roomy frame.

CPython 3.11 keeps its frames on a stack of 16 KB chunks, and frees a chunk as soon as the frame
that opened it returns: code whose calls go up and down across a chunk's edge maps and unmaps
it again at every crossing. Importing TensorFlow does that, or not, by the depth it starts at:
run a few frames deeper than under plain ``python`` (as the runtime runs the notebook) it made
47,000 more page faults and took 2.7 s instead of 2.1 s. :func:`call_with_room` calls a function
from a frame that declares 512 KB of stack slots, so that the calls below it get a chunk of
1 MB to themselves (memory is only touched where used): the job's TensorFlow import makes fewer
page faults than under plain ``python`` and takes no longer, whatever the depth.
"""

from __future__ import annotations

import ast
import atexit
import inspect
import io
import sys
from collections.abc import Callable
from types import FunctionType, ModuleType
from typing import Any

ROOM_SLOTS = 1 << 16  # stack slots the frame of call_with_room declares (8 bytes each)


def run_script(
    script: str,
    transform: Callable[[ast.Module, str], ast.Module] | None = None,
    *,
    file: str | None = None,
) -> None:
    """Run ``script`` as Python runs a script: as the module ``__main__``, compiled from its
    bytes (its coding line honoured), with the globals ``runpy.run_path`` gives it.

    The module stays ``sys.modules["__main__"]``, and its globals are cleared at exit after the
    atexit functions the notebook registered, as Python clears a script's globals: what the
    notebook left open (a file, a writer) is closed and flushed then, although its globals,
    made before TensorFlow's import, were frozen with TensorFlow's objects
    (``tfc_runtime.__main__``) and so are never collected.

    ``transform(tree, text)``, when given, may change the script's syntax tree before it is
    compiled (the run cell's marks: :mod:`tfc_runtime.runcell`); line numbers stay the file's.
    ``file`` is its ``__file__`` where that is not ``script`` (a ``.py`` entry point runs as
    the file it was, from its own folder).
    """
    with io.open_code(script) as f:
        source = f.read()
    # A notebook's cells may await at top level, as IPython runs them (a .py file may not).
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if file is None else 0
    if transform is None:  # dont_inherit: not our __future__s
        code = compile(source, script, "exec", flags=flags, dont_inherit=True)
    else:
        tree = ast.parse(source, script)
        text = source.decode("utf-8", "replace")
        code = compile(transform(tree, text), script, "exec", flags=flags, dont_inherit=True)
    module = ModuleType("__main__")
    module.__dict__.update(
        __file__=file or script, __cached__=None, __loader__=None, __package__="", __spec__=None
    )
    sys.modules["__main__"] = module
    atexit.register(_clear_globals, module.__dict__)  # runs after the notebook's atexit functions
    if code.co_flags & inspect.CO_COROUTINE:  # a top-level await: in an event loop, as a
        import asyncio  # kernel runs its cells (asyncio.run() in a cell fails there too)

        asyncio.set_event_loop(loop := asyncio.new_event_loop())
        loop.run_until_complete(eval(code, module.__dict__))
        return
    exec(code, module.__dict__)


def _clear_globals(names: dict[str, object]) -> None:
    """Set a module's globals to None as Python does at exit: the names with one leading
    underscore first, then all but ``__builtins__`` (each value's finalizer runs then)."""
    for first in (True, False):
        for name in list(names):
            single = name.startswith("_") and not name.startswith("__")
            if (single or not first) and name != "__builtins__":
                names[name] = None


def _call(func: Callable[..., Any], *args: Any) -> Any:
    return func(*args)


call_with_room: Callable[..., Any] = FunctionType(
    _call.__code__.replace(co_stacksize=ROOM_SLOTS), globals(), "call_with_room"
)
"""``call_with_room(func, *args)``: ``func(*args)``, called from a frame with room for the calls
below it (see the module's docstring)."""
