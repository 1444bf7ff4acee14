"""Progress of long steps, shown by whoever is listening.

Library code reports progress with :func:`track` and stays silent; the CLI installs a listener
(a rich progress bar) with :func:`listening`. Without a listener, :func:`track` only logs the start
and the end of the step.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
logger = logging.getLogger(__name__)


class Listener(Protocol):
    def start(self, description: str, total: int | None) -> object: ...
    def advance(self, handle: object, amount: int = 1) -> None: ...
    def finish(self, handle: object) -> None: ...


_lock = threading.Lock()
_listener: Listener | None = None


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Route progress reports to ``listener`` for the duration of the block (any thread)."""
    global _listener
    with _lock:
        previous, _listener = _listener, listener
    try:
        yield
    finally:
        with _lock:
            _listener = previous


class Step:
    """One reported step; ``advance`` may be called from worker threads."""

    def __init__(self, description: str, total: int | None) -> None:
        self.description = description
        self._listener = _listener
        self._handle = self._listener.start(description, total) if self._listener else None
        logger.info("%s (%s items)", description, total if total is not None else "?")

    def advance(self, amount: int = 1) -> None:
        if self._listener:
            self._listener.advance(self._handle, amount)

    def finish(self) -> None:
        if self._listener:
            self._listener.finish(self._handle)


@contextlib.contextmanager
def step(description: str, total: int | None = None) -> Iterator[Step]:
    """A step whose units are advanced by the caller (e.g. one per finished shard)."""
    current = Step(description, total)
    try:
        yield current
    finally:
        current.finish()


def gather(futures: Iterable[Any], description: str, total: int, units: Callable[[Any], int]) -> list[Any]:
    """The results of submitted task runs, in submission order, advancing one step by ``units(result)``.

    Flows submit one task run per shard and collect them here, so every long sharded stage shows
    the same progress bar.
    """
    results = []
    with step(description, total) as current:
        for future in futures:
            results.append(future.result())
            current.advance(units(results[-1]))
    return results


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Yield ``items`` while reporting one unit of progress per item."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with step(description, total) as current:
        for item in items:
            yield item
            current.advance()
