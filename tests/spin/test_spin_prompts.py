"""`segbench spin prompts`: a box and an inner point per ground-truth entity, on hand-made masks."""

from __future__ import annotations

import json

import numpy as np
from support.cli import run
from support.spin_eval_data import BOXES, box, write_dataset

from segbench.core.versioning import DatasetSource
from segbench.tasks.spin.inputs import read_ground_truth
from segbench.tasks.spin.prompts import entity_prompts, inner_point


def test_the_point_is_the_pixel_farthest_inside_even_in_a_shape_that_is_not_convex():
    square = np.zeros((8, 8), dtype=bool)
    square[1:6, 1:6] = True  # 5 × 5: its centre pixel is (3, 3)
    assert inner_point(square) == [3.5, 3.5]
    ell = np.zeros((9, 9), dtype=bool)
    ell[0:9, 0:3] = True
    ell[6:9, 0:9] = True  # an L: its box's centre (4, 4) is outside it
    x, y = inner_point(ell)
    assert ell[int(y), int(x)] and (int(y), int(x)) == (1, 1)  # distance 2 from the outline, first in row order
    assert inner_point(np.zeros((3, 3), dtype=bool)) is None


def test_every_entity_gets_its_box_and_a_point_inside_it(tmp_path):
    write_dataset(tmp_path / "data" / "spin")
    with DatasetSource(tmp_path, None) as source:
        prompts = entity_prompts(read_ground_truth(source, "data/spin", "test"))
    assert [p["gt_id"] for p in prompts] == [1, 100, 101, 1000, 1001, 2, 102, 1002]  # by image, level, id
    for prompt in prompts:
        r0, r1, c0, c1 = BOXES[prompt["gt_id"]][4]
        assert prompt["bbox"] == [c0, r0, c1 - c0, r1 - r0]
        x, y = prompt["point"]
        assert box(r0, r1, c0, c1)[int(y), int(x)]
    eye = next(p for p in prompts if p["gt_id"] == 1000)
    assert (eye["level"], eye["category"], eye["image_id"]) == ("subparts", "Quadruped-Head-Eye", 10)


def test_the_command_writes_the_prompts_of_a_split(tmp_path, monkeypatch):
    write_dataset(tmp_path / "data" / "spin")
    monkeypatch.chdir(tmp_path)
    done = run(tmp_path, "spin", "prompts", "--out", str(tmp_path / "prompts.json"))
    assert "subparts prompts" in done.output
    prompts = json.loads((tmp_path / "prompts.json").read_text())
    assert len(prompts) == len(BOXES) and {p["level"] for p in prompts} == {"wholes", "parts", "subparts"}
    missing = run(tmp_path, "spin", "prompts", "--split", "val", "--out", str(tmp_path / "val.json"), code=1)
    assert "spin_val_wholes.json" in str(missing.exception)
