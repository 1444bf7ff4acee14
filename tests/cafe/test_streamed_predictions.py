"""A predictions file is read in batches as it is parsed: the same index as the whole file, the same errors."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt

from segbench.core.errors import InputError
from segbench.core.io import NotAStreamedList, json_list_batches
from segbench.tasks.cafe import cgf1_inputs
from segbench.tasks.cafe.cgf1_inputs import load_ground_truth, load_predictions, read_predictions

pytestmark = pytest.mark.unit


def _predictions(extra_image: int | None = None) -> list[dict]:
    """The hand predictions twice over (so every image has predictions in several batches), and one for
    an image the ground truth lacks."""
    preds = copy.deepcopy(HAND_PREDS) + [{**p, "score": p["score"] / 2} for p in copy.deepcopy(HAND_PREDS)]
    if extra_image is not None:
        preds.insert(3, {**preds[0], "image_id": extra_image})
    return preds


@pytest.fixture
def truth():
    return load_ground_truth(cafe_gt(HAND_PAIRS), "gt.json")


def _same(a, b) -> None:
    assert a.by_image == b.by_image and list(a.by_image) == list(b.by_image)  # the same images in the same order
    assert np.array_equal(a.score, b.score) and np.array_equal(a.category_id, b.category_id)
    assert a.rles == b.rles and a.ignored == b.ignored


@pytest.mark.parametrize("batch", [1, 2, 3, 1000])
def test_batches_of_any_size_index_the_file_as_a_whole_reading_does(tmp_path, monkeypatch, truth, batch):
    monkeypatch.setattr(cgf1_inputs, "PREDICTIONS_BATCH", batch)
    preds = _predictions(extra_image=99)
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(preds))
    streamed = read_predictions(path, truth)
    _same(streamed, load_predictions(preds, str(path), truth))
    assert streamed.ignored == {99: 1} and len(streamed) == len(preds) - 1


def test_a_broken_prediction_in_a_later_batch_is_named_by_its_place_in_the_file(tmp_path, monkeypatch, truth):
    monkeypatch.setattr(cgf1_inputs, "PREDICTIONS_BATCH", 2)
    preds = _predictions()
    preds[5]["score"] = "high"
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(preds))
    with pytest.raises(InputError, match="score 'high' is not a finite number") as caught:
        read_predictions(path, truth)
    assert caught.value.item == "prediction 5"


@pytest.mark.parametrize(("content", "message"), [
    (b'{"annotations": []}', "predictions must be a JSON list of results, got dict"),
    (b"[{\"image_id\": 1}, ", "not valid JSON"),
    (b"[1, 2] and more", "not valid JSON"),
    (b"[NaN]", "a NaN or Infinity"),
    (b"", "not valid JSON"),
])
def test_a_file_that_does_not_stream_as_a_list_is_read_whole_and_named(tmp_path, monkeypatch, truth, content,
                                                                        message):
    monkeypatch.setattr(cgf1_inputs, "PREDICTIONS_BATCH", 1)
    path = tmp_path / "preds.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as caught:
        read_predictions(path, truth)
    assert caught.value.path == str(path)


def test_a_byte_order_mark_is_read_past(tmp_path, truth):
    path = tmp_path / "preds.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(HAND_PREDS).encode())
    _same(read_predictions(path, truth), load_predictions(copy.deepcopy(HAND_PREDS), str(path), truth))


def test_batches_carry_the_index_of_their_first_item(tmp_path):
    path = tmp_path / "list.json"
    path.write_text(json.dumps([{"a": i} for i in range(5)]))
    assert list(json_list_batches(path, 2)) == [(0, [{"a": 0}, {"a": 1}]), (2, [{"a": 2}, {"a": 3}]), (4, [{"a": 4}])]
    path.write_text("  []")
    assert list(json_list_batches(path, 2)) == [(0, [])]
    path.write_text('{"a": [1]}')
    with pytest.raises(NotAStreamedList):
        list(json_list_batches(path, 2))


def test_a_missing_predictions_file_is_named(tmp_path, truth):
    with pytest.raises(InputError, match="preds.json") as caught:
        read_predictions(tmp_path / "preds.json", truth)
    assert caught.value.path == str(tmp_path / "preds.json")
