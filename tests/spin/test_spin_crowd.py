"""SPIN crowd answers: polygon validation flags, even-odd merging, the resolution rule, rounds per part,
AMT results with polygons, and idempotent import."""

from __future__ import annotations

import json

import numpy as np
import pytest

from segbench.annotation_ui.convert import answers_from_files
from segbench.core.errors import AnnotationError, ImportPolicy, InputError, OnError
from segbench.core.masks import bitmap_to_rle, rle_to_bitmap
from segbench.flows.spin.rounds import spin_rounds
from segbench.schemas.rounds import Answer, Polygon, RoundItem
from segbench.schemas.spin import PartContext, Taxonomy
from segbench.tasks.spin import crowd as sc

H, W = 20, 20


def _taxonomy() -> Taxonomy:
    prov = {"proposed_by": "wordnet:wordnet-3.0", "edit": "kept", "by": None, "renamed_from": None}
    added = {"proposed_by": None, "edit": "added", "by": "turtle", "renamed_from": None}
    return Taxonomy.model_validate({
        "version": 1, "provider": {"name": "wordnet", "model": "wordnet-3.0", "question_version": "1"},
        "edits": {"file": "e.yaml", "sha256": "0" * 64},
        "parts": [{"object": "Reptile", "part": "Torso", "partimagenet_id": 21, "subparts": [
            {"name": "Back", "category": "Reptile-Torso-Back", "objects": None, "provenance": prov},
            {"name": "Shell", "category": "Reptile-Torso-Shell", "objects": ["box turtle"], "provenance": added}]}]})


def _ctx(part_box=(0, 0, 20, 20)) -> PartContext:
    bitmap = np.zeros((H, W), dtype=np.uint8)
    x0, y0, x1, y1 = part_box
    bitmap[y0:y1, x0:x1] = 1
    return PartContext(image_id=1, part_ann_id=7, height=H, width=W, part_rle=bitmap_to_rle(bitmap),
                       object="Reptile", object_class="box turtle", part="Torso")


def _square(label: str, x0: float, y0: float, x1: float, y1: float) -> Polygon:
    return Polygon(label=label, points=[(x0, y0), (x1, y0), (x1, y1), (x0, y1)])


def _answer(annotator: str, *, visible="yes", has=None, polygons=(), item="i1") -> Answer:
    choices = {"part_visible": [visible]} if visible else {}
    choices.update({f"has_{k.lower()}": [v] for k, v in (has or {}).items()})
    return Answer(item_id=item, annotator=annotator, source_id=f"s-{annotator}", choices=choices,
                  polygons={"polygons": list(polygons)} if polygons else {})


def _resolve(answers, containment=0.8):
    return sc.resolve_subparts(answers, {"i1": _ctx()}, _taxonomy(), {}, sc.ResolvePolicy(containment))


# --- masks ---------------------------------------------------------------------------------------------

def test_a_polygon_inside_another_of_the_same_subpart_is_a_hole():
    mask = sc.merge_polygons([_square("Shell", 0, 0, 10, 10), _square("Shell", 2, 2, 6, 6)], H, W)
    assert mask.sum() == 100 - 16 and mask[3, 3] == 0 and mask[1, 1] == 1


def test_separate_polygons_are_a_union():
    mask = sc.merge_polygons([_square("Eye", 0, 0, 4, 4), _square("Eye", 10, 10, 13, 13)], H, W)
    assert mask.sum() == 16 + 9


@pytest.mark.parametrize(("polygon", "flag"), [
    (Polygon(label="Back", points=[(1, 1), (5, 5)]), "too_few_points"),
    (_square("Back", 2, 2, 25, 8), "outside_image"),
    (Polygon(label="Back", points=[(2, 2), (6, 2), (10, 2)]), "zero_area"),
])
def test_each_bad_polygon_is_flagged_and_kept_out_of_resolution(polygon, flag):
    raw, resolved, report = _resolve([_answer("a", has={"Back": "yes"}, polygons=[polygon])])
    assert raw[0]["subparts"]["Back"]["flags"] == [flag]
    assert resolved == [] and report.flags[flag] == 1


