"""Waterbirds-seg pure steps: the species rule, compositing, place assignment, the synthetic source."""

from __future__ import annotations

import numpy as np
import pytest

from segbench.core.errors import InsufficientDataError
from segbench.core.io import sha256_tree
from segbench.demo.waterbirds.birds import generate_demo_birds
from segbench.schemas.waterbirds import LAND_PLACES, WATER_PLACES, WaterbirdsParams
from segbench.tasks.flip.metrics import WATERBIRDS_NAMES, FlipAccumulator
from segbench.tasks.waterbirds import dataset as wb

RELEASED_MISLABELS = ("194.Eastern_Towhee", "088.Western_Meadowlark", "102.Western_Wood_Pewee")


@pytest.mark.parametrize("name", RELEASED_MISLABELS)
def test_released_mislabels_are_landbirds_by_tokens_and_waterbirds_by_substring(name):
    assert not wb.is_waterbird(name)
    assert wb.is_waterbird(name, match="substring")


def test_substring_report_names_the_keyword_that_hits():
    report = wb.substring_mislabels([*RELEASED_MISLABELS, "001.Black_footed_Albatross", "017.Cardinal"])
    # All three hit through "tern" inside Eas-tern / Wes-tern.
    assert [r["species"] for r in report] == sorted(RELEASED_MISLABELS)
    assert all(r["keywords"] == ["Tern"] for r in report)


@pytest.mark.parametrize("name", ["001.Black_footed_Albatross", "141.Artic_Tern", "059.California_Gull",
                                  "058.Pigeon_Guillemot", "Pacific_Loon", "045.Northern_Fulmar",
                                  "070.Red_legged_Kittiwake", "079.Western_Grebe"])
def test_waterbird_species(name):
    assert wb.is_waterbird(name) and wb.is_waterbird(name, match="substring")


def test_multi_token_keyword_needs_the_consecutive_run():
    assert wb.is_waterbird("Pacific Loon")
    assert not wb.is_waterbird("Pacific_Slope_Flycatcher")
    assert not wb.is_waterbird("Common_Loon")  # only Pacific_Loon is a keyword
    with pytest.raises(ValueError):
        wb.is_waterbird("x", match="fuzzy")  # type: ignore[arg-type]


def test_composite_threshold_labels_and_resize():
    bird = np.full((4, 4, 3), 200, np.uint8)
    mask = np.array([[0, 127, 128, 255]] * 4, np.uint8)
    place = np.full((2, 8, 3), 10, np.uint8)  # other size and aspect: resized to 4 x 4
    image, label = wb.composite(bird, mask, place, 1)
    assert image.shape == (4, 4, 3) and label.shape == (4, 4)
    assert (label == np.array([[0, 0, 2, 2]] * 4)).all()
    assert (image[:, 2:] == 200).all() and (image[:, :2] == 10).all()
    _, land = wb.composite(bird, mask, place, 0)
    assert set(np.unique(land)) == {0, 1}
    with pytest.raises(ValueError):
        wb.composite(bird, mask[:3], place, 0)


GROUPS = ["landbird on land", "landbird on water", "waterbird on land", "waterbird on water"]


def _birds(test_per_type: int = 40, train_per_type: int = 100):
    """Bird ids → type and CUB split: ids 1-80 test (40 of each type), then 200 train."""
    types, split = {}, {}
    for index in range(2 * test_per_type + 2 * train_per_type):
        bird = index + 1
        types[bird] = index % 2
        split[bird] = "test" if index < 2 * test_per_type else "train"
    return types, split


