"""SPIN's evaluation metrics: the shape of ``metrics.json`` (``segbench.tasks.spin.metrics`` computes them).

Per prompt kind (``general``, ``specific``): mIoU per level with each category's IoU, the spatial
consistency SpCS (subpart→part ``s2p`` and part→object ``p2o``), the semantic consistency SeCS, and
the same per super-category; recognition accuracy when answers were given. A score with nothing
to score is None.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Metrics(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CategoryIoU(_Metrics):
    id: int
    name: str
    iou: float | None = Field(description="Σ intersection / Σ union over the images")
    mean_entity_iou: float | None
    entities: int
    abstained: int = Field(description="entities the model gave no mask")
    unprompted: int = Field(description="predictions for a category the image does not have")


class LevelIoU(_Metrics):
    """One level (wholes, parts or subparts) for one prompt kind."""

    miou: float | None = Field(description="mean of the categories' IoU")
    mean_entity_iou: float | None
    entities: int
    abstained: int
    abstention_rate: float | None
    unprompted_predictions: int
    categories: list[CategoryIoU]


class Levels(_Metrics):
    wholes: LevelIoU
    parts: LevelIoU
    subparts: LevelIoU


class Relation(_Metrics):
    """Spatial consistency of one child→parent relation: the share of the child's mask inside its parent's."""

    score: float | None
    pairs: int
    child_abstained: int
    parent_abstained: int


class SpCS(_Metrics):
    s2p: Relation = Field(description="subpart → part")
    p2o: Relation = Field(description="part → object")
    mean: float | None = Field(description="mean of the two relations' scores")
    pooled: float | None = Field(description="over both relations' pairs together")


class SeCS(_Metrics):
    """Semantic consistency: the share of predicted pixels whose labels entail each other up the hierarchy."""

    score: float | None
    pixels: int
    images: int


class LevelMiou(_Metrics):
    wholes: float | None
    parts: float | None
    subparts: float | None


class SupercategoryMetrics(_Metrics):
    miou: LevelMiou
    spcs: SpCS
    secs: SeCS


class SizeVsIoU(_Metrics):
    """SPIN's Table 5 for one level: the least-squares line IoU ~ β1 · ln(region size) + β0 over the
    level's entities (size: the ground-truth region's pixels; an abstained entity counts as IoU 0)."""

    entities: int
    slope: float = Field(description="β1: IoU gained per unit of ln(pixels)")
    intercept: float = Field(description="β0")
    r_squared: float = Field(description="Pearson's R²")
    p_value: float = Field(description="two-sided p-value of β1 = 0 (Wald test with a t distribution)")


class PromptMetrics(_Metrics):
    """Everything computed for one prompt kind."""

    levels: Levels
    spcs: SpCS
    secs: SeCS
    per_supercategory: dict[str, SupercategoryMetrics]
    size_vs_iou: dict[str, SizeVsIoU | None] = Field(
        default_factory=dict, description="per level; None with fewer than 3 entities, one region size or one IoU")


class CategoryAccuracy(_Metrics):
    id: int
    name: str
    accuracy: float
    answers: int


class LevelAccuracy(_Metrics):
    macc: float = Field(description="accuracy per category, averaged over categories")
    accuracy: float
    answers: int
    yes_rate: float = Field(description="the share of yes answers (a model answering yes to everything shows here)")
    categories: list[CategoryAccuracy]


class SkippedCount(_Metrics):
    count: int
    by_error: dict[str, int]


class SpinMetrics(_Metrics):
    """What ``segbench evaluate spin`` computes."""

    num_images: int
    prompts: dict[str, PromptMetrics] = Field(description="per prompt kind given: general, specific")
    recognition: dict[str, dict[str, LevelAccuracy]] | None = Field(
        None, description="prompt kind → level → recognition accuracy, when answers were given")
    skipped: SkippedCount | None = None
