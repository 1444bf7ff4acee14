"""Gold items, qualification rounds and the worker report of a COCO-CD audit round, through the command
line on the files backend (an external crowd)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from support.cli import run

from segbench.core.errors import InputError, RoundStateError
from segbench.core.io import read_json
from segbench.demo.crowd import write_results_csv
from segbench.demo.world import generate_demo_world
from segbench.schemas.coco_cd import CocoCdParams
from segbench.schemas.rounds import Round

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
WRONG = {"indoor": "outdoor", "outdoor": "indoor"}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    from segbench.flows.coco_cd.build import build_coco_cd

    world = tmp_path_factory.mktemp("world")
    generate_demo_world(world, seed=2, group_sizes=SIZES)
    project = tmp_path_factory.mktemp("project")
    build_coco_cd(world, world, project / "data" / "coco_cd", CocoCdParams(val_per_group=3, test_per_group=2, size=64))
    return project


def truth(project: Path) -> dict[str, str]:
    val = read_json(project / "data" / "coco_cd" / "splits" / "rho_0.5" / "val.json")
    return {str(i["id"]): i["context"] for i in val["images"]}


def answer_rows(round_: dict, worker: str, labels: dict[str, str], seconds: float) -> list[dict[str, str]]:
    """A worker's results rows, keyed by the task ids the crowd sees in tasks.csv."""
    task_id = Round.model_validate(round_).task_id
    return [{"WorkerId": worker, "AssignmentId": f"{round_['key']}-{worker}-{task_id(item['item_id'])}",
             "Input.item_id": task_id(item["item_id"]), "Answer.context": labels[item["item_id"]],
             "WorkTimeInSeconds": str(seconds)} for item in round_["items"]]


def test_gold_items_look_like_the_others_are_scored_and_stay_out_of_the_answers(project):
    # Three gold answers each: the worker report judges them on gold only with its minimum lowered to 3.
    created = run(project, "rounds", "create", "coco_cd_context_audit", "g1", "--backend", "files", "--per-group", "1", "--overlap", "3",
                  "--gold", "3", "--seed", "5", "--rule", "min_gold_answers=3")
    assert "gold items" in created.output
    assert "gold answers the worker report needs" not in created.output  # 3 is the round's minimum
    record = read_json(project / "data" / "rounds" / "g1.json")
    assert record["quality_rules"] == {"min_gold_answers": 3.0} and "balanced per known answer" in record["gold_selection"]
    gold_ids = [i["item_id"] for i in record["items"] if i["gold"]]
    assert len(gold_ids) == 3 and len(record["items"]) == 7
    run(project, "rounds", "create", "coco_cd_context_audit", "g1-again", "--backend", "files", "--per-group", "1", "--gold", "3", "--seed", "5")
    again = read_json(project / "data" / "rounds" / "g1-again.json")
    assert [i["item_id"] for i in again["items"]] == [i["item_id"] for i in record["items"]]  # seeded

    run(project, "rounds", "launch", "g1")
    folder = project / "data" / "rounds" / "g1"
    tasks_csv, tasks_json = (folder / "tasks.csv").read_text(), (folder / "tasks.json").read_text()
    assert "gold" not in tasks_csv.lower() and "gold" not in tasks_json.lower()
    header = tasks_csv.splitlines()[0]
    rows = list(csv.DictReader(io.StringIO(tasks_csv)))
    assert header == "item_id,image,width,height" and len(rows) == 7
    task_id = Round.model_validate(record).task_id
    assert [r["item_id"] for r in rows] == [task_id(i["item_id"]) for i in record["items"]]
    assert all(re.fullmatch(r"t[0-9a-f]{12}", r["item_id"]) for r in rows)  # one opaque form for gold and work

    labels = truth(project)
    spam = {item_id: WRONG[label] for item_id, label in labels.items()}
    write_results_csv(answer_rows(record, "GOOD1", labels, 30) + answer_rows(record, "GOOD2", labels, 28)
                      + answer_rows(record, "GOOD3", labels, 33) + answer_rows(record, "SPAM", spam, 2),
                      folder / "results" / "batch-1.csv")
    result = run(project, "rounds", "ingest", "g1")
    assert "worker report:" in result.output and "(1 suspicious)" in result.output

    saved = read_json(project / "data" / "rounds" / "g1.answers.json")
    assert not {a["item_id"] for a in saved["answers"]} & set(gold_ids)
    assert not {i["item_id"] for i in saved["items"]} & set(gold_ids)
    assert {a["item_id"] for a in saved["gold_answers"]} == set(gold_ids)
    assert saved["aggregation"] == "screened" and saved["left_out"] == []  # no masks to leave anyone out of
    assert all(i["majority"]["context"] == labels[i["item_id"]] for i in saved["items"])
    audit = read_json(project / "data" / "coco_cd_audit" / "g1.json")
    assert audit["overall"]["items"] == 4  # the dataset report sees the work items only

    report = read_json(project / "data" / "rounds" / "g1.workers.json")
    rows = {w["worker"]: w for w in report["workers"]}
    assert rows["worker:GOOD1"]["gold_accuracy"] == 1.0 and rows["worker:SPAM"]["gold_accuracy"] == 0.0
    assert rows["worker:GOOD1"]["median_seconds"] == 30.0 and rows["worker:SPAM"]["answers"] == 7
    assert [s["worker"] for s in report["suspicious"]] == ["worker:SPAM"]
    assert any("gold accuracy 0.00" in r for r in report["suspicious"][0]["reasons"])
    assert (project / "data" / "rounds" / "g1.workers.png").read_bytes()[:4] == b"\x89PNG"
    assert "## Suspicious workers (1)" in (project / "data" / "rounds" / "g1.workers.md").read_text()

    def outputs() -> dict[str, bytes]:  # the record itself changes: it keeps the time of the last ingest
        return {p.name: p.read_bytes() for p in (project / "data" / "rounds").glob("g1.*.*")}

    before = outputs()
    assert set(before) == {"g1.answers.json", "g1.workers.json", "g1.workers.md", "g1.workers.png"}
    run(project, "rounds", "ingest", "g1")
    assert outputs() == before
    assert "Round closed" in run(project, "rounds", "close", "g1").output  # every work item has its answers


