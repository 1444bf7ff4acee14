"""Lexical mapping: extraction rules, cumulative lookup, assignment, and the fixed public-script quirks."""

from __future__ import annotations

import copy

import pytest

from segbench.core.errors import InputError
from segbench.tasks.vocab.lexical_mapping import (
    Extraction,
    map_descriptions,
    map_extraction,
    parse_vocabulary,
)

# A small hand-written vocabulary in the open-ended benchmark's format, with its quirks: leading
# spaces in `exact`, an ADE20K-style multi-name key, and an unused `semantically_related` list.
VOCAB_JSON = {
    "road, route": {"exact": ["road", " route"], "synonyms": ["street"], "hyponyms": ["highway"],
                    "meronyms": ["lane marking"], "semantically_related": ["car", "handle"], "id": 0},
    "car": {"exact": ["car"], "synonyms": ["automobile"], "hyponyms": ["sports car", "taxi", "van"],
            "meronyms": ["wheel", "car door"], "semantically_related": [], "id": 1},
    "dog": {"exact": ["dog"], "synonyms": ["puppy"], "hyponyms": ["poodle"], "meronyms": ["tail"],
            "semantically_related": [], "id": 2},
    "building": {"exact": ["building"], "synonyms": ["edifice"], "hyponyms": ["house"], "meronyms": ["window"],
                 "semantically_related": [], "id": 3},
    "traffic sign": {"exact": ["traffic sign"], "synonyms": ["road sign"], "hyponyms": ["stop sign"],
                     "meronyms": [], "semantically_related": [], "id": 4},
    "truck": {"exact": ["truck"], "synonyms": ["lorry", "van"], "hyponyms": [], "meronyms": ["wheel"],
              "semantically_related": [], "id": 5},
    "wardrobe": {"exact": [" closet"], "synonyms": [], "hyponyms": [], "meronyms": [],
                 "semantically_related": [], "id": 6},
}
VOCAB = parse_vocabulary(VOCAB_JSON)
N = None

# description, gt_class, expected subject, expected mapping (exact, synonyms, hyponyms, meronyms)
CASES = [
    # subject (nsubj), exact match
    ("a dog is sleeping on the sofa", None, "dog", ("dog", "dog", "dog", "dog")),
    # root noun, synonym level
    ("a small puppy", None, "puppy", (N, "dog", "dog", "dog")),
    # plural → singular, adjectives dropped, hyponym level
    ("two white poodles", None, "poodle", (N, N, "dog", "dog")),
    # attr of "there is"
    ("there is a dog", None, "dog", ("dog", "dog", "dog", "dog")),
    # compound listed as such (hyponym)
    ("a red sports car", None, "sports car", (N, N, "car", "car")),
    # compound not listed: its head acts from the hyponym level
    ("a police car", None, "police car", (N, N, "car", "car")),
    # "a kind of Y": hyponym candidate acts from the hyponym level (quirk a fixed)
    ("a kind of dog", None, "kind", (N, N, "dog", "dog")),
    # "X of Y": meronym candidate acts at the meronym level (quirk b fixed)
    ("the handle of a car", None, "handle", (N, N, N, "car")),
    # subject itself a meronym; tie between car and truck (both list "wheel") goes to the smaller id
    ("a wheel", None, "wheel", (N, N, N, "car")),
    # "X on Y": meronym candidate; the subject's stronger hit wins without gt ...
    ("a stop sign on the building", None, "stop sign", (N, N, "traffic sign", "traffic sign")),
    # ... while the gt class is kept once it is hit at a level <= the current one
    ("a stop sign on the building", "building", "stop sign", (N, N, "traffic sign", "building")),
    # several classes: "van" is a truck synonym and a car hyponym → strongest relation (truck) first,
    # the gt class (car) from the level where it is hit
    ("a van", None, "van", (N, "truck", "truck", "truck")),
    ("a van", "car", "van", (N, "truck", "car", "car")),
    # gt never hit: the strongest relation decides
    ("a puppy", "car", "puppy", (N, "dog", "dog", "dog")),
    # leading spaces stripped (quirk c fixed) and the class key's names count as exact
    ("a closet", None, "closet", ("wardrobe", "wardrobe", "wardrobe", "wardrobe")),
    ("the route", None, "route", ("road, route", "road, route", "road, route", "road, route")),
    # semantically_related is unused; unmatched everywhere
    ("a handle", None, "handle", (N, N, N, N)),
    ("tall green trees", None, "tree", (N, N, N, N)),
]


@pytest.fixture(scope="module")
def nlp():
    from segbench.tasks.vocab.lexical_mapping import load_nlp

    try:
        return load_nlp()
    except InputError as exc:
        pytest.skip(f"spaCy English model not installed: {exc}")


@pytest.mark.parametrize(("description", "gt", "subject", "expected"), CASES, ids=[f"{c[0]}|{c[1]}" for c in CASES])
def test_rule_table(nlp, description, gt, subject, expected):
    [row] = map_descriptions(VOCAB, [{"description": description, "gt_class": gt}], nlp)
    assert row["nouns"]["subject"] == subject
    assert tuple(row["mapping"].values()) == expected
    assert list(row["mapping"]) == ["exact", "synonyms", "hyponyms", "meronyms"]


