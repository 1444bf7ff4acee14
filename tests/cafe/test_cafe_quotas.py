"""CAFE quotas as verified counts: the paper's quotas dealt into cells, the measured share, the
candidates a batch asks for, and the target-against-achieved table (hand-computed cases)."""

from __future__ import annotations

from collections import Counter

import pytest

from segbench.core.splits import apportion
from segbench.schemas.cafe import PAPER_EDIT_MIX
from segbench.schemas.edits import EditType
from segbench.tasks.cafe import quotas

pytestmark = pytest.mark.unit
SM, CC, OC = EditType


def test_the_papers_quotas_deal_into_cells_that_keep_both_of_its_totals():
    # coco 1239 × (1111, 593, 442) / 2146 = 641.43, 342.39, 255.19 → 642 / 342 / 255;
    # saco 513 → 265.59, 141.75, 105.66 → 265 / 142 / 106; lvis 394 → 203.97, 108.88, 81.15 → 204 / 109 / 81.
    cells = quotas.cell_targets({"coco": 1239, "saco": 513, "lvis": 394}, PAPER_EDIT_MIX)
    assert cells[("coco", SM)] == 642 and cells[("coco", CC)] == 342 and cells[("coco", OC)] == 255
    assert (cells[("saco", SM)], cells[("saco", CC)], cells[("saco", OC)]) == (265, 142, 106)
    assert (cells[("lvis", SM)], cells[("lvis", CC)], cells[("lvis", OC)]) == (204, 109, 81)
    per_type = Counter()
    for (_, edit), n in cells.items():
        per_type[edit] += n
    assert per_type == {SM: 1111, CC: 593, OC: 442}  # the paper's edit-type counts


def test_apportion_breaks_ties_towards_the_earlier_key_and_gives_nothing_to_a_zero_weight():
    assert apportion(7, {SM: 1, CC: 1, OC: 1}) == {SM: 3, CC: 2, OC: 2}
    assert apportion(3, {SM: 1, CC: 0, OC: 1}) == {SM: 2, CC: 0, OC: 1}
    assert apportion(0, {SM: 1}) == {SM: 0}


def test_the_share_is_laplaces_rule_over_answered_items_and_the_expected_share_before_any():
    cells = [("coco", SM), ("coco", CC), ("lvis", OC)]
    shares = quotas.acceptance({("coco", SM): 8, ("coco", CC): 3}, {("coco", SM): 6}, cells, expected=0.9)
    assert shares == {("coco", SM): 7 / 10, ("coco", CC): 1 / 5, ("lvis", OC): 0.9}


def test_a_batch_asks_for_the_shortfall_over_the_share():
    targets = {("coco", SM): 10, ("coco", CC): 4, ("coco", OC): 5}
    wanted = quotas.candidates_wanted(targets, {("coco", SM): 6, ("coco", CC): 5},
                                      {("coco", SM): 0.7, ("coco", CC): 0.5, ("coco", OC): 1.0})
    # SM: 4 short / 0.7 = 5.71 → 6; CC: already over its target → 0; OC: 5 / 1.0 = exactly 5.
    assert wanted == {("coco", SM): 6, ("coco", CC): 0, ("coco", OC): 5}


def test_the_table_of_target_against_achieved():
    rows = quotas.target_rows({("coco", SM): 3, ("coco", OC): 2}, {("coco", SM): 5, ("lvis", CC): 2},
                              {("coco", SM): 4, ("lvis", CC): 1}, {("coco", SM): 3, ("lvis", CC): 1})
    assert [(r.source, r.edit_type, r.target, r.asked, r.verified, r.exported, r.short) for r in rows] == [
        ("coco", "SM", 3, 5, 4, 3, 0), ("coco", "OC", 2, 0, 0, 0, 2), ("lvis", "CC", None, 2, 1, 1, 0)]
    markdown = quotas.targets_markdown(rows, rounds=["v1", "v2"])
    assert "Rounds: v1, v2." in markdown and "| lvis | CC | — | 2 | 1 | 1 | 0 |" in markdown
    assert markdown.rstrip().endswith("| **all** | | 5 | 7 | 5 | 4 | 2 |")
