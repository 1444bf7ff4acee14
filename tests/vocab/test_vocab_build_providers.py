"""`build vocab` with the real providers: offline on the demo world (WordNet), then the same flow
against a local OpenAI-compatible server; a second run replays every answer from the cache."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from segbench.core.errors import ProviderError
from segbench.core.io import read_json
from segbench.demo.vocab.captions import generate_demo_captions
from segbench.demo.world import generate_demo_world
from segbench.providers import make_provider
from segbench.schemas.vocab import VocabParams
from segbench.settings import load_settings

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SIZES = {"cat/indoor": 6, "cat/outdoor": 4, "dog/indoor": 4, "dog/outdoor": 6}
PARAMS = VocabParams(min_count=1, workers=1)
KEY = "sk-test-0123456789abcdefghijklmnop"


@pytest.fixture(scope="module")
def captions(tmp_path_factory) -> list[Path]:
    world = tmp_path_factory.mktemp("world")
    generate_demo_world(world, seed=6, group_sizes=SIZES)
    return generate_demo_captions(world, seed=6)


def build(captions: list[Path], out: Path, provider, nltk_data: Path) -> dict:
    from segbench.flows.vocab.build import build_vocab

    return build_vocab(captions, "coco_cd", out, provider, PARAMS, nltk_data=nltk_data)


def test_offline_build_then_a_rebuild_makes_no_provider_call(captions, tmp_path):
    settings = load_settings(data_root=tmp_path / "data", work_dir=tmp_path / "wd")
    nltk_data = settings.work_dir / "nltk_data"
    first = build(captions, tmp_path / "a", make_provider(settings), nltk_data)
    assert first.usage.calls > 0
    vocab = read_json(tmp_path / "a" / "coco_cd.json")
    assert set(vocab) == {"cat", "dog"} and "cat" in vocab["cat"]["exact"]
    assert {"exact", "synonyms", "hyponyms", "meronyms", "id", "isthing"} == set(vocab["dog"])
    assert "puppy" in vocab["dog"]["hyponyms"] + vocab["dog"]["synonyms"]

    replay = make_provider(settings, replay_only=True)  # a miss would raise
    second = build(captions, tmp_path / "b", replay, nltk_data)
    assert second.usage.calls == 0 and second.usage.cache_hits > 0
    for name in ("coco_cd.json", "candidates.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def _judge(body: dict) -> dict:
    """A stand-in language model: nouns containing the category are hyponyms, the rest none."""
    text = body["messages"][-1]["content"]
    category = re.search(r"Category: (.+)", text).group(1).strip()
    nouns = re.findall(r"^- (.+)$", text, flags=re.MULTILINE)
    return {"category": category, "judgements": [
        {"noun": n, "relation": "exact" if n == category else "hyponym" if category in n else "none"} for n in nouns]}


def test_openai_backend_gives_the_same_format_and_replays(captions, tmp_path, openai_server, monkeypatch):
    openai_server.handler = _judge
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    settings = load_settings(data_root=tmp_path / "data", work_dir=tmp_path / "wd", provider="openai",
                             openai_base_url=openai_server.base_url, openai_model="test-model")
    nltk_data = tmp_path / "nltk"
    first = build(captions, tmp_path / "a", make_provider(settings), nltk_data)
    calls = openai_server.count
    assert calls == first.usage.calls > 0 and first.usage.prompt_tokens > 0
    vocab = read_json(tmp_path / "a" / "coco_cd.json")
    assert vocab["cat"]["exact"] == ["cat"] and set(vocab["cat"]) == {"exact", "synonyms", "hyponyms", "meronyms", "id", "isthing"}
    manifest = read_json(tmp_path / "a" / "manifest.json")
    assert manifest["params"]["provider"] == "openai" and manifest["params"]["provider_model"] == "test-model"

    second = build(captions, tmp_path / "b", make_provider(settings), nltk_data)
    assert openai_server.count == calls and second.usage.calls == 0
    assert (tmp_path / "a" / "coco_cd.json").read_bytes() == (tmp_path / "b" / "coco_cd.json").read_bytes()
    for path in (settings.cache_dir / "llm").rglob("*.json"):
        assert KEY not in path.read_text()
    for path in (tmp_path / "a").rglob("*"):
        assert not path.is_file() or KEY not in path.read_text(errors="ignore")

    other = load_settings(data_root=tmp_path / "other", work_dir=tmp_path / "wd", provider="openai",
                          openai_base_url=openai_server.base_url, openai_model="test-model")
    with pytest.raises(ProviderError, match="vocab.relations"):  # replay-only with an empty cache
        build(captions, tmp_path / "c", make_provider(other, replay_only=True), nltk_data)


def test_a_models_nonsense_is_skipped_with_its_reason_and_the_judge_compared(captions, tmp_path, openai_server):
    """A stand-in model that calls every candidate an exact name of the category: another category's name
    and names WordNet does not know are skipped, the report says so, and nothing of it reaches the vocabulary."""
    def everything_exact(body: dict) -> dict:
        text = body["messages"][-1]["content"]
        category = re.search(r"Category: (.+)", text).group(1).strip()
        return {"category": category, "judgements": [{"noun": n, "relation": "exact"}
                                                     for n in re.findall(r"^- (.+)$", text, flags=re.MULTILINE)]}

    openai_server.handler = everything_exact
    settings = load_settings(data_root=tmp_path / "data", work_dir=tmp_path / "wd", provider="openai",
                             openai_base_url=openai_server.base_url, openai_model="test-model")
    build(captions, tmp_path / "a", make_provider(settings), tmp_path / "nltk")
    quality = read_json(tmp_path / "a" / "judge_quality.json")
    reasons = {(s["category"], s["noun"]): s["reason"] for s in quality["skipped"]}
    assert reasons[("cat", "dog")] == "'dog' is the name of another category (dog)"
    assert quality["suspect"] == [f"every one of the {quality['judged']} candidates was judged 'exact'"]
    assert quality["wordnet"]["compared"] == quality["judged"] and quality["wordnet"]["rate"] < 0.5
    vocab = read_json(tmp_path / "a" / "coco_cd.json")
    assert "dog" not in vocab["cat"]["exact"] and "cat" not in vocab["dog"]["exact"]
    # The exact names kept beside the categories' own are those WordNet calls exact or a synonym too.
    agreed_names = sum(quality["wordnet"]["confusion"]["exact"].get(r, 0) for r in ("exact", "synonym"))
    assert len(vocab["cat"]["exact"]) + len(vocab["dog"]["exact"]) - 2 == agreed_names
