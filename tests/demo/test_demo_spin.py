"""The generated PartImageNet-style demo world."""

from __future__ import annotations

import numpy as np
from PIL import Image

from segbench.annotation_ui.convert import answers_from_files
from segbench.core.errors import ImportPolicy
from segbench.core.io import sha256_tree
from segbench.core.masks import rle_iou, rle_to_bitmap, segmentation_to_rle
from segbench.demo.spin.crowd import CrowdNoise, simulate_crowd_rows
from segbench.demo.spin.world import (
    SPLIT_SIZES,
    TEMPLATES,
    demo_taxonomy,
    generate_demo_spin,
    read_truth,
    truth_resolved,
)
from segbench.flows.spin.rounds import spin_rounds
from segbench.tasks.spin.crowd import resolve_subparts
from segbench.tasks.spin.items import part_contexts, round_items
from segbench.tasks.spin.partimagenet import read_partimagenet


def test_world_is_readable_deterministic_and_its_truth_lies_inside_the_parts(tmp_path):
    demo = generate_demo_spin(tmp_path / "a", seed=1)
    assert sha256_tree(demo.root) == sha256_tree(generate_demo_spin(tmp_path / "b", seed=1).root)
    assert sha256_tree(demo.root) != sha256_tree(generate_demo_spin(tmp_path / "c", seed=2).root)

    source = read_partimagenet(demo.root, policy=ImportPolicy())
    assert source.without_parts == {split: 1 for split in SPLIT_SIZES}
    assert len(source.images) == 4 * sum(SPLIT_SIZES.values())
    assert {i.supercategory for i in source.images.values()} == {"Bird", "Bottle", "Car", "Quadruped"}
    assert any(len(i.parts) < len(TEMPLATES[i.supercategory][2]) for i in source.images.values())  # hidden parts
    first = next(iter(source.images.values()))
    with Image.open(first.path) as img:
        assert img.format == "JPEG" and img.size == (first.width, first.height)

    parts = {p.ann_id: (img, p) for img in source.images.values() for p in img.parts}
    taxonomy_categories = {s.category for entry in demo_taxonomy().parts for s in entry.subparts}
    truth = read_truth(demo.truth_path)
    assert {row["category"] for row in truth} == taxonomy_categories
    for row in truth:
        image, part = parts[row["part_ann_id"]]
        assert (row["image_id"], row["object"], row["part"]) == (image.image_id, image.supercategory,
                                                                 part.category.spin_name)
        mask = rle_to_bitmap(segmentation_to_rle(row["polygons"], image.height, image.width)).astype(bool)
        inside = rle_to_bitmap(part.rle).astype(bool)
        assert mask.any() and np.count_nonzero(mask & ~inside) <= 0.1 * mask.sum()


def test_simulated_crowd_rows_import_and_resolve_close_to_the_truth(tmp_path):
    demo = generate_demo_spin(tmp_path / "pin", seed=0, split_sizes={"train": 3, "val": 1, "test": 1})
    source = read_partimagenet(demo.root, policy=ImportPolicy())
    taxonomy = demo_taxonomy()
    decomposable = {(e.object, e.part) for e in taxonomy.parts if e.subparts}
    items = [i for group in round_items(source.images.values(), tmp_path / "data",
                                        decomposable=decomposable).values() for i in group]
    truth = read_truth(demo.truth_path)
    noise = CrowdNoise(flip=0.05, too_few_points=0.05, outside_image=0.05, outside_part=0.05)
    rows = simulate_crowd_rows(items, truth, taxonomy, workers=3, seed=4, noise=noise)
    assert rows == simulate_crowd_rows(items, truth, taxonomy, workers=3, seed=4, noise=noise)
    assert len(rows) == 3 * len(items)

    rounds = spin_rounds(items, taxonomy, key_prefix="demo", dataset_version="test", backend="files",
                         now="2024-01-01T00:00:00+00:00")
    answers = [a for r in rounds for a in answers_from_files([row for row in rows if row["Input.item_id"] in
                                                              {i.item_id for i in r.items}], r, ImportPolicy(),
                                                             check_polygons=False)]
    contexts = part_contexts(source.images.values(), decomposable=decomposable)
    params = {i.item_id: i.data for r in rounds for i in r.items}
    _, resolved, report = resolve_subparts(answers, contexts, taxonomy, params)
    assert {"too_few_points", "outside_image", "not_contained"} <= set(report.flags)  # the bad polygons are caught

    sizes = {i: (im.height, im.width) for i, im in source.images.items()}
    expected = {(r["part_ann_id"], r["subpart"]): r for r in truth_resolved(truth, sizes)}
    found = {(r.part_ann_id, r.subpart): r for r in resolved}
    assert len(found.keys() & expected.keys()) >= 0.9 * len(expected)
    assert len(found.keys() - expected.keys()) <= 0.05 * len(expected)
    ious = [float(rle_iou([found[k].segmentation.model_dump()], [expected[k]["segmentation"]])[0, 0])
            for k in found.keys() & expected.keys()]
    assert np.median(ious) >= 0.7
