"""A simulated AMT crowd for the SPIN demo: results rows answered from the demo world's truth.

Each worker answers each item (one image–object–part) in the files-backend results format the SPIN
import reads: ``WorkerId``, ``AssignmentId``, ``Input.item_id``, ``Answer.part_visible``,
``Answer.has_<subpart slug>`` and ``Answer.polygons`` (JSON ``[{"label", "points": [[x, y], ...]}]``
in image pixels). Workers are mostly right and draw the true polygons with a pixel of jitter; some
answers are wrong (a yes/no flipped) and some polygons are bad in the ways the import must catch:
too few points, a point outside the image, a polygon outside the part. Seeded, so the same world
and seed give the same rows.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from segbench.schemas.rounds import RoundItem, slugify
from segbench.schemas.spin import Taxonomy


@dataclass(frozen=True)
class CrowdNoise:
    """Per answer (worker x item x subpart) probabilities of each kind of mistake."""

    flip: float = 0.04  # says yes for an absent subpart or no for a present one
    too_few_points: float = 0.02
    outside_image: float = 0.02
    outside_part: float = 0.02
    jitter: float = 1.0  # pixels, uniform, on every vertex


def _jittered(polygon: Sequence[float], rng: random.Random, jitter: float, width: int, height: int
              ) -> list[list[float]]:
    points = []
    for x, y in zip(polygon[0::2], polygon[1::2], strict=True):
        points.append([round(min(max(x + rng.uniform(-jitter, jitter), 0.0), width), 2),
                       round(min(max(y + rng.uniform(-jitter, jitter), 0.0), height), 2)])
    return points


def _damaged(points: list[list[float]], rng: random.Random, noise: CrowdNoise, width: int, height: int
             ) -> list[list[float]]:
    draw = rng.random()
    if draw < noise.too_few_points:
        return points[:2]
    if draw < noise.too_few_points + noise.outside_image:
        return [*points[:-1], [width + 25.0, points[-1][1]]]
    if draw < noise.too_few_points + noise.outside_image + noise.outside_part:
        # Moved to the opposite side of the image, where the part is not.
        dx = width / 2 if points[0][0] < width / 2 else -width / 2
        return [[round(x + dx, 2), y] for x, y in points]
    return points


def _absent_polygon(rng: random.Random, width: int, height: int) -> list[list[float]]:
    """A small box somewhere: what a worker draws when wrongly saying yes."""
    x, y = rng.uniform(0, width - 8), rng.uniform(0, height - 8)
    return [[round(x, 2), round(y, 2)], [round(x + 6, 2), round(y, 2)], [round(x + 6, 2), round(y + 6, 2)]]


def simulate_crowd_rows(items: Sequence[RoundItem], truth: Sequence[Mapping[str, Any]], taxonomy: Taxonomy, *,
                        workers: int = 3, seed: int = 0, noise: CrowdNoise | None = None,
                        task_id: Callable[[str], str] = str) -> list[dict[str, str]]:
    """One results row per (worker, item), sorted by item then worker.

    Args:
        task_id: item id → the id its task shows (the round's ``task_id``), as the crowd reads it.
        items: round items (``data`` with ``part_ann_id``, ``object``, ``object_class``, ``part`` and
            optionally the ``subparts`` asked); their ``width`` / ``height`` bound the image.
        truth: the demo truth rows (``part_ann_id``, ``subpart``, ``polygons`` in pixels).
    """
    noise = noise or CrowdNoise()
    rng = random.Random(seed)
    present: dict[tuple[int, str], list[list[float]]] = {
        (row["part_ann_id"], row["subpart"]): row["polygons"] for row in truth}
    rows = []
    for item in sorted(items, key=lambda i: i.item_id):
        data = item.data
        names = data.get("subparts") or [s.name for s in taxonomy.subparts_for(data["object"], data["part"],
                                                                              data["object_class"])]
        for k in range(1, workers + 1):
            task = task_id(item.item_id)
            row = {"WorkerId": f"W{k}", "AssignmentId": f"{task}-W{k}", "Input.item_id": task,
                   "AssignmentStatus": "Approved", "Answer.part_visible": "yes"}
            drawn = []
            for name in names:
                truly = (data["part_ann_id"], name) in present
                says_yes = truly != (rng.random() < noise.flip)
                row[f"Answer.has_{slugify(name)}"] = "yes" if says_yes else "no"
                if not says_yes:
                    continue
                polygons = present[(data["part_ann_id"], name)] if truly else []
                shapes = ([_damaged(_jittered(p, rng, noise.jitter, item.width, item.height), rng, noise,
                                    item.width, item.height) for p in polygons]
                          or [_absent_polygon(rng, item.width, item.height)])
                drawn += [{"label": name, "points": points} for points in shapes]
            row["Answer.polygons"] = json.dumps(drawn, separators=(",", ":"))
            rows.append(row)
    return rows
