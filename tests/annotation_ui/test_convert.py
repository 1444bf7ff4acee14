"""Backend answers → Answer records (golden files), files-backend tasks and results, re-ingest merging."""

from __future__ import annotations

import copy
import csv
import json
import re
from pathlib import Path

import pytest

from segbench.annotation_ui.convert import (
    answers_from_files,
    answers_from_labelstudio,
    merge_answers,
    merge_counts,
)
from segbench.annotation_ui.crowd_files import read_results, write_file_tasks
from segbench.annotation_ui.rounds import new_round
from segbench.core.errors import AnnotationError, ImportPolicy, InputError, OnError
from segbench.core.io import canonical_json, write_json
from segbench.schemas.rounds import Answer, RoundConfig, RoundItem

GOLDEN = Path(__file__).parent.parent / "golden"
T0 = "2026-01-01T00:00:00+00:00"
POLYGON_LABELS = {"label": {"building", "road", "sky"}}
CONTEXT_LABELS = {"context": {"indoor", "outdoor", "ambiguous"}, "flags": {"blurry", "occluded", "dark"}}


def _round(*items: RoundItem, backend: str = "labelstudio"):
    return new_round("r1", "test", "ds", "v1", RoundConfig(label_config="t"), list(items), backend, T0)


def _polygon_round(width: int = 640, height: int = 480):
    return _round(RoundItem(item_id="img0", image="demo/img0.png", width=width, height=height))


def _choices_round(backend: str = "labelstudio"):
    return _round(*(RoundItem(item_id=i, image=f"coco_cd/images/{i}.png", width=64, height=64,
                              data={"prompt": "where?", "meta": {"group": 1}}) for i in ("139", "285")),
                  backend=backend)


def _export(name: str) -> list[dict]:
    return json.loads((GOLDEN / f"labelstudio_export_{name}.json").read_text())


def _dump(answers: list[Answer]) -> str:
    return canonical_json([a.model_dump(mode="json") for a in answers], indent=2) + "\n"


# --- Label Studio golden files ---------------------------------------------------------------------

@pytest.mark.parametrize(("name", "make_round", "allowed"), [
    ("polygons", _polygon_round, POLYGON_LABELS),
    ("choices", _choices_round, CONTEXT_LABELS),
])
def test_labelstudio_export_matches_golden(name, make_round, allowed):
    policy = ImportPolicy()
    answers = answers_from_labelstudio(_export(name), make_round(), policy, allowed=allowed)
    assert _dump(answers) == (GOLDEN / f"labelstudio_export_{name}.answers.json").read_text()
    assert len(policy.report) == 0


def test_labelstudio_answers_survive_the_answers_file(tmp_path):
    answers = answers_from_labelstudio(_export("polygons"), _polygon_round(), ImportPolicy())
    path = write_json(tmp_path / "a.json", [a.model_dump(mode="json") for a in answers], indent=1)
    assert [Answer.model_validate(a) for a in json.loads(path.read_text())] == answers


def test_labelstudio_user_object_as_completed_by():
    export = _export("polygons")
    export[0]["annotations"][0]["completed_by"] = {"id": 1, "email": "a@example.org"}
    answers = answers_from_labelstudio(export, _polygon_round(), ImportPolicy())
    assert answers[0].annotator == "labelstudio:1"


def _bad_polygon_exports() -> dict[str, tuple[list[dict], str]]:
    """One export per kind of bad input, each spoiling annotation 2 of task 1 only."""
    cases = {}

    def spoil(name, change, message):
        export = _export("polygons")
        change(export[0]["annotations"][1]["result"][0])
        cases[name] = (export, message)

    def unknown_item(export):
        export[0]["data"]["item_id"] = "nope"
        return export

    cases["unknown item"] = (unknown_item(_export("polygons")), "item_id 'nope' is not an item of this round")
    spoil("unknown label", lambda r: r["value"].update(polygonlabels=["car"]),
          "label 'car' is not allowed for control 'label'")
    spoil("too few points", lambda r: r["value"].update(points=[[10, 10], [30, 10]]),
          "has 2 points; a polygon needs at least 3")
    spoil("outside image", lambda r: r["value"].update(points=[[10, 10], [101, 10], [30, 30]]),
          r"point \(101%, 10%\) = \(646.4, 48.0\) px lies outside the 640x480 image")
    spoil("size mismatch", lambda r: r.update(original_width=320),
          "original_width is 320 but the round item is 640x480")
    spoil("unknown result type", lambda r: r.update(type="rectanglelabels"),
          "result type 'rectanglelabels'")
    return cases


