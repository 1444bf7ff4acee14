"""``segbench rounds ingest --aggregation``: the method is a choice of the command, recorded in the round
and the answers file, shown by ingest and status, and a re-ingest with it changes no byte."""

from __future__ import annotations

import json

import pytest
from support.cli import run
from support.hostile import snapshot
from typer.testing import CliRunner

from segbench.cli import app
from segbench.core.io import read_json
from segbench.demo.crowd import write_results_csv
from segbench.schemas.rounds import RoundConfig, RoundItem

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

KEY = "s-car-tire"
SUBPARTS = ["Hubcap", "Rim"]
ITEMS = 8


def _answers_of(policies: dict[str, dict[str, str]]) -> list[dict[str, str]]:
    """Results rows: worker → item id → their ``has_rim`` answer (a polygon with every yes)."""
    rim = [{"label": "Rim", "points": [[10.0, 10.0], [40.0, 12.5], [25.0, 30.0]]}]
    return [{"WorkerId": worker, "AssignmentId": f"{worker}-{item_id}", "Input.item_id": item_id,
             "Answer.part_visible": "yes", "Answer.has_rim": answer, "Answer.has_hubcap": "no",
             "Answer.polygons": json.dumps(rim if answer == "yes" else [])}
            for worker, said in policies.items() for item_id, answer in said.items()]


@pytest.fixture
def crowd_round(tmp_path, monkeypatch):
    """(project, truth of ``has_rim`` per item): a launched files-backend SPIN round with its results.

    Two careful workers answer right; three lazy ones answer "no" to everything, outvoting them on
    every item that has a rim. The items carry no part masks, so ingest saves the answers and leaves
    the SPIN import for later, which is all this test needs.
    """
    from segbench.annotation_ui.rounds import RoundStore, mark_launched, new_round
    from segbench.tasks.spin import crowd

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # round records carry the time of the ingest
    items = [RoundItem(item_id=f"img{i}-41", image=f"spin/tasks/img{i}-41.png", width=100, height=80,
                       data={"image_id": i, "part_ann_id": 41, "object": "Car", "object_class": "cab", "part": "Tire",
                             "subparts": SUBPARTS})
             for i in range(ITEMS)]
    config = RoundConfig(label_config=crowd.LABEL_CONFIG, overlap=5,
                         params={"object": "Car", "part": "Tire", "subparts": SUBPARTS})
    now = "2026-01-01T00:00:00+00:00"
    round_ = new_round(KEY, crowd.KIND, crowd.DATASET, "0" * 64, config, items, "files", now)
    RoundStore(tmp_path / "data" / "rounds").save(mark_launched(round_, None, now))
    truth = {item.item_id: "yes" if n % 2 else "no" for n, item in enumerate(items)}
    policies = {worker: truth if worker.startswith("good") else dict.fromkeys(truth, "no")
                for worker in ("good1", "good2", "lazy1", "lazy2", "lazy3")}
    write_results_csv(_answers_of(policies), tmp_path / "data" / "rounds" / KEY / "results" / "batch-1.csv")
    return tmp_path, truth


def _saved(project):
    rounds = project / "data" / "rounds"
    return read_json(rounds / f"{KEY}.json"), read_json(rounds / f"{KEY}.answers.json")


