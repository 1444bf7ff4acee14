"""SPIN's review round, run as a user types it: a subparts round through the files backend, then
``rounds create spin_review --of`` it, reviewers keep, redraw, remove and send back, and ingest lays the
decisions over resolved.json, where they stay when the crowd round is imported again."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from PIL import Image
from support.cli import run

from segbench.annotation_ui.rounds import RoundStore
from segbench.core.io import atomic_write_text, read_json
from segbench.demo.crowd import write_results_csv
from segbench.demo.spin.world import demo_taxonomy, generate_demo_spin, read_truth
from segbench.schemas.rounds import ItemAnswer, RoundItem
from segbench.schemas.spin import ResolvedSubpart, ReviewDecision, SpinBuildParams, read_resolved
from segbench.tasks.spin import review

PAIR = ("Quadruped", "Head")  # subparts in the demo taxonomy: Ears, Eyes, Nose
SQUARE = [[2, 2], [10, 2], [10, 10], [2, 10]]  # rasterises to the 8 x 8 pixels 2..9


def _crowd_rows(key, items, truth):
    rows = []
    for item in items:
        polygons = [{"label": name, "points": [[x, y] for x, y in zip(flat[0::2], flat[1::2], strict=True)]}
                    for name in ("Eyes", "Nose") for flat in truth[(item.data["part_ann_id"], name)]]
        rows.append({"WorkerId": "W1", "AssignmentId": f"{key}-{item.item_id}", "Input.item_id": item.item_id,
                     "Answer.part_visible": "yes", "Answer.has_eyes": "yes", "Answer.has_ears": "no",
                     "Answer.has_nose": "yes", "Answer.polygons": json.dumps(polygons)})
    return rows


def _crowd_round(tmp_path):
    """A files-backend subparts round of the demo world's quadruped heads, answered (not yet ingested)."""
    from segbench.flows.spin.build import spin_round_items
    from segbench.flows.spin.crowd import create_spin_rounds

    demo = generate_demo_spin(tmp_path / "pin", seed=0, split_sizes={"train": 2, "val": 1, "test": 1})
    data = tmp_path / "data"
    atomic_write_text(data / "spin" / "taxonomy.yaml",
                      yaml.safe_dump(demo_taxonomy().model_dump(mode="json"), sort_keys=False))
    truth = {(row["part_ann_id"], row["subpart"]): row["polygons"] for row in read_truth(demo.truth_path)}
    items = spin_round_items(demo.root, data, SpinBuildParams())[PAIR]
    (crowd,) = create_spin_rounds(data, items, key_prefix="spin", dataset_version="test", backend="files", overlap=1)
    run(tmp_path, "rounds", "launch", crowd.key)
    write_results_csv(_crowd_rows(crowd.key, crowd.items, truth), data / "rounds" / crowd.key / "results" / "a.csv")
    return crowd


