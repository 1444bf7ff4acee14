"""CAFE gold is made from candidates held out of the round with their photos: nothing in a task ties a
gold item to a work item, so detectors that look for a twin (the same photo, the same prompts, the same
size) tell gold from work no better than chance (not significantly, and ROC AUC under 0.75; the
twins of gold made from work items gave 0.85)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from scipy.stats import mannwhitneyu
from sklearn.metrics import roc_auc_score
from support.cli import run

from segbench.core.io import read_json
from segbench.demo.cafe.sources import generate_demo_cafe, simulated_rows, simulated_truth
from segbench.demo.crowd import write_results_csv
from segbench.flows.cafe.verification import read_candidates
from segbench.schemas.rounds import Round

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def _thumbnail(path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("L").resize((32, 32)), dtype=float)


def _detector_scores(round_: Round, data) -> dict[str, list[float]]:
    """Per task, how strongly it has a twin among the other tasks: the nearest picture, and how many
    other tasks show the same prompts or the same size. A gold item made from a work item scores high."""
    items = round_.items
    pictures = np.stack([_thumbnail(data / item.image) for item in items])
    distance = np.abs(pictures[:, None] - pictures[None]).mean(axis=(2, 3))
    np.fill_diagonal(distance, np.inf)
    prompts = [(item.data["q_pos"], item.data["q_neg"]) for item in items]
    sizes = [(item.width, item.height) for item in items]
    return {
        "nearest picture": list(-distance.min(axis=1)),
        "same prompts": [prompts.count(p) - 1 for p in prompts],
        "same q+": [[q for q, _ in prompts].count(p[0]) - 1 for p in prompts],
        "same size": [sizes.count(s) - 1 for s in sizes],
    }


def test_gold_shares_no_photo_or_prompts_with_the_work_and_twin_detectors_hardly_tell_it_apart(tmp_path):
    sources = generate_demo_cafe(tmp_path / "sources", seed=0, sizes={"coco": 12, "lvis": 8})
    data = tmp_path / "data"
    options = [arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")]
    run(tmp_path, "build", "cafe-candidates", *options)
    given = [arg for spec in sources for arg in ("--gold-source", f"{spec.name}={spec.images}")]
    run(tmp_path, "rounds", "create", "cafe_verification", "v1", "--backend", "files", "--gold", "6", "--seed", "3",
        *given)
    round_ = Round.model_validate(read_json(data / "rounds" / "v1.json"))
    candidates = {str(c.id): c for c in read_candidates(data / "cafe_candidates")}
    work = [candidates[i.item_id] for i in round_.items if not i.gold]
    gold = [i for i in round_.items if i.gold]
    assert len(gold) == 6 and len(work) < len(candidates)
    assert "held out of the round" in (round_.gold_selection or "")

    # Each gold item was made from a held-out candidate: its photo and its prompts are no work item's.
    work_photos = {(c.target.source, c.target.file_name) for c in work}
    for item in gold:
        made_from = [c for c in candidates.values() if (c.plan.q_pos, c.plan.q_neg, c.plan.edit_type.value)
                     == (item.data["q_pos"], item.data["q_neg"], item.data["edit_type"]) and c not in work]
        assert made_from and all((c.target.source, c.target.file_name) not in work_photos for c in made_from)

    # Gold that needs every candidate's photo would leave no work: refused, as is more than can be made.
    every = run(tmp_path, "rounds", "create", "cafe_verification", "v9", "--backend", "files", "--gold",
                str(len(candidates)), *given, code=1)
    assert "holds out all" in str(every.exception) and every.exception.item == "--gold"
    more = run(tmp_path, "rounds", "create", "cafe_verification", "v9", "--backend", "files", "--gold",
               str(len(candidates) + 1), *given, code=1)
    assert f"only {len(candidates)} known-bad pairs can be made" in str(more.exception)

    # No detector ranks gold above work better than chance: not significantly (one-sided Mann–Whitney,
    # whose U is the AUC times the pairs), and not by much.
    is_gold = [bool(item.gold) for item in round_.items]
    for name, scores in _detector_scores(round_, data).items():
        if len(set(scores)) > 1:
            assert roc_auc_score(is_gold, scores) < 0.75, name
            on_gold = [s for s, g in zip(scores, is_gold, strict=True) if g]
            on_work = [s for s, g in zip(scores, is_gold, strict=True) if not g]
            assert mannwhitneyu(on_gold, on_work, alternative="greater").pvalue > 0.05, name

    # The round's report and its export ask only about the work items, and say how many were held out.
    run(tmp_path, "rounds", "launch", "v1")
    truth = simulated_truth(list(candidates.values()), seed=0) | {
        i.item_id: {"positive_valid": "yes", "negative_invalid": "yes", "edit_clean": "yes", "mask_fits": "yes", **i.gold}
        for i in gold}
    write_results_csv(simulated_rows(round_, truth, noise=0.0), data / "rounds" / "v1" / "results" / "workers.csv")
    run(tmp_path, "rounds", "ingest", "v1")
    held = len(candidates) - len(work)
    report = read_json(data / "cafe_verification" / "v1.json")
    assert report["held_out_for_gold"] == held and report["overall"]["items"] == len(work)
    assert f"{held} candidates were held out of this round" in (data / "cafe_verification" / "v1.md").read_text()
    assert "held out for gold" in run(tmp_path, "build", "cafe", "--round", "v1").output
    counts = read_json(data / "cafe" / "manifest.json")["counts"]
    assert counts["held_out"] == held and counts["unanswered"] == 0
    assert counts["samples"] + counts["not_verified"] == len(work)
