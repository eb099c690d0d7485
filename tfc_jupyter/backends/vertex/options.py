"""Vertex AI's own options: flags only a Vertex AI job takes, declared here and nowhere else.

Each field is one flag (:func:`tfc_jupyter.job.options.option`): the magic, the CLI and its
help, ``run()``, the jobs API and its schema, the form and the panel take it from here; another
backend refuses it (it would mean nothing there). :mod:`.request` reads them
(:func:`tfc_jupyter.job.options.target_options`). Most of Vertex AI's options are older than
this module and are still portable fields, read into ``JobSpec.google``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...job.options import option


@dataclass(frozen=True)
class VertexOptions:
    """The options of a Vertex AI job declared by its backend (defaults: Vertex AI's own)."""

    disable_retries: bool = option(
        False,
        "Vertex AI: never retry the job after an internal error once it has started (Vertex AI "
        "retries it by default).",
    )


VERTEX_DEFAULTS = VertexOptions()
"""Every option at its default (a job that sets none of them)."""
