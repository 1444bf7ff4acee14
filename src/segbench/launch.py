"""The ``segbench`` executable: forks what an evaluation will draw with, then runs the command line.

An evaluation's report figures are drawn in processes that import matplotlib (about 0.25 s) while
this one imports the command line (about 0.3 s) and scores (:mod:`segbench.core.figures`). They are
forked here, before anything heavy is imported, when the arguments name ``evaluate``: a wrong guess
costs one idle process, ended with the command.

Ctrl-C or SIGTERM while the command line is still being imported (under load that takes seconds) end
the process as they end a command, with one line and exit code 130 or 143, not a traceback: nothing has
started yet. From then on the command line handles them itself.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import NoReturn

_HELP = frozenset({"--help", "-h"})
INTERRUPTED, TERMINATED = 130, 143  # as segbench.cli reports a stopped command


class _Terminated(BaseException):
    """SIGTERM arrived before the command started."""


def _terminated(signum: int, frame: object) -> None:
    raise _Terminated


def _evaluates(argv: list[str]) -> bool:
    return "evaluate" in argv and not _HELP.intersection(argv)


@contextmanager
def _starting() -> Iterator[None]:
    """Ctrl-C and SIGTERM inside the block end the process quietly: the command has not started."""
    default = signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # a caller that ignores SIGTERM keeps it so
    if default:
        signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    except KeyboardInterrupt:
        _stop("interrupted before the command started; nothing was done", INTERRUPTED)
    except _Terminated:
        _stop("terminated (SIGTERM) before the command started; nothing was done", TERMINATED)
    finally:
        if default:  # the command line installs its own handler when SIGTERM is at its default
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop(message: str, code: int) -> NoReturn:
    if sys.stderr is not None:
        print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def main() -> None:
    """Console entry point (``segbench``, ``python -m segbench``): :func:`segbench.cli.main`."""
    with ExitStack() as stack:
        with _starting():
            if _evaluates(sys.argv[1:]):
                from segbench.core.figures import drawing_processes

                stack.enter_context(drawing_processes())
            from segbench.cli import main as run
        run()
