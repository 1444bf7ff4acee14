"""`segbench leaderboard`: reports ranked per benchmark beside the published results, on hand-made reports."""

from __future__ import annotations

import json

import pytest
from support.cli import run

from segbench.core.errors import InputError
from segbench.core.leaderboard import across, entry, ranked, read_report
from segbench.tasks.cafe.leaderboard import CAFE
from segbench.tasks.flip.leaderboard import COCO_CD
from segbench.tasks.vocab.leaderboard import VOCAB


def _report(folder, evaluation: str, metrics: dict, evaluated: dict | None = None) -> str:
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"dataset": evaluation}))
    (folder / "metrics.json").write_text(json.dumps({"evaluated": evaluated or {}, "metrics": metrics}))
    return str(folder)


def _lac(area: float) -> dict:
    return {"lac": {"miou": {"area": area}}, "levels": []}


def _flip(miou: float | None, flip: float, gaps: tuple[float, float] = (0.1, 0.2)) -> dict:
    return {"miou": miou, "fg_iou": 0.9, "flip": {"global": flip}, "fg_decomposition": {"miss": 0.05},
            "gaps": {"cat": {"gap": gaps[0]}, "dog": {"gap": gaps[1]}}}


def _cafe(cgf1: dict[str, float], n: int = 10) -> dict:
    return {subset: {"N": n, "cgF1": value, "IL_MCC": 0.5, "pmF1": 0.8} for subset, value in cgf1.items()}


def test_reports_rank_best_first_share_ranks_when_equal_and_put_undefined_values_last():
    rows = [entry(COCO_CD, name, _flip(miou, flip)) for name, miou, flip in
            (("b", 0.6, 0.1), ("a", 0.6, 0.3), ("c", 0.7, 0.2), ("d", None, 0.0))]
    table = ranked(COCO_CD, rows)
    assert [r.name for r in table.rows] == ["c", "a", "b", "d"] and table.ranks == [1, 2, 2, None]
    assert table.rows[0].values["mIoU"] == pytest.approx(70.0)  # shown ×100, as the paper prints it
    assert table.rows[0].values["worst gap"] == pytest.approx(20.0)
    by_flip = ranked(COCO_CD, rows, "flip")  # lower is better, any case
    assert [r.name for r in by_flip.rows] == ["d", "b", "c", "a"] and by_flip.ranked_by == "Flip"
    with pytest.raises(InputError, match="COCO-CD has no column 'IoU'") as raised:
        ranked(COCO_CD, rows, "IoU")
    assert "mIoU, Fg-IoU, Flip, FG-Miss, worst gap" in raised.value.hint


def test_cafe_reports_sit_among_the_published_models_and_a_partial_overall_is_not_ranked():
    full = entry(CAFE, "mine", _cafe({"SM": 0.5, "CC": 0.4, "OC": 0.1, "Overall": 0.4}))
    table = ranked(CAFE, [full])
    names = [r.name for r in table.rows]
    assert names[:2] == ["CAFE-SAM3 (GPT-5.5)", "mine"] and len(names) == 7  # 63.3 > 40.0 > SAM 3's 38.5
    assert table.rows[0].values["cgF1 OC"] == 44.7 and table.rows[0].source == "published: leaderboard, paper"
    partial = entry(CAFE, "sm-only", _cafe({"SM": 0.9, "Overall": 0.9}))
    assert partial.values["cgF1"] is None and partial.values["cgF1 SM"] == pytest.approx(90.0)
    assert ranked(CAFE, [partial]).rows[-1].name == "sm-only"


def test_a_folder_that_is_not_a_report_is_named(tmp_path):
    with pytest.raises(InputError, match="no manifest.json") as raised:
        read_report(tmp_path)
    assert raised.value.path == str(tmp_path)
    _report(tmp_path / "built", "coco_cd", {})
    with pytest.raises(InputError, match="names no evaluation"):
        read_report(tmp_path / "built")


@pytest.mark.integration
def test_the_command_ranks_each_benchmark_and_writes_markdown(tmp_path):
    reports = tmp_path / "reports"
    a = _report(reports / "unet-r50", "eval/COCO-CD", _flip(0.6, 0.3))
    b = _report(reports / "unet-mit", "eval/COCO-CD", _flip(0.7, 0.1))
    c = _report(reports / "mine", "eval/cafe", _cafe({"SM": 0.5, "CC": 0.4, "OC": 0.1, "Overall": 0.4}))
    out = tmp_path / "leaderboard.md"
    done = run(tmp_path, "leaderboard", a, b, c, "--by", "Flip", "--out", str(out))
    # --by where a benchmark has the column, its headline elsewhere
    assert "COCO-CD: ranked by Flip" in done.output and "CAFE: ranked by cgF1" in done.output
    text = out.read_text()
    assert text.index("| 1 | unet-mit |") < text.index("| 2 | unet-r50 |")
    assert "| 2 | mine | 40.0 | 50.0 | 40.0 | 10.0 | 0.500 | 80.0 | evaluated |" in text
    assert "Published rows, leaderboard:" in text
    refused = run(tmp_path, "leaderboard", a, c, "--by", "top1", code=1)
    assert "has no column 'top1'" in str(refused.exception)
    unknown = _report(reports / "other", "eval/imagenet", {"top1": 0.8})
    failed = run(tmp_path, "leaderboard", a, unknown, code=1)
    assert "no leaderboard for eval/imagenet" in str(failed.exception)


def test_across_lays_models_out_by_a_key_with_kendalls_tau_between_rankings():
    # three models' LAC under two judges' vocabularies: judge b swaps the last two models
    areas = {("m1", "a"): 0.6, ("m2", "a"): 0.5, ("m3", "a"): 0.4, ("m1", "b"): 0.7, ("m2", "b"): 0.3, ("m3", "b"): 0.35}
    reports = [(f"{model}-{judge}", _lac(area), {"descriptions": f"{model}.json", "vocab": judge})
               for (model, judge), area in areas.items()]
    table = across(VOCAB, reports, "vocab")
    assert table.values == ["a", "b"] and table.models == ["m1.json", "m2.json", "m3.json"]
    assert table.cells[("m2.json", "b")] == pytest.approx(0.3) and table.metric == "LAC miou area"
    # concordant pairs (m1,m2), (m1,m3); discordant (m2,m3): τ = (2 - 1) / 3
    assert table.tau == [("a", "b", pytest.approx(1 / 3), 3)]
    with pytest.raises(InputError, match="records no 'coverage'") as raised:
        across(VOCAB, reports, "coverage")
    assert "descriptions, vocab" in raised.value.hint
    with pytest.raises(InputError, match="both score m1.json with vocab a"):
        across(VOCAB, [*reports, ("again", _lac(0.1), {"descriptions": "m1.json", "vocab": "a"})], "vocab")


@pytest.mark.integration
def test_the_command_lays_reports_out_across_a_key(tmp_path):
    reports = [_report(tmp_path / f"{model}-{coverage}", "eval/vocab", _lac(area),
                       {"descriptions": f"{model}.json", "coverage": coverage})
               for model, coverage, area in (("osprey", 0.2, 0.40), ("osprey", 1.0, 0.46), ("opal", 0.2, 0.42),
                                             ("opal", 1.0, 0.49))]
    out = tmp_path / "board.md"
    done = run(tmp_path, "leaderboard", *reports, "--across", "coverage", "--out", str(out))
    assert "LAC miou area across coverage" in done.output
    text = out.read_text()
    assert "| opal.json | 0.420 | 0.490 |" in text and "| 0.2 | 1.0 | 1.000 | 2 |" in text
