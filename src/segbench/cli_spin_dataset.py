"""`segbench` commands for the SPIN dataset."""

from __future__ import annotations

import typer


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add this module's commands to the `build`, `evaluate` and root command groups."""
