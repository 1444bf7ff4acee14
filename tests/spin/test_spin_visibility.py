"""The visibility question of the SPIN taxonomy build: proposals that are not visible parts are dropped
before the edits (and before people see them), asked of the same provider that proposed them."""

from __future__ import annotations

import re

import pytest

from segbench.schemas.spin import SubpartVisibility
from segbench.tasks.spin import taxonomy as st
from segbench.tasks.spin import taxonomy_edits as se


@pytest.fixture(scope="module")
def wordnet_provider(tmp_path_factory):
    from segbench.providers.wordnet_provider import WordNetProvider
    from segbench.registry import offline_answers

    return WordNetProvider(tmp_path_factory.mktemp("nltk"), answers=offline_answers())


def test_wordnet_answers_from_its_own_relations(wordnet_provider):
    from segbench.schemas.spin import SubpartProposal

    catalog = st.load_catalog()
    proposals = st.proposals_from_answers(
        catalog, wordnet_provider.answer_many(st.subpart_questions(catalog), SubpartProposal))
    proposals["Car-Body"] = [*proposals["Car-Body"], "Flux Capacitor"]  # a name WordNet does not know
    answers = wordnet_provider.answer_many(st.visibility_questions(catalog, proposals), SubpartVisibility)
    kept, dropped = st.split_visible(catalog, proposals, answers)

    assert {"Skull", "Brain", "Basilar Artery"} <= set(dropped["Quadruped-Head"])  # internal anatomy
    assert {"Ear", "Face", "Muzzle"} <= set(kept["Quadruped-Head"])
    assert {"Tibia", "Sciatic Nerve", "Saphenous Vein"} <= set(dropped["Quadruped-Legs"])
    assert {"First Gear", "Reverse", "Electrical System", "Cooling System"} <= set(dropped["Car-Body"])
    assert {"Car Door", "Hood", "Windshield", "Bumper", "Flux Capacitor"} <= set(kept["Car-Body"])
    assert "Suspension" in kept["Bicycle-Body"]  # a bicycle's suspension is in the paper's taxonomy


def test_dropped_proposals_are_recorded_and_the_reference_still_decides():
    catalog = st.load_catalog()
    edits, _ = se.load_edits(se.default_edits_path(), catalog)
    proposals = {"Car-Body": ["Door", "First Gear"]}
    answers = [SubpartVisibility(subpart="Door", visible=True), SubpartVisibility(subpart="First Gear", visible=False)]
    kept, dropped = st.split_visible(catalog, proposals, answers)
    assert (kept, dropped) == ({"Car-Body": ["Door"]}, {"Car-Body": ["First Gear"]})
    outcome = se.apply_edits(catalog, kept, "p:m", edits, dropped)
    car = next(p for p in outcome.parts if p.key == "Car-Body")
    assert ("First Gear", st.VISIBILITY_RULE) in {(r.name, r.by) for r in car.removed}
    assert sum(len(p.subparts) for p in outcome.parts) == 203


def _answer(body: dict) -> dict:
    """A stand-in language model: Car-Body gets two proposals, one of them a gear nobody can see."""
    from support.openai_server import last_user_message, response_schema

    text = last_user_message(body)
    if "visible" in response_schema(body)["properties"]:
        subpart = re.search(r"Proposed subpart of the .+?: (.+)\.\n", text).group(1)
        return {"subpart": subpart, "visible": "Gear" not in subpart}
    obj, part = re.search(r"canonical subparts of a (\w+)-(.+?)\. Only include", text).groups()  # §8.1's question
    subparts = ["Door", "First Gear"] if (obj, part) == ("Car", "Body") else []
    return {"object": obj, "part": part, "subparts": subparts}


@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
def test_a_language_model_is_asked_once_per_proposal_and_its_answers_are_cached(tmp_path, openai_server,
                                                                                monkeypatch):
    from segbench.flows.spin.taxonomy import build_spin_taxonomy
    from segbench.providers import make_provider
    from segbench.schemas.spin import load_taxonomy
    from segbench.settings import load_settings

    openai_server.handler = _answer
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghijklmnop")
    settings = load_settings(data_root=tmp_path / "data", work_dir=tmp_path / "wd", provider="openai",
                             openai_base_url=openai_server.base_url, openai_model="test-model")
    out = tmp_path / "data" / "spin"
    result = build_spin_taxonomy(out, make_provider(settings))
    parts = len(st.load_catalog().parts)
    assert openai_server.count == parts + 2  # one subpart question per part, one visibility question per proposal
    assert result.counts.not_visible == 1
    assert "- Car-Body: First Gear" in result.diff_markdown
    car = load_taxonomy(out / "taxonomy.yaml").part("Car", "Body")
    assert [(r.name, r.by) for r in car.removed if r.by == st.VISIBILITY_RULE] == [("First Gear", "not-visible")]
    assert "Door" in {s.name for s in car.subparts}

    build_spin_taxonomy(out, make_provider(settings), force=True)
    assert openai_server.count == parts + 2  # replayed from the answer cache


@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
def test_build_spin_taxonomy_asks_the_question_prompt_names(tmp_path, openai_server, monkeypatch):
    from support.cli import run
    from support.openai_server import last_user_message

    from segbench.schemas.spin import load_taxonomy

    def no_subparts(body: dict) -> dict:
        text = last_user_message(body)
        named = (re.search(r"subparts of a (\w+)-(.+?)\. Only", text)  # §8.1's question
                 or re.search(r"Part: the (.+?) of the (\w+)\.", text))  # segbench's, part first
        obj, part = named.groups() if "subparts of a" in text else named.groups()[::-1]
        return {"object": obj, "part": part, "subparts": []}

    openai_server.handler = no_subparts
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghijklmnop")
    monkeypatch.setenv("SEGBENCH_PROVIDER", "openai")
    monkeypatch.setenv("SEGBENCH_OPENAI_BASE_URL", openai_server.base_url)
    taxonomy = tmp_path / "data" / "spin" / "taxonomy.yaml"
    for option, version, asked in ((["--prompt", "segbench"], "1", "Object category: "),
                                   ([], "paper-8.1", "Please list the canonical subparts of a ")):
        seen = len(openai_server.requests)
        run(tmp_path, "build", "spin-taxonomy", *option)
        questions = [last_user_message(r.body) for r in openai_server.requests[seen:]]
        assert questions and all(q.startswith(asked) for q in questions)
        assert load_taxonomy(taxonomy).provider.question_version == version
