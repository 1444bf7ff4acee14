"""The context rule of seed 002 on hand-made evidence (image 200 x 100 = 20,000 px)."""

import pytest

from segbench.schemas.coco_cd import CocoCdParams
from segbench.tasks.coco_cd.context import classify_context, context_of_class, evidence_slots, indoor_share

AREA = 200 * 100


@pytest.mark.parametrize(
    ("indoor", "outdoor", "expected"),
    [
        (4900, 5100, "outdoor"),  # indoor share 0.49
        (5000, 5000, "indoor"),  # share exactly 0.5 goes to indoor
        (5100, 4900, "indoor"),
        (400, 0, "indoor"),  # indoor area exactly 2 % of the image
        (200, 0, "unknown"),  # 1 %
        (399, 0, "unknown"),
        (0, 400, "outdoor"),
        (100, 300, "unknown"),  # outdoor share 0.75 but outdoor area 1.5 %
        (0, 0, "unknown"),  # no evidence (e.g. only neutral classes)
    ],
)
def test_classify_context_thresholds(indoor, outdoor, expected):
    assert classify_context(indoor, outdoor, AREA) == expected


def test_thresholds_are_parameters():
    assert classify_context(300, 0, AREA, min_area=0.01) == "indoor"
    assert classify_context(6000, 4000, AREA, share=0.7) == "unknown"
    assert classify_context(3000, 7000, AREA, share=0.7) == "unknown"  # outdoor share must exceed 0.7
    assert classify_context(2000, 8000, AREA, share=0.7) == "outdoor"


def test_fractional_areas_compare_exactly():
    # 0.02 * 20000 is 400.00000000000006 in binary floating point; the rule means 400.
    assert classify_context(400.0, 0.0, 20000.0) == "indoor"
    assert classify_context(399.5, 0.0, 20000.0) == "unknown"


def test_class_precedence_and_neutral_classes():
    params = CocoCdParams()
    lists = {"indoor": params.indoor, "outdoor": params.outdoor, "neutral": params.neutral}
    assert context_of_class("carpet", **lists) == "indoor"
    assert context_of_class("tv", **lists) == "indoor"
    assert context_of_class("grass", **lists) == "outdoor"
    assert context_of_class("car", **lists) == "outdoor"
    for neutral in ("wall-other", "floor-wood", "cell phone", "house", "window-other"):
        assert context_of_class(neutral, **lists) is None
    assert context_of_class("person", **lists) is None  # on no list
    assert context_of_class("other", **lists) is None  # COCO-Stuff's "all things" class
    # neutral wins even if a user also lists the class as indoor
    assert context_of_class("paper", indoor=["paper"], outdoor=[], neutral=["paper"]) is None


def test_target_classes_never_count_as_evidence():
    slots = evidence_slots({17: "cat", 18: "dog", 62: "chair", 3: "car", 171: "wall-brick"},
                           indoor=["chair", "cat"], outdoor=["car"], neutral=["wall-brick"], exclude=["cat", "dog"])
    assert slots == {62: 0, 3: 1}


def test_indoor_share():
    assert indoor_share(49, 51) == pytest.approx(0.49)
    assert indoor_share(0, 0) is None
