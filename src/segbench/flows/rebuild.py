"""The ``rebuild`` flow: every dataset a plan configures, then its evaluations, then one publish.

Each step is the dataset's own flow, run as a subflow, so the Prefect UI shows one parent run with
a child run per dataset. Dataset flows decide themselves whether their output is up to date (their
build key: logic version, params, input hashes) and resume a killed build from its finished units;
this flow only reports what each did. The evaluation flows likewise skip a report whose ground
truth, predictions and options are unchanged, and publishing unchanged data changes nothing.

The flow holds the data root's lock for its whole run, so a scheduled run and a command started by
hand never write at the same time (the CLI command therefore does not take the lock itself).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from prefect import flow
from prefect.logging import get_run_logger

from segbench import registry
from segbench.core.errors import InputError
from segbench.flows.prefect_ui import run_name
from segbench.flows.publish import publish_data
from segbench.flows.runner import RunnerSpec, runner_session, with_runner
from segbench.locking import data_root_lock
from segbench.schemas.rebuild import PlanEvaluation, RebuildPlan, RebuildResult, StepReport
from segbench.schemas.results import EvaluationResult, Result
from segbench.schemas.versioning import PublishRecord
from segbench.settings import Settings, load_settings


@dataclasses.dataclass(frozen=True)
class RebuildRun:
    """One rebuild in progress: the plan, where it writes, and how to call child flows.

    A dataset's rebuild step (its registry entry's ``plan_step``) and evaluation step
    (``plan_evaluate``) receive this object.
    """

    plan: RebuildPlan
    data_root: Path
    work_dir: Path
    force: bool
    runner: RunnerSpec | None
    resolved: Settings

    def call(self, child: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a child flow (every one takes ``force``) on the rebuild's task runner."""
        if self.runner is not None:
            child = with_runner(child, self.runner)
        return child(*args, force=self.force, **kwargs)

    def settings(self) -> Settings:
        """The settings the rebuild runs under."""
        return self.resolved

    def dataset_dir(self, dataset: str) -> Path:
        """Where ``dataset`` is built: its table's ``out``, else its default folder under the data root."""
        step = getattr(self.plan, dataset, None)
        if step is not None and getattr(step, "out", None) is not None:
            return Path(step.out)
        return self.data_root / registry.dataset(dataset).default_out

    def relative(self, path: Path) -> str:
        """``path`` as the evaluations and DVC name it inside the plan's repo (as given when it is outside)."""
        try:
            return Path(path).resolve().relative_to(Path(self.plan.repo).resolve()).as_posix()
        except ValueError:
            return Path(path).as_posix()


@flow(name="rebuild", flow_run_name=run_name("rebuild", ("plan_path", "only")))
def rebuild(plan_path: str | Path, data_root: str | Path, work_dir: str | Path, force: bool = False,
            only: list[str] | None = None, runner: Any = None, wait: float = 0.0,
            settings: Settings | None = None) -> RebuildResult:
    """Run the steps of a rebuild plan in order: datasets, evaluations, publish.

    Args:
        plan_path: the plan file (:mod:`segbench.schemas.rebuild`); read at the start of every run,
            so a served schedule picks up edits without being registered again.
        data_root, work_dir: as the settings of the same names.
        force: rebuild and re-evaluate even what is up to date.
        only: run only these steps (dataset names, ``evaluate``, ``publish``); default: every
            configured one.
        runner: a :class:`~segbench.flows.runner.RunnerSpec` (or its fields as a dict, as a
            deployment stores it) for the per-shard tasks of the child flows; default: threads.
        wait: seconds to wait for the data root's lock when another command holds it.
        settings: the settings the command line resolved. A served run has none: it is a process
            of its own, started by Prefect from the deployment's parameters (stored without
            secrets), so it resolves them itself, once, from ``data_root`` and ``work_dir``.

    Returns:
        The plan and a report of each step, in the order the steps ran.

    Raises:
        InputError: a bad plan, an unknown step in ``only``, or an evaluation of a dataset not built.
        BusyError: another command holds the data root's lock after ``wait`` seconds.
        Whatever a step raises: the rebuild stops at the first failing step.
    """
    plan_path, data_root, work_dir = Path(plan_path).resolve(), Path(data_root).resolve(), Path(work_dir).resolve()
    plan = registry.load_plan(plan_path)
    steps = plan.select(only, path=plan_path)
    spec = RunnerSpec(**runner) if isinstance(runner, dict) else runner
    logger = get_run_logger()
    logger.info("rebuild of %s: %s", plan_path, ", ".join(steps))
    reports: list[StepReport] = []

    def waiting(holder: dict | None) -> None:
        logger.info("waiting for %s to release %s", (holder or {}).get("command", "another command"), data_root)

    with data_root_lock(data_root, command=f"segbench rebuild --plan {plan_path}", wait=wait, on_wait=waiting), \
            _live_runner(spec) as live:
        resolved = settings or load_settings(data_root=data_root, work_dir=work_dir)
        run = RebuildRun(plan=plan, data_root=data_root, work_dir=work_dir, force=force, runner=live,
                         resolved=resolved)
        for step in steps:
            for name, kind, action in _actions(run, step):
                reports.append(_timed(name, kind, action))
                logger.info("%s: %s in %.1f s", name, reports[-1].status, reports[-1].seconds)
    return RebuildResult(plan=plan_path, steps=reports)


