"""``segbench demo``: every registered dataset built, published and evaluated on generated worlds."""

from __future__ import annotations

from pathlib import Path

import typer

from segbench import console, prefect_server, registry
from segbench.cli.common import display_path, run_flow, seed_option, settings_of
from segbench.cli.publish import print_publish


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add ``demo`` to the root command group."""
    app.command("demo")(demo_command)


def demo_command(
    ctx: typer.Context,
    seed: int = seed_option(0, "Seed of the generated demo world."),
) -> None:
    """Run everything on a generated demo world: build every dataset, publish, evaluate."""
    settings = settings_of(ctx)
    # One Prefect server for the whole demo (the running `segbench server` if any), started before
    # Prefect is imported and stopped when the demo ends.
    with prefect_server.server_for_duration(settings.work_dir, settings.prefect_home):
        from segbench.flows.demo import run_demo
        from segbench.providers import make_provider

        provider = make_provider(settings, replay_only=settings.replay_only)
        result = run_flow(ctx, run_demo, repo=Path("."), data_root=settings.data_root, work_dir=settings.work_dir,
                          reports_dir=settings.reports_dir, provider=provider, seed=seed, dvc_remote=settings.dvc_remote,
                          spacy_model=settings.spacy_model)
    # The summaries come after every progress line: a heading says whose each one is.
    for name, results in result.datasets.items():
        spec = registry.dataset(name)
        console.heading(spec.title)
        spec.need(spec.demo_printer, "demo printer")(results, provider)
    console.heading("Published version")
    print_publish(result.publish)
    console.out.print("\n[bold green]Demo finished.[/] Where everything is:")
    width = max(map(len, result.paths))
    for label, path in result.paths.items():
        console.out.print(f"  {label:<{width}}  {display_path(Path(path))}")
