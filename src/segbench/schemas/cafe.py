"""CAFE records: build parameters, targets, plan answers, candidates and the evaluation parameters.

A CAFE sample is the tuple (I, M, q+, q-, c) of seed 000: the edited image, the target mask, the
positive and the misleading negative prompt, and the counterfactual category (edit type).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from segbench.core.coco_documents import CocoRle
from segbench.core.errors import OnError
from segbench.schemas.cafe_metrics import CafeMetrics
from segbench.schemas.edits import EditPlan, EditType
from segbench.schemas.rebuild import PlanEvaluation, PlanPath, PlanTable
from segbench.schemas.results import BuildSummary, Counts, DemoPart, EvaluationResult, Usage
from segbench.schemas.rounds import RoundIngest

# Share of each edit type among the targets by default: the released CAFE split sizes
# (seed 000, Sec. 3: SM 1,111 / CC 593 / OC 442 of 2,146 samples).
PAPER_EDIT_MIX: dict[str, float] = {"SM": 1111 / 2146, "CC": 593 / 2146, "OC": 442 / 2146}
SOURCE_NAME = r"^[a-z0-9][a-z0-9_-]*$"


class SourceSpec(BaseModel):
    """A COCO-format source of targets: ``name=annotations.json:images_dir`` on the command line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=SOURCE_NAME, description="short source name, e.g. coco, lvis, saco_gold")
    annotations: Path
    images: Path

    @classmethod
    def parse(cls, text: str) -> SourceSpec:
        """Parse ``name=annotations:images``; :class:`ValueError` says which part is missing."""
        name, sep, rest = text.partition("=")
        annotations, sep2, images = rest.rpartition(":")
        if not sep or not sep2 or not name.strip() or not annotations or not images:
            raise ValueError(f"source {text!r} is not NAME=ANNOTATIONS_JSON:IMAGES_DIR "
                             "(e.g. coco=instances_val2017.json:val2017)")
        return cls(name=name.strip(), annotations=Path(annotations), images=Path(images))


class CafeParams(BaseModel):
    """Everything that decides the content of a CAFE candidate build; recorded in the manifest.

    Area bounds: below 2% of the image an edited pattern or material is too small for people to
    verify (and for a mask IoU of 0.3 to mean much); above 60% the object is most of the picture,
    so a context swap leaves almost no surroundings to change.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_area_fraction: float = Field(0.02, gt=0, lt=1, description="target area / image area must be at least this")
    max_area_fraction: float = Field(0.6, gt=0, le=1, description="... and at most this")
    targets_per_image: int = Field(1, ge=1, description="targets drawn from one image (file) at most")
    sole_instance: bool = Field(
        True, description="only objects that are the one instance of their category in the image: the export "
        "marks the single mask as exhaustive, so another instance would count against a correct prediction")
    quotas: dict[str, int] = Field(default_factory=dict, description="source name → verified samples wanted (default: "
                                   "every eligible object becomes a candidate)")
    expected_acceptance: float = Field(1.0, gt=0, le=1, description="share of candidates people are expected to "
                                       "verify before any round measured it: a quota asks for quota / share candidates")
    top_up_of: str | None = Field(None, description="the verification round whose chain this batch tops up (its "
                                  "drawn targets are left out; the shortfall sets the candidates wanted)")
    batch: int = Field(1, ge=1, description="the batch's place in its top-up chain")
    edit_mix: dict[str, float] = Field(default_factory=lambda: dict(PAPER_EDIT_MIX),
                                       description="edit type (SM, CC, OC) → share of the targets")
    seed: int = 0
    plan_batch: int = Field(25, ge=1, description="plan questions per provider task")
    edit_shard: int = Field(16, ge=1, description="targets edited per task")
    jpeg_quality: int = Field(95, ge=50, le=100)
    on_error: OnError = Field(OnError.FAIL, description="a bad annotation, image or edit: fail, or skip and report")

    @model_validator(mode="after")
    def _check(self) -> CafeParams:
        if self.min_area_fraction >= self.max_area_fraction:
            raise ValueError("min_area_fraction must be below max_area_fraction")
        unknown = sorted(set(self.edit_mix) - {t.name for t in EditType})
        if unknown:
            raise ValueError(f"edit_mix names unknown edit types {unknown}; use SM, CC, OC")
        if any(w < 0 for w in self.edit_mix.values()) or sum(self.edit_mix.values()) <= 0:
            raise ValueError("edit_mix shares must be non-negative and not all zero")
        if any(n < 0 for n in self.quotas.values()):
            raise ValueError("quotas must be non-negative")
        return self


class Target(BaseModel):
    """One selected object: where it comes from (provenance) and its mask M."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(description="'<source>:<image id>:<annotation id>'")
    source: str
    image_id: int
    annotation_id: int
    category_id: int
    object_name: str = Field(min_length=1, description="the category name (or SA-Co noun phrase), readable")
    file_name: str = Field(description="the source image, relative to the source's images folder")
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    area: float = Field(gt=0, description="mask pixels")
    area_fraction: float
    bbox: tuple[float, float, float, float]
    segmentation: CocoRle = Field(description="compressed RLE {'size', 'counts'} of M")


