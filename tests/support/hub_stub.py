"""A loopback stand-in for the Hugging Face Hub's HTTP API that records what it receives.

It answers what ``huggingface_hub`` asks when it pushes a folder: create the repository, the
pre-upload check (every file goes inline, as a "regular" upload), the commit (NDJSON: a header,
then one line per file with its base64 content) and the tag. Every file a commit carried is kept
in ``files`` (path → bytes), every tag in ``tags``.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class HubStub:
    def __init__(self, token: str = "hf_test_token") -> None:
        self.token = token
        self.files: dict[str, bytes] = {}
        self.tags: list[str] = []
        self.repos: list[str] = []
        self.requests: list[tuple[str, str]] = []
        self.card_headers: list[str] = []
        self.unauthorised = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _json(self, status: int, payload: object) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_GET(self) -> None:  # noqa: N802
                stub.requests.append(("GET", self.path))
                self._json(404, {"error": "not found"})

            def do_POST(self) -> None:  # noqa: N802
                stub.requests.append(("POST", self.path))
                body = self._body()
                if self.headers.get("Authorization") != f"Bearer {stub.token}":
                    stub.unauthorised += 1
                    return self._json(401, {"error": "Invalid credentials"})
                if self.path == "/api/repos/create":
                    data = json.loads(body)
                    name = f"{data.get('organization') or ''}/{data['name']}".strip("/")
                    stub.repos.append(name)
                    return self._json(200, {"url": f"http://{self.headers['Host']}/datasets/{name}"})
                if self.path == "/api/validate-yaml":  # the card's header, checked before the commit
                    stub.card_headers.append(json.loads(body)["content"])
                    return self._json(200, {"errors": [], "warnings": []})
                if match := re.fullmatch(r"/api/datasets/(.+)/preupload/(.+)", self.path):
                    files = json.loads(body)["files"]
                    return self._json(200, {"files": [{"path": f["path"], "uploadMode": "regular",
                                                       "shouldIgnore": False} for f in files]})
                if match := re.fullmatch(r"/api/datasets/(.+)/commit/(.+)", self.path):
                    for line in body.decode().splitlines():
                        item = json.loads(line)
                        if item["key"] == "file":
                            stub.files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
                    return self._json(200, {"commitUrl": f"{stub.url}/datasets/{match[1]}/commit/{'a' * 40}", "commitOid": "a" * 40,
                                            "pullRequestUrl": None})
                if match := re.fullmatch(r"/api/datasets/(.+)/tag/(.+)", self.path):
                    stub.tags.append(json.loads(body)["tag"])
                    return self._json(200, {})
                return self._json(404, {"error": f"no route {self.path}"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HubStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