def test_a_qualification_round_gates_a_later_round(project):
    run(project, "rounds", "create", "coco_cd_context_audit", "q1", "--backend", "files", "--per-group", "1", "--gold", "4",
        "--qualification", "--pass-threshold", "0.75", "--seed", "2", "--rule", "min_gold_answers=4")
    qual = read_json(project / "data" / "rounds" / "q1.json")
    assert qual["purpose"] == "qualification" and all(i["gold"] for i in qual["items"]) and len(qual["items"]) == 4
    run(project, "rounds", "create", "coco_cd_context_audit", "w1", "--backend", "files", "--per-group", "1", "--overlap", "3",
        "--requires", "q1", "--seed", "3")
    run(project, "rounds", "launch", "w1")
    labels = truth(project)
    work = read_json(project / "data" / "rounds" / "w1.json")
    spam = {item_id: WRONG[label] for item_id, label in labels.items()}
    results = project / "data" / "rounds" / "w1" / "results"
    write_results_csv(answer_rows(work, "A", labels, 20) + answer_rows(work, "B", labels, 22)
                      + answer_rows(work, "SPAM1", spam, 3) + answer_rows(work, "SPAM2", spam, 3),
                      results / "batch.csv")
    failed = run(project, "rounds", "ingest", "w1", code=1)
    assert isinstance(failed.exception, RoundStateError)
    assert "q1" in str(failed.exception) and "segbench rounds ingest q1" in failed.exception.hint

    run(project, "rounds", "launch", "q1")
    write_results_csv(answer_rows(qual, "A", labels, 20) + answer_rows(qual, "B", labels, 25)
                      + answer_rows(qual, "SPAM1", spam, 3), project / "data" / "rounds" / "q1" / "results" / "q.csv")
    ingested = run(project, "rounds", "ingest", "q1").output
    assert "(2 passed)" in ingested and "qualification.csv" in ingested
    passed = read_json(project / "data" / "rounds" / "q1.qualified.json")
    assert [p["worker"] for p in passed["passed"]] == ["worker:A", "worker:B"]
    upload = (project / "data" / "rounds" / "q1" / "qualification.csv").read_text().splitlines()
    assert upload == ["Worker ID,UPDATE-segbench-q1", "A,100", "B,100"]

    # two spammers outvote two honest workers, unless the gate leaves them out
    run(project, "rounds", "ingest", "w1")
    saved = read_json(project / "data" / "rounds" / "w1.answers.json")
    assert len(saved["answers"]) == 16 and saved["qualified_workers"] == ["worker:A", "worker:B"]
    assert all(i["majority"]["context"] == labels[i["item_id"]] for i in saved["items"])
    report = read_json(project / "data" / "rounds" / "w1.workers.json")
    reasons = {s["worker"]: s["reasons"] for s in report["suspicious"]}
    assert set(reasons) == {"worker:SPAM1", "worker:SPAM2"}
    assert any("not on the qualification pass list" in r for r in reasons["worker:SPAM2"])


