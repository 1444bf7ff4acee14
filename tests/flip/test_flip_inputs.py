"""Reading a split: a ρ the build has not got is refused, naming the ones it has; the typed reader
refuses an entry that is not what a build writes, naming the field and the image."""

from __future__ import annotations

import pytest

from segbench.core.errors import AnnotationError, InputError
from segbench.core.io import write_json
from segbench.core.versioning import DatasetSource
from segbench.tasks.flip.inputs import read_images, read_split, split_relpath

pytestmark = pytest.mark.unit


def test_a_split_not_built_names_the_built_rhos(tmp_path):
    for rho in ("0.5", "0.95"):
        write_json(tmp_path / "data" / "coco_cd" / "splits" / f"rho_{rho}" / "test.json",
                   {"images": [{"id": 1, "group_id": 0, "mask_file": "masks/1.png"}]})
    source = DatasetSource(tmp_path)
    assert [image["id"] for image in read_split(source, split_relpath("data/coco_cd", 0.95, "test"))] == [1]
    with pytest.raises(InputError, match="no such split") as error:
        read_split(source, split_relpath("data/coco_cd", 0.9, "test"))
    assert "rho_0.9/test.json" in str(error.value) and "ρ = 0.5, 0.95" in str(error.value)
    with pytest.raises(InputError, match="build the dataset first"):
        read_split(source, split_relpath("data/waterbirds_seg", 0.9, "test"))


def test_the_typed_reader_gives_models_and_names_a_missing_field(tmp_path):
    image = {"id": 3, "file_name": "a.jpg", "width": 4, "height": 4, "group_id": 1, "class": "cat",
             "context": "outdoor", "mask_file": "masks/3.png", "coco_url": "http://x"}
    write_json(tmp_path / "val.json", {"images": [image, {**image, "id": 2, "class": None}]})
    with pytest.raises(AnnotationError, match="class: Input should be a valid string") as error:
        read_images(DatasetSource(tmp_path), "val.json")
    assert "image 2" in str(error.value)
    write_json(tmp_path / "val.json", {"images": [image]})
    [read] = read_images(DatasetSource(tmp_path), "val.json")
    assert (read.id, read.class_, read.context, read.image_file) == (3, "cat", "outdoor", None)
    assert read.model_extra == {"coco_url": "http://x"}  # the source's own keys are kept


def test_evaluate_at_a_rho_not_built_names_the_built_ones_on_the_command_line(tmp_path):
    from support.cli import run
    from support.flip_eval_data import write_flip_dataset, write_label_predictions

    write_flip_dataset(tmp_path / "data" / "coco_cd", rhos=("rho_0.5", "rho_0.95"))
    predictions = write_label_predictions(tmp_path / "predictions")
    failed = run(tmp_path, "evaluate", "coco-cd", "--repo", str(tmp_path), "--rho", "0.9",
                 "--predictions", str(predictions), code=1)
    message = str(failed.exception)
    assert "rho_0.9/test.json: no such split in this build" in message
    assert "this build has ρ = 0.5, 0.95: pass one of them as --rho" in message
