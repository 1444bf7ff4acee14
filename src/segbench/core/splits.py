"""ρ-controlled splits over a binary label Y and a binary attribute A (seed 002, §3 and App. A).

Generic over datasets: any class × context pair of a dataset (cat/dog × indoor/outdoor,
landbird/waterbird × land/water) uses it. Items fall into four groups ``g = 2·y + a``. Each class y has a majority
attribute (its aligned pairing).

1. Val and test are drawn first, balanced: ``val_per_group`` and ``test_per_group`` from each group.
2. Train for ρ = 0.5 caps every group to the smallest remainder ``m``: each class gets ``N = 2m``.
3. Train for any other ρ keeps that total ``N`` per class: ``floor(ρ·N)`` from the aligned group
   (rounded down, as the released build) and the rest from the counterfactual group.

Draws use ``random.Random`` seeded from the seed alone (val/test) and from the seed and ρ (train),
so adding a ρ never changes another ρ's split. Pools are sorted before sampling.
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, TypeVar

from pydantic import AfterValidator

from segbench.core.errors import InputError, InsufficientDataError

GROUPS = (0, 1, 2, 3)
K = TypeVar("K", bound=Hashable)


def group_id(y: int, a: int) -> int:
    return 2 * y + a


@dataclass(frozen=True)
class SplitPlan:
    """Item ids per split. ``train`` maps each ρ to its train ids; val and test are shared."""

    val: tuple[int, ...]
    test: tuple[int, ...]
    train: dict[float, tuple[int, ...]]
    per_class_total: int

    def group_counts(self, group_of: Mapping[int, int]) -> dict[str, dict[str, list[int]]]:
        """``{"rho_0.95": {"train": [n_g0..n_g3], "val": [...], "test": [...]}, ...}``."""
        out = {}
        for rho, train in sorted(self.train.items()):
            row = {}
            for name, ids in (("train", train), ("val", self.val), ("test", self.test)):
                counts = [0, 0, 0, 0]
                for item in ids:
                    counts[group_of[item]] += 1
                row[name] = counts
            out[rho_name(rho)] = row
        return out


def rho_name(rho: float) -> str:
    """Directory name of a ρ: ``rho_0.95``, ``rho_0.5``, ``rho_1``."""
    return f"rho_{rho:g}"


def check_rhos(rhos: Sequence[float], *, option: str = "--rho") -> tuple[float, ...]:
    """The ρ values of one build, sorted, when each is in [0.5, 1] and names its own split folder.

    Two ρ that print the same (0.5 and 0.50000001 are both ``rho_0.5``) would write one folder
    twice, the last draw winning; a repeated ρ is a mistake too. Both are refused, naming the values.

    Raises:
        InputError: a ρ outside [0.5, 1] (or not a number), a repeated ρ, or two ρ sharing a folder.
    """
    by_folder: dict[str, float] = {}
    for rho in rhos:
        if isinstance(rho, bool) or not isinstance(rho, numbers.Real) or not (
                math.isfinite(rho) and 0.5 <= rho <= 1.0):
            raise InputError(f"ρ = {rho} is outside [0.5, 1]: ρ is the share of the majority pairing",
                             item=f"{option} {rho}", hint=f"pass each {option} as a number from 0.5 to 1")
        folder = rho_name(rho)
        if folder in by_folder:
            first = by_folder[folder]
            what = f"ρ = {rho!r} is given twice" if first == rho else (
                f"ρ = {first!r} and ρ = {rho!r} would both be written to splits/{folder}")
            raise InputError(what, item=f"{option} {first!r} and {option} {rho!r}",
                             hint=f"give each {option} once, with values that differ in their first 6 digits")
        by_folder[folder] = rho
    return tuple(sorted(rhos))


def _rho_set(rhos: tuple[float, ...]) -> tuple[float, ...]:
    if not rhos:
        raise ValueError("give at least one ρ")
    try:
        return check_rhos(rhos, option="rho")
    except InputError as exc:
        raise ValueError(exc.message) from None


# The ρ values of a ρ-controlled build's params (COCO-CD, Waterbirds-seg): :func:`check_rhos`'s rule.
Rhos = Annotated[tuple[float, ...], AfterValidator(_rho_set)]


def check_seed(seed: int, *, option: str = "--seed") -> int:
    """``seed`` when it is not negative (``random.Random(-1)`` draws what ``random.Random(1)`` draws).

    Raises:
        InputError: a negative seed.
    """
    if seed < 0:
        raise InputError(f"seed {seed} is negative; seeds -n and n give the same draws", item=f"{option} {seed}",
                         hint=f"pass {option} 0 or a positive integer")
    return seed


def train_sizes(rho: float, per_class_total: int) -> tuple[int, int]:
    """(aligned, counterfactual) train sizes per class for ρ, majority share rounded down."""
    aligned = math.floor(Fraction(str(rho)) * per_class_total)
    return aligned, per_class_total - aligned


def draw_splits(
    pools: Mapping[int, Sequence[int]],
    *,
    majority: Sequence[int],
    rhos: Sequence[float],
    val_per_group: int,
    test_per_group: int,
    seed: int,
    group_names: Sequence[str] = ("y0·a0", "y0·a1", "y1·a0", "y1·a1"),
) -> SplitPlan:
    """Draw balanced val/test and one train split per ρ.

    Args:
        pools: group id (0..3) → the ids of the items in that group.
        majority: ``majority[y]`` is the attribute value class y is paired with in train.
        group_names: readable group names for error messages.

    Raises:
        InputError: a negative seed, or ρ values that :func:`check_rhos` refuses.
        InsufficientDataError: a group cannot supply val + test, or the remainders cannot supply
            the train sizes a ρ needs (says which group, how many are needed and what to change).
    """
    check_rhos(rhos, option="rho")
    check_seed(seed, option="seed")
    need = val_per_group + test_per_group
    rng = random.Random(seed)
    val: list[int] = []
    test: list[int] = []
    remainder: dict[int, list[int]] = {}
    for g in GROUPS:
        pool = sorted(pools.get(g, ()))
        if len(pool) < need:
            raise InsufficientDataError(
                f"group {group_names[g]} has {len(pool)} items; val + test need {need} "
                f"({val_per_group} + {test_per_group} per group)",
                hint="lower --val-per-group / --test-per-group, or add source images",
            )
        picks = rng.sample(pool, need)
        val.extend(picks[:val_per_group])
        test.extend(picks[val_per_group:])
        taken = set(picks)
        remainder[g] = [item for item in pool if item not in taken]

    per_group = min(len(items) for items in remainder.values())
    per_class_total = 2 * per_group
    if per_group == 0:
        empty = next(g for g in GROUPS if not remainder[g])
        raise InsufficientDataError(
            f"group {group_names[empty]} has no items left for train after val and test",
            hint="lower --val-per-group / --test-per-group, or add source images",
        )

    train: dict[float, tuple[int, ...]] = {}
    for rho in sorted(set(rhos)):
        n_aligned, n_counter = train_sizes(rho, per_class_total)
        train_rng = random.Random(f"{seed}:train:{rho!r}")
        ids: list[int] = []
        for y in (0, 1):
            aligned_g, counter_g = group_id(y, majority[y]), group_id(y, 1 - majority[y])
            for g, n in ((aligned_g, n_aligned), (counter_g, n_counter)):
                if len(remainder[g]) < n:
                    raise InsufficientDataError(
                        f"ρ = {rho:g} needs {n} train items from group {group_names[g]} "
                        f"({per_class_total} per class, as for ρ = 0.5) but only {len(remainder[g])} remain "
                        "after val and test",
                        hint="lower ρ or --val-per-group / --test-per-group, or add source images",
                    )
                ids.extend(train_rng.sample(remainder[g], n))
        train[rho] = tuple(sorted(ids))

    return SplitPlan(
        val=tuple(sorted(val)),
        test=tuple(sorted(test)),
        train=train,
        per_class_total=per_class_total,
    )


def apportion(total: int, weights: Mapping[K, float]) -> dict[K, int]:
    """``total`` split in proportion to ``weights`` (largest remainders; ties go to the earlier key)."""
    keys = [k for k, w in weights.items() if w > 0]
    mass = sum(weights[k] for k in keys)
    if total <= 0 or mass <= 0:
        return {k: 0 for k in weights}
    exact = {k: total * weights[k] / mass for k in keys}
    counts = {k: math.floor(exact[k]) for k in keys}
    order = sorted(keys, key=lambda k: (-(exact[k] - counts[k]), keys.index(k)))
    for k in order[: total - sum(counts.values())]:
        counts[k] += 1
    return {k: counts.get(k, 0) for k in weights}
