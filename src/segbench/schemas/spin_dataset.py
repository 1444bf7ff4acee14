"""Parameters of the SPIN dataset build (seed 001: PartImageNet objects → parts → crowd subparts)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from segbench.errors import OnError


class SpinBuildParams(BaseModel):
    """Everything that decides the content of a SPIN build (recorded in the manifest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cap_per_supercategory: int = Field(
        1200, ge=1, description="images kept per super-category (SPIN's annotation budget, seed Sec. 3.1)")
    seed: int = Field(0, description="seeds the tie-break among images with equally many parts under the cap")
    on_error: OnError = Field(OnError.FAIL, description="fail on a bad source or crowd record, or skip and report it")
