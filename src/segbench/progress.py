"""Progress of long steps, shown by whoever is listening.

Library code reports progress with :func:`track` and stays silent; the CLI installs a listener
(a rich progress bar, or timestamped lines in a pipe) with :func:`listening`. Without a listener,
:func:`track` only logs the start and the end of the step.

Sharded stages report twice: every item a shard finishes (:func:`item_done`, or :func:`each` around
the shard's items, from the worker thread that runs it, under the stage's ``channel``), and every
shard that returns (:func:`gather`). The bar takes whichever is further, so it moves item by item
when shards run in this process, and shard by shard when they run elsewhere (Dask processes) or
are replayed.

A gather interrupted (Ctrl-C, SIGTERM, a failed shard) stops its channel: shards not yet started are
cancelled and running ones stop at their next reported item, so a signal ends the command within one
item's time rather than after every running shard has finished. Each unit is written whole or not at
all, so what a stopped shard leaves is redone by the next run.
"""

from __future__ import annotations

import concurrent.futures
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
    def finish(self, handle: object, completed: bool = True) -> None: ...


_lock = threading.Lock()
_listener: Listener | None = None
# channel -> the sharded step now gathering it; items done before it opened wait in _early.
_channels: dict[str, Sharded] = {}
_early: dict[str, int] = {}
_stopped: set[str] = set()
STOP_WAIT = 10.0  # seconds an interrupted stage waits for its running shards to reach their next item


class StageStopped(Exception):
    """Raised inside a shard whose stage stopped gathering (the command was interrupted or failed)."""


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

    def finish(self, completed: bool = True) -> None:
        if self._listener:
            self._listener.finish(self._handle, completed)


@contextlib.contextmanager
def step(description: str, total: int | None = None) -> Iterator[Step]:
    """A step whose units are advanced by the caller (e.g. one per finished shard)."""
    current = Step(description, total)
    try:
        yield current
    except BaseException:
        current.finish(completed=False)
        raise
    current.finish()


class Sharded:
    """A step advanced by items finished inside shards and by shards returned, never past ``total``."""

    def __init__(self, current: Step, total: int) -> None:
        self._step, self._total = current, total
        self._shown = 0
        self._lock = threading.Lock()

    def _advance_to(self, target: Callable[[int], int]) -> None:
        with self._lock:
            amount = min(target(self._shown), self._total) - self._shown
            if amount <= 0:
                return
            self._shown += amount
        self._step.advance(amount)

    def items(self, amount: int) -> None:
        """``amount`` more items finished inside some shard."""
        self._advance_to(lambda shown: shown + amount)

    def shards(self, units_returned: int) -> None:
        """The shards returned so far hold ``units_returned`` items (counted once)."""
        self._advance_to(lambda shown: max(shown, units_returned))


def item_done(channel: str, amount: int = 1) -> None:
    """Report ``amount`` items finished inside a shard of the stage gathered under ``channel``.

    Safe from any thread; a no-op cost when nobody gathers that channel in this process.

    Raises:
        StageStopped: the stage gathering ``channel`` was interrupted: the shard should do no more.
    """
    with _lock:
        if channel in _stopped:
            raise StageStopped(f"the stage gathering {channel!r} stopped")
        target = _channels.get(channel)
        if target is None:
            _early[channel] = _early.get(channel, 0) + amount
            return
    target.items(amount)


def each(items: Iterable[T], channel: str) -> Iterator[T]:
    """Yield ``items``, reporting each under ``channel`` (:func:`item_done`) once the caller is done with it.

    A shard task wraps the items it works through, so the stage's progress moves item by item.
    """
    for item in items:
        yield item
        item_done(channel)


def gather(futures: Iterable[Any], description: str, total: int, units: Callable[[Any], int],
           channel: str | None = None) -> list[Any]:
    """The results of submitted task runs, in submission order, with one progress step for all.

    Flows submit one task run per shard and collect them here, so every long sharded stage shows
    the same progress. With ``channel``, the shards' :func:`item_done` reports advance the step as
    items finish; each returned shard makes sure its ``units(result)`` are counted.
    """
    results = []
    returned = 0
    with step(description, total) as current:
        sharded = Sharded(current, total)
        if channel:
            with _lock:
                _channels[channel] = sharded
                _stopped.discard(channel)
                early = _early.pop(channel, 0)
            sharded.items(early)
        futures = list(futures)
        try:
            for future in futures:
                results.append(future.result())
                returned += units(results[-1])
                sharded.shards(returned)
        except BaseException:
            _stop(futures, channel)
            raise
        finally:
            if channel:
                with _lock:
                    _channels.pop(channel, None)
                    _early.pop(channel, None)
    return results


def _stop(futures: list[Any], channel: str | None) -> None:
    """Cancel the shards not started yet; running ones stop at their next item on ``channel``.

    Waits (at most :data:`STOP_WAIT` seconds) for the running ones to stop, then lifts the stop, so a
    later stage on the same channel in this process (a notebook, a served flow) runs normally.
    """
    if channel:
        with _lock:
            _stopped.add(channel)
    running = []
    for future in futures:
        wrapped = getattr(future, "wrapped_future", None)  # a Prefect future around a concurrent.futures one
        if wrapped is not None and hasattr(wrapped, "cancel") and not wrapped.cancel() \
                and isinstance(wrapped, concurrent.futures.Future):
            running.append(wrapped)  # (a Dask future runs in another process: cancelled, not waited for)
    try:
        concurrent.futures.wait(running, timeout=STOP_WAIT)
    finally:
        if channel:
            with _lock:
                _stopped.discard(channel)


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Yield ``items`` while reporting one unit of progress per item."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with step(description, total) as current:
        for item in items:
            yield item
            current.advance()
