"""Parameters of the CAFE and cgF1 evaluations (``segbench evaluate cafe|cgf1``).

Only the models; the metrics are computed by ``segbench.tasks.cafe_metrics`` and ``segbench.tasks.cgf1``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

TAU_SWEEP = tuple(round(0.1 * k, 1) for k in range(1, 10))


class CafeEvalParams(BaseModel):
    """How to score a CAFE run.

    ``calibrate`` chooses the score threshold maximising overall cgF1 on a calibration split: the
    given calibration ground truth + predictions, or else a seeded ``calibration_fraction`` of the
    pairs, which are then left out of the reported numbers.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    score_threshold: float = Field(0.5, description="presence threshold t (SAM3's default 0.5)")
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
