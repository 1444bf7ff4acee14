"""The demo world: determinism, valid COCO files, pixels that agree with masks, designed edge cases.

The COCO-CD rules are re-implemented here from the written JSON and the context lists, so the
designer's intent in ``demo_world.json`` is checked against the files, not against itself.
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest
from PIL import Image
from pycocotools.coco import COCO

from segbench.core.io import sha256_tree
from segbench.core.masks import resize_nearest, rle_area, rle_to_bitmap, segmentation_to_rle
from segbench.demo.world import (
    DEFAULT_GROUP_SIZES,
    EDGE_CASES,
    GROUPS,
    build_scenes,
    generate_demo_world,
)

SMALL = {"cat/indoor": 4, "cat/outdoor": 2, "dog/indoor": 2, "dog/outdoor": 4}
CONTEXT = json.loads(resources.files("segbench.resources").joinpath("coco_cd_context.json").read_text())
INDOOR, OUTDOOR = set(CONTEXT["indoor"]), set(CONTEXT["outdoor"])
SPLITS = ("train2017", "val2017")


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    base = tmp_path_factory.mktemp("demo")
    return {name: generate_demo_world(base / name, seed=seed, group_sizes=SMALL, val_fraction=0.25)
            for name, seed in (("a", 0), ("twin", 0), ("other", 1))}


@pytest.fixture(scope="module")
def world(worlds):
    return worlds["a"]


def load(root, kind):
    """Images, annotations and category names of both splits, merged."""
    images, anns, names = {}, [], {}
    for split in SPLITS:
        data = json.loads((root / "annotations" / f"{kind}_{split}.json").read_text())
        images.update({im["id"]: dict(im, split=split) for im in data["images"]})
        anns += data["annotations"]
        names.update({c["id"]: c["name"] for c in data["categories"]})
    return images, anns, names


@pytest.fixture(scope="module")
def facts(world):
    """Per image: classes, foreground ratio at 512x512, indoor/outdoor evidence, stuff annotation count."""
    images, inst, thing_names = load(world.root, "instances")
    _, stuff, stuff_names = load(world.root, "stuff")
    out = {i: {"classes": set(), "indoor": 0, "outdoor": 0, "n_stuff": 0, "fg": None,
               "area": im["width"] * im["height"], "image": im} for i, im in images.items()}
    fg = {i: np.zeros((im["height"], im["width"]), bool) for i, im in images.items()}
    named = [(a, thing_names[a["category_id"]]) for a in inst] + [(a, stuff_names[a["category_id"]]) for a in stuff]
    for ann, name in named:
        row = out[ann["image_id"]]
        if name in ("cat", "dog"):
            row["classes"].add(name)
            im = row["image"]
            rle = segmentation_to_rle(ann["segmentation"], im["height"], im["width"])
            fg[ann["image_id"]] |= rle_to_bitmap(rle) > 0
        row["indoor"] += ann["area"] if name in INDOOR else 0
        row["outdoor"] += ann["area"] if name in OUTDOOR else 0
    for ann in stuff:
        out[ann["image_id"]]["n_stuff"] += 1
    for i, mask in fg.items():
        out[i]["fg"] = float(resize_nearest(mask, (512, 512)).mean())
    return out


def rule_context(row):
    indoor, outdoor, area = row["indoor"], row["outdoor"], row["area"]
    if indoor + outdoor == 0:
        return "unknown"
    share = indoor / (indoor + outdoor)
    if share >= 0.5 and indoor >= 0.02 * area:
        return "indoor"
    if outdoor / (indoor + outdoor) > 0.5 and outdoor >= 0.02 * area:
        return "outdoor"
    return "unknown"


@pytest.fixture(scope="module")
def oracle(world):
    return json.loads((world.root / "demo_world.json").read_text())


def test_same_seed_same_bytes_other_seed_differs(worlds):
    a, twin, other = (sha256_tree(worlds[k].root) for k in ("a", "twin", "other"))
    assert a == twin
    assert sorted(a) == worlds["a"].files
    for name in ("demo_world.json", "annotations/instances_train2017.json", "annotations/stuff_train2017.json"):
        assert a[name] != other.get(name)


def test_files_load_with_pycocotools_and_areas_match(world):
    for kind in ("instances", "stuff"):
        for split in SPLITS:
            coco = COCO(str(world.root / "annotations" / f"{kind}_{split}.json"))
            assert len(coco.getImgIds()) == world.images[split]
            for ann in coco.dataset["annotations"]:
                im = coco.imgs[ann["image_id"]]
                rle = segmentation_to_rle(ann["segmentation"], im["height"], im["width"])
                assert ann["area"] == rle_area([rle])[0]
                if kind == "stuff":
                    assert ann["segmentation"]["size"] == [im["height"], im["width"]]
                    assert isinstance(ann["segmentation"]["counts"], str) and ann["iscrowd"] == 0
    _, inst, thing_names = load(world.root, "instances")
    stuff_images, stuff, stuff_names = load(world.root, "stuff")
    assert len(thing_names) == 80 and thing_names[17] == "cat" and thing_names[18] == "dog"
    assert sorted(stuff_names) == list(range(92, 184)) and stuff_names[183] == "other"
    inst_ids, stuff_ids = [a["id"] for a in inst], [a["id"] for a in stuff]
    assert len(set(inst_ids)) == len(inst_ids) and len(set(stuff_ids)) == len(stuff_ids)
    assert not set(inst_ids) & set(stuff_ids) and min(stuff_ids) == 10000000
    assert any(a["iscrowd"] for a in inst) and any(isinstance(a["segmentation"], list) for a in inst)
    # Stuff annotations of one image partition its labelled pixels.
    for image_id, im in stuff_images.items():
        total = sum(a["area"] for a in stuff if a["image_id"] == image_id)
        assert total <= im["width"] * im["height"]


def test_image_files_match_records(world):
    images, _, _ = load(world.root, "instances")
    for image_id, im in images.items():
        assert im["file_name"] == f"{image_id:012d}.jpg"
        with Image.open(world.root / im["split"] / im["file_name"]) as jpeg:
            assert jpeg.format == "JPEG" and jpeg.size == (im["width"], im["height"])


def test_pixels_agree_with_animal_masks(world):
    scenes = {s.image_id: s for s in build_scenes(seed=0, group_sizes=SMALL, val_fraction=0.25)}
    images, inst, names = load(world.root, "instances")
    checked = 0
    for ann in inst:
        if names[ann["category_id"]] not in ("cat", "dog") or scenes[ann["image_id"]].edge_case:
            continue
        im = images[ann["image_id"]]
        pixels = np.asarray(Image.open(world.root / im["split"] / im["file_name"]).convert("RGB"), np.float32)
        mask = rle_to_bitmap(segmentation_to_rle(ann["segmentation"], im["height"], im["width"])) > 0
        x, y, w, h = (int(v) for v in ann["bbox"])
        ring = np.zeros_like(mask)
        ring[max(0, y - 6): y + h + 6, max(0, x - 6): x + w + 6] = True
        ring &= ~mask
        inside = pixels[mask].mean(0)
        # Most pixels just outside the animal look unlike it (a mean over the ring could mix to grey).
        assert np.median(np.abs(pixels[ring] - inside).sum(1)) > 30, (ann["image_id"], inside)
        coats = [t.colour for t in scenes[ann["image_id"]].things if t.name == names[ann["category_id"]]]
        assert min(np.abs(inside - np.asarray(c)).sum() for c in coats) < 45  # JPEG, noise, eyes, stripes
        checked += 1
    assert checked >= sum(SMALL.values())


def test_oracle_agrees_with_the_rules(facts, oracle):
    assert len(oracle["images"]) == len(facts)
    for record in oracle["images"]:
        row = facts[record["image_id"]]
        assert sorted(row["classes"]) == record["classes"]
        kept = len(row["classes"]) == 1 and 0.01 < row["fg"] < 0.99
        assert kept == record["expected_kept"], record
        assert rule_context(row) == record["expected_context"], record
        if record["group"]:
            assert record["group"] == f"{record['classes'][0]}/{record['expected_context']}" and kept


def test_edge_cases_hold_their_designed_numbers(world, facts, oracle):
    assert set(world.edge_cases) == set(EDGE_CASES)
    row = {name: facts[image_id] for name, image_id in world.edge_cases.items()}
    assert row["cat_and_dog"]["classes"] == {"cat", "dog"}
    assert not row["no_cat_no_dog"]["classes"]
    assert row["foreground_too_small"]["fg"] < 0.01 and row["foreground_too_large"]["fg"] > 0.99
    for name in ("neutral_evidence_only", "neutral_thing_only", "unlisted_only"):
        assert row[name]["indoor"] == row[name]["outdoor"] == 0 and row[name]["n_stuff"] > 0
    assert row["no_stuff_annotations"]["n_stuff"] == 0
    _, stuff, stuff_names = load(world.root, "stuff")
    for name in ("indoor_things_only", "outdoor_things_only"):  # no stuff is evidence there
        names = {stuff_names[a["category_id"]] for a in stuff if a["image_id"] == world.edge_cases[name]}
        assert names and not names & (INDOOR | OUTDOOR)
    assert row["indoor_things_only"]["indoor"] >= 0.02 * row["indoor_things_only"]["area"]
    assert row["outdoor_things_only"]["outdoor"] >= 0.02 * row["outdoor_things_only"]["area"]
    half = row["share_exactly_half"]
    assert half["indoor"] == half["outdoor"] >= 0.02 * half["area"]
    for name, share in (("share_0.49", 0.49), ("share_0.51", 0.51)):
        r = row[name]
        assert abs(r["indoor"] / (r["indoor"] + r["outdoor"]) - share) < 1e-9
        assert min(r["indoor"], r["outdoor"]) >= 0.02 * r["area"]
    assert row["indoor_area_2pct"]["indoor"] == 0.02 * row["indoor_area_2pct"]["area"]
    assert row["indoor_area_1pct"]["indoor"] == 0.01 * row["indoor_area_1pct"]["area"]
    assert row["indoor_area_2pct"]["outdoor"] == row["indoor_area_1pct"]["outdoor"] == 0
    small = row["outdoor_share_small_area"]
    assert small["outdoor"] / (small["indoor"] + small["outdoor"]) > 0.5 and small["outdoor"] < 0.02 * small["area"]
    for record in oracle["images"]:  # the designed numbers written in the oracle are the real ones
        if record["edge_case"] and "indoor_area" in record["design"]:
            r = facts[record["image_id"]]
            assert (r["indoor"], r["outdoor"]) == (record["design"]["indoor_area"], record["design"]["outdoor_area"])
    _, inst, names = load(world.root, "instances")
    crowd = [a for a in inst if a["image_id"] == world.edge_cases["crowd_cat"] and names[a["category_id"]] == "cat"]
    assert len(crowd) == 1 and crowd[0]["iscrowd"] == 1 and isinstance(crowd[0]["segmentation"]["counts"], str)


def test_groups_have_the_requested_sizes(world, oracle):
    assert world.groups == SMALL
    for group, n in SMALL.items():
        records = [r for r in oracle["images"] if r["group"] == group]
        assert len(records) == n
        assert sum(r["split"] == "val2017" for r in records) == round(n * 0.25)
    assert sum(world.images.values()) == sum(SMALL.values()) + len(EDGE_CASES)


def test_edge_cases_present_without_regular_images():
    scenes = build_scenes(seed=3, group_sizes=dict.fromkeys(GROUPS, 0))
    assert sorted(s.edge_case for s in scenes) == sorted(EDGE_CASES)
    assert len({s.image_id for s in scenes}) == len(scenes)


def test_default_world_supports_the_demo_splits():
    """10 val + 20 test per group, then rho = 0.5 and rho = 0.95 train splits."""
    scenes = build_scenes()
    kept = {g: sum(s.group == g for s in scenes) for g in GROUPS}
    assert kept == DEFAULT_GROUP_SIZES
    left = {g: n - 30 for g, n in kept.items()}
    assert min(left.values()) >= 10  # rho = 0.5: every group contributes equally
    minority = min(left["cat/outdoor"], left["dog/indoor"], min(left["cat/indoor"], left["dog/outdoor"]) // 19)
    assert minority >= 2  # rho = 0.95: 19 aligned images per conflicting one


@pytest.mark.parametrize("sizes", [{"cat/indoor": 1}, {**SMALL, "cat/indoor": -1}, {**SMALL, "bird/sky": 1}])
def test_bad_group_sizes_are_refused(sizes):
    with pytest.raises(ValueError, match="group"):
        build_scenes(group_sizes=sizes)