class PlanAnswer(BaseModel):
    """A language provider's answer to a ``cafe.edit_plan`` question (every field required: strict schema).

    ``detail`` is the pattern (SM), the new scene (CC) or the material (OC).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    detail: str = Field(description="SM: whose pattern; CC: the new surroundings; OC: the new material")
    q_pos: str = Field(description="the positive prompt: valid in the edited image")
    q_neg: str = Field(description="the misleading negative prompt: suggested by the edit but invalid")
    instruction: str = Field(description="the edit, worded for an image-editing model")


class Candidate(BaseModel):
    """A candidate sample (I, M, q+, q-, c) before verification; one row of ``candidates.jsonl``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int = Field(gt=0, lt=1_000_000_000, description="the positive image id of the export")
    key: str = Field(description="'<target key>:<edit type abbr>'")
    target: Target
    plan: EditPlan
    image: str = Field(description="the edited image, relative to the candidates folder")
    review_image: str = Field(description="the edited image with M outlined, relative to the candidates folder")
    edit_seed: int


# --- evaluation parameters (segbench evaluate cafe|cgf1) ---------------------------------------------

TAU_SWEEP = tuple(round(0.1 * k, 1) for k in range(1, 10))


class CafeEvalParams(BaseModel):
    """How to score a CAFE run.

    ``calibrate`` chooses the score threshold maximising overall cgF1 on a calibration split: the
    given calibration ground truth + predictions, or else a seeded ``calibration_fraction`` of the
    pairs, which are then left out of the reported numbers.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    score_threshold: float = Field(0.5, ge=0, le=1, description="presence threshold t (SAM3's default 0.5)")
    iou_threshold: float = Field(0.3, gt=0, le=1, description="target-alignment IoU τ (the paper's 0.3)")
    taus: tuple[float, ...] = Field(TAU_SWEEP, min_length=1, description="τ values of the sweep")
    calibrate: bool = False
    calibration_fraction: float = Field(0.2, gt=0, lt=1)
    seed: int = 0

    @model_validator(mode="after")
    def _taus_in_range(self) -> CafeEvalParams:
        if any(not 0 < tau <= 1 for tau in self.taus):
            raise ValueError(f"every τ must lie in (0, 1], got {list(self.taus)}")
        return self


# --- the [cafe] table of a rebuild plan ----------------------------------------------------------------------------

class CafeStep(PlanTable):
    """``[cafe]``: ``segbench build cafe --round KEY``: export the verified pairs of an ingested round."""

    round: str = Field(min_length=1)
    out: PlanPath | None = Field(None, description="default: <data root>/cafe")


class CafeEvaluation(PlanEvaluation):
    """CAFE: cgF1 and the false-positive rates per subset."""

    dataset: Literal["cafe"]
    params: CafeEvalParams = Field(default_factory=CafeEvalParams)


# --- what the builds return ---------------------------------------------------------------------------------------


class CandidatesCounts(Counts):
    """The candidates a CAFE candidates build wrote, per edit type, and what it skipped."""

    candidates: int
    by_edit_type: dict[str, int]
    skipped: dict[str, int] = Field(description="skipped items by error")
    prompt_pairs: int


class CandidatesSummary(BuildSummary):
    """``build cafe-candidates``: the counts, the skips by error, what the provider spent in this run."""

    counts: CandidatesCounts
    skipped: dict[str, int]
    usage: Usage = Field(description="what the language provider spent: calls, cache hits, retries, tokens, cost")


class TargetRow(BaseModel):
    """One source × edit type of a CAFE export: the target, what the rounds asked and verified,
    and what the export kept."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    edit_type: str
    target: int | None = Field(description="verified samples wanted (none: the source had no quota)")
    asked: int = Field(description="candidates the rounds asked about and people answered")
    verified: int
    exported: int = Field(description="verified samples exported: at most the target")
    short: int = Field(description="target minus exported (0 without a target)")


class ExportCounts(Counts):
    """The verified samples a CAFE export wrote (each has its original and edited image) and the rest."""

    samples: int
    images: int
    by_edit_type: dict[str, int]
    not_verified: int
    rejected: int = Field(0, description="not verified: a majority said no to a question")
    tied: int = Field(0, description="not verified: no question rejected, one tied")
    unanswered: int = Field(0, description="not verified: a question without any answer (exported with --partial)")
    held_out: int = Field(0, description="candidates held out of the round to make its gold: the round did not ask "
                                         "about them")
    beyond_target: int = Field(0, description="verified, but their source × edit type already had its target")
    targets: list[TargetRow] = Field(default_factory=list, description="target against achieved per source × edit "
                                     "type (when the candidates had quotas)")
    prompt_pairs: int
    unique_positive: int
    unique_negative: int


class ExportSummary(BuildSummary):
    """``build cafe``: the counts and the exported SA-Co files by subset (``CAFE``, ``CAFE_SM``, ...)."""

    counts: ExportCounts
    files: dict[str, Path]


class CafeDemo(DemoPart):
    """CAFE in the demo: candidates, their verification round, the export, and the baseline's evaluation."""

    candidates: CandidatesSummary
    verification: RoundIngest
    export: ExportSummary
    evaluation: EvaluationResult[CafeMetrics] | None = None


class VerificationRow(BaseModel):
    """The verification of one edit type (or all): items, answers, verified samples, and the majority
    *no* answers per question."""

    items: int = 0
    answered: int = 0
    verified: int = Field(0, description="the majority said yes to all four questions")
    positive_valid: int = 0
    negative_invalid: int = 0
    edit_clean: int = 0
    mask_fits: int = 0
    verified_share: float | None = Field(None, description="verified / answered")


class VerificationTable(BaseModel):
    edit_types: dict[str, VerificationRow]
    overall: VerificationRow
