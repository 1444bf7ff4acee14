"""The demo: the whole product on generated worlds, offline and without keys.

Generates the demo world (with captions), a small CUB/Places-like source, COCO-format sources for
CAFE and a PartImageNet-like source for SPIN; builds every dataset — COCO-CD, Waterbirds-seg, the
valid vocabulary of COCO-CD's categories, CAFE (plans, edits, a verification round) and SPIN
(taxonomy, crowd rounds, dataset, statistics) — with every human round answered by simulated
workers through the files backend; publishes a DVC version of the data root (to a local remote
under the work dir unless one is configured); and evaluates a baseline on COCO-CD, CAFE and SPIN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from segbench.flows.coco_cd.build import build_coco_cd
from segbench.flows.coco_cd.audit import create_coco_cd_audit
from segbench.flows.cafe.demo import run_cafe_demo
from segbench.flows.spin.demo import run_spin_demo
from segbench.flows.flip import evaluate_coco_cd, predict_baseline
from segbench.flows.cafe.evaluate import evaluate_cafe
from segbench.flows.publish import publish_data
from segbench.flows.rounds import files_dir, ingest_round, launch_round
from segbench.flows.vocab.build import build_vocab
from segbench.flows.waterbirds import build_waterbirds
from segbench.schemas.coco_cd import CocoCdParams
from segbench.schemas.vocab import VocabParams
from segbench.core import versioning
from segbench.demo.cafe.baseline import prompt_blind_predictions
from segbench.tasks.coco_cd.audit import CONTROL, LABELS
from segbench.demo.waterbirds.birds import generate_demo_birds
from segbench.demo.vocab.captions import generate_demo_captions
from segbench.demo.world import generate_demo_world
from segbench.core.io import read_json, write_json
from segbench.demo.crowd import simulate_results, write_results_csv

# The demo world has 40-95 images per group: 10 val and 20 test per group leave room for ρ = 0.95.
DEMO_COCO_CD = {"val_per_group": 10, "test_per_group": 20}
AUDIT_KEY = "demo-context-audit"


@flow(name="demo-context-audit")
def run_audit(data_root: Path, world: Path, seed: int) -> dict[str, Any]:
    """The context audit on 5 validation images per group, answered by 3 simulated workers."""
    create_coco_cd_audit(data_root, AUDIT_KEY, per_group=5, seed=seed, backend="files", overlap=3, overwrite=True)
    round_ = launch_round(data_root, AUDIT_KEY)
    truth = {str(r["image_id"]): r["expected_context"] for r in read_json(world / "demo_world.json")["images"]}
    rows = simulate_results(round_, truth, control=CONTROL, labels=LABELS, workers=3, noise=0.1, seed=seed)
    write_results_csv(rows, files_dir(data_root, AUDIT_KEY) / "results" / "simulated-workers.csv")
    return ingest_round(data_root, AUDIT_KEY)


@task(name="generate-demo-world", cache_policy=NO_CACHE)
def generate_world(root: Path, seed: int) -> Path:
    generate_demo_world(root, seed=seed)
    return root


@flow(name="demo")
def run_demo(repo: Path, data_root: Path, work_dir: Path, provider: Any, seed: int = 0,
             dvc_remote: str | None = None, spacy_model: str = "en_core_web_sm") -> dict[str, Any]:
    """Run build → publish → predict → evaluate on the demo world.

    Args:
        repo: the git + DVC project that versions ``data_root`` (``git init`` is run if it is not
            in a repository yet).
        provider: the language provider for the vocabulary (WordNet offline by default).
        dvc_remote: remote URL to push to; default: the repository's default remote, else
            ``<work_dir>/dvc-remote``.

    Returns:
        The build summary, the publish record, the evaluation result and the paths worth opening.
    """
    repo, data_root, work_dir = Path(repo).resolve(), Path(data_root).resolve(), Path(work_dir).resolve()
    world = generate_world(work_dir / "demo-world", seed)
    coco_cd = build_coco_cd(world, world, data_root / "coco_cd", CocoCdParams(**DEMO_COCO_CD))
    cub, places = generate_demo_birds(work_dir / "demo-birds", seed=seed)
    waterbirds = build_waterbirds(cub, places, data_root / "waterbirds_seg")
    vocab = build_vocab(generate_demo_captions(world, seed=seed), "coco_cd", data_root / "vocab" / "coco_cd",
                        provider, VocabParams(spacy_model=spacy_model), nltk_data=work_dir / "nltk_data")
    audit = run_audit(data_root, world, seed)
    cafe = run_cafe_demo(data_root, work_dir, provider, seed)
    spin = run_spin_demo(data_root, work_dir, provider, seed)

    versioning.ensure_repo(repo, init_git=not _inside_git(repo))
    if dvc_remote is None and versioning.default_remote(repo) is None:
        dvc_remote = str(work_dir / "dvc-remote")
    data_dir = data_root.relative_to(repo).as_posix()
    record = publish_data(repo=str(repo), data_dir=data_dir, remote_url=dvc_remote)

    dataset_dir = f"{data_dir}/coco_cd"
    predictions = work_dir / "predictions" / "coco_cd-baseline"
    predict_baseline(repo=repo, rev=None, out=predictions, rho=0.95, split="test", dataset_dir=dataset_dir)
    report_dir = data_root / "eval" / "coco_cd" / "demo-baseline"
    evaluation = evaluate_coco_cd(repo=repo, rev=None, predictions=predictions, out=report_dir, rho=0.95,
                                  split="test", dataset_dir=dataset_dir)
    cafe_predictions = work_dir / "predictions" / "cafe-prompt-blind.json"
    write_json(cafe_predictions, prompt_blind_predictions(read_json(cafe["export"]["files"]["CAFE"])))
    cafe_evaluation = evaluate_cafe(repo=repo, rev=None, gt=None, predictions=cafe_predictions,
                                    out=data_root / "eval" / "cafe" / "demo-prompt-blind",
                                    dataset_dir=f"{data_dir}/cafe")
    return {
        "coco_cd": coco_cd,
        "cafe": cafe,
        "cafe_evaluation": cafe_evaluation,
        "spin": spin,
        "waterbirds": waterbirds,
        "vocab": vocab,
        "publish": record,
        "evaluation": evaluation,
        "audit": audit,
        "paths": {
            "demo world (inputs)": world,
            "COCO-CD": data_root / "coco_cd",
            "COCO-CD tables": data_root / "coco_cd" / "tables",
            "Waterbirds-seg": data_root / "waterbirds_seg",
            "vocabulary": data_root / "vocab" / "coco_cd" / "coco_cd.json",
            "baseline predictions": predictions,
            "context audit": audit["reports"]["audit_markdown"],
            "evaluation report": evaluation["paths"]["report"],
            **cafe["paths"],
            "CAFE evaluation report": cafe_evaluation["paths"]["report"],
            **spin["paths"],
            "DVC pointer": repo / f"{data_dir}.dvc",
        },
    }


def _inside_git(path: Path) -> bool:
    return any((parent / ".git").exists() for parent in (path, *path.parents))
