"""Worker ids and other crowd text are anyone's text: in the CSV uploaded to MTurk they stay text,
not spreadsheet formulas, and in a Markdown report they cannot forge rows or open HTML tags."""

from __future__ import annotations

import csv
import io
import re

import pytest

from segbench.annotation_ui.gold import mturk_qualification_csv
from segbench.core.reports import markdown_table

pytestmark = pytest.mark.unit

FORMULAS = ['=HYPERLINK("http://x","click")', "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3"]


def test_formula_worker_ids_stay_text_in_the_qualification_upload():
    winners = [{"worker": f"worker:{w}", "gold_accuracy": 1.0} for w in [*FORMULAS, "A1B2C3"]]
    rows = list(csv.reader(io.StringIO(mturk_qualification_csv("q1", winners))))[1:]
    assert [row[0] for row in rows] == [f"'{w}" for w in FORMULAS] + ["A1B2C3"]


def test_a_worker_id_cannot_forge_rows_or_tags_in_a_markdown_table():
    table = markdown_table(["worker", "answers"], [["w1\n| forged | 99 |", 3], ["<img src=x onerror=alert(1)>|x", 1]])
    lines = table.splitlines()
    assert len(lines) == 4 and all(len(re.findall(r"(?<!\\)\|", line)) == 3 for line in lines)  # two cells a row
    assert "<img" not in table and "&lt;img" in table
