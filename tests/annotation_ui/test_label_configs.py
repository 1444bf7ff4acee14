"""Label config rendering: parameters, escaping, errors, well-formed XML for every template."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from segbench.annotation_ui.kinds import label_configs, render_label_config
from segbench.core.errors import InputError
from segbench.flows.vocab.rounds import DEFAULT_RELATIONS
from segbench.schemas.rounds import slugify

NASTY = "a < b & \"c\" 'd' > e"
PARAMS = {
    "coco_cd_context": {},
    "cafe_verification": {},
    "spin_subparts": {"object": "dog", "part": "head", "subparts": ["eye", "left ear"]},
    "spin_review": {"object": "dog", "part": "head", "subparts": ["eye", "left ear"]},
    "vocab_adjudication": {"categories": ["cat", "dog"]},
}

CONFIGS = label_configs()  # every registered kind's


def render(name, **params):
    return CONFIGS[name].render(**params)


def _controls(root, tag):
    return {el.get("name"): el for el in root.iter(tag)}


def test_the_datasets_register_the_configs_of_their_round_kinds():
    assert sorted(label_configs()) == ["cafe_verification", "coco_cd_context", "spin_review", "spin_subparts",
                                       "vocab_adjudication"]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_config_is_well_formed_and_shows_the_image(name):
    root = ET.fromstring(render(name, **PARAMS[name]))
    assert root.tag == "View"
    images = list(root.iter("Image"))
    assert [(i.get("name"), i.get("value")) for i in images] == [("image", "$image")]
    names = [el.get("name") for el in root.iter() if el.get("name")]
    assert len(names) == len(set(names)), "control names must be unique"
    for control in root.iter():
        if control.get("toName"):
            assert control.get("toName") in names


def test_coco_cd_context_asks_one_of_indoor_outdoor_ambiguous():
    root = ET.fromstring(render_label_config("coco_cd_context"))
    context = _controls(root, "Choices")["context"]
    assert context.get("choice") == "single-radio"
    assert [c.get("value") for c in context] == ["indoor", "outdoor", "ambiguous"]
    assert any("scene" in (h.get("value") or "") for h in root.iter("Header"))


def test_cafe_verification_shows_both_prompts_and_asks_four_yes_no_questions():
    root = ET.fromstring(render_label_config("cafe_verification"))
    texts = {t.get("name"): t.get("value") for t in root.iter("Text")}
    assert texts == {"q_pos": "$q_pos", "q_neg": "$q_neg"}
    choices = _controls(root, "Choices")
    assert list(choices) == ["positive_valid", "negative_invalid", "edit_clean", "mask_fits"]
    assert all([c.get("value") for c in control] == ["yes", "no"] for control in choices.values())


def test_spin_subparts_asks_per_subpart_and_offers_one_polygon_label_each():
    root = ET.fromstring(render_label_config("spin_subparts", object="dog", part="head", subparts=["eye", "left ear"]))
    headers = [h.get("value") for h in root.iter("Header")]
    assert headers[0] == "Can you locate the dog-head enclosed in a polygon?"
    assert any(h.startswith("Can you locate any left ear on the dog-head?") for h in headers)
    assert list(_controls(root, "Choices")) == ["part_visible", "has_eye", "has_left_ear"]
    polygons = _controls(root, "PolygonLabels")["polygons"]
    assert [label.get("value") for label in polygons] == ["eye", "left ear"]


def test_spin_subparts_puts_the_labels_beside_the_image_and_pages_big_parts():
    names = [f"part {i}" for i in range(8)]
    root = ET.fromstring(render_label_config("spin_subparts", object="Car", part="Body", subparts=names,
                                             page=2, pages=3))
    row = root.find("View")
    image_column, side_column = row.findall("View")
    assert "display: flex" in row.get("style") and image_column.find("Image").get("zoom") == "true"
    side = list(side_column.iter())
    labels = next(i for i, el in enumerate(side) if el.tag == "PolygonLabels")
    first_question = next(i for i, el in enumerate(side) if el.tag == "Choices" and el.get("name") == "has_part_0")
    assert labels < first_question  # the labels come first in the side column, not below eight questions
    assert "Subparts, page 2 of 3" in [h.get("value") for h in root.iter("Header")]
    assert len({label.get("background") for label in root.iter("Label")}) == 8  # eight distinct colours
    with pytest.raises(InputError, match="9 subparts on one page"):
        render_label_config("spin_subparts", object="Car", part="Body", subparts=[*names, "extra"])
    with pytest.raises(InputError, match="not a page number"):
        render_label_config("spin_subparts", object="Car", part="Body", subparts=names, page=4, pages=3)


def test_vocab_adjudication_adds_none_and_default_relations():
    root = ET.fromstring(render("vocab_adjudication", categories=["cat", "dog"]))
    assert {t.get("name"): t.get("value") for t in root.iter("Text")} == {"description": "$description"}
    choices = _controls(root, "Choices")
    assert [c.get("value") for c in choices["category"]] == ["cat", "dog", "none"]
    assert [c.get("value") for c in choices["relation"]] == list(DEFAULT_RELATIONS)
    custom = ET.fromstring(render("vocab_adjudication", categories=["cat"], relations=["exact", "none"]))
    assert [c.get("value") for c in _controls(custom, "Choices")["relation"]] == ["exact", "none"]


def test_user_strings_are_escaped_in_attributes_and_round_trip():
    xml = render("vocab_adjudication", categories=[NASTY, "plain"])
    assert NASTY not in xml and "&amp;" in xml and "&lt;" in xml
    root = ET.fromstring(xml)
    assert [c.get("value") for c in _controls(root, "Choices")["category"]] == [NASTY, "plain", "none"]

    xml = render_label_config("spin_subparts", object='big "dog"', part="head & neck", subparts=[NASTY])
    root = ET.fromstring(xml)
    assert root.find(".//Header").get("value") == 'Can you locate the big "dog"-head & neck enclosed in a polygon?'
    assert [label.get("value") for label in root.iter("Label")] == [NASTY]
    assert "has_a_b_c_d_e" in _controls(root, "Choices")


def test_unknown_config_lists_the_known_ones():
    with pytest.raises(InputError, match="unknown label config 'nope'") as caught:
        render_label_config("nope")
    assert "coco_cd_context" in str(caught.value) and "spin_subparts" in str(caught.value)


def test_missing_and_unexpected_params_are_named():
    with pytest.raises(InputError, match="missing part, subparts"):
        render_label_config("spin_subparts", object="dog")
    with pytest.raises(InputError, match="unexpected colour"):
        render_label_config("coco_cd_context", colour="red")


@pytest.mark.parametrize(
    "params, rule",
    [
        ({"categories": []}, "non-empty list"),
        ({"categories": "cat"}, "non-empty list"),
        ({"categories": ["cat", "cat"]}, "repeats cat"),
        ({"categories": ["cat", ""]}, "non-empty string"),
        ({"categories": ["cat", 3]}, "non-empty string"),
        ({"categories": ["none"]}, "'none' is added"),
        ({"categories": ["bad\x01char"]}, "control character"),
    ],
)
def test_bad_categories_are_refused(params, rule):
    with pytest.raises(InputError, match=rule):
        render("vocab_adjudication", **params)


def test_subparts_must_give_distinct_control_names_and_no_task_variables():
    with pytest.raises(InputError, match="same control name has_left_ear"):
        render_label_config("spin_subparts", object="dog", part="head", subparts=["left ear", "Left-Ear"])
    with pytest.raises(InputError, match="task data"):
        render_label_config("spin_subparts", object="$image", part="head", subparts=["eye"])


def test_slugify():
    assert slugify("Left Ear (outer)") == "left_ear_outer"
    assert slugify("—") == "x"
