"""CAFE's evaluation metrics and SAM3's cgF1 summary: the shape of their ``metrics.json``.

The models describe and validate what ``segbench.tasks.cafe.metrics`` and ``…cgf1`` compute; a
name that is not a Python identifier (``TA-FP``, ``cgF1@0.5``) is the field's alias, and the models
dump by alias, so ``model_dump(mode="json")`` is the JSON itself. A rate of an empty subset is None.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Metrics(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)


class TargetAwareRates(_Metrics):
    """Counts and rates of the (q+, q-) pairs of one subset at one τ (the target-aware table)."""

    N: int = Field(description="pairs")
    TA_TP: int = Field(alias="TA-TP", description="q+ answered with the target (IoU ≥ τ)")
    TA_FN: int = Field(alias="TA-FN", description="q+ answered, but not on the target")
    UA_FN: int = Field(alias="UA-FN", description="q+ not answered")
    TN: int = Field(description="q- rejected")
    TA_FP: int = Field(alias="TA-FP", description="q- answered with the target: the misleading prompt taken")
    UA_FP: int = Field(alias="UA-FP", description="q- answered elsewhere")
    AFPR: float | None = Field(description="aligned false-positive rate: TA-FP / N")
    UFPR: float | None = Field(description="unaligned false-positive rate: UA-FP / N")
    ACSR: float | None = Field(description="aligned confusion-swap rate")
    UCSR: float | None = Field(description="unaligned confusion-swap rate")
    SoftSwap: float | None
    IL_FPR: float | None = Field(alias="IL-FPR", description="AFPR + UFPR")
    CSR: float | None = Field(description="ACSR + UCSR")


class CafeSubset(TargetAwareRates):
    """One subset's row: the target-aware table at the τ asked for, and its cgF1 family."""

    cgF1: float | None
    cgF1_50: float | None = Field(alias="cgF1@0.5")
    cgF1_75: float | None = Field(alias="cgF1@0.75")
    IL_MCC: float | None
    pmF1: float | None
    cgF1_images: int = Field(description="the images the cgF1 family is computed on")


class Calibration(_Metrics):
    """The score threshold chosen on a calibration set (the best Overall cgF1)."""

    threshold: float
    cgF1: float
    curve: list[tuple[float, float]] = Field(description="[threshold, Overall cgF1] over the grid")
    source: str | None = Field(None, description="the calibration files, or the held-out share of the pairs")


class Ignored(_Metrics):
    """Predictions left out because their image is in no ground truth given."""

    predictions: int
    images: int
    expected: bool = Field(description="whether that is expected (e.g. one subset's file of several)")
    reason: str


class CafeParamsUsed(_Metrics):
    score_threshold: float
    iou_threshold: float


class TauSweep(_Metrics):
    """The target-aware table of each subset at each τ of ``tau``."""

    tau: list[float]
    SM: list[TargetAwareRates]
    CC: list[TargetAwareRates]
    OC: list[TargetAwareRates]
    Overall: list[TargetAwareRates]


class CafeMetrics(_Metrics):
    """What ``segbench evaluate cafe`` computes: a row per subset and Overall, the τ sweep, the parameters."""

    SM: CafeSubset = Field(description="Superficial Mimicry")
    CC: CafeSubset = Field(description="Context Conflict")
    OC: CafeSubset = Field(description="Ontological Conflict")
    Overall: CafeSubset
    tau_sweep: TauSweep
    params: CafeParamsUsed
    calibration: Calibration | None = None
    ignored: Ignored | None = None

    def subsets(self) -> dict[str, CafeSubset]:
        """The rows by name, in the paper's order."""
        return {"SM": self.SM, "CC": self.CC, "OC": self.OC, "Overall": self.Overall}


class PerIou(_Metrics):
    """The per-IoU-threshold arrays behind the averaged cgF1 family."""

    iou_thresholds: list[float]
    cgF1: list[float]
    positive_micro_F1: list[float]
    F1: list[float]
    TPs: list[int]
    FPs: list[int]
    FNs: list[int]


class CgF1Summary(_Metrics):
    """SAM3's cgF1 summary: each per-IoU metric averaged over the 10 IoU thresholds (−1 when undefined) and
    read at 0.5 and 0.75, the image-level metrics, and ``pmF1`` (= ``positive_micro_F1``)."""

    cgF1: float
    cgF1_50: float = Field(alias="cgF1@0.5")
    cgF1_75: float = Field(alias="cgF1@0.75")
    precision: float
    precision_50: float = Field(alias="precision@0.5")
    precision_75: float = Field(alias="precision@0.75")
    recall: float
    recall_50: float = Field(alias="recall@0.5")
    recall_75: float = Field(alias="recall@0.75")
    F1: float
    F1_50: float = Field(alias="F1@0.5")
    F1_75: float = Field(alias="F1@0.75")
    positive_macro_F1: float
    positive_macro_F1_50: float = Field(alias="positive_macro_F1@0.5")
    positive_macro_F1_75: float = Field(alias="positive_macro_F1@0.75")
    positive_micro_F1: float
    positive_micro_F1_50: float = Field(alias="positive_micro_F1@0.5")
    positive_micro_F1_75: float = Field(alias="positive_micro_F1@0.75")
    positive_micro_precision: float
    positive_micro_precision_50: float = Field(alias="positive_micro_precision@0.5")
    positive_micro_precision_75: float = Field(alias="positive_micro_precision@0.75")
    IL_precision: float
    IL_recall: float
    IL_F1: float
    IL_FPR: float
    IL_MCC: float
    pmF1: float
    pmF1_50: float = Field(alias="pmF1@0.5")
    pmF1_75: float = Field(alias="pmF1@0.75")
    IL_TP: int
    IL_FP: int
    IL_TN: int
    IL_FN: int
    num_images: int
    per_iou: PerIou
    ignored: Ignored | None = None


class CgF1FileSummary(CgF1Summary):
    """One ground-truth file's summary under ``evaluate cgf1 --each``."""

    ground_truth: str


class CgF1Each(_Metrics):
    """``evaluate cgf1 --each``: one summary per ground-truth file, in the order given."""

    files: list[CgF1FileSummary]
