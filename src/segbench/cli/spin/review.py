"""``segbench rounds create spin_review``: a review round over an imported SPIN subparts round, where
people keep, redraw or remove each resolved subpart outline (:mod:`segbench.flows.spin.review`)."""

from __future__ import annotations

import typer

from segbench import console
from segbench.cli import rounds
from segbench.cli.common import display_path, settings_of
from segbench.cli.rounds import Backend


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
