"""SPIN crowd flows: create the per-(object, part) rounds, and import their answers into
``data/spin/crowd/`` (raw answers with their flags, resolved subpart masks, a report).

Answers come from a round already ingested (``data/rounds/<key>.answers.json``: Label Studio or files
backend), or straight from an AMT-style results file (``--results``). Part masks come from the round
items (``part_rle`` in their data) or from a COCO parts file (PartImageNet annotations, whose ids are
the items' ``part_ann_id``). Outputs, each written atomically:

* ``crowd/<key>.raw.jsonl`` — every answer, validated per subpart, with flags;
* ``crowd/<key>.report.json`` — counts and flags;
* ``crowd/resolved.json`` — resolved subparts of every imported round (this round's records replace
  its previous ones) with the review rounds' decisions laid over them (``crowd/reviews.json``,
  :mod:`segbench.tasks.spin.review`), sorted by (image_id, part_ann_id, subpart).

Re-importing the same answers gives byte-identical files. ``mask_aggregation`` chooses how a present
subpart's mask is resolved (``medoid``, the default; or crowd-kit's ``em``, ``majority``,
``rasa``; see :mod:`segbench.tasks.spin.crowd`); the report and every resolved record name the rule, and a
round's report keeps the method so that the ingest hook re-imports with it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from segbench.annotation_ui.convert import answers_from_files
from segbench.annotation_ui.crowd_files import read_results
from segbench.annotation_ui.followups import chain, final_key
from segbench.annotation_ui.gold import (
    QualityOptions,
    counted,
    pass_list,
    read_gold_file,
    saved_left_out,
    shuffle,
    split_answers,
    with_quality,
    without_gold,
)
from segbench.annotation_ui.kinds import answer_checks
from segbench.annotation_ui.rounds import RoundStore
from segbench.core import clock
from segbench.core.errors import ImportPolicy, InputError, OnError
from segbench.core.io import write_json, write_jsonl
from segbench.flows.spin.rounds import spin_rounds
from segbench.schemas.rounds import Answer, Round, RoundItem
from segbench.schemas.spin import PartContext, ResolvedSubpart, load_taxonomy, read_resolved, read_reviews
from segbench.schemas.spin_results import SpinImport
from segbench.tasks.spin import crowd as sc
from segbench.tasks.spin.gold import page_gold
from segbench.tasks.spin.review import apply_reviews

logger = logging.getLogger(__name__)

CROWD_DIR = "spin/crowd"
RESOLVED_FILE = "resolved.json"
REVIEWS_FILE = "reviews.json"  # review rounds' decisions, laid over every resolved.json written


def default_taxonomy(data_root: Path) -> Path:
    return Path(data_root) / "spin" / "taxonomy.yaml"


def create_spin_rounds(data_root: Path, items: list[RoundItem], *, key_prefix: str, dataset_version: str,
                       backend: Literal["labelstudio", "files"] = "labelstudio", overlap: int = 3,
                       taxonomy: Path | None = None, overwrite: bool = False,
                       quality: QualityOptions = QualityOptions(),
                       reward_per_subpart: float = sc.REWARD_PER_SUBPART) -> list[Round]:
    """Create and save one round per (super-category, part) among ``items`` (see ``spin_rounds``).

    ``overwrite`` replaces existing records of the same keys (their answers files are kept).
    ``quality``: gold items of its gold file (parts with reference polygons, carrying the same data
    fields as the other items) join the rounds of their part, shuffled with the work items (seeded); its purpose and gate
    apply to every round.

    Raises:
        InputError: bad items, gold file or taxonomy. RoundStateError: a key exists (unless ``overwrite``).
    """
    tax = load_taxonomy(taxonomy or default_taxonomy(data_root))
    now = clock.timestamp()
    gold = read_gold_file(quality.gold_file) if quality.gold_file else []
    rounds = spin_rounds(shuffle([*items, *gold], quality.seed) if gold else items, tax, key_prefix=key_prefix, dataset_version=dataset_version,
                         backend=backend, now=now, overlap=overlap, reward_per_subpart=reward_per_subpart)
    store = RoundStore(Path(data_root) / "rounds")
    rounds = [r.model_copy(update={"items": page_gold(r.items)}) for r in rounds]
    if quality.purpose == "qualification":  # a qualification asks only about parts it has references for
        rounds = [r for r in rounds if any(i.gold for i in r.items)] or rounds[:1]
    rounds = [with_quality(r, [], replace(quality, gold=0, gold_file=None), store) for r in rounds]
    return [store.create(r, overwrite=overwrite) for r in rounds]


def contexts_from_coco(path: Path, round_: Round) -> dict[str, PartContext]:
    """Part contexts of the round's items from a COCO parts file (annotation id = ``part_ann_id``).

    Raises:
        InputError: bad file, or an item whose part annotation is not in it.
    """
    from segbench.core.coco import annotation_rle, load_coco

    coco = load_coco(path, policy=ImportPolicy(on_error=OnError.FAIL))
    anns = {ann["id"]: ann for ann in coco.annotations}
    out = {}
    for item in round_.items:
        ann = anns.get(item.data.get("part_ann_id"))
        if ann is None:
            raise InputError(f"part annotation {item.data.get('part_ann_id')} of item {item.item_id} is not in the "
                             "parts file", path=path, hint="pass the PartImageNet file the round was built from")
        image = coco.images[ann["image_id"]]
        out[item.item_id] = _context(item, annotation_rle(ann, image, path=str(path)), image["height"], image["width"])
    return out


def contexts_from_items(round_: Round) -> dict[str, PartContext] | None:
    """Part contexts from the items' own ``part_rle``; None if any item lacks one."""
    if not all("part_rle" in item.data for item in round_.items):
        return None
    return {item.item_id: _context(item, item.data["part_rle"], item.height, item.width) for item in round_.items}


