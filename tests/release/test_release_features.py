"""A release's column types and Croissant are written without datasets or mlcroissant: both agree."""

from __future__ import annotations

import datasets
import pytest

from segbench.core.release import features as ours
from segbench.core.release.croissant import _canonical

pytestmark = pytest.mark.unit


def _every_kind(lib) -> dict:
    """One feature of every kind a release uses, nested the ways releases nest them."""
    return {
        "id": lib.Value("int64"), "score": lib.Value("float32"), "flag": lib.Value("bool"), "small": lib.Value("int8"),
        "name": lib.Value("string"), "label": lib.ClassLabel(names=["cat", "dog"]), "image": lib.Image(),
        "box": lib.List(lib.Value("float32")), "grid": lib.List(lib.List(lib.Value("int32"))),
        "rle": {"size": lib.List(lib.Value("int32")), "counts": lib.Value("string")},
        "annotations": lib.List({"id": lib.Value("int64"), "level": lib.ClassLabel(names=["whole", "part"]),
                                 "rle": {"size": lib.List(lib.Value("int32")), "counts": lib.Value("string")},
                                 "mask": lib.Image()}),
    }


def test_the_schema_its_metadata_and_the_cards_yaml_are_datasets_own():
    mine, theirs = ours.Features(_every_kind(ours)), datasets.Features(_every_kind(datasets))
    assert mine.to_dict() == theirs.to_dict()
    assert mine.arrow_schema.equals(theirs.arrow_schema, check_metadata=True)
    assert mine.to_yaml_list() == theirs._to_yaml_list()
    assert datasets.Features.from_dict(mine.to_dict()) == theirs


def test_an_unknown_type_is_refused_by_name():
    with pytest.raises(ValueError, match="'int63'"):
        ours.Value("int63")
    with pytest.raises(TypeError, match="not a release feature"):
        ours.Features({"x": 3}).arrow_schema  # noqa: B018


def test_a_croissant_node_is_written_as_mlcroissant_writes_it():
    node = {"name": "n", "@type": "cr:Field", "zeta": ["one"], "alpha": [], "field": [{"b": 1, "a": None}],
            "flag": False, "description": "", "subField": [{"@id": "x"}], "extract": {"column": "c"}}
    assert list(_canonical(node).items()) == [
        ("@type", "cr:Field"), ("name", "n"), ("flag", False), ("zeta", "one"), ("field", [{"b": 1}]),
        ("subField", {"@id": "x"}), ("extract", {"column": "c"})]
