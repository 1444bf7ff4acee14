"""Flows that commands run have no heartbeat thread (each run's end would wait for its 1 s sleep),
unless the user asked for heartbeats."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt

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


@pytest.mark.integration
@pytest.mark.parametrize("configured", [False, True])
def test_a_command_runs_its_flow_without_heartbeats_unless_asked(prefect_harness, tmp_path, configured):
    """Through the CLI, as a user runs it: Prefect's debug log shows the heartbeat thread only when set."""
    (tmp_path / "gt.json").write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    (tmp_path / "preds.json").write_text(json.dumps(HAND_PREDS))
    # An in-process command run earlier in the session may have exported a console level that --verbose keeps.
    unset = {*HEARTBEAT_SETTINGS, "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"}
    env = {k: v for k, v in os.environ.items() if k not in unset} | {"PREFECT_LOGGING_LEVEL": "DEBUG"}
    if configured:
        env["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] = "60"
    command = [sys.executable, "-m", "segbench", "--verbose", "--work-dir", str(tmp_path / "work"), "--data-root",
               str(tmp_path / "data"), "evaluate", "cgf1", "--gt", str(tmp_path / "gt.json"), "--predictions",
               str(tmp_path / "preds.json"), "--out", str(tmp_path / "report"), "--track"]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "report" / "metrics.json").is_file()
    assert ("Started flow run heartbeat context" in done.stdout + done.stderr) == configured
