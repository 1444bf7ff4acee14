"""The review of resolved subparts (seed 001, supplementary 9.1: "two authors inspecting every annotation
and performing corrections as needed", and "we replaced unsuitable annotations as needed").

A review round (kind ``spin_review``) shows each object-part of a crowd round with the resolved
outline of each of its page's subparts drawn in that subpart's label colour. The reviewer answers:

- ``part_usable``: ``no`` sends the whole part back to be annotated again (verdict ``again``: its
  subparts leave the dataset, and the review report lists the items to ask again);
- per subpart, ``review_<slug>``: ``right`` (the outline is right, or the subpart is rightly not
  outlined), ``redrawn`` (the reviewer outlined it again, every piece with the subpart's label: that
  outline replaces the crowd's), or ``absent`` (it is not there: the outline goes).

With several reviewers on a task a choice counts when it has a strict majority of the people; a tie
changes nothing and is reported, even one the round's aggregation model settled. A redrawn subpart takes the polygons of the first reviewer, in id order, who drew it.

A decision applies while the resolved record is still the one the reviewer saw (its digest is in
the review item, :func:`shown_digest`), so ``resolved.json`` is the crowd's resolution with every
review laid over it in ingest order (:func:`apply_reviews`), whichever is imported last; a newer crowd
answer for the subpart (a re-annotated part) stands until it is reviewed itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from segbench.core.masks import bitmap_to_rle, rle_to_bitmap
from segbench.core.release import gallery
from segbench.schemas.rounds import ItemAnswer, Polygon, RoundItem, slugify
from segbench.schemas.spin import ResolvedSubpart, ReviewDecision
from segbench.tasks.spin.crowd import merge_polygons, polygon_flags

KIND = "spin_review"
LABEL_CONFIG = "spin_review"
RULE = "redrawn-in-review/v1"
USABLE = "part_usable"
VERDICTS = ("right", "redrawn", "absent")
REVIEW_DIR = "spin/review"  # overlays, relative to the data root


def control(subpart: str) -> str:
    """The choice control of one subpart's verdict."""
    return f"review_{slugify(subpart)}"


def shown_digest(record: ResolvedSubpart | None) -> str | None:
    """A short digest of a resolved outline (``None`` for no outline): what a decision was made about."""
    if record is None:
        return None
    return hashlib.sha256(f"{record.segmentation.size}:{record.segmentation.counts}".encode()).hexdigest()[:16]


def overlay(task_image: Image.Image, outlines: Sequence[tuple[ResolvedSubpart, str]]) -> Image.Image:
    """The task image with each resolved subpart's boundary drawn in its colour (``#rrggbb``)."""
    masks = [(rle_to_bitmap(record.segmentation.model_dump()).astype(bool),
              (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16))) for record, colour in outlines]
    return gallery.overlay(task_image, masks, alpha=0.0, tile=None)


@dataclass
class ReviewOutcome:
    """What one review round's answers decided, and what they left undecided."""

    decisions: list[ReviewDecision] = field(default_factory=list)
    kept: int = 0
    undecided: list[dict[str, Any]] = field(default_factory=list)
    again: list[str] = field(default_factory=list)  # item ids to annotate again

    def counts(self) -> dict[str, int]:
        verdicts = [d.verdict for d in self.decisions]
        return {"right": self.kept, **{v: verdicts.count(v) for v in ("redrawn", "absent", "again")},
                "undecided": len(self.undecided)}


def decide(review_key: str, items: Sequence[RoundItem], answers: Sequence[ItemAnswer]) -> ReviewOutcome:
    """The decisions of a review round's aggregated answers (module docstring); unanswered items change nothing."""
    by_id = {a.item_id: a for a in answers}
    outcome = ReviewOutcome()
    for item in items:
        if item.item_id in by_id:
            _decide_item(review_key, item, by_id[item.item_id], outcome)
    return outcome


def _decide_item(review_key: str, item: RoundItem, answer: ItemAnswer, outcome: ReviewOutcome) -> None:
    shown: Mapping[str, str | None] = item.data["shown"]
    reviewers = sorted(answer.annotators)

    def decision(name: str, verdict: str, record: ResolvedSubpart | None = None) -> ReviewDecision:
        return ReviewDecision(review=review_key, image_id=item.data["image_id"], part_ann_id=item.data["part_ann_id"],
                              subpart=name, verdict=verdict, shown=shown[name], reviewers=reviewers, record=record)

    usable = answer.people_label(USABLE)
    if usable is None:
        outcome.undecided.append({"item_id": item.item_id, "control": USABLE, "reason": "no majority"})
        return
    if usable == "no":
        outcome.again.append(item.item_id)
        outcome.decisions += [decision(name, "again") for name in item.data["subparts"]]
        return
    for name in item.data["subparts"]:
        verdict = answer.people_label(control(name))
        if verdict is None:
            outcome.undecided.append({"item_id": item.item_id, "subpart": name, "reason": "no majority"})
        elif verdict == "right":
            outcome.kept += 1
        elif verdict == "absent":
            outcome.decisions.append(decision(name, "absent"))
        else:
            redrawn, problem = _redrawn(item, name, answer.polygons.get("polygons", {}))
            if redrawn is None:
                outcome.undecided.append({"item_id": item.item_id, "subpart": name, "reason": problem})
            else:
                outcome.decisions.append(decision(name, "redrawn", redrawn))


def _redrawn(item: RoundItem, name: str, drawn: Mapping[str, list[Polygon]]) -> tuple[ResolvedSubpart | None, str]:
    """The first reviewer's (in id order) outline of ``name`` as a resolved subpart, or why there is none."""
    for reviewer in sorted(drawn):
        polygons = [p for p in drawn[reviewer] if p.label == name]
        if not polygons:
            continue
        flags = sorted({f for p in polygons for f in polygon_flags(p, item.height, item.width)})
        if flags:
            return None, f"redrawn by {reviewer} with bad polygons ({', '.join(flags)})"
        mask = merge_polygons(polygons, item.height, item.width)
        if not mask.any():
            return None, f"redrawn by {reviewer} with polygons that cover no pixel"
        d = item.data
        return ResolvedSubpart(
            image_id=d["image_id"], part_ann_id=d["part_ann_id"], object=d["object"], object_class=d["object_class"],
            part=d["part"], subpart=name, category=f"{d['object']}-{d['part']}-{name}",
            segmentation=bitmap_to_rle(mask), area=int(mask.sum()), polygons=len(polygons), workers=[reviewer],
            agreement=1.0, rule=RULE), ""
    return None, "marked redrawn, but no reviewer outlined it"


def apply_reviews(resolved: Sequence[ResolvedSubpart], decisions: Sequence[ReviewDecision]) -> list[ResolvedSubpart]:
    """``resolved`` with each decision applied in order where its record is still the one reviewed; sorted
    by (image_id, part_ann_id, subpart) as ``resolved.json`` is."""
    current = {(r.image_id, r.part_ann_id, r.subpart): r for r in resolved}
    for d in decisions:
        key = (d.image_id, d.part_ann_id, d.subpart)
        if shown_digest(current.get(key)) != d.shown:
            continue  # the crowd's answer changed since it was reviewed
        if d.verdict == "redrawn" and d.record is not None:
            current[key] = d.record
        else:
            current.pop(key, None)
    return [current[k] for k in sorted(current)]


def merge_decisions(earlier: Sequence[ReviewDecision], review_key: str,
                    new: Sequence[ReviewDecision]) -> list[ReviewDecision]:
    """Every review's decisions in ingest order, this review's replacing its own earlier ones (a re-ingest)."""
    return [d for d in earlier if d.review != review_key] + list(new)
