"""People adjudicate region descriptions: the round built from an ``evaluate vocab`` report, run as a user
types it through the files backend, and its report on hand-computed cases."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from support.cli import run
from support.vocab_eval_data import write_vocab_evaluation

from segbench.annotation_ui.round_view import round_view
from segbench.annotation_ui.rounds import RoundStore
from segbench.core.io import read_json
from segbench.demo.crowd import write_results_csv
from segbench.schemas.rounds import ItemAnswer
from segbench.tasks.vocab import adjudication


def _row(n, mapping, baseline, gt):
    levels = ("exact", "synonyms", "hyponyms", "meronyms")
    return {"image_id": "i", "segment_id": n, "description": f"d{n}", "gt_class": gt,
            "mapping": dict(zip(levels, mapping, strict=True)), "baseline": baseline}


ROWS = [_row(1, ["road"] * 4, "road", "road"),  # both right
        _row(2, [None, None, None, "car"], "dog", "car"),  # they disagree: the lexical mapping is right
        _row(3, [None] * 4, "car", "car"),  # people say it names no category: only the lexical mapping agrees
        _row(4, [None, "dog", "dog", "dog"], "dog", "dog")]
PEOPLE = {1: ("road", "exact"), 2: ("car", "meronym"), 3: ("none", "none"), 4: ("dog", "synonym")}


@pytest.mark.unit
def test_alignment_recovery_and_relations_by_hand():
    answers = [ItemAnswer(item_id=f"i-{n}", annotators=["a", "b"], agreement={},
                          majority={"category": c, "relation": r}) for n, (c, r) in PEOPLE.items()]
    settled = ItemAnswer(item_id="i-5", annotators=["a", "b"], agreement={}, majority={"category": "car"},
                         model_settled={"category": 0.7})  # people tied, a model chose: left out as a tie
    report = adjudication.summarize([*ROWS, _row(5, ["car"] * 4, "car", "car")], [*answers, settled], stuff={"road"})
    assert (report["adjudicated"], report["ties"]) == (4, 1)
    assert report["alignment"] == {"exact": 0.5, "synonyms": 0.75, "hyponyms": 0.75, "meronyms": 1.0,
                                   "sentence_bert": 0.5}
    assert report["alignment_stuff"] == {"exact": 1.0, "synonyms": 1.0, "hyponyms": 1.0, "meronyms": 1.0,
                                         "sentence_bert": 1.0}
    assert (report["disagreements"], report["recovery"]) == (2, {"lexical": 1.0, "sentence_bert": 0.0})
    assert report["relation_vs_level"]["meronym"]["meronyms"] == 1
    assert report["relation_vs_level"]["synonym"]["synonyms"] == 1
    assert report["relation_vs_level"]["none"]["exact"] == 1  # "none" is reached where nothing is mapped
    markdown = adjudication.render_markdown("adj", report)
    assert "| all | 50.0% | 75.0% | 75.0% | 100.0% | 50.0% |" in markdown
    assert "| 100.0% | 0.0% |" in markdown


@pytest.mark.unit
def test_stage_two_asks_only_where_the_mappings_disagree():
    chosen = adjudication.select_rows(ROWS, disagreements=True, sample=None, seed=0, source="m.json")
    assert [r["segment_id"] for r in chosen] == [2, 3]
    assert adjudication.item_id({"image_id": "frankfurt/f 1", "segment_id": 3}) == "frankfurt_f_1-3"  # a file name
    one = adjudication.select_rows(ROWS, disagreements=False, sample=1, seed=0, source="m.json")
    assert len(one) == 1 and one == adjudication.select_rows(ROWS, disagreements=False, sample=1, seed=0,
                                                             source="m.json")


@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
def test_an_adjudication_round_from_an_evaluation_report(tmp_path):
    root = write_vocab_evaluation(tmp_path / "project")
    report = tmp_path / "report"
    run(tmp_path, "evaluate", "vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"), "--gt", "gt",
        "--repo", str(root), "--out", str(report), "--no-baseline")
    refused = run(tmp_path, "rounds", "create", "vocab_adjudication", "adj2", "--report", str(report), "--repo",
                  str(root), "--disagreements", code=1)
    assert "no Sentence-BERT classes" in str(refused.exception)

    photos = tmp_path / "photos"
    photos.mkdir()
    refused = run(tmp_path, "rounds", "create", "vocab_adjudication", "adj2", "--report", str(report), "--repo",
                  str(root), "--images", str(photos), code=1)
    assert "no photo of image 'img1'" in str(refused.exception)
    Image.new("RGB", (6, 4), (0, 200, 0)).save(photos / "img1.png")
    run(tmp_path, "rounds", "create", "vocab_adjudication", "adj2", "--report", str(report), "--repo", str(root),
        "--images", str(photos))
    on_photo = np.asarray(Image.open(tmp_path / "data" / RoundStore(tmp_path / "data" / "rounds").load("adj2")
                                     .items[0].image))
    assert (on_photo[2:] == [0, 200, 0]).all() and (on_photo[:2] != [0, 200, 0]).any()  # the road tinted

    out = run(tmp_path, "rounds", "create", "vocab_adjudication", "adj1", "--report", str(report), "--repo", str(root),
              "--backend", "files", "--overlap", "2").stdout
    assert "Adjudication round created" in out
    data = tmp_path / "data"
    round_ = RoundStore(data / "rounds").load("adj1")
    assert [i.item_id for i in round_.items] == ["img1-0", "img1-1", "img1-2"]
    assert round_.config.params["categories"] == ["road", "car", "dog"]
    shown = np.asarray(Image.open(data / round_.items[0].image))
    assert shown.shape == (4, 6, 3) and (shown[:2] != 128).any() and (shown[2:] == 128).all()  # road tinted

    run(tmp_path, "rounds", "launch", "adj1")
    said = {"img1-0": [("road", "synonym")] * 2, "img1-1": [("car", "meronym")] * 2,
            "img1-2": [("dog", "synonym"), ("none", "none")]}  # a tie: left out
    write_results_csv([{"WorkerId": f"W{w}", "AssignmentId": f"{item}-{w}", "Input.item_id": item,
                        "Answer.category": c, "Answer.relation": r}
                       for item, pairs in said.items() for w, (c, r) in enumerate(pairs)],
                      data / "rounds" / "adj1" / "results" / "r.csv")
    ingested = json.loads(run(tmp_path, "--json", "rounds", "ingest", "adj1").stdout)
    assert {"adjudication", "adjudication_md"} <= set(ingested["reports"])
    result = read_json(data / "vocab" / "adjudication" / "adj1.report.json")
    # street → road from synonyms on; "the wheel of a car" → car at meronyms
    assert (result["adjudicated"], result["ties"]) == (2, 1)
    assert result["alignment"] == {"exact": 0.0, "synonyms": 0.5, "hyponyms": 0.5, "meronyms": 1.0,
                                   "sentence_bert": None}
    assert result["alignment_stuff"] is None  # the vocabulary does not say which classes are stuff
    assert (data / "vocab" / "adjudication" / "adj1.report.md").read_text().startswith("# Adjudication of round adj1")
    # segbench view's round: the lexical mapping is the automatic label people are compared with
    view = {s.fields["item_id"]: s for s in round_view(data, "adj1").samples}
    assert view["img1-1"].labels["category_automatic"] == "car" and not view["img1-1"].fields["category_disagrees"]
    assert view["img1-2"].fields["tie"] and "disagree-with-automatic" in {v.name for v in round_view(data, "adj1").views}


@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("damage, said", [
    ("mappings.json", "row needs image_id"),
    ("metrics.json", "not a vocabulary evaluation's metrics.json"),
])
def test_a_damaged_report_is_refused_by_name(tmp_path, damage, said):
    root = write_vocab_evaluation(tmp_path / "project")
    report = tmp_path / "report"
    run(tmp_path, "evaluate", "vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"), "--gt", "gt",
        "--repo", str(root), "--out", str(report), "--no-baseline")
    (report / damage).write_text(json.dumps([{"image_id": "img1"}] if damage == "mappings.json" else {"metrics": {}}))
    refused = run(tmp_path, "rounds", "create", "vocab_adjudication", "adj", "--report", str(report), "--repo",
                  str(root), code=1)
    assert said in str(refused.exception) and damage in str(refused.exception)
    assert not (tmp_path / "data" / "rounds" / "adj.json").exists()
