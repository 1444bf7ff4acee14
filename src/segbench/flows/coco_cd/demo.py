"""COCO-CD in the demo: the build on the shared demo world, its context audit answered by simulated
workers, and a context-biased baseline evaluated on the published version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from segbench.core.io import read_json
from segbench.demo.crowd import simulate_results, write_results_csv
from segbench.flows.coco_cd.audit import create_coco_cd_audit
from segbench.flows.coco_cd.baseline import predict_baseline
from segbench.flows.coco_cd.build import build_coco_cd
from segbench.flows.demo import DemoContext, DemoStep
from segbench.flows.flip import evaluate_coco_cd
from segbench.flows.prefect_ui import run_name
from segbench.flows.rounds import files_dir, ingest_round, launch_round
from segbench.schemas.coco_cd import CocoCdDemo, CocoCdParams
from segbench.schemas.rounds import RoundIngest
from segbench.tasks.coco_cd.audit import CONTROL, LABELS

# The demo world has 40-95 images per group: 10 val and 20 test per group leave room for ρ = 0.95.
DEMO_COCO_CD = {"val_per_group": 10, "test_per_group": 20}
AUDIT_KEY = "demo-context-audit"


@flow(name="demo-context-audit", flow_run_name=run_name("demo-context-audit", ("seed",)))
def run_audit(data_root: Path, world: Path, seed: int) -> RoundIngest:
    """The context audit on 5 validation images per group, answered by 3 simulated workers."""
    create_coco_cd_audit(data_root, AUDIT_KEY, per_group=5, seed=seed, backend="files", overlap=3, overwrite=True)
    round_ = launch_round(data_root, AUDIT_KEY)
    truth = {str(r["image_id"]): r["expected_context"] for r in read_json(world / "demo_world.json")["images"]}
    rows = simulate_results(round_, truth, control=CONTROL, labels=LABELS, workers=3, noise=0.1, seed=seed)
    write_results_csv(rows, files_dir(data_root, AUDIT_KEY) / "results" / "simulated-workers.csv")
    return ingest_round(data_root, AUDIT_KEY)


def build(context: DemoContext) -> CocoCdDemo:
    """Build COCO-CD from the demo world and run its context audit."""
    out = context.data_root / "coco_cd"
    summary = build_coco_cd(context.world, context.world, out, CocoCdParams(**DEMO_COCO_CD))
    audit = run_audit(context.data_root, context.world, context.seed)
    return CocoCdDemo(build=summary, audit=audit, paths={
        "COCO-CD": out, "COCO-CD tables": out / "tables", "context audit": audit.reports["audit_markdown"]})


def evaluate(context: DemoContext, results: CocoCdDemo) -> CocoCdDemo:
    """Predict with the context-biased baseline and evaluate it on the published ρ = 0.95 test split."""
    dataset_dir = f"{context.data_dir}/coco_cd"
    predictions = context.work_dir / "predictions" / "coco_cd-baseline"
    predict_baseline(repo=context.repo, rev=None, out=predictions, rho=0.95, split="test", dataset_dir=dataset_dir)
    evaluation = evaluate_coco_cd(repo=context.repo, rev=None, predictions=predictions, rho=0.95, split="test",
                                  out=context.reports_dir / "coco_cd" / "demo-baseline",
                                  dataset_dir=dataset_dir)
    paths = {"baseline predictions": predictions, "evaluation report": evaluation.paths["report"]}
    return results.model_copy(update={"evaluation": evaluation, "paths": results.paths | paths})


def plan(context: DemoContext) -> dict[str, Any]:
    """The build's ``[coco_cd]`` table of the demo's rebuild plan."""
    return {"coco_root": context.world, "stuff_root": context.world, "params": DEMO_COCO_CD}


DEMO = DemoStep(build=build, evaluate=evaluate, plan=plan)
