"""Servers that misbehave: every failure is a typed error naming the server, in bounded time, without the token.

A stand-in on 127.0.0.1 (``support.bad_http``) answers the Label Studio client and the OpenAI provider
with redirect loops, lying encodings, answers of the wrong shape, bodies nested 100,000 deep, bodies
that are not JSON or not a chat completion, a ``Retry-After`` of an hour or of 2099, the token echoed
back, and a body dripped one byte at a time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.bad_http import BadServer, Reply, Request

from segbench.annotation_ui.client import LabelStudioClient
from segbench.core.errors import ProviderError, ServiceError
from segbench.providers.base import Question
from segbench.providers.openai_provider import OpenAIProvider
from segbench.schemas.vocab import RelationAnswer

pytestmark = pytest.mark.integration

TOKEN = "ls-token-SECRET-0123456789abcdef"
KEY = "sk-test-SECRET-0123456789abcdef"


def _always(reply: Reply) -> Callable[[Request], Reply]:
    return lambda _request: reply


def _export(client: LabelStudioClient) -> Any:
    return client.export(1)


def _create(client: LabelStudioClient) -> Any:
    return client.create_project("a round", "<View></View>")


def _import(client: LabelStudioClient) -> Any:
    return client.import_tasks(1, [{"data": {"item_id": "1"}}])


DEEP = b"[" * 100_000 + b"]" * 100_000
LABEL_STUDIO_CASES = {
    "redirect loop": (Reply(302, headers={"Location": "/again"}), _export, "redirected"),
    "gzip header on a plain body": (Reply(200, b"[]", {"Content-Type": "application/json", "Content-Encoding": "gzip"}),
                                    _export, "does not decode"),
    "project created without an id": (Reply(201, b"{}"), _create, "no project id"),
    "task ids that are not numbers": (Reply(201, b'{"task_ids": ["x"], "task_count": 1}'), _import,
                                      "task ids that are not numbers"),
    "tasks that are not objects": (Reply(200, b"[1, 2]"), _export, "task #0 is not an object"),
    "annotations that are not objects": (Reply(200, b'[{"id": 1, "data": {}, "annotations": [7]}]'), _export,
                                         "annotations that are not a list of objects"),
    "a task without data": (Reply(200, b'[{"id": 1, "data": "x"}]'), _export, "data that is not an object"),
    "an export nested 100,000 deep": (Reply(200, DEEP), _export, "not JSON"),
    "an error echoing the token": (Reply(500, json.dumps({"detail": f"bad Authorization: Token {TOKEN}"}).encode()),
                                   _export, "***"),
    "a body dripped a byte a second": (Reply(200, b"[" + b" " * 60 + b"]", drip=1.0), _export, "in time"),
}


@pytest.mark.parametrize("case", sorted(LABEL_STUDIO_CASES))
def test_a_misbehaving_label_studio_is_a_service_error(case):
    reply, call, expected = LABEL_STUDIO_CASES[case]
    with BadServer(_always(reply)) as server:
        client = LabelStudioClient(server.url, TOKEN, timeout=2, deadline=4)
        start = time.monotonic()
        with pytest.raises(ServiceError) as caught:
            call(client)
        elapsed = time.monotonic() - start
    message = str(caught.value)
    assert expected in message and server.url in message
    assert TOKEN not in message and TOKEN not in repr(caught.value.__cause__ or "")
    assert elapsed < 10, f"{case}: took {elapsed:.1f} s"


def _question() -> Question:
    return Question(kind="vocab.relations", version="1", inputs={"category": "dog"}, system="Judge nouns.",
                    user="dog: puppy?")


def _provider(server: BadServer, **options: Any) -> OpenAIProvider:
    return OpenAIProvider("test-model", base_url=server.url + "/v1", api_key=KEY,
                          **{"max_retries": 1, "timeout": 2, "backoff_base": 0.01, **options})


OPENAI_CASES = {
    "JSON cut off": (Reply(200, b'{"id": "c1", "choices": [{"message"'), "not valid JSON"),
    "an HTML page": (Reply(200, b"<html><body>Sign in</body></html>", {"Content-Type": "text/html"}),
                     "not what the API returns"),
    "an event stream": (Reply(200, b'data: {"id": "c1"}\n\n', {"Content-Type": "text/event-stream"}),
                        "not what the API returns"),
    "Retry-After of an hour": (Reply(429, b'{"error": {"message": "slow down"}}',
                                     {"Content-Type": "application/json", "Retry-After": "3600"}), "3600 s"),
    "Retry-After in 2099": (Reply(429, b'{"error": {"message": "slow down"}}',
                                  {"Content-Type": "application/json",
                                   "Retry-After": "Thu, 01 Jan 2099 00:00:00 GMT"}), "more than the 120 s"),
    "an error echoing the key": (Reply(400, json.dumps({"error": {"message": f"bad key {KEY}"}}).encode()), "***"),
    "a body dripped a byte a second": (Reply(200, b"{" + b" " * 60 + b"}", drip=1.0), "timed out"),
}


@pytest.mark.parametrize("case", sorted(OPENAI_CASES))
def test_a_misbehaving_openai_server_is_a_provider_error(case):
    reply, expected = OPENAI_CASES[case]
    with BadServer(_always(reply)) as server:
        provider = _provider(server)
        start = time.monotonic()
        with pytest.raises(ProviderError) as caught:
            provider.answer(_question(), RelationAnswer)
        elapsed = time.monotonic() - start
    message = str(caught.value)
    assert expected in message, message
    assert KEY not in message and "test-model" in message
    assert elapsed < 12, f"{case}: took {elapsed:.1f} s"  # 2 attempts of at most 2 s each, no long waits


HUB_TOKEN = "hf_SECRET_0123456789abcdef"
HUB_CASES = {
    "redirect loop": (Reply(302, headers={"Location": "/again"}), "redirect"),
    "gzip header on a plain body": (Reply(200, b"{}", {"Content-Type": "application/json", "Content-Encoding": "gzip"}),
                                    "cannot push"),
    "a repository created without a url": (Reply(200, b"{}"), "unexpected shape"),
    "JSON cut off": (Reply(200, b'{"url": "ht'), "cannot push"),
    "an HTML page": (Reply(200, b"<html><body>Sign in</body></html>", {"Content-Type": "text/html"}), "cannot push"),
    "Retry-After of an hour": (Reply(429, b'{"error": "slow down"}', {"Content-Type": "application/json",
                                                                     "Retry-After": "3600"}), "cannot push"),
    "an error echoing the token": (Reply(403, json.dumps({"error": f"bad token Bearer {HUB_TOKEN}"}).encode()), "***"),
    "a body dripped a byte a second": (Reply(200, b"{" + b" " * 60 + b"}", drip=1.0), "cannot push"),
}


@pytest.mark.parametrize("case", sorted(HUB_CASES))
def test_a_misbehaving_hub_is_a_hub_error(case, tmp_path, monkeypatch):
    from pydantic import SecretStr

    from segbench.providers import hub

    monkeypatch.setattr(hub, "CALL_SECONDS", 3.0)  # a drip is cut by the deadline, not by a read timeout
    monkeypatch.setattr(hub, "READ_TIMEOUT", 2.0)
    monkeypatch.setattr(hub, "RETRY_PAUSES", (0.1, 0.1))
    (tmp_path / "release").mkdir()
    (tmp_path / "release" / "README.md").write_text("# a release\n")
    reply, expected = HUB_CASES[case]
    with BadServer(_always(reply)) as server:
        start = time.monotonic()
        with pytest.raises(hub.HubError) as caught:
            hub.push_folder(tmp_path / "release", "org/data", tag="v1", endpoint=server.url,
                            token=SecretStr(HUB_TOKEN))
        elapsed = time.monotonic() - start
    message = str(caught.value)
    assert expected in message and "org/data" in message, message
    assert HUB_TOKEN not in message
    assert elapsed < hub.push_deadline(tmp_path / "release") + 3, f"{case}: took {elapsed:.1f} s"


def test_a_push_retries_a_failing_hub_within_one_deadline(tmp_path, monkeypatch):
    """A 5xx may pass: the push asks again after each pause, and a dripping Hub, retried, still ends by the
    push's one deadline (a retry gets what is left of it, not a deadline of its own)."""
    from segbench.providers import hub

    monkeypatch.setattr(hub, "CALL_SECONDS", 3.0)
    monkeypatch.setattr(hub, "READ_TIMEOUT", 2.0)
    monkeypatch.setattr(hub, "RETRY_PAUSES", (0.1, 0.1))
    (tmp_path / "release").mkdir()
    (tmp_path / "release" / "README.md").write_text("# a release\n")
    with BadServer(_always(Reply(503, b'{"error": "busy"}'))) as server:
        with pytest.raises(hub.HubError, match="503"):
            hub.push_folder(tmp_path / "release", "org/data", tag="v1", endpoint=server.url)
        creates = [r for r in server.requests if r.method == "POST" and r.path.endswith("/repos/create")]
    assert len(creates) >= 3, [r.path for r in server.requests]  # the first attempt and two more (each may retry)

    limit = hub.push_deadline(tmp_path / "release")
    with BadServer(_always(Reply(500, b"{" + b" " * 600 + b"}", drip=0.5))) as server:
        start = time.monotonic()
        with pytest.raises(hub.HubError):
            hub.push_folder(tmp_path / "release", "org/data", tag="v1", endpoint=server.url)
        elapsed = time.monotonic() - start
    assert limit - 4 < elapsed < limit + 4, f"{elapsed:.1f} s for a deadline of {limit:.1f} s"
