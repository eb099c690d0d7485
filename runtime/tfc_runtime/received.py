"""Names a job receives from the kernel: what an earlier ``%%tfc_run`` cell brought back, so
that a later run cell continues it (issue 49).

In Jupyter, a cell reads what the cells above left in the kernel. An earlier run cell ran as a
job, and its names (the trained model, its history) came back to the kernel; a later run cell
that reads them cannot remake them in its job, since the job leaves the earlier run cell out
(running it again would train again). So the kernel sends them: at launch it writes those
names with the same codecs that bring names back (:mod:`tfc_runtime.codecs`: a Keras model as
a ``.keras`` file with its optimizer's state, other values as JSON and a pickle-free ``.npz``)
into the job folder's :data:`FOLDER` (:func:`write`), and the job's script binds them where
the earlier run cell stood, with that cell's ``import``, ``def`` and ``class`` lines
(:func:`load`). The files come from the kernel that launched the job; Keras models still load
in safe mode.

Standard library only (a codec imports its library when it writes or reads a value).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from tfc_runtime import codecs, values
from tfc_runtime.codecs.manifest import FILE, Manifest

FOLDER = "received"
"""The job folder's names from the kernel: a cell folder (``values.json``, ``arrays.npz``,
``models/``)."""


def write(folder: str, namespace: dict[str, Any], names: list[str]) -> dict[str, str]:
    """In the kernel: write ``names`` of ``namespace`` into ``folder``; the names that cannot
    be sent, each with why (what the codecs cannot write)."""
    from tfc_runtime import giveback

    present = [n for n in names if n in namespace]
    early = giveback._early(namespace, present, ())
    manifest = giveback.write_manifest(folder, namespace, present, early, Manifest())
    missing = {n: "not in the kernel now" for n in names if n not in namespace}
    return {**missing, **manifest.stayed}


class _Files:
    """What a codec reads through in the job (:class:`tfc_runtime.codecs.Reader`): the files
    the kernel wrote, read as they are."""

    def __init__(self, folder: str, namespace: dict[str, Any], arrays: Any) -> None:
        self.files = folder
        self.folder = Path(os.getcwd())  # where the job's files are: its working folder
        self.namespace = namespace
        self.name = ""
        self.models: dict[str, Any] = {}
        self.decoder = values.Decoder(arrays, loaded=self.loaded)  # models in containers

    def _path(self, file: str) -> str:
        return os.path.join(self.files, *codecs.plain_rel(file))

    def bytes(self, file: str) -> bytes:
        with open(self._path(file), "rb") as f:
            return f.read()

    def copy(self, file: str, *, archive: bool = False) -> Path:
        return Path(self._path(file))

    def decode(self, tree: Any) -> Any:
        return self.decoder.decode(tree)

    def loaded(self, name: str) -> Any:
        return self.models.get(name)

    def note(self, text: str) -> None:
        print(f"[tfc_runtime] {self.name}: {text}", file=sys.stderr)


def load(*names: str) -> tuple[Any, ...]:
    """In the job: the values of ``names`` the kernel sent, in order, read from
    ``$TFC_JOB_DIR/received``.

    Raises:
        NameError: a name the kernel could not send (said with why, as Jupyter would stop at
            an undefined name).
    """
    folder = os.path.join(os.environ.get("TFC_JOB_DIR", ""), FOLDER)
    with open(os.path.join(folder, FILE), encoding="utf-8") as f:
        manifest = Manifest.from_json(json.load(f))
    namespace = sys._getframe(1).f_globals
    arrays: Any = {}
    npz = os.path.join(folder, "arrays.npz")
    if os.path.exists(npz):
        import numpy as np

        arrays = np.load(npz, allow_pickle=False)
    src = _Files(folder, namespace, arrays)
    for key, entry in manifest.names.items():  # the models first: others refer to them
        codec = codecs.of_kind(entry.get("kind"))
        if codec is not None and codec.early:
            src.name = key
            src.models[key] = codec.read(entry, src)
    got = []
    for name in names:
        sent = manifest.names.get(name)
        if sent is None:
            why = manifest.stayed.get(name, "not sent")
            raise NameError(f"name {name!r} is in the kernel but did not reach the job: {why}")
        codec = codecs.of_kind(sent.get("kind"))
        if codec is None:
            raise NameError(f"name {name!r}: no codec of kind {sent.get('kind')!r} in the job")
        src.name = name
        got.append(src.models[name] if codec.early else codec.read(sent, src))
    with contextlib.suppress(Exception):
        arrays.close()
    return tuple(got)