@pytest.mark.parametrize(
    ("description", "hyponyms", "meronyms"),
    [
        ("two types of flowers", ["flower"], []),
        ("the tail of a dog", [], ["dog"]),
        ("a sign on the building", [], ["building"]),
        ("a bowl full of fruit", [], []),  # X not a noun: no candidate
        ("a dog sitting on the grass", [], []),  # "on" attached to a verb: no candidate
    ],
)
def test_candidates(nlp, description, hyponyms, meronyms):
    [row] = map_descriptions(VOCAB, [{"description": description}], nlp)
    assert row["nouns"]["hyponym_candidates"] == hyponyms
    assert row["nouns"]["meronym_candidates"] == meronyms


# The quirk fixes once more without spaCy, on hand-made extractions.
def test_hyponym_candidate_acts_from_hyponym_level():
    result = map_extraction(VOCAB, Extraction("kind", None, hyponym_candidates=("dog",)))
    assert result["mapping"] == {"exact": None, "synonyms": None, "hyponyms": "dog", "meronyms": "dog"}
    assert result["hits"]["dog"] == {"level": "hyponyms", "term": "dog", "via": "hyponym_candidate"}


def test_meronym_candidate_acts_at_meronym_level():
    result = map_extraction(VOCAB, Extraction("handle", None, meronym_candidates=("car",)))
    assert result["mapping"] == {"exact": None, "synonyms": None, "hyponyms": None, "meronyms": "car"}


def test_candidate_listed_above_its_gate_acts_at_its_own_level():
    # "a kind of wheel": wheel is a car meronym, so the candidate acts only at the meronym level
    result = map_extraction(VOCAB, Extraction("kind", None, hyponym_candidates=("wheel",)))
    assert result["mapping"]["hyponyms"] is None and result["mapping"]["meronyms"] == "car"


def test_leading_spaces_are_stripped():
    assert VOCAB.hits("closet") == {"wardrobe": 0}
    assert VOCAB.hits("  Route ") == {"road, route": 0}


def test_map_descriptions_does_not_mutate_inputs(nlp):
    items = [{"description": "a puppy", "extra": 1}]
    before = copy.deepcopy(items)
    [row] = map_descriptions(VOCAB, items, nlp)
    assert items == before and row["extra"] == 1


@pytest.mark.parametrize(
    ("items", "item"),
    [([{"description": "a dog"}, {"text": "x"}], "item 1"),
     ([{"description": 3}], "item 0"),
     (["a dog"], "item 0"),
     ([{"description": "a dog", "gt_class": "cat"}], "item 0")],
)
def test_bad_items_name_file_and_index(items, item):
    with pytest.raises(InputError) as err:
        map_descriptions(VOCAB, items, nlp=None, source="in.json")
    assert err.value.path == "in.json" and err.value.item == item


@pytest.mark.parametrize(
    "data",
    [[], {}, {"car": {"exact": ["car"]}}, {"car": {"id": 0, "synonyms": "auto"}},
     {"a": {"id": 0}, "b": {"id": 0}}],
)
def test_invalid_vocabulary(data):
    with pytest.raises(InputError):
        parse_vocabulary(data, source="v.json")


def test_target_blind_mapping_ignores_the_ground_truth_and_keeps_it_in_the_row(nlp):
    # "van" is a hyponym of car (level 2) and a synonym of truck (level 1)
    [aware] = map_descriptions(VOCAB, [{"description": "a van", "gt_class": "car"}], nlp)
    [blind] = map_descriptions(VOCAB, [{"description": "a van", "gt_class": "car"}], nlp, target_blind=True)
    assert aware["mapping"] == {"exact": N, "synonyms": "truck", "hyponyms": "car", "meronyms": "car"}
    assert blind["mapping"] == {"exact": N, "synonyms": "truck", "hyponyms": "truck", "meronyms": "truck"}
    assert blind["gt_class"] == "car"


def test_coverage_keeps_every_class_name_and_a_seeded_nested_share_of_the_mined_terms():
    from segbench.tasks.vocab.lexical_mapping import with_coverage

    exact = {t for t, classes in VOCAB.terms.items() if 0 in classes.values()}
    mined = set(VOCAB.terms) - exact
    kept = {c: set(with_coverage(VOCAB, c).terms) for c in (0.2, 0.4, 0.6, 0.8, 1.0)}
    for coverage, terms in kept.items():
        assert exact <= terms and len(terms - exact) == int(coverage * len(mined) + 0.5)
        assert all(with_coverage(VOCAB, coverage).terms[t] == VOCAB.terms[t] for t in terms)  # relations kept
    assert kept[0.2] <= kept[0.4] <= kept[0.6] <= kept[0.8] <= kept[1.0] == set(VOCAB.terms)
    assert set(with_coverage(VOCAB, 0.4, seed=1).terms) != kept[0.4]
    assert with_coverage(VOCAB, 0.4).terms == with_coverage(VOCAB, 0.4).terms
    with pytest.raises(ValueError, match="not in"):
        with_coverage(VOCAB, 0)