BAD = _bad_polygon_exports()


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_labelstudio_input_fails_naming_task_and_annotation(case):
    export, message = BAD[case]
    with pytest.raises(AnnotationError, match=message) as err:
        answers_from_labelstudio(export, _polygon_round(), ImportPolicy(), allowed=POLYGON_LABELS)
    assert err.value.item == ("task 1 / annotation 1" if case == "unknown item" else "task 1 / annotation 2")


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_labelstudio_input_is_skipped_and_reported(case):
    export, message = BAD[case]
    policy = ImportPolicy(on_error=OnError.SKIP)
    answers = answers_from_labelstudio(export, _polygon_round(), policy, allowed=POLYGON_LABELS,
                                       source="export.json")
    skipped = policy.report.skipped
    if case == "unknown item":
        assert answers == [] and [s["item"] for s in skipped] == ["task 1 / annotation 1", "task 1 / annotation 2"]
    else:
        assert [a.source_id for a in answers] == ["labelstudio:1"]
        assert [s["item"] for s in skipped] == ["task 1 / annotation 2"]
    assert all(s["error"] == "AnnotationError" and s["path"] == "export.json" for s in skipped)
    assert re.search(message, skipped[-1]["message"])


def test_border_points_within_tolerance_are_clamped_not_refused():
    export = _export("polygons")
    # 100.0000005 % (float noise within the 1e-6 % tolerance) of 480 px = 480.0000024 px → 480.
    export[0]["annotations"][1]["result"][0]["value"]["points"] = [[0, 0], [100, 0], [100, 100.0000005]]
    answers = answers_from_labelstudio(export, _polygon_round(), ImportPolicy())
    assert answers[1].polygons["label"][0].points == [(0.0, 0.0), (640.0, 0.0), (640.0, 480.0)]


# --- files backend -----------------------------------------------------------------------------------

ROWS = [
    {"HITId": "H1", "AssignmentId": "A1", "WorkerId": "W1", "AssignmentStatus": "Submitted",
     "SubmitTime": "2026-11-30T10:00:00Z", "Input.item_id": "139", "Answer.context": "indoor", "Answer.flags": ""},
    {"HITId": "H1", "AssignmentId": "A2", "WorkerId": "W2", "AssignmentStatus": "Approved",
     "SubmitTime": "2026-11-30T10:05:00Z", "Input.item_id": "139", "Answer.context": "outdoor",
     "Answer.flags": "occluded|blurry"},
    {"HITId": "H2", "AssignmentId": "A3", "WorkerId": "W1", "AssignmentStatus": "Rejected",
     "SubmitTime": "2026-11-30T10:06:00Z", "Input.item_id": "285", "Answer.context": "indoor", "Answer.flags": ""},
]
EXPECTED_FILES = [
    Answer(item_id="139", annotator="worker:W1", source_id="files:A1", updated_at="2026-11-30T10:00:00Z",
           choices={"context": ["indoor"]}),
    Answer(item_id="139", annotator="worker:W2", source_id="files:A2", updated_at="2026-11-30T10:05:00Z",
           choices={"context": ["outdoor"], "flags": ["blurry", "occluded"]}),
]


def _write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_files_results_round_trip(tmp_path, fmt):
    path = tmp_path / f"results.{fmt}"
    if fmt == "csv":
        _write_csv(path, ROWS)
    else:
        path.write_text(json.dumps(ROWS))
    rows = read_results(path)
    assert rows == ROWS
    answers = answers_from_files(rows, _choices_round("files"), ImportPolicy(), allowed=CONTEXT_LABELS)
    assert answers == EXPECTED_FILES  # the rejected assignment A3 is left out


@pytest.mark.parametrize("fmt", ["csv", "json"])
@pytest.mark.parametrize("column", ["WorkerId", "AssignmentId", "Input.item_id"])
def test_results_missing_column_names_file_and_column(tmp_path, fmt, column):
    rows = [{k: v for k, v in row.items() if k != column} for row in ROWS]
    path = tmp_path / f"results.{fmt}"
    if fmt == "csv":
        _write_csv(path, rows)
    else:
        path.write_text(json.dumps(rows))
    with pytest.raises(InputError, match=rf"results\.{fmt}: .*column '{column}' is missing"):
        read_results(path)


def test_results_without_answer_columns_or_malformed(tmp_path):
    rows = [{k: v for k, v in row.items() if not k.startswith("Answer.")} for row in ROWS]
    with pytest.raises(InputError, match=r"header: no Answer.<control> column"):
        read_results(_write_csv(tmp_path / "r.csv", rows))
    (tmp_path / "r.json").write_text('{"rows": []}')
    with pytest.raises(InputError, match="r.json: expected a JSON list"):
        read_results(tmp_path / "r.json")
    with pytest.raises(InputError, match="missing.csv: file not found"):
        read_results(tmp_path / "missing.csv")


