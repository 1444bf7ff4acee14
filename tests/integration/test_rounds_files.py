"""A COCO-CD context audit round through the files backend (an external crowd): create → launch
(task files) → results files → ingest → ingest again → more results → ingest (converges) → audit
table → close. Same round record and ingest path as Label Studio, no server needed; and a Label Studio
round through the same flows against an in-memory stand-in for the server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from segbench.core.errors import AnnotationError, InputError, OnError, RoundStateError
from segbench.core.io import read_json
from segbench.demo.crowd import write_results_csv
from segbench.demo.world import generate_demo_world
from segbench.schemas.coco_cd import CocoCdParams

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    from segbench.flows.coco_cd.build import build_coco_cd

    world = tmp_path_factory.mktemp("world")
    generate_demo_world(world, seed=2, group_sizes=SIZES)
    root = tmp_path_factory.mktemp("project") / "data"
    build_coco_cd(world, world, root / "coco_cd", CocoCdParams(val_per_group=3, test_per_group=2, size=64))
    return root


def rows(round_, answers: dict[str, str], worker: str) -> list[dict[str, str]]:
    return [{"WorkerId": worker, "AssignmentId": f"{worker}-{item.item_id}", "Input.item_id": item.item_id,
             "Answer.context": answers[item.item_id]} for item in round_.items]


def test_audit_round_end_to_end(data_root):
    from segbench.flows.coco_cd.audit import create_coco_cd_audit
    from segbench.flows.rounds import close_round, files_dir, ingest_round, launch_round, list_rounds, round_progress

    round_ = create_coco_cd_audit(data_root, "audit-1", per_group=3, seed=1, backend="files", overlap=3)
    assert len(round_.items) == 12 and round_.status.value == "created"
    with pytest.raises(RoundStateError, match="audit-1"):
        create_coco_cd_audit(data_root, "audit-1", per_group=3, backend="files")

    launched = launch_round(data_root, "audit-1")
    folder = files_dir(data_root, "audit-1")
    assert launched.status.value == "launched" and (folder / "tasks.csv").is_file()
    assert "item_id" in (folder / "tasks.csv").read_text().splitlines()[0]
    assert launch_round(data_root, "audit-1").counts == launched.counts  # relaunch: same tasks

    val = read_json(data_root / "coco_cd" / "splits" / "rho_0.5" / "val.json")
    auto = {str(i["id"]): i["context"] for i in val["images"]}
    truth = {item.item_id: auto[item.item_id] for item in launched.items}
    first_item = launched.items[0].item_id
    worker_b = {**truth, first_item: "ambiguous"}
    write_results_csv(rows(launched, truth, "WA"), folder / "results" / "batch-1.csv")
    write_results_csv(rows(launched, worker_b, "WB"), folder / "results" / "batch-2.csv")

    progress = round_progress(data_root, "audit-1")
    assert progress.done == 12 and progress.by_annotator == {"worker:WA": 12, "worker:WB": 12}

    first = ingest_round(data_root, "audit-1")
    answers_file = Path(first.answers)
    first_bytes = answers_file.read_bytes()
    assert first.counts.answers == 24 and first.counts.annotators == 2
    again = ingest_round(data_root, "audit-1")
    assert answers_file.read_bytes() == first_bytes and again.counts == first.counts

    write_results_csv(rows(launched, truth, "WC"), folder / "results" / "batch-3.csv")
    third = ingest_round(data_root, "audit-1")
    assert third.counts.answers == 36 and third.counts.annotators == 3
    items = {i["item_id"]: i for i in read_json(answers_file)["items"]}
    assert items[first_item]["majority"]["context"] == truth[first_item]  # 2 of 3 outvote the ambiguous one

    table = read_json(Path(third.reports["audit_json"]))
    assert table["overall"]["items"] == 12 and table["overall"]["agree"] == 12
    assert table["overall"]["agreement"] == 1.0 and table["overall"]["ambiguous"] == 0
    assert sum(g["items"] for g in table["groups"].values()) == 12
    assert "| overall | 12 |" in Path(third.reports["audit_markdown"]).read_text()

    closed = close_round(data_root, "audit-1")
    # The module's other tests share the data root, in any order: their rounds may be listed too.
    listed = {r.key: r.status.value for r in list_rounds(data_root)}
    assert closed.status.value == "closed" and listed["audit-1"] == "closed"
    with pytest.raises(RoundStateError, match="closed"):
        launch_round(data_root, "audit-1")


def test_results_for_items_outside_the_round_fail_or_are_reported(data_root):
    from segbench.flows.coco_cd.audit import create_coco_cd_audit
    from segbench.flows.rounds import files_dir, ingest_round, launch_round

    create_coco_cd_audit(data_root, "audit-bad", per_group=1, seed=2, backend="files", overlap=1)
    round_ = launch_round(data_root, "audit-bad")
    good = rows(round_, {i.item_id: "indoor" for i in round_.items}, "WA")
    stray = {"WorkerId": "WA", "AssignmentId": "WA-stray", "Input.item_id": "424242", "Answer.context": "indoor"}
    write_results_csv([*good, stray], files_dir(data_root, "audit-bad") / "results" / "batch.csv")
    with pytest.raises(AnnotationError, match="424242"):
        ingest_round(data_root, "audit-bad")
    result = ingest_round(data_root, "audit-bad", on_error=OnError.SKIP)
    assert result.counts.skipped == 1 and result.counts.answers == 4
    skipped = json.loads(Path(result.answers).read_text())["skipped"]
    assert skipped["count"] == 1 and "424242" in json.dumps(skipped["items"])


def test_a_results_file_downloaded_twice_counts_once_and_two_that_disagree_are_refused(data_root):
    from segbench.core.errors import InputError
    from segbench.flows.coco_cd.audit import create_coco_cd_audit
    from segbench.flows.rounds import files_dir, ingest_round, launch_round

    create_coco_cd_audit(data_root, "audit-twice", per_group=1, seed=3, backend="files", overlap=1)
    round_ = launch_round(data_root, "audit-twice")
    results = files_dir(data_root, "audit-twice") / "results"
    answers = rows(round_, {i.item_id: "indoor" for i in round_.items}, "WA")
    write_results_csv(answers, results / "batch.csv")
    write_results_csv(answers, results / "batch (1).csv")  # the same download, saved twice
    assert ingest_round(data_root, "audit-twice").counts.answers == 4
    write_results_csv([{**answers[0], "Answer.context": "outdoor"}], results / "batch-fix.csv")
    with pytest.raises(InputError) as info:
        ingest_round(data_root, "audit-twice")
    assert "batch (1).csv and batch-fix.csv" in str(info.value)  # files are read in name order
    assert answers[0]["AssignmentId"] in str(info.value)


def test_a_round_of_an_unknown_kind_is_refused_before_launch(data_root):
    from segbench.annotation_ui.rounds import RoundStore, new_round
    from segbench.flows.rounds import launch_round
    from segbench.schemas.rounds import RoundConfig, RoundItem

    item = RoundItem(item_id="1", image="coco_cd/images/1.png", width=8, height=8)
    RoundStore(data_root / "rounds").create(new_round("mystery-1", "mystery", "coco_cd", "v", RoundConfig(
        label_config="coco_cd_context"), [item], "files", "2026-01-01T00:00:00+00:00"))
    with pytest.raises(InputError, match="unknown round kind 'mystery'.*coco_cd_context_audit"):
        launch_round(data_root, "mystery-1")
    assert read_json(data_root / "rounds" / "mystery-1.json")["status"] == "created"
    assert not (data_root / "rounds" / "mystery-1").exists()  # no task files


def test_a_label_studio_round_runs_through_the_same_flows(data_root, tmp_path, monkeypatch):
    """The flows drive any backend alike: a Label Studio round against an in-memory stand-in server."""
    from support.label_studio_stand_in import StandInClient

    from segbench.annotation_ui.backends.labelstudio import LabelStudioBackend
    from segbench.flows.coco_cd.audit import create_coco_cd_audit
    from segbench.flows.rounds import ingest_round, launch_round, round_progress
    from segbench.schemas.rounds import LabelStudioConnection

    client = StandInClient()
    monkeypatch.setattr(LabelStudioBackend, "client", lambda self, connection=None: client)
    create_coco_cd_audit(data_root, "audit-ls", per_group=1, seed=4, backend="labelstudio", overlap=1)
    stand_in = LabelStudioConnection(url="http://stand-in", files=tmp_path / "files")
    launched = launch_round(data_root, "audit-ls", stand_in)
    assert launched.counts["tasks_imported"] == 4 and len(list((tmp_path / "files" / "audit-ls").iterdir())) == 4
    relaunched = launch_round(data_root, "audit-ls", stand_in)
    assert (relaunched.project_id, relaunched.counts["tasks_imported"]) == (launched.project_id, 0)

    val = read_json(data_root / "coco_cd" / "splits" / "rho_0.5" / "val.json")
    auto = {str(i["id"]): i["context"] for i in val["images"]}
    for task_id, item_id in client.task_item_ids(launched.project_id).items():
        client.annotate(task_id, [{"from_name": "context", "to_name": "image", "type": "choices",
                                   "value": {"choices": [auto[item_id]]}}], completed_by=7)
    progress = round_progress(data_root, "audit-ls", stand_in)
    assert (progress.done, progress.by_annotator) == (4, {"labelstudio:7": 4})
    result = ingest_round(data_root, "audit-ls", stand_in)
    assert result.counts.answers == 4
    assert read_json(Path(result.reports["audit_json"]))["overall"]["agree"] == 4


def test_an_audit_round_can_launch_group_by_group(data_root):
    from support.cli import run

    project = data_root.parent
    run(project, "rounds", "create", "coco_cd_context_audit", "audit-groups", "--backend", "files", "--per-group", "2", "--batch-by-group")
    run(project, "rounds", "launch", "audit-groups", "--batch", "cat-indoors")
    tasks = (data_root / "rounds" / "audit-groups" / "tasks.csv").read_text().splitlines()[1:]
    assert len(tasks) == 2
    status = json.loads(run(project, "--json", "rounds", "status", "audit-groups").stdout)
    assert {b["batch"]: (b["items"], b["launched"]) for b in status["batches"]} == {
        "cat-indoors": (2, 2), "cat-outdoors": (2, 0), "dog-indoors": (2, 0), "dog-outdoors": (2, 0)}


def test_an_audit_asking_more_images_than_a_group_has_is_refused_before_prefect_starts(data_root, monkeypatch):
    from support.cli import run

    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # reached only past the check
    result = run(data_root.parent, "rounds", "create", "coco_cd_context_audit", "audit-big", "--backend", "files", "--per-group", "500",
                 code=1)
    assert "validation images; the audit asks for 500" in str(result.exception)
    assert not (data_root / "rounds" / "audit-big.json").exists()


@pytest.mark.parametrize("aggregation", [None, "majority"], ids=["default", "majority"])
def test_two_annotators_who_split_are_no_agreement_whatever_the_aggregation(data_root, aggregation):
    """One annotator gives the automatic label everywhere, the other flips 4 of 12: the 4 items are the
    people's ties. The default aggregation's model gives them a label, marked as the model's; the audit
    page counts them apart and agreement is 8 of 8 under every aggregation, as people answered."""
    from support.cli import run

    from segbench.flows.rounds import files_dir

    project, key = data_root.parent, f"audit-split-{aggregation or 'default'}"
    run(project, "rounds", "create", "coco_cd_context_audit", key, "--per-group", "3", "--seed", "4",
        "--backend", "files", "--overlap", "2")
    run(project, "rounds", "launch", key)
    launched = read_json(data_root / "rounds" / f"{key}.json")
    val = read_json(data_root / "coco_cd" / "splits" / "rho_0.5" / "val.json")
    auto = {str(i["id"]): i["context"] for i in val["images"]}
    items = [item["item_id"] for item in launched["items"]]
    flipped = {item: "outdoor" if auto[item] == "indoor" else "indoor" for item in items[:4]}
    folder = files_dir(data_root, key)
    write_results_csv([{"WorkerId": "WA", "AssignmentId": f"WA-{i}", "Input.item_id": i, "Answer.context": auto[i]}
                       for i in items], folder / "results" / "a.csv")
    write_results_csv([{"WorkerId": "WB", "AssignmentId": f"WB-{i}", "Input.item_id": i,
                        "Answer.context": flipped.get(i, auto[i])} for i in items], folder / "results" / "b.csv")
    run(project, "rounds", "ingest", key, *(["--aggregation", aggregation] if aggregation else []))

    table = read_json(data_root / "coco_cd_audit" / f"{key}.json")["overall"]
    assert (table["no_majority"], table["judged"], table["agree"], table["agreement"]) == (4, 8, 8, 1.0)
    answers = {i["item_id"]: i for i in read_json(data_root / "rounds" / f"{key}.answers.json")["items"]}
    settled = {item for item, answer in answers.items() if answer["model_settled"]}
    assert table["settled_by_model"] == len(settled)
    if aggregation == "majority":
        assert not settled and all(answers[i]["majority"]["context"] is None for i in flipped)
    else:  # the model chose a label on each tie, with its confidence, and says so
        assert settled == set(flipped) and all(0.5 <= answers[i]["model_settled"]["context"] <= 1 for i in flipped)
    page = (data_root / "coco_cd_audit" / f"{key}.md").read_text()
    assert "settled by model" in page and "| overall | 12 | 12 | 0 | 0.0000 | 4 |" in page
