"""Waterbirds-seg pure steps: the species rule, compositing, place assignment, the synthetic source."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_place_assignment_is_deterministic_and_fills_aligned_share():
    types = {i: int(i > 30) for i in range(1, 61)}
    first = wb.assign_contexts(types, seed=3)
    assert first == wb.assign_contexts(dict(reversed(types.items())), seed=3)
    assert first != wb.assign_contexts(types, seed=4)
    for y in (0, 1):
        contexts = [first[i] for i, t in types.items() if t == y]
        assert contexts.count(y) == 20 and contexts.count(1 - y) == 10
    params = WaterbirdsParams(seed=3)
    places = {p: [f"{p}/{k}.jpg" for k in range(3)] for p in (*LAND_PLACES, *WATER_PLACES)}
    chosen = wb.assign_places(first, places, params)
    assert chosen == wb.assign_places(first, places, params)
    for image_id, place_file in chosen.items():
        expected = LAND_PLACES if first[image_id] == 0 else WATER_PLACES
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
