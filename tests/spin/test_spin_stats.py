"""SPIN subpart statistics on hand-made masks whose values are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from segbench.core.masks import bitmap_to_rle
from segbench.tasks.spin.stats import (
    composition,
    contour_perimeter_area,
    hole_count,
    isoperimetric_quotient,
    polygon_shapes,
    shape_values,
    size_bucket,
    subpart_measures,
    subparts_per_object,
    subparts_per_part,
    summarize,
)


def disk(radius: int) -> np.ndarray:
    y, x = np.mgrid[: 2 * radius + 9, : 2 * radius + 9]
    return (x - radius - 4) ** 2 + (y - radius - 4) ** 2 <= radius**2


def square(n: int, pad: int = 3) -> np.ndarray:
    mask = np.zeros((n + 2 * pad, n + 2 * pad), dtype=bool)
    mask[pad : pad + n, pad : pad + n] = True
    return mask


def test_disk_scores_close_to_one():
    # The simplified contour of a radius-50 digital disk stays within the 1-pixel tolerance of the
    # circle: a perimeter error of at most ~1 px per 50 px of arc, i.e. a quotient >= ~0.97. It is
    # an inscribed-like polygon, so it never exceeds 1.
    assert 0.97 <= isoperimetric_quotient(disk(50)) <= 1.0
    assert isoperimetric_quotient(disk(50)) > isoperimetric_quotient(disk(5)) > 0.9


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_axis_aligned_square_scores_pi_over_four(n):
    assert isoperimetric_quotient(square(n)) == pytest.approx(math.pi / 4, abs=1e-9)


def test_square_contour_runs_through_the_pixel_edge_midpoints():
    # Through the edge midpoints, an n x n square's contour has cut corners; simplified at 1 px it
    # is again a square, a slightly rotated one of area n^2 - n + 1/2.
    perimeter, area = contour_perimeter_area(square(10))
    assert area == pytest.approx(90.5)
    assert perimeter == pytest.approx(4 * math.sqrt(90.5))


def test_hole_subtracts_area_and_adds_perimeter():
    ring = square(40)
    ring[18:28, 18:28] = False
    full_perimeter, full_area = contour_perimeter_area(square(40))
    perimeter, area = contour_perimeter_area(ring)
    # The 10 x 10 hole's ring simplifies like a 10 x 10 square: area 90.5, perimeter 4·sqrt(90.5).
    assert area == pytest.approx(full_area - 90.5)
    assert perimeter == pytest.approx(full_perimeter + 4 * math.sqrt(90.5))


def test_extent_of_a_rectangle_is_one_and_of_an_l_shape_three_quarters():
    mask = np.zeros((20, 20), dtype=bool)
    mask[2:6, 2:12] = True  # rectangle, 40 px
    mask[10:18, 10:18] = True
    mask[10:14, 14:18] = False  # L-shape: 48 px in an 8 x 8 box
    shapes = polygon_shapes(mask)
    assert [extent for _, extent in shapes] == [1.0, 0.75]


@pytest.mark.parametrize(("area", "bucket"), [(1023, "small"), (1024, "medium"), (9215, "medium"),
                                              (9216, "large")])
def test_coco_size_buckets_at_their_edges(area, bucket):
    assert size_bucket(area) == bucket


def _levels(whole, part, subs):
    """One image with one object, one part and subparts (each a bitmap), as the dataset writes them."""
    ann = lambda i, cat, m, **kw: {"id": i, "image_id": 1, "category_id": cat, "segmentation": bitmap_to_rle(m),  # noqa: E731
                                   "area": int(m.sum()), **kw}
    image = {"id": 1, "file_name": "n02930766_1", "width": whole.shape[1], "height": whole.shape[0]}
    return {
        "wholes": {"images": [image], "categories": [{"id": 6, "name": "cab", "supercategory": "Car"}],
                   "annotations": [ann(1, 6, whole)]},
        "parts": {"images": [image], "categories": [{"id": 24, "name": "Car-Body"}, {"id": 25, "name": "Car-Tire"}],
                  "annotations": [ann(7, 24, part, parent_id=1)]},
        "subparts": {"images": [image],
                     "categories": [{"id": 1, "name": "Car-Body-Door", "supercategory": "Car-Body",
                                     "part_category_id": 24}],
                     "annotations": [ann(20 + k, 1, m, parent_id=7) for k, m in enumerate(subs)]},
    }


def test_coverage_of_image_object_and_part():
    whole = np.zeros((10, 20), dtype=bool)
    whole[:, :10] = True  # 100 px
    part = np.zeros_like(whole)
    part[:5, :10] = True  # 50 px
    door = np.zeros_like(whole)
    door[:2, :10] = True  # 20 px, inside the part
    door[0, 15:20] = True  # 5 px outside part and object: counts for the image only
    [row] = subpart_measures(_levels(whole, part, [door]), "train")
    assert row["area"] == 25 and row["size"] == "small" and row["polygons"] == 2
    assert row["image_coverage"] == pytest.approx(25 / 200)
    assert row["object_coverage"] == pytest.approx(20 / 100)
    assert row["part_coverage"] == pytest.approx(20 / 50)
    assert (row["object"], row["part"], row["category"]) == ("Car", "Body", "Car-Body-Door")
    # Two polygons: the mean of their extents (both rectangles) and of their quotients.
    assert row["extent"] == 1.0
    expected = np.mean([isoperimetric_quotient(door[:2, :10]), isoperimetric_quotient(door[0:1, 15:20])])
    assert row["boundary_complexity"] == pytest.approx(expected)


def test_subparts_per_part_counts_zero_for_a_part_without_subparts_and_composition_counts():
    whole = np.ones((10, 10), dtype=bool)
    levels = _levels(whole, whole, [])
    assert subparts_per_part(levels) == [{"split": "", "object": "Car", "part": "Body", "subparts": 0}]
    levels = _levels(whole, whole, [whole, whole])
    assert [r["subparts"] for r in subparts_per_part(levels)] == [2]
    table = composition({"train": levels, "val": _levels(whole, whole, [whole])})
    assert table.overall.images == 2
    assert table.overall.subparts.model_dump() == {"categories": 1, "categories_used": 1, "annotations": 3}
    assert table.overall.parts.model_dump() == {"categories": 2, "categories_used": 1, "annotations": 2}
    summary = summarize(subpart_measures(levels), subparts_per_part(levels))
    assert summary["sizes"] == {"Car": {"small": 2, "medium": 0, "large": 0},
                                "Rigid": {"small": 2, "medium": 0, "large": 0},
                                "Overall": {"small": 2, "medium": 0, "large": 0}}
    assert summary["measures"]["part_coverage"]["Overall"]["median"] == 1.0


def test_holes_are_enclosed_background_and_a_gap_open_to_the_border_is_none():
    ring = np.zeros((7, 7), dtype=bool)
    ring[1:6, 1:6] = True
    ring[3, 3] = False  # one enclosed pixel
    assert hole_count(ring) == 1
    two = np.zeros((5, 9), dtype=bool)
    two[0:5, 0:9] = True
    two[2, 2] = two[2, 6] = False  # two holes, and the frame touches the border: still holes
    assert hole_count(two) == 2
    cup = np.zeros((5, 5), dtype=bool)
    cup[1:5, 1:4] = True
    cup[1:4, 2] = False  # a U: its gap opens onto the background along the top border
    assert hole_count(cup) == 0
    diagonal = np.array([[1, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 1], [0, 0, 1, 1]], dtype=bool)
    # (1, 1) and (2, 2) touch the outside only diagonally: the background is 4-connected, so both are holes.
    assert hole_count(diagonal) == 2
    assert hole_count(np.zeros((3, 3), dtype=bool)) == 0


def test_the_summary_gives_the_share_of_subparts_with_holes_and_counts_per_part_category():
    rows = [{"object": "Car", "part": "Body", "polygons": 1, "holes": 2, "size": "small"},
            {"object": "Car", "part": "Body", "polygons": 3, "holes": 0, "size": "small"},
            {"object": "Car", "part": "Tier", "polygons": 1, "holes": 1, "size": "small"},
            {"object": "Fish", "part": "Fin", "polygons": 2, "holes": 0, "size": "large"}]
    rows = [{**row, **{measure: 0.5 for measure in ("area", "boundary_complexity", "extent", "image_coverage",
                                                   "part_coverage", "object_coverage")}} for row in rows]
    summary = summarize(rows, [])
    assert summary["holes"]["Car"] == {"subparts": 3, "with_holes": 2, "share": 2 / 3, "mean_holes": 1.5}
    assert summary["holes"]["Fish"] == {"subparts": 1, "with_holes": 0, "share": 0.0, "mean_holes": None}
    assert summary["holes"]["Overall"]["share"] == 0.5
    assert summary["part_categories"] == {"Car-Body": {"subparts": 2, "multi_polygon": 1},
                                          "Car-Tier": {"subparts": 1, "multi_polygon": 0},
                                          "Fish-Fin": {"subparts": 1, "multi_polygon": 1}}


def test_subparts_per_object_count_every_part_of_the_image_and_zero_for_none():
    whole = np.ones((10, 10), dtype=bool)
    levels = _levels(whole, whole, [whole, whole, whole])
    bare = _levels(whole, whole, [])
    bare["wholes"]["annotations"][0]["image_id"] = 2
    per_object = subparts_per_object(levels, "train") + subparts_per_object(bare, "val")
    assert per_object == [{"split": "train", "object": "Car", "subparts": 3},
                          {"split": "val", "object": "Car", "subparts": 0}]
    summary = summarize(subpart_measures(levels), subparts_per_part(levels), per_object)
    assert summary["subparts_per_object"]["Car"] == {"n": 2, "mean": 1.5, "min": 0.0, "q25": 0.75, "median": 1.5,
                                                     "q75": 2.25, "max": 3.0}
    assert list(summary["subparts_per_object"]) == ["Car", "Rigid", "Overall"]
    from segbench.tasks.spin.stats_report import measures_markdown

    table = measures_markdown(summary).split("## Subparts per object")[1]
    assert "| object | n | mean | min | q25 | median | q75 | max |" in table  # §4's range, "4 to 15"
    assert "| Car | 2 | 1.5000 | 0.0000 | 0.7500 | 1.5000 | 2.2500 | 3.0000 |" in table


def test_rigid_and_non_rigid_groups_and_the_shapes_of_single_and_multi_polygon_subparts():
    base = {"part": "Body", "holes": 0, "size": "small", "area": 1, "image_coverage": 0.1, "part_coverage": 0.1,
            "object_coverage": 0.1}
    rows = [{**base, "object": "Car", "polygons": 1, "extent": 0.9, "boundary_complexity": 0.8},
            {**base, "object": "Car", "polygons": 3, "extent": 0.5, "boundary_complexity": 0.4},
            {**base, "object": "Fish", "polygons": 1, "extent": 0.7, "boundary_complexity": 0.6},
            {**base, "object": "Quadruped", "polygons": 2, "extent": 0.3, "boundary_complexity": 0.2}]
    summary = summarize(rows, [{"object": "Bird", "subparts": 0}])  # a part without subparts: its group is empty
    assert summary["shapes"]["Bird"]["single"]["extent"]["n"] == 0
    assert list(summary["sizes"]) == ["Bird", "Car", "Fish", "Quadruped", "Rigid", "Non-rigid", "Overall"]
    assert summary["measures"]["extent"]["Rigid"]["mean"] == pytest.approx(0.7)  # the two cars
    assert summary["measures"]["extent"]["Non-rigid"]["mean"] == pytest.approx(0.5)  # the fish and the quadruped
    assert summary["multi_polygon"] == {"Bird": 0, "Car": 1, "Fish": 0, "Quadruped": 1, "Rigid": 1, "Non-rigid": 1,
                                        "Overall": 2}
    shapes = summary["shapes"]
    assert shapes["Non-rigid"]["single"]["extent"]["median"] == 0.7
    assert shapes["Non-rigid"]["multi"]["boundary_complexity"]["median"] == 0.2
    assert shapes["Overall"]["multi"]["extent"] == {"n": 2, "mean": 0.4, "min": 0.3, "q25": 0.35, "median": 0.4,
                                                    "q75": 0.45, "max": 0.5}
    assert shapes["Fish"]["multi"]["extent"]["n"] == 0
    assert shape_values(rows)["extent single"]["Overall"] == [0.9, 0.7]
