"""The line a build command prints about what it did: nothing (up to date), a build, or a resumed build."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def build_status(summary: Mapping[str, Any]) -> str:
    """``Up to date`` (with how to rebuild), or how many units ran and how many a killed run had finished."""
    if summary.get("up_to_date"):
        return "[green]Up to date[/]: same inputs, options and builder version; nothing rebuilt (--force rebuilds)."
    units = summary.get("units")
    if not units or not units.get("reused"):
        return "[green]Built.[/]"
    return (f"[green]Built[/], resuming an interrupted build: {units['reused']} unit(s) reused, "
            f"{units['computed']} computed.")
