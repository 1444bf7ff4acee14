"""SPIN rounds with gold parts (reference polygons from a gold file), scored by polygon IoU, and the
worker report naming a worker who marks every part absent."""

from __future__ import annotations

import json

import pytest
from support.cli import run

from segbench.core.io import read_json, write_json
from segbench.demo.crowd import write_results_csv
from segbench.demo.spin.crowd import CrowdNoise, simulate_crowd_rows
from segbench.demo.spin.world import generate_demo_spin, read_truth
from segbench.schemas.rounds import Round
from segbench.schemas.spin import load_taxonomy

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

EXACT = CrowdNoise(flip=0, too_few_points=0, outside_image=0, outside_part=0)


def _gold_part(tmp_path):
    """The demo world, its taxonomy, and a gold file of one Car-Tire part with its reference polygons
    (a part id of its own, so that a leak would show)."""
    world = generate_demo_spin(tmp_path / "source", seed=0)
    run(tmp_path, "build", "spin-taxonomy")
    run(tmp_path, "rounds", "create", "spin_subparts", "plain", "--partimagenet", str(world.root), "--backend", "files",
        "--supercategory", "Car")
    plain = Round.model_validate(read_json(tmp_path / "data" / "rounds" / "plain-car-tire.json"))
    truth = read_truth(world.truth_path)
    source = plain.items[0]
    references = [{"label": row["subpart"], "points": [flat[i:i + 2] for i in range(0, len(flat), 2)]}
                  for row in truth if row["part_ann_id"] == source.data["part_ann_id"] for flat in row["polygons"]]
    assert references
    stem, ann = source.item_id.rsplit("-", 1)
    gold_id = f"{stem}-{int(ann) + 90000}"  # the same form as every other item id
    gold_part = source.data["part_ann_id"] + 90000
    gold_data = {**{k: v for k, v in source.data.items() if k != "subparts"}, "part_ann_id": gold_part}
    gold_file = write_json(tmp_path / "gold.json", [{"item_id": gold_id, "image": source.image, "width": source.width,
                                                     "height": source.height, "data": gold_data,
                                                     "gold": {"polygons": references}}])
    truth_with_gold = truth + [{**row, "part_ann_id": gold_part} for row in truth
                               if row["part_ann_id"] == source.data["part_ann_id"]]
    return world, source, gold_id, gold_part, gold_file, truth_with_gold


def _lazy(rows, worker="W1"):
    """The rows of ``worker`` answered again by LAZY, who marks every part absent and draws nothing."""
    return [{**row, "WorkerId": "LAZY", "AssignmentId": f"{row['AssignmentId']}-lazy",
             **{k: "no" for k in row if k.startswith("Answer.has_")}, "Answer.polygons": "[]"}
            for row in rows if row["WorkerId"] == worker]