Done = Literal["built", "evaluated", "published"]  # what doing a step is called in its report


@contextlib.contextmanager
def _live_runner(spec: RunnerSpec | None) -> Iterator[RunnerSpec | None]:
    if spec is None:
        yield None
        return
    with runner_session(spec) as live:  # one local Dask cluster for every child flow of this run
        yield live


def _timed(name: str, kind: Done, action: Callable[[], Result | PublishRecord]) -> StepReport:
    start = time.perf_counter()
    done = action()
    if isinstance(done, PublishRecord):
        up_to_date, units, out = not done.changed, None, done.md5
    else:
        up_to_date, units, out = done.up_to_date, done.units, str(done.out)
    return StepReport(step=name, status="up to date" if up_to_date else kind, up_to_date=up_to_date,
                      units=units, seconds=round(time.perf_counter() - start, 2), out=out)


def _actions(run: RebuildRun, step: str) -> list[tuple[str, Done, Callable[[], Result | PublishRecord]]]:
    """The (row name, what doing it is called, action) of one step; ``evaluate`` has one per entry."""
    if step == "evaluate":
        return [(f"evaluate:{name}", "evaluated", functools.partial(_evaluate, run, entry, name))
                for entry, name in zip(run.plan.evaluate, run.plan.evaluation_names(), strict=True)]
    if step == "publish":
        return [("publish", "published", lambda: _publish(run))]
    return [(step, "built", lambda: _plan_step(step)(run, getattr(run.plan, step)))]


def _plan_step(step: str) -> Callable[..., Result]:
    spec = registry.dataset(step)
    return spec.need(spec.plan_step, "rebuild step")


# --- evaluations and publish ----------------------------------------------------------------------


def _evaluate(run: RebuildRun, entry: PlanEvaluation, name: str) -> EvaluationResult:
    """Run one ``[[evaluate]]`` entry; the evaluation flow itself skips a report that is up to date."""
    dataset = run.dataset_dir(entry.dataset)
    if not (dataset / "manifest.json").is_file():
        raise InputError(f"evaluation {name}: the {entry.dataset} dataset is not built", path=dataset,
                         hint=f"add [{entry.dataset}] to the plan, or build it with segbench build first")
    out = Path(entry.out or run.settings().reports_dir / entry.dataset / f"rebuild-{name}")
    spec = registry.dataset(entry.dataset)
    return spec.need(spec.plan_evaluate, "rebuild evaluation")(run, entry, dataset, out)


def _publish(run: RebuildRun) -> PublishRecord:
    step, repo = run.plan.publish, run.plan.repo
    assert step is not None, "publish runs only when the plan configures it"
    return publish_data(repo=str(repo), data_dir=run.relative(run.data_root), remote=step.remote,
                        remote_url=step.remote_url or run.settings().dvc_remote, commit=step.commit,
                        message=step.message)