def _context(item: RoundItem, rle: Mapping[str, Any], height: int, width: int) -> PartContext:
    d = item.data
    return PartContext(image_id=d["image_id"], part_ann_id=d["part_ann_id"], height=height, width=width,
                       part_rle=dict(rle), object=d["object"], object_class=d["object_class"], part=d["part"])


def answers_from_results(round_: Round, results: Path, policy: ImportPolicy) -> list[Answer]:
    """Answers of an AMT-style results file (CSV or JSON), checked as an ingest checks them: polygons
    kept as drawn (the SPIN kind flags bad ones later)."""
    return answers_from_files(read_results(results), round_, policy, source=results, **answer_checks(round_))


def import_spin_round(data_root: Path, key: str, *, results: Path | None = None, parts: Path | None = None,
                      taxonomy: Path | None = None, containment: float = sc.DEFAULT_CONTAINMENT,
                      on_error: OnError = OnError.FAIL, mask_aggregation: str = sc.MEDOID) -> SpinImport:
    """Validate and resolve the answers of SPIN round ``key``; write the crowd files.

    The answers of workers the round's screened ingest left out (its answers file's ``left_out``)
    take no part in the masks either; the report lists them under ``workers_left_out``.

    Args:
        results: read answers from this AMT-style results file instead of the round's ingested answers.
        parts: COCO parts file for the part masks (needed when the items carry no ``part_rle``).
        containment: share of a subpart mask that must lie inside its part (else flagged).
        mask_aggregation: one of ``sc.MASK_AGGREGATIONS``: segbench's medoid rule or a crowd-kit model
            (``stated``, the medoid rule's former name, is taken as ``medoid``).

    Raises:
        InputError: an unknown mask aggregation, not a SPIN round, no answers, no part masks, bad results
            rows (under a fail policy).
    """
    try:
        mask_aggregation = sc.mask_aggregation_name(mask_aggregation)
    except ValueError as exc:
        raise InputError(f"unknown mask aggregation {mask_aggregation!r}", item=key,
                         hint=f"choose one of {', '.join(sc.MASK_AGGREGATIONS)}") from exc
    data_root = Path(data_root)
    store = RoundStore(data_root / "rounds")
    round_ = store.load(key)
    if round_.kind != sc.KIND:
        raise InputError(f"round {key!r} is a {round_.kind} round, not {sc.KIND}", item=key)
    policy = ImportPolicy(on_error=on_error)
    left_out: list[str] = []
    if results is not None:
        answers = answers_from_results(round_, Path(results), policy)
    elif store.answers_path(key).is_file():
        # The merged answers of the round's follow-ups when one is ingested, about this round's items,
        # without the workers that ingest's screened aggregation left out.
        asked = {item.item_id for item in round_.items}
        final = final_key(store, key)
        left_out = sorted(e["worker"] for e in saved_left_out(store, final))
        answers = [a for a in store.load_answers(final) if a.item_id in asked and a.annotator not in left_out]
    else:
        raise InputError(f"round {key!r} has no ingested answers", item=key,
                         hint=f"run `segbench rounds ingest {key}` first, or pass --results FILE")
    # Gold parts never enter the dataset, and a gated round counts only its qualified workers.
    answers = counted(split_answers(round_, answers)[0], pass_list(store, round_))
    round_ = without_gold(round_)
    contexts = contexts_from_coco(Path(parts), round_) if parts is not None else contexts_from_items(round_)
    if contexts is None:
        raise InputError(f"the items of round {key!r} carry no part masks", item=key,
                         hint="pass --parts with the PartImageNet annotation file the round was built from")
    params = {item.item_id: item.data for item in round_.items}
    tax = load_taxonomy(taxonomy or default_taxonomy(data_root))
    raw, resolved, report = sc.resolve_subparts(answers, contexts, tax, params,
                                                sc.ResolvePolicy(containment, mask_aggregation))
    return write_crowd_files(data_root, round_, contexts, raw, resolved,
                             {**report.to_json(), "skipped": policy.report.to_json(), "round": key,
                              "containment": containment, **({"workers_left_out": left_out} if left_out else {})})


