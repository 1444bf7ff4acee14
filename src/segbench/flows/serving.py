"""Serving a rebuild plan's schedules: stopped cleanly by Ctrl-C, and what a killed ``serve`` left settled.

Prefect's ``serve`` stops gracefully on SIGTERM (its runner cancels the runs in flight and pauses the
schedules) but ends at once on Ctrl-C, leaving a run it had started shown as Running for ever. Here
Ctrl-C takes the SIGTERM path; a second Ctrl-C ends at once.

A ``serve`` that was killed (SIGKILL, a reboot) could not do either: the server keeps scheduling runs
that nobody starts (Prefect marks them Late) and keeps showing the run it was executing as Running.
Started again, ``serve`` would launch every Late run at once. So before serving, the Late runs of the
plan's deployments are cancelled, and their Running runs are marked Crashed when no runner has polled
the deployment for longer than Prefect's own liveness window (so a second live ``serve`` is left alone).
"""

from __future__ import annotations

import datetime
import os
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterName,
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterDeploymentId,
    FlowRunFilterParentFlowRunId,
    FlowRunFilterStartTime,
    FlowRunFilterState,
    FlowRunFilterStateName,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.states import Cancelled, Crashed

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.responses import DeploymentResponse as Deployment
    from prefect.deployments.runner import RunnerDeployment

_LATE = FlowRunFilterState(name=FlowRunFilterStateName(any_=["Late"]))
_ACTIVE = FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING, StateType.PENDING]))


@dataclass(frozen=True)
class Settled:
    """What a killed ``serve`` had left and this one settled."""

    late_cancelled: int = 0
    running_crashed: int = 0


def settle_left_runs(deployment_names: Sequence[str], flow_name: str = "rebuild") -> Settled:
    """Cancel the Late runs of these deployments; mark their Running runs (and subflow runs) Crashed when no
    runner serves them."""
    late = crashed = 0
    now = datetime.datetime.now(datetime.timezone.utc)
    with get_client(sync_client=True) as client:
        for deployment in _plan_deployments(client, deployment_names, flow_name):
            of_deployment = FlowRunFilterDeploymentId(any_=[deployment.id])
            for run in client.read_flow_runs(flow_run_filter=FlowRunFilter(deployment_id=of_deployment, state=_LATE)):
                client.set_flow_run_state(run.id, Cancelled(message="missed: segbench serve was not running when "
                                                                    "it was due"), force=True)
                late += 1
            polled = deployment.last_polled
            if polled is not None and now - polled < _runner_gone_after():
                continue  # a live runner (another serve) may be executing them
            orphans = client.read_flow_runs(flow_run_filter=FlowRunFilter(deployment_id=of_deployment, state=_ACTIVE))
            while orphans:  # the runs, then their subflow runs, level by level
                for run in orphans:
                    client.set_flow_run_state(run.id, Crashed(message="the segbench serve running it was stopped "
                                                                      "without a chance to say so"), force=True)
                crashed += len(orphans)
                orphans = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                    parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[run.id for run in orphans]),
                    state=_ACTIVE))
    return Settled(late, crashed)


def _plan_deployments(client: SyncPrefectClient, names: Sequence[str], flow_name: str) -> list[Deployment]:
    """The deployments of these names that run ``flow_name`` (another flow may use the same names)."""
    return client.read_deployments(flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
                                   deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=list(names))))


def _runner_gone_after() -> datetime.timedelta:
    """How long since a runner last polled a deployment before Prefect calls it not ready (60 s by default)."""
    from prefect.settings import get_current_settings

    return datetime.timedelta(seconds=get_current_settings().server.services.foreman
                              .deployment_last_polled_timeout_seconds)


def serve_until_stopped(deployments: Sequence[RunnerDeployment], say: Callable[[str], None],
                        ui: str, flow_name: str = "rebuild") -> None:
    """Serve the deployments until Ctrl-C or SIGTERM; either stops the runs in flight and pauses the schedules.

    Meanwhile a line per scheduled run that starts or ends goes to ``say`` (the runs execute in
    processes of their own, whose output is Prefect's, not the command's).
    """
    from prefect import serve

    def graceful(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C ends at once
        os.kill(os.getpid(), signal.SIGTERM)  # the runner's own graceful stop

    previous = signal.signal(signal.SIGINT, graceful)
    stop = threading.Event()
    watcher = threading.Thread(target=_report_runs, args=([d.name for d in deployments], flow_name, say, ui, stop),
                               name="segbench-serve-runs", daemon=True)
    watcher.start()
    try:
        serve(*deployments, print_starting_message=False)
    finally:
        stop.set()
        watcher.join(timeout=2 * RUN_POLL_SECONDS)  # its last look: a run that ended meanwhile is reported
        signal.signal(signal.SIGINT, previous)


RUN_POLL_SECONDS = 2.0
_REPORTED = (StateType.RUNNING, StateType.COMPLETED, StateType.FAILED, StateType.CRASHED, StateType.CANCELLED)


def _report_runs(names: Sequence[str], flow_name: str, say: Callable[[str], None], ui: str,
                 stop: threading.Event) -> None:
    """Say when a run of these deployments starts and how it ends, from what the API records."""
    since = datetime.datetime.now(datetime.timezone.utc)
    said: dict[object, StateType] = {}
    deployments: dict[object, str] = {}  # looked up until serve has registered them; they do not change after
    stopped = False
    while not stopped:
        stopped = stop.wait(RUN_POLL_SECONDS)
        try:
            with get_client(sync_client=True) as client:
                deployments = deployments or {d.id: d.name for d in _plan_deployments(client, names, flow_name)}
                runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                    deployment_id=FlowRunFilterDeploymentId(any_=list(deployments)),
                    start_time=FlowRunFilterStartTime(after_=since),
                    state=FlowRunFilterState(type=FlowRunFilterStateType(any_=list(_REPORTED))))) if deployments else []
        except Exception:  # noqa: BLE001 - a report line is not worth stopping the schedules for
            continue
        for run in sorted(runs, key=lambda r: r.start_time or since):
            state = run.state_type
            if run.start_time is None or said.get(run.id) == state or state is None:
                continue
            said[run.id] = state
            what = (f"started ({run.name})" if state is StateType.RUNNING
                    else f"{run.state_name.lower() if run.state_name else state.value.lower()} after "
                         f"{run.total_run_time.total_seconds():.1f} s")
            stamp = datetime.datetime.now().strftime("%H:%M:%S")
            deployment = deployments.get(run.deployment_id, "?") if run.deployment_id is not None else "?"
            say(f"{stamp} {flow_name}/{deployment}: {what}  {ui}/runs/flow-run/{run.id}")
