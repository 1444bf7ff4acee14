"""Flows that commands run have no heartbeat thread (each run's end would wait for its 1 s sleep),
unless the user asked for heartbeats."""

from __future__ import annotations

import pytest

from segbench.flows.runner import HEARTBEAT_SETTINGS, without_heartbeats


def _heartbeat_seen_by_a_flow() -> int | None:
    from prefect import flow
    from prefect.settings import get_current_settings

    @flow(name="heartbeat-probe")
    def probe() -> int | None:
        return get_current_settings().flows.heartbeat_frequency

    return probe()


@pytest.mark.integration
def test_flows_run_without_heartbeats(prefect_harness, monkeypatch):
    for name in HEARTBEAT_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    assert _heartbeat_seen_by_a_flow() is not None  # Prefect's default: heartbeats on
    with without_heartbeats():
        assert _heartbeat_seen_by_a_flow() is None


@pytest.mark.integration
@pytest.mark.parametrize("name", HEARTBEAT_SETTINGS)
def test_heartbeats_the_user_configured_are_kept(prefect_harness, monkeypatch, name):
    monkeypatch.setenv(name, "60")
    with without_heartbeats():
        assert _heartbeat_seen_by_a_flow() is not None
