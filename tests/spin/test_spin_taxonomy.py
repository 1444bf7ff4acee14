"""SPIN taxonomy: WordNet proposals offline, the edit file (exclude / rename / add with provenance),
the diff between two taxonomies, and one test per kind of bad input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from segbench.core.errors import InputError
from segbench.schemas.spin import TaxonomyEdits, load_taxonomy
from segbench.tasks.spin import taxonomy as st
from segbench.tasks.spin import taxonomy_edits as se
from segbench.tasks.spin.taxonomy_diff import TaxonomyDiff, diff_markdown, taxonomy_diff

PROPOSER = "wordnet:wordnet-3.0"


@pytest.fixture(scope="module")
def wordnet(tmp_path_factory):
    from segbench.providers.wordnet_data import load_wordnet

    return load_wordnet(tmp_path_factory.mktemp("nltk"))


def test_wordnet_proposes_meronyms_of_the_sense_that_belongs_to_the_object(wordnet):
    from segbench.tasks.spin.wordnet import wordnet_subparts

    catalog = st.load_catalog()
    plane_wing = wordnet_subparts(wordnet, part="Wing", wnids=catalog.wnids("Aeroplane"), animal=False)
    assert {"Aileron", "Flap"} <= set(plane_wing)  # wing.n.02 (aircraft), not a bird's wing
    head = wordnet_subparts(wordnet, part="Head", wnids=catalog.wnids("Quadruped"), animal=True,
                            other_parts=["Torso", "Legs", "Tail"])
    assert {"Ear", "Skull"} <= set(head) and "Torso" not in head


# The paper's own words (seed 001, supplementary §8.2), parsed independently of the shipped YAML.
PAPER_TEXT = Path(__file__).with_name("paper_final_taxonomy.txt")
RELEASE_PARTS = {"Foot": "Legs", "Hand": "Arm", "Tier": "Tire", "Side-mirror": "Side Mirror",
                 "Bottle-mouth": "Mouth"}
ANIMAL_BODY = {"Quadruped", "Biped", "Fish", "Bird", "Snake", "Reptile"}


def paper_triples() -> set[tuple[str, str, str]]:
    out = set()
    for line in PAPER_TEXT.read_text("utf-8").splitlines():
        if not line.startswith("•"):
            continue
        obj, rest = (x.strip() for x in line[1:].split("$\\rightarrow$"))
        for clause in filter(None, (c.strip() for c in re.split(r"\.\s*", rest))):
            part, subs = (x.strip() for x in clause.split(":", 1))
            part = RELEASE_PARTS.get(part, part)
            part = "Torso" if part == "Body" and obj in ANIMAL_BODY else part
            for sub in filter(None, (x.strip() for x in re.split(r",\s*(?:and\s+)?|\s+and\s+", subs))):
                out.add((obj, part, sub.lower()))
    return out


def wordnet_proposals(wordnet) -> dict[str, list[str]]:
    from segbench.providers.wordnet_provider import WordNetProvider
    from segbench.registry import offline_answers
    from segbench.schemas.spin import SubpartProposal

    catalog = st.load_catalog()
    provider = WordNetProvider(answers=offline_answers())
    provider._wn = wordnet  # the reader this module already loaded
    answers = provider.answer_many(st.subpart_questions(catalog), SubpartProposal)
    return st.proposals_from_answers(catalog, answers)


def test_the_shipped_edits_give_the_papers_final_taxonomy_from_any_proposer(wordnet):
    catalog = st.load_catalog()
    edits, _ = se.load_edits(se.default_edits_path(), catalog)
    expected = paper_triples()
    assert len(expected) == 203
    for proposals in (wordnet_proposals(wordnet), {}, {"Car-Body": ["First Gear", "Odometer", "Door"]}):
        outcome = se.apply_edits(catalog, proposals, PROPOSER, edits)
        built = {(p.object, p.part, s.name.lower()) for p in outcome.parts for s in p.subparts}
        assert built == expected
        names = [s.name for p in outcome.parts for s in p.subparts]
        assert all("-" not in n and n == st.normalise_name(n) for n in names)
        assert {"Toes/Hoof", "Bell or Horn", "Thigh/Upper Arm"} <= set(names)
        assert outcome.unused_rules == []
    legs = next(p for p in outcome.parts if p.key == "Quadruped-Legs")
    assert legs.part == "Legs" and legs.partimagenet_id == 2
    assert "Car-Side Mirror-Mirror Glass" in {s.category for p in outcome.parts for s in p.subparts}


def test_the_proposers_recall_and_precision_against_the_reference(wordnet):
    catalog = st.load_catalog()
    edits, _ = se.load_edits(se.default_edits_path(), catalog)
    outcome = se.apply_edits(catalog, wordnet_proposals(wordnet), PROPOSER, edits)
    total = se.total_score(outcome.scores)
    assert total.reference == 203 and 0 < total.recall < 0.5 and 0 < total.precision < total.recall
    car = next(s for s in outcome.scores if s.part == "Car-Body")
    assert car.reference == 23 and car.matched_reference >= 5  # WordNet knows a car's hood, roof, bumper...
    torso = next(p for p in outcome.parts if p.key == "Quadruped-Torso")
    shoulders = next(s for s in torso.subparts if s.name == "Shoulders")
    assert shoulders.provenance.model_dump() == {"proposed_by": PROPOSER, "edit": "renamed", "by": "reference",
                                                 "renamed_from": "Shoulder", "restricted_by": None}


def test_the_shipped_restrictions_ask_a_shell_only_of_turtles_and_name_their_rule():
    catalog = st.load_catalog()
    edits, _ = se.load_edits(se.default_edits_path(), catalog)
    outcome = se.apply_edits(catalog, {}, PROPOSER, edits)
    restricted = {f"{p.key}-{s.name}": s for p in outcome.parts for s in p.subparts if s.objects is not None}
    assert len(restricted) == 18 and outcome.unused_rules == []  # as docs/how-to/spin.md says
    shell = restricted["Reptile-Torso-Shell"]
    assert shell.objects == ["loggerhead", "leatherback turtle", "mud turtle", "terrapin", "box turtle"]
    assert shell.provenance.restricted_by == "turtle-shell" and shell.provenance.edit == "added"
    assert shell.applies_to("box turtle") and not shell.applies_to("bullfrog")
    assert restricted["Snake-Torso-Rattler"].objects == ["diamondback", "sidewinder"]
    assert restricted["Quadruped-Head-Horns"].objects == ["ox", "water buffalo", "ram", "bighorn", "ibex",
                                                          "hartebeest", "impala", "gazelle"]
    assert {"Reptile-Torso-Belly", "Quadruped-Head-Eyes"}.isdisjoint(restricted)  # the rest generalise
    assert [s.name for s in outcome_part(outcome, "Reptile-Torso").subparts if s.applies_to("bullfrog")] == [
        "Back", "Belly", "Dorsal Fin", "Neck", "Side"]


def outcome_part(outcome, key: str):
    return next(p for p in outcome.parts if p.key == key)


def test_a_restriction_narrows_an_earlier_one_and_names_classes_by_synset_wnid_or_name():
    catalog = st.load_catalog()
    edits = TaxonomyEdits.model_validate({
        "add": [{"id": "shell", "parts": ["Reptile-Torso"], "subparts": ["Shell"],
                 "objects": ["box turtle", "mud turtle", "bullfrog"]}],
        "restrict": [{"id": "turtles", "parts": ["Reptile-Torso"], "subparts": ["shell", "Scute"],
                      "objects": ["turtle.n.02", "n01641577"]},
                     {"id": "unused", "parts": ["Reptile-Head"], "subparts": ["Shell"], "objects": ["terrapin"]}]})
    outcome = se.apply_edits(catalog, {}, PROPOSER, edits)
    shell = outcome_part(outcome, "Reptile-Torso").subparts[0]
    # turtle.n.02 and the bullfrog's wnid within the added three; catalogue order
    assert shell.objects == ["bullfrog", "mud turtle", "box turtle"] and shell.provenance.restricted_by == "turtles"
    assert outcome.unused_rules == ["unused"]  # no Shell on a reptile's head to restrict


def test_the_shipped_classes_synsets_are_wordnets_hypernyms(wordnet):
    catalog = st.load_catalog()
    for wnid, name, _ in catalog.classes:
        synset = wordnet.synset_from_pos_and_offset("n", int(wnid[1:]))
        above = {h.name() for h in synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms())}
        assert catalog.synsets[wnid] == {synset.name(), *above}, name


def test_reference_keeps_matches_under_its_names_removes_the_rest_and_adds_the_missing():
    catalog = st.load_catalog()
    edits = _edits(reference={"Quadruped-Legs": ["Toes/Hoof", "Knee/Elbow", "Claws"],
                              "Bird-Head": ["Eyes", "Beak"]})
    proposals = {"Quadruped-Legs": ["Hoof", "Toe", "Knee", "Skull"], "Bird-Head": ["Beak"]}
    outcome = se.apply_edits(catalog, proposals, PROPOSER, edits)
    legs = next(p for p in outcome.parts if p.key == "Quadruped-Legs")
    assert [s.name for s in legs.subparts] == ["Claws", "Knee/Elbow", "Toes/Hoof"]
    assert {(r.name, r.by) for r in legs.removed} == {("Toe", "reference"), ("Skull", "reference")}
    assert legs.subparts[0].provenance.edit == "added" and legs.subparts[1].provenance.renamed_from == "Knee"
    beak = next(p for p in outcome.parts if p.key == "Bird-Head").subparts[0]
    assert beak.name == "Beak" and beak.provenance.edit == "kept"
    assert not next(p for p in outcome.parts if p.key == "Car-Body").subparts  # left out: no subparts
    scores = {s.part: s for s in outcome.scores}
    assert (scores["Quadruped-Legs"].recall, scores["Quadruped-Legs"].precision) == (2 / 3, 3 / 4)
    assert (scores["Bird-Head"].recall, scores["Bird-Head"].precision) == (1 / 2, 1.0)
    assert scores["Car-Body"].recall is None
    text = diff_markdown(TaxonomyDiff(proposer=outcome.scores))
    assert "Recall 60.0% (3 of 5 reference subparts proposed)" in text
    assert "| Quadruped-Legs | 3 | 4 | 66.7% | 75.0% |" in text


def test_proposed_names_are_normalised_to_display_form():
    assert st.normalise_name("Internal-combustion engine") == "Internal Combustion Engine"
    assert st.normalise_name("bell or horn") == "Bell or Horn"
    assert st.normalise_name("toes / hoof") == "Toes/Hoof"
    assert st.match_keys("Eyes") == st.match_keys("eye") and st.match_keys("Hoof") <= st.match_keys("Toes/Hoof")


def _edits(**rules) -> TaxonomyEdits:
    return TaxonomyEdits.model_validate(rules)


def test_exclusion_rename_and_restricted_addition_with_provenance():
    catalog = st.load_catalog()
    edits = _edits(exclude=[{"id": "hidden", "subparts": ["skull"]}],
                   rename=[{"id": "snout", "parts": ["Quadruped-Head"], "from": "Muzzle", "to": "Snout"}],
                   add=[{"id": "shell", "parts": ["Reptile-Torso"], "subparts": ["Shell"], "objects": ["box turtle"]},
                        {"id": "unused", "parts": ["Fish-Fin"], "subparts": ["Ray"]}])
    proposals = {"Quadruped-Head": ["Ear", "Muzzle", "Skull"], "Reptile-Torso": ["Back"], "Fish-Fin": ["Ray"]}
    outcome = se.apply_edits(catalog, proposals, PROPOSER, edits)
    head = next(p for p in outcome.parts if p.key == "Quadruped-Head")
    assert [s.name for s in head.subparts] == ["Ear", "Snout"]
    snout = head.subparts[1]
    assert snout.provenance.model_dump() == {"proposed_by": PROPOSER, "edit": "renamed", "by": "snout",
                                             "renamed_from": "Muzzle", "restricted_by": None}
    assert snout.category == "Quadruped-Head-Snout"
    assert [r.model_dump() for r in head.removed] == [{"name": "Skull", "by": "hidden"}]
    torso = next(p for p in outcome.parts if p.key == "Reptile-Torso")
    shell = torso.subparts[1]
    assert shell.objects == ["box turtle"] and shell.provenance.edit == "added" and shell.provenance.proposed_by is None
    assert shell.applies_to("box turtle") and not shell.applies_to("Komodo dragon")
    assert outcome.unused_rules == ["unused"]  # Ray was proposed already: the addition changed nothing


def _taxonomy(parts):
    return st.build_taxonomy(parts, provider="wordnet", model="wordnet-3.0", edits_file="e.yaml", edits_sha256="a" * 64)


def test_diff_between_two_hand_written_taxonomies():
    catalog = st.load_catalog()
    old = _taxonomy(se.apply_edits(catalog, {"Quadruped-Head": ["Ear", "Muzzle", "Skull"]}, PROPOSER,
                                   _edits()).parts)
    new_edits = _edits(exclude=[{"id": "hidden", "subparts": ["Skull"]}],
                       rename=[{"id": "snout", "from": "Muzzle", "to": "Snout"}],
                       add=[{"id": "eye", "parts": ["Quadruped-Head"], "subparts": ["Ear", "Eye"]}])
    new = _taxonomy(se.apply_edits(catalog, {"Quadruped-Head": ["Ear", "Muzzle", "Skull"]}, PROPOSER,
                                   new_edits).parts)
    diff = taxonomy_diff(old, new)
    (head,) = diff.parts
    assert (head.added, head.removed, head.renamed) == (["Eye"], ["Skull"], [("Muzzle", "Snout")])
    text = diff_markdown(diff)
    assert "## Quadruped-Head" in text and "- renamed: Muzzle → Snout" in text and "- removed: Skull" in text
    assert diff_markdown(taxonomy_diff(new, new)).endswith("No changes.\n")
    assert taxonomy_diff(None, new).first_build


def test_provenance_change_is_reported():
    catalog = st.load_catalog()
    old = _taxonomy(se.apply_edits(catalog, {"Bird-Head": ["Eye"]}, PROPOSER, _edits()).parts)
    new = _taxonomy(se.apply_edits(catalog, {}, PROPOSER,
                                   _edits(add=[{"id": "eye", "parts": ["Bird-Head"], "subparts": ["Eye"]}])).parts)
    (bird,) = taxonomy_diff(old, new).parts
    assert bird.changed == [("Eye", "kept → added by eye; proposed by wordnet:wordnet-3.0 → nobody")]


def test_yaml_round_trip(tmp_path):
    catalog = st.load_catalog()
    taxonomy = _taxonomy(se.apply_edits(catalog, {"Bird-Head": ["Eye", "Beak"]}, PROPOSER, _edits()).parts)
    path = tmp_path / "taxonomy.yaml"
    path.write_text(st.taxonomy_yaml(taxonomy))
    assert load_taxonomy(path) == taxonomy


# --- bad input -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("edits", "match"), [
    ("exclude:\n  - id: a\n    subparts: [Skull\n", "not valid YAML at line"),
    ("add:\n  - id: wings\n    parts: [Snake-Wing]\n    subparts: [Feather]\n",
     "rule 'wings': part 'Snake-Wing' matches no PartImageNet part"),
    ("add:\n  - id: shell\n    parts: [Reptile-Torso]\n    subparts: [Shell]\n    objects: [tabby]\n",
     "object class 'tabby'"),
    ("exclude:\n  - id: a\n    subpart: [Skull]\n", "subpart"),  # an unknown field
    ("exclude:\n  - {id: a, subparts: [Skull]}\nrename:\n  - {id: a, from: X, to: Y}\n", "used twice"),
    ("reference:\n  Snake-Wing: [Feather]\n", "'Snake-Wing' is not a PartImageNet part"),
    ("reference:\n  Car-Body: [Internal-combustion Engine]\n", "'Internal Combustion Engine'"),  # display form
    ("add:\n  - id: eye\n    parts: [Bird-Head]\n    subparts: [eye]\n", "'Eye'"),  # display form
    ("restrict:\n  - {id: shell, parts: [Reptile-Torso], subparts: [Shell], objects: [turtle.n.02, tortoise.n.99]}\n",
     "rule 'shell': 'tortoise.n.99' names no ImageNet class of Reptile"),
    ("restrict:\n  - {id: shell, parts: [Reptile-Torso, Snake-Torso], subparts: [Shell], objects: [turtle.n.02]}\n",
     "rule 'shell': its objects name no ImageNet class of Snake"),
    ("restrict:\n  - {id: shell, parts: [Reptile-Torso], subparts: [Shell]}\n", "objects"),
], ids=["yaml-syntax", "unknown-part", "unknown-object-class", "unknown-field", "repeated-rule-id",
        "reference-unknown-part", "reference-name-form", "subpart-name-form", "restrict-unknown-synset",
        "restrict-object-without-classes", "restrict-without-objects"])
def test_bad_edits_name_the_rule(tmp_path, edits, match):
    path = tmp_path / "edits.yaml"
    path.write_text(edits)
    with pytest.raises(InputError, match=match):
        se.load_edits(path, st.load_catalog())


def test_a_malformed_taxonomy_is_an_input_error(tmp_path):
    path = tmp_path / "taxonomy.yaml"
    path.write_text("version: 1\nparts: []\n")
    with pytest.raises(InputError, match="provider"):
        load_taxonomy(path)
    with pytest.raises(InputError, match="not found"):
        load_taxonomy(tmp_path / "missing.yaml")


def test_a_models_proposals_that_look_wrong_as_a_whole_are_named():
    same = {"Car-Body": ["Door", "Wheel"], "Car-Tire": ["Wheel", "Door"], "Bird-Head": ["Door", "Wheel"]}
    assert st.proposal_suspicions(same, []) == ["every one of the 3 parts got the same subparts (Door, Wheel)"]
    echoed = {"Car-Body": ["Eye", "Ear"], "Car-Tire": ["Ear", "Eye", "Hub"], "Bird-Head": ["Eye", "Ear"],
              "Bird-Wing": ["Feather"]}
    assert st.proposal_suspicions(echoed, [True, False], st.PROMPTS["segbench"].example) == [
        "the prompt's example (Ear, Eye) was given for 2 of 4 parts that are no head"]  # a head may have them
    assert st.proposal_suspicions(echoed, [True, False], st.PROMPTS["paper"].example) == [], \
        "§8.1's question gives no example to echo"
    assert st.proposal_suspicions({"Car-Body": ["Door"]}, [False] * 10) == [
        "every one of the 10 proposals was judged not visible"]
    assert st.proposal_suspicions({"Car-Body": ["Door"], "Bird-Head": ["Beak"]}, [True, False] * 5) == []


def test_the_default_question_is_section_8_1s_word_for_word_and_its_version_is_recorded():
    catalog = st.load_catalog()
    paper = {q.inputs["partimagenet_id"]: q for q in st.subpart_questions(catalog)}
    own = {q.inputs["partimagenet_id"]: q for q in st.subpart_questions(catalog, "segbench")}
    head = next(part for part in catalog.parts if (part.object, part.spin_name) == ("Quadruped", "Head"))
    assert paper[head.id].user == ("Please list the canonical subparts of a Quadruped-Head. Only include subparts "
                                   "that are clearly visible and recognizable to a layperson.")
    assert paper[head.id].version == "paper-8.1" and own[head.id].version == "1"
    # Each question has its own cache key, so answers to one are never replayed for the other.
    assert (paper[head.id].version, paper[head.id].user) != (own[head.id].version, own[head.id].user)
    assert st.build_taxonomy([], provider="p", model="m", edits_file="e", edits_sha256="0" * 64
                             ).provider.question_version == "paper-8.1"


def test_the_command_lines_choices_are_the_questions_and_mask_rules_there_are():
    from segbench.cli.spin import MaskAggregation, SubpartPromptName
    from segbench.tasks.spin import crowd

    assert [choice.value for choice in SubpartPromptName] == list(st.PROMPTS)
    assert [choice.value for choice in MaskAggregation] == [*crowd.MASK_AGGREGATIONS, *crowd.RENAMED]
