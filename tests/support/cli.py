"""Running ``segbench`` in-process the way a user types it, on a project folder of its own."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from segbench.cli import app

from .commands import check_fix_lines


def run(project: Path, *args: str, code: int = 0):
    """``segbench --data-root <project>/data --work-dir <project>/work ARGS``; checks the exit code.

    A segbench error is left on ``result.exception`` (exit code 1 here; the console entry point turns
    it into its message and exit code 2). Every command a ``fix:`` line names must exist.
    """
    result = CliRunner().invoke(app, ["--data-root", str(project / "data"), "--work-dir", str(project / "work"),
                                      *args])
    assert result.exit_code == code, result.output + repr(result.exception)
    check_fix_lines(f"{result.output}\n{result.exception or ''}")
    return result
