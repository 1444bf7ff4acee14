"""The mining pipeline (memoised attribute ruler, head-only lemmas) annotates as the plain pipeline does."""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

import pytest

from segbench.demo.vocab.captions import scene_captions
from segbench.demo.world import build_scenes
from segbench.tasks.vocab import nouns
from segbench.tasks.vocab.noun_pipeline import KEY_ATTRS, may_match_many, memo_triggers

MODEL = "en_core_web_sm"
# Words that start the English ruler's multi-token patterns, mixed with ordinary captions.
TRICKY = ["Let's see the dog's toys.", "They ain't got fire hydrants.", "We're gonna feed the cat.",
          "Gotta love a t-shirt on a chair.", "A dog.", "A   cat   on a mat .", "Two kittens chase the BALLS.",
          "There seem to be two dogs.", "The dog is big.", "There is a cat on the sofa."]


@pytest.fixture(scope="module")
def pipelines():
    return nouns.load_pipeline(MODEL), nouns.load_mining_pipeline(MODEL)


def _captions() -> list[str]:
    rng = random.Random(3)
    captions = [c for scene in build_scenes(seed=2)[:40] for c in scene_captions(scene, rng, n=4)]
    return captions + TRICKY + captions[:20] + TRICKY  # repeats: the second time the memo answers


def test_every_annotation_mining_reads_is_the_plain_pipelines(pipelines):
    plain, fast = pipelines
    captions = _captions()
    for reference, doc in zip(plain.pipe(captions), fast.pipe(captions), strict=True):
        expected = [(t.pos_, t.tag_, t.dep_, str(t.morph), t.lemma_) for t in reference]
        got = [(t.pos_, t.tag_, t.dep_, str(t.morph), fast.head_lemma(t)) for t in doc]
        assert got == expected, reference.text
    assert fast.ruler.replayed > 0 and fast.ruler.ruled > 0  # both paths ran


def test_counts_equal_the_full_pipeline(pipelines):
    _, fast = pipelines
    captions = _captions()
    expected: Counter = Counter()
    for doc in nouns.load_pipeline(MODEL, full=True).pipe(captions):
        expected.update(nouns.doc_nouns(doc))
    assert nouns.mine_shard(fast, list(Counter(captions).items())) == expected
    assert expected["fire hydrant"] == 2 and expected["t-shirt"] == 2


def test_multi_token_patterns_become_conditions_on_the_doc(pipelines):
    single = {"patterns": [[{"TAG": "NN"}]], "attrs": {"POS": "NOUN"}, "index": 0}
    multi = {"patterns": [[{"LOWER": "gon"}, {"LOWER": "na"}]], "attrs": {"LEMMA": "go"}, "index": 0}
    expl = {"patterns": [[{"DEP": "expl"}, {"LOWER": {"IN": ["is", "are"]}}]], "attrs": {"POS": "PRON"}, "index": 0}
    assert memo_triggers([single]) == []
    conditions = memo_triggers([single, multi, expl])
    assert len(conditions) == 2
    _, fast = pipelines
    with fast.nlp.select_pipes(disable=["attribute_ruler", "lemmatizer"]):
        def meets(text: str) -> bool:
            return may_match_many(conditions, fast.nlp(text).to_array(KEY_ATTRS))

        assert meets("There is a dog on the grass.")  # "There" is an expletive, then "is"
        assert not meets("The dog is on the grass.")  # "is" without an expletive
        assert meets("We are gon na see it.") and not meets("A gondola on the canal.")


@pytest.mark.parametrize("pattern", [
    [{"IS_SENT_START": True}],  # depends on the position, not on the token
    [{"NORM": "be"}],  # tokenizer exceptions set norms per token
    [{"TAG": {"REGEX": "^N"}, "OP": "+"}],  # a quantifier may span tokens, with no fixed value
    [{"TAG": {"REGEX": "^N"}}, {"LOWER": {"REGEX": "^a"}}],  # two tokens, no fixed value
])
def test_patterns_the_memo_cannot_replay_turn_it_off(pattern):
    assert memo_triggers([{"patterns": [pattern], "attrs": {"POS": "NOUN"}, "index": 0}]) is None


def test_a_failed_output_check_fails_the_row():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from rows import result

    fast_but_wrong = result("x", measured=1, baseline=10, ratio=10, target=">= 5x", passed=True,
                            checks={"identical counts": False})
    assert not fast_but_wrong["passed"]
    assert result("x", measured=1, baseline=10, ratio=10, target=">= 5x", passed=True,
                  checks={"identical counts": True})["passed"]
