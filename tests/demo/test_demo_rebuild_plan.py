"""The rebuild plan `segbench demo` leaves: its builds as a plan, with a schedule, that finds them up to date."""

from __future__ import annotations

import json
import tomllib

import pytest
from support.cli import run

from segbench import registry

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def test_the_demo_plan_rebuilds_its_datasets_as_up_to_date_and_schedules_every_minute(demo_copy):
    plan_file = demo_copy / "work" / "rebuild.toml"
    plan = registry.load_plan(plan_file)
    assert [(schedule.name, schedule.cron) for schedule in plan.schedule] == [("demo-every-minute", "* * * * *")]
    assert not any(value.startswith("/") for value in _strings(tomllib.loads(plan_file.read_text()))), \
        "paths are relative to the plan: it moves with the work dir"

    result = run(demo_copy, "--json", "rebuild", "--plan", str(plan_file))
    steps = json.loads(result.stdout)["steps"]
    assert {step["step"]: step["status"] for step in steps} == {
        "coco_cd": "up to date", "waterbirds": "up to date", "vocab": "up to date"}


def _strings(value):
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return [value] if isinstance(value, str) else []
