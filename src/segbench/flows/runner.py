"""Where a flow's submitted tasks run: threads in the flow's process, or a Dask cluster.

The CLI turns ``--runner``, ``--dask-address`` and ``--workers`` into a :class:`RunnerSpec`;
:func:`runner_session` makes it live for one command (a local cluster for ``--workers N``) and
:func:`with_runner` puts it on the flow. Only tasks a flow *submits* (the coarse per-shard units)
go to the cluster; the rest run in the flow's process either way.

Dask workers run Prefect's task engine themselves and must report to the same Prefect API as the
flow. Without a configured server every worker process would start a temporary API of its own
(seconds each, and runs scattered over several databases), so the session starts the temporary
API once, in this process, and exports its URL before any worker is spawned. Workers of a cluster
started elsewhere (``--dask-address``) need ``PREFECT_API_URL`` of a real server, the same
``PREFECT_LOCAL_STORAGE_PATH`` (unit results) and the data paths, on a shared file system.

Nothing here imports Prefect or Dask at module level: the CLI imports this module before it has
exported the settings Prefect reads on import.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

RunnerKind = Literal["threads", "dask"]
RUNNER_KINDS: tuple[str, ...] = ("threads", "dask")


@dataclass(frozen=True)
class RunnerSpec:
    """How to run submitted tasks: ``threads`` (default), or ``dask`` at an address or on N local workers."""

    kind: RunnerKind = "threads"
    dask_address: str | None = None
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in RUNNER_KINDS:
            raise ValueError(f"unknown runner {self.kind!r} (use one of: {', '.join(RUNNER_KINDS)})")
        if self.kind == "threads" and (self.dask_address or self.workers):
            raise ValueError("a Dask address or a worker count needs the dask runner")
        if self.dask_address and self.workers:
            raise ValueError("give either a Dask address (a running cluster) or a worker count (a local one)")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"the worker count must be at least 1 (got {self.workers})")

    @classmethod
    def from_options(cls, runner: str | None, dask_address: str | None, workers: int | None) -> RunnerSpec:
        """The spec the CLI options ask for; an address or a worker count alone implies ``dask``."""
        kind = runner or ("dask" if dask_address or workers else "threads")
        return cls(kind=kind, dask_address=dask_address, workers=workers)  # type: ignore[arg-type]


@contextlib.contextmanager
def runner_session(spec: RunnerSpec) -> Iterator[RunnerSpec]:
    """Make ``spec`` usable for the duration of the block and yield it with a scheduler address.

    ``threads`` needs nothing. ``dask`` shares this process's Prefect API with the workers and,
    without an address, starts a ``LocalCluster`` of ``spec.workers`` single-threaded worker
    processes (default: one per CPU), closed when the block ends.
    """
    if spec.kind == "threads":
        yield spec
        return
    with shared_prefect_api():
        if spec.dask_address:
            yield spec
            return
        from distributed import LocalCluster

        workers = spec.workers or os.cpu_count() or 1
        # One thread per worker process: the heavy units are CPU-bound Python (the GIL would serialise threads).
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            yield dataclasses.replace(spec, dask_address=cluster.scheduler_address, workers=None)


# Settings through which a user asks for heartbeats (the second is Prefect's older name).
HEARTBEAT_SETTINGS = ("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY")


@contextlib.contextmanager
def without_heartbeats() -> Iterator[None]:
    """Run the block's flows without Prefect's heartbeat thread, unless the user configured heartbeats.

    The end of every flow run (subflows too) joins that thread, which sleeps in whole seconds: up
    to 1 s, 0.5 s on average, added to each run. Heartbeats only let a Prefect automation mark the
    runs of a vanished worker as crashed; a segbench command runs its flows in its own process, and
    the next command resumes what a killed one left.
    """
    if any(name in os.environ for name in HEARTBEAT_SETTINGS):
        yield
        return
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


@contextlib.contextmanager
def shared_prefect_api() -> Iterator[str]:
    """Export the URL of the Prefect API this process uses, starting the temporary one if none is set.

    Child processes spawned inside the block (Dask workers) inherit ``PREFECT_API_URL`` and report
    their task runs there instead of each starting a temporary API. The previous value is restored.
    """
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:
        # The same singleton Prefect's own client starts on first use, so the flow talks to it too.
        from prefect.server.api.server import SubprocessASGIServer

        server = SubprocessASGIServer()
        server.start()
        url = server.api_url
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = url
    try:
        yield url
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous


def with_runner(flow: Any, spec: RunnerSpec) -> Any:
    """``flow`` with its task runner set by ``spec`` (unchanged for ``threads``, or when not a flow)."""
    if spec.kind == "threads" or not hasattr(flow, "with_options"):
        return flow
    if not spec.dask_address:
        raise ValueError("the dask runner needs a scheduler address: use it inside runner_session()")
    from prefect_dask import DaskTaskRunner

    return flow.with_options(task_runner=DaskTaskRunner(address=spec.dask_address))
