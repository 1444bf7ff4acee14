"""SPIN's review round kind: people inspect the resolved subparts of a crowd round and correct them
(:mod:`segbench.tasks.spin.review` says what is asked and how answers apply).

``segbench rounds create spin_review KEY --of ROUND`` makes one task per object-part of an imported
``spin_subparts`` round, showing the outlines ``resolved.json`` holds for its subparts; ``rounds
ingest KEY`` writes the round's decisions into ``data/spin/crowd/reviews.json``, lays every review
over ``resolved.json`` and writes ``crowd/<KEY>.review.json`` (counts, undecided subparts, the items to
annotate again). Registered in :mod:`segbench.registry`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from segbench.annotation_ui.followups import chain
from segbench.annotation_ui.gold import without_gold
from segbench.annotation_ui.kinds import RoundKind
from segbench.annotation_ui.label_configs import LabelConfig
from segbench.annotation_ui.rounds import RoundStore, new_round
from segbench.core import clock
from segbench.core.errors import InputError
from segbench.core.io import atomic_write_bytes, open_image, png_bytes, write_json
from segbench.flows.spin.crowd import (
    CROWD_DIR,
    RESOLVED_FILE,
    REVIEWS_FILE,
    contexts_from_items,
    import_spin_round,
    last_mask_aggregation,
)
from segbench.flows.spin.rounds import PALETTE, prepare_subparts_page
from segbench.registry import Ref
from segbench.schemas.rounds import ItemAnswer, Round, RoundConfig, RoundItem
from segbench.schemas.spin import ResolvedSubpart, read_resolved, read_reviews
from segbench.tasks.spin import crowd as sc
from segbench.tasks.spin import review

logger = logging.getLogger(__name__)

REVIEW = RoundKind(
    name=review.KIND,
    label_config=LabelConfig(review.LABEL_CONFIG, required=("object", "part", "subparts"),
                             defaults={"page": 1, "pages": 1}, prepare=prepare_subparts_page),
    report=Ref("segbench.flows.spin.review:ingest_review"),
    create=Ref("segbench.cli.spin.rounds:create_review_command"),
)


def create_review_round(data_root: Path, source_key: str, key: str, *,
                        backend: Literal["labelstudio", "files"] = "labelstudio", overlap: int = 1,
                        overwrite: bool = False) -> Round:
    """Create and save review round ``key`` of the imported ``spin_subparts`` round ``source_key``.

    Each work item of the source (gold left out) becomes a task whose image is the source task's with
    the resolved outlines drawn in (``<data root>/spin/review/<key>/<item>.png``); its data keeps the
    source's fields and adds ``source_round`` and ``shown`` ({subpart: digest of the outline shown}).

    Raises:
        InputError: ``source_key`` is not a SPIN subparts round, or its answers were never imported.
        RoundStateError: ``key`` exists (unless ``overwrite``).
    """
    data_root = Path(data_root)
    store = RoundStore(data_root / "rounds")
    store.check_free(key, overwrite)  # before its overlays replace another round's
    source = store.load(source_key)
    if source.kind != sc.KIND:
        raise InputError(f"round {source_key!r} is a {source.kind} round; a review reviews a {sc.KIND} round",
                         item=source_key, hint="give --of the key of a SPIN subparts round")
    report = data_root / CROWD_DIR / f"{source_key}.report.json"
    if not report.is_file():
        raise InputError(f"round {source_key!r} has no imported answers to review", item=source_key,
                         hint=f"ingest it first: segbench rounds ingest {source_key} (or segbench spin import)")
    resolved_path = data_root / CROWD_DIR / RESOLVED_FILE
    resolved = {(r.image_id, r.part_ann_id, r.subpart): r for r in read_resolved(resolved_path)}
    page = list(source.config.params["subparts"])
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(page)}
    items = []
    for item in without_gold(source).items:
        records = {name: resolved.get((item.data["image_id"], item.data["part_ann_id"], name))
                   for name in item.data["subparts"]}
        relative = f"{review.REVIEW_DIR}/{key}/{item.item_id}.png"
        _write_overlay(data_root, item, relative, [(r, colour[name]) for name, r in records.items() if r is not None])
        data = {k: v for k, v in item.data.items() if k != "reward"}
        items.append(item.model_copy(update={"image": relative, "data": {
            **data, "source_round": source_key,
            "shown": {name: review.shown_digest(r) for name, r in records.items()}}}))
    config = RoundConfig(label_config=review.LABEL_CONFIG, overlap=overlap, params=dict(source.config.params))
    round_ = new_round(key, review.KIND, source.dataset, source.dataset_version, config, items, backend,
                       clock.timestamp())
    return store.create(round_, overwrite=overwrite)


def _write_overlay(data_root: Path, item: RoundItem, relative: str,
                   outlines: list[tuple[ResolvedSubpart, str]]) -> None:
    task_image = open_image(data_root / item.image, mode="RGB", item=f"item {item.item_id}",
                            hint="create the SPIN rounds again (segbench rounds create spin_subparts)")
    atomic_write_bytes(data_root / relative, png_bytes(review.overlay(task_image, outlines)), durable=False)


def ingest_review(round_: Round, items: list[ItemAnswer], data_root: Path) -> dict[str, Path]:
    """The hook ``rounds ingest`` runs after a review round's answers are saved: decide, record the
    decisions, write the review report, and import the reviewed crowd round again, so that
    ``resolved.json`` is its resolution with every review laid over it (a re-ingest after a reviewer
    changed an answer undoes what the old answer did)."""
    data_root = Path(data_root)
    crowd = data_root / CROWD_DIR
    outcome = review.decide(round_.key, round_.items, items)
    decisions = review.merge_decisions(read_reviews(crowd / REVIEWS_FILE), round_.key, outcome.decisions)
    report: dict[str, Any] = {"round": round_.key, "reviewed": sorted({i.item_id for i in items}),
                              "counts": outcome.counts(), "undecided": outcome.undecided,
                              "annotate_again": sorted(outcome.again)}
    paths = {"reviews": write_json(crowd / REVIEWS_FILE, [d.model_dump(mode="json") for d in decisions], indent=1),
             "review_report": write_json(crowd / f"{round_.key}.review.json", report, indent=1)}
    store = RoundStore(data_root / "rounds")
    source = store.load(round_.items[0].data["source_round"]) if round_.items else None
    if source is not None and contexts_from_items(source) is not None:
        root = chain(store, source)[0].key
        return paths | import_spin_round(data_root, root, mask_aggregation=last_mask_aggregation(data_root, root)).paths
    # The crowd round's parts came from a COCO file (spin import --parts): lay the decisions over what is there.
    logger.warning("round %s: its crowd round's items carry no part masks; the review is laid over resolved.json "
                   "as it is (import the crowd round again with --parts to rebuild it)", round_.key)
    resolved_path = crowd / RESOLVED_FILE
    resolved = review.apply_reviews(read_resolved(resolved_path) if resolved_path.is_file() else [], decisions)
    return paths | {"resolved": write_json(resolved_path, [r.model_dump(mode="json") for r in resolved], indent=1)}
