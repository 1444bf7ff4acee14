"""A server on 127.0.0.1 that answers every request the way a test tells it to, however badly.

    with BadServer(lambda request: Reply(200, b"[1, 2]")) as server:
        LabelStudioClient(server.url, "token").export(1)

A behaviour takes the request (method, path, headers, body) and returns a :class:`Reply`: a status,
headers and a body, sent at once, or byte by byte every ``drip`` seconds (a server that never stops
sending). Requests are recorded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    drip: float | None = None  # seconds between the body's bytes


Behaviour = Callable[[Request], Reply]


class BadServer:
    """A threaded HTTP/1.1 server whose every answer comes from ``behaviour``."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.requests: list[Request] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(self.command, self.path, dict(self.headers), self.rfile.read(length))
                server.requests.append(request)
                reply = server.behaviour(request)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                if reply.drip is None:
                    self.wfile.write(reply.body)
                    return
                try:
                    for byte in reply.body:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(reply.drip)
                except OSError:  # the client gave up, as it should
                    self.close_connection = True

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
