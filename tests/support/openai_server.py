"""A local OpenAI-compatible chat-completions server for tests.

A threaded ``http.server`` on 127.0.0.1 (a free port) that serves ``POST /v1/chat/completions``.
Each reply comes from a handler the test sets (request body in, answer object out), and the test can
inject, for the next N requests, an HTTP error (429 with ``Retry-After``, 500, ...) or a reply whose
content is not valid JSON, and a latency for every request. Every request is recorded (headers and
body), with the highest number of requests in flight at once.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes


def response_schema(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema a request asked for (``response_format.json_schema.schema``)."""
    return body["response_format"]["json_schema"]["schema"]


def last_user_message(body: dict[str, Any]) -> str:
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


class OpenAICompatServer:
    """The server; use as a context manager, or call :meth:`start` and :meth:`stop`.

    Args:
        handler: request body → answer. A ``str`` is sent as the message content verbatim; anything
            else is JSON-encoded. The default answers ``{}``.
        prompt_tokens, completion_tokens: the usage reported with every completion.
    """

    def __init__(self, handler: Handler | None = None, *, prompt_tokens: int = 20, completion_tokens: int = 10) -> None:
        self.handler: Handler = handler or (lambda body: {})
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.latency = 0.0
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._faults: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control -------------------------------------------------------------------------------

    def fail_next(self, n: int, status: int = 500, *, retry_after: float | None = None) -> None:
        """Answer the next ``n`` requests with HTTP ``status`` (and ``Retry-After`` seconds if given)."""
        with self._lock:
            self._faults += [{"status": status, "retry_after": retry_after}] * n

    def invalid_next(self, n: int, content: str = '{"category": "dog", "judgements": [') -> None:
        """Answer the next ``n`` requests with 200 and ``content`` (by default truncated JSON)."""
        with self._lock:
            self._faults += [{"content": content}] * n

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> OpenAICompatServer:
        server = self

        class _RequestHandler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                server._serve(self)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("openai test server: " + format, *args)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _RequestHandler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="openai-test-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving -------------------------------------------------------------------------------

    def _serve(self, http: BaseHTTPRequestHandler) -> None:
        raw = http.rfile.read(int(http.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        with self._lock:
            self.requests.append(RecordedRequest(http.path, dict(http.headers.items()), body, raw))
            fault = self._faults.pop(0) if self._faults else None
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self.latency:
                time.sleep(self.latency)
            if http.path.rstrip("/") != "/v1/chat/completions":
                self._send(http, 404, {"error": {"message": f"no route {http.path}", "type": "not_found"}})
            elif fault is not None and "status" in fault:
                headers = {} if fault["retry_after"] is None else {"Retry-After": str(fault["retry_after"])}
                error = {"message": f"injected HTTP {fault['status']}", "type": "test", "code": None}
                self._send(http, fault["status"], {"error": error}, headers)
            elif fault is not None:
                self._send(http, 200, self._completion(body, fault["content"]))
            else:
                try:
                    answer = self.handler(body)
                except Exception as exc:  # noqa: BLE001  (test code: report a handler bug as a 500)
                    self._send(http, 500, {"error": {"message": repr(exc), "type": "handler"}})
                    return
                content = answer if isinstance(answer, str) else json.dumps(answer)
                self._send(http, 200, self._completion(body, content))
        finally:
            with self._lock:
                self._in_flight -= 1

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        with self._lock:
            number = len(self.requests)
        return {
            "id": f"chatcmpl-test-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
            },
        }

    @staticmethod
    def _send(http: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        http.send_response(status)
        http.send_header("Content-Type", "application/json")
        http.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            http.send_header(name, value)
        http.end_headers()
        http.wfile.write(data)
