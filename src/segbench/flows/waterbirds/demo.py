"""Waterbirds-seg in the demo: a generated CUB/Places-like source composited into the dataset."""

from __future__ import annotations

from typing import Any

from segbench.demo.waterbirds.birds import bird_roots, generate_demo_birds
from segbench.flows.demo import DemoContext, DemoStep
from segbench.flows.waterbirds.build import build_waterbirds
from segbench.schemas.waterbirds import DEMO_SIZES, WaterbirdsDemo, WaterbirdsParams

BIRDS = "demo-birds"  # the generated CUB/Places-like source, under the work dir


def build(context: DemoContext) -> WaterbirdsDemo:
    """Build Waterbirds-seg from a generated source with the default parameters at the demo's sizes."""
    cub, places = generate_demo_birds(context.work_dir / BIRDS, seed=context.seed)
    out = context.data_root / "waterbirds_seg"
    return WaterbirdsDemo(build=build_waterbirds(cub, places, out, WaterbirdsParams(**DEMO_SIZES)),
                          paths={"Waterbirds-seg": out})


def plan(context: DemoContext) -> dict[str, Any]:
    """The build's ``[waterbirds]`` table of the demo's rebuild plan."""
    cub, places = bird_roots(context.work_dir / BIRDS)
    return {"cub_root": cub, "places_root": places, "params": DEMO_SIZES}


DEMO = DemoStep(build=build, plan=plan)
