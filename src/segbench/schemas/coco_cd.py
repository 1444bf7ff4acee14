"""COCO-CD parameters and records (seed 002: cat/dog × indoor/outdoor under correlation shift)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from segbench.core.errors import OnError
from segbench.core.splits import Rhos
from segbench.schemas.flip import FlipSummary
from segbench.schemas.rebuild import PlanPath, PlanTable
from segbench.schemas.results import BuildSummary, Counts, DemoPart, EvaluationResult
from segbench.schemas.rounds import RoundIngest

Context = Literal["indoor", "outdoor", "unknown"]


@lru_cache(maxsize=1)
def released_context_lists() -> dict:
    """The curated lists and thresholds of the released COCO-CD build (shipped with segbench)."""
    text = resources.files("segbench.resources").joinpath("coco_cd_context.json").read_text("utf-8")
    return json.loads(text)


def _released(key: str) -> list[str]:
    return list(released_context_lists()[key])


class CocoCdParams(BaseModel):
    """Everything that decides the content of a COCO-CD build. Defaults reproduce the released one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rhos: Rhos = Field((0.5, 0.95), description="train correlations, one split directory each")
    val_per_group: int = Field(50, ge=1)
    test_per_group: int = Field(125, ge=1)
    seed: int = 13
    classes: tuple[str, str] = ("cat", "dog")
    majority_context: tuple[str, str] = Field(
        ("indoor", "outdoor"), description="the context each class is paired with in train (ρ > 0.5)"
    )
    size: int = Field(512, ge=8, description="side of the resized images and label masks")
    fg_min: float = Field(0.01, ge=0, le=1, description="foreground fraction at size² must exceed this")
    fg_max: float = Field(0.99, ge=0, le=1, description="... and stay below this")
    context_share: float = Field(0.5, gt=0, lt=1)
    context_min_area: float = Field(0.02, ge=0, le=1, description="evidence must cover this image fraction")
    indoor: tuple[str, ...] = Field(default_factory=lambda: tuple(_released("indoor")))
    outdoor: tuple[str, ...] = Field(default_factory=lambda: tuple(_released("outdoor")))
    neutral: tuple[str, ...] = Field(default_factory=lambda: tuple(_released("neutral")))
    write_images: bool = Field(True, description="also write the resized images (masks are always written)")
    on_error: OnError = OnError.FAIL

    @model_validator(mode="after")
    def _check_lists(self) -> CocoCdParams:
        if self.fg_min >= self.fg_max:
            raise ValueError("fg_min must be below fg_max")
        if set(self.majority_context) != {"indoor", "outdoor"}:
            raise ValueError("majority_context must pair one class with indoor and the other with outdoor")
        overlap = set(self.indoor) & set(self.outdoor)
        if overlap:
            raise ValueError(f"classes on both the indoor and outdoor lists: {sorted(overlap)}")
        both = set(self.classes) & (set(self.indoor) | set(self.outdoor))
        if both:
            raise ValueError(f"the target classes cannot be context evidence: {sorted(both)}")
        return self


class ContextRecord(BaseModel):
    """One row of ``context.jsonl``: the evidence behind one image's context label."""

    image_id: int
    split: str
    file_name: str
    model_config = ConfigDict(populate_by_name=True)

    label: str = Field(alias="class", description="the image's class (cat or dog)")
    width: int
    height: int
    fg_ratio: float
    indoor_area: float
    outdoor_area: float
    indoor_share: float | None
    context: Context


# --- the [coco_cd] table of a rebuild plan -------------------------------------------------------------------------

class CocoCdStep(PlanTable):
    """``[coco_cd]``: the arguments of ``segbench build coco-cd``."""

    coco_root: PlanPath
    stuff_root: PlanPath
    out: PlanPath | None = Field(None, description="default: <data root>/coco_cd")
    params: CocoCdParams = Field(default_factory=CocoCdParams)


# --- what a build returns ---------------------------------------------------------------------------


class CocoCdCounts(Counts):
    """The images at every stage of a COCO-CD build (seed 002 Table 4), and the group counts of each split."""

    source_images: int
    with_target_class: int
    both_classes: int
    fg_too_small: int
    fg_too_large: int
    invalid_segmentation: int
    kept: int
    context: dict[str, int] = Field(description="retained images per context: indoor, outdoor, unknown")
    usable: int
    rendered: int
    train_per_class_total: int
    splits: dict[str, dict[str, list[int]]] = Field(description="{ρ: {split: images per group}}")


class CocoCdBuildSummary(BuildSummary):
    """``build coco-cd``: the counts, the context coverage table and the skipped items by error."""

    counts: CocoCdCounts
    coverage: dict[str, dict[str, Any]]
    skipped: dict[str, int]


class CocoCdDemo(DemoPart):
    """COCO-CD in the demo: the build, its context audit, and the baseline's evaluation."""

    build: CocoCdBuildSummary
    audit: RoundIngest
    evaluation: EvaluationResult[FlipSummary] | None = None


class AuditRow(BaseModel):
    """The context audit of one group (or all): automatic labels against the people's majority."""

    items: int = 0
    answered: int = 0
    ambiguous: int = 0
    no_majority: int = Field(0, description="answered, but the people's answers tied")
    settled_by_model: int = Field(0, description="of the ties, those the aggregation model gave a label "
                                                 "(never counted as the people's agreement)")
    judged: int = Field(0, description="answered, not ambiguous, with a majority of the people")
    agree: int = 0
    ambiguous_share: float | None = Field(None, description="ambiguous / answered")
    agreement: float | None = Field(None, description="agree / judged; None when nothing was judged")


class AuditTable(BaseModel):
    """The audit of a round, per group (named as the evaluation names them) and overall."""

    groups: dict[str, AuditRow]
    overall: AuditRow
