"""What kind of process this is: one that ends with its command, or one that lives on; and children
that end with it.

A cost paid once per process (numba's start-up, a model's load) pays off sooner in a process that
lives on (a notebook, ``segbench serve``, a library caller) than in one that exits after a single
command. The command line says which it is; a library caller is taken to live on.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

_one_command = False
_PR_SET_PDEATHSIG = 1


def mark_one_command() -> None:
    """This process will end with the command it runs (the command line calls this)."""
    global _one_command
    _one_command = True


def is_one_command() -> bool:
    return _one_command


def tie_to_parent() -> Callable[[], None]:
    """What a child runs before exec to get SIGKILL when the thread that started it ends (its command),
    so not even a ``kill -9`` of the command leaves it behind (Linux's ``PR_SET_PDEATHSIG``).

    libc is looked up here, in the parent: a child forked from a threaded process must not load anything.
    """
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def die_with_parent() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl: nobody will send the signal
            os._exit(1)

    return die_with_parent
