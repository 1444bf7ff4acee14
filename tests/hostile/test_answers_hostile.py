"""Crowd answers that cannot be kept: a NaN, infinite, null or non-numeric point in ``Answer.polygons``.

They are refused naming the results file and the row (or skipped into the skip report under
``--on-error skip``), never saved; and an answers file damaged before this was fixed is named with the
answer in it and how to recover, by ``rounds ingest`` and ``spin import`` alike, before any flow runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.hostile import assert_clean_failure, run_main, snapshot

from segbench.annotation_ui.convert import answers_from_labelstudio
from segbench.core.errors import AnnotationError, ImportPolicy
from segbench.core.io import read_json, write_json
from segbench.demo.crowd import write_results_csv
from segbench.schemas.rounds import Round, RoundConfig, RoundItem

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


KEY = "s-car-tire"
SUBPARTS = ["Hubcap", "Rim"]


@pytest.fixture
def spin(tmp_path):
    """(project, round key, good results rows): a launched files-backend SPIN round of two items.

    The items carry no part masks, so an ingest stops after saving the answers (the import needs
    ``--parts``): enough for what is checked here, and no dataset build is needed.
    """
    from segbench.annotation_ui.rounds import RoundStore, mark_launched, new_round
    from segbench.tasks.spin import crowd

    items = [RoundItem(item_id=f"img{i}-41", image=f"spin/tasks/img{i}-41.png", width=100, height=80,
                       data={"image_id": i, "part_ann_id": 41, "object": "Car", "object_class": "cab", "part": "Tire",
                             "subparts": SUBPARTS})
             for i in (1, 2)]
    config = RoundConfig(label_config=crowd.LABEL_CONFIG, overlap=2,
                         params={"object": "Car", "part": "Tire", "subparts": SUBPARTS})
    now = "2026-01-01T00:00:00+00:00"
    round_ = new_round(KEY, crowd.KIND, crowd.DATASET, "0" * 64, config, items, "files", now)
    RoundStore(tmp_path / "data" / "rounds").save(mark_launched(round_, None, now))
    polygon = [{"label": "Rim", "points": [[10.0, 10.0], [40.0, 12.5], [25.0, 30.0]]}]
    rows = [{"WorkerId": worker, "AssignmentId": f"{worker}-{item.item_id}", "Input.item_id": item.item_id,
             "Answer.part_visible": "yes", "Answer.has_rim": "yes", "Answer.has_hubcap": "no",
             "Answer.polygons": json.dumps(polygon)}
            for item in items for worker in ("W1", "W2")]
    return tmp_path, KEY, rows


def _polygons(row) -> list:
    return json.loads(row.get("Answer.polygons") or "[]")


def _poison(row: dict, value: str) -> dict:
    """The row with its first polygon's first x replaced by ``value`` (raw JSON text: NaN, Infinity, ...)."""
    polygons = _polygons(row)
    points = polygons[0]["points"]
    text = json.dumps(polygons).replace(json.dumps(points[0]), f"[{value}, {points[0][1]}]", 1)
    return {**row, "Answer.polygons": text, "AssignmentId": "poisoned"}


def _results(project: Path, key: str) -> Path:
    return project / "data" / "rounds" / key / "results"


BAD_POINTS = ["NaN", "Infinity", "-Infinity", "null", '"12"']


@pytest.mark.parametrize("value", BAD_POINTS, ids=["nan", "inf", "-inf", "null", "string"])
def test_rounds_ingest_refuses_a_bad_point_naming_the_file_and_row(spin, value):
    project, key, rows = spin
    write_results_csv([rows[0], _poison(rows[1], value)], _results(project, key) / "batch-1.csv")
    before = snapshot(project / "data")
    outcome = run_main(project, "rounds", "ingest", key)
    assert_clean_failure(outcome, "batch-1.csv", "row 2", "assignment poisoned", "not two finite numbers")
    assert snapshot(project / "data") == before  # no answers file, the round record unchanged


