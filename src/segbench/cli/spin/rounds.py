"""``segbench rounds create spin_subparts`` and ``spin_review``: SPIN's crowd rounds of subpart polygons, and
a review round over an imported one, where people keep, redraw or remove each resolved outline
(:mod:`segbench.flows.spin.crowd`, :mod:`segbench.flows.spin.review`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from segbench import console
from segbench.cli import rounds
from segbench.cli.common import display_path, existing, seed_option, settings_of
from segbench.cli.rounds import Backend
from segbench.core.errors import InputError

if TYPE_CHECKING:
    from segbench.schemas.rounds import Round


def create_rounds_command(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="Prefix of the round keys: KEY-<super-category>-<part>.",
                              callback=rounds.round_key),
    partimagenet: Path = typer.Option(..., "--partimagenet", callback=existing, help="The PartImageNet folder: the split files "
                                                                  "(train.json, val.json, test.json) in annotations/, "
                                                                  "and images/<split>/."),
    backend: Backend = rounds.BACKEND,
    overlap: int = typer.Option(3, "--overlap", help="Annotators per task."),
    reward_per_subpart: float = typer.Option(0.10, "--reward-per-subpart", min=0.0, metavar="USD",
                                             help="What a task pays per subpart its page could ask about (the "
                                                  "SPIN paper's 10 cents), recorded as each task's reward."),
    cap: int = typer.Option(None, "--cap", help="Images per super-category (default: 1200, as build spin)."),
    seed: int = seed_option(None, "Seed of the capped selection (default: 0, as build spin)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing rounds with these keys."),
    supercategory: list[str] = typer.Option(None, "--supercategory", metavar="NAME", help="Only this super-category's rounds "
                                            "(repeatable): one batch at a time, as the paper's phased rollout."),
    gold_file: Path = typer.Option(None, "--gold-file", callback=existing, help="Gold items: parts with reference polygons of their "
                                   "subparts (the items' data fields plus gold.polygons), scored by polygon IoU."),
    rule: list[str] = rounds.RULE,
    qualification: bool = rounds.QUALIFICATION,
    pass_threshold: float = rounds.PASS_THRESHOLD,
    requires: str = rounds.REQUIRES,
) -> None:
    """SPIN's subpart rounds: one per (super-category, part), asking for each subpart of the taxonomy.

    Each task shows one image–object–part with the part outlined (build spin-taxonomy first). A part
    with more than 8 subparts gets several rounds (pages, keyed -p1, -p2, ...) so its labels stay beside
    the image."""
    from segbench.annotation_ui.gold import QualityOptions
    from segbench.flows.spin.build import source_version, spin_paths, spin_round_items
    from segbench.flows.spin.crowd import create_spin_rounds
    from segbench.locking import command_lock
    from segbench.schemas.spin import SpinBuildParams

    data_root = settings_of(ctx).data_root
    params = SpinBuildParams(**{k: v for k, v in {"cap_per_supercategory": cap, "seed": seed}.items()
                                if v is not None})
    with command_lock(ctx):
        groups = spin_round_items(partimagenet, data_root, params)
        chosen = _supercategories(supercategory, {obj for obj, _ in groups})
        items = [item for (obj, _), group in groups.items() if obj in chosen for item in group]
        version = source_version(partimagenet, spin_paths(data_root)["taxonomy"])
        quality = QualityOptions(**rounds.quality_kwargs(0, gold_file, qualification, pass_threshold, requires,
                                                         overlap=overlap, rules=rule), seed=params.seed)
        created = create_spin_rounds(data_root, items, key_prefix=key, dataset_version=version, backend=backend.value,
                                     overlap=overlap, overwrite=overwrite, quality=quality,
                                     reward_per_subpart=reward_per_subpart)
    console.out.print(console.table("SPIN rounds", ["round", "object-part", "tasks", "subparts asked", "reward (USD)",
                                                    "cost (USD)"], [
        [r.key, f"{r.config.params['object']}-{r.config.params['part']}", len(r.items),
         len(r.config.params["subparts"]), _reward_range(r), f"{_cost(r):.2f}"] for r in created]))
    console.out.print(f"Estimated cost: {sum(_cost(r) for r in created):.2f} USD for {overlap} answers per task at "
                      f"{reward_per_subpart:g} USD per possible subpart (tasks.csv's reward column), fees excluded.")
    console.out.print(f"Task overlays: {display_path(data_root / 'spin' / 'tasks')}")
    console.out.print("Next: segbench rounds launch KEY for each round, then segbench rounds ingest KEY "
                      "(ingest imports the subpart answers).")


def _reward_range(round_: Round) -> str:
    rewards = sorted({item.data["reward"] for item in round_.items})
    return f"{rewards[0]:.2f}" if len(rewards) == 1 else f"{rewards[0]:.2f}–{rewards[-1]:.2f}"


def _cost(round_: Round) -> float:
    """What the round pays its crowd: every task's reward, once per answer asked."""
    return round_.config.overlap * sum(item.data["reward"] for item in round_.items)


def _supercategories(wanted: list[str] | None, present: set[str]) -> set[str]:
    """The super-categories to create rounds for (all present ones by default)."""
    from segbench.tasks.spin.partimagenet import supercategories

    if not wanted:
        return present
    unknown = [w for w in wanted if w not in supercategories()]
    if unknown:
        raise InputError(f"unknown super-category {unknown[0]!r}", hint=f"one of {', '.join(supercategories())}")
    return set(wanted)



def create_review_command(
    ctx: typer.Context,
    key: str = rounds.ROUND_KEY,
    of: str = typer.Option(..., "--of", metavar="ROUND", help="The spin_subparts round to review (ingested, so its "
                                                              "subparts are in spin/crowd/resolved.json)."),
    backend: Backend = rounds.BACKEND,
    overlap: int = typer.Option(1, "--overlap", min=1, help="Reviewers per task (a choice needs a strict majority; "
                                                            "with 1, each task is one reviewer's)."),
    overwrite: bool = rounds.OVERWRITE,
) -> None:
    """SPIN's review: people inspect the resolved outlines of a subparts round and correct them.

    Each task shows an object-part with the outline resolved for each subpart drawn in its label's colour;
    the reviewer keeps it, redraws it, says the subpart is absent, or sends the part back to be annotated
    again. Ingest lays the decisions over spin/crowd/resolved.json, which build spin reads."""
    from segbench.flows.spin.review import create_review_round
    from segbench.locking import command_lock

    data_root = settings_of(ctx).data_root
    with command_lock(ctx):
        round_ = create_review_round(data_root, rounds.round_key(of), key, backend=backend.value, overlap=overlap,
                                     overwrite=overwrite)
    shown = sum(digest is not None for item in round_.items for digest in item.data["shown"].values())
    console.out.print(console.key_values("Review round created", {
        "key": round_.key, "kind": round_.kind, "backend": round_.backend, "reviews": of, "tasks": len(round_.items),
        "outlines shown": shown, "reviewers per task": round_.config.overlap,
        "overlays": display_path(data_root / "spin" / "review" / round_.key)}))
    console.out.print(f"Next: segbench rounds launch {key}, then segbench rounds ingest {key} (it applies the review "
                      "to spin/crowd/resolved.json), then segbench build spin")
