"""Odd files and environments: pipes, devices, oversized and deeply nested files, array headers that lie,
numbers JSON cannot hold, and a ``PREFECT_API_URL`` that is no URL or answers nothing.

Each is refused before it is opened or allocated, as a clean failure naming the file and the fix;
nothing blocks, nothing reads for ever.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt
from support.flip_eval_data import write_flip_dataset, write_label_predictions
from support.hostile import assert_clean_failure, run_console, run_main

from segbench.annotation_ui.crowd_files import read_results
from segbench.core.coco_typed import read_coco, valid_annotations
from segbench.core.errors import ImportPolicy, InputError, OnError
from segbench.core.io import check_input_file, read_json

pytestmark = pytest.mark.integration


@pytest.fixture
def cgf1_files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "data").mkdir()
    gt, preds = tmp_path / "gt.json", tmp_path / "preds.json"
    gt.write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    preds.write_text(json.dumps(HAND_PREDS))
    return gt, preds


def _cgf1(project: Path, gt: Path, preds: Path) -> list[str]:
    return ["evaluate", "cgf1", "--gt", str(gt), "--predictions", str(preds), "--out", str(project / "out")]


def test_a_fifo_is_refused_before_it_is_opened(tmp_path, cgf1_files):
    gt, _ = cgf1_files
    fifo = tmp_path / "preds-fifo.json"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    outcome = run_main(tmp_path, *_cgf1(tmp_path, gt, fifo))
    assert_clean_failure(outcome, str(fifo), "FIFO")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("how", ["device", "symlink to a device"])
def test_dev_zero_is_refused_rather_than_read_for_ever(tmp_path, cgf1_files, how):
    gt, _ = cgf1_files
    target = Path("/dev/zero")
    if how == "symlink to a device":
        target = tmp_path / "preds.json.link"
        target.symlink_to("/dev/zero")
    assert_clean_failure(run_main(tmp_path, *_cgf1(tmp_path, gt, target)), str(target), "character device")


def test_a_fifo_among_crowd_results_is_named(tmp_path):
    fifo = tmp_path / "batch.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO") as caught:
        read_results(fifo)
    assert str(fifo) in str(caught.value)


def test_a_file_over_the_input_limit_is_refused_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "big.json"
    big.write_text(json.dumps(list(range(2000))))
    monkeypatch.setenv("SEGBENCH_MAX_INPUT_MB", "0.001")
    with pytest.raises(InputError, match="SEGBENCH_MAX_INPUT_MB") as caught:
        read_json(big)
    assert str(big) in str(caught.value)
    monkeypatch.setenv("SEGBENCH_MAX_INPUT_MB", "lots")
    with pytest.raises(InputError, match="not a positive number"):
        check_input_file(big)


def _lying_npz(path: Path, shape: tuple[int, ...]) -> None:
    """An .npz whose probs.npy header claims ``shape`` but holds no data: reading it would allocate it all."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("probs.npy", b"\x93NUMPY\x01\x00" + header.getvalue()[8:])


def test_an_npz_header_claiming_a_huge_array_is_refused_before_allocating(tmp_path):
    write_flip_dataset(tmp_path / "data" / "coco_cd")
    preds = write_label_predictions(tmp_path / "preds")
    first = sorted(preds.glob("*.png"))[0]
    first.unlink()
    lying = first.with_suffix(".npz")
    _lying_npz(lying, (3, 100_000, 100_000))  # 112 GiB of float32
    outcome = run_main(tmp_path, "evaluate", "coco-cd", "--predictions", str(preds), "--repo", str(tmp_path))
    assert_clean_failure(outcome, lying.name, "(3, 100000, 100000)")


def test_json_nested_too_deep_is_an_input_error(tmp_path):
    path = tmp_path / "instances.json"
    path.write_bytes(b'{"images": [], "annotations": [' + b"[" * 5000 + b"]" * 5000 + b'], "categories": []}')
    with pytest.raises(InputError, match="nested too deeply"):
        read_coco(path)
    path.write_bytes(b"[" * 5000 + b"]" * 5000)
    with pytest.raises(InputError, match="not valid JSON"):
        read_json(path)


