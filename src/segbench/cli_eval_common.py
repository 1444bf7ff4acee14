"""What the ``segbench evaluate`` commands share: the ``--force`` option and the up-to-date notice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from segbench import console
from segbench.cli_common import display_path

FORCE = typer.Option(False, "--force", help="Evaluate again even when the report is up to date.")


def print_up_to_date(result: dict[str, Any], out: str | Path) -> None:
    """Say so when the evaluation found its report up to date (the summary printed next is that report's)."""
    if result.get("up_to_date"):
        console.out.print(f"Evaluation up to date: {display_path(Path(out))} (nothing it reads changed; "
                          "--force evaluates again).")
