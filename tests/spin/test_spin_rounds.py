"""A SPIN subpart round on the real Label Studio server: demo source → items (with their part masks) →
one round for Quadruped-Head → launch → two annotators draw polygons through the API (one of them a
bad polygon) → ingest, whose hook imports and resolves the answers → ingest again (byte-identical)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pytest
import yaml
from pycocotools import mask as mask_utils

from segbench.core.io import atomic_write_text
from segbench.core.masks import rle_to_bitmap
from segbench.demo.spin.world import demo_taxonomy, generate_demo_spin, read_truth
from segbench.schemas.spin import SpinBuildParams, read_resolved

pytestmark = [pytest.mark.integration, pytest.mark.labelstudio, pytest.mark.usefixtures("prefect_harness")]

PAIR = ("Quadruped", "Head")  # subparts in the demo taxonomy: Ears, Eyes, Nose


@pytest.fixture
def world(tmp_path):
    demo = generate_demo_spin(tmp_path / "pin", seed=0, split_sizes={"train": 2, "val": 1, "test": 1})
    root = tmp_path / "data"
    atomic_write_text(root / "spin" / "taxonomy.yaml",
                      yaml.safe_dump(demo_taxonomy().model_dump(mode="json"), sort_keys=False))
    truth = {(row["part_ann_id"], row["subpart"]): row["polygons"] for row in read_truth(demo.truth_path)}
    return demo, root, truth


def _choice(control: str, value: str) -> dict:
    return {"from_name": control, "to_name": "image", "type": "choices", "value": {"choices": [value]}}


def _polygon(label: str, points_px: list[list[float]], width: int, height: int) -> dict:
    """A polygonlabels result in Label Studio's percent coordinates of the original image."""
    return {"from_name": "polygons", "to_name": "image", "type": "polygonlabels", "original_width": width,
            "original_height": height, "image_rotation": 0,
            "value": {"points": [[100 * x / width, 100 * y / height] for x, y in points_px],
                      "polygonlabels": [label]}}


def _pairs(flat: list[float]) -> list[list[float]]:
    return [[x, y] for x, y in zip(flat[0::2], flat[1::2], strict=True)]


def _raster(polygons: list[list[float]], height: int, width: int) -> np.ndarray:
    """The reference mask of what was drawn: pycocotools' own polygon rasterisation, merged."""
    return mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(polygons, height, width))).astype(bool)


def test_spin_round_on_label_studio(world, label_studio, monkeypatch):
    from segbench.flows.rounds import ingest_round, launch_round
    from segbench.flows.spin.build import spin_round_items
    from segbench.flows.spin.crowd import create_spin_rounds

    demo, root, truth = world
    client = label_studio.client
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", label_studio.token)
    items = spin_round_items(demo.root, root, SpinBuildParams())[PAIR]
    assert all("part_rle" in item.data for item in items)  # the ingest hook needs no --parts file
    # A fresh prefix per run: the server outlives the test; Label Studio titles hold 50 characters.
    (round_,) = create_spin_rounds(root, items, key_prefix=f"spin-{uuid.uuid4().hex[:8]}", dataset_version="test",
                                   backend="labelstudio", overlap=2)
    key = round_.key
    launched = launch_round(root, key, label_studio.connection)
    tasks = client.task_item_ids(launched.project_id)
    assert sorted(tasks.values()) == sorted(item.item_id for item in items) and len(tasks) == 4
    by_id = {item.item_id: item for item in items}

    alice, bob = (client.create_user(f"{name}-{key}@example.com") for name in ("alice", "bob"))
    bad_task = min(tasks)
    drawn: dict[tuple[str, str], list[list[float]]] = {}  # (item, subpart) → the polygons both drew
    for task_id, item_id in sorted(tasks.items()):
        item = by_id[item_id]
        w, h, part = item.width, item.height, item.data["part_ann_id"]
        for annotator in (alice, bob):
            result = [_choice("part_visible", "yes")]
            for name in ("Eyes", "Ears"):
                result.append(_choice(f"has_{name.lower()}", "yes"))
                polygons = truth[(part, name)]
                drawn[(item_id, name)] = polygons
                for flat in polygons:
                    points = _pairs(flat)
                    if annotator == bob and task_id == bad_task and name == "Ears":
                        points = points[:2]  # a polygon of two points: flagged, kept in the raw file
                    result.append(_polygon(name, points, w, h))
            # The nose: alice says yes and outlines it, bob says no, so there is no majority.
            if annotator == alice:
                result += [_choice("has_nose", "yes"), *(_polygon("Nose", _pairs(f), w, h)
                                                         for f in truth[(part, "Nose")])]
            else:
                result.append(_choice("has_nose", "no"))
            client.annotate(task_id, result, completed_by=annotator)

    first = ingest_round(root, key, label_studio.connection)
    assert first.counts.answers == 8 and first.counts.skipped == 0
    paths = {name: Path(path) for name, path in first.reports.items()}
    assert set(paths) == {"raw", "report", "resolved"}

    raw = [json.loads(line) for line in paths["raw"].read_text().splitlines()]
    assert len(raw) == 8  # every answer, the flagged one included
    flagged = [(r["item_id"], r["annotator"]) for r in raw if r["subparts"]["Ears"]["flags"]]
    assert flagged == [(tasks[bad_task], f"labelstudio:{bob}")]
    bad = next(r for r in raw if (r["item_id"], r["annotator"]) == flagged[0])
    assert bad["subparts"]["Ears"]["flags"] == ["too_few_points"] and bad["subparts"]["Ears"]["segmentation"] is None
    assert all(not r["subparts"][n]["flags"] for r in raw for n in ("Eyes", "Nose"))
    report = json.loads(paths["report"].read_text())
    assert report["flags"] == {"too_few_points": 1} and report["absent"] == 4  # the nose, on every item

    resolved = read_resolved(paths["resolved"])
    keys = [(r.image_id, r.part_ann_id, r.subpart) for r in resolved]
    expected = {(by_id[i].data["image_id"], by_id[i].data["part_ann_id"], name) for i, name in drawn}
    assert len(keys) == len(set(keys)) and set(keys) == expected  # one record each; no nose
    for record in resolved:
        item = next(i for i in items if i.data["part_ann_id"] == record.part_ann_id)
        truth_mask = _raster(drawn[(item.item_id, record.subpart)], item.height, item.width)
        mask = rle_to_bitmap(record.segmentation.model_dump()).astype(bool)
        assert (mask & truth_mask).sum() / (mask | truth_mask).sum() > 0.95
        voters = 1 if (item.item_id, record.subpart) == (tasks[bad_task], "Ears") else 2
        assert len(record.workers) == voters and record.agreement == 1.0

    before = {name: path.read_bytes() for name, path in paths.items()}
    answers_before = Path(first.answers).read_bytes()
    again = ingest_round(root, key, label_studio.connection)
    assert {name: Path(path).read_bytes() for name, path in again.reports.items()} == before
    assert Path(again.answers).read_bytes() == answers_before
