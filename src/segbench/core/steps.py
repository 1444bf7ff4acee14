"""How an evaluation or a release runs its steps: as plain calls in this process, or as the tasks of a Prefect flow.

An evaluation (or a release) is written once, as a function of a :class:`Steps`: it hands each step
(reading, hashing, a shard of scoring, the report) to ``steps`` by name. A command typed by hand
passes :class:`InProcess`, which calls them, so it never starts or contacts the Prefect engine; the
flows pass ``segbench.flows.steps.PrefectSteps``, which runs them as named task runs (units
remembered under their keys, shards submitted to the flow's runner). Both run the same functions on
the same arguments, so they write the same bytes.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from segbench import progress
from segbench.core import process

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
EVALUATION_LOGGER = "segbench.evaluation"  # where an evaluation run in this process logs

# Names a shard's items from the step's parameters (``segbench.flows.prefect_ui.shard_name``).
ShardIds = Callable[[dict[str, Any]], Sequence[Any]]


class Steps(Protocol):
    """What an evaluation needs from whoever runs it."""

    logger: logging.Logger | logging.LoggerAdapter

    def call(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``: a step that is not worth remembering (reading, hashing, writing)."""

    def unit(self, name: str, fn: Callable[..., T], key: str, *args: Any) -> T:
        """``fn(key, *args)``: a unit of work a killed run need not redo, remembered under ``key``."""

    def beside(self, name: str, fn: Callable[..., T], *args: Any) -> Pending[T]:
        """``fn(*args)`` started now, run beside the steps that follow; ``.result()`` waits for it. It
        may run in another process: its effects are its result and the files it writes."""

    def shards(self, name: str, fn: Callable[..., T], calls: Sequence[tuple[str, tuple[Any, ...]]], *,
               description: str, total: int, count: Callable[[T], int], channel: str,
               ids: ShardIds | None = None) -> list[T]:
        """``[fn(key, *args) for key, args in calls]``, units run side by side where the runner can,
        with one progress step of ``total`` items (``count`` of a result; ``channel`` as in
        :func:`segbench.progress.gather`)."""

    def unit_counts(self) -> dict[str, int]:
        """``{"computed", "reused"}``: the units run so far and how many were replayed."""


class Pending(Protocol[T_co]):
    """A step that runs beside others (:meth:`Steps.beside`)."""

    def result(self) -> T_co: ...


class _Done:
    """A call made when its result is asked for: what :func:`progress.gather` expects of a future."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn

    def result(self) -> Any:
        return self._fn()


class InProcess:
    """Every step a plain call, one after the other, in this process (nothing is replayed)."""

    def __init__(self, logger: logging.Logger | logging.LoggerAdapter | None = None) -> None:
        self.logger = logger or logging.getLogger(EVALUATION_LOGGER)
        self._units = 0

    def call(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        return fn(*args)

    def unit(self, name: str, fn: Callable[..., T], key: str, *args: Any) -> T:
        self._units += 1
        return fn(key, *args)

    def beside(self, name: str, fn: Callable[..., T], *args: Any) -> Pending[T]:
        # A forked process where this process may fork: two cores then work at once, where threads take
        # turns under the interpreter lock between the moments Pillow, zlib and pyarrow let go of it.
        if process.may_fork():
            return process.Forked(fn, *args)
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"segbench-{name}")
        future = pool.submit(fn, *args)
        pool.shutdown(wait=False)  # the thread ends with the step
        return future

    def shards(self, name: str, fn: Callable[..., T], calls: Sequence[tuple[str, tuple[Any, ...]]], *,
               description: str, total: int, count: Callable[[T], int], channel: str,
               ids: ShardIds | None = None) -> list[T]:
        self._units += len(calls)
        pending = [_Done(functools.partial(fn, key, *args)) for key, args in calls]
        return progress.gather(pending, description, total, units=count, channel=channel)

    def unit_counts(self) -> dict[str, int]:
        return {"computed": self._units, "reused": 0}