def test_the_aggregation_is_chosen_recorded_and_stable(crowd_round):
    project, truth = crowd_round
    help_text = CliRunner().invoke(app, ["rounds", "ingest", "--help"], env={"COLUMNS": "160"}).output
    assert "<screened|majority|dawid-skene|glad>" in help_text

    first = run(project, "rounds", "ingest", KEY)  # a new round's default
    assert "screened" in first.output and "Krippendorff" in first.output
    round_, answers = _saved(project)
    assert round_["aggregation"] == answers["aggregation"] == "screened" and "left_out" in answers
    assert "labels by: dawid-skene" in first.output and "labels_by" not in round_["counts"]  # counts are numbers
    assert answers["model_choice"]["held_out"] == {} and "too little gold" in answers["model_choice"]["reason"]
    report = (project / "data" / "rounds" / f"{KEY}.workers.md").read_text()
    assert "## The model behind the labels" in report and "too little gold" in report

    plain = run(project, "rounds", "ingest", KEY, "--aggregation", "majority")
    assert "majority" in plain.output
    round_, answers = _saved(project)
    assert round_["aggregation"] == answers["aggregation"] == "majority" and "left_out" not in answers
    assert {i["item_id"]: i["majority"]["has_rim"] for i in answers["items"]} == dict.fromkeys(truth, "no")

    modelled = run(project, "rounds", "ingest", KEY, "--aggregation", "dawid-skene")
    assert "dawid-skene" in modelled.output
    round_, answers = _saved(project)
    assert round_["aggregation"] == answers["aggregation"] == "dawid-skene"
    assert {i["item_id"]: i["majority"]["has_rim"] for i in answers["items"]} == truth
    assert answers["agreement"]["has_rim"]["alpha"] is not None

    before = snapshot(project / "data")
    again = run(project, "rounds", "ingest", KEY)  # no option: the round's recorded method
    assert "dawid-skene" in again.output
    assert snapshot(project / "data") == before
    assert "dawid-skene" in run(project, "rounds", "status", KEY).output


def test_accounts_answering_as_one_count_as_one_voter(crowd_round):
    """Four accounts answer by one policy (a rim on every item but the first); three people answer the
    truth, each wrong once on an item of their own. Plain majority follows the four accounts; the
    default finds them, counts them as one voter and says so in the answers file and the worker report."""
    project, truth = crowd_round
    items = sorted(truth)
    policy = {item: "no" if item == items[0] else "yes" for item in items}
    policies = {f"acct{k}": policy for k in range(1, 5)}
    for n, person in enumerate(("ann", "bob", "cid")):
        slip = items[2 * n]  # a "no" item, where the policy is right: said wrongly by this person alone
        policies[person] = {**truth, slip: "yes"}
    results = project / "data" / "rounds" / KEY / "results"
    write_results_csv(_answers_of(policies), results / "batch-1.csv")

    run(project, "rounds", "ingest", KEY, "--aggregation", "majority")
    _, answers = _saved(project)
    followed = {i["item_id"]: i["majority"]["has_rim"] for i in answers["items"]}
    assert followed == policy != truth

    ingested = run(project, "rounds", "ingest", KEY, "--aggregation", "screened")
    _, answers = _saved(project)
    assert {i["item_id"]: i["majority"]["has_rim"] for i in answers["items"]} == truth
    assert [b["members"] for b in answers["blocs"]] == [[f"worker:acct{k}" for k in range(1, 5)]]
    report = (project / "data" / "rounds" / f"{KEY}.workers.md").read_text()
    assert "## Accounts that answered as one (1 blocs)" in report and "worker:acct1, worker:acct2" in report
    round_ = read_json(project / "data" / "rounds" / f"{KEY}.json")
    assert round_["counts"]["accounts_in_blocs"] == 4
    assert "4 accounts answering as one counted as blocs" in ingested.output


def test_an_unknown_aggregation_is_refused_before_any_work(crowd_round):
    project, _ = crowd_round
    before = snapshot(project / "data")
    refused = run(project, "rounds", "ingest", KEY, "--aggregation", "mean", code=2)
    assert "mean" in refused.output and "dawid-skene" in refused.output
    assert snapshot(project / "data") == before


def test_a_hand_edited_unknown_aggregation_is_named_with_the_file(crowd_round):
    project, _ = crowd_round
    path = project / "data" / "rounds" / f"{KEY}.json"
    path.write_text(path.read_text().replace('"aggregation": "screened"', '"aggregation": "vote"'))
    refused = run(project, "rounds", "ingest", KEY, code=1)
    assert "vote" in str(refused.exception) and "dawid-skene" in str(refused.exception)
    assert f"{KEY}.json" in str(getattr(refused.exception, "path", ""))


def test_the_command_offers_exactly_the_methods_aggregate_knows():
    from segbench.cli.rounds import Aggregation
    from segbench.core.aggregation import METHODS

    assert tuple(choice.value for choice in Aggregation) == METHODS


