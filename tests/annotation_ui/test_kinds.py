"""Round kinds: each dataset registers its own, the generic round code finds them by name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from segbench import registry
from segbench.annotation_ui.kinds import RoundKind, allowed_labels, answer_checks, round_kind
from segbench.annotation_ui.label_configs import LabelConfig
from segbench.annotation_ui.rounds import new_round
from segbench.core.errors import InputError
from segbench.flows.cafe.rounds import VERIFICATION
from segbench.flows.coco_cd.rounds import CONTEXT_AUDIT
from segbench.flows.spin.review import REVIEW
from segbench.flows.spin.rounds import SUBPARTS
from segbench.flows.vocab.rounds import ADJUDICATION
from segbench.schemas.rounds import RoundConfig, RoundItem

ITEMS = [RoundItem(item_id="1", image="x/1.png", width=8, height=6)]


def test_each_dataset_registers_its_kinds():
    assert registry.round_kinds() == {"coco_cd_context_audit": CONTEXT_AUDIT, "cafe_verification": VERIFICATION,
                                      "spin_subparts": SUBPARTS, "spin_review": REVIEW,
                                      "vocab_adjudication": ADJUDICATION}
    assert round_kind("spin_subparts") is SUBPARTS


def test_unknown_kind_names_itself_and_the_known_ones():
    with pytest.raises(InputError, match="unknown round kind 'mystery'") as caught:
        round_kind("mystery")
    assert all(name in str(caught.value) for name in ("coco_cd_context_audit", "cafe_verification", "spin_subparts"))


def test_answer_checks_follow_the_kind():
    audit = new_round("a", CONTEXT_AUDIT.name, "coco_cd", "v", RoundConfig(label_config="coco_cd_context"), ITEMS,
                      "files", "t")
    assert allowed_labels(audit) == {"context": {"indoor", "outdoor", "ambiguous"}}
    assert answer_checks(audit)["check_polygons"] is True
    config = RoundConfig(label_config="spin_subparts", params={"object": "dog", "part": "head", "subparts": ["Eye"]})
    spin = new_round("s", SUBPARTS.name, "spin", "v", config, ITEMS, "files", "t")
    assert answer_checks(spin) == {"allowed": {"part_visible": {"yes", "no"}, "has_eye": {"yes", "no"},
                                               "polygons": {"Eye"}}, "check_polygons": False}


def test_a_kind_without_report_writes_nothing(tmp_path):
    kind = RoundKind("plain", LabelConfig("coco_cd_context"))
    assert kind.write_reports(None, [], tmp_path) == {}


def test_kind_modules_load_without_prefect():
    """The registry loads every kind for a lookup; that must not cost a Prefect import."""
    code = ("import sys; from segbench import registry; registry.round_kinds(); "
            "print(sorted(m for m in sys.modules if m == 'prefect' or m.startswith('segbench.flows.')))")
    src = Path(__file__).resolve().parents[2] / "src"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(src), "PATH": ""}).stdout
    assert "'prefect'" not in out and "segbench.flows.spin.rounds" in out
