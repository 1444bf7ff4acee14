"""Dawid–Skene with a prior on each voter's confusion matrix (maximum a posteriori EM).

Dawid and Skene (1979) fit, per voter, the probability of each answer given each true label, and per
item the posterior of its label; crowd-kit's ``DawidSkene`` fits them by maximum likelihood. With few
answers per voter (three answers per item, a rare label) maximum likelihood overfits: a voter who
met the rare label once is "always right" or "always wrong" on it. Here each row of a voter's
confusion matrix starts from ``strength`` pseudo-answers, a share ``accuracy`` of them right and the
rest spread over the other labels (a Dirichlet prior), so a few answers move it only as far as they
should. As answers accumulate the prior fades; ``strength=0`` is the maximum-likelihood fit,
crowd-kit's (tested).

crowd-kit offers no prior, hence this module. On ``bench/crowd.py``'s crowds it lifted the default
aggregation from 0.931 to 0.947 of the work items at three answers per item, and changed no other
crowd by more than 0.3 points (docs/benchmarks.md).

The prior's EM starts from the maximum-likelihood fit, which itself starts from the majority vote:
started from the vote, a unanimous bloc that the prior credits as fairly accurate can hold EM at its
answer (three workers who always say "no" against two careful ones, tested). Everything else is
crowd-kit's: the class prior re-estimated each step, items with a known label (gold) fixed to it at
every step, a fixed iteration count. EM stops when no posterior moves by ``tolerance`` (crowd-kit
stops on its evidence lower bound, so its fits can stop a little earlier). Deterministic: the same
rows give the same posteriors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

STRENGTH = 4.0  # pseudo-answers per true label and voter
ACCURACY = 0.75  # the share of them that are right: better than chance, far from certain
ITERATIONS = 100
TOLERANCE = 1e-5


def posteriors(rows: Sequence[tuple[str, str, str]], known: Mapping[str, str] | None = None, *,
               strength: float = STRENGTH, accuracy: float = ACCURACY, iterations: int = ITERATIONS,
               tolerance: float = TOLERANCE) -> dict[str, dict[str, float]]:
    """Item → label → posterior probability, from ``(item, voter, label)`` rows.

    Args:
        known: item → its known label (gold): fixed at every step, so each voter's confusion matrix is
            anchored on the voter's answers to them.
        strength, accuracy: the prior (module docstring); ``strength=0`` is maximum likelihood.
    """
    items = sorted({item for item, _, _ in rows})
    voters = sorted({voter for _, voter, _ in rows})
    labels = sorted({label for _, _, label in rows} | set((known or {}).values()))
    item_of = {item: n for n, item in enumerate(items)}
    voter_of = {voter: n for n, voter in enumerate(voters)}
    label_of = {label: n for n, label in enumerate(labels)}
    at = np.array([item_of[item] for item, _, _ in rows])
    by = np.array([voter_of[voter] for _, voter, _ in rows])
    said = np.array([label_of[label] for _, _, label in rows])
    fixed = [(item_of[item], label_of[label]) for item, label in sorted((known or {}).items()) if item in item_of]

    def anchored(post: np.ndarray) -> np.ndarray:
        for item, label in fixed:
            post[item] = 0.0
            post[item, label] = 1.0
        return post

    if strength:  # from the maximum-likelihood fit: see the module docstring
        fitted = posteriors(rows, known, strength=0, iterations=iterations, tolerance=tolerance)
        post = np.array([[fitted[item][label] for label in labels] for item in items])
    else:  # from the majority vote: each item's answers, shared out
        post = np.zeros((len(items), len(labels)))
        np.add.at(post, (at, said), 1.0)
        post = anchored(post / post.sum(axis=1, keepdims=True))
    others = (1.0 - accuracy) / max(len(labels) - 1, 1)
    prior = strength * np.where(np.eye(len(labels), dtype=bool), accuracy, others)
    for _ in range(iterations):
        counts = np.broadcast_to(prior, (len(voters), len(labels), len(labels))).copy()
        for answered in range(len(labels)):  # counts[voter, true, answered] += post[item, true]
            rows_of = said == answered
            np.add.at(counts[:, :, answered], by[rows_of], post[at[rows_of]])
        totals = counts.sum(axis=2, keepdims=True)
        confusion = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
        with np.errstate(divide="ignore"):  # a label nobody is thought to have: log 0, as in the ML fit
            log_post = np.tile(np.log(post.mean(axis=0)), (len(items), 1))
            np.add.at(log_post, at, np.log(confusion[by, :, said]))
        log_post -= log_post.max(axis=1, keepdims=True)
        updated = np.exp(log_post)
        updated = anchored(updated / updated.sum(axis=1, keepdims=True))
        converged = float(np.abs(updated - post).max()) < tolerance
        post = updated
        if converged:
            break
    return {item: {label: float(post[item_of[item], n]) for n, label in enumerate(labels)} for item in items}
