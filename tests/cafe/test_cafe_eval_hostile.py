"""Hostile evaluation inputs: corrupt compressed RLEs (pycocotools would loop in ``rleIou`` holding the
GIL) and ground-truth annotations of images that are not in ``images`` (silently dropped before)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, TARGET, cafe_gt, pred
from support.cli import run
from support.hostile import assert_clean_failure, run_main

from segbench.core.errors import InputError, SegbenchError
from segbench.core.masks import bitmap_to_rle, rle_runs
from segbench.tasks.cafe.cgf1_inputs import load_ground_truth
from segbench.tasks.cafe.rle_checks import (
    COMPILED_FROM_MASKS,
    check_compressed_counts,
    compressed_rle_problem,
    corrupt_compressed_rles,
)
from segbench.tasks.cafe.rle_kernels import corrupt_counts

CORRUPT = {"size": [10, 10], "counts": "0" + "O" * 40}


def _write(tmp_path, gt: dict, preds: list) -> tuple[str, str]:
    gt_path, preds_path = tmp_path / "CAFE.json", tmp_path / "preds.json"
    gt_path.write_text(json.dumps(gt))
    preds_path.write_text(json.dumps(preds))
    return str(gt_path), str(preds_path)


@pytest.mark.usefixtures("prefect_harness")
def test_corrupt_prediction_rle_exits_2_through_the_console_entry(tmp_path):
    gt, preds = _write(tmp_path, cafe_gt(HAND_PAIRS), [pred(1, CORRUPT, 0.9), *HAND_PREDS])
    proc = subprocess.run([sys.executable, "-m", "segbench", "--data-root", str(tmp_path / "data"),
                           "--work-dir", str(tmp_path / "work"), "evaluate", "cafe", "--gt", gt,
                           "--predictions", preds, "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "preds.json" in proc.stderr and "prediction 0" in proc.stderr and "corrupt compressed RLE" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "out" / "metrics.json").exists()


@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("command", ["cafe", "cgf1"])
def test_corrupt_ground_truth_rle_is_a_typed_error(tmp_path, command):
    gt = cafe_gt(HAND_PAIRS)
    gt["annotations"][2]["segmentation"] = CORRUPT
    gt_path, preds = _write(tmp_path, gt, HAND_PREDS)
    result = run(tmp_path, "evaluate", command, "--gt", gt_path, "--predictions", preds,
                 "--out", str(tmp_path / "out"), code=1)
    assert isinstance(result.exception, InputError), repr(result.exception)
    assert result.exception.path == gt_path and result.exception.item == "annotation 3"


@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("command", ["cafe", "cgf1"])
def test_annotation_of_an_unknown_image_is_a_typed_error(tmp_path, command):
    gt = cafe_gt(HAND_PAIRS)
    gt["annotations"][0]["image_id"] = 999  # pair 1's positive would be scored as a negative
    gt_path, preds = _write(tmp_path, gt, HAND_PREDS)
    result = run(tmp_path, "evaluate", command, "--gt", gt_path, "--predictions", preds,
                 "--out", str(tmp_path / "out"), code=1)
    assert isinstance(result.exception, SegbenchError), repr(result.exception)
    assert result.exception.path == gt_path and result.exception.item == "annotation 1"
    assert "999" in result.exception.message and not (tmp_path / "out" / "metrics.json").exists()


def test_unknown_image_check_runs_when_loading():
    gt = cafe_gt({1: "SM"})
    gt["annotations"][0]["image_id"] = 7
    with pytest.raises(InputError, match="image 7"):
        load_ground_truth(gt, "gt.json")


@pytest.mark.parametrize("counts", [b"0" + b"O" * 40, b"", b"o" * 9, b"4", b"a", b"\x7f", b"0PPPPPPPP0"])
def test_corrupt_counts_are_named(counts):
    assert compressed_rle_problem(counts, 5) is not None


def test_valid_encodings_pass_and_agree_with_the_builders_decoder():
    rng = np.random.default_rng(0)
    for k in range(200):
        h, w = (int(v) for v in rng.integers(1, 120, 2))
        mask = (rng.random((h, w)) < rng.random()).astype(np.uint8)
        counts = bitmap_to_rle(mask)["counts"]
        assert compressed_rle_problem(counts.encode(), h * w) is None, k
        assert compressed_rle_problem(counts.encode(), h * w + 1) is not None
    assert compressed_rle_problem(TARGET["counts"].encode(), 100) is None


def test_random_strings_are_judged_like_rle_runs_one_by_one_all_at_once_and_compiled():
    rng = np.random.default_rng(1)
    alphabet = np.frombuffer(bytes(range(40, 115)), dtype=np.uint8)  # a few characters outside '0'..'o'
    strings, pixels, expected = [], [], []
    for _ in range(3000):
        counts = bytes(rng.choice(alphabet, int(rng.integers(0, 12))).tolist())
        try:
            total = int(rle_runs(counts).sum()) if counts else None
        except ValueError:
            total = None
        size = total if total is not None and total > 0 and rng.random() < 0.8 else 12
        strings.append(counts)
        pixels.append(size)
        expected.append(total == size and max(map(len, _numbers(counts)), default=0) <= 7)
        assert (compressed_rle_problem(counts, size) is None) == expected[-1], counts
    for judge in (corrupt_compressed_rles, corrupt_counts):
        assert (~judge(strings, np.asarray(pixels))).tolist() == expected, judge.__name__
    assert 0 < sum(expected) < len(expected)


@pytest.mark.parametrize("masks", [50, COMPILED_FROM_MASKS + 50])
def test_the_first_corrupt_string_is_named_by_either_pass(masks):
    """Below and above the size where the compiled pass takes over, the same item and reason."""
    counts = [b"0T3"] * masks  # a full 10 x 10 mask: 0 background, then 100 foreground
    counts[masks - 20], counts[masks - 10] = b"0" + b"O" * 40, b"0T4"
    with pytest.raises(InputError) as raised:
        check_compressed_counts(counts, np.full(masks, 100), "preds.json", lambda k: f"prediction {k}")
    assert raised.value.item == f"prediction {masks - 20}"
    assert raised.value.message == f"corrupt compressed RLE counts: {compressed_rle_problem(b'0' + b'O' * 40, 100)}"


def _numbers(counts: bytes) -> list[bytes]:
    """The characters of each run (a run ends at a character without the continuation bit 0x20)."""
    out, current = [], b""
    for c in counts:
        current += bytes([c])
        if not (c - 48) & 0x20:
            out.append(current)
            current = b""
    return out


@pytest.mark.parametrize("command", ["cafe", "cgf1"])
@pytest.mark.parametrize("threshold", ["nan", "inf", "-1", "1.5"])
def test_a_score_threshold_outside_0_1_is_refused_before_any_work(tmp_path, command, threshold):
    gt, preds = _write(tmp_path, cafe_gt(HAND_PAIRS), HAND_PREDS)
    outcome = run_main(tmp_path, "evaluate", command, "--gt", gt, "--predictions", preds, "--out",
                       str(tmp_path / "out"), "--score-threshold", threshold)
    assert_clean_failure(outcome, "score_threshold" if command == "cafe" else "--score-threshold", fix=False)
    assert not (tmp_path / "out").exists()
