"""`segbench rebuild` and `segbench serve`: run a rebuild plan now, or on its cron schedules.

``rebuild`` runs the plan's steps as one parent flow and prints what each step did. ``serve``
registers one deployment per ``[[schedule]]`` of the plan with a Prefect server and runs the
scheduled flow runs until stopped. The flows are imported inside the commands so ``--help`` stays fast.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

from segbench import console, prefect_server, registry
from segbench.cli.common import display_path, settings_of
from segbench.core.errors import InputError, ServiceError

if TYPE_CHECKING:
    from segbench.schemas.rebuild import RebuildResult

_PLAN = typer.Option(..., "--plan", help="Rebuild plan (TOML): a table per dataset, evaluate entries, publish, "
                                         "schedule entries.")
SERVER_HINT = ("start one with `segbench server start` (with the same --work-dir), or run `prefect server start` "
               "in another terminal and `export PREFECT_API_URL=http://127.0.0.1:4200/api`")


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add this module's commands to the root command group."""
    app.command("rebuild")(rebuild_command)
    app.command("serve")(serve_command)


def rebuild_command(
    ctx: typer.Context,
    plan: Path = _PLAN,
    force: bool = typer.Option(False, "--force", help="Rebuild and re-evaluate even what is up to date."),
    only: list[str] = typer.Option(None, "--only", help=f"Run only this step ({', '.join(registry.plan_steps())}); "
                                                        "repeat for several."),
) -> None:
    """Run every step of a plan as one flow: each dataset, then the evaluations, then publish.

    Steps whose output is up to date do nothing; a build killed earlier resumes from its finished units.
    """
    from segbench import progress

    registry.load_plan(plan).select(only, path=plan)  # a bad plan or step fails before Prefect starts
    settings = settings_of(ctx)
    from segbench.flows.rebuild import rebuild

    prefect_server.ensure_api_answers()

    # No command_lock here: the flow takes the data root's lock itself (a served run must hold it too).
    with console.listener() as listener, progress.listening(listener):
        result = rebuild(plan.resolve(), settings.data_root.resolve(), settings.work_dir.resolve(), force=force,
                         only=only or None, runner=_runner(ctx), wait=ctx.find_root().obj.get("wait", 0.0),
                         settings=settings)
    console.set_summary(result)
    print_steps(result)


def print_steps(result: RebuildResult) -> None:
    rows = []
    for step in result.steps:
        units = step.units
        rows.append([step.step, step.status, f"{units.computed} / {units.reused}" if units else None,
                     f"{step.seconds:.1f}", _shown(step.out)])
    console.out.print(console.table(f"Rebuild of {display_path(result.plan)}",
                                    ["step", "result", "units computed / reused", "seconds", "output"], rows))
    idle = sum(step.up_to_date for step in result.steps)
    total = sum(step.seconds for step in result.steps)
    console.out.print(f"{len(result.steps) - idle} step(s) did work, {idle} up to date; {total:.1f} s "
                      "(--force rebuilds what is up to date).")


def _shown(out: str | None) -> str | None:
    return display_path(Path(out)) if out and "/" in out else out


def _runner(ctx: typer.Context) -> Any:
    """The root ``--runner/--dask-address/--workers`` choice, or None for the default threads."""
    spec = (ctx.find_root().obj or {}).get("runner")
    return spec if spec is not None and spec.kind != "threads" else None


def serve_command(
    ctx: typer.Context,
    plan: Path = _PLAN,
) -> None:
    """Run the plan on its cron schedules: one Prefect deployment per schedule entry, served until stopped.

    Needs a Prefect server: segbench server start (or prefect server start and PREFECT_API_URL); watch the runs in
    its UI.

    Each run reads the plan again, so edits to the steps apply from the next run; restart serve after editing schedules.
    """
    loaded = registry.load_plan(plan)
    if not loaded.schedule:
        raise InputError("the plan has no [[schedule]]", path=plan,
                         hint='add [[schedule]] with name = "nightly" and cron = "0 3 * * *"')
    api_url = check_server()
    settings = settings_of(ctx)
    from prefect.deployments.runner import EntrypointType, RunnerDeployment
    from prefect.schedules import Cron

    from segbench.flows.rebuild import rebuild
    from segbench.flows.serving import serve_until_stopped, settle_left_runs

    runner = _runner(ctx)
    base = {"plan_path": str(plan.resolve()), "data_root": str(settings.data_root.resolve()),
            "work_dir": str(settings.work_dir.resolve()), "wait": ctx.find_root().obj.get("wait", 0.0),
            "runner": dataclasses.asdict(runner) if runner is not None else None}
    # to_deployment is async-compatible: called from synchronous code it returns the deployment itself.
    deployments = [
        cast(RunnerDeployment, rebuild.to_deployment(
            name=schedule.name, schedules=[Cron(schedule.cron, timezone=schedule.timezone)],
            parameters={**base, "only": schedule.steps}, description=f"segbench rebuild of {plan.name}",
            tags=["segbench"], entrypoint_type=EntrypointType.MODULE_PATH))
        for schedule in loaded.schedule
    ]
    ui = api_url.rstrip("/").removesuffix("/api")
    settled = settle_left_runs([schedule.name for schedule in loaded.schedule])
    if settled.late_cancelled or settled.running_crashed:
        console.out.print(f"A serve that was killed left {settled.late_cancelled} missed run(s), now cancelled, and "
                          f"{settled.running_crashed} run(s) shown as running, now marked crashed.")
    console.out.print(console.table(f"Serving {display_path(plan)}", ["deployment", "cron", "time zone", "steps"],
                                    [[f"rebuild/{s.name}", s.cron, s.timezone, ", ".join(s.steps or ["all"])]
                                     for s in loaded.schedule]))
    console.out.print(f"Watch the runs at [bold]{ui}/runs[/] (flow runs) and [bold]{ui}/deployments[/]; "
                      "stop with Ctrl-C (runs in flight are cancelled and the schedules paused).")
    serve_until_stopped(deployments, lambda line: console.out.print(line, markup=False, highlight=False,
                                                                    soft_wrap=True), ui)
    console.out.print("Stopped serving; the schedules are paused until the next segbench serve.")


def check_server() -> str:
    """The URL of the Prefect server PREFECT_API_URL names, after checking it answers.

    Raises:
        ServiceError: PREFECT_API_URL is unset (the temporary API would register the schedules but
            never run them) or the server does not answer.
    """
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:
        raise ServiceError("serve needs a Prefect server: PREFECT_API_URL is not set (without a server, "
                           "schedules are registered but never run)", hint=SERVER_HINT)
    with get_client(sync_client=True) as client:
        problem = client.api_healthcheck()
    if problem is not None:
        raise ServiceError(f"the Prefect server at {url} does not answer ({problem})", hint=SERVER_HINT)
    return url