def test_skip_policy_leaves_the_bad_answer_out_and_reports_it(spin):
    project, key, rows = spin
    write_results_csv([rows[0], _poison(rows[1], "NaN")], _results(project, key) / "batch-1.csv")
    outcome = run_main(project, "rounds", "ingest", key, "--on-error", "skip")
    assert outcome.code == 0, outcome.stderr
    saved = read_json(project / "data" / "rounds" / f"{key}.answers.json")
    assert [a["source_id"] for a in saved["answers"]] == [f"files:{rows[0]['AssignmentId']}"]
    assert "null" not in json.dumps([a["polygons"] for a in saved["answers"]])
    [skipped] = saved["skipped"]["items"]
    assert skipped["path"].endswith("batch-1.csv") and skipped["item"] == "row 2 / assignment poisoned"
    # The next ingest, with the bad row still there, converges to the same answers.
    assert run_main(project, "rounds", "ingest", key, "--on-error", "skip").code == 0
    assert read_json(project / "data" / "rounds" / f"{key}.answers.json")["answers"] == saved["answers"]


def test_rounds_ingest_reads_mturk_times_and_refuses_one_it_cannot_read(spin):
    """Answers are ordered by SubmitTime: MTurk's own format is read, and a time that is none segbench reads is
    refused naming the file and row (it would scramble the worker's timeline), not stored as text."""
    project, key, rows = spin
    timed = [{**row, "SubmitTime": f"{day} 09:00:37 PST 2025"}
             for row, day in zip(rows, ["Wed Nov 26", "Thu Nov 27", "Fri Nov 28", "Sat Nov 29"], strict=True)]
    write_results_csv(timed[:3] + [{**timed[3], "SubmitTime": "last Saturday"}],
                      _results(project, key) / "batch-1.csv")
    before = snapshot(project / "data")
    outcome = run_main(project, "rounds", "ingest", key)
    assert_clean_failure(outcome, "batch-1.csv", "row 4", "SubmitTime 'last Saturday' is not a time")
    assert snapshot(project / "data") == before

    write_results_csv(timed, _results(project, key) / "batch-1.csv")
    assert run_main(project, "rounds", "ingest", key).code == 0
    saved = read_json(project / "data" / "rounds" / f"{key}.answers.json")
    assert sorted(a["updated_at"] for a in saved["answers"])[0] == "Fri Nov 28 09:00:37 PST 2025"  # as given


def test_spin_import_refuses_a_bad_point_in_a_results_file(spin):
    project, key, rows = spin
    results = write_results_csv([_poison(rows[0], "NaN")], project / "answers.csv")
    before = snapshot(project / "data")
    outcome = run_main(project, "spin", "import", "--round", key, "--results", str(results))
    assert_clean_failure(outcome, "answers.csv", "row 1", "not two finite numbers")
    assert snapshot(project / "data") == before


def test_a_json_results_file_with_nan_is_refused(spin):
    project, key, rows = spin
    path = _results(project, key) / "batch-1.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([{**rows[0], "Answer.polygons": json.loads(rows[0]["Answer.polygons"])}])
                    .replace(str(_polygons(rows[0])[0]["points"][0][0]), "NaN", 1))
    before = snapshot(project / "data")
    assert_clean_failure(run_main(project, "rounds", "ingest", key), "batch-1.json", "not valid JSON")
    assert snapshot(project / "data") == before


def _poisoned_answers_file(project: Path, key: str, rows: list) -> Path:
    """An answers file as the old ingest saved it: a NaN point written as null."""
    polygons = _polygons(rows[0])
    polygons[0]["points"][0][0] = None
    answer = {"item_id": rows[0]["Input.item_id"], "annotator": "worker:W1", "source_id": "files:old-row",
              "updated_at": None, "choices": {}, "polygons": {"polygons": polygons}}
    return write_json(project / "data" / "rounds" / f"{key}.answers.json",
                      {"format": 1, "round": key, "answers": [answer], "items": []}, indent=1)


