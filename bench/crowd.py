"""A simulated crowd: how much of the truth each aggregation recovers when some workers are spammers.

    .venv/bin/python bench/crowd.py [--quick]     # prints the tables (Markdown)
    .venv/bin/python bench/run.py --only crowd    # the benchmark row

Workers of known quality answer rounds; spammers (0%, 20%, 40% of the workers) answer uniformly at
random. Every item is answered by ``OVERLAP`` distinct workers drawn at random; ``GOLD_SHARE`` of the
items are gold (their answer is known), used only to score workers, never in the accuracy.

* Categorical: ``CLASSES`` labels; an honest worker is right with a probability drawn from
  ``HONEST_ACCURACY`` and otherwise picks another label at random. Reported: the share of (non-gold)
  items whose aggregated label is the true one, for majority vote (a tie recovers nothing), majority
  vote without the workers whose gold accuracy is below ``GOLD_THRESHOLD``
  (:func:`segbench.core.aggregation.workers_below`), Dawid–Skene with and without those workers, and
  GLAD (all through ``segbench.core.agreement.aggregate``); and, as the ceiling, an oracle that
  knows who spams and each honest worker's accuracy (maximum likelihood): no aggregation can beat it.
* Polygons (SPIN-like): each item has a true mask (a random star-shaped polygon); an honest worker
  traces it with Gaussian noise on every vertex (σ drawn from ``HONEST_SIGMA`` pixels), a spammer
  draws a random polygon anywhere. Reported: mean IoU with the true mask for segbench's SPIN medoid rule
  (the medoid mask, the one with the highest mean IoU with the others), the medoid among workers
  whose mean gold IoU is at least ``GOLD_IOU``, and crowd-kit's SegmentationMajorityVote,
  SegmentationEM and SegmentationRASA (:func:`segbench.core.aggregation.aggregate_masks`).

* Adversarial (``crowd_trial.py``): a COCO-CD context audit answered through the files backend by
  a crowd of colluding rings, one-label workers, random clickers and gold spotters among honest,
  majority-biased and drifting workers, on 80/20 truth (:mod:`segbench.demo.adversarial_crowd`).
  Rows at 5 and 7 workers per item and 20% / 40% spammers, each the mean over ``TRIAL_SEEDS``
  rounds: accuracy of the default (screened) aggregation and of the plain methods, the oracle, the
  share of spammers and of honest workers the worker report flags, and how much of the gold a
  spotter's pick finds (beside the gold's share of the tasks: equal means the gold cannot be spotted).

* Crowds beside crowd-kit (``CROWDS``): the same trial with one kind of adversary at a time (a Sybil
  majority answering by a plausible policy, specialists, a 95/5 crowd at 3 answers per item, …), the
  default aggregation beside crowd-kit's categorical methods (``crowd_trial.CROWDKIT``) run on the
  very same answers.

Every method runs on the same items (GLAD included). Everything is seeded: the same arguments give
the same numbers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from segbench.core.aggregation import aggregate_masks, gold_accuracy, mask_iou, workers_below
from segbench.core.agreement import aggregate
from segbench.core.masks import rle_to_bitmap, segmentation_to_rle
from segbench.schemas.rounds import Answer

SPAM_SHARES = (0.0, 0.2, 0.4)
WORKERS = 20
OVERLAP = 5
GOLD_SHARE = 0.1
CLASSES = 3
HONEST_ACCURACY = (0.8, 0.95)
GOLD_THRESHOLD = 0.6
SIZE = 64  # polygon items: SIZE × SIZE images
HONEST_SIGMA = (0.5, 2.5)
GOLD_IOU = 0.5
TRIAL_SEEDS = 10
ADVERSARIAL = {"screened (default)": "screened", "majority": "majority", "dawid-skene": "dawid-skene",
               "glad": "glad", "oracle": "oracle", "spammers flagged": "spammers_flagged",
               "honest flagged": "honest_flagged", "gold among a spotter's picks": "spotted_share_gold"}
CATEGORICAL = ("majority", "gold-filtered majority", "dawid-skene", "gold-filtered dawid-skene", "glad", "oracle")
POLYGON = ("medoid rule", "gold-filtered medoid", "pixel majority", "segmentation EM", "RASA")


def _crowd(rng: np.random.Generator, spam: float) -> tuple[list[str], set[str]]:
    workers = [f"w{n:02d}" for n in range(WORKERS)]
    spammers = set(rng.choice(workers, size=round(spam * WORKERS), replace=False).tolist())
    return workers, spammers


def _assignments(rng: np.random.Generator, items: int, workers: list[str], overlap: int = OVERLAP) -> list[list[str]]:
    return [sorted(rng.choice(workers, size=overlap, replace=False).tolist()) for _ in range(items)]


# --- categorical -----------------------------------------------------------------------------------------

def categorical(items: int, spam: float, seed: int, methods: Sequence[str] = CATEGORICAL,
                accuracy: tuple[float, float] = HONEST_ACCURACY, overlap: int = OVERLAP) -> dict[str, float]:
    """Share of non-gold items each method labels right; honest workers' accuracy is drawn from ``accuracy``."""
    rng = np.random.default_rng(seed)
    workers, spammers = _crowd(rng, spam)
    accuracy = {w: float(rng.uniform(*accuracy)) for w in workers}
    truth = {f"i{n:05d}": f"c{int(rng.integers(CLASSES))}" for n in range(items)}
    gold = dict(list(truth.items())[: round(GOLD_SHARE * items)])
    answers, votes = [], {}
    for (item, label), who in zip(truth.items(), _assignments(rng, items, workers, overlap), strict=True):
        for worker in who:
            if worker in spammers:
                said = f"c{int(rng.integers(CLASSES))}"
            elif rng.random() < accuracy[worker]:
                said = label
            else:
                said = f"c{int(rng.choice([k for k in range(CLASSES) if f'c{k}' != label]))}"
            answers.append(Answer(item_id=item, annotator=worker, source_id=f"{worker}/{item}",
                                  choices={"label": [said]}))
            votes.setdefault(item, {})[worker] = said
    drop = workers_below(gold_accuracy(votes, gold), GOLD_THRESHOLD)
    scored = [item for item in truth if item not in gold]
    out = {}
    for method in methods:
        if method.startswith("gold-filtered "):
            model = method.removeprefix("gold-filtered ")
            result = aggregate(answers, ["label"], method=model, exclude_workers=drop)
        else:
            result = aggregate(answers, ["label"], method=method)
        labels = {i.item_id: i.majority.get("label") for i in result}
        out[method] = sum(labels.get(item) == truth[item] for item in scored) / len(scored)
    ceiling = _oracle(votes, spammers, accuracy)
    out["oracle"] = sum(ceiling.get(item) == truth[item] for item in scored) / len(scored)
    out["dropped"] = len(drop)
    out["dropped spammers"] = len(set(drop) & spammers)
    return out


