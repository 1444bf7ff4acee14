"""Candidates, questions, levels and the public vocabulary format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest

from segbench.core.errors import InputError, ProviderError
from segbench.schemas.vocab import CategorySpec, RelationAnswer, RelationJudgement
from segbench.tasks.vocab import vocabulary as vb

GOLDEN = Path(__file__).parents[1] / "golden"
DOG = CategorySpec(id=1, name="dog", synonyms=["hound"])


class TinyWordNet:
    """A hand-made noun hierarchy standing in for WordNet's reader (``synsets`` and hypernyms)."""

    PARENTS: ClassVar[dict[str, str]] = {"dog": "canine", "puppy": "dog", "canine": "animal", "cat": "feline", "feline": "animal",
               "animal": "entity", "tail": "part", "part": "entity", "car": "vehicle", "vehicle": "entity",
               "hound": "dog", "canine2": "animal"}

    class _Synset:
        def __init__(self, name: str):
            self._name = name

        def name(self) -> str:
            return self._name

        def hypernyms(self):
            parent = TinyWordNet.PARENTS.get(self._name)
            return [TinyWordNet._Synset(parent)] if parent else []

        def part_meronyms(self):
            return [TinyWordNet._Synset("tail")] if self._name == "animal" else []

        def substance_meronyms(self):
            return []

        def lemmas(self):
            return [self]

        def definition(self) -> str:
            return "a young dog" if self._name == "puppy" else ""

        def instance_hypernyms(self):
            return []

        def __eq__(self, other):
            return self._name == other._name

        def __hash__(self):
            return hash(self._name)

    def synsets(self, word: str, pos: str):
        known = set(self.PARENTS) | set(self.PARENTS.values())
        return [self._Synset(word)] if word in known else []


@pytest.fixture
def index():
    return vb.WordNetIndex(TinyWordNet())


def test_path_similarity(index):
    assert index.similarity("dog", "dog") == 1.0
    assert index.similarity("puppy", "dog") == 0.5
    assert index.similarity("cat", "dog") == pytest.approx(1 / 5)
    assert index.similarity("orange cat", "cat") == 1.0  # unknown compound falls back to its head
    assert index.similarity("zzz", "dog") == 0.0


def test_candidates_are_bounded_and_ranked(index):
    nouns = {f"thing{i}": 100 for i in range(200)} | {"puppy": 5, "cat": 50, "dog bed": 2, "dog": 90, "car": 7}
    out = vb.select_candidates([DOG], nouns, index, top_k=3)[1]
    mined = [r["noun"] for r in out if r["source"] == "mined"]
    assert mined == ["dog bed", "puppy", "cat"]  # containment first, then similarity
    assert [r["noun"] for r in out if r["source"] == "category"] == ["hound"]
    assert "dog" not in mined  # the category's own name is exact without asking
    every = [r["noun"] for r in vb.select_candidates([DOG], nouns, index, top_k=None)[1] if r["source"] == "mined"]
    assert every[:3] == mined and len(every) == len(nouns) - 1  # no pre-filter: every noun but the name, ranked


def test_questions_are_batched():
    questions = vb.relation_questions(DOG, [f"n{i}" for i in range(60)], batch=25)
    assert [len(q.inputs["candidates"]) for q in questions] == [25, 25, 10]
    assert all(q.kind == "vocab.relations" and q.inputs["category"] == "dog" for q in questions)
    assert "n0" in questions[0].user and questions[0].version == vb.PROMPT_VERSION


def _answer(category: str, pairs: list[tuple[str, str]]) -> RelationAnswer:
    return RelationAnswer(category=category, judgements=[RelationJudgement(noun=n, relation=r) for n, r in pairs])


def test_answers_count_their_problems():
    question = vb.relation_questions(DOG, ["puppy", "tail", "cat"])[0]
    relations, problems = vb.answered_relations(
        question, _answer("Dog", [("puppy", "hyponym"), ("Puppy ", "synonym"), ("tail", "meronym"), ("x", "exact")]))
    assert relations == {"puppy": "synonym", "tail": "meronym", "cat": "none"}
    assert problems == {"unknown_nouns": 1, "unjudged": 1, "repeated": 1}


def test_answer_about_another_category_is_an_error():
    question = vb.relation_questions(DOG, ["puppy"])[0]
    with pytest.raises(ProviderError, match="about 'cat'"):
        vb.answered_relations(question, _answer("cat", []))


