"""The OpenAI provider against a local OpenAI-compatible server: answers, retries, re-asks,
bounded concurrency, usage, and that the API key never leaks into errors, logs or the cache."""

from __future__ import annotations

import concurrent.futures
import json
import logging
import socket
import time
from typing import Any

import pytest
from support.openai_server import last_user_message, response_schema

from segbench.core.errors import AnswerRejected, ProviderError
from segbench.providers import answer_limits, make_provider
from segbench.providers.base import Question
from segbench.providers.cache import CachedProvider, answers_or_rejections
from segbench.providers.openai_provider import OpenAIProvider
from segbench.schemas.vocab import RelationAnswer
from segbench.settings import Settings

pytestmark = pytest.mark.integration

SECRET = "sk-test-SECRET-abcdef0123456789"


def ask(category: str, candidates: tuple[str, ...] = ("dog", "puppy")) -> Question:
    inputs = {"category": category, "candidates": list(candidates)}
    return Question(
        kind="vocab.relations",
        version="1",
        inputs=inputs,
        system="You judge how nouns relate to a category.",
        user=json.dumps(inputs),
    )


def relate(body: dict) -> dict:
    """The test model: parses the question's inputs from the first user message."""
    inputs = json.loads(next(m for m in body["messages"] if m["role"] == "user")["content"])
    judgements = [{"noun": n, "relation": "exact" if n == inputs["category"] else "none"} for n in inputs["candidates"]]
    return {"category": inputs["category"], "judgements": judgements}


@pytest.fixture
def server(openai_server):
    openai_server.handler = relate
    return openai_server


def provider_for(server, **kwargs) -> OpenAIProvider:
    options = {"api_key": SECRET, "backoff_base": 0.01, "timeout": 5, **kwargs}
    return OpenAIProvider("test-model", base_url=server.base_url, **options)


def test_valid_answer_and_usage(server):
    provider = provider_for(server, price_per_1k=(0.5, 2.0))
    answer = provider.answer(ask("dog"), RelationAnswer)
    assert answer.category == "dog"
    assert {j.noun: j.relation for j in answer.judgements} == {"dog": "exact", "puppy": "none"}
    (request,) = server.requests
    assert request.body["model"] == "test-model"
    fmt = request.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert response_schema(request.body)["additionalProperties"] is False
    assert request.headers["Authorization"] == f"Bearer {SECRET}"  # sent to the server, and only there
    usage = provider.usage
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 20, 10)
    assert usage.cost_usd == pytest.approx(20 / 1000 * 0.5 + 10 / 1000 * 2.0)
    assert (usage.retries, usage.reasks) == (0, 0)


def test_rate_limit_honours_retry_after(server):
    server.fail_next(1, 429, retry_after=0.4)
    provider = provider_for(server)
    start = time.monotonic()
    assert provider.answer(ask("dog"), RelationAnswer).category == "dog"
    assert time.monotonic() - start >= 0.4
    assert server.count == 2
    assert provider.usage.retries == 1 and provider.usage.calls == 1


def test_a_noticeable_wait_before_a_retry_is_shown_as_a_step(server, monkeypatch):
    from segbench import progress
    from segbench.providers import openai_provider

    shown: list[str] = []

    class Listener:
        def start(self, description, total):
            shown.append(description)

        def advance(self, handle, amount=1):
            pass

        def finish(self, handle, completed=True):
            pass

    monkeypatch.setattr(openai_provider, "NOTICEABLE_WAIT", 0.2)
    server.fail_next(1, 429, retry_after=0.3)
    with progress.listening(Listener()):
        assert provider_for(server).answer(ask("dog"), RelationAnswer).category == "dog"
    assert len(shown) == 1 and "HTTP 429" in shown[0] and "waiting 0 s before retry 1/4" in shown[0]
    assert SECRET not in shown[0]


def test_server_errors_are_retried(server):
    server.fail_next(2, 500)
    provider = provider_for(server)
    assert provider.answer(ask("dog"), RelationAnswer).category == "dog"
    assert server.count == 3 and provider.usage.retries == 2


def test_retries_run_out(server):
    server.fail_next(10, 503)
    provider = provider_for(server, max_retries=2)
    with pytest.raises(ProviderError, match="gave up after 3 attempts") as info:
        provider.answer(ask("dog"), RelationAnswer)
    assert server.count == 3
    message = str(info.value)
    assert "test-model" in message and server.base_url in message and "vocab.relations" in message


def test_client_errors_are_not_retried(server):
    server.fail_next(1, 401)
    provider = provider_for(server)
    with pytest.raises(ProviderError, match="HTTP 401") as info:
        provider.answer(ask("dog"), RelationAnswer)
    assert server.count == 1 and "API key" in info.value.hint


