"""Gold items on the real Label Studio server, end to end: a COCO-CD audit round with gold images, an
honest annotator and a spammer account; the gold never reaches the server's tasks, the worker report
names the spammer, and a follow-up round on the spammer's items settles them."""

from __future__ import annotations

import json

import pytest

from segbench.core.io import read_json
from segbench.demo.world import generate_demo_world
from segbench.schemas.coco_cd import CocoCdParams

pytestmark = [pytest.mark.integration, pytest.mark.labelstudio, pytest.mark.usefixtures("prefect_harness")]

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
WRONG = {"indoor": "outdoor", "outdoor": "indoor"}


def _choice(label: str) -> list[dict]:
    return [{"from_name": "context", "to_name": "image", "type": "choices", "value": {"choices": [label]}}]


def test_a_spammer_on_label_studio_is_named_by_the_worker_report_and_followed_up(tmp_path, label_studio, monkeypatch):
    from segbench.annotation_ui.followups import create_follow_up, parse_condition
    from segbench.annotation_ui.rounds import RoundStore
    from segbench.flows.coco_cd.audit import create_coco_cd_audit
    from segbench.flows.coco_cd.build import build_coco_cd
    from segbench.flows.rounds import ingest_round, launch_round

    generate_demo_world(tmp_path / "world", seed=4, group_sizes=SIZES)
    data = tmp_path / "data"
    build_coco_cd(tmp_path / "world", tmp_path / "world", data / "coco_cd",
                  CocoCdParams(val_per_group=3, test_per_group=2, size=64))
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", label_studio.token)
    client = label_studio.client
    key = f"gold-{tmp_path.name}"[:60]
    # Three gold answers each: judged on them with the round's minimum lowered to 3.
    round_ = create_coco_cd_audit(data, key, per_group=1, seed=3, backend="labelstudio", overlap=2, gold=3,
                                  rules={"min_gold_answers": 3})
    gold_ids = {round_.task_id(i.item_id) for i in round_.items if i.gold}
    by_task = round_.items_by_task_id()  # tasks show task ids; the simulation knows the items behind them
    launched = launch_round(data, key, label_studio.connection)

    export = client.export(launched.project_id)
    assert len(export) == 7 and "gold" not in json.dumps([task["data"] for task in export]).replace(key, "")
    tasks = client.task_item_ids(launched.project_id)
    assert gold_ids <= set(tasks.values())

    val = read_json(data / "coco_cd" / "splits" / "rho_0.5" / "val.json")
    auto = {str(image["id"]): image["context"] for image in val["images"]}
    honest, spammer = (client.create_user(f"{name}-{key}@example.com") for name in ("honest", "spammer"))
    for task_id, shown in sorted(tasks.items()):
        item_id = by_task[shown].item_id
        client.annotate(task_id, _choice(auto[item_id]), completed_by=honest)
        client.annotate(task_id, _choice(WRONG[auto[item_id]]), completed_by=spammer)

    # Majority vote: the two workers tie on every work item (the screened default would follow the
    # honest one, whom the gold vouches for), so the reviewer's follow-up below decides them.
    result = ingest_round(data, key, label_studio.connection, aggregation="majority")
    assert result.counts.gold_items == 3 and result.counts.answers == 8  # 4 work items × 2
    report = read_json(data / "rounds" / f"{key}.workers.json")
    by = {w["worker"]: w for w in report["workers"]}
    assert by[f"labelstudio:{honest}"]["gold_accuracy"] == 1.0
    assert by[f"labelstudio:{honest}"]["name"] == f"honest-{key}@example.com"  # reports show the e-mail
    assert f"labelstudio:{spammer} (spammer-{key}@example.com)" in (data / "rounds" / f"{key}.workers.md").read_text()
    assert by[f"labelstudio:{spammer}"]["gold_accuracy"] == 0.0
    assert [s["worker"] for s in report["suspicious"]] == [f"labelstudio:{spammer}"]
    before = (data / "rounds" / f"{key}.workers.json").read_bytes()
    ingest_round(data, key, label_studio.connection)  # the recorded method again
    assert (data / "rounds" / f"{key}.workers.json").read_bytes() == before

    # The honest and the spammer's votes tie on every work item; a reviewer settles the spammer's items.
    assert all(item["majority"]["context"] is None for item in read_json(data / "rounds" / f"{key}.answers.json")["items"])
    follow_key = f"{key[:56]}-fu"
    follow, matched = create_follow_up(RoundStore(data / "rounds"), key, follow_key, [parse_condition("suspicious")],
                                       "2024-01-01T00:00:00+00:00")
    work = {i.item_id for i in round_.items if not i.gold}
    assert follow is not None and set(matched) == work
    project = launch_round(data, follow_key, label_studio.connection).project_id
    reviewer = client.create_user(f"reviewer-{key}@example.com")
    asked = follow.items_by_task_id()  # a follow-up asks about work items only: it has no gold to hide
    for task_id, shown in sorted(client.task_item_ids(project).items()):
        client.annotate(task_id, _choice(auto[asked[shown].item_id]), completed_by=reviewer)
    ingest_round(data, follow_key, label_studio.connection)
    merged = read_json(data / "rounds" / f"{follow_key}.answers.json")
    assert {i["item_id"]: (i["majority"]["context"], i["decided_by"]) for i in merged["items"]} == \
        {item_id: (auto[item_id], follow_key) for item_id in work}
    before = (data / "rounds" / f"{follow_key}.answers.json").read_bytes()
    ingest_round(data, follow_key, label_studio.connection)
    assert (data / "rounds" / f"{follow_key}.answers.json").read_bytes() == before
