"""Mask operations against hand-made bitmaps and pycocotools' own conventions."""

import numpy as np
import pytest

from segbench.core.masks import (
    bitmap_to_rle,
    resize_nearest,
    resized_fraction,
    rle_area,
    rle_iou,
    rle_runs,
    rle_to_bitmap,
    segmentation_to_rle,
    union_rle,
)


def box(h, w, y0, y1, x0, x1):
    m = np.zeros((h, w), np.uint8)
    m[y0:y1, x0:x1] = 1
    return m


def test_bitmap_rle_round_trip_and_area():
    m = box(5, 7, 1, 3, 2, 6)
    rle = bitmap_to_rle(m)
    assert isinstance(rle["counts"], str) and rle["size"] == [5, 7]
    assert np.array_equal(rle_to_bitmap(rle), m)
    assert rle_area([rle]).tolist() == [8]
    assert rle_runs(rle["counts"]).sum() == 35


def test_polygon_rasterises_like_coco():
    rle = segmentation_to_rle([[0, 0, 10, 0, 10, 10, 0, 10]], 20, 20)
    assert rle_area([rle]).tolist() == [100]


def test_uncompressed_rle_is_accepted():
    rle = segmentation_to_rle({"size": [2, 3], "counts": [1, 2, 3]}, 2, 3)
    assert rle_to_bitmap(rle).sum() == 2


def test_area_handles_more_than_255_masks():
    # pycocotools overflows a uint8 counter on >= 256 RLEs under numpy 2; we chunk.
    rles = [bitmap_to_rle(box(4, 4, 0, 2, 0, 2))] * 300
    assert rle_area(rles).sum() == 1200


def test_iou_and_union():
    a, b = bitmap_to_rle(box(4, 4, 0, 2, 0, 4)), bitmap_to_rle(box(4, 4, 1, 3, 0, 4))
    assert rle_iou([a], [b])[0, 0] == pytest.approx(4 / 12)
    assert rle_area([union_rle([a, b])]).tolist() == [12]


def test_resize_nearest_keeps_label_values():
    labels = np.array([[0, 1], [2, 0]], np.uint8)
    out = resize_nearest(labels, (4, 4))
    assert out.shape == (4, 4) and set(np.unique(out)) == {0, 1, 2}
    assert out[:2, 2:].tolist() == [[1, 1], [1, 1]]
    assert resize_nearest(labels.astype(bool), (4, 4)).dtype == bool


@pytest.mark.parametrize("seed", range(4))
def test_resized_fraction_is_the_mean_of_the_resized_mask_to_the_last_bit(seed):
    rng = np.random.default_rng(seed)
    for case in range(60):
        height, width = (int(n) for n in rng.integers(1, 700, 2))
        size = (512, 512) if case % 3 == 0 else tuple(int(n) for n in rng.integers(1, 900, 2))
        mask = (rng.random((height, width)) < rng.random()).astype(np.uint8)
        mask = np.asfortranarray(mask) if case % 2 else mask  # pycocotools decodes column-major
        if case == 1:
            mask[:] = 1
        expected = float(resize_nearest(mask, size).astype(bool).mean())
        assert resized_fraction(mask, size) == expected, (height, width, size)


@pytest.mark.parametrize(
    ("segmentation", "message"),
    [
        ([[0, 0, 5, 5]], "2 points; a polygon needs at least 3"),
        ([[0, 0, 5, 5, 1]], "odd number"),
        ([[0, 0, 5, 5, float("nan"), 1]], "non-finite"),
        ([[0, 0, 50, 0, 50, 5]], "outside"),
        ([], "no polygon"),
        ({"size": [4, 4], "counts": "0"}, "do not cover"),
        ({"size": [4, 4], "counts": "!!"}, "invalid character"),
        ({"size": [3, 4], "counts": "04"}, "does not match the image size"),
        ({"size": [4, 4], "counts": [3, 3]}, "sum to 16"),
        ({"counts": "04"}, "neither a polygon list nor an RLE"),
    ],
)
def test_invalid_segmentations_state_the_rule(segmentation, message):
    with pytest.raises(ValueError, match=message):
        segmentation_to_rle(segmentation, 4, 4) if isinstance(segmentation, dict) else segmentation_to_rle(
            segmentation, 10, 10)
