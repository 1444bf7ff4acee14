"""A command whose Prefect API goes away mid-flow ends with one message instead of running on for ever.

Prefect's client retries every call with back-off and its log and event workers keep retrying their
queues, so a command whose server was killed (or stopped by hand) would spend many minutes printing
connection errors. A daemon thread asks the API's ``/health`` every :data:`EVERY` seconds once the
command has imported Prefect (it is about to run a flow; a command that never does is never
watched). When nothing has listened there for :data:`LOST_AFTER` seconds (connections refused), or
nothing has answered for :data:`SILENT_AFTER` seconds (a server that hangs), it says so, interrupts the
command the way SIGTERM does (locks released, temporary files removed, a build keeps the units it
finished), and ends the process :data:`GRACE` seconds later if Prefect is still trying to report to
the server that is gone. What a build finished is on disk unit
by unit, so the next run resumes it as after any kill.

Nothing here imports Prefect.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

EVERY = 2.0  # seconds between health checks
LOST_AFTER = 10.0  # seconds of refused connections before the server counts as gone
SILENT_AFTER = 120.0  # seconds without any answer (a busy server answers slowly, not never)
GRACE = 5.0  # seconds the interrupted command has to end by itself
EXIT_CODE = 2

LOST_HINT = ("run the command again: it starts a server if none runs, and a build resumes from the units it "
             "finished")

_lost: list[str] = []  # the API that went away, once it has


def lost() -> bool:
    """Whether this command lost its Prefect API (and has said so)."""
    return bool(_lost)


def watch(probe: Callable[[str], bool | None], say: Callable[[str], None]) -> threading.Thread:
    """Start watching the API ``PREFECT_API_URL`` names, from when Prefect is imported. ``probe(url)`` asks it:
    True (up), False (nothing listens there) or None (no answer in time)."""
    armed = [True]
    atexit.register(armed.clear)  # a server stopped as the command exits is not lost (atexit runs last-in first)

    def run() -> None:
        last_answer = time.monotonic()
        while True:
            time.sleep(EVERY)
            if not armed:
                return
            url = os.environ.get("PREFECT_API_URL")
            if not url or "prefect" not in sys.modules:  # no flow yet, or a server for a block (demo) ended
                last_answer = time.monotonic()
                continue
            answered = probe(url.rstrip("/"))
            if answered:
                last_answer = time.monotonic()
                continue
            silent = time.monotonic() - last_answer
            if armed and silent >= (LOST_AFTER if answered is False else SILENT_AFTER):
                _give_up(url, silent, say)
                return

    thread = threading.Thread(target=run, daemon=True, name="segbench-prefect-watch")
    thread.start()
    return thread


def _give_up(url: str, silent: float, say: Callable[[str], None]) -> None:
    _lost.append(url)
    say(f"error: lost the Prefect server this command runs its flow on ({url} has not answered for "
        f"{silent:.0f} s: it was stopped, killed or hangs)\n  fix: {LOST_HINT}")
    # SIGTERM to the main thread itself: it wakes from a blocking wait and unwinds as SIGTERM does.
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGTERM)
    time.sleep(GRACE)
    sys.stderr.flush()
    os._exit(EXIT_CODE)  # Prefect is still retrying calls to the server that is gone
