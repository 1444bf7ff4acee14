"""The ``segbench`` executable: forks what an evaluation will draw with, then runs the command line.

An evaluation's report figures are drawn in processes that import matplotlib (about 0.25 s) while
this one imports the command line (about 0.3 s) and scores (:mod:`segbench.core.figures`). They are
forked here, before anything heavy is imported, when the arguments name ``evaluate``: a wrong guess
costs one idle process, ended with the command.
"""

from __future__ import annotations

import sys

_HELP = frozenset({"--help", "-h"})


def _evaluates(argv: list[str]) -> bool:
    return "evaluate" in argv and not _HELP.intersection(argv)


def main() -> None:
    """Console entry point (``segbench``, ``python -m segbench``): :func:`segbench.cli.main`."""
    if not _evaluates(sys.argv[1:]):
        from segbench.cli import main as run

        run()
        return
    from segbench.core.figures import drawing_processes

    with drawing_processes():
        from segbench.cli import main as run

        run()
