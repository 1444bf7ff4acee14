"""Report figures drawn in processes that import matplotlib while the command scores.

matplotlib's import (about 0.25 s) and its drawing (0.05-0.2 s a figure) are most of what a small
evaluation costs: scoring 2,146 CAFE pairs takes 0.2 s. An evaluation command therefore forks its
drawing processes before it reads its inputs (:func:`drawing_processes`). They import matplotlib while
the command loads and scores, then draw the report's figures side by side (:func:`drawn`).

Without them (a library call, a flow run by Prefect, a process with threads, a platform without
``fork``) :func:`drawn` draws in this process: the same function on the same data, so the same bytes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from multiprocessing.pool import Pool
from typing import Any

from segbench.core import process

Drawing = tuple[Callable[..., bytes], tuple[Any, ...]]
"""A module-level function returning PNG bytes, and its arguments (both picklable)."""

_pool: Pool | None = None
# Threads a fork may leave behind: the watch of the Prefect API sleeps, and reads ``sys.modules``, until
# Prefect is imported, so it holds no lock a drawing process could need.
_FORK_SAFE_THREADS = frozenset({"segbench-prefect-watch"})


def _ready(die_with_parent: Callable[[], None]) -> None:
    """Run first in each drawing process: end with the command, leave signals to it, import matplotlib."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the command handles it
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the command's handler raises where there is no command
    import matplotlib.backends.backend_agg  # noqa: F401  (the import is the point: it is paid now, in parallel)
    import matplotlib.figure  # noqa: F401


@contextlib.contextmanager
def drawing_processes(workers: int = 1) -> Iterator[None]:
    """Within the block, :func:`drawn` draws in up to ``workers`` processes forked now (fewer on fewer CPUs).

    They are forked only from a process without other threads (a fork copies no thread, and a lock
    another thread held would stay locked in the child), but for the Prefect API's watch. On leaving,
    they are ended.
    """
    global _pool
    count = min(workers, os.cpu_count() or 1)
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    if _pool is not None or count < 1 or any(t.name not in _FORK_SAFE_THREADS for t in others) \
            or "fork" not in multiprocessing.get_all_start_methods():
        yield
        return
    try:
        _pool = multiprocessing.get_context("fork").Pool(count, initializer=_ready,
                                                          initargs=(process.tie_to_parent(),))
    except OSError:  # no process to spare (a limit on processes): draw here
        yield
        return
    try:
        yield
    finally:
        pool, _pool = _pool, None
        pool.terminate()
        pool.join()


def drawn(drawings: Mapping[str, Drawing]) -> dict[str, bytes]:
    """Each drawing's PNG bytes by name: in the drawing processes when they run, else here, in order."""
    if _pool is None:
        return {name: function(*args) for name, (function, args) in drawings.items()}
    pending = {name: _pool.apply_async(function, args) for name, (function, args) in drawings.items()}
    return {name: result.get() for name, result in pending.items()}


__all__ = ["Drawing", "drawing_processes", "drawn"]
