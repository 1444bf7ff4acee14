"""One context-audit round answered by the adversarial crowd through the files backend, end to end:
create (gold mixed in) → ``tasks.csv`` → the crowd's results → answers → aggregation and worker
report, scored against the simulation's truth. The bench (``bench/crowd.py``) tabulates it; a test
holds the targets.

The round is a COCO-CD context audit with ``work`` work items and ``gold`` gold items whose truth is
80/20 indoor/outdoor; the gold is chosen by the round's own rule from candidates with the same
imbalance. What is measured per method: the share of work items whose label is the true one (no
label counts as wrong), and, for the worker report of the default aggregation, the share of
spammers and of honest workers it flags (suspicious or left out). The oracle knows every worker's
kind and mean accuracy and the labels' shares: spammers' answers carry no information, honest answers
are weighed by the log-odds of their accuracy.
"""

from __future__ import annotations

import csv
import math
import random
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from segbench.annotation_ui.convert import answers_from_files
from segbench.annotation_ui.crowd_files import write_file_tasks
from segbench.annotation_ui.gold import QualityOptions, gold_index, round_rules, split_answers, with_quality
from segbench.annotation_ui.kinds import answer_checks
from segbench.annotation_ui.rounds import RoundStore, new_round
from segbench.core.errors import ImportPolicy, OnError
from segbench.core.screening import aggregate_round
from segbench.demo.adversarial_crowd import CrowdMix, Worker, answer_rows, suspected_gold
from segbench.schemas.rounds import Answer, RoundConfig, RoundItem

CONTROL = "context"
LABELS = ("indoor", "outdoor")
PLAIN = ("majority", "dawid-skene", "glad")
# crowd-kit's categorical methods as people run them: every answer of the round (gold items too, as items).
CROWDKIT = ("MajorityVote", "Wawa", "ZeroBasedSkill", "DawidSkene", "OneCoinDawidSkene", "GLAD", "MACE", "KOS")