@pytest.mark.parametrize(("change", "message"), [
    ({"Input.item_id": "999"}, "Input.item_id '999' is not an item of this round"),
    ({"Answer.context": "kitchen"}, "label 'kitchen' is not allowed for control 'context'"),
    ({"WorkerId": ""}, "column 'WorkerId' is missing or empty"),
])
def test_bad_results_rows_under_fail_and_skip(change, message):
    rows = [ROWS[0], {**ROWS[1], **change}]
    with pytest.raises(AnnotationError, match=message) as err:
        answers_from_files(rows, _choices_round("files"), ImportPolicy(), allowed=CONTEXT_LABELS)
    assert err.value.item == "row 2 / assignment A2"
    policy = ImportPolicy(on_error=OnError.SKIP)
    answers = answers_from_files(rows, _choices_round("files"), policy, allowed=CONTEXT_LABELS)
    assert answers == EXPECTED_FILES[:1]
    assert [s["item"] for s in policy.report.skipped] == ["row 2 / assignment A2"]


def test_write_file_tasks(tmp_path):
    csv_path, json_path = write_file_tasks(_choices_round("files"), tmp_path / "tasks")
    assert csv_path.read_text() == (
        "item_id,image,width,height,meta.group,prompt\n"
        "139,coco_cd/images/139.png,64,64,1,where?\n"
        "285,coco_cd/images/285.png,64,64,1,where?\n"
    )
    assert json.loads(json_path.read_text())[0] == {
        "item_id": "139", "image": "coco_cd/images/139.png", "width": 64, "height": 64,
        "meta.group": 1, "prompt": "where?"}
    before = csv_path.read_bytes(), json_path.read_bytes()
    write_file_tasks(_choices_round("files"), tmp_path / "tasks")
    assert (csv_path.read_bytes(), json_path.read_bytes()) == before


def test_write_file_tasks_refuses_a_data_field_named_like_a_column(tmp_path):
    r = _round(RoundItem(item_id="1", image="a.png", width=1, height=1, data={"width": 3}), backend="files")
    with pytest.raises(InputError, match="item 1: data field 'width' clashes"):
        write_file_tasks(r, tmp_path)


# --- re-ingest -----------------------------------------------------------------------------------------

def _ingest(export: list[dict], saved: list[Answer]) -> list[Answer]:
    return merge_answers(saved, answers_from_labelstudio(export, _choices_round(), ImportPolicy()))


def test_merge_is_idempotent():
    export = _export("choices")
    once = _ingest(export, [])
    twice = _ingest(export, once)
    assert _dump(twice) == _dump(once)
    assert merge_counts(once, answers_from_labelstudio(export, _choices_round(), ImportPolicy())) == {
        "added": 0, "updated": 0, "unchanged": 4, "kept": 0}


def test_merge_adds_exactly_the_new_annotations():
    export = _export("choices")
    first = _ingest(copy.deepcopy(export[:1]), [])  # only task 11 was annotated at the first ingest
    later = _ingest(export, first)
    assert [a.source_id for a in first] == ["labelstudio:21", "labelstudio:22"]
    assert [a.source_id for a in later] == ["labelstudio:21", "labelstudio:22", "labelstudio:24", "labelstudio:25"]
    assert _dump(later) == _dump(_ingest(export, []))


def test_merge_newer_edit_wins_and_older_is_ignored():
    export = _export("choices")
    first = _ingest(export, [])
    edited = copy.deepcopy(export)
    annotation = edited[0]["annotations"][0]
    annotation["result"][0]["value"]["choices"] = ["outdoor"]
    annotation["updated_at"] = "2026-12-01T08:00:00.000000Z"
    second = _ingest(edited, first)
    assert len(second) == 4
    assert second[0].choices == {"context": ["outdoor"]} and second[0].updated_at == annotation["updated_at"]
    # An older copy of the same annotation (a stale export) does not undo the edit.
    assert merge_answers(second, first) == second


def test_a_fetch_of_the_whole_backend_drops_answers_deleted_there():
    export = _export("choices")
    saved = _ingest(export, [])
    shorter = copy.deepcopy(export)
    deleted = shorter[0]["annotations"].pop(0)["id"]
    fetched = answers_from_labelstudio(shorter, _choices_round(), ImportPolicy())
    assert len(merge_answers(saved, fetched)) == len(saved)  # by default an answer only saved is kept
    merged = merge_answers(saved, fetched, drop_missing=True)
    assert len(merged) == len(saved) - 1 and f"labelstudio:{deleted}" not in {a.source_id for a in merged}


def test_merge_keeps_answers_missing_from_a_later_fetch():
    first = _ingest(_export("choices"), [])
    assert merge_answers(first, first[:1]) == first
    assert merge_counts(first, first[:1]) == {"added": 0, "updated": 0, "unchanged": 1, "kept": 3}
