"""CAFE target selection: area bounds, crowd, sole instance, per-image limit, quotas, seed, names,
edit-type dealing, and the bad inputs (malformed and empty masks) under both import policies."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from segbench.core.coco import load_coco
from segbench.core.errors import AnnotationError, ImportPolicy, OnError
from segbench.core.io import write_json
from segbench.schemas.cafe import CafeParams, SourceSpec
from segbench.schemas.edits import EditType
from segbench.tasks.cafe.targets import deal_edit_types, object_name, select_targets

W, H = 100, 100  # 10,000 pixels: a rectangle of a x b pixels is a fraction a*b/10,000


def _rect(x0: int, y0: int, x1: int, y1: int) -> list[list[float]]:
    return [[x0, y0, x1, y0, x1, y1, x0, y1]]


def _ann(ann_id: int, image_id: int, cat: int, box: tuple[int, int, int, int], crowd: int = 0) -> dict:
    x0, y0, x1, y1 = box
    return {"id": ann_id, "image_id": image_id, "category_id": cat, "segmentation": _rect(*box),
            "area": float((x1 - x0) * (y1 - y0)), "bbox": [x0, y0, x1 - x0, y1 - y0], "iscrowd": crowd}


def _coco(tmp_path: Path, images: int, anns: list[dict], categories=None) -> Path:
    doc = {"images": [{"id": i, "file_name": f"{i}.jpg", "width": W, "height": H} for i in range(1, images + 1)],
           "annotations": anns,
           "categories": categories or [{"id": 1, "name": "vase"}, {"id": 2, "name": "dog"}, {"id": 3, "name": "cat"}]}
    return write_json(tmp_path / "instances.json", doc)


def _select(path: Path, params: CafeParams | None = None, source: str = "coco", policy: ImportPolicy | None = None,
            **limits):
    policy = policy or ImportPolicy()
    return select_targets(load_coco(path, policy=policy), source, params or CafeParams(), policy, **limits)


def test_area_bounds_are_inclusive_fractions_of_the_image(tmp_path):
    anns = [_ann(1, 1, 1, (0, 0, 10, 20)),    # 200 px = 0.02: kept (lower bound)
            _ann(2, 2, 1, (0, 0, 10, 19)),    # 190 px = 0.019: too small
            _ann(3, 3, 1, (0, 0, 60, 100)),   # 6000 px = 0.6: kept (upper bound)
            _ann(4, 4, 1, (0, 0, 61, 100))]   # 0.61: too large
    targets = _select(_coco(tmp_path, 4, anns))
    assert [t.annotation_id for t in targets] == [1, 3]
    assert targets[0].area == 200 and targets[0].area_fraction == pytest.approx(0.02)
    assert targets[0].bbox == (0.0, 0.0, 10.0, 20.0) and targets[0].key == "coco:1:1"
    wider = _select(_coco(tmp_path, 4, anns), CafeParams(min_area_fraction=0.01, max_area_fraction=0.7))
    assert [t.annotation_id for t in wider] == [1, 2, 3, 4]


def test_crowd_and_repeated_categories_are_never_targets(tmp_path):
    anns = [_ann(1, 1, 1, (0, 0, 30, 30), crowd=1),                            # crowd
            _ann(2, 2, 2, (0, 0, 30, 30)), _ann(3, 2, 2, (50, 50, 80, 80)),    # two dogs in one image
            _ann(4, 3, 3, (0, 0, 30, 30)), _ann(5, 3, 3, (50, 50, 60, 55), crowd=1)]  # a cat + a crowd of cats
    assert _select(_coco(tmp_path, 3, anns)) == []
    relaxed = _select(_coco(tmp_path, 3, anns), CafeParams(sole_instance=False, targets_per_image=5))
    assert sorted(t.annotation_id for t in relaxed) == [2, 3, 4]  # still no crowd


def test_one_target_per_image_by_default_and_more_on_request(tmp_path):
    anns = [_ann(1, 1, 1, (0, 0, 30, 30)), _ann(2, 1, 2, (40, 40, 70, 70)), _ann(3, 1, 3, (0, 70, 30, 100))]
    path = _coco(tmp_path, 1, anns)
    assert len(_select(path)) == 1
    assert len(_select(path, CafeParams(targets_per_image=2))) == 2
    assert len(_select(path, CafeParams(targets_per_image=9))) == 3


def test_a_limit_takes_a_seeded_subset_and_the_seed_changes_it(tmp_path):
    path = _coco(tmp_path, 40, [_ann(i, i, 1, (0, 0, 30, 30)) for i in range(1, 41)])
    first = _select(path, CafeParams(seed=1), limit=10)
    again = _select(path, CafeParams(seed=1), limit=10)
    other = _select(path, CafeParams(seed=2), limit=10)
    assert len(first) == 10 and first == again
    assert {t.image_id for t in first} != {t.image_id for t in other}
    assert len(_select(path)) == 40 and len(_select(path, limit=0)) == 0


def test_a_top_up_continues_the_same_draw_past_what_was_drawn(tmp_path):
    anns = [_ann(i, i, 1, (0, 0, 30, 30)) for i in range(1, 21)] + [_ann(100 + i, i, 2, (50, 50, 80, 80))
                                                                     for i in range(1, 21)]
    path = _coco(tmp_path, 20, anns)
    first = _select(path, CafeParams(seed=4), limit=6)
    more = _select(path, CafeParams(seed=4), limit=5, exclude={t.key for t in first})
    both = _select(path, CafeParams(seed=4), limit=11)
    # The second batch is the next five of the one seeded order, on images the first did not use
    # (one target per image, across batches too).
    assert sorted(t.key for t in first + more) == sorted(t.key for t in both)
    assert not {t.image_id for t in first} & {t.image_id for t in more}


def test_lvis_and_saco_names():
    assert object_name({}, {"name": "dining_table"}) == "dining table"
    assert object_name({}, {"name": "bat_(animal)"}) == "bat"
    assert object_name({"text_input": "  striped   vase "}, {"name": "object"}) == "striped vase"


def test_saco_photos_listed_once_per_phrase_count_as_one_image(tmp_path):
    doc = {"images": [{"id": 1, "file_name": "p.jpg", "width": W, "height": H, "text_input": "vase"},
                      {"id": 2, "file_name": "p.jpg", "width": W, "height": H, "text_input": "dog"}],
           "annotations": [_ann(1, 1, 1, (0, 0, 30, 30)), _ann(2, 2, 1, (50, 50, 90, 90))],
           "categories": [{"id": 1, "name": "object"}]}
    targets = _select(write_json(tmp_path / "saco.json", doc), source="saco")
    assert len(targets) == 1 and targets[0].object_name in {"vase", "dog"}


def test_lvis_annotations_without_iscrowd_are_eligible(tmp_path):
    ann = _ann(1, 1, 1, (0, 0, 30, 30))
    del ann["iscrowd"]
    assert len(_select(_coco(tmp_path, 1, [ann]), source="lvis")) == 1


def test_a_malformed_segmentation_fails_or_is_skipped(tmp_path):
    bad = _ann(1, 1, 1, (0, 0, 30, 30)) | {"segmentation": [[0, 0, 10, 0]]}  # 2 points
    path = _coco(tmp_path, 2, [bad, _ann(2, 2, 1, (0, 0, 30, 30))])
    with pytest.raises(AnnotationError, match="annotation 1.*at least 3"):
        _select(path)
    policy = ImportPolicy(on_error=OnError.SKIP)
    assert [t.annotation_id for t in _select(path, policy=policy)] == [2]
    assert policy.report.counts() == {"AnnotationError": 1}


def test_an_empty_mask_with_a_positive_area_is_bad_input(tmp_path):
    empty = _ann(1, 1, 1, (0, 0, 30, 30)) | {"segmentation": {"size": [H, W], "counts": [W * H]}}
    with pytest.raises(AnnotationError, match="empty"):
        _select(_coco(tmp_path, 1, [empty]))


def test_edit_types_follow_the_mix_with_largest_remainders(tmp_path):
    path = _coco(tmp_path, 10, [_ann(i, i, 1, (0, 0, 30, 30)) for i in range(1, 11)])
    targets = _select(path)
    sm, cc, oc = EditType
    dealt = deal_edit_types(targets, {sm: 0.5, cc: 0.3, oc: 0.2}, seed=0)
    assert Counter(e for _, e in dealt) == {sm: 5, cc: 3, oc: 2}
    uneven = deal_edit_types(targets[:7], {sm: 1, cc: 1, oc: 1}, seed=0)  # 2.33 each: SM, the first, gets 3
    assert Counter(e for _, e in uneven) == {sm: 3, cc: 2, oc: 2}
    short = deal_edit_types(targets[:5], {sm: 6, cc: 3, oc: 1}, seed=0)  # wanted 10, 5 found: 3 / 1.5 / 0.5
    assert Counter(e for _, e in short) == {sm: 3, cc: 2}
    assert deal_edit_types(targets, {sm: 1, cc: 1}, seed=3) == deal_edit_types(targets, {sm: 1, cc: 1}, seed=3)
    assert {e for _, e in deal_edit_types(targets, {oc: 1.0}, seed=0)} == {oc}


def test_source_spec_and_params_refuse_bad_values():
    spec = SourceSpec.parse("lvis=/d/lvis_v1_val.json:/d/val2017")
    assert spec.name == "lvis" and spec.annotations == Path("/d/lvis_v1_val.json") and spec.images == Path("/d/val2017")
    for text in ("lvis", "=a.json:img", "lvis=a.json", "Bad Name=a.json:img"):
        with pytest.raises(ValueError):
            SourceSpec.parse(text)
    with pytest.raises(ValueError, match="below"):
        CafeParams(min_area_fraction=0.5, max_area_fraction=0.4)
    with pytest.raises(ValueError, match="unknown edit types"):
        CafeParams(edit_mix={"XX": 1})
