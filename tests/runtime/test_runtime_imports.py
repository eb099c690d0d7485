"""``python -m tfc_runtime.imports SCRIPT``: the image build's last step finds every import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tfc_runtime.imports import missing

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


def test_missing_imports_are_named_with_where(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(
        "import json\nimport numpy\nfrom helpers import load\nimport pkg\n"
        "try:\n    import not_here_either\nexcept ImportError:\n    pass\n"
        "from IPython.display import display\n"
    )
    (tmp_path / "helpers.py").write_text("import os\n\nimport not_installed_module_xyz\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .sub import f\n")
    (tmp_path / "pkg" / "sub.py").write_text("import another_missing_abc.part\n")
    assert missing(str(tmp_path / "script.py")) == [
        ("not_installed_module_xyz", "helpers.py, line 3"),
        ("another_missing_abc", "pkg/sub.py, line 1"),
    ]


def test_the_build_step_fails_naming_the_import(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text("import numpy\nimport pandas_is_not_here\n")
    proc = subprocess.run(
        [sys.executable, "-m", "tfc_runtime.imports", "script.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(RUNTIME), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout.strip() == (
        "[tfc_runtime] cannot import pandas_is_not_here (script.py, line 2): it is not "
        "installed in this image"
    )
    (tmp_path / "script.py").write_text("import numpy\n")
    ok = subprocess.run(
        [sys.executable, "-m", "tfc_runtime.imports", "script.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(RUNTIME), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
