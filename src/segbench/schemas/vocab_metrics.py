"""The vocabulary evaluation's metrics: the shape of ``metrics.json`` (``segbench.tasks.vocab.lac`` computes them).

Each level of the lexical mapping (exact ⊂ synonyms ⊂ hyponyms ⊂ meronyms) scores the open-ended
descriptions as a segmentation; the Lexical Alignment Curve is each metric over the levels, with
its area. PQ and mask AP appear when panoptic segments were given, the Sentence-BERT baseline when it ran, and
the scores of things and of stuff apart when the classes are a category set that says which is
which. A score with nothing to score is None.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer


class _Metrics(BaseModel):
    model_config = ConfigDict(extra="forbid")


_OPTIONAL_SCORES = ("pq", "sq", "rq", "ap", "ap50", "ap75", "miou_things", "miou_stuff", "pq_things", "pq_stuff")


class _WithPanoptic(_Metrics):
    """A part whose PQ entries exist only with panoptic segments, and whose things / stuff scores only
    with a known split: they are left out of the JSON unless set."""

    @model_serializer(mode="wrap")
    def _without_unset_pq(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items()
                if key not in _OPTIONAL_SCORES or key in self.model_fields_set}


class Level(_WithPanoptic):
    """One level of the mapping, scored as a segmentation."""

    level: Literal["exact", "synonyms", "hyponyms", "meronyms"]
    miou: float | None
    macc: float | None
    pacc: float | None
    class_iou: dict[str, float | None]
    region_acc: float | None = Field(description="the share of described regions mapped to their class")
    pq: float | None = None
    sq: float | None = None
    rq: float | None = None
    ap: float | None = Field(None, description="mask AP at IoU 0.50:0.95 (COCOeval), with panoptic segments")
    ap50: float | None = None
    ap75: float | None = None
    miou_things: float | None = Field(None, description="mIoU over the thing classes (countable objects)")
    miou_stuff: float | None = Field(None, description="mIoU over the stuff classes (sky, road, grass)")
    pq_things: float | None = Field(None, description="PQ over the thing classes (panopticapi's PQ^Th)")
    pq_stuff: float | None = Field(None, description="PQ over the stuff classes (panopticapi's PQ^St)")


class Kinds(_Metrics):
    """Which classes are things and which stuff."""

    source: str = Field(description="who says so: the vocabulary's isthing fields, or the shipped category set "
                                    "whose classes the vocabulary's are")
    things: list[str]
    stuff: list[str]

    def is_thing(self) -> dict[str, bool]:
        """Class → whether it is a thing."""
        return {**dict.fromkeys(self.things, True), **dict.fromkeys(self.stuff, False)}


class Curve(_Metrics):
    values: list[float | None] = Field(description="the metric at each level")
    area: float | None = Field(description="the area under the curve over the four levels")


class Lac(_WithPanoptic):
    """The Lexical Alignment Curve of each metric."""

    miou: Curve
    macc: Curve
    pacc: Curve
    region_acc: Curve
    pq: Curve | None = None
    ap: Curve | None = None


class Baseline(_Metrics):
    """The Sentence-BERT forced-choice baseline: each description mapped to its nearest class name."""

    name: str
    miou: float | None
    macc: float | None
    pacc: float | None
    class_iou: dict[str, float | None]
    region_acc: float
    agreement: dict[str, float] = Field(description="per level: the share of regions where it and the mapping agree")


class ClassPQ(_Metrics):
    pq: float | None
    sq: float | None
    rq: float | None
    tp: int
    fp: int
    fn: int


class LevelPQ(_Metrics):
    level: str
    pq: float | None
    sq: float | None
    rq: float | None
    num_classes: int
    per_class: dict[str, ClassPQ]


class LevelAP(_Metrics):
    level: str
    ap: float | None
    ap50: float | None
    ap75: float | None
    classes: Literal["things", "all"] = Field(description="the classes AP is over: the things when the vocabulary "
                                                           "says which classes are things, else all")
    num_classes: int = Field(description="classes with ground truth instances, the ones AP averages")
    per_class: dict[str, float | None]


class VocabMetrics(_Metrics):
    """What ``segbench evaluate vocab`` computes."""

    num_images: int
    num_regions: int
    undescribed_regions: int
    absent_segments: int
    levels: list[Level]
    lac: Lac
    baseline: Baseline | None
    pq: list[LevelPQ] | None = Field(description="panoptic quality per level, with panoptic segments only")
    ap: list[LevelAP] | None = Field(None, exclude_if=lambda v: v is None,
                                     description="mask AP per level, with panoptic segments only")
    kinds: Kinds | None = Field(None, exclude_if=lambda v: v is None,
                                description="things and stuff, when the classes are a shipped category set")