@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
def test_a_review_round_keeps_redraws_removes_and_sends_back(tmp_path):
    crowd = _crowd_round(tmp_path)
    data = tmp_path / "data"
    refused = run(tmp_path, "rounds", "create", "spin_review", "rev1", "--of", crowd.key, code=1)
    assert "no imported answers to review" in str(refused.exception)  # not ingested yet
    run(tmp_path, "rounds", "ingest", crowd.key)
    resolved_path = data / "spin" / "crowd" / "resolved.json"
    before = {(r.part_ann_id, r.subpart): r for r in read_resolved(resolved_path)}
    assert {s for _, s in before} == {"Eyes", "Nose"}

    out = run(tmp_path, "rounds", "create", "spin_review", "rev1", "--of", crowd.key, "--backend", "files").stdout
    assert "Review round created" in out and "rounds launch rev1" in out
    overlay_bytes = {p: p.read_bytes() for p in (data / "spin" / "review" / "rev1").iterdir()}
    again = run(tmp_path, "rounds", "create", "spin_review", "rev1", "--of", crowd.key, code=1)
    assert "already exists" in str(again.exception)
    assert {p: p.read_bytes() for p in (data / "spin" / "review" / "rev1").iterdir()} == overlay_bytes
    rev = RoundStore(data / "rounds").load("rev1")
    assert rev.kind == "spin_review" and len(rev.items) == len(crowd.items) >= 2
    first, second = rev.items[:2]
    assert first.data["shown"]["Ears"] is None and first.data["shown"]["Eyes"] is not None
    # the overlay is the crowd task's image with the resolved outlines drawn in
    source = next(i for i in crowd.items if i.item_id == first.item_id)
    overlay, task = (np.asarray(Image.open(data / p).convert("RGB")) for p in (first.image, source.image))
    assert overlay.shape == task.shape and (overlay != task).any()

    run(tmp_path, "rounds", "launch", "rev1")
    write_results_csv([
        {"WorkerId": "R1", "AssignmentId": "r-1", "Input.item_id": first.item_id, "Answer.part_usable": "yes",
         "Answer.review_eyes": "right", "Answer.review_nose": "absent", "Answer.review_ears": "redrawn",
         "Answer.polygons": json.dumps([{"label": "Ears", "points": SQUARE}])},
        {"WorkerId": "R1", "AssignmentId": "r-2", "Input.item_id": second.item_id, "Answer.part_usable": "no"},
    ], data / "rounds" / "rev1" / "results" / "r.csv")
    ingested = json.loads(run(tmp_path, "--json", "rounds", "ingest", "rev1").stdout)
    assert {"reviews", "resolved", "review_report"} <= set(ingested["reports"])

    after = {(r.part_ann_id, r.subpart): r for r in read_resolved(resolved_path)}
    one, two = first.data["part_ann_id"], second.data["part_ann_id"]
    assert after[(one, "Eyes")] == before[(one, "Eyes")]  # kept
    assert (one, "Nose") not in after  # absent
    ears = after[(one, "Ears")]  # redrawn: the reviewer's square
    assert (ears.area, ears.polygons, ears.workers, ears.rule) == (64, 1, ["worker:R1"], review.RULE)
    assert not any(part == two for part, _ in after)  # sent back: its subparts leave the dataset
    others = {k: v for k, v in before.items() if k[0] not in (one, two)}
    assert all(after[k] == v for k, v in others.items())  # unanswered tasks change nothing
    report = read_json(data / "spin" / "crowd" / "rev1.review.json")
    assert report["counts"] == {"right": 1, "redrawn": 1, "absent": 1, "again": 3, "undecided": 0}
    assert report["annotate_again"] == [second.item_id]

    # a reviewer who changes an answer: the re-ingest undoes what the old one did
    rows = (data / "rounds" / "rev1" / "results" / "r.csv").read_text()
    (data / "rounds" / "rev1" / "results" / "r.csv").write_text(rows.replace("absent", "right"))
    run(tmp_path, "rounds", "ingest", "rev1")
    assert {(r.part_ann_id, r.subpart): r for r in read_resolved(resolved_path)}[(one, "Nose")] == before[(one, "Nose")]
    (data / "rounds" / "rev1" / "results" / "r.csv").write_text(rows)
    run(tmp_path, "rounds", "ingest", "rev1")
    assert (one, "Nose") not in {(r.part_ann_id, r.subpart) for r in read_resolved(resolved_path)}

    # the review stays when the crowd round is imported again, and a re-ingest changes no byte
    outputs = sorted((data / "spin" / "crowd").glob("*"))
    snapshot = {p.name: p.read_bytes() for p in outputs}
    for key in (crowd.key, "rev1"):
        run(tmp_path, "rounds", "ingest", key)
        assert {p.name: p.read_bytes() for p in outputs} == snapshot, key


