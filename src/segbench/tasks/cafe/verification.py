"""The CAFE verification round: what people see, and which samples they verify.

Each candidate becomes a round item showing the edited image with M outlined, q+ and q-. People
answer four yes/no questions (label config ``cafe_verification``): is q+ valid in the edited image,
is q- invalid, is the edit clean, does the outlined mask fit the edited object. A sample is
verified when the majority answers yes to all four (a tie is no majority, so not verified); only
verified samples are exported (seed 000, Sec. 3: v(I, q+) = 1 and v(I, q-) = 0 hold by
construction, which this round checks).

What does not belong here: round records and backends (``annotation_ui``, ``flows/rounds.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from PIL import Image

from segbench.core.reports import markdown_table
from segbench.schemas.cafe import Candidate, VerificationRow, VerificationTable
from segbench.schemas.edits import EditType
from segbench.schemas.rounds import ItemAnswer, RoundItem

KIND = "cafe_verification"
LABEL_CONFIG = "cafe_verification"
CONTROLS = ("positive_valid", "negative_invalid", "edit_clean", "mask_fits")
LABELS = ("yes", "no")
OUTLINE_COLOUR = (255, 0, 255)  # magenta: rare in photos and in every edit the compositor makes
OUTLINE_WIDTH = 2


def outline(image: Image.Image, mask: np.ndarray, *, width: int = OUTLINE_WIDTH,
            colour: tuple[int, int, int] = OUTLINE_COLOUR) -> Image.Image:
    """``image`` with a ``width``-pixel ring drawn just outside the bool mask (H×W).

    The ring lies outside M so the edited object itself stays fully visible to the reviewer.
    """
    mask = np.asarray(mask, dtype=bool)
    grown = mask.copy()
    for _ in range(width):
        padded = np.pad(grown, 1)
        grown = grown | padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]
    pixels = np.array(image.convert("RGB"))
    pixels[grown & ~mask] = colour
    return Image.fromarray(pixels, "RGB")


def round_items(candidates: Iterable[Candidate], candidates_dir: str) -> list[RoundItem]:
    """One item per candidate: its review image (under the data root) with q+, q- and the edit type;
    its batch is the subset (SM, CC or OC), so a round can be launched one subset at a time."""
    return [RoundItem(item_id=str(c.id), image=f"{candidates_dir}/{c.review_image}", width=c.target.width,
                      height=c.target.height, batch=c.plan.edit_type.abbr,
                      data={"q_pos": c.plan.q_pos, "q_neg": c.plan.q_neg, "edit_type": c.plan.edit_type.value})
            for c in sorted(candidates, key=lambda c: c.id)]


def verdict(answer: ItemAnswer | None) -> tuple[bool, list[str]]:
    """Whether an item is verified, and why not: the controls answered ``no``, tied or unanswered.

    Returns:
        ``(verified, reasons)`` with reasons like ``"edit_clean: no"``, ``"mask_fits: tie"``,
        ``"unanswered"``.
    """
    if answer is None:
        return False, ["unanswered"]
    reasons = []
    for control in CONTROLS:
        people = answer.people_label(control)  # a tie a model settled is still the people's tie
        if control not in answer.majority:
            reasons.append(f"{control}: unanswered")
        elif people is None:
            reasons.append(f"{control}: tie")
        elif people != "yes":
            reasons.append(f"{control}: {people}")
    return not reasons, reasons


def outcome(reasons: Sequence[str]) -> str:
    """What :func:`verdict`'s reasons amount to: ``verified`` (none), ``rejected`` (a majority said
    no to a question), ``tied`` (no question rejected, one tied) or ``unanswered`` (the rest: no
    answer, or a question nobody answered)."""
    if not reasons:
        return "verified"
    if any(reason.endswith(": no") for reason in reasons):
        return "rejected"
    return "tied" if any(reason.endswith(": tie") for reason in reasons) else "unanswered"


def verification_table(candidates: Sequence[Candidate], answers: Sequence[ItemAnswer]) -> VerificationTable:
    """Items, answered, verified and verified share per edit type and overall; "no" counts per control."""
    by_item = {a.item_id: a for a in answers}
    rows = {name: VerificationRow() for name in (*[t.name for t in EditType], "overall")}
    for candidate in candidates:
        answer = by_item.get(str(candidate.id))
        ok, reasons = verdict(answer)
        for row in (rows[candidate.plan.edit_type.name], rows["overall"]):
            row.items += 1
            row.answered += answer is not None
            row.verified += ok
            for reason in reasons:
                control = reason.split(":")[0]
                if control in CONTROLS and reason.endswith(": no"):
                    setattr(row, control, getattr(row, control) + 1)
    for row in rows.values():
        row.verified_share = row.verified / row.answered if row.answered else None
    return VerificationTable(edit_types={k: v for k, v in rows.items() if k != "overall"}, overall=rows["overall"])


def verification_markdown(table: VerificationTable, *, round_key: str, dataset_version: str,
                          held_out: int = 0) -> str:
    """The verification table as Markdown; ``held_out``: candidates left out of the round to make its gold."""
    rows = [[name, r.items, r.answered, r.verified, r.verified_share, *(getattr(r, c) for c in CONTROLS)]
            for name, r in [*table.edit_types.items(), ("overall", table.overall)]]
    return (f"# CAFE verification — round `{round_key}`\n\n"
            f"Candidates of version `{dataset_version[:12]}`. A sample is verified when the majority says yes to "
            "all four questions; the last four columns count majority *no* answers."
            + (f" {held_out} candidates were held out of this round, with every candidate of their photos, to make "
               "its gold; this round does not verify them." if held_out else "") + "\n\n"
            + markdown_table(["edit type", "items", "answered", "verified", "verified share", *CONTROLS], rows))