def test_a_subpart_outside_its_part_is_flagged_not_contained():
    ctx = _ctx(part_box=(0, 0, 10, 20))  # the part is the left half
    answer = _answer("a", has={"Back": "yes"}, polygons=[_square("Back", 5, 0, 15, 10)])  # half inside
    raw, resolved, _ = sc.resolve_subparts([answer], {"i1": ctx}, _taxonomy(), {}, sc.ResolvePolicy(0.8))
    assert raw[0]["subparts"]["Back"]["containment"] == pytest.approx(0.5)
    assert raw[0]["subparts"]["Back"]["flags"] == ["not_contained"] and resolved == []
    _, resolved, _ = sc.resolve_subparts([answer], {"i1": ctx}, _taxonomy(), {}, sc.ResolvePolicy(0.5))
    assert len(resolved) == 1


# --- resolution ----------------------------------------------------------------------------------------

def test_majority_yes_among_visible_and_medoid_mask():
    a = _answer("a", has={"Back": "yes"}, polygons=[_square("Back", 0, 0, 10, 10)])
    b = _answer("b", has={"Back": "yes"}, polygons=[_square("Back", 0, 0, 10, 9)])
    c = _answer("c", has={"Back": "yes"}, polygons=[_square("Back", 0, 0, 4, 4)])
    d = _answer("d", has={"Back": "no"})
    hidden = _answer("e", visible="no")  # said the part is not visible: not a voter
    _, resolved, _ = _resolve([a, b, c, d, hidden])
    (back,) = [r for r in resolved if r.subpart == "Back"]
    # mean IoU: a = (0.9 + 0.16) / 2, b = (0.9 + 16/90) / 2, c smaller → b wins
    expected = bitmap_to_rle(sc.merge_polygons(b.polygons["polygons"], H, W))
    assert back.segmentation.model_dump()["counts"] == expected["counts"]
    assert back.agreement == pytest.approx(0.75) and back.workers == ["a", "b", "c", "d"]
    assert back.area == 90 and back.category == "Reptile-Torso-Back"


def test_a_tie_in_mean_iou_goes_to_the_smaller_annotator_id():
    z = _answer("z", has={"Back": "yes"}, polygons=[_square("Back", 0, 0, 4, 4)])
    m = _answer("m", has={"Back": "yes"}, polygons=[_square("Back", 10, 10, 14, 14)])
    _, resolved, _ = _resolve([z, m])
    assert rle_to_bitmap(resolved[0].segmentation.model_dump())[11, 11] == 1  # m's mask


def _iou(resolved, truth: np.ndarray) -> float:
    mask = rle_to_bitmap(resolved.segmentation.model_dump()).astype(bool)
    return float((mask & truth).sum() / (mask | truth).sum())


def test_accounts_drawing_the_whole_part_count_once_and_lose_to_the_honest_workers():
    truth = sc.merge_polygons([_square("Back", 2, 2, 12, 12)], H, W).astype(bool)
    honest = [_answer(n, has={"Back": "yes", "Shell": "no"}, polygons=[_square("Back", 2, 2, 12 + d, 12)])
              for n, d in (("h1", 0), ("h2", 1), ("h3", -1))]
    whole = [_square("Back", 0, 0, 20, 20), _square("Shell", 0, 0, 20, 20)]  # the part, for every subpart
    sybils = [_answer(f"s{k}", has={"Back": "yes", "Shell": "yes"}, polygons=whole) for k in range(4)]
    _, resolved, report = _resolve([*honest, *sybils])
    (back,) = resolved  # the shell: one copied "yes" against three "no"
    assert back.subpart == "Back" and _iou(back, truth) >= 0.9 and back.agreement == pytest.approx(1.0)
    assert back.workers == ["h1", "h2", "h3", "s0", "s1", "s2", "s3"]
    assert [(c["subpart"], c["annotators"]) for c in report.to_json()["copies"]] == [
        ("Back", ["s0", "s1", "s2", "s3"]), ("Shell", ["s0", "s1", "s2", "s3"])]
    assert report.absent == 1