def test_the_waterbirds_construction_on_a_hand_sized_pool():
    types, split = _birds()
    params = WaterbirdsParams(seed=3, rhos=(0.5, 0.95), val_per_group=4, test_per_group=15, val_fraction=0.2)
    plan = wb.plan_splits(types, split, params, GROUPS)
    assert plan == wb.plan_splits(dict(reversed(types.items())), split, params, GROUPS), "order-independent"
    assert plan != wb.plan_splits(types, split, params.model_copy(update={"seed": 4}), GROUPS)
    splits = plan.splits

    def bird(i):
        return plan.composites[i][0]

    def group(i):
        b, a = plan.composites[i]
        return 2 * types[b] + a

    # Every test image from CUB's test split, every val and train image from its train split.
    assert {split[bird(i)] for i in splits.test} == {"test"}
    assert {split[bird(i)] for i in (*splits.val, *(i for t in splits.train.values() for i in t))} == {"train"}
    assert not {bird(i) for i in splits.val} & {bird(i) for t in splits.train.values() for i in t}
    # Balanced val and test; ids are 2·bird + place type.
    assert [sum(group(i) == g for i in splits.test) for g in range(4)] == [15] * 4
    assert [sum(group(i) == g for i in splits.val) for g in range(4)] == [4] * 4
    assert all(i == 2 * b + a for i, (b, a) in plan.composites.items())
    # 200 train-side birds, 40 of them held out for val: each type keeps 60-100 for train, and every ρ
    # takes T (the smaller type's count, rounded down to even) of each type, all of the smaller type's.
    t = splits.per_class_total
    used = {y: {bird(i) for ids in splits.train.values() for i in ids if types[bird(i)] == y} for y in (0, 1)}
    assert t % 2 == 0 and 60 <= t <= 100 and min(len(used[0]), len(used[1])) in (t, t + 1)
    assert all(len(ids) == 2 * t for ids in splits.train.values()), "the same train size at every ρ"
    assert [sum(group(i) == g for i in splits.train[0.5]) for g in range(4)] == [t // 2] * 4
    aligned = int(0.95 * t)
    assert [sum(group(i) == g for i in splits.train[0.95]) for g in range(4)] == [aligned, t - aligned,
                                                                                    t - aligned, aligned]


def test_a_test_group_too_small_in_cubs_test_split_is_named():
    types, split = _birds(test_per_type=10)
    params = WaterbirdsParams(seed=3, val_per_group=2, test_per_group=6)
    with pytest.raises(InsufficientDataError, match="test: group .* has 5 images from CUB's test split"):
        wb.plan_splits(types, split, params, GROUPS)


def test_place_images_come_from_the_place_type_and_do_not_depend_on_other_birds():
    composites = {2 * b + a: (b, a) for b in range(1, 7) for a in (0, 1)}
    params = WaterbirdsParams(seed=3)
    places = {p: [f"{p}/{k}.jpg" for k in range(3)] for p in (*LAND_PLACES, *WATER_PLACES)}
    chosen = wb.assign_places(composites, places, params)
    assert chosen == wb.assign_places(dict(reversed(composites.items())), places, params)
    assert {i: chosen[i] for i in (2, 3)} == wb.assign_places({2: (1, 0), 3: (1, 1)}, places, params)
    for image_id, place_file in chosen.items():
        expected = LAND_PLACES if composites[image_id][1] == 0 else WATER_PLACES
        assert wb.place_name(place_file) in expected


def test_synthetic_source_is_byte_identical_and_readable(tmp_path):
    cub, places = generate_demo_birds(tmp_path / "a", birds_per_species=4, images_per_place=2)
    generate_demo_birds(tmp_path / "b", birds_per_species=4, images_per_place=2)
    assert sha256_tree(tmp_path / "a") == sha256_tree(tmp_path / "b")
    birds = wb.read_cub(cub)
    assert len(birds) == 24 and sum(b.cub_split == "test" for b in birds) == 6
    types = wb.bird_types(birds, "tokens")
    assert sum(types.values()) == 12
    assert sum(wb.bird_types(birds, "substring").values()) == 20  # Eastern Towhee, Western Meadowlark
    found = wb.read_places(places, (*LAND_PLACES, *WATER_PLACES))
    image, label = wb.render(cub, places, birds[0], found["ocean"][0], types[birds[0].image_id])
    assert image.shape == (128, 128, 3) and set(np.unique(label)) == {0, 2}


def test_summary_uses_waterbirds_names():
    acc = FlipAccumulator()
    gt = np.array([[0, 1], [2, 2]], np.uint8)
    acc.update(gt, gt, group_id=3, image_id=1)
    summary = acc.summarize(WATERBIRDS_NAMES).model_dump(mode="json")
    assert set(summary["class_iou"]) == {"background", "landbird", "waterbird"}
    assert summary["per_group"][0]["name"] == "landbird on land (aligned)"
    assert summary["fg_decomposition"]["corr"] == 1.0 and set(summary["gaps"]) == {"landbird", "waterbird"}
