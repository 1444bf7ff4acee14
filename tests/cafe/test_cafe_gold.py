"""CAFE verification rounds with known-bad pairs as gold (the outline moved off the object): mixed in
unseen, kept out of the export's answers, and scored per worker."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from support.cli import run

from segbench.core.io import read_json
from segbench.demo.cafe.sources import generate_demo_cafe, simulated_rows, simulated_truth
from segbench.demo.crowd import write_results_csv
from segbench.flows.cafe.verification import read_candidates
from segbench.schemas.rounds import Round
from segbench.tasks.cafe.gold import shifted_off

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def test_a_mask_is_moved_beside_itself_or_refused():
    mask = np.zeros((20, 20), dtype=bool)
    mask[2:6, 2:6] = True
    moved = shifted_off(mask)
    assert moved is not None and moved.sum() == 16 and not (moved & mask).any()
    assert shifted_off(np.ones((20, 20), dtype=bool)) is None  # nowhere to go
    assert shifted_off(np.zeros((4, 4), dtype=bool)) is None


def test_known_bad_pairs_are_gold_in_the_verification_round(tmp_path):
    sources = generate_demo_cafe(tmp_path / "sources", seed=0, sizes={"coco": 6, "lvis": 4})
    data = tmp_path / "data"
    options = [arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")]
    run(tmp_path, "build", "cafe-candidates", *options)
    run(tmp_path, "rounds", "create", "cafe_verification", "v1", "--backend", "files", "--gold", "2", "--seed", "4",
        "--rule", "min_gold_answers=2")  # two gold pairs: each worker judged on them
    round_ = Round.model_validate(read_json(data / "rounds" / "v1.json"))
    candidates = read_candidates(data / "cafe_candidates")
    gold = [i for i in round_.items if i.gold]
    assert len(gold) == 2 and all(i.gold == {"mask_fits": "no"} for i in gold)
    assert {i.item_id for i in gold} == {str(len(candidates) + 1), str(len(candidates) + 2)}
    assert all(Image.open(data / i.image).size == (i.width, i.height) for i in gold)
    assert all(set(i.data) == {"q_pos", "q_neg", "edit_type"} for i in gold)
    run(tmp_path, "rounds", "launch", "v1")
    tasks = (data / "rounds" / "v1" / "tasks.csv").read_text()
    assert "gold" not in tasks.lower() and "mask_fits" not in tasks
    shown = [row.split(",")[1] for row in tasks.splitlines()[1:]]
    assert all(path == f"rounds/v1/review/{row.split(',')[0]}.jpg" for path, row in zip(shown, tasks.splitlines()[1:], strict=True))
    work = next(i for i in round_.items if not i.gold)
    original = data / "cafe_candidates" / next(c for c in candidates if str(c.id) == work.item_id).review_image
    assert (data / work.image).read_bytes() == original.read_bytes()

    truth = simulated_truth(candidates, seed=0) | {i.item_id: {"positive_valid": "yes", "negative_invalid": "yes",
                                                             "edit_clean": "yes", "mask_fits": "no"} for i in gold}
    rows = simulated_rows(round_, truth, noise=0.0)
    careless = [{**r, "WorkerId": "YES", "AssignmentId": f"{r['AssignmentId']}-yes",
                 **{k: "yes" for k in r if k.startswith("Answer.")}} for r in rows if r["WorkerId"] == "SIMWORKER01"]
    write_results_csv(rows + careless, data / "rounds" / "v1" / "results" / "workers.csv")
    run(tmp_path, "rounds", "ingest", "v1")
    report = read_json(data / "rounds" / "v1.workers.json")
    by = {w["worker"]: w for w in report["workers"]}
    assert by["worker:SIMWORKER01"]["gold_accuracy"] == 1.0 and by["worker:YES"]["gold_accuracy"] == 0.0
    assert [s["worker"] for s in report["suspicious"]] == ["worker:YES"]
    saved = read_json(data / "rounds" / "v1.answers.json")
    assert {i["item_id"] for i in saved["items"]} == {i.item_id for i in round_.items if not i.gold}
    assert "samples (pairs)" in run(tmp_path, "build", "cafe", "--round", "v1").output  # the export ignores gold
    # v1's decided candidates are all asked about again by a new round over the same candidates: no gold from v1
    again = run(tmp_path, "rounds", "create", "cafe_verification", "v2", "--backend", "files", "--gold-from", "v1",
                code=1)
    assert "that this round does not ask about" in str(again.exception) and again.exception.item == "--gold-from"


def test_unedited_source_images_are_gold_too(tmp_path):
    sources = generate_demo_cafe(tmp_path / "sources", seed=0, sizes={"coco": 6, "lvis": 4})
    data = tmp_path / "data"
    options = [arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")]
    run(tmp_path, "build", "cafe-candidates", *options)
    given = [arg for spec in sources for arg in ("--gold-source", f"{spec.name}={spec.images}")]
    run(tmp_path, "rounds", "create", "cafe_verification", "v2", "--backend", "files", "--gold", "4", *given)
    round_ = Round.model_validate(read_json(data / "rounds" / "v2.json"))
    kinds = sorted(str(i.gold) for i in round_.items if i.gold)
    assert kinds == sorted([str({"mask_fits": "no"})] * 2 + [str({"negative_invalid": "no"})] * 2)
    candidates = {str(c.id): c for c in read_candidates(data / "cafe_candidates")}
    by_order = sorted(candidates.values(), key=lambda c: c.id)
    for item in (i for i in round_.items if i.gold == {"negative_invalid": "no"}):
        same = [c for c in by_order if (c.plan.q_pos, c.plan.q_neg, c.plan.edit_type.value)
                == (item.data["q_pos"], item.data["q_neg"], item.data["edit_type"])]
        assert len(same) == 1
        source = same[0].target
        spec = next(s for s in sources if s.name == source.source)
        shown = np.asarray(Image.open(data / item.image).convert("L"), dtype=float)
        original = np.asarray(Image.open(spec.images / source.file_name).convert("L"), dtype=float)
        assert np.median(np.abs(shown - original)) < 8  # the unedited picture, outline aside

    bad = run(tmp_path, "rounds", "create", "cafe_verification", "v3", "--backend", "files", "--gold", "2", "--gold-source",
              "coco", code=1)
    assert "--gold-source" in bad.exception.item and bad.exception.hint


def test_a_cafe_qualification_round_gates_the_verification_round(tmp_path):
    sources = generate_demo_cafe(tmp_path / "sources", seed=0, sizes={"coco": 6, "lvis": 4})
    data = tmp_path / "data"
    options = [arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")]
    run(tmp_path, "build", "cafe-candidates", *options)
    run(tmp_path, "rounds", "create", "cafe_verification", "q1", "--backend", "files", "--gold", "3", "--qualification",
        "--pass-threshold", "1", "--seed", "4", "--rule", "min_gold_answers=3")  # three gold answers each
    qual = Round.model_validate(read_json(data / "rounds" / "q1.json"))
    assert qual.purpose == "qualification" and len(qual.items) == 3 and all(i.gold for i in qual.items)
    run(tmp_path, "rounds", "launch", "q1")
    known = {i.item_id: {"positive_valid": "yes", "negative_invalid": "yes", "edit_clean": "yes", **i.gold}
             for i in qual.items}
    careless = {item_id: {**answers, "mask_fits": "yes"} for item_id, answers in known.items()}
    write_results_csv(simulated_rows(qual, known, workers=1, noise=0.0)
                      + [{**r, "WorkerId": "YES", "AssignmentId": f"{r['AssignmentId']}-yes"}
                         for r in simulated_rows(qual, careless, workers=1, noise=0.0)],
                      data / "rounds" / "q1" / "results" / "qualification.csv")
    assert "(1 passed)" in run(tmp_path, "rounds", "ingest", "q1").output
    assert (data / "rounds" / "q1" / "qualification.csv").read_text().splitlines() == [
        "Worker ID,UPDATE-segbench-q1", "SIMWORKER01,100"]

    run(tmp_path, "rounds", "create", "cafe_verification", "v1", "--backend", "files", "--requires", "q1", "--overlap", "3")
    round_ = Round.model_validate(read_json(data / "rounds" / "v1.json"))
    assert round_.requires == "q1"
    run(tmp_path, "rounds", "launch", "v1")
    truth = simulated_truth(read_candidates(data / "cafe_candidates"), seed=0)
    flipped = {item: {control: "no" if label == "yes" else "yes" for control, label in answers.items()}
               for item, answers in truth.items()}
    honest = simulated_rows(round_, truth, workers=1, noise=0.0)
    outvoting = [{**r, "WorkerId": f"YES{n}", "AssignmentId": f"{r['AssignmentId']}-{n}"}
                 for n in (1, 2) for r in simulated_rows(round_, flipped, workers=1, noise=0.0)]
    write_results_csv(honest + outvoting, data / "rounds" / "v1" / "results" / "workers.csv")
    run(tmp_path, "rounds", "ingest", "v1")
    saved = read_json(data / "rounds" / "v1.answers.json")
    assert saved["qualified_workers"] == ["worker:SIMWORKER01"] and len(saved["answers"]) == 3 * len(truth)
    assert all(i["majority"] == truth[i["item_id"]] for i in saved["items"])  # the two unqualified are not counted