def test_copies_of_one_workers_polygons_do_not_make_that_worker_the_medoid():
    sloppy = [_square("Back", 0, 0, 14, 14)]
    answers = [_answer("a", has={"Back": "yes"}, polygons=[_square("Back", 2, 2, 12, 12)]),
               _answer("b", has={"Back": "yes"}, polygons=[_square("Back", 2, 2, 12, 13)]),
               *(_answer(n, has={"Back": "yes"}, polygons=sloppy) for n in ("c", "c2", "c3"))]
    _, resolved, report = _resolve(answers)
    # Counted once, c's mean IoU (100/196 + 110/196) / 2 = 0.54 is below b's (100/110 + 110/196) / 2 = 0.74;
    # counted three times it would be (100/196 + 110/196 + 1 + 1) / 4 = 0.77, the highest.
    assert rle_to_bitmap(resolved[0].segmentation.model_dump()).sum() == 110  # b's mask
    assert report.to_json()["copies"][0]["annotators"] == ["c", "c2", "c3"]
    _, alone, _ = _resolve(answers[:3])
    assert alone[0].segmentation == resolved[0].segmentation  # as if the copies were not there


def test_identical_small_masks_are_two_people_agreeing_not_a_copy():
    eye = [_square("Back", 3, 3, 6, 6)]  # 9 pixels: two honest outlines can coincide
    answers = [_answer("a", has={"Back": "yes"}, polygons=eye), _answer("b", has={"Back": "yes"}, polygons=eye),
               _answer("c", has={"Back": "no"})]
    _, resolved, report = _resolve(answers)
    assert len(resolved) == 1 and resolved[0].agreement == pytest.approx(2 / 3)
    assert report.to_json()["copies"] == []


def test_half_yes_is_no_majority():
    a = _answer("a", has={"Back": "yes"}, polygons=[_square("Back", 0, 0, 4, 4)])
    b = _answer("b", has={"Back": "no"})
    _, resolved, report = _resolve([a, b])
    assert resolved == [] and report.absent >= 1


def test_object_specific_subparts_only_for_their_class():
    names = sc.item_subparts({}, _taxonomy(), _ctx().model_copy(update={"object_class": "Komodo dragon"}))
    assert names == ["Back"]


# --- rounds and AMT results ----------------------------------------------------------------------------

def _items():
    data = {"image_id": 1, "part_ann_id": 7, "object": "Reptile", "part": "Torso"}
    return [RoundItem(item_id="i1", image="spin/tasks/i1.png", width=W, height=H,
                      data={**data, "object_class": "box turtle"}),
            RoundItem(item_id="i2", image="spin/tasks/i2.png", width=W, height=H,
                      data={**data, "part_ann_id": 8, "object_class": "Komodo dragon"})]


def test_one_round_per_part_with_subparts_per_class():
    (round_,) = spin_rounds(_items(), _taxonomy(), key_prefix="spin", dataset_version="v", backend="files",
                               now="2026-01-01T00:00:00+00:00")
    assert round_.key == "spin-reptile-torso" and round_.config.label_config == "spin_subparts"
    assert round_.config.params == {"object": "Reptile", "part": "Torso", "subparts": ["Back", "Shell"]}
    assert [i.data["subparts"] for i in round_.items] == [["Back", "Shell"], ["Back"]]
    assert [i.batch for i in round_.items] == ["Reptile", "Reptile"]  # phased rollout: one super-category