def test_levels_strongest_wins_and_name_is_exact():
    road = CategorySpec(id=6, name="road, Route")
    vocab = vb.assemble_vocabulary([DOG, road], {
        1: {"puppy": "synonym", "dog": "meronym", "tail": "meronym", "beagle": "hyponym", "cat": "none"},
        6: {"street": "synonym"},
    })
    assert vocab["dog"] == {"exact": ["dog"], "synonyms": ["puppy"], "hyponyms": ["beagle"], "meronyms": ["tail"],
                            "id": 1}
    assert vocab["road, Route"]["exact"] == ["road", "route"]


def test_levels_keep_the_strongest_across_batches():
    # the flow merges relations per category; a noun met twice keeps the stronger relation
    vocab = vb.assemble_vocabulary([DOG], {1: {"puppy": "meronym"}})
    assert vocab["dog"]["meronyms"] == ["puppy"]
    question = vb.relation_questions(DOG, ["puppy"])[0]
    relations, _ = vb.answered_relations(question, _answer("dog", [("puppy", "meronym"), ("puppy", "hyponym")]))
    assert relations == {"puppy": "hyponym"}


@pytest.mark.parametrize("name", ["open_ended_ade20k_subset.json", "open_ended_cityscapes_subset.json"])
def test_public_format_round_trip(name):
    raw = json.loads((GOLDEN / name).read_text())
    ours = vb.read_public(GOLDEN / name)
    assert vb.from_public(vb.to_public(ours)) == ours
    for cls, entry in ours.items():
        nouns = [n for level in vb.LEVELS for n in entry[level]]
        assert len(nouns) == len(set(nouns)), f"{cls}: a noun at two levels"
        assert all(n == n.strip() for n in nouns)
        assert entry["id"] == raw[cls]["id"]
        # every noun of the public file survives, at its strongest level
        assert {n.strip() for level in vb.LEVELS for n in raw[cls][level]} == set(nouns)
    if "ade20k" in name:
        assert ours["road, route"]["exact"] == ["road", "route"]  # leading space stripped
        assert "wall" not in ours["wall"]["synonyms"]  # listed as exact and synonym: exact wins
    assert all(set(e) == {*vb.LEVELS, "id"} for e in ours.values())  # semantically_related dropped


def test_public_format_rejects_entries_without_id(tmp_path):
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"dog": {"exact": ["dog"]}}))
    with pytest.raises(InputError, match="integer 'id'") as err:
        vb.read_public(path)
    assert err.value.item == "dog"


@pytest.mark.parametrize(("dataset", "n"), [("ade20k_150", 150), ("cityscapes_19", 19), ("coco_cd", 2)])
def test_shipped_category_sets(dataset, n):
    name, categories, path = vb.load_categories(dataset)
    assert name == dataset and len(categories) == n and path.is_file()
    assert [c.id for c in categories] == list(range(n))


def test_shipped_sets_match_the_public_vocabularies():
    _, ade, _ = vb.load_categories("ade20k_150")
    public = vb.read_public(GOLDEN / "open_ended_ade20k_subset.json")
    by_name = {c.name: c.id for c in ade}
    assert all(by_name[cls] == entry["id"] for cls, entry in public.items())


def test_bad_category_files(tmp_path):
    with pytest.raises(InputError, match="unknown category set"):
        vb.load_categories("no_such_set")
    path = tmp_path / "cats.json"
    path.write_text(json.dumps([{"id": 0, "name": "cat"}, {"id": 0, "name": "dog"}]))
    with pytest.raises(InputError, match="repeats"):
        vb.load_categories(path)
    path.write_text(json.dumps([{"id": "x", "name": "cat"}]))
    with pytest.raises(InputError, match="bad category list"):
        vb.load_categories(path)


def test_wordnet_links_beyond_hypernyms(index):
    assert index.linked("puppy", "dog")  # its gloss names the category
    assert index.linked("tail", "dog") and index.linked("fluffy tail", "dog")  # a part inherited from "animal"
    assert not index.linked("car", "dog")
    out = vb.select_candidates([DOG], {"car": 50, "tail": 1}, index, top_k=1)[1]
    assert out[0]["noun"] == "tail" and out[0]["linked"]
