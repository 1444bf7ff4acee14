"""``segbench demo``: every registered dataset built, published and evaluated on generated worlds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from segbench import console, prefect_server, registry
from segbench.cli.common import display_path, run_flow, seed_option, settings_of
from segbench.cli.publish import print_publish

if TYPE_CHECKING:
    from segbench.schemas.results import DemoPart


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add ``demo`` to the root command group."""
    app.command("demo")(demo_command)


def demo_command(
    ctx: typer.Context,
    seed: int = seed_option(0, "Seed of the generated demo world."),
) -> None:
    """Run everything on a generated demo world: build every dataset, publish, evaluate."""
    settings = settings_of(ctx)
    from segbench.flows.demo import run_demo
    from segbench.providers import make_provider

    provider = make_provider(settings, replay_only=settings.replay_only)
    count = sum(1 for spec in registry.DATASETS if spec.demo_step)
    shown: list[str] = []

    def print_part(name: str, results: DemoPart, evaluated: bool) -> None:
        """Each dataset's summary as soon as its part is done, under a heading that says whose it is."""
        spec = registry.dataset(name)
        if evaluated:
            console.heading(f"{spec.title}: evaluation of the published version")
        else:
            shown.append(name)
            console.heading(f"{spec.title} ({len(shown)} of {count})")
        spec.need(spec.demo_printer, "demo printer")(results, provider, evaluation_only=evaluated)

    result = run_flow(ctx, run_demo, repo=Path("."), data_root=settings.data_root, work_dir=settings.work_dir,
                      reports_dir=settings.reports_dir, provider=provider, seed=seed, dvc_remote=settings.dvc_remote,
                      spacy_model=settings.spacy_model, on_part=print_part)
    console.heading("Published version")
    print_publish(result.publish)
    console.out.print("\n[bold green]Demo finished.[/] Where everything is:")
    paths = {label: display_path(Path(path)) for label, path in result.paths.items()}
    state = prefect_server.read_state(settings.work_dir)
    if state is not None:  # the runs, their task runs and artifacts are on the work dir's server
        paths["Prefect UI (the demo's runs)"] = state.url
    width = max(map(len, paths))
    for label, shown_path in paths.items():
        console.out.print(f"  {label:<{width}}  {shown_path}")