def _oracle(votes: dict[str, dict[str, str]], spammers: set[str], accuracy: dict[str, float]) -> dict[str, str | None]:
    """The best any aggregation can do: the maximum-likelihood label knowing who spams and every
    honest worker's true accuracy (spammers' answers carry no information). None on a tie."""
    out: dict[str, str | None] = {}
    labels = [f"c{k}" for k in range(CLASSES)]
    for item, by_worker in votes.items():
        score = np.zeros(CLASSES)
        for worker, said in by_worker.items():
            if worker not in spammers:
                p = accuracy[worker]
                score += [np.log(p) if said == c else np.log((1 - p) / (CLASSES - 1)) for c in labels]
        best = np.flatnonzero(np.isclose(score, score.max()))
        out[item] = labels[best[0]] if len(best) == 1 else None
    return out


# --- polygons --------------------------------------------------------------------------------------------

def _star(rng: np.random.Generator, cx: float, cy: float, radius: float, vertices: int = 12) -> np.ndarray:
    angles = np.sort(rng.uniform(0, 2 * np.pi, vertices))
    radii = radius * rng.uniform(0.6, 1.0, vertices)
    return np.stack([cx + radii * np.cos(angles), cy + radii * np.sin(angles)], axis=1)  # (V, 2) x, y


def _raster(points: np.ndarray) -> np.ndarray:
    clipped = np.clip(points, 0, SIZE)
    return rle_to_bitmap(segmentation_to_rle([clipped.ravel().tolist()], SIZE, SIZE))


def _medoid(masks: dict[str, np.ndarray]) -> np.ndarray:
    """The SPIN medoid rule's mask choice: the highest mean IoU with the others, smallest id on ties."""
    names = sorted(masks)
    if len(names) == 1:
        return masks[names[0]]
    scores = [np.mean([mask_iou(masks[a], masks[b]) for b in names if b != a]) for a in names]
    return masks[names[int(np.argmax(np.round(scores, 9)))]]


