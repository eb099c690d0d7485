"""matplotlib figures (``kind: figure``): a ``Figure`` again in the kernel, of the job's drawing.

A figure's artists hold code (callbacks, transforms, formatters) and matplotlib saves them only
as a pickle, which loading would run: so the job renders the figure to a PNG
(``figures/<name>.png``) at its own size and dpi, and the kernel makes a new
``matplotlib.figure.Figure`` of that size and dpi showing it (``figimage``): it displays as the
job's did, and ``savefig`` writes it again; its axes are not there to draw on. matplotlib is
looked up in ``sys.modules``, never imported to claim a value.
"""

from __future__ import annotations

import io
import sys
from typing import Any

from . import Codec, Reader, Stays, Unsupported, Writer

MAX_PIXELS = 50_000_000
"""Pixels of a figure read back at most (a 7,000 by 7,000 image)."""


class MatplotlibFigure(Codec):
    """A ``matplotlib.figure.Figure``."""

    kind = "figure"
    noun = "matplotlib figure"

    def claims(self, value: Any) -> bool:
        module = sys.modules.get("matplotlib.figure")
        figure = getattr(module, "Figure", None) if module is not None else None
        return isinstance(figure, type) and isinstance(value, figure)

    def write(self, value: Any, name: str, out: Writer) -> dict[str, Any]:
        file = f"figures/{name}.png"
        width, height = (float(v) for v in value.get_size_inches())
        try:
            value.savefig(out.path(file), format="png", dpi=value.dpi)
        except Exception as exc:
            raise Unsupported(f"matplotlib figure that cannot be drawn: {exc}") from None
        return {"file": file, "size": [width, height], "dpi": float(value.dpi)}

    def read(self, entry: dict[str, Any], src: Reader) -> Any:
        file, size, dpi = entry.get("file"), entry.get("size"), entry.get("dpi")
        if not isinstance(file, str) or not isinstance(size, list) or len(size) != 2:
            raise Stays("matplotlib figure with no file")
        width, height, dots = float(size[0]), float(size[1]), float(dpi or 100)
        if not all(0 < v < 1e4 for v in (width, height, dots)):
            raise Stays("matplotlib figure of no size")
        import numpy as np
        from matplotlib.figure import Figure
        from PIL import Image

        with Image.open(io.BytesIO(src.bytes(file)), formats=["PNG"]) as image:
            if image.width * image.height > MAX_PIXELS:  # read from its header, not drawn
                raise Stays(f"matplotlib figure of {image.width}x{image.height} pixels")
            pixels = np.asarray(image.convert("RGBA"))
        figure = Figure(figsize=(width, height), dpi=dots)
        figure.figimage(pixels, resize=True)
        return figure