def write_crowd_files(data_root: Path, round_: Round, contexts: Mapping[str, PartContext], raw: list[sc.RawRecord],
                      resolved: list[ResolvedSubpart], report: dict[str, Any]) -> SpinImport:
    """Write the round's raw file and report, and merge its resolved records into ``resolved.json``."""
    crowd = Path(data_root) / CROWD_DIR
    resolved_path = crowd / RESOLVED_FILE
    mine = {(c.image_id, c.part_ann_id) for c in contexts.values()}
    # A part's subparts may span several rounds (pages): replace only this round's subparts.
    asked = round_.config.params.get("subparts")
    kept = [r for r in (read_resolved(resolved_path) if resolved_path.is_file() else [])
            if (r.image_id, r.part_ann_id) not in mine or (asked is not None and r.subpart not in asked)]
    merged = apply_reviews([*kept, *resolved], read_reviews(crowd / REVIEWS_FILE))
    paths = {"raw": write_jsonl(crowd / f"{round_.key}.raw.jsonl", raw),
             "report": write_json(crowd / f"{round_.key}.report.json", report, indent=1),
             "resolved": write_json(resolved_path, [r.model_dump(mode="json") for r in merged], indent=1)}
    return SpinImport(paths=paths, report=report)


def ingest_report(round_: Round, items: list, data_root: Path) -> dict[str, Path]:
    """The hook ``round-ingest`` runs after a SPIN round's answers are saved: import them.

    Items without ``part_rle`` cannot be checked here; the import is then left to
    ``segbench spin import --round KEY --parts FILE`` (logged, not an error: the answers are saved).
    """
    if contexts_from_items(round_) is None:
        logger.warning("round %s: items carry no part masks; run `segbench spin import --round %s --parts FILE`",
                       round_.key, round_.key)
        return {}
    # A follow-up re-imports its chain's root with the merged answers: resolved.json then says the same
    # whichever round of the chain is ingested last.
    root = chain(RoundStore(Path(data_root) / "rounds"), round_)[0].key
    result = import_spin_round(data_root, root, mask_aggregation=last_mask_aggregation(data_root, root))
    return result.paths


def last_mask_aggregation(data_root: Path, key: str) -> str:
    """The mask aggregation of round ``key``'s last import (its report), ``medoid`` if none: an ingest
    re-imports with the method the user chose rather than silently going back to the medoid rule."""
    from segbench.core.io import read_json

    path = Path(data_root) / CROWD_DIR / f"{key}.report.json"
    method = read_json(path).get("mask_aggregation", sc.MEDOID) if path.is_file() else sc.MEDOID
    try:
        return sc.mask_aggregation_name(method)
    except ValueError:
        return sc.MEDOID
