"""Sense checks on a model's relation judgements, and its agreement with WordNet and a published
vocabulary, on hand-made cases."""

from __future__ import annotations

from segbench.schemas.vocab import CategorySpec
from segbench.tasks.vocab import judge_quality as jq

CATS = [CategorySpec(id=0, name="cat", synonyms=[]), CategorySpec(id=1, name="dog", synonyms=["hound"])]
MODEL = {0: {"cat": "exact", "dog": "exact", "hound": "synonym", "kitty": "synonym", "house cat": "exact",
             "true cat": "exact", "tail": "meronym"},
         1: {"puppy": "hyponym", "cat": "meronym"}}
WORDNET = {0: {"cat": "exact", "dog": "none", "hound": "none", "kitty": "none", "house cat": "hyponym",
               "true cat": "synonym", "tail": "meronym"},
           1: {"puppy": "hyponym", "cat": "none"}}


def test_another_categorys_name_and_an_exact_name_wordnet_does_not_know_are_skipped():
    kept, skipped = jq.sense_check(CATS, MODEL, WORDNET)
    assert {(s.category, s.noun): s.reason for s in skipped} == {
        ("cat", "dog"): "'dog' is the name of another category (dog)",
        ("cat", "hound"): "'hound' is the name of another category (dog)",  # a listed synonym is a name too
        ("cat", "house cat"): "WordNet does not make 'house cat' a name of 'cat' (it says hyponym)"}
    # A synonym WordNet lacks, an exact name WordNet shares a synset with, and any meronym are kept.
    assert kept[0] == {"cat": "exact", "dog": "none", "hound": "none", "kitty": "synonym", "house cat": "none",
                       "true cat": "exact", "tail": "meronym"}
    assert kept[1] == MODEL[1]  # another category's name as a part is not a name


def test_agreement_by_hand():
    agreement = jq.agreement(MODEL, WORDNET)
    # agreed: cat (exact), tail (meronym), puppy (hyponym): 3 of 9
    assert (agreement.compared, agreement.agreed, agreement.rate) == (9, 3, 0.3333)
    assert agreement.confusion["exact"] == {"exact": 1, "hyponym": 1, "none": 1, "synonym": 1}
    assert jq.agreement({0: {"x": "none"}}, {1: {"x": "none"}}).rate is None  # nothing in common


def test_a_published_vocabulary_as_relations_of_the_candidates():
    published = {"cat": {"exact": ["cat"], "synonyms": ["kitty"], "hyponyms": [], "meronyms": ["tail", "kitty"]}}
    theirs = jq.published_relations(CATS, published, {0: ["cat", "kitty", "tail", "dog"], 1: ["puppy"]})
    assert theirs == {0: {"cat": "exact", "kitty": "synonym", "tail": "meronym", "dog": "none"}}  # no dog entry


def test_one_relation_for_every_candidate_makes_the_judge_suspect():
    assert jq.suspicions({0: {f"n{i}": "exact" for i in range(10)}}) == [
        "every one of the 10 candidates was judged 'exact'"]
    assert jq.suspicions({0: {f"n{i}": "exact" for i in range(9)}}) == []  # too few to tell
    assert jq.suspicions(MODEL) == []
    report = jq.judge_quality(MODEL, [], WORDNET)
    assert report.judged == 9 and report.relations == {"exact": 4, "synonym": 2, "hyponym": 1, "meronym": 2}
    assert report.published is None and report.wordnet.agreed == 3
