"""Read-only views of saved rounds: the list, and one round's progress on its backend.

Kept apart from the round flows so that ``rounds list`` and ``rounds status``, which change
nothing, never import Prefect (seconds of start-up for a command that reads a few files).
"""

from __future__ import annotations

from pathlib import Path

from segbench.annotation_ui.backends import backend_for
from segbench.annotation_ui.batches import batch_names, batch_rows
from segbench.annotation_ui.gold import saved_left_out
from segbench.annotation_ui.rounds import RoundStore
from segbench.schemas.rounds import LabelStudioConnection, Round, RoundProgress


def list_rounds(data_root: Path) -> list[Round]:
    """Every round saved under ``<data_root>/rounds``."""
    return RoundStore(Path(data_root) / "rounds").list()


def round_progress(data_root: Path, key: str, label_studio: LabelStudioConnection | None = None) -> RoundProgress:
    """Tasks done / total and answers per annotator, read from the backend (no state changes); for a
    round whose items carry batches, items, launched and answered per batch."""
    store = RoundStore(Path(data_root) / "rounds")
    round_ = store.load(key)
    backend = backend_for(round_, data_root, label_studio=label_studio)
    progress = backend.progress(round_)
    names = backend.worker_names(round_) if progress["by_annotator"] else {}
    batches = batch_rows(round_, progress["done_items"]) if batch_names(round_) else []
    return RoundProgress(round=key, status=round_.status.value, follow_up_of=round_.follow_up_of,
                         aggregation=round_.aggregation, tasks=progress["tasks"], done=progress["done"],
                         annotations=progress["annotations"], by_annotator=progress["by_annotator"],
                         names={a: names[a] for a in progress["by_annotator"] if a in names},
                         batches=batches, left_out=saved_left_out(store, key))

