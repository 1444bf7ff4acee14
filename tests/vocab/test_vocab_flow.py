"""The vocabulary flow end to end on the demo captions, with a fake language provider."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from segbench.core.io import read_json
from segbench.core.manifest import verify_outputs
from segbench.demo.vocab.captions import generate_demo_captions
from segbench.flows.vocab.build import build_vocab
from segbench.providers.base import Question, Usage
from segbench.schemas.vocab import RelationAnswer, RelationJudgement, VocabParams

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

RELATIONS = {("cat", "kitten"): "synonym", ("cat", "kitty"): "synonym", ("cat", "house cat"): "hyponym",
             ("cat", "tail"): "meronym", ("dog", "puppy"): "synonym", ("dog", "pup"): "synonym",
             ("dog", "golden retriever"): "hyponym", ("dog", "retriever"): "hyponym", ("dog", "terrier"): "hyponym",
             ("dog", "snout"): "meronym", ("dog", "tail"): "meronym"}


class FakeProvider:
    """A test double of a language model: answers from a fixed table, counts its calls."""

    name = "fake"
    model = "table-1"

    def __init__(self, relations: dict[tuple[str, str], str]):
        self.relations = relations
        self._usage = Usage()

    def answer(self, question: Question, schema: type[RelationAnswer]) -> RelationAnswer:
        category = question.inputs["category"]
        self._usage = self._usage.add(Usage(calls=1, prompt_tokens=len(question.user.split())))
        return schema(category=category, judgements=[
            RelationJudgement(noun=n, relation=self.relations.get((category, n), "none"))
            for n in question.inputs["candidates"]])

    def answer_many(self, questions: Sequence[Question], schema: type[RelationAnswer]) -> list[RelationAnswer]:
        return [self.answer(q, schema) for q in questions]

    @property
    def usage(self) -> Usage:
        return self._usage


@pytest.fixture(scope="module")
def captions(tmp_path_factory):
    return generate_demo_captions(tmp_path_factory.mktemp("world"), seed=0)


def _build(captions, out, nltk_data, **params):
    provider = FakeProvider(RELATIONS)
    summary = build_vocab(captions, "coco_cd", out, provider,
                          VocabParams(**{"workers": 1, "shard_size": 300, "question_batch": 10, **params}),
                          nltk_data=nltk_data)
    return summary, provider


def test_flow_writes_vocabulary_candidates_and_manifest(captions, tmp_path):
    out = tmp_path / "vocab"
    summary, provider = _build(captions, out, tmp_path / "nltk")
    vocab = read_json(out / "coco_cd.json")
    assert vocab["cat"] == {"exact": ["cat"], "synonyms": ["kitten", "kitty"], "hyponyms": ["house cat"],
                            "meronyms": ["tail"], "id": 0, "isthing": True}
    assert vocab["dog"]["synonyms"] == ["pup", "puppy"]
    assert {"retriever", "terrier"} <= set(vocab["dog"]["hyponyms"])
    assert vocab["dog"]["meronyms"] == ["tail"]  # "snout": WordNet ties it to no dog, so it ranks below top_k

    rows = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert {r["category"] for r in rows} == {"cat", "dog"}
    assert all(len([r for r in rows if r["category_id"] == c and r["source"] == "mined"]) <= 50 for c in (0, 1))
    assert {"noun", "count", "score", "contains", "source", "relation"} <= set(rows[0])

    manifest = read_json(out / "manifest.json")
    assert manifest["params"]["provider"] == "fake" and manifest["params"]["provider_model"] == "table-1"
    assert manifest["params"]["prompt_version"] == "1"
    assert manifest["params"]["spacy_model_loaded"].startswith("en_core_web_sm")
    assert any(k.startswith("captions:") for k in manifest["inputs"]) and "categories:coco_cd" in manifest["inputs"]
    assert summary.usage.calls == provider.usage.calls == summary.counts.questions
    assert "usage" not in manifest["counts"]  # run accounting, not dataset provenance
    assert manifest["counts"]["candidates"] == len(rows)
    assert verify_outputs(out) == {"changed": [], "missing": [], "extra": []}


def test_rebuild_is_byte_identical(captions, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _build(captions, a, tmp_path / "nltk")
    _build(captions, b, tmp_path / "nltk", workers=2)  # worker processes change nothing
    for name in ("coco_cd.json", "candidates.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    ma, mb = read_json(a / "manifest.json"), read_json(b / "manifest.json")
    for m in (ma, mb):
        m.pop("created_at")
        m["params"].pop("workers")
    assert ma == mb
