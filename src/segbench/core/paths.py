"""Checks on the folders a command is told to write to, made before any work starts.

Kept free of heavy imports: the command line runs them while it parses its options.
"""

from __future__ import annotations

from pathlib import Path

from segbench.core.errors import InputError


def blocking_file(path: Path) -> Path | None:
    """The regular file that keeps ``path`` from being (or becoming) a folder: itself or a parent."""
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    return existing if existing is not None and not existing.is_dir() else None


def check_output_folder(path: str | Path | None) -> Path | None:
    """``path`` (None passes) if it is a folder or can be made one.

    Commands run it on their ``--out`` folder (a typer callback) rather than failing on the first
    write after minutes of work.

    Raises:
        InputError: ``path`` or one of its parents is a regular file.
    """
    if path is None:
        return None
    path = Path(path)
    blocker = blocking_file(path)
    if blocker is not None:
        raise InputError("expected a folder, found a file", path=blocker,
                         hint=f"give a folder (new or existing) as {path}, or move the file away")
    return path