def test_accounts_worked_one_after_another_count_as_one_voter_though_their_answers_differ(crowd_round):
    """The four accounts of the test above each flip one answer of their own, so no two match; one
    person still submits each task with them one after another (15 s of work, 5 s apart), while the
    three people work at their own times. The ingest finds the accounts by their times."""
    project, truth = crowd_round
    items = sorted(truth)
    policy = {item: "no" if item == items[0] else "yes" for item in items}
    policies = {f"acct{k}": {**policy, items[k + 2]: "no"} for k in range(1, 5)}
    for n, person in enumerate(("ann", "bob", "cid")):
        policies[person] = {**truth, items[2 * n]: "yes"}
    rows = _answers_of(policies)
    for row in rows:
        n, worker = items.index(row["Input.item_id"]), row["WorkerId"]
        second = (3600 + 200 * n + 20 * int(worker[-1]) if worker.startswith("acct")
                  else 10_000 * (1 + ("ann", "bob", "cid").index(worker)) + 100 * n)
        row["SubmitTime"] = f"2026-03-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}+00:00"
        row["WorkTimeInSeconds"] = "15" if worker.startswith("acct") else "30"
    write_results_csv(rows, project / "data" / "rounds" / KEY / "results" / "batch-1.csv")

    ingested = run(project, "rounds", "ingest", KEY, "--aggregation", "screened")
    _, answers = _saved(project)
    assert [b["members"] for b in answers["blocs"]] == [[f"worker:acct{k}" for k in range(1, 5)]]
    assert "4 accounts answering as one counted as blocs" in ingested.output
    assert {i["item_id"]: i["majority"]["has_rim"] for i in answers["items"]} == truth


# Three answers per item, one of two workers who are always right among them; three guessers fill
# the other seats (seeded). Dawid–Skene, free to, overrules the answers' majority on some items.
THREE_PER_ITEM = {
    "good1": {"img0-41": "no", "img2-41": "no", "img6-41": "no", "img7-41": "yes"},
    "good2": {"img1-41": "yes", "img2-41": "no", "img3-41": "yes", "img5-41": "yes", "img7-41": "yes"},
    "guess1": {"img1-41": "yes", "img2-41": "yes", "img4-41": "no"},
    "guess2": {"img0-41": "no", "img1-41": "no", "img3-41": "no", "img4-41": "no", "img5-41": "yes",
               "img6-41": "yes", "img7-41": "yes"},
    "guess3": {"img0-41": "no", "img3-41": "yes", "img4-41": "yes", "img5-41": "no", "img6-41": "yes"},
}


def test_at_three_answers_an_item_keeps_its_majority_unless_the_round_lets_the_model_overrule(crowd_round):
    from segbench.annotation_ui.rounds import RoundStore

    project, truth = crowd_round
    store = RoundStore(project / "data" / "rounds")
    write_results_csv(_answers_of(THREE_PER_ITEM), project / "data" / "rounds" / KEY / "results" / "batch-1.csv")
    said: dict[str, list[str]] = {}
    for answers in THREE_PER_ITEM.values():
        for item, label in answers.items():
            said.setdefault(item, []).append(label)
    majority = {item: max(set(labels), key=labels.count) for item, labels in said.items()}
    assert all(len(labels) == 3 for labels in said.values())

    run(project, "rounds", "ingest", KEY, "--aggregation", "screened")
    kept = {i["item_id"]: i["majority"]["has_rim"] for i in _saved(project)[1]["items"]}
    assert kept == majority

    store.save(store.load(KEY).model_copy(update={"quality_rules": {"overrule_min_answers": 0}}))
    run(project, "rounds", "ingest", KEY, "--aggregation", "screened")
    overruled = {i["item_id"]: i["majority"]["has_rim"] for i in _saved(project)[1]["items"]}
    assert overruled != majority
    assert sum(overruled[i] == truth[i] for i in truth) < sum(kept[i] == truth[i] for i in truth)
