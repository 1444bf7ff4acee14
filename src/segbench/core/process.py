"""What kind of process this is: one that ends with its command, or one that lives on.

A cost paid once per process (numba's start-up, a model's load) pays off sooner in a process that
lives on (a notebook, ``segbench serve``, a library caller) than in one that exits after a single
command. The command line says which it is; a library caller is taken to live on.
"""

from __future__ import annotations

_one_command = False


def mark_one_command() -> None:
    """This process will end with the command it runs (the command line calls this)."""
    global _one_command
    _one_command = True


def is_one_command() -> bool:
    return _one_command
