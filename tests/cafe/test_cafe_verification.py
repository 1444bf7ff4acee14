"""The CAFE verification round: majority verdicts, the table, the items, the outline."""

from __future__ import annotations

import numpy as np
from PIL import Image

from segbench.schemas.cafe import Candidate, Target
from segbench.schemas.edits import EditPlan, EditType
from segbench.schemas.rounds import ItemAnswer
from segbench.tasks.cafe.verification import (
    CONTROLS,
    OUTLINE_COLOUR,
    outline,
    round_items,
    verdict,
    verification_table,
)


def _candidate(number: int, edit_type: EditType, q_pos: str, q_neg: str) -> Candidate:
    target = Target(key=f"coco:{number}:{number * 10}", source="coco", image_id=number, annotation_id=number * 10,
                    category_id=86, object_name="vase", file_name=f"{number}.jpg", width=30, height=20, area=40,
                    area_fraction=40 / 600, bbox=(5, 2, 4, 10), segmentation={"size": [20, 30], "counts": "x"})
    plan = EditPlan(target_key=target.key, edit_type=edit_type, object_name="vase", q_pos=q_pos, q_neg=q_neg,
                    instruction="edit it")
    stem = f"coco_{number}_{number * 10}_{edit_type.abbr}"
    return Candidate(id=number, key=f"{target.key}:{edit_type.abbr}", target=target, plan=plan,
                     image=f"images/{stem}.jpg", review_image=f"review/{stem}.jpg", edit_seed=1)


CANDIDATES = [_candidate(1, EditType.SM, "vase", "watermelon"), _candidate(2, EditType.CC, "vase", "toy vase"),
              _candidate(3, EditType.OC, "gold figurine", "vase")]


def _answer(item: str, **majority) -> ItemAnswer:
    values = {c: "yes" for c in CONTROLS} | majority
    return ItemAnswer(item_id=item, annotators=["a", "b", "c"], majority=values,
                      agreement={c: 1.0 for c in values})


def test_verified_only_when_the_majority_says_yes_to_all_four():
    assert verdict(_answer("1")) == (True, [])
    assert verdict(_answer("1", edit_clean="no")) == (False, ["edit_clean: no"])
    assert verdict(_answer("1", mask_fits=None)) == (False, ["mask_fits: tie"])
    partial = ItemAnswer(item_id="1", annotators=["a"], majority={"positive_valid": "yes"},
                         agreement={"positive_valid": 1.0})
    assert verdict(partial)[1] == ["negative_invalid: unanswered", "edit_clean: unanswered", "mask_fits: unanswered"]
    assert verdict(None) == (False, ["unanswered"])


def test_table_counts_per_edit_type():
    table = verification_table(CANDIDATES, [_answer("1"), _answer("2", positive_valid="no")])
    assert table.edit_types["SM"].model_dump() == {"items": 1, "answered": 1, "verified": 1, "verified_share": 1.0,
                                                   **{c: 0 for c in CONTROLS}}
    assert table.edit_types["CC"].verified == 0 and table.edit_types["CC"].positive_valid == 1
    assert table.edit_types["OC"].answered == 0 and table.edit_types["OC"].verified_share is None
    assert table.overall.items == 3 and table.overall.verified == 1


def test_round_items_show_the_review_image_and_the_prompts():
    items = round_items(CANDIDATES, "cafe_candidates")
    assert [i.item_id for i in items] == ["1", "2", "3"]
    assert items[0].image == "cafe_candidates/review/coco_1_10_SM.jpg" and (items[0].width, items[0].height) == (30, 20)
    assert items[2].data == {"q_pos": "gold figurine", "q_neg": "vase", "edit_type": EditType.OC.value}
    assert [i.batch for i in items] == [c.plan.edit_type.abbr for c in CANDIDATES]  # launched per subset
    assert {i.batch for i in items} <= {"SM", "CC", "OC"} and items[0].batch == "SM"


def test_outline_is_drawn_outside_the_mask_only():
    mask = np.zeros((10, 10), bool)
    mask[4:6, 4:6] = True
    out = np.asarray(outline(Image.new("RGB", (10, 10), (0, 0, 0)), mask, width=1))
    ring = np.all(out == OUTLINE_COLOUR, axis=-1)
    assert not (ring & mask).any() and ring.sum() == 8  # the 4-neighbour ring of a 2x2 square
