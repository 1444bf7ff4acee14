"""An evaluation's steps as the task runs of the Prefect flow that calls it (:mod:`segbench.core.steps`).

Each step becomes a task run named after it; units are cached under their key with their result
persisted (:mod:`segbench.flows.units`), so a killed flow replays the units that finished; shards
are submitted to the flow's task runner (threads, or a Dask cluster).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from prefect import Task, get_run_logger
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.futures import PrefectFuture

from segbench import progress
from segbench.core.steps import ShardIds
from segbench.flows.prefect_ui import shard_name, task_name
from segbench.flows.units import UNIT, count_units

T = TypeVar("T")


class PrefectSteps:
    """Steps as task runs of the current flow run (call inside a flow)."""

    def __init__(self) -> None:
        self.logger = get_run_logger()
        self._tasks: dict[tuple[Any, str], Task[..., Any]] = {}
        self._units: list[Any] = []  # futures and final states of the units run so far

    def _task(self, name: str, fn: Callable[..., T], options: dict[str, Any]) -> Task[..., T]:
        made = self._tasks.get((fn, name))
        if made is None:
            made = self._tasks[(fn, name)] = Task(fn, **options)
        return made

    def call(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        return self._task(name, fn, {**task_name(name), "cache_policy": NO_CACHE})(*args)

    def unit(self, name: str, fn: Callable[..., T], key: str, *args: Any) -> T:
        # Prefect's overloads miss return_state after *args: the call returns the task run's state.
        state = cast(State, self._task(name, fn, {**task_name(name), **UNIT})(key, *args, return_state=True))
        self._units.append(state)
        return state.result()

    def beside(self, name: str, fn: Callable[..., T], *args: Any) -> PrefectFuture[T]:
        return self._task(name, fn, {**task_name(name), "cache_policy": NO_CACHE}).submit(*args)

    def shards(self, name: str, fn: Callable[..., T], calls: Sequence[tuple[str, tuple[Any, ...]]], *,
               description: str, total: int, count: Callable[[T], int], channel: str,
               ids: ShardIds | None = None) -> list[T]:
        naming = shard_name(name, ids) if ids is not None else task_name(name)
        shard = self._task(name, fn, {**naming, **UNIT})
        futures = [shard.submit(key, *args) for key, args in calls]
        self._units.extend(futures)
        return progress.gather(futures, description, total, units=count, channel=channel)

    def unit_counts(self) -> dict[str, int]:
        return count_units(self._units)
