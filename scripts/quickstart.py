"""Run notebooks/quickstart.ipynb headless (nbclient), as a user would in Jupyter.

The kernel gets JPY_SESSION_NAME, as JupyterLab gives it, so %%tfc_run finds its notebook.
Prints the job's outcome and exits non-zero when the job (or any cell) fails.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    path = ROOT / "notebooks" / (sys.argv[1] if len(sys.argv) > 1 else "quickstart.ipynb")
    nb = nbformat.read(path, as_version=4)
    os.environ["JPY_SESSION_NAME"] = str(path)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # TensorFlow's C++ INFO lines off
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    status = 0
    try:
        client.execute()
    except CellExecutionError as exc:
        print(f"quickstart: a cell failed: {str(exc).strip().splitlines()[-1]}", file=sys.stderr)
        status = 1
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("name") == "stderr":
                continue  # TensorFlow's start-up chatter in the notebook's own kernel
            text = output.get("text") or "".join(output.get("data", {}).get("text/plain", ""))
            if output.get("output_type") == "error":
                text = f"{output.get('ename')}: {output.get('evalue')}\n"
            if text:
                sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
