"""CAFE's build commands in the order a user runs them: candidates, verification round, export."""

from __future__ import annotations

import pytest
from support.cli import run

from segbench.core.errors import SegbenchError
from segbench.core.io import read_json
from segbench.demo.cafe.sources import generate_demo_cafe, simulated_rows, simulated_truth
from segbench.demo.crowd import write_results_csv
from segbench.flows.cafe.verification import read_candidates
from segbench.schemas.rounds import Round

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def test_cafe_from_sources_to_the_sa_co_export_through_the_command_line(tmp_path):
    sources = generate_demo_cafe(tmp_path / "sources", seed=0, sizes={"coco": 6, "lvis": 4})
    data = tmp_path / "data"
    options = [arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")]

    candidates = run(tmp_path, "build", "cafe-candidates", *options)
    assert "CAFE candidates" in candidates.output and "Next: segbench rounds create cafe_verification" in candidates.output
    created = run(tmp_path, "rounds", "create", "cafe_verification", "v1", "--backend", "files")
    assert "Round created" in created.output
    run(tmp_path, "rounds", "launch", "v1")

    round_ = Round.model_validate(read_json(data / "rounds" / "v1.json"))
    truth = simulated_truth(read_candidates(data / "cafe_candidates"), seed=0)
    write_results_csv(simulated_rows(round_, truth), data / "rounds" / "v1" / "results" / "workers.csv")
    run(tmp_path, "rounds", "ingest", "v1")

    exported = run(tmp_path, "build", "cafe", "--round", "v1")
    assert "samples (pairs)" in exported.output
    assert {p.name for p in (data / "cafe").glob("CAFE*.json")} == {"CAFE.json", "CAFE_SM.json", "CAFE_CC.json",
                                                                    "CAFE_OC.json"}
    wrong = run(tmp_path, "build", "cafe", "--round", "nope", code=1)
    assert isinstance(wrong.exception, SegbenchError) and "nope" in str(wrong.exception)

    # A round one of whose items nobody answered is exported only when asked for.
    run(tmp_path, "rounds", "create", "cafe_verification", "v2", "--backend", "files")
    run(tmp_path, "rounds", "launch", "v2")
    round_ = Round.model_validate(read_json(data / "rounds" / "v2.json"))
    left = round_.items[0].item_id
    rows = [row for row in simulated_rows(round_, truth) if row["Input.item_id"] != left]
    write_results_csv(rows, data / "rounds" / "v2" / "results" / "workers.csv")
    run(tmp_path, "rounds", "ingest", "v2")
    unfinished = run(tmp_path, "build", "cafe", "--round", "v2", "--out", str(tmp_path / "v2"), code=1)
    assert "1 of" in str(unfinished.exception) and "--partial" in str(unfinished.exception)
    assert not (tmp_path / "v2").exists()
    partial = run(tmp_path, "build", "cafe", "--round", "v2", "--out", str(tmp_path / "v2"), "--partial")
    assert "1 unanswered" in partial.output
    assert read_json(tmp_path / "v2" / "manifest.json")["counts"]["unanswered"] == 1
