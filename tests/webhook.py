"""A webhook receiver on a loopback address, for the tests of ``--notify`` (apprise's
``json://`` posts): what a job's end sent, in order."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jobutil import JOB_DEADLINE_S


class Receiver:
    """A webhook receiver on 127.0.0.1: every POST's path and JSON body, in order."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, Any]]] = []
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                posts.append((self.path, json.loads(self.rfile.read(size) or b"{}")))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int, deadline_s: float = JOB_DEADLINE_S) -> list[dict[str, Any]]:
        """The bodies once ``count`` have come (the test fails past the deadline)."""
        deadline = time.monotonic() + deadline_s
        while len(self.posts) < count:
            assert time.monotonic() < deadline, f"{len(self.posts)} of {count} webhooks came"
            time.sleep(0.1)
        return [body for _, body in self.posts]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port_url() -> str:
    """A ``json://`` URL on a loopback port nothing listens at."""
    down = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = down.server_address[1]
    down.server_close()
    return f"json://127.0.0.1:{port}/hook"
