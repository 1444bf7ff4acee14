"""A local OpenAI-compatible chat-completions and image-edits server for tests.

A threaded ``http.server`` on 127.0.0.1 (a free port) that serves ``POST /v1/chat/completions``.
Each reply comes from a handler the test sets (request body in, answer object out), and the test can
inject, for the next N requests, an HTTP error (429 with ``Retry-After``, 500, ...) or a reply whose
content is not valid JSON, and a latency for every request. Every request is recorded (headers and
body), with the highest number of requests in flight at once.

It also serves ``POST /v1/images/edits`` (multipart/form-data, as the official client sends it). It
checks what the real API insists on (image and mask are PNGs of the same supported size, the mask
has an alpha channel, ``size`` matches) and answers ``{"created", "data": [{"b64_json"}]}`` with the
edit of ``image_handler`` (by default :func:`tint_editable`). Injected faults apply to either route;
a content fault makes the image route answer base64 that is not an image. The recorded ``body`` of
an image edit holds its text fields; its files are in :attr:`OpenAICompatServer.image_edits`.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import numpy as np
from PIL import Image

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], Any]
ImageHandler = Callable[[dict[str, str], Image.Image, Image.Image], Image.Image]

IMAGE_EDITS = "/v1/images/edits"
GPT_IMAGE_SIZES = {(1024, 1024), (1536, 1024), (1024, 1536)}
DALL_E_2_SIZES = {(256, 256), (512, 512), (1024, 1024)}
TINT = (255, 0, 255)  # what the default edit paints, half-strength, where the mask is transparent


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes


@dataclass(frozen=True)
class ImageEditRequest:
    """One image-edit request: its text fields and the PNG bytes of its files."""

    fields: dict[str, str]
    image: bytes
    mask: bytes | None


def tint_editable(fields: dict[str, str], image: Image.Image, mask: Image.Image) -> Image.Image:
    """The default test edit: pixels where the mask is transparent move halfway to :data:`TINT`.

    Every other pixel is nudged by one grey level, as a generative model re-renders the whole
    image: a client that trusts the answer outside the edit area shows up as a changed pixel.
    """
    pixels = np.asarray(image.convert("RGB"), dtype=np.int16)
    editable = np.asarray(mask.getchannel("A")) == 0
    tinted = (pixels + np.asarray(TINT, dtype=np.int16)) // 2
    nudged = np.where(pixels < 255, pixels + 1, pixels - 1)
    out = np.where(editable[..., None], tinted, nudged)
    return Image.fromarray(out.astype(np.uint8), "RGB")


def parse_multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """Form fields of a multipart/form-data body: name → (filename or None, bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    if not message.is_multipart():
        raise ValueError("the body is not multipart/form-data")
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return fields


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
        self.image_handler: ImageHandler = tint_editable
        self.image_edits: list[ImageEditRequest] = []
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

    def invalid_next(self, n: int, content: str = '{"category": "dog", "judgements": [', *,
                     finish_reason: str = "stop") -> None:
        """Answer the next ``n`` requests with 200 and ``content`` (by default truncated JSON);
        ``finish_reason="length"`` as a server whose token cap cut the answer off."""
        with self._lock:
            self._faults += [{"content": content, "finish_reason": finish_reason}] * n

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def image_edit_count(self) -> int:
        """Requests made to the image-edit route (including refused and failed ones)."""
        with self._lock:
            return sum(1 for r in self.requests if r.path.rstrip("/") == IMAGE_EDITS)

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
        form: dict[str, tuple[str | None, bytes]] | None = None
        if http.path.rstrip("/") == IMAGE_EDITS:
            try:
                form = parse_multipart(http.headers.get("Content-Type", ""), raw)
            except ValueError:
                form = {}
            body = {k: v.decode("utf-8", "replace") for k, (filename, v) in form.items() if filename is None}
        else:
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
            if form is not None:
                self._serve_image_edit(http, body, form, fault)
            elif http.path.rstrip("/") != "/v1/chat/completions":
                self._send(http, 404, {"error": {"message": f"no route {http.path}", "type": "not_found"}})
            elif fault is not None and "status" in fault:
                headers = {} if fault["retry_after"] is None else {"Retry-After": str(fault["retry_after"])}
                error = {"message": f"injected HTTP {fault['status']}", "type": "test", "code": None}
                self._send(http, fault["status"], {"error": error}, headers)
            elif fault is not None:
                self._send(http, 200, self._completion(body, fault["content"], fault["finish_reason"]))
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

    def _serve_image_edit(
        self,
        http: BaseHTTPRequestHandler,
        fields: dict[str, str],
        form: dict[str, tuple[str | None, bytes]],
        fault: dict[str, Any] | None,
    ) -> None:
        image_bytes = form.get("image", (None, b""))[1] or form.get("image[]", (None, b""))[1]
        mask_bytes = form["mask"][1] if "mask" in form else None
        with self._lock:
            self.image_edits.append(ImageEditRequest(fields, image_bytes, mask_bytes))
        if fault is not None and "status" in fault:
            headers = {} if fault["retry_after"] is None else {"Retry-After": str(fault["retry_after"])}
            error = {"message": f"injected HTTP {fault['status']}", "type": "test", "code": None}
            self._send(http, fault["status"], {"error": error}, headers)
            return
        if fault is not None:
            encoded = base64.b64encode(fault["content"].encode()).decode()
            self._send(http, 200, {"created": 0, "data": [{"b64_json": encoded}]})
            return
        try:
            image, mask = self._check_image_edit(fields, image_bytes, mask_bytes)
        except ValueError as exc:
            error = {"message": str(exc), "type": "invalid_request_error", "code": None}
            self._send(http, 400, {"error": error})
            return
        try:
            edited = self.image_handler(fields, image, mask)
        except Exception as exc:  # noqa: BLE001  (test code: report a handler bug as a 500)
            self._send(http, 500, {"error": {"message": repr(exc), "type": "handler"}})
            return
        buffer = io.BytesIO()
        edited.save(buffer, format="PNG")
        data = {"b64_json": base64.b64encode(buffer.getvalue()).decode()}
        self._send(http, 200, {"created": 0, "data": [data]})

    @staticmethod
    def _check_image_edit(
        fields: dict[str, str], image_bytes: bytes, mask_bytes: bytes | None
    ) -> tuple[Image.Image, Image.Image]:
        """The decoded image and mask, after the checks the real API makes (ValueError names the rule)."""
        if not fields.get("prompt"):
            raise ValueError("'prompt' is required")
        if mask_bytes is None:
            raise ValueError("this server needs a 'mask' file")
        images = []
        for what, data in (("image", image_bytes), ("mask", mask_bytes)):
            if not data.startswith(b"\x89PNG\r\n\x1a\n"):
                raise ValueError(f"'{what}' must be a PNG file")
            with Image.open(io.BytesIO(data)) as decoded:
                decoded.load()
                images.append(decoded.copy())
        image, mask = images
        if image.size != mask.size:
            raise ValueError(f"image {image.size} and mask {mask.size} must have the same size")
        model = fields.get("model", "gpt-image-1")
        allowed = DALL_E_2_SIZES if model.startswith("dall-e-2") else GPT_IMAGE_SIZES
        if image.size not in allowed:
            raise ValueError(f"size {image.size[0]}x{image.size[1]} is not supported by {model}")
        if "A" not in mask.getbands():
            raise ValueError("the mask must have an alpha channel (transparent where to edit)")
        size = fields.get("size")
        if size not in (None, "auto", f"{image.size[0]}x{image.size[1]}"):
            raise ValueError(f"size {size!r} does not match the image {image.size[0]}x{image.size[1]}")
        return image.convert("RGB"), mask.convert("RGBA")

    def _completion(self, body: dict[str, Any], content: str, finish_reason: str = "stop") -> dict[str, Any]:
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
                    "finish_reason": finish_reason,
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
