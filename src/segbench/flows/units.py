"""Units of work Prefect remembers: a killed build reruns only what did not finish.

A unit task takes a ``unit_key`` argument (from :meth:`segbench.core.resume.Stage.unit_key`) and
is cached under exactly that key with its (small) result persisted, so a rerun in a new process
gets the cached state instead of running it. The key carries the build key (logic version, params,
input hashes) and the stage's nonce; the task's other arguments are not hashed, which is also what
keeps Prefect from walking large inputs.

    @task(name="render-shard", **UNIT)
    def render_shard(unit_key: str, stage: Path, ...) -> int: ...
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prefect.client.schemas.objects import State
from prefect.futures import PrefectFuture


def unit_cache_key(_context: Any, parameters: dict[str, Any]) -> str:
    return parameters["unit_key"]


UNIT: dict[str, Any] = {"cache_key_fn": unit_cache_key, "persist_result": True, "cache_expiration": None}


def count_units(runs: Iterable[PrefectFuture | State]) -> dict[str, int]:
    """How many of these finished unit tasks (futures, or final states) ran now and how many were replayed."""
    states = [run.state if isinstance(run, PrefectFuture) else run for run in runs]
    reused = sum(state.name == "Cached" for state in states)
    return {"computed": len(states) - reused, "reused": reused}