def run_trial(mix: CrowdMix, seed: int, *, work: int = 192, gold: int = 32,
              methods: Sequence[str] = ("screened", *PLAIN), crowdkit: Sequence[str] = (),
              traps: float = 0.35, rules: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Accuracy per method (segbench's ``methods``, crowd-kit's ``crowdkit`` on the same answers,
    the oracle) and the worker report's hits, for one seeded round.

    ``traps``: the share of the indoor work items on which the Sybils' policy says outdoor (gold
    items are clear scenes: the policy is right on every one). ``rules``: quality rules set for the
    round, as ``rounds create --rule`` sets them."""
    from segbench.flows.coco_cd.rounds import CONTEXT_AUDIT  # its label config decides the allowed labels

    rng = random.Random(f"trial:{seed}")
    ids = sorted(rng.sample(range(100_000, 999_999), 4 * (work + gold)))
    truth = {str(i): ("outdoor" if rng.random() < 0.2 else "indoor") for i in ids}
    work_items = [_item(i) for i in sorted(rng.sample(ids, work))]
    taken = {item.item_id for item in work_items}
    candidates = [_item(i, truth[str(i)]) for i in ids if str(i) not in taken]
    with tempfile.TemporaryDirectory() as tmp:
        round_ = new_round(f"trial-{seed}", CONTEXT_AUDIT.name, "coco_cd", "trial",
                           RoundConfig(label_config=CONTEXT_AUDIT.label_config.name, overlap=mix.overlap),
                           work_items, "files", "2026-03-01T00:00:00+00:00")
        round_ = with_quality(round_, candidates, QualityOptions(gold=gold, seed=seed, rules=dict(rules or {})),
                              RoundStore(Path(tmp)))
        tasks_csv = write_file_tasks(round_, Path(tmp))[0]
        with open(tasks_csv, newline="", encoding="utf-8") as handle:
            tasks = list(csv.DictReader(handle))
    by_task = round_.items_by_task_id()
    task_truth = {t["item_id"]: truth[by_task[t["item_id"]].item_id] for t in tasks}
    trap_rng = random.Random(f"traps:{seed}")
    policy = {task: "outdoor" if label == "indoor" and not by_task[task].gold and trap_rng.random() < traps else label
              for task, label in sorted(task_truth.items())}
    rows, workers = answer_rows(tasks, task_truth, LABELS, control=CONTROL, mix=mix, seed=seed, policy=policy)
    answers = answers_from_files(rows, round_, ImportPolicy(on_error=OnError.FAIL), **answer_checks(round_))
    own, _ = split_answers(round_, answers)
    known = gold_index(round_)
    scored_truth = {item.item_id: truth[item.item_id] for item in round_.items if not item.gold}
    out: dict[str, Any] = {}
    for method in methods:  # as an ingest aggregates: the same function, the round's rules
        result = aggregate_round(method, answers, answers, [CONTROL], known, rules=round_rules(round_))
        if method == "screened":
            flagged = {s["worker"] for s in result.report["suspicious"]} | set(result.left_out)
            spammers = {f"worker:{w.name}" for w in workers if w.spammer}
            honest = {f"worker:{w.name}" for w in workers if not w.spammer}
            out["spammers_flagged"] = len(flagged & spammers) / len(spammers) if spammers else None
            out["honest_flagged"] = len(flagged & honest) / len(honest)
        out[method] = _accuracy({i.item_id: i.majority.get(CONTROL) for i in result.items}, scored_truth)
    for name in crowdkit:
        labels = _crowdkit(name, answers)
        out[name] = None if labels is None else _accuracy(labels, scored_truth)
    out["oracle"] = _accuracy(_oracle(own, workers, scored_truth), scored_truth)
    suspected = {by_task[t].item_id for t in suspected_gold([t["item_id"] for t in tasks])}
    gold_ids = {item.item_id for item in round_.items if item.gold}
    out["gold_spotted"] = len(suspected & gold_ids) / len(gold_ids)
    out["spotted_share_gold"] = len(suspected & gold_ids) / len(suspected) if suspected else 0.0
    return out


def _item(image_id: int, known: str | None = None) -> RoundItem:
    return RoundItem(item_id=str(image_id), image=f"coco_cd/images/{image_id:012d}.png", width=64, height=64,
                     gold={CONTROL: known} if known else None)


def _accuracy(labels: dict[str, str | None], truth: dict[str, str]) -> float:
    return round(sum(labels.get(item) == label for item, label in truth.items()) / len(truth), 4)


def _crowdkit(name: str, answers: Sequence[Answer]) -> dict[str, str | None] | None:
    """crowd-kit's ``name`` fitted on every answer, as its documentation runs it (default parameters);
    None for a method this scikit-learn cannot run (crowd-kit 1.4's Wawa and ZeroBasedSkill call
    ``check_is_fitted``, which scikit-learn 1.6 and later refuse on crowd-kit's classes)."""
    import warnings

    import crowdkit.aggregation as ck
    import pandas as pd

    data = pd.DataFrame([(a.item_id, a.annotator, a.choices[CONTROL][0]) for a in answers if a.choices.get(CONTROL)],
                        columns=["task", "worker", "label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            labels = getattr(ck, name)().fit_predict(data)
        except AttributeError as exc:
            if "__sklearn_tags__" not in str(exc):
                raise
            return None
    return {str(task): str(label) for task, label in labels.items()}


def _oracle(answers: Sequence[Answer], workers: Sequence[Worker], truth: dict[str, str]) -> dict[str, str | None]:
    """The most probable label knowing who spams, each honest worker's accuracy and the labels'
    shares (the prior); None on a tie."""
    accuracy = {f"worker:{w.name}": w.accuracy for w in workers if not w.spammer}
    prior = {label: math.log(max(sum(v == label for v in truth.values()), 1) / len(truth)) for label in LABELS}
    score: dict[str, dict[str, float]] = {}
    for answer in answers:
        by_label = score.setdefault(answer.item_id, dict(prior))
        p = accuracy.get(answer.annotator)
        if p is None:
            continue
        said = answer.choices[CONTROL][0]
        for label in LABELS:
            by_label[label] += math.log(p if said == label else 1 - p)
    out: dict[str, str | None] = {}
    for item, by_label in score.items():
        best = max(by_label.values())
        top = [label for label, value in by_label.items() if math.isclose(value, best)]
        out[item] = top[0] if len(top) == 1 else None
    return out
