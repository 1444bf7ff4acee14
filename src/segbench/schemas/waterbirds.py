"""Waterbirds-seg parameters (seed 002: CUB birds on land or water places under correlation shift)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from segbench.core.errors import OnError
from segbench.core.splits import Rhos
from segbench.schemas.rebuild import PlanPath, PlanTable
from segbench.schemas.results import BuildSummary, Counts, DemoPart

LAND_PLACES = ("bamboo_forest", "forest/broadleaf")
WATER_PLACES = ("ocean", "lake/natural")

SpeciesMatch = Literal["tokens", "substring"]


class WaterbirdsParams(BaseModel):
    """Everything that shapes a Waterbirds-seg build (recorded in the manifest).

    The defaults are the released build's sizes (74 val and 642 test images per group); the demo
    asks for fewer (:data:`DEMO_SIZES`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    rhos: Rhos = Field((0.5, 0.95), description="train correlations, one split directory each")
    val_per_group: int = Field(74, ge=1)
    test_per_group: int = Field(642, ge=1)
    seed: int = 13
    species_match: SpeciesMatch = "tokens"
    val_fraction: float = Field(0.2, gt=0, lt=1, description="share of CUB's train split held out for val "
                                                             "(Waterbirds' val_frac)")
    land_places: tuple[str, ...] = LAND_PLACES
    water_places: tuple[str, ...] = WATER_PLACES
    on_error: OnError = OnError.FAIL


# The demo world's sizes: its generated source holds a few dozen birds per group.
DEMO_SIZES = {"val_per_group": 5, "test_per_group": 10}


# --- the [waterbirds] table of a rebuild plan ----------------------------------------------------------------------

class WaterbirdsStep(PlanTable):
    """``[waterbirds]``: the arguments of ``segbench build waterbirds``."""

    cub_root: PlanPath
    places_root: PlanPath
    out: PlanPath | None = Field(None, description="default: <data root>/waterbirds_seg")
    params: WaterbirdsParams = Field(default_factory=WaterbirdsParams)


# --- what a build returns ---------------------------------------------------------------------------


class WaterbirdsCounts(Counts):
    """The birds of a Waterbirds-seg build per class and CUB split, the images per group, and the group
    counts of each split."""

    birds: int
    per_class: dict[str, int] = Field(description="usable birds per bird type")
    per_cub_split: dict[str, int] = Field(description="usable birds per CUB split (train, test)")
    per_group: dict[str, int] = Field(description="composited images per group, over every split and ρ")
    rendered: int
    train_per_class_total: int
    splits: dict[str, dict[str, list[int]]] = Field(description="{ρ: {split: images per group}}")


class WaterbirdsBuildSummary(BuildSummary):
    """``build waterbirds``: the counts, the species substring matching would mislabel, the skips by error."""

    counts: WaterbirdsCounts
    mislabels: list[dict[str, Any]]
    skipped: dict[str, int]


class WaterbirdsDemo(DemoPart):
    """Waterbirds-seg in the demo: its build."""

    build: WaterbirdsBuildSummary
