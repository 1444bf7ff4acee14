"""A phased rollout and a follow-up round through the command line, on the files backend (an external
crowd): launch one batch → status per batch → ingest → launch the next batch → ingest → follow up
the tied items and a suspicious worker's → ingest the follow-up (merged answers, decided_by) →
re-ingest everything (no byte changes); and the hostile inputs on the way, refused with typed errors.

The round is a SPIN subparts round whose items carry no part masks: its ingest hook then saves the
answers and stops, so no dataset build is needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run
from support.hostile import assert_clean_failure, run_main, snapshot

from segbench.annotation_ui.batches import BatchError
from segbench.annotation_ui.followups import ConditionError
from segbench.core.errors import InputError, RoundStateError
from segbench.core.io import read_json, write_json
from segbench.demo.crowd import write_results_csv
from segbench.schemas.rounds import RoundConfig, RoundItem

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

KEY, FOLLOW = "s1", "s1-again"
BATCHES = {"img1": "Car", "img2": "Car", "img3": "Bird", "img4": "Bird"}


@pytest.fixture
def project(tmp_path) -> Path:
    """A created files-backend round of four items in two batches."""
    from segbench.annotation_ui.rounds import RoundStore, new_round
    from segbench.tasks.spin import crowd

    items = [RoundItem(item_id=item, image=f"spin/tasks/{item}.png", width=100, height=80, batch=batch,
                       data={"image_id": n, "part_ann_id": 41, "object": batch, "object_class": "cab", "part": "Tire",
                             "subparts": ["Rim"]})
             for n, (item, batch) in enumerate(BATCHES.items(), start=1)]
    config = RoundConfig(label_config=crowd.LABEL_CONFIG, overlap=3,
                         params={"object": "Car", "part": "Tire", "subparts": ["Rim"]})
    round_ = new_round(KEY, crowd.KIND, crowd.DATASET, "0" * 64, config, items, "files", "2026-01-01T00:00:00+00:00")
    RoundStore(tmp_path / "data" / "rounds").save(round_)
    return tmp_path


def _results(project: Path, key: str, name: str, answers: list[tuple[str, str, str]]) -> None:
    rows = [{"WorkerId": worker, "AssignmentId": f"{key}-{worker}-{item}", "Input.item_id": item,
             "Answer.part_visible": label} for worker, item, label in answers]
    write_results_csv(rows, project / "data" / "rounds" / key / "results" / f"{name}.csv")


def _status(project: Path, key: str) -> dict:
    return json.loads(run(project, "--json", "rounds", "status", key).stdout)


def _tasks(project: Path, key: str) -> list[str]:
    return [line.split(",")[0] for line in (project / "data" / "rounds" / key / "tasks.csv").read_text().splitlines()[1:]]


def _files(project: Path) -> dict[str, bytes]:
    rounds = project / "data" / "rounds"
    return {p.name: p.read_bytes() for p in rounds.glob("*.answers.json")}


def test_phased_rollout_then_a_follow_up_merges_the_answers(project):
    # --- phased rollout: one batch, then the next, even after an ingest ---
    launched = run(project, "rounds", "launch", KEY, "--batch", "Car")
    assert "batches out" in launched.stdout and "Car" in launched.stdout
    assert _tasks(project, KEY) == ["img1", "img2"]
    assert run(project, "rounds", "launch", KEY, "--batch", "Car").exit_code == 0  # idempotent
    assert _tasks(project, KEY) == ["img1", "img2"]
    _results(project, KEY, "car", [("W1", "img1", "yes"), ("W2", "img1", "yes"),
                                   ("W1", "img2", "yes"), ("W2", "img2", "no")])
    status = _status(project, KEY)
    assert status["tasks"] == 2 and status["done"] == 2
    assert status["batches"] == [{"batch": "Bird", "items": 2, "launched": 0, "answered": 0},
                                 {"batch": "Car", "items": 2, "launched": 2, "answered": 2}]
    table = run(project, "rounds", "status", KEY).stdout
    assert "Batches" in table and "Bird" in table
    run(project, "rounds", "ingest", KEY)

    run(project, "rounds", "launch", KEY, "--batch", "Bird")
    assert _tasks(project, KEY) == ["img1", "img2", "img3", "img4"]
    assert read_json(project / "data" / "rounds" / f"{KEY}.json")["status"] == "ingested"
    _results(project, KEY, "bird", [("W1", "img3", "yes"), ("W2", "img3", "yes"), ("W3", "img3", "yes"),
                                    ("W1", "img4", "yes"), ("SPAM", "img4", "no"), ("W2", "img4", "yes")])
    assert [b["launched"] for b in _status(project, KEY)["batches"]] == [2, 2]
    run(project, "rounds", "ingest", KEY)

    # --- follow-up: nothing matches → nothing created; then the tie and the suspicious worker's items ---
    none = run(project, "rounds", "follow-up", KEY, "s1-none", "--where", "votes<1")
    assert "no follow-up round created" in none.stdout
    assert not (project / "data" / "rounds" / "s1-none.json").exists()
    write_json(project / "data" / "rounds" / f"{KEY}.workers.json", {
        "round": KEY, "workers": [], "suspicious": [{"worker": "worker:SPAM", "reasons": ["answers against all"]}]})
    created = json.loads(run(project, "--json", "rounds", "follow-up", KEY, FOLLOW,
                             "--where", "tie", "--where", "suspicious").stdout)
    assert created["matched"] == {"img2": ["tie"], "img4": ["suspicious"]}
    record = read_json(project / "data" / "rounds" / f"{FOLLOW}.json")
    assert record["follow_up_of"] == KEY and record["status"] == "created" and record["backend"] == "files"
    assert [(i["item_id"], i["batch"]) for i in record["items"]] == [("img2", "Car"), ("img4", "Bird")]
    assert record["config"] == read_json(project / "data" / "rounds" / f"{KEY}.json")["config"]
    assert KEY in run(project, "rounds", "list").stdout and FOLLOW in run(project, "rounds", "list").stdout

    run(project, "rounds", "launch", FOLLOW)
    assert _tasks(project, FOLLOW) == ["img2", "img4"]
    _results(project, FOLLOW, "more", [("W4", "img2", "yes"), ("W5", "img2", "yes"), ("W4", "img4", "yes")])
    assert "follows up" in run(project, "rounds", "status", FOLLOW).stdout
    ingested = json.loads(run(project, "--json", "rounds", "ingest", FOLLOW).stdout)
    assert ingested["counts"]["answers"] == 10 + 3 and ingested["counts"]["items_answered"] == 2

    merged = read_json(project / "data" / "rounds" / f"{FOLLOW}.answers.json")
    items = {i["item_id"]: i for i in merged["items"]}
    assert {k: i["decided_by"] for k, i in items.items()} == {"img1": KEY, "img2": FOLLOW, "img3": KEY, "img4": FOLLOW}
    assert items["img2"]["majority"] == {"part_visible": "yes"} and len(items["img2"]["annotators"]) == 4
    assert len({a["source_id"] for a in merged["answers"]}) == len(merged["answers"]) == 13
    root = read_json(project / "data" / "rounds" / f"{KEY}.answers.json")
    assert {i["decided_by"] for i in root["items"]} == {KEY} and len(root["answers"]) == 10

    # --- re-ingesting the root or the follow-up changes no byte of any answers file ---
    before = _files(project)
    for key in (FOLLOW, KEY, FOLLOW):
        run(project, "rounds", "ingest", key)
        assert _files(project) == before


def test_hostile_follow_up_and_batch_inputs_are_refused_with_typed_errors(project):
    rounds = project / "data" / "rounds"
    unknown = run(project, "rounds", "launch", KEY, "--batch", "Fish", code=1)
    assert isinstance(unknown.exception, BatchError) and "batches: Bird, Car" in str(unknown.exception)
    assert not (rounds / KEY).exists()  # no tasks written
    assert read_json(rounds / f"{KEY}.json")["status"] == "created"

    early = run(project, "rounds", "follow-up", KEY, FOLLOW, "--where", "tie", code=1)
    assert isinstance(early.exception, RoundStateError) and "segbench rounds ingest s1" in early.exception.hint

    for bad in ("agreement<2", "votes>3", "majority", "agreement<0.5; tie"):
        result = run(project, "rounds", "follow-up", KEY, FOLLOW, "--where", bad, code=1)
        assert isinstance(result.exception, ConditionError) and repr(bad) in str(result.exception)
        assert "agreement:CONTROL<X" in result.exception.hint
    assert not (rounds / f"{FOLLOW}.json").exists()

    run(project, "rounds", "launch", KEY)
    _results(project, KEY, "all", [("W1", item, "yes") for item in BATCHES])
    run(project, "rounds", "ingest", KEY)
    (rounds / f"{KEY}.workers.json").unlink()  # as a round ingested before worker reports existed
    missing = run(project, "rounds", "follow-up", KEY, FOLLOW, "--where", "suspicious", code=1)
    assert isinstance(missing.exception, RoundStateError) and "ingest it first" in missing.exception.hint
    control = run(project, "rounds", "follow-up", KEY, FOLLOW, "--where", "agreement:nope<0.5", code=1)
    assert isinstance(control.exception, ConditionError) and "part_visible" in control.exception.hint
    run(project, "rounds", "follow-up", KEY, FOLLOW, "--where", "votes<2")
    twice = run(project, "rounds", "follow-up", KEY, "s1-other", "--where", "votes<2", code=1)
    assert isinstance(twice.exception, RoundStateError) and FOLLOW in str(twice.exception)
    ahead = run(project, "rounds", "follow-up", FOLLOW, "s1-third", "--where", "votes<2", code=1)
    assert isinstance(ahead.exception, RoundStateError) and "created" in str(ahead.exception)
    bad_key = run(project, "rounds", "follow-up", KEY, "../x", "--where", "tie", code=1)
    assert isinstance(bad_key.exception, InputError) and "invalid round key" in str(bad_key.exception)


def test_the_console_entry_prints_a_bad_where_and_a_bad_batch_cleanly(project):
    before = snapshot(project / "data")
    bad_where = run_main(project, "rounds", "follow-up", KEY, FOLLOW, "--where", "agreement<<0.5")
    assert_clean_failure(bad_where, "agreement<<0.5", "votes<N", "tie")
    bad_batch = run_main(project, "rounds", "launch", KEY, "--batch", "Fish")
    assert_clean_failure(bad_batch, "Fish", "Bird, Car")
    assert snapshot(project / "data") == before
