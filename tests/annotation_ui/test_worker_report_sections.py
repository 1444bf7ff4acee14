"""The worker report's screened sections: blocs in every round, the masks section only where there are masks."""

from __future__ import annotations

import pytest

from segbench.annotation_ui.worker_report import worker_markdown

pytestmark = pytest.mark.unit


def _report(**extra):
    row = {"worker": "w:a", "answers": 3, "gold_answers": 0, "gold_accuracy": None, "kappa": None,
           "agreement_with_aggregate": 1.0, "undecided_judgments": 0, "label_distance": None, "median_seconds": None,
           "flags": {"time_z": None, "raised": []}}
    return {"round": "r1", "purpose": "work", "requires": None, "aggregation": "screened", "workers": [row],
            "suspicious": [], "rules": {"bloc_min_shared": 8}, **extra}


def test_a_choice_round_shows_its_blocs_and_no_masks_section():
    text = worker_markdown(_report(left_out=[], blocs=[{"voter": "bloc:w:a", "members": ["w:a", "w:b", "w:c"],
                                                         "pairs": 3, "shared": 30, "agreed": 30}]))
    assert "## Accounts that answered as one (1 blocs)" in text and "w:a, w:b, w:c" in text
    assert "Left out of the masks" not in text


def test_a_round_with_masks_lists_who_is_left_out_of_them():
    text = worker_markdown(_report(left_out=[{"worker": "w:a", "reasons": ["Cohen's κ 0.01"]}], blocs=[]))
    assert "## Left out of the masks (1)" in text and "Cohen's κ 0.01" in text
    assert "## Accounts that answered as one (0 blocs)" in text
    assert "Left out" not in worker_markdown(_report(aggregation="majority", left_out=[]))


def test_the_model_behind_the_labels_shows_its_held_out_gold():
    from segbench.core.model_choice import ModelChoice

    choice = ModelChoice(method="majority", held_out={"dawid-skene": (20, 30), "majority": (28, 30)}, folds=2,
                         p_values={"majority": 0.0039})
    text = worker_markdown(_report(left_out=[], blocs=[], model_choice=choice.row()))
    assert "## The model behind the labels" in text
    assert "majority got 28 of 30 held-out gold judgments right, significantly more than dawid-skene's 20" in text
    assert "| majority | 28 | 30 | 0.0039 |" in text and "| dawid-skene | 20 | 30 | - |" in text