def _paper_taxonomy() -> Taxonomy:
    from segbench.tasks.spin import taxonomy as st
    from segbench.tasks.spin import taxonomy_edits as se

    catalog = st.load_catalog()
    parts = se.apply_edits(catalog, {}, "none", se.load_edits(se.default_edits_path(), catalog)[0]).parts
    return st.build_taxonomy(parts, provider="p", model="m", edits_file="e", edits_sha256="0" * 64)


def test_a_big_part_is_split_over_pages_of_at_most_eight_subparts():
    from segbench.annotation_ui.kinds import round_kind

    assert [len(p) for p in sc.subpart_pages([str(i) for i in range(23)])] == [8, 8, 7]
    assert [len(p) for p in sc.subpart_pages([str(i) for i in range(9)])] == [5, 4]
    assert sc.subpart_pages(["a"]) == [["a"]] and sc.subpart_pages([]) == []
    data = {"image_id": 1, "part_ann_id": 7, "object": "Car", "part": "Body", "object_class": "cab"}
    item = RoundItem(item_id="i1", image="spin/tasks/i1.png", width=W, height=H, data=data)
    mirror = RoundItem(item_id="i2", image="spin/tasks/i2.png", width=W, height=H,
                       data={**data, "part_ann_id": 8, "part": "Side Mirror"})
    rounds = spin_rounds([item, mirror], _paper_taxonomy(), key_prefix="spin", dataset_version="v",
                         backend="files", now="t")
    assert [r.key for r in rounds] == ["spin-car-body-p1", "spin-car-body-p2", "spin-car-body-p3",
                                       "spin-car-side_mirror"]
    body = rounds[:3]
    assert [len(r.config.params["subparts"]) for r in body] == [8, 8, 7]
    assert sorted(n for r in body for n in r.config.params["subparts"]) == sorted(
        s.name for s in _paper_taxonomy().part("Car", "Body").subparts)
    assert [(r.config.params["page"], r.config.params["pages"]) for r in body] == [(1, 3), (2, 3), (3, 3)]
    asked = [n for r in body for i in r.items for n in i.data["subparts"]]
    # a cab is not asked about a siren, a plow, a hopper or a roll cage (taxonomy_edits.yaml's restrict)
    assert sorted(asked) == sorted(s.name for s in _paper_taxonomy().subparts_for("Car", "Body", "cab"))
    assert len(asked) == 23 - 4 and "Siren" not in asked
    assert "page" not in rounds[3].config.params
    label_config = round_kind(sc.KIND).label_config
    for round_ in rounds:  # every page renders, its labels listed beside the image
        label_config.render(**round_.config.params)


def test_a_task_pays_ten_cents_per_possible_subpart_so_an_image_pays_the_papers_reward():
    taxonomy = _paper_taxonomy()

    def paid(obj: str, object_class: str) -> float:
        parts = [e.part for e in taxonomy.parts if e.object == obj and e.subparts]
        items = [RoundItem(item_id=str(k), image=f"spin/tasks/{k}.png", width=W, height=H,
                           data={"image_id": 1, "part_ann_id": k, "object": obj, "part": part,
                                 "object_class": object_class}) for k, part in enumerate(parts)]
        rounds = spin_rounds(items, taxonomy, key_prefix="s", dataset_version="v", backend="files", now="t")
        return round(sum(item.data["reward"] for r in rounds for item in r.items), 2)

    # The paper: $1.10 per Boat image (eleven possible subparts), $2.90 per Car image (29), whatever the
    # class: a cab, never asked about a siren, pays the same as an ambulance.
    assert paid("Boat", "schooner") == 1.10 and paid("Car", "cab") == paid("Car", "ambulance") == 2.90


def test_unknown_part_in_items_is_an_input_error():
    item = _items()[0].model_copy(update={"data": {**_items()[0].data, "part": "Wing"}})
    with pytest.raises(InputError, match="no part Reptile-Wing"):
        spin_rounds([item], _taxonomy(), key_prefix="s", dataset_version="v", backend="files", now="t")


