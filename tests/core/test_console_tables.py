"""Tables: numbers right-aligned, text left, so a column of names reads as a list."""

from __future__ import annotations

import pytest

from segbench import console

pytestmark = pytest.mark.unit


def test_text_columns_are_left_aligned_and_number_columns_right_aligned():
    t = console.table("Rounds", ["key", "kind", "items", "share"],
                      [["a", "coco_cd_context_audit", 24, 0.5], ["bb", "spin", 3, None]])
    assert [column.justify for column in t.columns] == ["left", "left", "right", "right"]
    mixed = console.table("T", ["name", "value"], [["x", 1], ["y", "twelve"]])
    assert [column.justify for column in mixed.columns] == ["left", "left"]
