"""The language stages on a real small model (SmolLM2-135M served by scripts/local-llm.sh), as a user
runs them: ``build vocab``, ``build spin-taxonomy`` and ``build cafe-candidates`` (local plans, Pillow
edits). What is asserted is the plumbing, not the model's quality: every request carries a token cap
its answer keeps to and bounds its lists, answers the model never gave usably are skipped with their
reasons, and the judge-quality report is written."""

from __future__ import annotations

import json

import pytest
from support.cli import run

from segbench.core.io import read_json, write_json
from segbench.demo.cafe.sources import generate_demo_cafe
from segbench.demo.vocab.captions import generate_demo_captions
from segbench.demo.world import generate_demo_world

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def _requests_since(log, seen: int) -> list[dict]:
    lines = log.read_text().splitlines() if log.is_file() else []
    return [json.loads(line) for line in lines[seen:]]


def test_the_language_stages_run_on_a_real_small_model(local_model, tmp_path, monkeypatch):
    monkeypatch.setenv("SEGBENCH_PROVIDER", "openai")
    monkeypatch.setenv("SEGBENCH_OPENAI_BASE_URL", local_model.url)  # on 127.0.0.1: one request at a time
    monkeypatch.setenv("SEGBENCH_OPENAI_MODEL", "SmolLM2-135M-Instruct.Q4_1")
    monkeypatch.setenv("SEGBENCH_EDITOR", "pillow")
    seen = len(local_model.requests.read_text().splitlines()) if local_model.requests.is_file() else 0

    world = tmp_path / "world"
    generate_demo_world(world, seed=0)
    captions = [arg for path in generate_demo_captions(world, seed=0) for arg in ("--captions", str(path))]
    published = write_json(tmp_path / "published.json", {
        "cat": {"exact": ["cat"], "synonyms": ["kitty"], "hyponyms": ["kitten"], "meronyms": ["paw", "tail"], "id": 0},
        "dog": {"exact": ["dog"], "synonyms": ["puppy"], "hyponyms": [], "meronyms": ["paw", "tail"], "id": 1}})
    vocab = run(tmp_path, "build", "vocab", *captions, "--categories", "coco_cd", "--top-k", "8",
                "--compare-with", str(published))
    assert "Judge quality" in vocab.output and "agrees with WordNet" in vocab.output
    quality = read_json(tmp_path / "data" / "vocab" / "coco_cd" / "judge_quality.json")
    assert quality["wordnet"]["compared"] == quality["judged"] > 0
    assert quality["published"]["compared"] > 0
    for skip in quality["skipped"]:  # nothing the checks refuse reaches the vocabulary
        assert skip["relation"] in ("exact", "synonym") and skip["reason"]
    vocabulary = read_json(tmp_path / "data" / "vocab" / "coco_cd" / "coco_cd.json")
    assert "dog" not in vocabulary["cat"]["exact"] + vocabulary["cat"]["synonyms"]

    # Smaller caps keep the taxonomy's 40 questions (and one per proposal) short on one thread.
    monkeypatch.setenv("SEGBENCH_OPENAI_TOKEN_MARGIN", "0.25")
    taxonomy = run(tmp_path, "build", "spin-taxonomy")
    assert "questions without a usable answer (skipped)" in taxonomy.output
    counts = read_json(tmp_path / "data" / "spin" / "taxonomy.manifest.json")["counts"]
    assert isinstance(counts["rejected_answers"], int) and isinstance(counts["suspect"], list)
    monkeypatch.delenv("SEGBENCH_OPENAI_TOKEN_MARGIN")

    sources = generate_demo_cafe(tmp_path / "sources", seed=0, sizes={"coco": 3, "lvis": 2})
    options = [arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")]
    candidates = run(tmp_path, "build", "cafe-candidates", *options)
    assert "pillow" in candidates.output
    skipped = read_json(tmp_path / "data" / "cafe_candidates" / "skipped.json")
    assert all(item["message"] for item in skipped["items"])
    manifest = read_json(tmp_path / "data" / "cafe_candidates" / "manifest.json")
    assert manifest["params"]["editor"] == "pillow"

    requests = _requests_since(local_model.requests, seen)
    assert {r["schema"] for r in requests} >= {"RelationAnswer", "SubpartProposal", "PlanAnswer"}
    for request in requests:
        assert request["max_tokens"] is not None, request
        assert request["completion_tokens"] <= request["max_tokens"], request
        assert request["bounded_arrays"] == request["arrays"], request  # every list bounded by maxItems
