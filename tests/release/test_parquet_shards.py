"""The sharded parquet writer: names, limits, streaming and byte-identical output."""

from __future__ import annotations

import random

import pyarrow.parquet as pq
import pytest
from datasets import Features, Image, Value

from segbench.core.errors import OutputError
from segbench.core.io import sha256_tree
from segbench.core.release.parquet import write_split

FEATURES = Features({"id": Value("int64"), "image": Image(), "name": Value("string")})


def _rows(n: int, size: int = 1000):
    for i in range(n):  # random bytes: they do not compress, as image bytes do not
        yield {"id": i, "image": {"bytes": random.Random(i).randbytes(size), "path": f"{i}.png"}, "name": f"row {i}"}


def test_a_split_over_the_limit_is_cut_into_numbered_shards_that_keep_every_row_in_order(tmp_path):
    shards = write_split(tmp_path, "rho_0.5", "train", FEATURES.arrow_schema, _rows(3000, 2000),
                         max_shard_bytes=1_500_000)
    names = [shard.path for shard in shards]
    assert len(names) > 1
    assert names == [f"data/rho_0.5/train-{i:05d}-of-{len(names):05d}.parquet" for i in range(len(names))]
    ids = [row for shard in shards for row in pq.read_table(tmp_path / shard.path).column("id").to_pylist()]
    assert ids == list(range(3000)) and sum(shard.rows for shard in shards) == 3000
    assert all(shard.size <= 1_500_000 for shard in shards)
    assert not list(tmp_path.rglob("*.partial"))


def test_the_same_rows_give_the_same_bytes(tmp_path):
    for name in ("a", "b"):
        write_split(tmp_path / name, "default", "test", FEATURES.arrow_schema, _rows(50))
    assert sha256_tree(tmp_path / "a") == sha256_tree(tmp_path / "b")


def test_the_schema_tells_datasets_which_columns_are_images(tmp_path):
    shard, = write_split(tmp_path, "default", "test", FEATURES.arrow_schema, _rows(3))
    schema = pq.read_schema(tmp_path / shard.path)
    assert Features.from_arrow_schema(schema) == FEATURES


def test_an_empty_split_is_one_shard_with_no_rows(tmp_path):
    shard, = write_split(tmp_path, "default", "test", FEATURES.arrow_schema, iter(()))
    assert shard.path.endswith("test-00000-of-00001.parquet") and pq.read_table(tmp_path / shard.path).num_rows == 0


def test_an_unwritable_folder_is_an_output_error_naming_it(tmp_path):
    (tmp_path / "data").write_text("a file where the folder goes")
    with pytest.raises(OutputError, match="data/default"):
        write_split(tmp_path, "default", "test", FEATURES.arrow_schema, _rows(3))