def test_amt_results_with_polygons_are_read_and_bad_rows_rejected():
    (round_,) = spin_rounds(_items(), _taxonomy(), key_prefix="spin", dataset_version="v", backend="files",
                               now="t")
    row = {"WorkerId": "W1", "AssignmentId": "A1", "Input.item_id": "i1", "Answer.part_visible": "yes",
           "Answer.has_shell": "yes",
           "Answer.polygons": json.dumps([{"label": "Shell", "points": [[0, 0], [8, 0], [8, 8], [0, 8]]}])}
    (answer,) = answers_from_files([row], round_, ImportPolicy(), check_polygons=False)
    assert answer.polygons["polygons"][0].points[2] == (8.0, 8.0) and answer.annotator == "worker:W1"
    bad = {**row, "Answer.polygons": "[{\"label\": \"Shell\", \"points\": [[0, 0], [1]]}]"}
    with pytest.raises(AnnotationError, match="entry 0"):
        answers_from_files([bad], round_, ImportPolicy())
    policy = ImportPolicy(on_error=OnError.SKIP)
    assert answers_from_files([{**row, "Answer.polygons": "not json"}], round_, policy) == []
    assert policy.report.counts() == {"AnnotationError": 1}


def test_resolution_is_deterministic():
    answers = [_answer(n, has={"Back": "yes", "Shell": "yes"},
                       polygons=[_square("Back", 0, 0, 9, 9), _square("Shell", 10, 10, 18, 18)]) for n in "cab"]
    first, second = _resolve(answers), _resolve(list(reversed(answers)))
    assert first[0] == second[0] and [r.model_dump() for r in first[1]] == [r.model_dump() for r in second[1]]
    assert [r.subpart for r in first[1]] == ["Back", "Shell"]


def test_import_of_an_amt_results_file_is_idempotent(tmp_path):
    from segbench.annotation_ui.rounds import RoundStore
    from segbench.flows.spin.crowd import import_spin_round
    from segbench.schemas.spin import read_resolved
    from segbench.tasks.spin.taxonomy import taxonomy_yaml

    (tmp_path / "spin").mkdir()
    (tmp_path / "spin" / "taxonomy.yaml").write_text(taxonomy_yaml(_taxonomy()))
    part = bitmap_to_rle(np.ones((H, W), dtype=np.uint8))
    items = [i.model_copy(update={"data": {**i.data, "part_rle": part}}) for i in _items()]
    (round_,) = spin_rounds(items, _taxonomy(), key_prefix="spin", dataset_version="v", backend="files", now="t")
    RoundStore(tmp_path / "rounds").create(round_)
    shell = json.dumps([{"label": "Shell", "points": [[0, 0], [8, 0], [8, 8], [0, 8]]},
                        {"label": "Shell", "points": [[2, 2], [4, 2], [4, 4], [2, 4]]}])
    rows = [{"WorkerId": w, "AssignmentId": f"A{w}", "Input.item_id": "i1", "Answer.part_visible": "yes",
             "Answer.has_shell": "yes", "Answer.has_back": "no", "Answer.polygons": shell} for w in ("W1", "W2")]
    rows.append({**rows[0], "WorkerId": "W3", "AssignmentId": "A3", "Answer.polygons": "[]"})  # yes, no polygon
    results = tmp_path / "results.json"
    results.write_text(json.dumps(rows))
    first = import_spin_round(tmp_path, round_.key, results=results)
    files = {name: open(path, "rb").read() for name, path in first.paths.items()}
    second = import_spin_round(tmp_path, round_.key, results=results)
    assert {name: open(path, "rb").read() for name, path in second.paths.items()} == files
    (resolved,) = read_resolved(first.paths["resolved"])
    assert (resolved.subpart, resolved.area, resolved.polygons) == ("Shell", 64 - 4, 2)
    assert resolved.workers == ["worker:W1", "worker:W2"] and resolved.agreement == 1.0
    assert first.report.flags == {"yes_without_polygon": 1}