@pytest.mark.parametrize(("args", "error", "names"), [
    (["--gold", "-1"], InputError, "--gold"),
    (["--gold", "999"], InputError, "--gold"),
    (["--requires", "no-such-round"], InputError, "no-such-round"),
    (["--qualification", "--gold", "2"], InputError, "--pass-threshold"),
    (["--pass-threshold", "0.5"], InputError, "--pass-threshold"),
    (["--gold", "auto"], InputError, "--gold auto"),
    (["--gold", "some"], InputError, "--gold"),
    (["--rule", "min_kapa=0.3"], InputError, "min_kappa"),
    (["--rule", "min_kappa"], InputError, "NAME=NUMBER"),
])
def test_bad_gold_and_qualification_options_are_refused(project, args, error, names):
    result = run(project, "rounds", "create", "coco_cd_context_audit", "bad", "--backend", "files", "--per-group", "1", *args, code=1)
    assert isinstance(result.exception, error)
    assert names in f"{result.exception.item} {result.exception}" and result.exception.hint
    assert not (project / "data" / "rounds" / "bad.json").exists()


def test_a_gold_file_adds_gold_items_and_a_bad_one_is_named(project, tmp_path):
    labels = truth(project)
    record = None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"item_id": "x", "image": "coco_cd/images/x.png", "width": 64, "height": 64}]))
    result = run(project, "rounds", "create", "coco_cd_context_audit", "gf", "--backend", "files", "--per-group", "1", "--gold-file", str(bad),
                 code=1)
    assert isinstance(result.exception, InputError) and "entry 0 (x)" in result.exception.item
    run(project, "rounds", "create", "coco_cd_context_audit", "gf0", "--backend", "files", "--per-group", "1", "--seed", "9")
    taken = {i["item_id"] for i in read_json(project / "data" / "rounds" / "gf0.json")["items"]}
    free = sorted(set(labels) - taken)[0]
    good = tmp_path / "gold.json"
    good.write_text(json.dumps([{"item_id": free, "image": f"coco_cd/images/{int(free):012d}.png", "width": 64,
                                 "height": 64, "gold": {"context": labels[free]}}]))
    run(project, "rounds", "create", "coco_cd_context_audit", "gf", "--backend", "files", "--per-group", "1", "--seed", "9",
        "--gold-file", str(good))
    record = read_json(project / "data" / "rounds" / "gf.json")
    assert [i["item_id"] for i in record["items"] if i["gold"]] == [free] and len(record["items"]) == 5


