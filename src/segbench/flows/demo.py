"""The demo: the whole product on generated worlds, offline and without keys.

Generates the shared demo world (a small COCO 2017 + COCO-Stuff tree with captions), then runs
every registered dataset's demo step: each builds its dataset from generated sources, with every
human round answered by simulated workers through the files backend. Then it publishes a DVC
version of the data root (to a local remote under the work dir unless one is configured), and
runs the steps' evaluations of a baseline against that published version.

Which datasets take part, and in which order, is the registry's (:mod:`segbench.registry`); each
dataset's part is a :class:`DemoStep` in its own flows package.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from segbench import registry
from segbench.core import clock, versioning
from segbench.core.io import atomic_write_text
from segbench.demo.world import generate_demo_world
from segbench.flows.prefect_ui import run_name, task_name
from segbench.flows.publish import publish_data
from segbench.schemas.results import DemoPart, DemoResult

# The time the demo's data records (2024-01-01 UTC), so every run of one seed is byte-identical and
# the committed ``data.dvc`` names what ``make demo`` builds.
DEMO_EPOCH = 1_704_067_200


@dataclass(frozen=True)
class DemoContext:
    """What every demo step gets: where to write, the language provider, the seed, the shared world."""

    repo: Path
    data_root: Path
    work_dir: Path
    reports_dir: Path
    provider: Any
    editor: Any
    seed: int
    spacy_model: str
    world: Path

    @property
    def data_dir(self) -> str:
        """The data root as the repository names it (``data``), for evaluations of the published version."""
        return self.data_root.relative_to(self.repo).as_posix()


@dataclass(frozen=True)
class DemoStep:
    """One dataset's part of the demo.

    ``build`` runs before publishing and returns the dataset's results (its :class:`DemoPart`, with
    the paths worth opening). ``evaluate``, if any, runs after publishing (it reads the published
    version) and returns the results with the evaluation added.
    """

    build: Callable[[DemoContext], DemoPart]
    evaluate: Callable[[DemoContext, Any], DemoPart] | None = None
    # The dataset's table in the demo's rebuild plan: the inputs and parameters its build used.
    plan: Callable[[DemoContext], dict[str, Any]] | None = None


@task(**task_name("generate-demo-world"), cache_policy=NO_CACHE)
def generate_world(root: Path, seed: int) -> Path:
    generate_demo_world(root, seed=seed)
    return root


# Told of each dataset's results as soon as they exist: ``(dataset name, results, evaluated)``, with
# ``evaluated`` True for the second call of a dataset whose step evaluates after publishing.
PartDone = Callable[[str, DemoPart, bool], None]


@flow(name="demo", flow_run_name=run_name("demo", ("seed",)))
def run_demo(repo: Path, data_root: Path, work_dir: Path, reports_dir: Path, provider: Any, seed: int = 0,
             dvc_remote: str | None = None, spacy_model: str = "en_core_web_sm", editor: Any = None,
             on_part: PartDone | None = None) -> DemoResult:
    """Run build → publish → predict → evaluate on the demo worlds, for every registered dataset.

    Args:
        repo: the git + DVC project that versions ``data_root`` (``git init`` is run if it is not
            in a repository yet).
        provider: the language provider (WordNet offline by default).
        editor: the image editor of the CAFE step (default: the one the settings ask for).
        dvc_remote: remote URL to push to; default: the repository's default remote, else
            ``<work_dir>/dvc-remote``.
        on_part: called with each dataset's results once built, and again once evaluated (the
            command line prints each summary as it comes, not all at the end).

    Returns:
        Each dataset's results, the published version and every path worth opening.
    """
    repo, data_root, work_dir = Path(repo).resolve(), Path(data_root).resolve(), Path(work_dir).resolve()
    reports_dir = Path(reports_dir).resolve()
    with clock.pinned(DEMO_EPOCH):
        world = generate_world(work_dir / "demo-world", seed)
        context = DemoContext(repo=repo, data_root=data_root, work_dir=work_dir, reports_dir=reports_dir,
                              provider=provider, editor=editor, seed=seed, spacy_model=spacy_model, world=world)
        steps = {spec.name: spec.demo_step.load() for spec in registry.DATASETS if spec.demo_step}
        results: dict[str, DemoPart] = {}
        for name, step in steps.items():
            results[name] = step.build(context)
            if on_part is not None:
                on_part(name, results[name], False)
        record = _publish(context, dvc_remote)
        for name, step in steps.items():
            if step.evaluate is not None:
                results[name] = step.evaluate(context, results[name])
                if on_part is not None:
                    on_part(name, results[name], True)
        releases = _release_all(context, f"dvc md5 {record.md5}")
        plan = write_rebuild_plan(context, steps)
    paths = {"demo world (inputs)": world}
    for result in results.values():
        paths |= result.paths
    return DemoResult(datasets=results, publish=record,
                      paths=paths | {"DVC pointer": repo / f"{context.data_dir}.dvc", "releases": releases,
                                     "rebuild plan (segbench serve --plan ...)": plan})


DEMO_SCHEDULE = {"name": "demo-every-minute", "cron": "* * * * *"}


def write_rebuild_plan(context: DemoContext, steps: dict[str, DemoStep]) -> Path:
    """``<work dir>/rebuild.toml``: the demo's builds as a rebuild plan, with a schedule firing every
    minute, so ``segbench rebuild`` and ``segbench serve`` can be tried on the demo world at once (each
    run finds the demo's datasets up to date until an input or parameter changes)."""
    import tomlkit

    path = context.work_dir / "rebuild.toml"

    def relative(value: Any) -> Any:  # paths from the plan's folder: the plan moves with the work dir
        if isinstance(value, Path):
            return os.path.relpath(value, path.parent)
        if isinstance(value, dict):
            return {key: relative(item) for key, item in value.items()}
        return [relative(item) for item in value] if isinstance(value, list) else value

    document = tomlkit.document()
    document.add(tomlkit.comment("The demo's builds as a rebuild plan: written by `segbench demo`, rewritten by "
                                 "the next one."))
    document.add(tomlkit.comment("Try: segbench rebuild --plan PLAN, or segbench server start, then "
                                 "segbench serve --plan PLAN (see docs/how-to/rebuild.md)."))
    document["repo"] = relative(context.repo)
    for name, step in steps.items():
        if step.plan is not None:
            document[name] = relative(step.plan(context))
    schedules = tomlkit.aot()
    schedules.append(tomlkit.item(DEMO_SCHEDULE))
    document["schedule"] = schedules
    atomic_write_text(path, tomlkit.dumps(document))
    return path


def _release_all(context: DemoContext, version: str) -> Path:
    """Release every dataset of the published version under ``releases/<dataset>/`` (git-ignored)."""
    from segbench.demo.release import DEMO_RELEASE_INFO
    from segbench.flows.release import release_dataset

    root = context.repo / "releases"
    for spec in registry.DATASETS:
        if spec.release_plan:
            release_dataset(dataset=spec.name, out=root / spec.name, info=DEMO_RELEASE_INFO, repo=context.repo,
                            data_dir=f"{context.data_dir}/{spec.default_out}", version=version)
    return root


def _publish(context: DemoContext, dvc_remote: str | None) -> Any:
    """Publish the data root, to ``<work_dir>/dvc-remote`` unless a remote is configured."""
    versioning.ensure_repo(context.repo, init_git=not _inside_git(context.repo))
    if dvc_remote is None and versioning.default_remote(context.repo) is None:
        dvc_remote = str(context.work_dir / "dvc-remote")
    return publish_data(repo=str(context.repo), data_dir=context.data_dir, remote_url=dvc_remote)


def _inside_git(path: Path) -> bool:
    return any((parent / ".git").exists() for parent in (path, *path.parents))
