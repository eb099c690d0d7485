"""tfc_runtime.sourcemap: load, locate, describe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tfc_runtime import sourcemap


def test_load_locate_describe(tmp_path: Path) -> None:
    path = tmp_path / "job.map.json"
    lines = [None, [1, 1], [1, 2], None, [7, 3]]
    path.write_text(json.dumps({"version": 1, "notebook": "train.ipynb", "lines": lines}))
    smap = sourcemap.load(path)
    assert smap.notebook == "train.ipynb"
    assert smap.locate(2) == (1, 1)
    assert smap.locate(5) == (7, 3)
    assert smap.locate(1) is None  # generated line
    assert smap.locate(0) is None and smap.locate(6) is None  # outside the script
    assert smap.describe(5) == "cell 7, line 3"
    assert smap.describe(4) == "script line 4"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ('{"version": 2, "lines": []}', "version 1"),
        ('{"version": 1, "lines": {}}', "'lines' must be a list"),
        ('{"version": 1, "lines": [[1]]}', r"lines\[0\]"),
        ('{"version": 1, "lines": [null, [0, 1]]}', r"lines\[1\]"),
    ],
)
def test_malformed_maps_are_refused(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as caught:
        sourcemap.load(path)
    assert str(path) in str(caught.value)
