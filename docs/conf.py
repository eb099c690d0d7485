"""Sphinx configuration of the tfc_jupyter docs: MyST Markdown pages, pydata-sphinx-theme.

Built by the test command (tests/test_docs.py) with warnings as errors:
``python -m sphinx -W --keep-going -b html docs <folder>``. Nothing here reaches the network.
"""

from __future__ import annotations

project = "tfc_jupyter"
author = "tfc_jupyter authors"
copyright = "tfc_jupyter authors"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Links to headings (`page.md#a-heading`) resolve to anchors made from the headings' text, as
# GitHub makes them; a link to a page or an anchor that does not exist is a warning (an error).
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]
suppress_warnings: list[str] = []

html_theme = "pydata_sphinx_theme"
html_title = "tfc_jupyter"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # No icons or version switcher fetched from elsewhere: the site builds offline.
    "icon_links": [],
}
html_static_path: list[str] = []
