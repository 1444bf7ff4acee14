"""Reading a split: a ρ the build has not got is refused, naming the ones it has."""

from __future__ import annotations

import pytest

from segbench.core.errors import InputError
from segbench.core.io import write_json
from segbench.core.versioning import DatasetSource
from segbench.tasks.flip.inputs import read_split, split_relpath

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
