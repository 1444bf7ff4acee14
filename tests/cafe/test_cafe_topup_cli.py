"""CAFE's quotas are verified counts: a round that falls short is topped up by a second batch of
candidates and a second round, and the export of the chain meets the targets (run as a user types it)."""

from __future__ import annotations

from collections import Counter

import pytest
from support.cli import run

from segbench.core.errors import SegbenchError
from segbench.core.io import read_json
from segbench.demo.cafe.sources import generate_demo_cafe, simulated_rows
from segbench.demo.crowd import write_results_csv
from segbench.flows.cafe.verification import read_candidates
from segbench.schemas.rounds import Round
from segbench.tasks.cafe.verification import CONTROLS

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def _answer(tmp_path, key: str, candidates: str, reject: int = 0, gold: int = 0) -> list[int]:
    """Create, launch, answer and ingest a files round; the first ``reject`` candidates asked about get a
    clear no, and ``gold`` known-bad items (made from held-out candidates) their known answer."""
    data = tmp_path / "data"
    run(tmp_path, "rounds", "create", "cafe_verification", key, "--backend", "files", "--gold", str(gold),
        *(["--candidates", candidates] if candidates != "cafe_candidates" else []))
    run(tmp_path, "rounds", "launch", key)
    round_ = Round.model_validate(read_json(data / "rounds" / f"{key}.json"))
    asked = [int(item.item_id) for item in round_.items if not item.gold]
    rejected = sorted(asked)[:reject]
    truth = {str(number): {control: "no" if number in rejected and control == CONTROLS[0] else "yes"
                           for control in CONTROLS} for number in asked}
    truth |= {item.item_id: {control: str(item.gold.get(control, "yes")) for control in CONTROLS}
              for item in round_.items if item.gold}
    write_results_csv(simulated_rows(round_, truth, noise=0.0), data / "rounds" / key / "results" / "workers.csv")
    run(tmp_path, "rounds", "ingest", key)
    return rejected


