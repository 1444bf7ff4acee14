"""Choosing and mixing gold items, reading a gold file, and the MTurk qualification upload."""

from __future__ import annotations

import json

import pytest

from segbench.annotation_ui.gold import choose_gold, mturk_qualification_csv, read_gold_file, shuffle
from segbench.core.errors import InputError
from segbench.core.worker_quality import passed
from segbench.schemas.rounds import RoundItem


def item(n: int, gold: dict | None = None) -> RoundItem:
    return RoundItem(item_id=str(n), image=f"ds/{n}.png", width=4, height=4, gold=gold)


def test_gold_and_work_are_shuffled_together_and_gold_is_chosen_by_seed():
    work = [item(n) for n in range(30)]
    gold = [item(n, {"c": "x"}) for n in range(30, 40)]
    mixed = shuffle([*work, *gold], seed=1)
    assert mixed == shuffle([*gold, *reversed(work)], seed=1)  # the input order does not matter
    assert sorted(mixed, key=lambda i: int(i.item_id)) == [*work, *gold]
    work_order = [int(i.item_id) for i in mixed if not i.gold]
    assert work_order != sorted(work_order)  # the work items are shuffled too: no ascending run to break
    pool = [item(n, {"c": "x"}) for n in range(20)]
    assert choose_gold(pool, 4, 7, taken=set()) == choose_gold(pool, 4, 7, taken=set())
    assert not {i.item_id for i in choose_gold(pool, 18, 7, taken={"0", "1"})[0]} & {"0", "1"}
    with pytest.raises(InputError, match="only 18") as error:
        choose_gold(pool, 19, 7, taken={"0", "1"})
    assert "--gold 18" in error.value.hint


def test_a_gold_file_entry_without_an_answer_is_named(tmp_path):
    path = tmp_path / "gold.json"
    path.write_text(json.dumps([{"item_id": "a", "image": "ds/a.png", "width": 4, "height": 4, "gold": {"c": "x"}},
                                {"item_id": "b", "image": "ds/b.png", "width": 4, "height": 4}]))
    with pytest.raises(InputError, match="no 'gold' answer") as error:
        read_gold_file(path)
    assert error.value.item == "entry 1 (b)"
    path.write_text(json.dumps({"item_id": "a"}))
    with pytest.raises(InputError, match="JSON list"):
        read_gold_file(path)


def test_the_pass_list_and_its_mturk_upload():
    report = {"rules": {"min_gold_answers": 5},
              "workers": [{"worker": "worker:A1", "gold_accuracy": 0.9, "gold_answers": 10},
                          {"worker": "worker:B2", "gold_accuracy": 0.5, "gold_answers": 10},
                          {"worker": "labelstudio:3", "gold_accuracy": 1.0, "gold_answers": 10},
                          {"worker": "worker:C3", "gold_accuracy": None, "gold_answers": 0}]}
    winners = passed(report, 0.8)
    assert [w["worker"] for w in winners] == ["worker:A1", "labelstudio:3"]
    assert mturk_qualification_csv("q1", winners) == "Worker ID,UPDATE-segbench-q1\nA1,90\n"


def test_a_worker_too_sparse_to_judge_never_passes():
    report = {"rules": {"min_gold_answers": 5},
              "workers": [{"worker": "worker:A1", "gold_accuracy": 1.0, "gold_answers": 4},
                          {"worker": "worker:B2", "gold_accuracy": 1.0, "gold_answers": 5}]}
    assert [w["worker"] for w in passed(report, 0.8)] == ["worker:B2"]


def test_gold_is_balanced_per_known_answer_not_a_copy_of_the_imbalance():
    pool = [item(n, {"c": "indoor" if n < 80 else "outdoor"}) for n in range(100)]
    chosen, how = choose_gold(pool, 10, 3, taken=set())
    assert sorted(i.gold["c"] for i in chosen).count("outdoor") == 5
    assert "balanced per known answer" in how and "c=outdoor: 5 of 20" in how
    few = [item(n, {"c": "indoor" if n < 18 else "outdoor"}) for n in range(20)]
    chosen, _ = choose_gold(few, 10, 3, taken=set())  # only 2 outdoor: indoor takes the rest of the share
    assert sorted(i.gold["c"] for i in chosen).count("outdoor") == 2 and len(chosen) == 10