def test_timeouts_and_refused_connections_are_retried(server):
    server.latency = 1.0
    provider = provider_for(server, timeout=0.2, max_retries=1)
    with pytest.raises(ProviderError, match="timed out"):
        provider.answer(ask("dog"), RelationAnswer)
    assert provider.usage.retries == 1
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    closed = OpenAIProvider("test-model", base_url=f"http://127.0.0.1:{port}/v1", api_key=SECRET, max_retries=1,
                            backoff_base=0.01)  # fmt: skip
    with pytest.raises(ProviderError, match="connection failed"):
        closed.answer(ask("dog"), RelationAnswer)
    assert closed.usage.retries == 1


def test_invalid_answer_is_reasked_once(server):
    server.invalid_next(1)
    provider = provider_for(server)
    assert provider.answer(ask("dog"), RelationAnswer).category == "dog"
    assert server.count == 2 and provider.usage.reasks == 1 and provider.usage.calls == 2
    second = server.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == '{"category": "dog", "judgements": ['  # the model sees its answer
    assert "could not be used" in last_user_message(server.requests[1].body)  # and what was wrong


def test_each_request_carries_a_token_cap_read_from_its_schema_and_bounds_its_lists(server):
    provider = provider_for(server)
    question = ask("dog").model_copy(update={"max_items": 2})
    assert provider.answer(question, RelationAnswer).category == "dog"
    sent = server.requests[0].body
    schema = response_schema(sent)
    assert schema["properties"]["judgements"]["maxItems"] == 2
    assert sent["max_tokens"] == answer_limits.token_cap(schema, 2, 1.5)  # a compatible server reads max_tokens
    assert "max_completion_tokens" not in sent
    provider_for(server, token_margin=0).answer(ask("dog"), RelationAnswer)  # 0: no cap at all
    assert "max_tokens" not in server.requests[1].body
    assert "maxItems" not in json.dumps(response_schema(server.requests[1].body))  # no bound asked, none sent


def test_an_answer_cut_off_at_its_cap_is_rejected_at_once(server, tmp_path):
    server.invalid_next(1, '{"category": "dog", "judgements": [{"noun": "dog", "relation": "exact"}, {"noun": "d',
                        finish_reason="length")
    cached = CachedProvider(provider_for(server), tmp_path / "llm")
    with pytest.raises(AnswerRejected, match="cut off at the token limit") as info:
        cached.answer(ask("dog"), RelationAnswer)
    assert server.count == 1  # a looping model is not asked again under the same cap
    assert "openai_token_margin" in (info.value.hint or "")


def test_a_build_skips_the_questions_a_model_never_answers_usably_and_fails_on_a_broken_server(server, tmp_path):
    cached = CachedProvider(provider_for(server, concurrency=1), tmp_path / "llm")  # one at a time
    server.invalid_next(2, '{"category": "dog", "judgements": [{"noun": "dog", "relation": "same"}]}')
    outcomes = answers_or_rejections(cached, [ask("dog"), ask("cat")], RelationAnswer)
    assert isinstance(outcomes[0], AnswerRejected) and "after one re-ask" in outcomes[0].message
    assert isinstance(outcomes[1], RelationAnswer) and outcomes[1].category == "cat"
    server.fail_next(1, status=400)  # the request itself refused: no skip, the build stops
    with pytest.raises(ProviderError, match="1 of 1 questions failed") as info:
        answers_or_rejections(cached, [ask("fish")], RelationAnswer)
    assert not isinstance(info.value, AnswerRejected)


def test_invalid_twice_fails_and_is_not_cached(server, tmp_path):
    server.invalid_next(2, '{"category": "dog", "judgements": [{"noun": "dog", "relation": "same"}]}')
    cached = CachedProvider(provider_for(server), tmp_path / "llm")
    with pytest.raises(ProviderError, match="after one re-ask") as info:
        cached.answer(ask("dog"), RelationAnswer)
    assert "judgements.0.relation" in info.value.message
    assert server.count == 2
    assert not list(tmp_path.rglob("*.json"))
    assert cached.answer(ask("dog"), RelationAnswer).category == "dog"  # asked again, then cached
    assert len(list(tmp_path.rglob("*.json"))) == 1


@pytest.mark.parametrize("through_cache", [False, True])
def test_bounded_concurrency(server, tmp_path, through_cache):
    server.latency = 0.3
    provider = provider_for(server, concurrency=3)
    target = CachedProvider(provider, tmp_path) if through_cache else provider
    questions = [ask(f"category{i}") for i in range(7)]
    start = time.monotonic()
    answers = target.answer_many(questions, RelationAnswer)
    elapsed = time.monotonic() - start
    assert [a.category for a in answers] == [q.inputs["category"] for q in questions]
    assert server.max_in_flight == 3
    # ceil(7 / 3) = 3 rounds of 0.3 s; sequential would take 2.1 s. Loose bounds, slow machines.
    assert 0.85 <= elapsed < 1.9
    assert provider.usage.calls == 7


