"""The COCO-CD evaluation summary: the shape of ``metrics.json``.

Every rate is a float in [0, 1] or ``None`` when it is undefined (0/0); JSON has no NaN. The models
only describe and validate the summary; computing it belongs to ``segbench.tasks.flip.metrics``.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from segbench.schemas.rebuild import PlanEvaluation


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FlipImage(BaseModel):
    """One image of a COCO-CD or Waterbirds-seg split file (its COCO fields beyond these are kept)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: int
    file_name: str = Field(description="the source image's path under its source root")
    width: int
    height: int
    group_id: int = Field(ge=0, le=3, description="2·y + a: the class y and the context a")
    class_: str = Field(alias="class", description="cat or dog (landbird or waterbird)")
    context: str = Field(description="indoor or outdoor (land or water)")
    mask_file: str = Field(description="the label map, relative to the dataset folder")
    image_file: str | None = Field(None, description="the resized image, when the build wrote images")


class ClassIoU(_Model):
    """IoU per class (global intersection over union summed over images)."""

    background: float | None
    cat: float | None
    dog: float | None


class FgDecomposition(_Model):
    """Ground-truth foreground pixels split into correct / flipped / missed; the rates sum to 1."""

    gt_fg_pixels: int
    corr: float | None = Field(description="predicted the right foreground class")
    flip: float | None = Field(description="predicted the other foreground class")
    miss: float | None = Field(description="predicted background")


class FlipStats(_Model):
    """Flip reported globally (pixel-weighted) and as a mean of per-image rates."""

    global_: float | None = Field(alias="global")
    per_image_mean: float | None
    images_counted: int
    images_without_gt_fg: int = Field(description="skipped by the per-image mean: no gt foreground")

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)


class GroupResult(_Model):
    """IoU per class computed over one (class, context) group's images."""

    group_id: int
    name: str = Field(description='e.g. "cat indoors (aligned)"')
    kind: str = Field(description='"aligned" or "counterfactual"')
    num_images: int
    iou: ClassIoU


class Gap(_Model):
    """Aligned minus counterfactual IoU of one foreground class."""

    aligned_group: int
    counterfactual_group: int
    aligned_iou: float | None
    counterfactual_iou: float | None
    gap: float | None


class Decile(_Model):
    decile: int = Field(description="1 (lowest risk) .. 10 (highest risk)")
    count: int
    mean_risk: float | None
    mean_flip: float | None


class FlipRisk(_Model):
    """Images sorted by flip-risk into 10 deciles (boundaries d*n//10)."""

    num_records: int
    images_without_pred_fg: int
    images_without_gt_fg: int = Field(description="have predicted foreground but no per-image flip")
    fewer_than_10_records: bool
    deciles: list[Decile]
    top_decile_share: float | None = Field(
        description="top-decile flip / all flip; null if no flip"
    )


class FlipSummary(_Model):
    """Everything ``FlipAccumulator.summarize`` returns."""

    num_images: int
    confusion_matrix: list[list[int]] = Field(
        description="rows: gt class, columns: predicted class"
    )
    class_iou: ClassIoU
    miou: float | None = Field(description="mean of cat and dog IoU")
    fg_iou: float | None = Field(description="cat and dog collapsed into one foreground")
    fg_decomposition: FgDecomposition
    flip: FlipStats
    per_group: list[GroupResult]
    gaps: dict[str, Gap]
    flip_risk: FlipRisk | None
    flip_risk_unavailable: str | None = Field(description="why flip_risk is null, if it is")
    flip_risk_gt_foreground: FlipRisk | None = Field(None, description=(
        "App. G's analysis variant: the same entropy averaged over ground-truth foreground pixels (so it "
        "needs ground truth, and ranks every image with foreground); null when flip_risk is"))


@cache
def summary_model(classes: tuple[str, str] = ("cat", "dog")) -> type[FlipSummary]:
    """:class:`FlipSummary` with the IoU fields named after ``classes`` (COCO-CD's: the model itself).

    Other datasets (Waterbirds-seg: landbird, waterbird) get a subclass whose per-class IoU objects
    have their class names, so the summary stays strictly validated.
    """
    if tuple(classes) == ("cat", "dog"):
        return FlipSummary
    fields: dict[str, Any] = {name: (float | None, ...) for name in ("background", *classes)}
    iou = create_model("ClassIoU_" + "_".join(classes), __base__=_Model, **fields)
    group: Any = create_model("GroupResult_" + "_".join(classes), __base__=GroupResult, iou=(iou, ...))
    return create_model("FlipSummary_" + "_".join(classes), __base__=FlipSummary, class_iou=(iou, ...),
                        per_group=(list[group], ...))


# --- the [evaluate] table of a rebuild plan ------------------------------------------------------------------------

class FlipEvaluation(PlanEvaluation):
    """``[[evaluate]]`` of COCO-CD or Waterbirds-seg: the flip metrics on one ρ split."""

    dataset: Literal["coco_cd", "waterbirds"]
    rho: float = 0.95
    split: Literal["train", "val", "test"] = "test"
