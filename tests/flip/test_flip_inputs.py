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