def polygon_round(items: int, spam: float, seed: int) -> dict[str, float]:
    """Mean IoU with the true mask over non-gold items, per method."""
    rng = np.random.default_rng(seed)
    workers, spammers = _crowd(rng, spam)
    sigma = {w: float(rng.uniform(*HONEST_SIGMA)) for w in workers}
    n_gold = round(GOLD_SHARE * items)
    truths, drawn = [], []
    for who in _assignments(rng, items, workers):
        reference = _star(rng, *rng.uniform(0.35 * SIZE, 0.65 * SIZE, 2), rng.uniform(0.15 * SIZE, 0.3 * SIZE))
        masks = {}
        for worker in who:
            if worker in spammers:
                shape = _star(rng, *rng.uniform(0, SIZE, 2), rng.uniform(0.05 * SIZE, 0.3 * SIZE))
            else:
                shape = reference + rng.normal(0, sigma[worker], reference.shape)
            masks[worker] = _raster(shape)
        truths.append(_raster(reference))
        drawn.append(masks)
    gold_iou: dict[str, list[float]] = {}
    for truth, masks in zip(truths[:n_gold], drawn[:n_gold], strict=True):
        for worker, mask in masks.items():
            gold_iou.setdefault(worker, []).append(mask_iou(mask, truth))
    drop = set(workers_below({w: float(np.mean(v)) for w, v in gold_iou.items()}, GOLD_IOU))
    methods = {
        "medoid rule": _medoid,
        "gold-filtered medoid": lambda m: _medoid({w: x for w, x in m.items() if w not in drop} or m),
        "pixel majority": lambda m: aggregate_masks(m, "majority"),
        "segmentation EM": lambda m: aggregate_masks(m, "em"),
        "RASA": lambda m: aggregate_masks(m, "rasa"),
    }
    out = {name: float(np.mean([mask_iou(fn(masks), truth) for truth, masks in
                                zip(truths[n_gold:], drawn[n_gold:], strict=True)]))
           for name, fn in methods.items()}
    out["dropped"] = len(drop)
    out["dropped spammers"] = len(drop & spammers)
    return out


# --- tables ----------------------------------------------------------------------------------------------

def crowds() -> dict[str, Any]:
    from segbench.demo.adversarial_crowd import CrowdMix

    return {
        "mixed adversaries, 7 per item, 40%": CrowdMix(spammers=0.4, overlap=7),
        "Sybil majority: 12 of 30 accounts, a plausible policy": CrowdMix(spammers=0.0, overlap=7, sybils=12),
        "Sybils (10 accounts) and 30% spammers": CrowdMix(spammers=0.3, overlap=7, sybils=10),
        "half the honest workers specialists, 30% spammers": CrowdMix(spammers=0.3, overlap=7,
                                                                     honest_kinds=("plain", "specialist")),
        "95/5, 3 per item": CrowdMix(spammers=0.05, overlap=3),
        "30% camouflaged spammers (careful on their first 15 tasks)": CrowdMix(spammers=0.3, overlap=7,
                                                                               spammer_kinds=("camouflaged",)),
        "30% herders (copying the answers given so far)": CrowdMix(spammers=0.3, overlap=7, spammer_kinds=("herder",)),
        "30% gold spotters": CrowdMix(spammers=0.3, overlap=7, spammer_kinds=("spotter",)),
        "Sybils (8 accounts, 3 of 5 seats) and 20% spammers": CrowdMix(spammers=0.2, overlap=5, sybils=8,
                                                                        sybil_seats=3),
        "95/5, 5 per item": CrowdMix(spammers=0.05, overlap=5),
        "60% mixed adversaries, 9 per item": CrowdMix(spammers=0.6, overlap=9),
        "50 workers, 25% mixed adversaries, 4 per item": CrowdMix(workers=50, spammers=0.25, overlap=4),
        "Sybil majority (12 accounts) answering at random 10% of the time": CrowdMix(spammers=0.0, overlap=7,
                                                                                    sybils=12, sybil_noise=0.1),
    }


def crowd_rows(trials: int, seed: int = 0,
               rules: dict[str, float] | None = None) -> dict[str, dict[str, float | None]]:
    """Per crowd of :func:`crowds`: the default aggregation and crowd-kit's methods, mean of ``trials``
    rounds (a method this scikit-learn cannot run is None)."""
    from crowd_trial import CROWDKIT, run_trial

    out: dict[str, dict[str, float | None]] = {}
    for name, mix in crowds().items():
        runs = [run_trial(mix, seed + n, methods=("screened",), crowdkit=CROWDKIT, rules=rules) for n in range(trials)]
        out[name] = {key: None if runs[0][key] is None else round(float(np.mean([r[key] for r in runs])), 3)
                     for key in ("screened", *CROWDKIT, "oracle")}
    return out


def run_all(quick: bool, seed: int = 0, accuracy: tuple[float, float] = HONEST_ACCURACY,
            polygons: bool = True, overlap: int = OVERLAP, adversarial: bool = True,
            crowds: bool = False, rules: dict[str, float] | None = None) -> dict[str, Any]:
    cat_items, poly_items, trials = (600, 60, 3) if quick else (2000, 200, TRIAL_SEEDS)
    tables: dict[str, Any] = {"categorical": {}, "polygons": {}, "adversarial": {}, "sizes": {
        "categorical_items": cat_items, "polygon_items": poly_items, "workers": WORKERS,
        "overlap": overlap, "classes": CLASSES, "gold_share": GOLD_SHARE, "honest_accuracy": list(accuracy),
        "trials": trials}}
    for spam in SPAM_SHARES:
        key = f"{round(spam * 100)}%"
        tables["categorical"][key] = categorical(cat_items, spam, seed, [m for m in CATEGORICAL if m != "oracle"],
                                                 accuracy, overlap)
        if polygons:
            tables["polygons"][key] = polygon_round(poly_items, spam, seed)
    if adversarial:
        tables["adversarial"] = adversarial_rows(trials, seed)
    if crowds:
        tables["crowds"] = crowd_rows(trials, seed, rules)
    return tables


