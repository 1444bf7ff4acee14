"""The ρ-controlled splitter (seed 002 App. A) on given pool sizes."""

import pytest

from segbench.core.errors import InsufficientDataError
from segbench.core.splits import draw_splits, train_sizes

# Groups 2*y + a: 0 cat-indoor, 1 cat-outdoor, 2 dog-indoor, 3 dog-outdoor. Majority: cat-indoor, dog-outdoor.
MAJORITY = (0, 1)


def pools(sizes):
    start = 0
    out = {}
    for g, n in enumerate(sizes):
        out[g] = list(range(start, start + n))
        start += 10_000
    return out


def counts(plan, ids):
    return [sum(1 for i in ids if i // 10_000 == g) for g in range(4)]


def test_released_rho_095_counts():
    # The released train split: 834 per class at ρ = 0.5 → 792 / 42 / 42 / 792 at ρ = 0.95.
    assert train_sizes(0.95, 834) == (792, 42)
    plan = draw_splits(pools([1700, 592, 592, 1700]), majority=MAJORITY, rhos=[0.5, 0.95],
                       val_per_group=50, test_per_group=125, seed=13)
    assert plan.per_class_total == 2 * (592 - 175)
    assert counts(plan, plan.train[0.5]) == [417, 417, 417, 417]
    assert counts(plan, plan.train[0.95]) == [792, 42, 42, 792]
    assert counts(plan, plan.val) == [50] * 4
    assert counts(plan, plan.test) == [125] * 4


def test_splits_are_disjoint_and_reproducible():
    kwargs = dict(majority=MAJORITY, rhos=[0.5, 0.95], val_per_group=3, test_per_group=5, seed=7)
    plan = draw_splits(pools([80, 30, 28, 90]), **kwargs)
    for train in plan.train.values():
        assert not set(train) & set(plan.val)
        assert not set(train) & set(plan.test)
    assert not set(plan.val) & set(plan.test)
    assert plan == draw_splits(pools([80, 30, 28, 90]), **kwargs)
    assert plan != draw_splits(pools([80, 30, 28, 90]), **{**kwargs, "seed": 8})


def test_adding_a_rho_leaves_the_others_unchanged():
    base = dict(majority=MAJORITY, val_per_group=3, test_per_group=5, seed=7)
    one = draw_splits(pools([80, 30, 28, 90]), rhos=[0.95], **base)
    two = draw_splits(pools([80, 30, 28, 90]), rhos=[0.5, 0.95, 0.75], **base)
    assert one.train[0.95] == two.train[0.95]
    assert one.val == two.val and one.test == two.test


def test_majority_share_rounds_down():
    assert train_sizes(0.95, 10) == (9, 1)
    assert train_sizes(0.29 + 0.5, 100) == (79, 21)
    assert train_sizes(0.5, 7) == (3, 4)
    assert train_sizes(1.0, 10) == (10, 0)


def test_group_too_small_for_val_and_test():
    with pytest.raises(InsufficientDataError, match=r"group y0·a1 has 7 items; val \+ test need 8"):
        draw_splits(pools([80, 7, 28, 90]), majority=MAJORITY, rhos=[0.5], val_per_group=3,
                    test_per_group=5, seed=1)


def test_pools_cannot_support_rho():
    # Remainders 12 / 22 / 22 / 12: ρ = 0.5 gives 24 per class; ρ = 0.95 needs 22 aligned, only 12 left.
    with pytest.raises(InsufficientDataError, match=r"ρ = 0.95 needs 22 train items from group y0·a0"):
        draw_splits(pools([20, 30, 30, 20]), majority=MAJORITY, rhos=[0.5, 0.95], val_per_group=3,
                    test_per_group=5, seed=1)
