"""Shared browser-test infrastructure: a real JupyterLab server and Debian chromium (Playwright).

Fixtures (registered for every test module by ``tests/conftest.py``):

- ``chromium_path``: ``/usr/bin/chromium`` (or ``$TFC_CHROMIUM``); skips with the reason when the
  browser or the Python ``playwright`` package is missing (``bash scripts/browser_deps.sh``).
- ``lab_server``: ``jupyter lab`` from this Python environment on 127.0.0.1, a free port and a
  random token, ``--allow-root --no-browser``, its own root dir, Jupyter config/data/runtime dirs,
  ``IPYTHONDIR`` and ``TFC_JUPYTER_HOME`` in a temporary folder; ready when ``/api/status``
  answers (with a deadline); stopped by PID at teardown, kernels and the jobs they launched too.
- ``browser_page``: a headless chromium page (Playwright's sync API, ``executable_path`` set, never
  ``playwright install``), fresh user-data dir, bounded default timeout.

The server runs tfc_jupyter's server extension (the jobs API) and serves its labextension
(built into ``tfc_jupyter/labextension`` by ``scripts/bootstrap.sh``, or ``jlpm build`` in
``labextension/``): this checkout's build, ahead of the environment's copy (an extra
labextensions path).

Helpers: :func:`open_notebook`, :func:`restart_kernel`, :func:`lab_command`, :func:`start_command`,
:func:`cell_outputs`, :func:`check_shown_log`, :func:`screenshot`.
Browser tests are marked ``@pytest.mark.slow``. The server's log is ``lab_server.log_path``
(printed when start-up fails).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_DEADLINE_S = 60.0
PAGE_TIMEOUT_MS = 30_000
# Lab plugins that pop up notifications over the page in a fresh profile.
_DISABLED_PLUGINS = {"@jupyterlab/apputils-extension:announcements": True}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LabServer:
    """A running ``jupyter lab``: ``url`` (ends with ``/``), ``token``, ``root_dir``, ``env``."""

    url: str
    token: str
    root_dir: Path
    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    children: set[int] = field(default_factory=set)

    @property
    def home(self) -> Path:
        """The server's (and its kernels') ``TFC_JUPYTER_HOME``: job records and folders."""
        return Path(self.env["TFC_JUPYTER_HOME"])

    def lab_url(self, path: str = "") -> str:
        """The JupyterLab page for a file under the root dir (token included)."""
        return f"{self.url}lab/tree/{path}?token={self.token}"

    def api(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        """Call the REST API (``path`` relative to the base url); returns the decoded JSON."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path.lstrip("/"),
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode()
        return json.loads(text) if text else None

    def log_tail(self, lines: int = 40) -> str:
        """The end of the server's log, for failure messages."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def remember_children(self) -> None:
        """Note the server's descendants (kernels, job supervisors, replicas) to stop later."""
        import psutil

        if self.proc is None:
            return
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                self.children.add(child.pid)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the server (it shuts its kernels down), then SIGKILL whatever is left."""
        import psutil

        if self.proc is None:
            return
        self.remember_children()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        for pid in self.children:
            with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
                proc = psutil.Process(pid)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)  # a job replica leads its own group
                proc.kill()
        self.proc = None


def _ends_with_this_process() -> list[str]:
    """A prefix that has the kernel stop the server (SIGTERM) when the test process that
    started it ends, however it ends: a pytest killed by a signal (a CI deadline, Ctrl-C
    twice) leaves no JupyterLab behind (``setpriv --pdeathsig``, util-linux; without it the
    fixtures' own stop is all there is)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


def start_lab(base: Path, *, extra_args: tuple[str, ...] = ()) -> LabServer:
    """Start ``jupyter lab`` with everything under ``base``; wait (bounded) until it answers.

    Raises:
        RuntimeError: the server exited or did not answer within the deadline (log included).
    """
    root = base / "root"
    dirs = {name: base / name for name in ("config", "data", "runtime", "ipython", "tfc_home")}
    for folder in (root, *dirs.values()):
        folder.mkdir(parents=True, exist_ok=True)
    labconfig = dirs["config"] / "labconfig"
    labconfig.mkdir(exist_ok=True)
    (labconfig / "page_config.json").write_text(
        json.dumps({"disabledExtensions": _DISABLED_PLUGINS})
    )
    # tfc_jupyter's server extension on in the isolated config too (the install enables it in
    # sys.prefix/etc/jupyter; its labextension is found in sys.prefix/share/jupyter/labextensions,
    # unless this checkout built its own: that one, an extra path, is found first).
    config: dict[str, Any] = {"ServerApp": {"jpserver_extensions": {"tfc_jupyter": True}}}
    built = ROOT / "tfc_jupyter" / "labextension"
    if (built / "package.json").is_file():
        extra = dirs["data"] / "checkout-labextensions"
        extra.mkdir(exist_ok=True)
        if not (extra / "tfc-jupyter").exists():
            (extra / "tfc-jupyter").symlink_to(built, target_is_directory=True)
        config["LabApp"] = {"extra_labextensions_path": [str(extra)]}
    (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JPY_", "JUPYTER", "TFC_", "IPYTHON"))
    }
    env.update(
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        IPYTHONDIR=str(dirs["ipython"]),
        TFC_JUPYTER_HOME=str(dirs["tfc_home"]),
        TFC_STARTUP_TIMEOUT="120",
        PYTHONUNBUFFERED="1",
    )
    token, port = secrets.token_hex(16), _free_port()
    server = LabServer(
        url=f"http://127.0.0.1:{port}/",
        token=token,
        root_dir=root,
        env=env,
        log_path=base / "jupyter-lab.log",
    )
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--allow-root",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=",
        *extra_args,
    ]
    with open(server.log_path, "wb") as log:
        server.proc = subprocess.Popen(
            [*_ends_with_this_process(), *command],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        if server.proc.poll() is not None:
            raise RuntimeError(
                f"jupyter lab exited with {server.proc.returncode}:\n{server.log_tail()}"
            )
        try:
            server.api("GET", "api/status", timeout=2)
            return server
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(
                f"jupyter lab did not answer within {START_DEADLINE_S:.0f} s:\n{server.log_tail()}"
            )
        time.sleep(0.2)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """The chromium executable; skips (with the fix) when it or Playwright is missing."""
    path = os.environ.get("TFC_CHROMIUM", CHROMIUM)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        found = shutil.which("chromium")
        if not found:
            pytest.skip(f"no chromium at {path}: run `bash scripts/browser_deps.sh`")
        path = found
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("the Python playwright package is missing: pip install -e '.[dev]'")
    return path


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """A JupyterLab server of this environment, isolated in a temporary folder (see module)."""
    server = start_lab(tmp_path_factory.mktemp("lab"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def browser_page(chromium_path: str, tmp_path: Path) -> Iterator[Any]:
    """A Playwright page in headless chromium with a fresh profile; closed at teardown."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=chromium_path,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            context.set_default_timeout(PAGE_TIMEOUT_MS)
            page = context.pages[0] if context.pages else context.new_page()
            yield page
        finally:
            context.close()


# True once the current widget is the notebook, its session is ready and its kernel connected
# and idle (running cells earlier can meet a "Select Kernel" dialog).
_KERNEL_READY = """(name) => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const ctx = w && w.sessionContext;
  const kernel = ctx && ctx.session && ctx.session.kernel;
  return !!(w && w.title.label === name && ctx.isReady && kernel
            && kernel.connectionStatus === "connected" && kernel.status === "idle");
}"""


def open_notebook(page: Any, server: LabServer, path: str, timeout_ms: int = 60_000) -> None:
    """Open a notebook in JupyterLab and wait until its kernel is idle (bounded)."""
    page.goto(server.lab_url(path))
    # the one in view: notebooks an earlier test opened may be restored in hidden tabs
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden)", timeout=timeout_ms)
    page.wait_for_function(_KERNEL_READY, arg=path.rsplit("/", 1)[-1], timeout=timeout_ms)


def restart_kernel(page: Any, name: str, timeout_ms: int = 60_000) -> None:
    """Restart the current notebook's kernel (no dialog) and wait until it is idle (bounded)."""
    page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()"
    )
    page.wait_for_function(_KERNEL_READY, arg=name, timeout=timeout_ms)


def open_lab(page: Any, server: LabServer) -> None:
    """JupyterLab, its workspace reset, with tfc_jupyter's jobs plugin loaded."""
    page.goto(f"{server.url}lab?reset&token={server.token}")
    page.locator(".jp-LabShell").wait_for()
    page.wait_for_function("() => window.jupyterapp?.hasPlugin('tfc-jupyter:jobs')")


def lab_command(page: Any, command: str, args: dict[str, Any] | None = None) -> Any:
    """Run a JupyterLab command (``notebook:run-all-cells`` ...) through the exposed app; returns
    once the command has (``notebook:run-all-cells``: once every cell has run), with its result
    (a widget's id for a widget)."""
    return page.evaluate(
        """async ([id, args]) => {
  const result = await window.jupyterapp.commands.execute(id, args);
  // a widget (open-job ...) cannot come back to Python: its id, else nothing
  return result === null || typeof result !== 'object' ? result : (result.id ?? null);
}""",
        [command, args or {}],
    )


def start_command(page: Any, command: str, args: dict[str, Any] | None = None) -> None:
    """Start a JupyterLab command and return at once (cells that run for a while can be
    watched as they run)."""
    page.evaluate(
        "([id, args]) => { void window.jupyterapp.commands.execute(id, args); }",
        [command, args or {}],
    )


# The notebook panel of a path in the main area (null when it is not open), and its cells' output
# text as shown (innerText) and as the model holds it (stream text, joined).
_NOTEBOOK_JS = """(path) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (w.context && w.context.path === path && w.content && w.content.widgets) { return w; }
  }
  return null;
}"""


def cell_outputs(page: Any, path: str, index: int) -> dict[str, Any]:
    """A notebook cell's outputs: ``shown`` (the rendered text), ``streams`` (the stream text
    the model holds), ``html`` (the rendered HTML) and ``count`` (outputs), for ``path`` open in
    the main area."""
    return dict(
        page.evaluate(
            f"""([path, index]) => {{
  const panel = ({_NOTEBOOK_JS})(path);
  const cell = panel && panel.content.widgets[index];
  if (!cell || !cell.outputArea) {{ return {{shown: '', streams: '', html: '', count: 0}}; }}
  const outputs = cell.model.outputs.toJSON();
  const streams = outputs.filter(o => o.output_type === 'stream')
    .map(o => Array.isArray(o.text) ? o.text.join('') : o.text).join('');
  return {{shown: cell.outputArea.node.innerText, streams, html: cell.outputArea.node.innerHTML,
          count: outputs.length}};
}}""",
            [path, index],
        )
    )


# A Keras progress bar as shown: "16/16 [======>...]" (tf-keras) or "16/16 ━━━━" (Keras 3).
BAR = re.compile(r"\b(\d+)/(\d+) (\[[=>.]*\]|━+)")
# A raw colour code, or one shown as text once its escape character is lost ("[32m").
_ANSI_SHOWN = re.compile(r"\x1b|\[\d+(;\d+)*m")


def check_shown_log(text: str, *, epochs: int, steps: int, prefixed: bool) -> None:
    """Assert what a cell, the sidebar or the panel shows of a Keras ``fit`` log with its
    default progress bar: one line per bar, at its end (``steps/steps``), right after its
    ``Epoch k/N`` line; no empty replica lines (``prefixed``: lines start ``[chief] ``), no
    control or colour codes, no runtime reports."""
    assert "\x08" not in text and "\r" not in text and "\ufffd" not in text, repr(text)
    assert not _ANSI_SHOWN.search(text), repr(text)
    assert "tfc_runtime" not in text, text
    lines = text.splitlines()
    if prefixed:
        empty = [ln for ln in lines if re.fullmatch(r"\[(chief|worker-\d+)(, [\w-]+)*\]\s*", ln)]
        assert not empty, text
    bars = [line for line in lines if BAR.search(line)]
    assert len(bars) == epochs, text
    assert all(f"{steps}/{steps} " in bar and "loss:" in bar for bar in bars), bars
    for epoch in range(1, epochs + 1):
        at = [i for i, ln in enumerate(lines) if ln.endswith(f"Epoch {epoch}/{epochs}")]
        assert len(at) == 1, (epoch, text)
        assert BAR.search(lines[at[0] + 1]), (epoch, text)  # its bar, right after it


def screenshot(target: Any, name: str) -> Path:
    """Save a screenshot of a page or element under ``artifacts/`` (gitignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    target.screenshot(path=str(path))
    return path


def hide_notifications(page: Any) -> None:
    """Hide JupyterLab's notification toasts from now on (a "Launched" toast, a job's end): a
    screenshot for the README shows the jobs, and a toast that stays (a failed job's, until
    dismissed) never covers what a test looks at. They stay in the notification centre."""
    page.add_style_tag(content=".Toastify { display: none !important; }")
