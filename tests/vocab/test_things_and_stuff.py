"""Things and stuff apart: the shipped category sets say which is which, and `evaluate vocab` scores each kind."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from segbench.cli import app
from segbench.tasks.vocab.lac import mean_by_kind
from segbench.tasks.vocab.vocabulary import load_categories, thing_classes


@pytest.mark.unit
@pytest.mark.parametrize(("name", "things", "stuff", "some_things", "some_stuff"), [
    ("ade20k_150", 100, 50, {"person", "car", "bed", "chair"}, {"wall", "sky", "floor", "tree", "road, route"}),
    ("cityscapes_19", 8, 11, {"person", "rider", "car", "bicycle"}, {"road", "sky", "vegetation", "pole"}),
    ("coco_cd", 2, 0, {"cat", "dog"}, set()),
])
def test_the_shipped_category_sets_say_which_classes_are_things(name, things, stuff, some_things, some_stuff):
    _, categories, _ = load_categories(name)
    kind = {c.name: c.isthing for c in categories}
    assert sum(v is True for v in kind.values()) == things and sum(v is False for v in kind.values()) == stuff
    assert all(kind[n] is True for n in some_things) and all(kind[n] is False for n in some_stuff)


@pytest.mark.unit
def test_a_vocabulary_is_split_only_when_its_classes_are_a_shipped_set():
    _, categories, _ = load_categories("cityscapes_19")
    names, ids = [c.name for c in categories], [c.id for c in categories]
    found = thing_classes(names, ids)
    assert found is not None and found[0] == "cityscapes_19"
    assert [n for n in names if found[1][n]] == ["person", "rider", "car", "truck", "bus", "train", "motorcycle",
                                                 "bicycle"]
    assert thing_classes(["road", "car", "dog"], [0, 1, 2]) is None  # a vocabulary of its own
    assert thing_classes(["street", *names[1:]], ids) is None  # one class renamed: not that set


@pytest.mark.unit
def test_each_kind_is_the_mean_over_its_classes_with_a_score():
    things = {"car": True, "person": True, "road": False, "sky": False}
    assert mean_by_kind({"car": 0.5, "person": None, "road": 1.0, "sky": 0.0}, things) == (0.5, 0.5)
    assert mean_by_kind({"car": None, "road": 0.25}, things) == (None, 0.25)
    assert mean_by_kind({"dog": 1.0}, things) == (None, None)  # a class of no known kind counts for neither


def _cityscapes_repo(root):
    """A Cityscapes vocabulary and one panoptic image: a road on top, two car segments below."""
    _, categories, _ = load_categories("cityscapes_19")
    vocab = {c.name: {"exact": [c.name], "synonyms": [], "hyponyms": [], "meronyms": [], "id": c.id}
             for c in categories}
    vocab["road"]["synonyms"] = ["street"]
    vocab["car"]["meronyms"] = ["wheel"]
    (root / "vocab.json").write_text(json.dumps(vocab))
    pan = root / "panoptic"
    pan.mkdir()
    ids = np.zeros((4, 6), np.int64)
    ids[:2, :] = 10  # road
    ids[2:, :3] = 11  # a car
    ids[2:, 3:] = 12  # another car
    Image.fromarray(np.stack([ids, ids * 0, ids * 0], axis=-1).astype(np.uint8)).save(pan / "img1.png")
    (pan / "img1.json").write_text(json.dumps({"segments_info": [
        {"id": 10, "category_id": 0}, {"id": 11, "category_id": 13}, {"id": 12, "category_id": 13}]}))
    (root / "desc.json").write_text(json.dumps([{"image_id": "img1", "descriptions": [
        {"segment_id": 10, "description": "an empty street"},
        {"segment_id": 11, "description": "the wheel of a car"},
        {"segment_id": 12, "description": "a fluffy puppy"}]}]))
    return root


@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
def test_evaluate_vocab_reports_things_and_stuff_apart(tmp_path):
    root = _cityscapes_repo(tmp_path)
    out = root / "report"
    result = CliRunner().invoke(app, ["--data-root", str(root / "data"), "--work-dir", str(root / "work"), "evaluate",
                                      "vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"),
                                      "--panoptic", "panoptic", "--repo", str(root), "--out", str(out),
                                      "--no-baseline"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    assert metrics["kinds"]["source"] == "the cityscapes_19 category set" and len(metrics["kinds"]["things"]) == 8
    by_level = {lv["level"]: lv for lv in metrics["levels"]}
    # exact: nothing maps. synonyms: "street" is the road (stuff); no car. meronyms: "wheel" maps one car segment
    # of two (its 6 of the 12 car pixels; RQ 1 / (1 + 0.5)); "puppy" names no Cityscapes class.
    expected = {"exact": (0.0, 0.0, 0.0, 0.0), "synonyms": (0.0, 1.0, 0.0, 1.0), "hyponyms": (0.0, 1.0, 0.0, 1.0),
                "meronyms": (0.5, 1.0, 2 / 3, 1.0)}
    for level, (miou_things, miou_stuff, pq_things, pq_stuff) in expected.items():
        row = by_level[level]
        assert (row["miou_things"], row["miou_stuff"], row["pq_things"], row["pq_stuff"]) == pytest.approx(
            (miou_things, miou_stuff, pq_things, pq_stuff), abs=1e-6), level
    report = (out / "report.md").read_text()
    assert "## Things and stuff" in report and "8 things and 11 stuff classes, as the cityscapes_19" in report
    assert "| meronyms | 0.5000 | 1.0000 | 0.6667 | 1.0000 |" in report


@pytest.mark.unit
def test_a_build_writes_what_its_category_set_says_and_a_vocabulary_file_is_checked():
    from segbench.core.errors import InputError
    from segbench.schemas.vocab import CategorySpec
    from segbench.tasks.vocab.lexical_mapping import parse_vocabulary
    from segbench.tasks.vocab.vocabulary import assemble_vocabulary

    built = assemble_vocabulary([CategorySpec(id=0, name="sky", isthing=False), CategorySpec(id=1, name="car")], {})
    assert built["sky"]["isthing"] is False and "isthing" not in built["car"]
    assert parse_vocabulary(built).things == {"sky": False}
    with pytest.raises(InputError, match="'isthing' must be true or false") as caught:
        parse_vocabulary({"sky": {"exact": [], "id": 0, "isthing": "no"}})
    assert caught.value.item == "class 'sky'"


@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
def test_a_vocabulary_of_its_own_classes_is_split_as_its_isthing_fields_say(tmp_path):
    from support.vocab_eval_data import VOCAB, write_vocab_evaluation

    write_vocab_evaluation(tmp_path)
    kinds = {"road": False, "car": True, "dog": True}
    (tmp_path / "vocab.json").write_text(json.dumps({name: {**entry, "isthing": kinds[name]}
                                                     for name, entry in VOCAB.items()}))
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["--data-root", str(tmp_path / "data"), "--work-dir", str(tmp_path / "work"),
                                      "evaluate", "vocab", "--vocab", "vocab.json", "--descriptions",
                                      str(tmp_path / "desc.json"), "--gt", "gt", "--repo", str(tmp_path), "--out",
                                      str(out), "--no-baseline"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    assert metrics["kinds"] == {"source": "the vocabulary's isthing fields", "things": ["car", "dog"],
                                "stuff": ["road"]}
    # "street" (road) and "puppy" (dog) are synonyms, "wheel" (car) a meronym: per-class IoU 1 once mapped
    assert [v for lv in metrics["levels"] for v in (lv["miou_things"], lv["miou_stuff"])] == pytest.approx(
        [0.0, 0.0, 0.5, 1.0, 0.5, 1.0, 1.0, 1.0])
