"""The CAFE demo: generated sources → candidates (offline plans and edits) → a files-backend
verification round answered by simulated workers → the SA-Co export of the verified pairs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from segbench.core.io import read_json, write_json
from segbench.demo.cafe.baseline import prompt_blind_predictions
from segbench.demo.cafe.sources import generate_demo_cafe, simulated_rows, simulated_truth
from segbench.demo.crowd import write_results_csv
from segbench.flows.cafe.candidates import build_cafe_candidates
from segbench.flows.cafe.evaluate import evaluate_cafe
from segbench.flows.cafe.export import build_cafe
from segbench.flows.cafe.verification import CANDIDATES_DIR, create_cafe_verification, read_candidates
from segbench.flows.demo import DemoContext, DemoStep
from segbench.flows.prefect_ui import run_name
from segbench.flows.rounds import files_dir, ingest_round, launch_round
from segbench.providers.cafe.editors import make_image_editor
from segbench.schemas.cafe import CafeDemo, CafeParams
from segbench.settings import load_settings

VERIFICATION_KEY = "demo-cafe-verification"
# The demo sources are tiny; take every target so each edit type gets several samples.
DEMO_PARAMS = {"plan_batch": 8, "edit_shard": 8}


@flow(name="demo-cafe", flow_run_name=run_name("demo-cafe", ("seed",)))
def run_cafe_demo(data_root: Path, work_dir: Path, provider: Any, seed: int = 0,
                  editor: Any = None) -> CafeDemo:
    """Build CAFE end to end on generated sources, offline unless ``provider`` / ``editor`` say otherwise.

    Args:
        provider: the language provider for the edit plans (WordNet offline by default).
        editor: the image editor (default: the offline Pillow compositor).

    Returns:
        The candidate summary, the round ingest result, the export summary and the paths worth opening.
    """
    data_root, work_dir = Path(data_root).resolve(), Path(work_dir).resolve()
    sources = generate_demo_cafe(work_dir / "demo-cafe", seed=seed)
    candidates = build_cafe_candidates(sources, data_root / CANDIDATES_DIR, provider,
                                       CafeParams(seed=seed, **DEMO_PARAMS), editor=editor,
                                       nltk_data=work_dir / "nltk_data")
    create_cafe_verification(data_root, VERIFICATION_KEY, backend="files", overlap=3, overwrite=True)
    round_ = launch_round(data_root, VERIFICATION_KEY)
    truth = simulated_truth(read_candidates(data_root / CANDIDATES_DIR), seed=seed)
    rows = simulated_rows(round_, truth, workers=3, seed=seed)
    write_results_csv(rows, files_dir(data_root, VERIFICATION_KEY) / "results" / "simulated-workers.csv")
    verification = ingest_round(data_root, VERIFICATION_KEY)
    export = build_cafe(data_root, VERIFICATION_KEY)
    return CafeDemo(candidates=candidates, verification=verification, export=export, paths={
        "demo sources (inputs)": work_dir / "demo-cafe",
        "CAFE candidates": data_root / CANDIDATES_DIR,
        "verification report": verification.reports["verification_markdown"],
        "CAFE (SA-Co)": export.files["CAFE"],
        "CAFE prompt pairs": data_root / "cafe" / "tables" / "prompt_pairs.md",
    })


def build(context: DemoContext) -> CafeDemo:
    """Build CAFE on generated sources with the demo's language provider and the image editor the
    settings ask for (the Pillow compositor offline; the command's --config reaches it as SEGBENCH_CONFIG)."""
    editor = context.editor or make_image_editor(load_settings(data_root=context.data_root, work_dir=context.work_dir))
    return run_cafe_demo(context.data_root, context.work_dir, context.provider, context.seed, editor=editor)


def evaluate(context: DemoContext, results: CafeDemo) -> CafeDemo:
    """Evaluate the prompt-blind baseline on the published CAFE export (the failure CAFE exposes)."""
    predictions = context.work_dir / "predictions" / "cafe-prompt-blind.json"
    write_json(predictions, prompt_blind_predictions(read_json(results.export.files["CAFE"])))
    evaluation = evaluate_cafe(repo=context.repo, rev=None, gt=None, predictions=predictions,
                               out=context.reports_dir / "cafe" / "demo-prompt-blind",
                               dataset_dir=f"{context.data_dir}/cafe")
    paths = results.paths | {"CAFE evaluation report": evaluation.paths["report"]}
    return results.model_copy(update={"evaluation": evaluation, "paths": paths})


DEMO = DemoStep(build=build, evaluate=evaluate)
