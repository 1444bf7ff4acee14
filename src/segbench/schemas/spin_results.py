"""What the SPIN builds return: the taxonomy's and the dataset's summaries, and SPIN's part of the demo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from segbench.schemas.results import BuildSummary, Counts, DemoPart, EvaluationResult, WithoutNone
from segbench.schemas.spin_metrics import SkippedCount, SpinMetrics


class TaxonomyCounts(Counts):
    """What the taxonomy build asked, kept and removed; with a reference in the edit file, the proposer's matches."""

    parts: int
    questions: int
    proposed: int
    not_visible: int
    object_specific: int
    removed: int
    subparts: int
    unused_rules: int
    unused_rule_names: list[str]
    reference_subparts: int | None = None
    proposer_matched_reference: int | None = None
    proposer_matched_proposals: int | None = None
    proposer_matched_reference_before_visibility: int | None = None
    rejected_answers: int | None = Field(None, description="questions a language model never answered usably "
                                         "(skipped); None for WordNet")
    suspect: list[str] | None = Field(None, description="why a language model's proposals look wrong as a whole")


class TaxonomySummary(BuildSummary):
    """``build spin-taxonomy``: the counts, the files, the diff against the taxonomy that was there."""

    counts: TaxonomyCounts
    paths: dict[str, Path] = Field(description="taxonomy, diff, figure, manifest")
    diff: dict[str, Any]
    diff_markdown: str
    unused_rules: list[str] = Field(description="edit rules that changed nothing")


class LevelComposition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    categories: int = Field(description="categories of the level's taxonomy")
    categories_used: int = Field(description="categories with at least one annotation")
    annotations: int


class Composition(BaseModel):
    """Images and, per level, annotations and categories (seed 001 Table 1)."""

    model_config = ConfigDict(extra="forbid")

    images: int
    wholes: LevelComposition
    parts: LevelComposition
    subparts: LevelComposition


class SpinComposition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    overall: Composition
    per_split: dict[str, Composition]


class SpinFilters(BaseModel):
    """What the §8.3 filters did: parts left ambiguous, images with background only, images over the cap."""

    model_config = ConfigDict(extra="forbid")

    background_only_images: dict[str, int]
    background_only_total: int
    ambiguous_part_annotations: dict[str, int] = Field(description="part → annotations of it with no subpart")
    over_cap: dict[str, dict[str, int]] = Field(description="super-category → split → images over the cap")
    over_cap_total: int
    kept_images: int


class SpinCounts(Counts):
    """The composition of a SPIN build (seed 001 Table 1) and the images its filters left out."""

    composition: SpinComposition
    without_parts: dict[str, int]
    over_cap: int
    resolved_outside_selection: int
    per_supercategory: dict[str, int]
    filters: SpinFilters


class SpinBuildSummary(BuildSummary):
    """``build spin``: the counts and the number of records left out (listed in ``skipped.json``)."""

    counts: SpinCounts
    skipped: int


class SpinDemo(DemoPart):
    """SPIN in the demo: the taxonomy, the crowd rounds and their counts, the dataset, the baseline's evaluation."""

    taxonomy: TaxonomySummary
    rounds: list[str]
    crowd: dict[str, int]
    spin: SpinBuildSummary
    evaluation: EvaluationResult[SpinMetrics]


class SkippedRows(SkippedCount):
    items: list[dict[str, Any]]


class SpinImportReport(WithoutNone):
    """The import report of one SPIN round (``<key>.report.json``)."""

    model_config = ConfigDict(extra="forbid")

    round: str
    answers: int
    items_answered: int
    resolved: int = Field(description="(part, subpart) pairs resolved to a mask")
    absent: int = Field(description="pairs voted absent or without a majority")
    no_voters: int
    copies: list[dict[str, Any]] = Field(default_factory=list, description=(
        "answers on one subpart whose masks were copies of one another ({image_id, part_ann_id, subpart, "
        "annotators}): counted as the first annotator's alone"))
    flags: dict[str, int] = Field(description="flag → answers or subparts it was raised on")
    rule: str = Field(description="how a present subpart's mask is chosen")
    containment: float = Field(description="the share of a subpart mask that must lie inside its part")
    skipped: SkippedRows
    mask_aggregation: str | None = Field(None, description="a crowd-kit method, when not the medoid rule")
    empty_aggregate: list[dict[str, Any]] | None = None
    workers_left_out: list[str] | None = Field(None, description="workers the round's screened ingest left out")


class SpinImport(BaseModel):
    """What ``spin import`` wrote for a round: the crowd files and the import report (answers, flags, skips)."""

    model_config = ConfigDict(extra="forbid")

    paths: dict[str, Path] = Field(description="raw, report, resolved")
    report: SpinImportReport