def test_label_studio_tasks_hide_gold_and_lead_time_becomes_seconds(project, tmp_path, monkeypatch):
    """A Label Studio round against the in-memory stand-in for the server."""
    from support.label_studio_stand_in import StandInClient

    from segbench.annotation_ui.backends.labelstudio import LabelStudioBackend
    from segbench.flows.coco_cd.audit import create_coco_cd_audit
    from segbench.flows.rounds import ingest_round, launch_round
    from segbench.schemas.rounds import LabelStudioConnection

    client = StandInClient()
    monkeypatch.setattr(LabelStudioBackend, "client", lambda self, connection=None: client)
    data = project / "data"
    round_ = create_coco_cd_audit(data, "ls-audit", per_group=1, seed=6, backend="labelstudio", overlap=2, gold=2,
                                  rules={"min_judgments": 3})
    gold_ids = {round_.task_id(i.item_id) for i in round_.items if i.gold}
    stand_in = LabelStudioConnection(url="http://stand-in", files=tmp_path / "files")
    launched = launch_round(data, "ls-audit", stand_in)
    tasks = client.export(launched.project_id)
    assert len(tasks) == 6 and {t["data"]["item_id"] for t in tasks} >= gold_ids
    assert len({tuple(sorted(t["data"])) for t in tasks}) == 1 and "gold" not in json.dumps(tasks)

    labels, by_task = truth(project), round_.items_by_task_id()
    for task in tasks:
        item = by_task[task["data"]["item_id"]].item_id
        for user, label, seconds in ((1, labels[item], 12.0), (2, WRONG[labels[item]], 1.5)):
            client.annotate(task["id"], [{"from_name": "context", "to_name": "image", "type": "choices",
                                          "value": {"choices": [label]}}], completed_by=user)
            task["annotations"][-1]["lead_time"] = seconds
    result = ingest_round(data, "ls-audit", stand_in)
    assert result.workers.suspicious == 1
    report = read_json(data / "rounds" / "ls-audit.workers.json")
    by = {w["worker"]: w for w in report["workers"]}
    assert (by["labelstudio:1"]["median_seconds"], by["labelstudio:2"]["median_seconds"]) == (12.0, 1.5)
    assert report["suspicious"][0]["worker"] == "labelstudio:2"


def test_gold_auto_sizes_itself_and_thin_gold_is_warned_about_when_created(project):
    sized = run(project, "rounds", "create", "coco_cd_context_audit", "auto1", "--backend", "files", "--per-group", "1", "--overlap", "3",
                "--gold", "auto", "--expected-workers", "2")
    record = read_json(project / "data" / "rounds" / "auto1.json")
    # ⌈5 gold answers × 2 workers / overlap 3⌉ = 4, but a worker answers each gold item once: 5
    assert sum(1 for i in record["items"] if i["gold"]) == 5
    assert "warning" not in sized.output
    thin = run(project, "rounds", "create", "coco_cd_context_audit", "thin1", "--backend", "files", "--per-group", "1", "--gold", "2")
    assert "warning:" in thin.output and "no worker can reach the 5 gold answers" in thin.output
    assert (project / "data" / "rounds" / "thin1.json").is_file()  # a warning, not a refusal


def test_gold_from_an_earlier_round_takes_the_items_people_decided_unanimously(project):
    """Gold the evidence rules cannot give: items of an earlier audit that three people answered alike,
    with their answer, whatever the evidence shares say; split items, and this round's own, are no gold."""
    run(project, "rounds", "create", "coco_cd_context_audit", "early", "--backend", "files", "--per-group", "1",
        "--overlap", "3", "--seed", "1")
    early = read_json(project / "data" / "rounds" / "early.json")
    run(project, "rounds", "launch", "early")
    labels = truth(project)
    items = sorted(i["item_id"] for i in early["items"])
    split, decided = items[0], items[1:]
    disagree = {**{i: labels[i] for i in items}, split: WRONG[labels[split]]}
    people = {i: labels[i] for i in items}
    write_results_csv(answer_rows(early, "P1", people, 30) + answer_rows(early, "P2", people, 31)
                      + answer_rows(early, "P3", disagree, 29), project / "data" / "rounds" / "early" / "results" / "a.csv")
    run(project, "rounds", "ingest", "early")

    run(project, "rounds", "create", "coco_cd_context_audit", "later", "--backend", "files", "--per-group", "1",
        "--seed", "9", "--gold-from", "early")
    later = read_json(project / "data" / "rounds" / "later.json")
    work = {i["item_id"] for i in later["items"] if not i["gold"]}
    gold = {i["item_id"]: i["gold"] for i in later["items"] if i["gold"]}
    assert gold == {i: {"context": labels[i]} for i in decided if i not in work}
    assert split not in gold and gold and "decided unanimously by at least 3 people in round early" in \
        later["gold_selection"]

    refused = run(project, "rounds", "create", "coco_cd_context_audit", "bad", "--backend", "files", "--per-group",
                  "1", "--gold-from", "later", code=1)  # not ingested
    assert isinstance(refused.exception, RoundStateError) and "rounds ingest later" in refused.exception.hint
