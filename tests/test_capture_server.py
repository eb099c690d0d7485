"""Which notebook: after Untitled.ipynb is renamed, the kernel asks its Jupyter server.

A real JupyterLab server (tests/browser.py), a real kernel started through its sessions API, a
rename as JupyterLab does it (contents, then the session's path), and ``find_notebook`` run
inside that kernel: ``JPY_SESSION_NAME`` still names Untitled.ipynb, the server knows better.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from browser import LabServer
from jupyter_client import BlockingKernelClient

EXEC_TIMEOUT_S = 60


def _run_in_kernel(connection_file: Path, code: str) -> str:
    client = BlockingKernelClient(connection_file=str(connection_file))
    client.load_connection_file()
    client.start_channels()
    try:
        for attempt in range(3):  # a heartbeat not answered yet reads as "died": ask again
            try:
                client.wait_for_ready(timeout=EXEC_TIMEOUT_S)
                break
            except RuntimeError:
                if attempt == 2:
                    raise
                time.sleep(2)
        out: list[str] = []
        reply = client.execute_interactive(
            code,
            timeout=EXEC_TIMEOUT_S,
            output_hook=lambda msg: (
                out.append(msg["content"].get("text", "")) if msg["msg_type"] == "stream" else None
            ),
        )
        assert reply["content"]["status"] == "ok", reply["content"]
        return "".join(out)
    finally:
        client.stop_channels()


@pytest.mark.slow
def test_renamed_untitled_is_found_through_the_server(lab_server: LabServer) -> None:
    server = lab_server
    nb = {
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": "x = 1"}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    server.api("PUT", "api/contents/Untitled.ipynb", {"type": "notebook", "content": nb})
    session = server.api(
        "POST",
        "api/sessions",
        {"path": "Untitled.ipynb", "type": "notebook", "kernel": {"name": "python3"}},
    )
    kid = session["kernel"]["id"]
    try:
        server.api("PATCH", "api/contents/Untitled.ipynb", {"path": "mnist_experiment.ipynb"})
        server.api("PATCH", f"api/sessions/{session['id']}", {"path": "mnist_experiment.ipynb"})
        connection = Path(server.env["JUPYTER_RUNTIME_DIR"]) / f"kernel-{kid}.json"
        deadline = time.monotonic() + EXEC_TIMEOUT_S
        while not connection.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        text = _run_in_kernel(
            connection,
            "import json, os\nfrom tfc_jupyter.notebook import capture\n"
            "path, how, warnings = capture.find_notebook()\n"
            "print(json.dumps([os.environ.get('JPY_SESSION_NAME'), str(path), how, warnings]))",
        )
        stale, path, how, warnings = json.loads(text.strip().splitlines()[-1])
        assert stale.endswith("Untitled.ipynb")  # what the kernel was started with
        assert Path(path) == (server.root_dir / "mnist_experiment.ipynb").resolve()
        assert how == "the Jupyter server's sessions" and warnings == []
    finally:
        server.api("DELETE", f"api/sessions/{session['id']}")


def test_vscode_names_its_notebook(tmp_path: Path) -> None:
    from tfc_jupyter.notebook.capture import find_notebook

    nb = tmp_path / "from_vscode.ipynb"
    nb.write_text("{}")
    path, how, _ = find_notebook(environ={}, user_ns={"__vsc_ipynb_file__": str(nb)})
    assert (path, how) == (nb.resolve(), "VS Code")


def test_colab_gives_its_live_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Colab's front end is the edge this machine cannot reach: its message API is faked at the
    module boundary (google.colab._message), and everything past it is ours, for real."""
    import sys
    import types

    from tfc_jupyter.notebook.capture import find_notebook, read_notebook, select_cells

    nb = {
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": "x = 1"}],
        "metadata": {"colab": {"name": "MNIST demo.ipynb"}, "kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 0,
    }
    asked: list[tuple[str, int]] = []

    def blocking_request(kind: str, request: str = "", timeout_sec: int = 5) -> dict[str, object]:
        asked.append((kind, timeout_sec))
        return {"ipynb": nb}

    colab = types.ModuleType("google.colab")
    message = types.ModuleType("google.colab._message")
    message.blocking_request = blocking_request  # type: ignore[attr-defined]
    colab._message = message  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab._message", message)
    monkeypatch.chdir(tmp_path)
    path, how, _ = find_notebook(environ={})
    assert how == "Colab's live notebook" and asked == [("get_ipynb", 10)]
    assert path is not None and path.parent == tmp_path.resolve()
    assert path.name == ".MNIST demo.ipynb" and oct(path.stat().st_mode & 0o777) == "0o600"
    selection = select_cells(read_notebook(path), path=path, how=how)
    assert [c.source for c in selection.cells] == ["x = 1"]
    from tfc_jupyter.planner.plan import job_name

    assert job_name(selection) == "MNIST demo"
