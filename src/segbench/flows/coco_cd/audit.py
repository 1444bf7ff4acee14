"""The COCO-CD context audit as a round (seed 002, Table 5): create it from a built dataset, and
write the agreement table after each ingest (``<data root>/coco_cd_audit/<key>.{json,md}``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from prefect import flow

from segbench.annotation_ui.gold import QualityOptions, with_quality
from segbench.annotation_ui.rounds import RoundStore, new_round
from segbench.core import clock
from segbench.core.errors import InputError
from segbench.core.io import atomic_write_text, fingerprint, read_text, write_json
from segbench.core.manifest import read_manifest
from segbench.flows.coco_cd.rounds import CONTEXT_AUDIT
from segbench.flows.prefect_ui import run_name
from segbench.schemas.rounds import ItemAnswer, Round, RoundConfig
from segbench.tasks.coco_cd import audit
from segbench.tasks.coco_cd import gold as coco_gold


def dataset_version(dataset: Path) -> str:
    """A content version of a built dataset: the fingerprint of its outputs' hashes (a rebuild with
    the same outputs keeps it, whatever its timestamp)."""
    return fingerprint(read_manifest(dataset).outputs)


@flow(name="coco-cd-audit-create", flow_run_name=run_name("coco-cd-audit-create", ("key", "per_group", "seed")))
def create_coco_cd_audit(
    data_root: Path,
    key: str,
    per_group: int = 50,
    seed: int = 13,
    backend: Literal["labelstudio", "files"] = "labelstudio",
    overlap: int = 2,
    overwrite: bool = False,
    dataset_dir: str = "coco_cd",
    batch_by_group: bool = False,
    gold: int = 0,
    gold_file: Path | None = None,
    gold_from: str | None = None,
    purpose: Literal["work", "qualification"] = "work",
    pass_threshold: float | None = None,
    requires: str | None = None,
    rules: dict[str, float] | None = None,
) -> Round:
    """Create an audit round on a stratified sample of the COCO-CD validation split (``batch_by_group``:
    each item's batch is its group, for a launch group by group).

    ``gold`` more validation images whose context is unambiguous by the evidence shares are mixed in
    as gold items (seeded, balanced per context), plus those of ``gold_file`` and the items people decided
    unanimously in the earlier audit ``gold_from``; a qualification round
    keeps only the gold. ``rules`` set worker report rules for this round.

    Raises:
        InputError: the dataset is not built, bad gold or qualification options.
        InsufficientDataError: a group is too small. RoundStateError: the key exists (unless ``overwrite``).
    """
    dataset = Path(data_root) / dataset_dir
    manifest, val = audit.audit_sources(dataset, per_group)
    items = audit.sample_audit_items(val, per_group=per_group, seed=seed, dataset_dir=dataset_dir,
                                     size=int(manifest.params["size"]), batch_by_group=batch_by_group)
    round_ = new_round(
        key=key, kind=CONTEXT_AUDIT.name, dataset=dataset_dir, dataset_version=dataset_version(dataset),
        config=RoundConfig(label_config=CONTEXT_AUDIT.label_config.name, overlap=overlap), items=items,
        backend=backend,
        now=clock.timestamp(),
    )
    store = RoundStore(Path(data_root) / "rounds")
    candidates = coco_gold.gold_candidates(val, _context_rows(dataset), dataset_dir=dataset_dir,
                                           size=int(manifest.params["size"]),
                                           batch_by_group=batch_by_group) if gold else []
    round_ = with_quality(round_, candidates, QualityOptions(gold=gold, gold_file=gold_file, gold_from=gold_from,
                                                             purpose=purpose,
                                                             pass_threshold=pass_threshold, requires=requires,
                                                             seed=seed, rules=rules or {}), store)
    store.create(round_, overwrite=overwrite)
    return round_


def _context_rows(dataset: Path) -> list[dict[str, Any]]:
    """The evidence behind each image's context (``context.jsonl`` of the build)."""
    path = dataset / "context.jsonl"
    return [json.loads(line) for line in read_text(path, hint="rebuild COCO-CD").splitlines() if line.strip()]


def write_audit_report(round_: Round, answers: list[ItemAnswer], data_root: Path) -> dict[str, Path]:
    """Compare the people's majority with the automatic labels; write JSON and Markdown tables."""
    dataset = Path(data_root) / round_.dataset
    if dataset_version(dataset) != round_.dataset_version:
        raise InputError(f"the dataset changed since round {round_.key} was created", path=dataset,
                         hint="check out the data version the round was made on (dvc checkout at its commit), "
                              "or create a new round")
    images = {str(image.id): image for image in audit.read_val_split(dataset)}
    auto = {item.item_id: (images[item.item_id].group_id, images[item.item_id].context) for item in round_.items}
    table = audit.audit_table(auto, answers)
    out = Path(data_root) / f"{round_.dataset}_audit"
    json_path = write_json(out / f"{round_.key}.json", {"round": round_.key, "dataset_version": round_.dataset_version,
                                                       **table.model_dump(mode="json")}, indent=1)
    md_path = atomic_write_text(out / f"{round_.key}.md",
                                audit.audit_markdown(table, round_key=round_.key, dataset_version=round_.dataset_version))
    return {"audit_json": json_path, "audit_markdown": md_path}
