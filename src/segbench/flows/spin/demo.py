"""The SPIN demo: a generated PartImageNet-style source → the subpart taxonomy (offline WordNet and the
shipped edits) → one files-backend round per (super-category, part) answered by a simulated AMT crowd →
ingest (the hook imports and resolves the polygons) → the SPIN dataset → the parent-mask baseline
evaluated with SpCS / SeCS / mIoU."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from segbench import progress
from segbench.core.io import read_json, write_json
from segbench.demo.spin.baseline import write_parent_mask_predictions
from segbench.demo.spin.crowd import simulate_crowd_rows
from segbench.demo.spin.world import DemoSpinWorld, generate_demo_spin, read_truth
from segbench.flows.demo import DemoContext, DemoStep
from segbench.flows.prefect_ui import run_name, task_name
from segbench.flows.rounds import files_dir, ingest_round, launch_round
from segbench.flows.spin.build import build_spin, source_version, spin_paths, spin_round_items
from segbench.flows.spin.crowd import create_spin_rounds
from segbench.flows.spin.evaluate import evaluate_spin
from segbench.flows.spin.taxonomy import build_spin_taxonomy
from segbench.schemas.spin import SpinBuildParams, load_taxonomy
from segbench.schemas.spin_results import SpinDemo

KEY_PREFIX = "demo-spin"
WORKERS = 3
EVAL_SPLIT = "test"
BASELINE = "spin-parent-mask"


@task(**task_name("generate-demo-spin"), cache_policy=NO_CACHE)
def generate_source(root: Path, seed: int) -> DemoSpinWorld:
    return generate_demo_spin(root, seed=seed)


@task(**task_name("write-simulated-spin-answers"), cache_policy=NO_CACHE)
def write_simulated_answers(data_root: Path, round_: Any, truth_path: Path, taxonomy_path: Path, seed: int) -> Path:
    """The simulated workers' results rows (AMT format, JSON) in the round's results folder."""
    rows = simulate_crowd_rows(round_.items, read_truth(truth_path), load_taxonomy(taxonomy_path),
                               workers=WORKERS, seed=seed, task_id=round_.task_id)
    return write_json(files_dir(data_root, round_.key) / "results" / "simulated-workers.json", rows, indent=1)


@task(**task_name("predict-spin-parent-mask"), cache_policy=NO_CACHE)
def predict_parent_mask(dataset: Path, out: Path) -> dict[str, str]:
    """The parent-mask baseline's results files for the evaluated split."""
    return {level: str(path) for level, path in write_parent_mask_predictions(dataset, EVAL_SPLIT, out).items()}


@flow(name="demo-spin", flow_run_name=run_name("demo-spin", ("seed",)))
def run_spin_demo(data_root: Path, work_dir: Path, reports_dir: Path, provider: Any, seed: int = 0) -> SpinDemo:
    """Build SPIN end to end on a generated source, offline unless ``provider`` says otherwise.

    Args:
        data_root: ``spin/`` (taxonomy, crowd answers, dataset) and ``rounds/`` go here.
        reports_dir: the baseline's evaluation report goes to ``spin/demo-parent-mask`` under it.
        work_dir: the generated source (``demo-spin/``) and the baseline's predictions go here.
        provider: the language provider for the taxonomy (WordNet offline by default).

    Returns:
        The taxonomy build, the round keys, the crowd counts summed over the rounds, the SPIN build
        summary, the evaluation result and the paths worth opening.
    """
    data_root, work_dir = Path(data_root).resolve(), Path(work_dir).resolve()
    world = generate_source(work_dir / "demo-spin", seed)
    paths = spin_paths(data_root)
    taxonomy = build_spin_taxonomy(data_root / "spin", provider)
    params = SpinBuildParams(seed=seed)

    items = [item for group in spin_round_items(world.root, data_root, params).values() for item in group]
    rounds = create_spin_rounds(data_root, items, key_prefix=KEY_PREFIX, backend="files", overlap=WORKERS,
                                dataset_version=source_version(world.root, paths["taxonomy"]), overwrite=True)
    crowd: Counter = Counter()
    for round_ in progress.track(rounds, "SPIN crowd rounds (simulated workers)"):
        launched = launch_round(data_root, round_.key)
        write_simulated_answers(data_root, launched, world.truth_path, paths["taxonomy"], seed)
        ingested = ingest_round(data_root, round_.key)
        report = read_json(ingested.reports["report"])
        crowd.update({"items": len(round_.items), "answers": report["answers"], "resolved": report["resolved"],
                      "absent": report["absent"], "no_voters": report["no_voters"]})
        crowd.update({f"flag {name}": n for name, n in report["flags"].items()})

    spin = build_spin(world.root, data_root, params)
    predictions = work_dir / "predictions" / BASELINE
    files = predict_parent_mask(paths["dataset"], predictions)
    evaluation = evaluate_spin(repo=data_root, rev=None, predictions=files, split=EVAL_SPLIT, dataset_dir="spin",
                               out=Path(reports_dir) / "spin" / "demo-parent-mask")
    return SpinDemo(taxonomy=taxonomy, rounds=[r.key for r in rounds], crowd=dict(sorted(crowd.items())), spin=spin,
                    evaluation=evaluation, paths={
                        "SPIN demo source (inputs)": world.root,
                        "SPIN taxonomy": paths["taxonomy"],
                        "SPIN crowd answers": paths["resolved"],
                        "SPIN": paths["dataset"],
                        "SPIN statistics": paths["dataset"] / "stats",
                        "SPIN baseline predictions": predictions,
                        "SPIN evaluation report": evaluation.paths["report"],
                    })


def build(context: DemoContext) -> SpinDemo:
    """Build SPIN on a generated source and evaluate the parent-mask baseline on it."""
    return run_spin_demo(context.data_root, context.work_dir, context.reports_dir, context.provider, context.seed)


DEMO = DemoStep(build=build)