def test_spin_gold_parts_are_scored_by_polygon_iou(tmp_path):
    world, source, gold_id, gold_part, gold_file, truth_with_gold = _gold_part(tmp_path)
    data = tmp_path / "data"

    run(tmp_path, "rounds", "create", "spin_subparts", "g", "--partimagenet", str(world.root), "--backend", "files",
        "--supercategory", "Car", "--gold-file", str(gold_file))
    round_ = Round.model_validate(read_json(data / "rounds" / "g-car-tire.json"))
    assert [i.item_id for i in round_.items if i.gold] == [gold_id]
    assert not any(i.gold for i in Round.model_validate(read_json(data / "rounds" / "g-car-side_mirror.json")).items)
    run(tmp_path, "rounds", "launch", "g-car-tire")
    folder = data / "rounds" / "g-car-tire"
    assert "gold" not in (folder / "tasks.csv").read_text() + (folder / "tasks.json").read_text()

    taxonomy = load_taxonomy(data / "spin" / "taxonomy.yaml")
    rows = simulate_crowd_rows(round_.items, truth_with_gold, taxonomy, noise=EXACT, task_id=round_.task_id)
    lazy = _lazy(rows)
    write_results_csv([{**r, "Answer.polygons": r.get("Answer.polygons", "[]")} for r in rows + lazy],
                      folder / "results" / "batch.csv")
    ingested = run(tmp_path, "rounds", "ingest", "g-car-tire")
    assert "(1 suspicious" in ingested.output
    report = read_json(data / "rounds" / "g-car-tire.workers.json")
    by = {w["worker"]: w for w in report["workers"]}
    assert by["worker:W1"]["gold_accuracy"] == 1.0 and by["worker:LAZY"]["gold_accuracy"] == 0.0
    assert by["worker:LAZY"]["flags"]["absent_rate"] == 1.0
    (suspect,) = report["suspicious"]
    assert suspect["worker"] == "worker:LAZY" and any("absent" in r for r in suspect["reasons"])
    saved = read_json(data / "rounds" / "g-car-tire.answers.json")
    assert gold_id not in json.dumps(saved["answers"]) and gold_id in json.dumps(saved["gold_answers"])

    results = write_json(tmp_path / "results.json", rows + lazy)  # the gold rows too
    for source_args in ([], ["--results", str(results)]):
        run(tmp_path, "spin", "import", "--round", "g-car-tire", *source_args)
        resolved = read_json(data / "spin" / "crowd" / "resolved.json")
        parts = {r["part_ann_id"] for r in resolved}
        assert gold_part not in parts and source.data["part_ann_id"] in parts


def test_a_spin_qualification_round_gates_every_part_round(tmp_path):
    world, _, gold_id, _, gold_file, truth_with_gold = _gold_part(tmp_path)
    data = tmp_path / "data"
    run(tmp_path, "rounds", "create", "spin_subparts", "q", "--partimagenet", str(world.root), "--backend", "files",
        "--supercategory", "Car", "--gold-file", str(gold_file), "--qualification", "--pass-threshold", "1",
        "--rule", "min_gold_answers=1")  # one gold part: judged on it alone
    qual = Round.model_validate(read_json(data / "rounds" / "q-car-tire.json"))
    assert qual.purpose == "qualification" and [i.item_id for i in qual.items] == [gold_id]
    assert sorted(p.name for p in (data / "rounds").glob("q-*.json")) == ["q-car-tire.json"]  # no part without gold
    run(tmp_path, "rounds", "launch", "q-car-tire")
    taxonomy = load_taxonomy(data / "spin" / "taxonomy.yaml")
    rows = simulate_crowd_rows(qual.items, truth_with_gold, taxonomy, noise=EXACT, task_id=qual.task_id)
    write_results_csv(rows + _lazy(rows), data / "rounds" / "q-car-tire" / "results" / "q.csv")
    run(tmp_path, "rounds", "ingest", "q-car-tire")
    passed = [p["worker"] for p in read_json(data / "rounds" / "q-car-tire.qualified.json")["passed"]]
    assert "worker:LAZY" not in passed and "worker:W1" in passed

    run(tmp_path, "rounds", "create", "spin_subparts", "w", "--partimagenet", str(world.root), "--backend", "files",
        "--supercategory", "Car", "--requires", "q-car-tire")
    keys = sorted(p.name[: -len(".json")] for p in (data / "rounds").glob("w-*.json"))
    assert keys and all(Round.model_validate(read_json(data / "rounds" / f"{k}.json")).requires == "q-car-tire"
                        for k in keys)
    work = Round.model_validate(read_json(data / "rounds" / "w-car-tire.json"))
    run(tmp_path, "rounds", "launch", "w-car-tire")
    rows = simulate_crowd_rows(work.items, truth_with_gold, taxonomy, noise=EXACT, task_id=work.task_id)
    write_results_csv(rows + _lazy(rows), data / "rounds" / "w-car-tire" / "results" / "batch.csv")
    run(tmp_path, "rounds", "ingest", "w-car-tire")
    saved = read_json(data / "rounds" / "w-car-tire.answers.json")
    assert "worker:LAZY" in {a["annotator"] for a in saved["answers"]}  # recorded
    assert all("worker:LAZY" not in item["annotators"] for item in saved["items"])  # not counted
