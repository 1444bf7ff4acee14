"""Gold and qualification options and gated rounds, fed hostile values through the console entry point:
exit code 2, the option or round named, the fix given, nothing written."""

from __future__ import annotations

import pytest
from support.hostile import assert_clean_failure, run_main, snapshot

from segbench.annotation_ui.rounds import RoundStore, new_round
from segbench.schemas.rounds import RoundConfig, RoundItem, RoundStatus

T0 = "2026-01-01T00:00:00+00:00"


@pytest.mark.parametrize("value", ["-1", "-30"])
def test_a_negative_gold_count_is_refused(tmp_path, value):
    outcome = run_main(tmp_path, "rounds", "create", "coco_cd_context_audit", "a1", "--backend", "files", "--gold", value)
    assert_clean_failure(outcome, "--gold", f"--gold {value}")
    assert snapshot(tmp_path / "data") == {str(tmp_path / "data"): {}}


def _round(store: RoundStore, key: str, **fields) -> None:
    item = RoundItem(item_id="1", image="coco_cd/images/1.png", width=8, height=8, gold=fields.pop("gold", None))
    round_ = new_round(key, "coco_cd_context_audit", "coco_cd", "v", RoundConfig(label_config="coco_cd_context"),
                       [item], "files", T0)
    store.create(round_.model_copy(update={"status": RoundStatus.LAUNCHED, **fields}))


def test_ingesting_a_gated_round_before_its_qualification_names_the_qualification(tmp_path):
    store = RoundStore(tmp_path / "data" / "rounds")
    _round(store, "qual", gold={"context": "indoor"}, purpose="qualification", pass_threshold=0.8)
    _round(store, "work", requires="qual")
    before = snapshot(tmp_path / "data")
    outcome = run_main(tmp_path, "rounds", "ingest", "work")
    assert_clean_failure(outcome, "qual", "segbench rounds ingest qual")
    assert snapshot(tmp_path / "data") == before


def test_a_gate_on_a_round_that_does_not_exist_lists_the_rounds(tmp_path):
    store = RoundStore(tmp_path / "data" / "rounds")
    _round(store, "work", requires="gone")
    outcome = run_main(tmp_path, "rounds", "ingest", "work")
    assert_clean_failure(outcome, "no round with key 'gone'", "existing rounds: work")


def test_side_files_of_a_round_are_not_taken_for_rounds(tmp_path):
    store = RoundStore(tmp_path / "data" / "rounds")
    _round(store, "work")
    for name in ("work.workers.json", "work.qualified.json", "work.answers.json"):
        (store.root / name).write_text("{}")
    assert store.keys() == ["work"]
    assert_clean_failure(run_main(tmp_path, "rounds", "create", "coco_cd_context_audit", "x.workers", "--backend", "files"), "x.workers")


def test_a_damaged_gold_answer_in_the_answers_file_is_named_with_the_fix(tmp_path):
    store = RoundStore(tmp_path / "data" / "rounds")
    _round(store, "work")
    store.answers_path("work").write_text('{"answers": [], "gold_answers": [{"item_id": 3}]}')
    outcome = run_main(tmp_path, "rounds", "ingest", "work")
    assert_clean_failure(outcome, "gold_answers[0]", "work.answers.json")
