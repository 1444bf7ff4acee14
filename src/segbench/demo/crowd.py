"""Simulated crowd workers for the files backend: answers drawn from a known truth with some noise.

Used by the demo (the demo world knows each image's true context), so a round runs every step a
real one takes — tasks out, results files in, ingest, agreement — without people. The results have
the columns of an Amazon Mechanical Turk batch results file.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Mapping, Sequence
from pathlib import Path

from segbench.core.io import atomic_write_text
from segbench.schemas.rounds import Round


def simulate_results(
    round_: Round,
    truth: Mapping[str, str],
    *,
    control: str,
    labels: Sequence[str],
    workers: int = 3,
    noise: float = 0.1,
    seed: int = 0,
) -> list[dict[str, str]]:
    """Every worker answers every item: the true label, or with probability ``noise`` another one.

    Returns:
        Rows with ``WorkerId``, ``AssignmentId``, ``Input.item_id`` and ``Answer.<control>``.
    """
    rng = random.Random(f"{seed}:{round_.key}")
    rows = []
    for item in round_.items:
        task = round_.task_id(item.item_id)  # what the crowd sees in tasks.csv
        for worker in range(workers):
            answer = truth[item.item_id]
            if rng.random() < noise:
                answer = rng.choice([label for label in labels if label != answer])
            rows.append({"WorkerId": f"SIMWORKER{worker + 1:02d}", "AssignmentId": f"{round_.key}-{task}-{worker + 1}",
                         "Input.item_id": task, f"Answer.{control}": answer})
    return rows


def write_results_csv(rows: Sequence[Mapping[str, str]], path: Path) -> Path:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return atomic_write_text(path, buffer.getvalue())
