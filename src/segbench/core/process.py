"""What kind of process this is: one that ends with its command, or one that lives on; and children
that end with it, forked to work beside it.

A cost paid once per process (numba's start-up, a model's load) pays off sooner in a process that
lives on (a notebook, ``segbench serve``, a library caller) than in one that exits after a single
command. The command line says which it is; a library caller is taken to live on.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

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


# Threads a fork may leave behind: the watch of the Prefect API sleeps, and reads ``sys.modules``, until
# Prefect is imported, so it holds no lock a child could need.
FORK_SAFE_THREADS = frozenset({"segbench-prefect-watch"})


def may_fork() -> bool:
    """Whether a child forked now is safe: the platform forks, and no other thread runs but the watch
    (a fork copies no thread, and a lock another thread held would stay locked in the child)."""
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    return hasattr(os, "fork") and all(t.name in FORK_SAFE_THREADS for t in others)


class Forked(Generic[T]):
    """``fn(*args)`` in a child process forked now: on two cores it runs beside this process, not in
    turn with it under one interpreter lock. Its result (or its exception) comes back pickled through
    a pipe; its other effects must be on disk. A child that dies without an answer (killed, out of
    memory) is replaced by the same call here."""

    def __init__(self, fn: Callable[..., T], *args: Any) -> None:
        self._call = (fn, args)
        die_with_parent = tie_to_parent()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: answer through the pipe and leave without running the parent's exit code
            code = 1
            try:
                os.close(read)
                die_with_parent()
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group: the command handles it
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                try:
                    answer = pickle.dumps((True, fn(*args)))
                except BaseException as exc:  # noqa: BLE001 -- every failure goes back to the command
                    try:
                        answer = pickle.dumps((False, exc))
                    except Exception:  # noqa: BLE001 -- an exception that does not pickle
                        answer = pickle.dumps((False, RuntimeError(repr(exc))))
                with os.fdopen(write, "wb") as out:
                    out.write(answer)
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        self._pid, self._read = pid, read
        self._answer: tuple[bool, Any] | None = None

    def result(self) -> T:
        if self._answer is None:  # read once: a clean-up may ask again after a failure
            with os.fdopen(self._read, "rb") as pipe:
                data = pipe.read()
            os.waitpid(self._pid, 0)
            if not data:  # it died before answering
                fn, args = self._call
                data = pickle.dumps((True, fn(*args)))
            self._answer = pickle.loads(data)
        ok, value = self._answer
        if not ok:
            raise value
        return value
