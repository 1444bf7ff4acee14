"""A CAFE verification round rolled out one subset at a time, then followed up on its tied items:
``build cafe --round`` with the root's key exports from the merged answers of the follow-up."""

from __future__ import annotations

import json

import pytest
from support.cli import run

from segbench.core.io import read_json
from segbench.demo.cafe.sources import generate_demo_cafe, simulated_rows, simulated_truth
from segbench.demo.crowd import write_results_csv
from segbench.flows.cafe.verification import read_candidates
from segbench.schemas.rounds import ItemAnswer, Round
from segbench.tasks.cafe import verification

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def _round(data, key: str) -> Round:
    return Round.model_validate(read_json(data / "rounds" / f"{key}.json"))


def test_cafe_round_by_subset_and_a_follow_up_feed_the_export(tmp_path):
    sources = generate_demo_cafe(tmp_path / "sources", seed=0, sizes={"coco": 6, "lvis": 4})
    data = tmp_path / "data"
    run(tmp_path, "build", "cafe-candidates",
        *[arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")])
    run(tmp_path, "rounds", "create", "cafe_verification", "v1", "--backend", "files")
    round_ = _round(data, "v1")
    subsets = {item.batch for item in round_.items}
    assert subsets <= {"SM", "CC", "OC"} and len(subsets) >= 2

    first = sorted(subsets)[0]
    run(tmp_path, "rounds", "launch", "v1", "--batch", first)
    status = json.loads(run(tmp_path, "--json", "rounds", "status", "v1").stdout)
    assert {b["batch"]: b["launched"] for b in status["batches"]} == {
        s: sum(i.batch == s for i in round_.items) if s == first else 0 for s in subsets}
    run(tmp_path, "rounds", "launch", "v1")  # the rest
    assert all(b["launched"] == b["items"] for b in json.loads(
        run(tmp_path, "--json", "rounds", "status", "v1").stdout)["batches"])

    truth = simulated_truth(read_candidates(data / "cafe_candidates"), seed=0)
    # Two noisy workers: some questions tie under majority vote (a model would break the ties).
    write_results_csv(simulated_rows(round_, truth, workers=2, noise=0.4, seed=3),
                      data / "rounds" / "v1" / "results" / "workers.csv")
    run(tmp_path, "rounds", "ingest", "v1", "--aggregation", "majority")
    before = json.loads(run(tmp_path, "--json", "build", "cafe", "--round", "v1").stdout)

    created = json.loads(run(tmp_path, "--json", "rounds", "follow-up", "v1", "v1-tie", "--where", "tie").stdout)
    tied = sorted(created["matched"])
    assert tied and len(tied) < len(round_.items)
    follow = _round(data, "v1-tie")
    run(tmp_path, "rounds", "launch", "v1-tie")
    tiebreak = [{**row, "WorkerId": "TIEBREAKER"} for row in simulated_rows(follow, truth, workers=1, noise=0.0)]
    write_results_csv(tiebreak, data / "rounds" / "v1-tie" / "results" / "tiebreak.csv")
    run(tmp_path, "rounds", "ingest", "v1-tie")

    merged = read_json(data / "rounds" / "v1-tie.answers.json")
    decided = {i["item_id"]: i["decided_by"] for i in merged["items"]}
    assert {k for k, v in decided.items() if v == "v1-tie"} == set(tied)
    assert all(None not in i["majority"].values() for i in merged["items"] if i["item_id"] in tied)

    after = json.loads(run(tmp_path, "--json", "build", "cafe", "--round", "v1").stdout)
    assert not after["up_to_date"]  # the merged answers are a new input
    manifest = read_json(data / "cafe" / "manifest.json")
    assert manifest["params"]["answers_of"] == "v1-tie"
    verified = sum(verification.verdict(ItemAnswer.model_validate(i))[0] for i in merged["items"])
    assert after["counts"]["samples"] == verified
    root_items = read_json(data / "rounds" / "v1.answers.json")["items"]
    assert before["counts"]["samples"] == sum(verification.verdict(ItemAnswer.model_validate(i))[0] for i in root_items)
    again = json.loads(run(tmp_path, "--json", "build", "cafe", "--round", "v1-tie").stdout)
    assert again["counts"] == after["counts"]
