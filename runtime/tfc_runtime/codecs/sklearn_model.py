"""scikit-learn models (``kind: sklearn``), through skops where it is installed.

The job writes an estimator (a model, a pipeline) with ``skops.io.dumps`` as
``sklearn/<name>.skops``; the kernel reads the border's checked copy of it (a zip, decompressed
within ``return_limit_mb``) and loads it with ``skops.io.loads``, which builds only the types
skops trusts (never a pickle): a file naming any other type stays in the job, its types said.
Without skops in the job (or the kernel) the model stays, and the line says to install it.
scikit-learn is never imported to claim a value.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import Codec, OverLimit, Reader, Stays, Unreadable, Unsupported, Writer

INSTALL = "install skops where the job runs and in the kernel (pip install skops)"
"""The fix when skops is missing."""


def _skops() -> Any:
    """``skops.io``, or None where skops is not installed."""
    try:
        return importlib.import_module("skops.io")
    except ImportError:
        return None


class SklearnModel(Codec):
    """A scikit-learn estimator: any object of ``sklearn`` with ``get_params``."""

    kind = "sklearn"
    noun = "scikit-learn model"

    def claims(self, value: Any) -> bool:
        module = type(value).__module__.partition(".")[0]
        return module == "sklearn" and callable(getattr(value, "get_params", None))

    def write(self, value: Any, name: str, out: Writer) -> dict[str, Any]:
        skops = _skops()
        if skops is None:
            raise Unsupported(f"scikit-learn {type(value).__name__}: {INSTALL}")
        file = f"sklearn/{name}.skops"
        try:
            data = skops.dumps(value)
        except Exception as exc:
            raise Unsupported(
                f"scikit-learn {type(value).__name__} skops cannot write: {exc}"
            ) from None
        with open(out.path(file), "wb") as f:
            f.write(data)
        return {"file": file, "class": type(value).__name__}

    def read(self, entry: dict[str, Any], src: Reader) -> Any:
        file = entry.get("file")
        if not isinstance(file, str):
            raise Stays("scikit-learn model with no file")
        skops = _skops()
        if skops is None:
            raise Stays(f"scikit-learn model: {INSTALL}")
        try:
            data = src.copy(file, archive=True).read_bytes()
        except OverLimit:
            raise
        except (Unreadable, OSError) as exc:
            raise Stays(f"scikit-learn model that does not load here: {exc}") from None
        untrusted = skops.get_untrusted_types(data=data)
        if untrusted:
            said = ", ".join(str(t) for t in untrusted)[:160]
            raise Stays(f"scikit-learn model of types skops does not trust: {said}")
        return skops.loads(data)  # trusted=None: skops' own trusted types only
