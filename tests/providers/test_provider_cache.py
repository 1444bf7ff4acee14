"""The content-addressed answer cache: hits, misses, replay-only, failures, key material, secrets."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from segbench.core.errors import ProviderError
from segbench.providers.base import Question, Usage
from segbench.providers.cache import CachedProvider, cache_key
from segbench.schemas.vocab import RelationAnswer

SECRET = "sk-test-SECRET-0123456789"


class Score(BaseModel):
    value: float


class FakeProvider:
    """Answers every category with 'exact'; fails for categories listed in ``fail``."""

    name = "fake"

    def __init__(self, model: str = "fake-1", *, fail: Sequence[str] = (), concurrency: int = 1) -> None:
        self.model = model
        self.api_key = SECRET  # must never reach the cache
        self.params = {"temperature": 0}
        self.concurrency = concurrency
        self.fail = set(fail)
        self.asked: list[str] = []
        self._lock = threading.Lock()

    @property
    def usage(self) -> Usage:
        return Usage(calls=len(self.asked))

    def answer(self, question, schema):
        category = question.inputs["category"]
        with self._lock:
            self.asked.append(category)
        if category in self.fail:
            raise ProviderError("injected failure", item=question.kind)
        if schema is Score:
            return Score(value=1 / 3)
        nouns = question.inputs["candidates"]
        return schema(category=category, judgements=[{"noun": n, "relation": "exact"} for n in nouns])

    def answer_many(self, questions, schema):
        return [self.answer(q, schema) for q in questions]


def ask(category: str, *, version: str = "1", user: str = "Relate the nouns.") -> Question:
    return Question(
        kind="vocab.relations",
        version=version,
        inputs={"category": category, "candidates": [category]},
        system="You judge noun relations.",
        user=user,
    )


def test_miss_then_hit(tmp_path):
    inner = FakeProvider()
    cached = CachedProvider(inner, tmp_path)
    first = cached.answer(ask("dog"), RelationAnswer)
    second = cached.answer(ask("dog"), RelationAnswer)
    assert first == second
    assert inner.asked == ["dog"]
    assert cached.usage.calls == 1 and cached.usage.cache_hits == 1
    key = cache_key(inner, ask("dog"), RelationAnswer)
    path = tmp_path / key[:2] / f"{key}.json"
    record = json.loads(path.read_text())
    assert record["key"] == key
    assert record["material"]["kind"] == "vocab.relations" and record["material"]["model"] == "fake-1"
    assert record["answer"]["category"] == "dog"
    # A new provider object over the same folder replays without asking.
    again = FakeProvider()
    assert CachedProvider(again, tmp_path).answer(ask("dog"), RelationAnswer) == first
    assert again.asked == []


def test_answer_many_order_hits_and_duplicates(tmp_path):
    inner = FakeProvider(concurrency=3)
    cached = CachedProvider(inner, tmp_path)
    cached.answer(ask("cat"), RelationAnswer)
    questions = [ask(c) for c in ("dog", "cat", "bird", "dog", "fish")]
    answers = cached.answer_many(questions, RelationAnswer)
    assert [a.category for a in answers] == ["dog", "cat", "bird", "dog", "fish"]
    assert sorted(inner.asked) == ["bird", "cat", "dog", "fish"]  # cat once (first call), dog once
    assert cached.usage.cache_hits == 1


def test_replay_only_miss_names_the_kind(tmp_path):
    CachedProvider(FakeProvider(), tmp_path).answer(ask("dog"), RelationAnswer)
    inner = FakeProvider()
    replay = CachedProvider(inner, tmp_path, replay_only=True)
    assert replay.answer(ask("dog"), RelationAnswer).category == "dog"
    with pytest.raises(ProviderError, match="replay-only") as info:
        replay.answer(ask("cat"), RelationAnswer)
    assert info.value.item == "vocab.relations"
    with pytest.raises(ProviderError, match="replay-only"):
        replay.answer_many([ask("dog"), ask("cat")], RelationAnswer)
    assert inner.asked == []


def test_failures_are_not_cached_and_the_rest_are(tmp_path):
    inner = FakeProvider(fail={"cat"}, concurrency=2)
    cached = CachedProvider(inner, tmp_path)
    with pytest.raises(ProviderError, match="1 of 3 questions failed"):
        cached.answer_many([ask("dog"), ask("cat"), ask("bird")], RelationAnswer)
    files = sorted(p.name for p in tmp_path.rglob("*.json"))
    assert len(files) == 2
    with pytest.raises(ProviderError):
        cached.answer(ask("cat"), RelationAnswer)
    assert len(list(tmp_path.rglob("*.json"))) == 2
    inner.fail.clear()
    inner.asked.clear()
    cached.answer_many([ask("dog"), ask("cat"), ask("bird")], RelationAnswer)
    assert inner.asked == ["cat"]  # the others were kept from the failed batch


def test_key_changes_with_what_determines_the_answer():
    base = cache_key(FakeProvider(), ask("dog"), RelationAnswer)
    assert cache_key(FakeProvider(), ask("dog"), RelationAnswer) == base
    other_params = FakeProvider()
    other_params.params = {"temperature": 1}
    assert (
        len(
            {
                base,
                cache_key(FakeProvider("fake-2"), ask("dog"), RelationAnswer),
                cache_key(FakeProvider(), ask("dog", version="2"), RelationAnswer),
                cache_key(FakeProvider(), ask("dog", user="Relate these nouns."), RelationAnswer),
                cache_key(FakeProvider(), ask("cat"), RelationAnswer),
                cache_key(FakeProvider(), ask("dog"), Score),
                cache_key(other_params, ask("dog"), RelationAnswer),
            }
        )
        == 7
    )


def test_no_secrets_in_cache_files(tmp_path):
    CachedProvider(FakeProvider(), tmp_path).answer_many([ask("dog"), ask("cat")], RelationAnswer)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text()


def test_replayed_answer_equals_first_answer(tmp_path):
    # Canonical JSON rounds floats; the first run must see what a replay will see.
    first = CachedProvider(FakeProvider(), tmp_path).answer(ask("dog"), Score)
    replay = CachedProvider(FakeProvider(), tmp_path, replay_only=True).answer(ask("dog"), Score)
    assert first == replay and first.value == round(1 / 3, 6)


def test_damaged_entry_is_a_miss(tmp_path):
    inner = FakeProvider()
    cached = CachedProvider(inner, tmp_path)
    cached.answer(ask("dog"), RelationAnswer)
    (path,) = tmp_path.rglob("*.json")
    path.write_text("{ half")
    assert cached.answer(ask("dog"), RelationAnswer).category == "dog"
    assert inner.asked == ["dog", "dog"]
    assert json.loads(path.read_text())["answer"]["category"] == "dog"  # rewritten whole


def test_concurrent_answer_many_same_questions(tmp_path):
    inner = FakeProvider(concurrency=4)
    cached = CachedProvider(inner, tmp_path)
    questions = [ask(f"c{i % 5}") for i in range(20)]
    results: list[list[RelationAnswer]] = []
    threads = [
        threading.Thread(target=lambda: results.append(cached.answer_many(questions, RelationAnswer))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(r == results[0] for r in results)
    assert len(list(tmp_path.rglob("*.json"))) == 5
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_make_provider_offline_is_cached_wordnet(tmp_path):
    from segbench.providers import make_provider
    from segbench.settings import Settings

    provider = make_provider(Settings(work_dir=tmp_path / "work", cache_dir=tmp_path / "cache"))
    assert isinstance(provider, CachedProvider)
    assert (provider.name, provider.model) == ("wordnet", "wordnet-3.0")
    assert provider.cache_dir == tmp_path / "cache" / "llm"
    assert provider.inner.nltk_data == tmp_path / "work" / "nltk_data"


def test_make_provider_openai_needs_a_key_or_a_base_url(tmp_path, monkeypatch):
    from segbench.providers import make_provider
    from segbench.settings import Settings

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("SEGBENCH_OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("SEGBENCH_OPENAI_BASE_URL", raising=False)
    settings = Settings(provider="openai", work_dir=tmp_path, cache_dir=tmp_path / "cache")
    with pytest.raises(ProviderError, match="API key") as info:
        make_provider(settings)
    assert "OPENAI_API_KEY" in info.value.hint and "BASE_URL" in info.value.hint
    # A replay needs no model and so no key; the constructor makes no network call.
    assert make_provider(settings, replay_only=True).name == "openai"
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    provider = make_provider(settings)
    assert provider.model == "gpt-4o-mini" and SECRET not in repr(provider)