def test_a_request_waiting_for_its_slot_is_not_timed_out_and_a_stalled_server_stops_the_rest(server):
    """Several callers share one slot (a one-slot local server): the deadline of a request starts when it may
    be sent. Then two timeouts in a row mark the server stalled: no further request is sent."""
    server.latency = 0.6
    provider = provider_for(server, concurrency=1, timeout=1.0)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as callers:  # as several task runs of a flow
        answers = list(callers.map(lambda i: provider.answer(ask(f"category{i}"), RelationAnswer), range(4)))
    assert [a.category for a in answers] == [f"category{i}" for i in range(4)]  # 4 × 0.6 s queued, none timed out

    server.latency = 3.0
    stalled = provider_for(server, concurrency=1, timeout=0.5, max_retries=4)
    before = server.count
    with pytest.raises(ProviderError, match="2 requests in a row"):
        stalled.answer(ask("dog"), RelationAnswer)
    with pytest.raises(ProviderError, match="not asked"):
        stalled.answer(ask("cat"), RelationAnswer)
    assert server.count - before == 2


def test_answer_many_reports_failures_after_trying_all(server):
    server.fail_next(1, 400)
    provider = provider_for(server, concurrency=1)
    with pytest.raises(ProviderError, match="1 of 3 questions failed"):
        provider.answer_many([ask("a"), ask("b"), ask("c")], RelationAnswer)
    assert server.count == 3


def test_the_key_never_leaks(server, tmp_path, caplog):
    for name in (None, "openai", "httpx", "httpcore", "segbench"):  # the client libraries log requests
        caplog.set_level(logging.DEBUG, logger=name)
    cached = CachedProvider(provider_for(server, max_retries=1), tmp_path / "llm")
    server.fail_next(1, 429, retry_after=0)
    server.invalid_next(1)
    cached.answer_many([ask("dog"), ask("cat")], RelationAnswer)
    errors = []
    for inject in (lambda: server.fail_next(2, 500), lambda: server.invalid_next(2), lambda: server.fail_next(1, 401)):
        inject()
        with pytest.raises(ProviderError) as info:
            cached.answer(ask(f"bird{len(errors)}"), RelationAnswer)
        errors.append(info.value)
    assert server.requests and all(r.headers["Authorization"].endswith(SECRET) for r in server.requests)
    assert all(SECRET not in str(e) and SECRET not in repr(e.__cause__) for e in errors)
    assert "Request options" in caplog.text  # the openai client's debug log was captured
    assert SECRET not in caplog.text and "retry 1/1" in caplog.text
    assert SECRET not in repr(cached)
    files = [p for p in (tmp_path / "llm").rglob("*") if p.is_file()]
    assert len(files) == 2 and all(SECRET not in p.read_text() for p in files)


def test_the_key_stays_out_of_prefect_parameters(tmp_path):
    # Flows take the provider as a parameter, and Prefect stores flow parameters in its database.
    from prefect import flow

    @flow
    def uses(provider: Any) -> None: ...

    provider = CachedProvider(OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", api_key=SECRET), tmp_path)
    stored = uses.serialize_parameters({"provider": provider, "inner": provider.inner})
    assert SECRET not in json.dumps(stored, default=str)


def test_key_echoed_by_server_is_masked(server):
    def echo(body):
        raise RuntimeError(f"bad key {SECRET}")  # the test server reports it as a 500

    server.handler = echo
    provider = provider_for(server, max_retries=0)
    with pytest.raises(ProviderError) as info:
        provider.answer(ask("dog"), RelationAnswer)
    assert SECRET not in str(info.value) and "***" in str(info.value)


def test_make_provider_openai(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    settings = Settings(
        provider="openai", openai_base_url=server.base_url, openai_model="local-model",
        work_dir=tmp_path / "work", cache_dir=tmp_path / "cache",
    )  # fmt: skip
    provider = make_provider(settings)
    assert isinstance(provider, CachedProvider) and provider.name == "openai" and provider.model == "local-model"
    assert provider.answer(ask("dog"), RelationAnswer).category == "dog"
    assert server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert len(list((tmp_path / "cache" / "llm").rglob("*.json"))) == 1
    replay = make_provider(settings, replay_only=True)
    assert replay.answer(ask("dog"), RelationAnswer).category == "dog" and server.count == 1