def test_a_round_short_of_its_quotas_is_topped_up_until_the_targets_are_met(tmp_path):
    sources = generate_demo_cafe(tmp_path / "sources", seed=0, sizes={"coco": 16, "lvis": 10})
    data = tmp_path / "data"
    options = [arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")]
    # An expected share of 0.5 asks for twice the quota (into a folder of its own, not the one used below).
    halved = run(tmp_path, "build", "cafe-candidates", *options, "--quota", "coco=3", "--expect-acceptance", "0.5",
                 "--out", str(data / "expected_half"))
    assert "--candidates expected_half" in halved.output
    assert Counter(c.target.source for c in read_candidates(data / "expected_half")) == {"coco": 6, "lvis": 10}
    run(tmp_path, "build", "cafe-candidates", *options, "--quota", "coco=5", "--quota", "lvis=3")
    first = read_candidates(data / "cafe_candidates")
    assert len(first) == 8  # the quotas, with the expected share at 1
    assert Counter(c.target.source for c in first) == {"coco": 5, "lvis": 3}
    escaping = run(tmp_path, "rounds", "create", "cafe_verification", "x", "--candidates", "../elsewhere", code=1)
    assert "--candidates" in str(escaping.exception)
    run(tmp_path, "rounds", "create", "cafe_verification", "unanswered", "--backend", "files")
    early = run(tmp_path, "build", "cafe-candidates", *options, "--top-up", "unanswered", code=1)
    assert "rounds ingest unanswered" in str(early.exception)  # a top-up needs the round's answers
    # Two candidates are held out to make gold, numbered after the batch.
    rejected = _answer(tmp_path, "v1", "cafe_candidates", reject=3, gold=2)

    short = run(tmp_path, "build", "cafe", "--round", "v1")
    assert "3 / 8" in short.output and "--top-up v1" in short.output
    table = read_json(data / "cafe" / "tables" / "targets.json")
    assert sum(row["short"] for row in table) == 5 and sum(row["target"] for row in table) == 8

    # Options that decide the draw stay those of the batch topped up.
    refused = run(tmp_path, "build", "cafe-candidates", *options, "--top-up", "v1", "--quota", "coco=9", code=1)
    assert isinstance(refused.exception, SegbenchError) and "--quota" in str(refused.exception)
    topped = run(tmp_path, "build", "cafe-candidates", *options, "--top-up", "v1")
    assert "--candidates cafe_candidates_2" in topped.output
    second = read_candidates(data / "cafe_candidates_2")
    # The missing cells ask for 5 over the share measured there (Laplace: (v + 1) / (n + 2) per cell).
    assert len(second) >= 5 and min(c.id for c in second) > max(c.id for c in first)
    assert not {c.target.key for c in first} & {c.target.key for c in second}
    assert not {c.target.image_id for c in first if c.target.source == "coco"} & {
        c.target.image_id for c in second if c.target.source == "coco"}
    _answer(tmp_path, "v2", "cafe_candidates_2")

    met = run(tmp_path, "build", "cafe", "--round", "v2")
    assert "8 / 8" in met.output and "--top-up" not in met.output
    table = read_json(data / "cafe" / "tables" / "targets.json")
    assert all(row["short"] == 0 and row["exported"] == row["target"] for row in table)
    exported = read_json(data / "cafe" / "CAFE.json")
    positives = [image for image in exported["images"] if "fp_source_id" not in image]
    assert len(positives) == 8 and Counter(image["source"] for image in positives) == {"coco": 5, "lvis": 3}
    skipped = read_json(data / "cafe" / "skipped.json")
    assert {(item["id"], item["round"]) for item in skipped["items"] if item["error"] == "NotVerified"} == {
        (number, "v1") for number in rejected}
    beyond = [item for item in skipped["items"] if item["error"] == "BeyondTarget"]
    assert len(beyond) == len(second) - 5  # verified in v2, but their cell already had its target
    assert read_json(data / "cafe" / "manifest.json")["params"]["rounds"] == {
        "v1": {"candidates": "cafe_candidates", "answers": "v1.answers.json"},
        "v2": {"candidates": "cafe_candidates_2", "answers": "v2.answers.json"}}
    assert "Up to date" in run(tmp_path, "build", "cafe", "--round", "v2").output

    # The release reads every batch's candidates and answers: each released pair keeps its votes.
    answers = ["--annotations-license", "cc-by-4.0", "--intended-uses", "testing", "--social-impact", "none known",
               "--personal-information", "none", "--maintainer", "Data Team <data@example.org>"]
    run(tmp_path, "release", "cafe", "--out", str(tmp_path / "release"), *answers)
    card = (tmp_path / "release" / "README.md").read_text()
    assert "verification rounds" in card and "v1, v2" in card and "released / target, coco SM" in card
    import pyarrow.parquet as pq

    rows = pq.read_table(next((tmp_path / "release").rglob("all/*.parquet")), columns=["pair_id", "votes"]).to_pylist()
    assert len(rows) == 8 and all(row["votes"] for row in rows)
    # Three yes votes per question, each pair's own.
    first_round = Round.model_validate(read_json(data / "rounds" / "v1.json"))
    gold_ids = {int(item.item_id) for item in first_round.items if item.gold}
    assert len(gold_ids) == 2 and min(c.id for c in second) > max(gold_ids)  # a top-up's ids are new to the chain
    assert all(vote["yes"] == 3 and vote["no"] == 0 for row in rows for vote in row["votes"])
    assert {row["pair_id"] for row in rows} & {c.id for c in second}

    # Every batch of the chain is checked against its manifest before an export.
    (data / "cafe_candidates" / "review" / "extra.jpg").write_bytes(b"x")
    tampered = run(tmp_path, "build", "cafe", "--round", "v2", "--force", code=1)
    assert "changed since round v1" in str(tampered.exception)
