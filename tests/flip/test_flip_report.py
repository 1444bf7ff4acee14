"""The COCO-CD report: files written, key numbers in the Markdown, PNGs that open."""

from __future__ import annotations

import json

from PIL import Image
from support.flip_summaries import flip_summary

from segbench.tasks.flip.report import render_markdown, write_report

EVALUATED = {
    "source": "/repo",
    "rev": "v1",
    "rho": 0.95,
    "split": "test",
    "split_file": "data/coco_cd/splits/rho_0.95/test.json",
    "predictions": "/preds/baseline",
}


def test_write_report_writes_all_files_with_key_numbers(tmp_path):
    summary = flip_summary(with_probs=True)
    paths = write_report(tmp_path / "run", summary, EVALUATED)
    assert set(paths) == {"metrics", "report", "per_group_iou", "flip_by_risk_decile"}
    assert all(p.is_file() and p.parent == tmp_path / "run" for p in paths.values())

    metrics = json.loads(paths["metrics"].read_text())
    assert metrics["evaluated"]["rev"] == "v1"
    assert metrics["metrics"]["fg_decomposition"]["flip"] == 0.25
    assert metrics["metrics"]["num_images"] == 12

    text = paths["report"].read_text()
    for expected in (
        "v1",
        "0.95",
        "/preds/baseline",
        "rho_0.95/test.json",
        "**images**: 12",
        "0.7000",  # background IoU
        "0.3333",  # cat IoU
        "0.4000",  # dog IoU
        "0.6667",  # Fg-IoU
        "| 0.5000 | 0.2500 | 0.2500 | 0.2500 | 0.2500 |",  # FG-Corr/Flip/Miss, flip global/mean
        "cat outdoors (counterfactual)",
        "Top-decile share of all flips: 0.1667",  # equal flips: the top decile (2 of 12) holds 1/6
    ):
        assert expected in text, expected
    for name in ("per_group_iou", "flip_by_risk_decile"):
        with Image.open(paths[name]) as image:
            image.load()
            assert image.format == "PNG" and image.size[0] > 100


def test_report_without_probabilities_says_risk_is_unavailable(tmp_path):
    summary = flip_summary(with_probs=False)
    text = render_markdown(summary, EVALUATED)
    assert "Flip-risk unavailable" in text and "12 of 12" in text
    paths = write_report(tmp_path, summary, EVALUATED)
    with Image.open(paths["flip_by_risk_decile"]) as image:
        image.load()
    assert json.loads(paths["metrics"].read_text())["metrics"]["flip_risk"] is None


def test_report_is_byte_identical_across_runs(tmp_path):
    summary = flip_summary(with_probs=True)
    first = write_report(tmp_path / "a", summary, EVALUATED)
    second = write_report(tmp_path / "b", summary, EVALUATED)
    for name in first:
        assert first[name].read_bytes() == second[name].read_bytes(), name