def adversarial_rows(trials: int, seed: int = 0) -> dict[str, dict[str, float]]:
    """Mean of each measure over ``trials`` seeded rounds, per (workers per item, spammer share)."""
    from crowd_trial import run_trial

    from segbench.demo.adversarial_crowd import CrowdMix

    out = {}
    for overlap in (5, 7):
        for spam in (0.2, 0.4):
            runs = [run_trial(CrowdMix(spammers=spam, overlap=overlap), seed + n) for n in range(trials)]
            out[f"{overlap} per item, {round(spam * 100)}% spammers"] = {
                key: round(float(np.mean([r[key] for r in runs])), 3) for key in runs[0]}
    return out


def markdown(tables: dict[str, Any]) -> str:
    sizes = tables["sizes"]
    lines = [f"Categorical: share of true labels recovered ({sizes['categorical_items']} items, every method on "
             f"all of them; {sizes['classes']} classes, {sizes['workers']} workers, overlap "
             f"{sizes['overlap']}, {round(sizes['gold_share'] * 100)}% gold, honest workers right "
             f"{sizes['honest_accuracy'][0]:.2f}–{sizes['honest_accuracy'][1]:.2f} of the time)", "",
             "| spammers | " + " | ".join(CATEGORICAL) + " |", "|---" * (len(CATEGORICAL) + 1) + "|"]
    lines += [f"| {k} | " + " | ".join(f"{row[m]:.3f}" for m in CATEGORICAL) + " |"
              for k, row in tables["categorical"].items()]
    if tables["adversarial"]:
        lines += ["", f"Adversarial crowd: share of work items right, mean of {sizes['trials']} rounds (192 work + 32 "
                  "gold items, 30 workers, 80/20 truth); flagged: by the worker report of the default aggregation; "
                  "gold found: share of the gold among a spotter's picks (the gold is 14.3% of the tasks)", "",
                  "| crowd | " + " | ".join(ADVERSARIAL) + " |", "|---" * (len(ADVERSARIAL) + 1) + "|"]
        lines += [f"| {k} | " + " | ".join(f"{row[m]:.3f}" for m in ADVERSARIAL.values()) + " |"
                  for k, row in tables["adversarial"].items()]
    if tables.get("crowds"):
        methods = list(next(iter(tables["crowds"].values())))
        lines += ["", "One kind of adversary at a time: share of work items right, the default beside crowd-kit's "
                  "methods on the same answers (–: not runnable with this scikit-learn)", "",
                  "| crowd | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
        lines += [f"| {k} | " + " | ".join("–" if row[m] is None else f"{row[m]:.3f}" for m in methods) + " |"
                  for k, row in tables["crowds"].items()]
    if not tables["polygons"]:
        return "\n".join(lines) + "\n"
    lines += ["", f"Polygons: mean IoU with the true mask ({sizes['polygon_items']} items)", "",
              "| spammers | " + " | ".join(POLYGON) + " |", "|---" * (len(POLYGON) + 1) + "|"]
    lines += [f"| {k} | " + " | ".join(f"{row[m]:.3f}" for m in POLYGON) + " |"
              for k, row in tables["polygons"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer items")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--accuracy", type=float, nargs=2, default=HONEST_ACCURACY, metavar=("LOW", "HIGH"),
                        help="range of honest workers' accuracy (categorical)")
    parser.add_argument("--overlap", type=int, default=OVERLAP, help="workers per item (categorical)")
    parser.add_argument("--categorical-only", action="store_true", help="skip the polygons")
    parser.add_argument("--no-adversarial", action="store_true", help="skip the adversarial crowd")
    parser.add_argument("--crowds", action="store_true",
                        help="also one kind of adversary at a time, beside crowd-kit's methods (minutes)")
    parser.add_argument("--rule", action="append", default=[], metavar="NAME=VALUE",
                        help="a quality rule for the --crowds rounds, as rounds create --rule sets it")
    args = parser.parse_args(argv)
    rules = {name: float(value) for name, _, value in (r.partition("=") for r in args.rule)}
    print(markdown(run_all(args.quick, args.seed, tuple(args.accuracy), polygons=not args.categorical_only,
                           overlap=args.overlap, adversarial=not args.no_adversarial, crowds=args.crowds,
                           rules=rules)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
