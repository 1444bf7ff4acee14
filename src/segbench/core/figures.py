"""Report figures drawn in a process that imports matplotlib while the command scores.

matplotlib's import (about 0.25 s) and its drawing (0.05-0.2 s a figure) are most of what a small
evaluation costs: scoring 2,146 CAFE pairs takes 0.2 s. The ``segbench`` executable therefore forks a
drawing process before it imports the command line when it runs an evaluation
(:func:`drawing_processes`, called by :mod:`segbench.launch`). It imports matplotlib while the command
loads and scores, then draws the report's figures (:func:`drawn`).

Without it (a program calling the command line or the functions, a process with other threads, a
platform without ``fork``), or when it died, :func:`drawn` draws in this process: the same function
on the same data, so the same bytes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from segbench.core import process

Drawing = tuple[Callable[..., bytes], tuple[Any, ...]]
"""A module-level function returning PNG bytes, and its arguments (both picklable)."""

_pool: ProcessPoolExecutor | None = None
# Held (blocked) across the fork: Ctrl-C reaches the whole group, and a drawing process it reached before
# _ready ignores it would print a KeyboardInterrupt traceback. Held, it waits; the child drops it, the
# command gets it the moment the fork is done.
_STOPS = {signal.SIGINT, signal.SIGTERM}


def _ready(die_with_parent: Callable[[], None]) -> None:
    """Run first in each drawing process: end with the command, leave signals to it, import matplotlib."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the command handles it
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the command's handler raises where there is no command
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
    import matplotlib.backends.backend_agg  # noqa: F401  (the import is the point: it is paid now, in parallel)
    import matplotlib.figure  # noqa: F401


@contextlib.contextmanager
def drawing_processes(workers: int = 1) -> Iterator[None]:
    """Within the block, :func:`drawn` draws in up to ``workers`` processes forked now (fewer on fewer CPUs).

    They are forked only from a process without other threads (a fork copies no thread, and a lock
    another thread held would stay locked in the child), but for the Prefect API's watch. On leaving,
    they finish the figure they draw and end.
    """
    global _pool
    count = min(workers, os.cpu_count() or 1)
    if _pool is not None or count < 1 or not process.may_fork() \
            or "fork" not in multiprocessing.get_all_start_methods():
        yield
        return
    pool = _forked(count)
    if pool is None:
        yield
        return
    _pool = pool
    try:
        yield
    finally:
        _pool = None
        pool.shutdown(wait=True, cancel_futures=True)


def _forked(count: int) -> ProcessPoolExecutor | None:
    """``count`` drawing processes, forked now; None when there is no process or semaphore to spare (a
    limit, no /dev/shm)."""
    pool: ProcessPoolExecutor | None = None
    # The mask as it is, read apart: a call that changes it raises a Ctrl-C already caught only after
    # the change, which would leave the signals blocked.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    try:
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
            pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork"), initializer=_ready,
                                       initargs=(process.tie_to_parent(),))
            pool.submit(int)  # the first task forks the processes: now, before this process starts threads
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a signal that waited is raised here
    except BaseException as exc:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if isinstance(exc, (OSError, BrokenProcessPool)):
            return None
        raise  # Ctrl-C or SIGTERM while forking: the command stops
    return pool


def drawn(drawings: Mapping[str, Drawing]) -> dict[str, bytes]:
    """Each drawing's PNG bytes by name: in the drawing processes when they run, else here, in order."""
    if _pool is not None:
        try:
            pending = {name: _pool.submit(function, *args) for name, (function, args) in drawings.items()}
            return {name: future.result() for name, future in pending.items()}
        except BrokenProcessPool:  # a drawing process died (killed, out of memory): draw here instead
            pass
    return {name: function(*args) for name, (function, args) in drawings.items()}


__all__ = ["Drawing", "drawing_processes", "drawn"]
