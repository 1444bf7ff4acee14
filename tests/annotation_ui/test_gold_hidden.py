"""Gold nobody can spot: in a round with gold, the task files show one opaque id form, one image
folder, one column set and a shuffled order for gold and work alike; answers map back to items."""

from __future__ import annotations

import csv
import io
import json
import re

from segbench.annotation_ui.convert import answers_from_files
from segbench.annotation_ui.crowd_files import write_file_tasks
from segbench.annotation_ui.gold import QualityOptions, gold_count, thin_gold_warning, with_quality
from segbench.annotation_ui.kinds import answer_checks
from segbench.annotation_ui.rounds import RoundStore, new_round
from segbench.core.errors import ImportPolicy, OnError
from segbench.demo.adversarial_crowd import suspected_gold
from segbench.flows.coco_cd.rounds import CONTEXT_AUDIT
from segbench.schemas.rounds import RoundConfig, RoundItem


def audit_round(tmp_path, *, gold: int = 30, seed: int = 4):
    work = [RoundItem(item_id=str(n), image=f"coco_cd/images/{n:012d}.png", width=64, height=64)
            for n in range(1000, 1200)]
    candidates = [RoundItem(item_id=str(n), image=f"coco_cd/images/{n:012d}.png", width=64, height=64,
                            gold={"context": "outdoor" if n % 5 == 0 else "indoor"}) for n in range(1200, 1400)]
    round_ = new_round("audit-x", CONTEXT_AUDIT.name, "coco_cd", "v1",
                       RoundConfig(label_config=CONTEXT_AUDIT.label_config.name, overlap=3), work, "files",
                       "2026-01-01T00:00:00+00:00")
    return with_quality(round_, candidates, QualityOptions(gold=gold, seed=seed), RoundStore(tmp_path / "rounds"))


def test_no_column_id_form_path_or_order_tells_gold_from_work(tmp_path):
    round_ = audit_round(tmp_path)
    gold = {i.item_id for i in round_.items if i.gold}
    csv_path, json_path = write_file_tasks(round_, tmp_path / "tasks")
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    by_task = round_.items_by_task_id()
    assert set(rows[0]) == {"item_id", "image", "width", "height"}
    assert all(re.fullmatch(r"t[0-9a-f]{12}", r["item_id"]) for r in rows)
    assert all(re.fullmatch(r"coco_cd/images/\d{12}\.png", r["image"]) for r in rows)
    assert "gold" not in csv_path.read_text() + json_path.read_text()
    gold_rows = [r for r in rows if by_task[r["item_id"]].item_id in gold]
    assert {len(r["item_id"]) for r in gold_rows} == {len(r["item_id"]) for r in rows}

    # The spotting trick that found every gold item before: rows breaking an ascending run of ids.
    base_rate = len(gold) / len(rows)
    for ids in ([r["item_id"] for r in rows], [r["image"] for r in rows]):
        picked = {by_task[t].item_id for t in suspected_gold(ids)} if ids[0].startswith("t") else {
            by_task[rows[n]["item_id"]].item_id for n, image in enumerate(ids) if image in set(suspected_gold(ids))}
        assert len(picked & gold) / len(picked) < 2 * base_rate  # about chance, not all gold
    positions = [n for n, r in enumerate(rows) if by_task[r["item_id"]].item_id in gold]
    assert positions[0] < len(rows) / 4 and positions[-1] > 3 * len(rows) / 4  # spread over the file
    work_ids = [int(by_task[r["item_id"]].item_id) for r in rows if by_task[r["item_id"]].item_id not in gold]
    assert work_ids != sorted(work_ids)


def test_gold_is_balanced_and_the_round_says_how_it_was_chosen(tmp_path):
    round_ = audit_round(tmp_path, gold=10)
    answers = sorted(i.gold["context"] for i in round_.items if i.gold)
    assert answers.count("outdoor") == 5 and answers.count("indoor") == 5  # candidates were 80/20
    assert round_.gold_selection.startswith("10 of 200 candidates") and "seed 4" in round_.gold_selection
    assert round_.task_salt is not None and audit_round(tmp_path, gold=10) == round_  # reproducible


def test_answers_on_task_ids_come_back_to_their_items(tmp_path):
    round_ = audit_round(tmp_path, gold=4)
    item = round_.items[0]
    rows = [{"WorkerId": "W1", "AssignmentId": "a1", "Input.item_id": round_.task_id(item.item_id),
             "Answer.context": "indoor"}]
    answers = answers_from_files(rows, round_, ImportPolicy(on_error=OnError.FAIL), **answer_checks(round_))
    assert [a.item_id for a in answers] == [item.item_id]
    stale = [{**rows[0], "Input.item_id": item.item_id}]  # a bare item id is no task of a round with gold
    policy = ImportPolicy(on_error=OnError.SKIP)
    assert answers_from_files(stale, round_, policy, **answer_checks(round_)) == [] and len(policy.report) == 1


def test_a_round_without_gold_keeps_its_ids_and_order(tmp_path):
    round_ = audit_round(tmp_path, gold=0)
    assert round_.task_salt is None and [i.item_id for i in round_.items] == [str(n) for n in range(1000, 1200)]
    assert round_.task_id("1000") == "1000"
    assert "task_salt" not in json.dumps(round_.model_dump(mode="json"))


def test_gold_auto_sizes_itself_and_thin_gold_is_warned_about(tmp_path):
    assert gold_count("auto", overlap=7, workers=30) == 22  # ⌈5 × 30 / 7⌉
    assert gold_count("auto", overlap=7, workers=30, rules={"min_gold_answers": 8}) == 35
    assert gold_count("auto", overlap=7, workers=3) == 5  # never fewer than a worker's minimum
    assert gold_count(" 12 ") == 12
    thin = audit_round(tmp_path, gold=4)
    assert "no worker can reach the 5 gold answers" in thin_gold_warning(thin, None)
    enough = audit_round(tmp_path, gold=30)
    assert thin_gold_warning(enough, None) is None
    assert "each sees about 3.0 gold items" in thin_gold_warning(enough, 30)  # 30 × 3 / 30


def test_a_gold_file_image_in_a_folder_of_its_own_is_refused(tmp_path):
    import pytest

    from segbench.core.errors import InputError

    gold_file = tmp_path / "gold.json"
    gold_file.write_text(json.dumps([{"item_id": "g1", "image": "gold/g1.png", "width": 64, "height": 64,
                                      "gold": {"context": "indoor"}}]))
    work = [RoundItem(item_id="1", image="coco_cd/images/000000000001.png", width=64, height=64)]
    round_ = new_round("r", CONTEXT_AUDIT.name, "coco_cd", "v1", RoundConfig(label_config=CONTEXT_AUDIT.label_config.name),
                       work, "files", "2026-01-01T00:00:00+00:00")
    with pytest.raises(InputError, match="folder no work item uses") as error:
        with_quality(round_, [], QualityOptions(gold_file=gold_file), RoundStore(tmp_path / "rounds"))
    assert error.value.item == "g1" and "coco_cd/images" in error.value.hint
