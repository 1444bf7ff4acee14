"""The offline WordNet provider: vocab.relations pinned to what WordNet 3.0 says, data preparation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from segbench.core.errors import ProviderError
from segbench.providers.base import Question
from segbench.providers.wordnet_data import DEBIAN_WORDNET_DIR, lexnames_text, prepare_wordnet_data
from segbench.providers.wordnet_provider import WordNetProvider, alternatives
from segbench.registry import offline_answers
from segbench.schemas.vocab import RelationAnswer

if not (DEBIAN_WORDNET_DIR / "index.noun").is_file():
    _msg = "WordNet not installed: apt-get install -y wordnet-base wordnet-sense-index (scripts/install.sh)"
    if os.environ.get("CI"):
        pytest.fail(_msg, pytrace=False)
    pytest.skip(_msg, allow_module_level=True)


@pytest.fixture(scope="module")
def provider(tmp_path_factory) -> WordNetProvider:
    return WordNetProvider(tmp_path_factory.mktemp("wn") / "nltk_data", answers=offline_answers())


def relations(provider: WordNetProvider, category: str, candidates: list[str]) -> dict[str, str]:
    question = Question(
        kind="vocab.relations",
        version="1",
        inputs={"category": category, "candidates": candidates},
        system="(unused offline)",
        user="(unused offline)",
    )
    answer = provider.answer(question, RelationAnswer)
    assert answer.category == category
    assert [j.noun for j in answer.judgements] == candidates  # one per candidate, input order
    return {j.noun: j.relation for j in answer.judgements}


def test_dog(provider):
    assert relations(
        provider,
        "dog",
        ["dog", "  Dog ", "domestic dog", "Canis_familiaris", "dogs", "puppy", "golden retriever", "banana"],
    ) == {
        "dog": "exact",
        "  Dog ": "exact",  # case and spaces are normalised
        "domestic dog": "synonym",  # dog.n.01 lemmas: dog, domestic_dog, Canis_familiaris
        "Canis_familiaris": "synonym",
        "dogs": "synonym",  # WordNet's own lookup reduces the plural; not the exact name though
        "puppy": "hyponym",  # puppy.n.01 → pup, dog
        "golden retriever": "hyponym",
        "banana": "none",
    }


def test_dog_parts(provider):
    assert relations(provider, "dog", ["flag", "tail", "paw", "hair", "cell", "part", "bone"]) == {
        "flag": "meronym",  # WordNet's only own part of dog.n.01: flag.n.07 (a feathery tail)
        "tail": "meronym",  # inherited: tail.n.01 is a part of vertebrate.n.01
        "paw": "meronym",  # inherited from canine.n.02
        "hair": "meronym",  # inherited from mammal.n.01
        "cell": "none",  # organism.n.01's part, too near the root to inherit
        "part": "none",  # whole.n.02's part, likewise
        "bone": "none",
    }


def test_own_parts_only(tmp_path_factory, provider):
    strict = WordNetProvider(provider.nltk_data, inherit_parts=False)
    assert relations(strict, "dog", ["flag", "tail", "paw"]) == {"flag": "meronym", "tail": "none", "paw": "none"}
    assert strict.params != provider.params  # so the cache never mixes the two


def test_car(provider):
    assert relations(
        provider,
        "car",
        ["automobile", "car door", "bumper", "wheel", "doorlock", "bumper guard", "taxi", "tire", "banana"],
    ) == {
        "automobile": "synonym",
        "car door": "meronym",  # car.n.01's own part meronyms
        "bumper": "meronym",
        "wheel": "meronym",  # inherited from wheeled_vehicle.n.01
        "doorlock": "meronym",  # part of car_door: parts are followed a few levels
        "bumper guard": "meronym",
        "taxi": "hyponym",
        "tire": "none",
        "banana": "none",
    }


def test_ade20k_style_names(provider):
    assert alternatives("tree, plant") == ["tree", "plant"]
    assert alternatives("traffic light") == ["traffic_light"]
    assert relations(provider, "tree, plant", ["tree", "plant", "oak", "trunk", "rose"]) == {
        "tree": "exact",
        "plant": "exact",
        "oak": "hyponym",
        "trunk": "meronym",
        "rose": "hyponym",
    }
    assert relations(provider, "traffic light", ["traffic_light", "stoplight", "traffic signal", "lamp"]) == {
        "traffic_light": "exact",
        "stoplight": "synonym",
        "traffic signal": "synonym",
        "lamp": "none",
    }


def test_instances_are_hyponyms(provider):
    assert relations(provider, "physicist", ["Einstein", "Albert Einstein"]) == {
        "Einstein": "hyponym",  # instance_hypernyms, not hypernyms
        "Albert Einstein": "hyponym",
    }


def test_every_sense_of_the_category_counts(provider):
    # Documented limitation: WordNet cannot tell which sense of "dog" a dataset means.
    assert relations(provider, "dog", ["hot dog"]) == {"hot dog": "synonym"}  # frank.n.02


def test_unknown_category_finds_only_exact(provider):
    assert relations(provider, "xyzzy", ["xyzzy", "dog"]) == {"xyzzy": "exact", "dog": "none"}


def test_answer_many_order_and_usage(tmp_path_factory, provider):
    fresh = WordNetProvider(provider.nltk_data)
    questions = [
        Question(kind="vocab.relations", version="1", inputs={"category": c, "candidates": ["dog"]}, system="", user="")
        for c in ("cat", "dog")
    ]
    answers = fresh.answer_many(questions, RelationAnswer)
    assert [a.category for a in answers] == ["cat", "dog"]
    assert [a.judgements[0].relation for a in answers] == ["none", "exact"]
    assert fresh.usage.calls == 2 and fresh.usage.cost_usd == 0


def test_unknown_kind_names_the_kinds_it_answers(provider):
    question = Question(kind="example.unknown", version="1", inputs={}, system="", user="")
    with pytest.raises(ProviderError, match="cafe.edit_plan, spin.subparts, spin.visibility, vocab.relations") as info:
        provider.answer(question, RelationAnswer)
    assert info.value.item == "example.unknown"


def test_a_kind_no_dataset_registered_is_not_answered(provider):
    # The datasets' kinds come only from the answers it is given; on its own it answers vocab.relations.
    bare = WordNetProvider(provider.nltk_data)
    assert bare.kinds == ("vocab.relations",)
    question = _subparts_question(object="Car", part="Tire", wnids=["n02930766"], animal=False, other_parts=[])
    with pytest.raises(ProviderError, match="cannot answer 'spin.subparts'; it answers vocab.relations\\n") as info:
        bare.answer(question, RelationAnswer)
    assert info.value.item == "spin.subparts" and "openai" in info.value.hint


def test_make_provider_gives_the_registered_answers(tmp_path):
    from segbench.providers import make_provider
    from segbench.settings import Settings

    inner = make_provider(Settings(data_root=tmp_path, provider="offline")).inner
    assert inner.kinds == ("cafe.edit_plan", "spin.subparts", "spin.visibility", "vocab.relations")


def _subparts_question(**inputs) -> Question:
    return Question(kind="spin.subparts", version="1", inputs=inputs, system="", user="")


def test_spin_subparts(provider):
    from segbench.schemas.spin import SubpartProposal

    # The aircraft sense of wing (wing.n.02), found through the airliner's part meronyms.
    plane = provider.answer(_subparts_question(object="Aeroplane", part="Wing", wnids=["n02690373"], animal=False,
                                               other_parts=["Engine"]), SubpartProposal)
    assert (plane.object, plane.part) == ("Aeroplane", "Wing") and {"Aileron", "Flap"} <= set(plane.subparts)
    head = provider.answer(_subparts_question(object="Quadruped", part="Head", wnids=["n02099601"], animal=True,
                                              other_parts=["Torso", "Ear"]), SubpartProposal)
    assert "Skull" in head.subparts and "Ear" not in head.subparts  # another part is never its subpart
    assert head.subparts == sorted(set(head.subparts))


def test_spin_subparts_malformed_inputs(provider):
    from segbench.schemas.spin import SubpartProposal

    with pytest.raises(ProviderError, match="lack 'wnids'") as info:
        provider.answer(_subparts_question(object="Car", part="Tire", animal=False), SubpartProposal)
    assert info.value.item == "spin.subparts"
    with pytest.raises(ProviderError, match="'wnids': \\[str"):
        provider.answer(_subparts_question(object="Car", part="Tire", wnids="n02930766", animal=False),
                        SubpartProposal)


def test_cached_spin_answers_of_an_older_rule_are_not_replayed(tmp_path, provider):
    from dataclasses import replace

    from segbench.providers.cache import CachedProvider
    from segbench.schemas.spin import SubpartProposal
    from segbench.tasks.spin.wordnet import RULE_VERSION, SUBPARTS_ANSWER

    question = _subparts_question(object="Car", part="Tire", wnids=["n02930766"], animal=False, other_parts=[])
    older = replace(SUBPARTS_ANSWER, params={"spin_subparts_rule": f"{RULE_VERSION}-older"})
    CachedProvider(WordNetProvider(provider.nltk_data, answers={older.kind: older}), tmp_path).answer(
        question, SubpartProposal)
    current = WordNetProvider(provider.nltk_data, answers=offline_answers())
    assert current.params_for("spin.subparts") == {"inherit_parts": True, "meronym_depth": 3,
                                                   "spin_subparts_rule": RULE_VERSION}
    with pytest.raises(ProviderError, match="replay-only"):
        CachedProvider(current, tmp_path, replay_only=True).answer(question, SubpartProposal)
    CachedProvider(current, tmp_path).answer(question, SubpartProposal)
    replayed = CachedProvider(WordNetProvider(provider.nltk_data, answers=offline_answers()), tmp_path,
                              replay_only=True)
    assert replayed.answer(question, SubpartProposal).part == "Tire" and replayed.usage.cache_hits == 1


def test_malformed_inputs(provider):
    question = Question(kind="vocab.relations", version="1", inputs={"category": "dog"}, system="", user="")
    with pytest.raises(ProviderError, match="candidates"):
        provider.answer(question, RelationAnswer)


def test_missing_debian_data_names_the_packages(tmp_path):
    lonely = WordNetProvider(tmp_path / "nltk_data", source=tmp_path / "no-wordnet")
    question = Question(
        kind="vocab.relations", version="1", inputs={"category": "dog", "candidates": []}, system="", user=""
    )
    with pytest.raises(ProviderError) as info:
        lonely.answer(question, RelationAnswer)
    text = str(info.value)
    assert "wordnet-base" in text and "wordnet-sense-index" in text and "apt-get install" in text


def test_prepare_is_idempotent(tmp_path):
    root = prepare_wordnet_data(tmp_path / "nltk_data")
    wordnet = root / "corpora" / "wordnet"
    assert root == (tmp_path / "nltk_data").resolve()
    assert {"index.sense", "data.noun", "lexnames", "noun.exc"} <= {p.name for p in wordnet.iterdir()}
    stamps = {p.name: p.stat().st_mtime_ns for p in wordnet.iterdir()}
    prepare_wordnet_data(tmp_path / "nltk_data")
    assert {p.name: p.stat().st_mtime_ns for p in wordnet.iterdir()} == stamps


def test_lexnames():
    lines = lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3"
    assert lines[3] == "03\tnoun.Tops\t1"
    assert lines[5] == "05\tnoun.animal\t1"
    assert lines[29] == "29\tverb.body\t2"
    assert lines[44] == "44\tadj.ppl\t3"
    # Every lexicographer file number used in data.noun must name a noun file.
    sample = Path(DEBIAN_WORDNET_DIR / "data.noun").read_text(encoding="utf-8").splitlines()[29:2000]
    numbers = {int(line.split()[1]) for line in sample if line[:1].isdigit()}
    assert all(lines[n].split("\t")[1].startswith("noun.") for n in numbers)


def test_concurrent_questions_get_the_answers_asked_one_by_one(provider):
    """Flows ask in concurrent tasks; NLTK's reader shares file handles, so the provider serialises lookups."""
    from concurrent.futures import ThreadPoolExecutor

    # Words no other test looks up: NLTK caches synsets it has read, and only reads can collide.
    categories = ["accordion", "volcano", "cathedral", "submarine", "giraffe", "telescope", "umbrella", "harp"]
    candidates = ["bellows", "crater", "nave", "periscope", "ossicone", "eyepiece", "canopy", "soundboard", "lava"]
    questions = [Question(kind="vocab.relations", version="1", inputs={"category": c, "candidates": candidates},
                          system="", user="") for c in categories * 4]
    with ThreadPoolExecutor(8) as pool:
        concurrent = list(pool.map(lambda q: provider.answer(q, RelationAnswer), questions))
    assert concurrent == [provider.answer(q, RelationAnswer) for q in questions]
