"""SPIN taxonomy: WordNet proposals offline, the edit file (exclude / rename / add with provenance),
the diff between two taxonomies, and one test per kind of bad input."""

from __future__ import annotations

import pytest

from segbench.core.errors import InputError
from segbench.schemas.spin import TaxonomyEdits, load_taxonomy
from segbench.tasks.spin import taxonomy as st
from segbench.tasks.spin.taxonomy_diff import diff_markdown, taxonomy_diff

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


def test_the_shipped_edits_apply_to_wordnet_proposals(wordnet):
    from segbench.providers.wordnet_provider import WordNetProvider
    from segbench.registry import offline_answers
    from segbench.schemas.spin import SubpartProposal

    catalog = st.load_catalog()
    provider = WordNetProvider(answers=offline_answers())
    provider._wn = wordnet  # the reader this module already loaded
    answers = provider.answer_many(st.subpart_questions(catalog), SubpartProposal)
    edits, _ = st.load_edits(st.default_edits_path(), catalog)
    outcome = st.apply_edits(catalog, st.proposals_from_answers(catalog, answers), PROPOSER, edits)
    head = next(p for p in outcome.parts if p.key == "Quadruped-Head")
    assert {"name": "Skull", "by": "not-visible.anatomy"} in [r.model_dump() for r in head.removed]
    shell = next(s for p in outcome.parts if p.key == "Reptile-Torso" for s in p.subparts if s.name == "Shell")
    assert shell.objects and "box turtle" in shell.objects and shell.provenance.by == "torso.turtle-shell"
    assert len(outcome.parts) == 40 and outcome.unused_rules == []


def _edits(**rules) -> TaxonomyEdits:
    return TaxonomyEdits.model_validate(rules)


def test_exclusion_rename_and_restricted_addition_with_provenance():
    catalog = st.load_catalog()
    edits = _edits(exclude=[{"id": "hidden", "subparts": ["skull"]}],
                   rename=[{"id": "snout", "parts": ["Quadruped-Head"], "from": "Muzzle", "to": "Snout"}],
                   add=[{"id": "shell", "parts": ["Reptile-Torso"], "subparts": ["Shell"], "objects": ["box turtle"]},
                        {"id": "unused", "parts": ["Fish-Fin"], "subparts": ["Ray"]}])
    proposals = {"Quadruped-Head": ["Ear", "Muzzle", "Skull"], "Reptile-Torso": ["Back"], "Fish-Fin": ["Ray"]}
    outcome = st.apply_edits(catalog, proposals, PROPOSER, edits)
    head = next(p for p in outcome.parts if p.key == "Quadruped-Head")
    assert [s.name for s in head.subparts] == ["Ear", "Snout"]
    snout = head.subparts[1]
    assert snout.provenance.model_dump() == {"proposed_by": PROPOSER, "edit": "renamed", "by": "snout",
                                             "renamed_from": "Muzzle"}
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
    old = _taxonomy(st.apply_edits(catalog, {"Quadruped-Head": ["Ear", "Muzzle", "Skull"]}, PROPOSER,
                                   _edits()).parts)
    new_edits = _edits(exclude=[{"id": "hidden", "subparts": ["Skull"]}],
                       rename=[{"id": "snout", "from": "Muzzle", "to": "Snout"}],
                       add=[{"id": "eye", "parts": ["Quadruped-Head"], "subparts": ["Ear", "Eye"]}])
    new = _taxonomy(st.apply_edits(catalog, {"Quadruped-Head": ["Ear", "Muzzle", "Skull"]}, PROPOSER,
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
    old = _taxonomy(st.apply_edits(catalog, {"Bird-Head": ["Eye"]}, PROPOSER, _edits()).parts)
    new = _taxonomy(st.apply_edits(catalog, {}, PROPOSER,
                                   _edits(add=[{"id": "eye", "parts": ["Bird-Head"], "subparts": ["Eye"]}])).parts)
    (bird,) = taxonomy_diff(old, new).parts
    assert bird.changed == [("Eye", "kept → added by eye; proposed by wordnet:wordnet-3.0 → nobody")]


def test_yaml_round_trip(tmp_path):
    catalog = st.load_catalog()
    taxonomy = _taxonomy(st.apply_edits(catalog, {"Bird-Head": ["Eye", "Beak"]}, PROPOSER, _edits()).parts)
    path = tmp_path / "taxonomy.yaml"
    path.write_text(st.taxonomy_yaml(taxonomy))
    assert load_taxonomy(path) == taxonomy


# --- bad input -----------------------------------------------------------------------------------------

def test_bad_yaml_names_the_line(tmp_path):
    path = tmp_path / "edits.yaml"
    path.write_text("exclude:\n  - id: a\n    subparts: [Skull\n")
    with pytest.raises(InputError, match="not valid YAML at line"):
        st.load_edits(path, st.load_catalog())


def test_unknown_part_in_edits(tmp_path):
    path = tmp_path / "edits.yaml"
    path.write_text("add:\n  - id: wings\n    parts: [Snake-Wing]\n    subparts: [Feather]\n")
    with pytest.raises(InputError, match="rule 'wings': part 'Snake-Wing' matches no PartImageNet part"):
        st.load_edits(path, st.load_catalog())


def test_unknown_object_class_in_edits(tmp_path):
    path = tmp_path / "edits.yaml"
    path.write_text("add:\n  - id: shell\n    parts: [Reptile-Torso]\n    subparts: [Shell]\n    objects: [tabby]\n")
    with pytest.raises(InputError, match="object class 'tabby'"):
        st.load_edits(path, st.load_catalog())


def test_unknown_field_and_repeated_rule_id(tmp_path):
    path = tmp_path / "edits.yaml"
    path.write_text("exclude:\n  - id: a\n    subpart: [Skull]\n")
    with pytest.raises(InputError, match="subpart"):
        st.load_edits(path, st.load_catalog())
    path.write_text("exclude:\n  - {id: a, subparts: [Skull]}\nrename:\n  - {id: a, from: X, to: Y}\n")
    with pytest.raises(InputError, match="used twice"):
        st.load_edits(path, st.load_catalog())


def test_subpart_name_not_in_display_form(tmp_path):
    path = tmp_path / "edits.yaml"
    path.write_text("add:\n  - id: eye\n    parts: [Bird-Head]\n    subparts: [eye]\n")
    with pytest.raises(InputError, match="'Eye'"):
        st.load_edits(path, st.load_catalog())


def test_a_malformed_taxonomy_is_an_input_error(tmp_path):
    path = tmp_path / "taxonomy.yaml"
    path.write_text("version: 1\nparts: []\n")
    with pytest.raises(InputError, match="provider"):
        load_taxonomy(path)
    with pytest.raises(InputError, match="not found"):
        load_taxonomy(tmp_path / "missing.yaml")
