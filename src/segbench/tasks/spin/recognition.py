"""SPIN recognition (seed 001, Sec. 5.3): yes/no answers about regions → mACC per level and prompt kind.

mACC: accuracy per category, mean over the level's categories. Reading answers files is
:mod:`segbench.tasks.spin.inputs`' job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from segbench.schemas.spin_metrics import CategoryAccuracy, LevelAccuracy
from segbench.tasks.spin.metrics import LEVELS, PROMPTS, Hierarchy, add_row

_ANSWERS = 3  # correct, answers, yes

_YES_WORD = re.compile(r"\byes\b", re.IGNORECASE)
YES_RULES = ("substring", "word")
DEFAULT_YES_RULE = "substring"


def says_yes(answer: str, rule: str = DEFAULT_YES_RULE) -> bool:
    """Whether a recognition answer counts as "yes".

    ``substring`` is the seed's rule (Sec. 5.3: "yes" appears in the model's output, in any case), so
    "those are eyes" is a yes; ``word`` asks for "yes" as a whole word.
    """
    if rule == "word":
        return bool(_YES_WORD.search(answer))
    if rule == "substring":
        return "yes" in answer.lower()
    raise ValueError(f"unknown yes rule {rule!r}; choose one of {', '.join(YES_RULES)}")


class Answer(NamedTuple):
    """One validated recognition answer."""

    level: str
    category_id: int
    prompt: str
    answer: bool
    truth: bool


def recognition_accuracy(answers: Iterable[Answer], hierarchy: Hierarchy) -> dict[str, dict[str, LevelAccuracy]]:
    """mACC per prompt kind and level (those with answers): accuracy per category, averaged over
    categories; the yes rate shows a model that answers yes to everything."""
    table: dict[tuple[str, str, int], list[float]] = {}
    for a in answers:
        add_row(table, (a.prompt, a.level, a.category_id), [a.answer == a.truth, 1, a.answer], _ANSWERS)
    out: dict[str, dict[str, LevelAccuracy]] = {}
    for prompt in PROMPTS:
        levels: dict[str, LevelAccuracy] = {}
        for level in LEVELS:
            rows = {cat: v for (p, lv, cat), v in table.items() if p == prompt and lv == level}
            if not rows:
                continue
            cats = [CategoryAccuracy(id=cat, name=hierarchy.names[level][cat], accuracy=rows[cat][0] / rows[cat][1],
                                     answers=int(rows[cat][1])) for cat in sorted(rows)]
            correct, total, yes = (sum(row[i] for row in rows.values()) for i in range(_ANSWERS))
            levels[level] = LevelAccuracy(macc=sum(c.accuracy for c in cats) / len(cats), accuracy=correct / total,
                                          answers=int(total), yes_rate=yes / total, categories=cats)
        if levels:
            out[prompt] = levels
    return out