@pytest.mark.parametrize("command", ["rounds-ingest", "spin-import"])
def test_a_poisoned_answers_file_is_named_with_the_answer_and_the_fix(spin, command):
    project, key, rows = spin
    path = _poisoned_answers_file(project, key, rows)
    before = snapshot(project / "data")
    args = ["rounds", "ingest", key] if command == "rounds-ingest" else ["spin", "import", "--round", key]
    outcome = run_main(project, *args)
    assert_clean_failure(outcome, path.name, "answers[0] (files:old-row)", "saved answer is malformed",
                         f"delete {path}", f"segbench rounds ingest {key}")
    assert snapshot(project / "data") == before


def test_the_fix_the_message_gives_works(spin):
    project, key, rows = spin
    path = _poisoned_answers_file(project, key, rows)
    write_results_csv(rows[:2], _results(project, key) / "batch-1.csv")
    path.unlink()
    assert run_main(project, "rounds", "ingest", key).code == 0
    assert len(read_json(path)["answers"]) == 2


@pytest.mark.parametrize("point", [[float("nan"), 10.0], [10.0, float("inf")], [None, 10.0], ["x", 1]],
                         ids=["nan", "inf", "null", "string"])
@pytest.mark.parametrize("check_polygons", [True, False], ids=["checked", "flagged-later"])
def test_label_studio_exports_with_a_bad_point_are_refused(spin, point, check_polygons):
    """The Label Studio path (its export is read with a JSON parser that accepts NaN)."""
    project, key, _ = spin
    round_ = Round.model_validate(read_json(project / "data" / "rounds" / f"{key}.json"))
    item = round_.items[0]
    export = [{"id": 7, "data": {"item_id": item.item_id}, "annotations": [{
        "id": 70, "completed_by": 1, "result": [{
            "id": "p1", "type": "polygonlabels", "from_name": "polygons", "to_name": "image",
            "value": {"points": [point, [20.0, 20.0], [30.0, 10.0]], "polygonlabels": ["Rim"]}}]}]}]
    with pytest.raises(AnnotationError, match="finite") as info:
        answers_from_labelstudio(export, round_, ImportPolicy(), source="export.json", check_polygons=check_polygons)
    assert info.value.path == "export.json" and info.value.item == "task 7 / annotation 70"


def test_label_studio_annotations_sharing_an_id_are_refused_naming_both_tasks(spin):
    """Answers are known by their annotation id (a re-ingest merges by it): two annotations with one id,
    or one without an id, would silently replace another person's answer."""
    from segbench.core.errors import OnError

    project, key, _ = spin
    round_ = Round.model_validate(read_json(project / "data" / "rounds" / f"{key}.json"))
    first, second = round_.items

    def task(task_id: int, item: RoundItem, annotation_id: object, worker: int) -> dict:
        return {"id": task_id, "data": {"item_id": item.item_id}, "annotations": [{
            "id": annotation_id, "completed_by": worker, "result": [
                {"type": "choices", "from_name": "part_visible", "to_name": "image", "value": {"choices": ["yes"]}}]}]}

    colliding = [task(7, first, 70, 1), task(8, second, 70, 2)]
    with pytest.raises(AnnotationError, match="annotation id 70 appears twice") as info:
        answers_from_labelstudio(colliding, round_, ImportPolicy(), source="export.json")
    assert "task 7" in str(info.value) and info.value.item == "task 8 / annotation 70"

    skipping = ImportPolicy(on_error=OnError.SKIP)
    kept = answers_from_labelstudio(colliding, round_, skipping, source="export.json")
    assert [(a.item_id, a.annotator) for a in kept] == [(first.item_id, "labelstudio:1")]
    assert len(skipping.report.skipped) == 1

    for bad in (None, "70", True):
        with pytest.raises(AnnotationError, match="is not a number"):
            answers_from_labelstudio([task(7, first, bad, 1)], round_, ImportPolicy(), source="export.json")