def test_an_area_json_cannot_hold_is_named_as_the_area(tmp_path):
    path = tmp_path / "instances.json"
    path.write_text('{"images": [{"id": 1, "width": 4, "height": 4, "file_name": "a.jpg"}], "categories": '
                    '[{"id": 1, "name": "cat"}], "annotations": [{"id": 7, "image_id": 1, "category_id": 1, '
                    '"area": 1e999, "bbox": [0, 0, 1, 1], "segmentation": [[0, 0, 1, 0, 1, 1]], "iscrowd": 0}]}')
    raw = read_coco(path)
    policy = ImportPolicy(OnError.SKIP)
    assert list(valid_annotations(raw, path, policy, images={1}, categories={1})) == []
    assert len(policy.report) == 1 and "area" in json.dumps(policy.report.to_json()["items"][0])


def test_a_config_nested_too_deep_is_a_clean_failure(tmp_path):
    config = tmp_path / "segbench.toml"
    config.write_text("a = " + "[" * 50_000 + "]" * 50_000 + "\n")
    outcome = run_main(tmp_path, "rounds", "list", root_args=["--config", str(config)])
    assert_clean_failure(outcome, str(config), "nested too deeply")


@pytest.mark.parametrize(("url", "expected"), [("garbage", "is not an http(s) URL"),
                                               ("http://127.0.0.1:9/api", "does not answer")])
def test_a_bad_prefect_api_url_is_named_not_a_traceback(tmp_path, cgf1_files, monkeypatch, url, expected):
    gt, preds = cgf1_files
    monkeypatch.setenv("PREFECT_API_URL", url)
    outcome = run_console(tmp_path, *_cgf1(tmp_path, gt, preds), "--track")
    assert_clean_failure(outcome, "PREFECT_API_URL", expected)


def test_a_results_csv_with_a_column_twice_names_both(tmp_path):
    path = tmp_path / "batch.csv"
    path.write_text("WorkerId,AssignmentId,Input.item_id,Answer.context,WorkerId\nW1,A1,1,indoor,\n")
    with pytest.raises(InputError, match=r"'WorkerId' appears twice \(columns 1 and 5\)"):
        read_results(path)


def _edited_gt(edit) -> dict:
    gt = cafe_gt(HAND_PAIRS)
    edit(gt)
    return gt


GROUND_TRUTH_CASES = {
    "an image id twice": (lambda g: g["images"].append(dict(g["images"][0])), ["image id 1 appears twice"]),
    "an annotation id twice": (lambda g: g["annotations"].append(dict(g["annotations"][0], image_id=2)),
                               ["annotation id 1 appears twice"]),
    "iscrowd 2": (lambda g: g["annotations"][0].update(iscrowd=2), ["annotation 1", "iscrowd is 2, not 0 or 1"]),
    "is_instance_exhaustive 'yes'": (lambda g: g["images"][0].update(is_instance_exhaustive="yes"),
                                     ["image 1", "is_instance_exhaustive is 'yes'"]),
}


@pytest.mark.parametrize("case", sorted(GROUND_TRUTH_CASES))
def test_ground_truth_that_pycocotools_would_misread_is_refused(tmp_path, cgf1_files, case):
    """pycocotools keeps the last of two entries with one id and reads any non-zero flag as true;
    the evaluation names the entry instead of scoring a silently different file."""
    _, preds = cgf1_files
    edit, names = GROUND_TRUTH_CASES[case]
    gt = tmp_path / "edited-gt.json"
    gt.write_text(json.dumps(_edited_gt(edit)))
    outcome = run_main(tmp_path, *_cgf1(tmp_path, gt, preds))
    assert_clean_failure(outcome, str(gt), *names)
    assert not (tmp_path / "out").exists()


PREDICTION_FILE_CASES = {
    "gzip": (lambda text: __import__("gzip").compress(text.encode()), "a gzip-compressed file", "gunzip"),
    "UTF-16": (lambda text: text.encode("utf-16"), "UTF-16 text", "iconv -f utf-16"),
    "a NaN score": (lambda text: text.replace('"score": 0.9', '"score": NaN', 1).encode(), "NaN or Infinity at line 1",
                    "write null"),
}


@pytest.mark.parametrize("case", sorted(PREDICTION_FILE_CASES))
def test_a_predictions_file_in_another_format_is_named_for_what_it_is(tmp_path, cgf1_files, case):
    gt, preds = cgf1_files
    encode, what, fix = PREDICTION_FILE_CASES[case]
    preds.write_bytes(encode(preds.read_text()))
    outcome = run_main(tmp_path, *_cgf1(tmp_path, gt, preds))
    assert_clean_failure(outcome, str(preds), what, fix)