@pytest.mark.integration
@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
def test_two_reviewers_who_split_change_nothing(tmp_path):
    crowd = _crowd_round(tmp_path)
    data = tmp_path / "data"
    run(tmp_path, "rounds", "ingest", crowd.key)
    resolved = (data / "spin" / "crowd" / "resolved.json").read_bytes()
    run(tmp_path, "rounds", "create", "spin_review", "rev2", "--of", crowd.key, "--backend", "files", "--overlap", "2")
    run(tmp_path, "rounds", "launch", "rev2")
    first = RoundStore(data / "rounds").load("rev2").items[0]
    write_results_csv([{"WorkerId": reviewer, "AssignmentId": f"r-{reviewer}", "Input.item_id": first.item_id,
                        "Answer.part_usable": "yes", "Answer.review_eyes": "right", "Answer.review_ears": "right",
                        "Answer.review_nose": verdict} for reviewer, verdict in (("R1", "absent"), ("R2", "right"))],
                      data / "rounds" / "rev2" / "results" / "r.csv")
    run(tmp_path, "rounds", "ingest", "rev2")
    report = read_json(data / "spin" / "crowd" / "rev2.review.json")
    assert report["counts"]["undecided"] == 1 and report["undecided"][0]["subpart"] == "Nose"
    assert (data / "spin" / "crowd" / "resolved.json").read_bytes() == resolved  # a split review removes nothing


def test_a_review_of_a_round_that_does_not_exist_is_refused(tmp_path):
    result = run(tmp_path, "rounds", "create", "spin_review", "rev1", "--of", "nothing", code=1)
    assert "nothing" in str(result.exception) and not (tmp_path / "data" / "rounds" / "rev1.json").exists()


def _record(subpart: str, counts: str) -> ResolvedSubpart:
    return ResolvedSubpart(image_id=1, part_ann_id=2, object="Quadruped", object_class="dog", part="Head",
                           subpart=subpart, category=f"Quadruped-Head-{subpart}",
                           segmentation={"size": [4, 4], "counts": counts}, area=1, polygons=1, workers=["w"],
                           agreement=1.0, rule="r")


def _decision(verdict: str, shown: ResolvedSubpart | None, record: ResolvedSubpart | None = None) -> ReviewDecision:
    return ReviewDecision(review="rev", image_id=1, part_ann_id=2, subpart="Nose", verdict=verdict,
                          shown=review.shown_digest(shown), reviewers=["worker:R"], record=record)


@pytest.mark.unit
def test_a_decision_applies_only_to_the_outline_it_was_made_about():
    crowd, newer, drawn = _record("Nose", "04"), _record("Nose", "1302"), _record("Nose", "0j")
    assert review.apply_reviews([crowd], [_decision("absent", crowd)]) == []
    assert review.apply_reviews([newer], [_decision("absent", crowd)]) == [newer]  # re-annotated since: stands
    assert review.apply_reviews([crowd], [_decision("redrawn", crowd, drawn)]) == [drawn]
    # in ingest order: a second review of the redrawn outline removes it; applying again changes nothing
    decisions = [_decision("redrawn", crowd, drawn), _decision("absent", drawn)]
    assert review.apply_reviews([crowd], decisions) == [] == review.apply_reviews([], decisions)
    # a subpart nobody outlined, redrawn by the reviewer, is added
    assert review.apply_reviews([], [_decision("redrawn", None, drawn)]) == [drawn]


@pytest.mark.unit
def test_ties_and_redraws_without_an_outline_change_nothing():
    item = RoundItem(item_id="a", image="x.png", width=20, height=20,
                     data={"image_id": 1, "part_ann_id": 2, "object": "Quadruped", "object_class": "dog",
                           "part": "Head", "subparts": ["Ears", "Nose"], "shown": {"Ears": None, "Nose": None}})
    tie = ItemAnswer(item_id="a", annotators=["r1", "r2"], majority={"part_usable": None}, agreement={})
    settled = ItemAnswer(item_id="a", annotators=["r1", "r2"], majority={"part_usable": "no"}, agreement={},
                         model_settled={"part_usable": 0.6})  # a model broke the people's tie: still a tie
    for answer in (tie, settled):
        assert review.decide("rev", [item], [answer]).undecided == [{"item_id": "a", "control": "part_usable",
                                                                     "reason": "no majority"}]
    undrawn = ItemAnswer(item_id="a", annotators=["r1"], agreement={},
                         majority={"part_usable": "yes", "review_ears": "redrawn", "review_nose": None})
    outcome = review.decide("rev", [item], [undrawn])
    assert outcome.decisions == [] and [u["subpart"] for u in outcome.undecided] == ["Ears", "Nose"]
    assert outcome.undecided[0]["reason"] == "marked redrawn, but no reviewer outlined it"
