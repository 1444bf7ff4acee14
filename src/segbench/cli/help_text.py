"""How ``--help`` reads the same on every command: choices listed, no type on plain flags.

Typer prints a value type after every option (``<path>``, ``<int>``), also after flags that take
no value (``--force <bool>``), which reads as if the flag wanted one. :func:`tidy_flag_types`
drops that type for flags. Options with a fixed set of values are enums, so their help lists the
choices (``<threads|dask>``). In a pipe, typer would lay help out at 80 columns, splitting long
choice lists and paths mid-word; :func:`widen_help_in_pipes` gives it a wide page instead. A command's
description paragraphs are wrapped to the page (:func:`join_paragraph_lines`).
"""

from __future__ import annotations

import enum
import sys
from typing import Any

from typer.core import TyperOption


class Runner(str, enum.Enum):
    """Where sharded work runs (the root option ``--runner``)."""

    threads = "threads"
    dask = "dask"


def _flag_aware(display_type_rich: Any) -> Any:
    def display(self: TyperOption, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) and self.metavar is None:
            return None  # a flag takes no value: no type to show
        return display_type_rich(self, ctx)

    display.__wrapped__ = display_type_rich  # type: ignore[attr-defined]
    return display


def tidy_flag_types() -> None:
    """Show no value type after flags in ``--help`` (idempotent)."""
    if not hasattr(TyperOption.display_type_rich, "__wrapped__"):
        TyperOption.display_type_rich = _flag_aware(TyperOption.display_type_rich)  # type: ignore[method-assign]


def _joined(paragraph: str) -> str:
    """A docstring paragraph as one line, unless it is laid out on purpose (click's ``\\b`` marker, or
    lines that start indented or as list items)."""
    lines = paragraph.splitlines()
    if paragraph.startswith("\b") or any(line.startswith((" ", "- ", "* ", "• ")) for line in lines[1:]):
        return paragraph
    return " ".join(line.strip() for line in lines)


def join_paragraph_lines() -> None:
    """Let ``--help`` wrap each paragraph of a command's description to the terminal (idempotent).

    Typer keeps the single line breaks of every paragraph after the first, so a paragraph wrapped at
    the source's width breaks mid-sentence in an 80-column terminal. The help renderer is patched when
    a help page is drawn, the moment typer imports it anyway."""
    from typer.core import TyperCommand, TyperGroup

    for cls in (TyperCommand, TyperGroup):
        original = cls.format_help
        if hasattr(original, "__wrapped__"):
            continue

        def format_help(self: Any, ctx: Any, formatter: Any, _original: Any = original) -> None:
            from typer import rich_utils

            fix = rich_utils._fix_linebreaks
            if not hasattr(fix, "__wrapped__"):
                def joined(paragraphs: list[str], markup_mode: Any) -> str:
                    return fix([_joined(p) for p in paragraphs], markup_mode)

                joined.__wrapped__ = fix  # type: ignore[attr-defined]
                rich_utils._fix_linebreaks = joined
            return _original(self, ctx, formatter)

        format_help.__wrapped__ = original  # type: ignore[attr-defined]
        cls.format_help = format_help  # type: ignore[method-assign]


PIPE_HELP_WIDTH = 120


def widen_help_in_pipes(is_terminal: bool, environ: dict[str, str]) -> None:
    """Lay ``--help`` out at :data:`PIPE_HELP_WIDTH` columns when stdout is no terminal and no
    width is set (``TERMINAL_WIDTH`` or ``COLUMNS``); a terminal keeps its own width.

    Typer reads ``TERMINAL_WIDTH`` when it first imports its help renderer, which most commands never
    do; a renderer already imported is set directly."""
    if is_terminal or environ.get("TERMINAL_WIDTH") or environ.get("COLUMNS"):
        return
    rich_utils = sys.modules.get("typer.rich_utils")
    if rich_utils is not None:
        rich_utils.MAX_WIDTH = PIPE_HELP_WIDTH  # type: ignore[attr-defined]
    else:
        environ["TERMINAL_WIDTH"] = str(PIPE_HELP_WIDTH)


__all__ = ["Runner", "join_paragraph_lines", "tidy_flag_types", "widen_help_in_pipes"]
