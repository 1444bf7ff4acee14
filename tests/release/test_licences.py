"""The licences of a release, derived once: what the card, Croissant and LICENSES.md are given."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from segbench.core.errors import InputError
from segbench.core.release.croissant import semver
from segbench.core.release.gallery import _caption_lines, overlay, palette_png, palette_png_of
from segbench.core.release.licences import COCO_LICENCES, derive, expression, maker_licence
from segbench.core.release.plan import Licence, ReleasePlan

MAKER = maker_licence("cc-by-4.0", "the labels this release adds")
MASKS = Licence("cc-by-4.0", "COCO annotations", "https://cocodataset.org", True, "masks", of_images=False)
CUB = Licence("LicenseRef-CUB", "CUB terms", None, True, "birds")
PLACES = Licence("LicenseRef-Places", "Places terms", None, True, "places")
GATED = Licence("LicenseRef-Gated", "gated", None, False, "gated images")


def test_one_licence_for_every_shipped_part_is_the_cards():
    images = Licence("cc-by-4.0", "CC BY 4.0", None, True, "images")
    terms = derive(MAKER, [MASKS, images], {"1": "cc-by-4.0"}, {"1"}, [])
    assert terms.card_fields() == {"license": "cc-by-4.0"}
    assert terms.croissant() == ["https://creativecommons.org/licenses/by/4.0/"]


def test_mixed_image_licences_make_the_card_other_and_list_every_one():
    images = {"1": COCO_LICENCES[1].id, "2": COCO_LICENCES[4].id}
    terms = derive(MAKER, [COCO_LICENCES[1], COCO_LICENCES[4], MASKS], images, {"1", "2"}, [])
    assert terms.card_fields() == {"license": "other", "license_name": "multiple-licenses",
                                   "license_link": "LICENSES.md"}
    assert set(terms.shipped_ids) == {"cc-by-4.0", "cc-by-nc-sa-2.0", "cc-by-2.0"}
    assert len(terms.croissant()) == 3


def test_a_withheld_images_licence_is_listed_but_not_shipped():
    terms = derive(MAKER, [GATED, MASKS], {"7": GATED.id}, set(), ["7"])
    gated = next(c for c in terms.components if c.licence.id == GATED.id)
    assert not gated.shipped
    assert terms.card_fields() == {"license": "cc-by-4.0"}  # the bytes under the gated terms are not in it
    data = terms.to_json()
    assert data["withheld_images"] == ["7"] and data["images"] == {"7": GATED.id}
    assert "in no file" in terms.markdown("t")


def test_a_composite_carries_every_parts_licence():
    assert expression([CUB, PLACES, CUB]) == "LicenseRef-CUB AND LicenseRef-Places"
    terms = derive(MAKER, [CUB, PLACES], {"1": expression([CUB, PLACES])}, {"1"}, [])
    assert all(c.shipped for c in terms.components)
    assert terms.card_fields()["license"] == "other"


def test_a_single_licence_the_hub_does_not_know_is_other_with_its_name():
    terms = derive(maker_licence("LicenseRef-Mine", "all"), [], {}, set(), [])
    assert terms.card_fields() == {"license": "other", "license_name": "licenseref-mine", "license_link": "LICENSES.md"}


def test_a_source_licence_no_row_carries_is_left_out():
    terms = derive(MAKER, [COCO_LICENCES[1], COCO_LICENCES[2]], {"1": COCO_LICENCES[1].id}, {"1"}, [])
    assert [c.licence.id for c in terms.components] == ["cc-by-4.0", "cc-by-nc-sa-2.0"]


def test_semver_carries_the_data_version_as_build_metadata():
    assert semver("1.0.0", "dvc md5 3f2a") == "1.0.0+dvc-md5-3f2a"
    assert semver("2.1.0", "") == "2.1.0+unversioned"


def test_a_palette_mask_keeps_its_class_values_and_shows_colours():
    labels = np.array([[0, 1], [2, 1]], dtype=np.uint8)
    image = Image.open(io.BytesIO(palette_png(labels, [(0, 114, 178), (204, 121, 167)])))
    assert image.mode == "P" and np.array_equal(np.asarray(image), labels)
    assert image.getpalette()[3:9] == [0, 114, 178, 204, 121, 167]


@pytest.mark.parametrize("mode", ["L", "LA", "I;16", "RGB"])
def test_a_stored_mask_becomes_a_palette_png_with_the_same_values(mode):
    """A grey 8-bit PNG is converted by its header alone; any other is decoded: the same values either way."""
    labels = np.random.default_rng(0).integers(0, 3, size=(37, 53), dtype=np.uint8)
    source = Image.fromarray(labels, mode="L").convert(mode)
    stored = io.BytesIO()
    source.save(stored, format="PNG", pnginfo=None)
    image = Image.open(io.BytesIO(palette_png_of(stored.getvalue(), [(0, 114, 178), (204, 121, 167)])))
    image.load()
    assert image.mode == "P" and np.array_equal(np.asarray(image), labels)
    assert image.getpalette()[:9] == [0, 0, 0, 0, 114, 178, 204, 121, 167]


def test_a_stored_mask_with_a_bad_checksum_is_decoded_and_refused_naming_it():
    stored = io.BytesIO()
    Image.fromarray(np.zeros((4, 4), dtype=np.uint8)).save(stored, format="PNG")
    broken = bytearray(stored.getvalue())
    broken[40] ^= 0xFF  # inside the first IDAT
    with pytest.raises(InputError):
        palette_png_of(bytes(broken), [(1, 2, 3)])


def test_an_overlay_is_drawn_at_the_tiles_size_with_its_outline():
    mask = np.zeros((400, 400), dtype=bool)
    mask[100:300, 100:300] = True
    tile = np.asarray(overlay(Image.new("RGB", (400, 400), (255, 255, 255)), [(mask, (0, 0, 255))], tile=104))
    assert tile.shape == (100, 100, 3)
    assert tuple(tile[25, 50]) == (0, 0, 255) and tuple(tile[50, 50]) == (140, 140, 255)  # edge, filled inside
    assert tuple(tile[10, 10]) == (255, 255, 255)


def test_a_cut_caption_says_it_was_cut():
    assert _caption_lines("short\nline two", 20) == ["short", "line two"]
    cut = _caption_lines("x" * 40 + "\nb\nc", 20)
    assert cut[0] == "x" * 17 + "..." and cut[1].endswith("...") and len(cut) == 2


def test_a_plan_refuses_a_feature_without_a_description():
    from segbench.core.release.features import Features, Value

    with pytest.raises(ValueError, match="no description of term"):
        ReleasePlan(name="x", pretty_name="x", summary="", features=Features({"id": Value("int64"),
                                                                            "term": Value("string")}),
                    descriptions={"id": "the id"}, tables=[], native={}, version="v", created="", sources={},
                    selection={}, seed=None, chosen_ids={}, rounds=[], machine_tools=[], collection="",
                    preprocessing="", annotation_protocol="", biases=[], limitations=[], use_cases=[], licences=[],
                    maker_covers="", citations=[], source_datasets=[], annotations_creators=[],
                    gallery=lambda folder: [])
