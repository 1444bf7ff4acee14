"""What `segbench view` hands to FiftyOne: a build's COCO files as samples with label masks, and a
round's items with every answer, the decision and the saved views, checked on hand-made files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from support.flip_eval_data import IMAGE_IDS, write_flip_dataset

from segbench import fiftyone_app
from segbench.annotation_ui.round_view import round_view
from segbench.annotation_ui.rounds import RoundStore, mark_ingested, mark_launched, new_round
from segbench.core.errors import InputError, ServiceError
from segbench.core.views import coco_view
from segbench.schemas.rounds import Answer, ItemAnswer, RoundConfig, RoundItem
from segbench.schemas.views import ViewDocument, ViewFile
from segbench.tasks.flip.view import view_files

T0 = "2026-01-01T00:00:00+00:00"
SQUARE = [[0, 0, 4, 0, 4, 4, 0, 4]]  # the top-left 4×4 pixels
SMALL = [[1, 1, 3, 1, 3, 3, 1, 3]]  # 2×2 inside it


def _coco(path, images, annotations, categories):
    path.write_text(json.dumps({"images": images, "annotations": annotations, "categories": categories}))
    return path


def test_a_coco_file_becomes_samples_with_fields_and_a_label_mask_small_over_large(tmp_path):
    image = {"id": 7, "file_name": "a.png", "width": 6, "height": 5, "license": 1, "edit_type": "SM",
             "plan": {"q_pos": "dog", "steps": {"nested": 1}}, "tags_list": ["x", "y"]}
    wholes = _coco(tmp_path / "wholes.json", [image], [
        {"id": 1, "image_id": 7, "category_id": 3, "segmentation": SQUARE}], [{"id": 3, "name": "Bird"}])
    parts = _coco(tmp_path / "parts.json", [image], [
        {"id": 1, "image_id": 7, "category_id": 5, "segmentation": SMALL},
        {"id": 2, "image_id": 7, "category_id": 4, "segmentation": SQUARE}],
        [{"id": 4, "name": "Bird-Body"}, {"id": 5, "name": "Bird-Eye"}])
    files = [ViewFile(path=wholes, split="val", field="wholes", images=tmp_path),
             ViewFile(path=parts, split="val", field="parts", images=tmp_path)]

    document = coco_view("v", files, tmp_path / "masks")

    [sample] = document.samples  # one image met in two files is one sample
    assert sample.filepath == (tmp_path / "a.png").resolve() and sample.tags == ["val"]
    assert sample.fields == {"image_id": 7, "edit_type": "SM", "plan_q_pos": "dog", "tags_list": ["x", "y"]}
    assert document.mask_targets == {"wholes": {3: "Bird"}, "parts": {4: "Bird-Body", 5: "Bird-Eye"}}
    parts_mask = np.array(Image.open(sample.masks["parts"]))
    expected = np.zeros((5, 6), np.uint8)
    expected[0:4, 0:4] = 4  # the body, drawn first: it is the larger
    expected[1:3, 1:3] = 5  # the eye over it
    assert (parts_mask == expected).all()
    assert set(np.unique(np.array(Image.open(sample.masks["wholes"])))) == {0, 3}


def test_flip_views_show_the_most_correlated_rho_unless_asked_and_name_the_built_ones(tmp_path):
    dataset = write_flip_dataset(tmp_path / "coco_cd", rhos=("rho_0.5", "rho_0.95"), split="val")
    assert [(f.path.parent.name, f.split) for f in view_files(dataset)] == [("rho_0.95", "val")]
    assert [f.path.parent.name for f in view_files(dataset, "0.5")] == ["rho_0.5"]
    with pytest.raises(InputError, match=r"ρ 0.9 is not built \(built: 0.5, 0.95\)"):
        view_files(dataset, "0.9")
    with pytest.raises(InputError, match="no splits built"):
        view_files(tmp_path / "empty")


def test_a_round_shows_every_answer_the_decision_ties_disagreements_flagged_workers_and_gold(tmp_path):
    data = tmp_path / "data"
    dataset = write_flip_dataset(data / "coco_cd", split="val")
    contexts = {str(i): json.loads((dataset / "splits/rho_0.95/val.json").read_text())["images"][n]["context"]
                for n, i in enumerate(IMAGE_IDS)}
    first, second, third, gold = (str(i) for i in IMAGE_IDS[:4])
    items = [RoundItem(item_id=i, image=f"coco_cd/images/{int(i):012d}.png", width=640, height=480) for i in
             (first, second, third)]
    items.append(RoundItem(item_id=gold, image=f"coco_cd/images/{int(gold):012d}.png", width=640, height=480,
                           gold={"context": contexts[gold]}))
    store = RoundStore(data / "rounds")
    config = RoundConfig(label_config="coco_cd_context", overlap=2)
    round_ = new_round("audit", "coco_cd_context_audit", "coco_cd", "ab" * 32, config, items, "files", T0)
    store.save(mark_ingested(mark_launched(round_, None, T0), {}, T0))
    other = {"indoor": "outdoor", "outdoor": "indoor"}

    def answer(item, worker, label):
        return Answer(item_id=item, annotator=worker, source_id=f"{item}-{worker}", choices={"context": [label]})

    answers = [answer(first, "w:A", contexts[first]), answer(first, "w:B", contexts[first]),
               answer(second, "w:A", other[contexts[second]]), answer(second, "w:B", other[contexts[second]]),
               answer(third, "w:A", contexts[third]), answer(third, "w:C", other[contexts[third]])]
    decided = [ItemAnswer(item_id=first, annotators=["w:A", "w:B"], majority={"context": contexts[first]},
                          agreement={"context": 1.0}),
               ItemAnswer(item_id=second, annotators=["w:A", "w:B"], majority={"context": other[contexts[second]]},
                          agreement={"context": 1.0}),
               ItemAnswer(item_id=third, annotators=["w:A", "w:C"], majority={"context": contexts[third]},
                          agreement={"context": 0.5}, model_settled={"context": 0.81})]
    store.answers_path("audit").write_text(json.dumps({
        "answers": [a.model_dump(mode="json") for a in answers], "items": [i.model_dump(mode="json") for i in decided],
        "left_out": [{"worker": "w:C", "reasons": ["gold accuracy 0.20 < 0.60"]}]}))

    document = round_view(data, "audit")

    by_item = {s.fields["item_id"]: s for s in document.samples}
    assert by_item[first].fields["context_answers"] == [f"w:A:{contexts[first]}", f"w:B:{contexts[first]}"]
    assert by_item[first].labels == {"context": contexts[first], "context_automatic": contexts[first]}
    assert [by_item[i].fields["disagrees"] for i in (first, second, third, gold)] == [False, True, False, False]
    assert [by_item[i].fields["tie"] for i in (first, second, third, gold)] == [False, False, True, False]
    assert [by_item[i].fields["answered_by_flagged"] for i in (first, second, third, gold)] == [False, False, True, False]
    assert [by_item[i].fields["gold"] for i in (first, second, third, gold)] == [False, False, False, True]
    assert [view.name for view in document.views] == ["disagree-with-automatic", "ties",
                                                      "answered-by-flagged-workers", "gold"]


def test_a_damaged_build_file_is_named_not_a_traceback(tmp_path):
    broken = tmp_path / "val.json"
    broken.write_text(json.dumps({"images": [{"id": 1}], "annotations": []}))  # no categories
    with pytest.raises(InputError, match="not a COCO file segbench wrote") as raised:
        coco_view("v", [ViewFile(path=broken, split="val", field="gt", images=tmp_path)], tmp_path / "masks")
    assert raised.value.path == str(broken)


def test_a_damaged_answers_file_is_named_with_how_to_write_it_again(tmp_path):
    data = tmp_path / "data"
    store = RoundStore(data / "rounds")
    items = [RoundItem(item_id="1", image="coco_cd/images/1.png", width=4, height=4)]
    round_ = new_round("audit", "cafe_verification", "cafe", "ab" * 32, RoundConfig(label_config="cafe_verification"),
                       items, "files", T0)
    store.save(round_)
    store.answers_path("audit").write_text(json.dumps({"answers": [], "items": [{"item_id": 1}]}))
    with pytest.raises(InputError, match="the answers file is damaged") as raised:
        round_view(data, "audit")
    assert raised.value.path == str(store.answers_path("audit"))
    assert "segbench rounds ingest audit" in raised.value.hint


def test_a_fiftyone_that_hangs_before_it_is_ready_is_stopped_and_named(tmp_path, monkeypatch):
    hung = tmp_path / "fiftyone" / "venv" / "bin" / "python"
    hung.parent.mkdir(parents=True)
    hung.write_text("#!/bin/sh\necho starting >&2\nexec sleep 60\n")
    hung.chmod(0o755)
    monkeypatch.setattr(fiftyone_app, "READY_SECONDS", 0.5)
    told = []
    with pytest.raises(ServiceError, match="not ready after 0.5 s and was stopped") as raised:
        fiftyone_app.show(ViewDocument(name="v", samples=[]), tmp_path / "fiftyone", port=None, ready=told.append)
    assert raised.value.path == str(tmp_path / "fiftyone" / "views" / "v.log") and not told
