"""``IPython.display`` in an image without IPython (docker, Vertex AI).

Notebooks write ``from IPython.display import display, HTML, clear_output``. In Jupyter that
shows rich output; in a job there is no front end, and IPython is not a dependency of the code
(it is the notebook's machinery). :func:`install` puts small ``IPython`` and ``IPython.display``
modules in ``sys.modules`` when IPython cannot be imported (the local backend has it): a display
prints what a plain-text front end shows (``str`` as is, a rich object as its text form),
``clear_output`` does nothing, ``get_ipython()`` is None as in plain ``python``.
"""

from __future__ import annotations

import html
import importlib.util
import os
import sys
import types
from typing import Any

from tfc_runtime.nb import display, get_ipython

_RICH = (
    "HTML",
    "Markdown",
    "Latex",
    "Math",
    "JSON",
    "SVG",
    "Javascript",
    "Image",
    "Audio",
    "Video",
    "IFrame",
    "Code",
    "Pretty",
    "ProgressBar",
    "FileLink",
    "YouTubeVideo",
)


class DisplayObject:
    """A rich object: its text form is what a plain-text front end shows."""

    def __init__(self, data: Any = None, *args: Any, **kwargs: Any) -> None:
        self.data = data
        self.args, self.kwargs = args, kwargs

    def __repr__(self) -> str:
        return f"<IPython.core.display.{type(self).__name__} object>"


_MIME_OF = {
    "HTML": "_repr_html_",
    "Markdown": "_repr_markdown_",
    "Latex": "_repr_latex_",
    "Math": "_repr_latex_",
    "SVG": "_repr_svg_",
    "JSON": "_repr_json_",
    "Javascript": "_repr_javascript_",
}
"""The representation each text-holding display class gives, as IPython's do (the run cell
sends it back to the notebook: :mod:`tfc_runtime.runcell`)."""


def _shown_as(name: str) -> dict[str, Any]:
    """The class body of a rich object: its ``_repr_*_`` method, when it has one here."""
    method = _MIME_OF.get(name)
    if method is None:
        return {}

    def represent(self: DisplayObject) -> Any:
        data = self.data
        if name == "Math" and isinstance(data, str):
            return f"$\\displaystyle {data.strip('$')}$"
        return data

    return {method: represent}


_PNG, _JPEG = b"\x89PNG\r\n\x1a\n", b"\xff\xd8"


class Image(DisplayObject):
    """``IPython.display.Image``: bytes, a file or a URL, shown as Jupyter shows it (a PNG or
    JPEG as that image, a URL not embedded as an ``<img>``); it was its ``repr``,
    ``<IPython.core.display.Image object>``."""

    def __init__(
        self,
        data: Any = None,
        url: str | None = None,
        filename: str | None = None,
        format: str | None = None,
        embed: bool | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(data, str):
            if data.startswith(("http://", "https://")):
                url, data = data, None
            elif os.path.exists(data):
                filename, data = data, None
        super().__init__(data, **kwargs)
        self.url, self.filename = url, filename
        if filename is not None:
            with open(filename, "rb") as fh:
                self.data = fh.read()
        self.embed = self.url is None if embed is None else embed
        self.format = (format or "").lower().replace("jpg", "jpeg") or self._sniffed()

    def _sniffed(self) -> str:
        name = self.filename or self.url or ""
        if isinstance(self.data, bytes):
            return "png" if self.data.startswith(_PNG) else "jpeg" * self.data.startswith(_JPEG)
        return "jpeg" if name.lower().endswith((".jpg", ".jpeg")) else "png"

    def _bytes(self, kind: str) -> bytes | None:
        shown = self.embed and isinstance(self.data, bytes) and self.format == kind
        return self.data if shown else None

    def _repr_png_(self) -> bytes | None:
        return self._bytes("png")

    def _repr_jpeg_(self) -> bytes | None:
        return self._bytes("jpeg")

    def _repr_html_(self) -> str | None:
        if self.embed or not self.url:
            return None
        return f'<img src="{html.escape(self.url, quote=True)}"/>'


def clear_output(wait: bool = False) -> None:
    """In the run cell the kernel clears what the cell showed; elsewhere nothing to clear in
    a log."""
    from tfc_runtime import runcell

    runcell.clear_output(wait)


def update_display(obj: Any, *, display_id: Any = None, **kwargs: Any) -> None:
    """An update of a display: in place in the run cell; elsewhere shown again, as a log can
    only add."""
    display(obj, display_id=display_id, update=True)


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name, __doc__)
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def install() -> None:
    """Make ``import IPython`` / ``from IPython.display import ...`` work without IPython."""
    if "IPython" in sys.modules or importlib.util.find_spec("IPython") is not None:
        return
    rich = {name: type(name, (DisplayObject,), _shown_as(name)) for name in _RICH}
    rich["Image"] = Image
    shown = _module(
        "IPython.display",
        display=display,
        clear_output=clear_output,
        update_display=update_display,
        DisplayObject=DisplayObject,
        **rich,
    )
    top = _module("IPython", display=shown, get_ipython=get_ipython, version_info=(0, 0, 0))
    core = _module("IPython.core", display=shown)
    sys.modules.update(
        {
            "IPython": top,
            "IPython.display": shown,
            "IPython.core": core,
            "IPython.core.display": shown,
        }
    )
