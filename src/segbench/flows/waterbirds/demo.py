"""Waterbirds-seg in the demo: a generated CUB/Places-like source composited into the dataset."""

from __future__ import annotations

from segbench.demo.waterbirds.birds import generate_demo_birds
from segbench.flows.demo import DemoContext, DemoStep
from segbench.flows.waterbirds.build import build_waterbirds
from segbench.schemas.waterbirds import DEMO_SIZES, WaterbirdsDemo, WaterbirdsParams


def build(context: DemoContext) -> WaterbirdsDemo:
    """Build Waterbirds-seg from a generated source with the default parameters at the demo's sizes."""
    cub, places = generate_demo_birds(context.work_dir / "demo-birds", seed=context.seed)
    out = context.data_root / "waterbirds_seg"
    return WaterbirdsDemo(build=build_waterbirds(cub, places, out, WaterbirdsParams(**DEMO_SIZES)),
                          paths={"Waterbirds-seg": out})


DEMO = DemoStep(build=build)
