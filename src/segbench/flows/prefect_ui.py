"""What the Prefect UI shows of a run: a name that says what ran, and its results as an artifact.

Prefect names flow runs at random (``ultramarine-clam``) and task runs ``<task>-<hash>``; a build
or evaluation leaves nothing in the UI but its state. Flows here name their runs from their
parameters (``build-coco-cd rho=0.5,0.95 seed=13``) with :func:`run_name`, tasks keep their own name
(:func:`task_name`, or :func:`shard_name` for a shard: its first and last item), and every build
and evaluation publishes its summary with :func:`publish_build` / :func:`publish_evaluation`, and every
ingested round its reports with :func:`publish_round`.

    @flow(name="build-coco-cd", flow_run_name=run_name("build-coco-cd", lambda p: {"seed": p["seed"]}))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, TypeVar, cast

from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.context import FlowRunContext
from prefect.tasks import TaskRunNameCallbackWithParameters

from segbench.core.reports import cell
from segbench.schemas.results import BuildSummary, EvaluationResult

T = TypeVar("T")
Shown = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def _shown(value: Any) -> str:
    """A parameter as a run name shows it: numbers as given, lists joined, paths by their name."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        return ",".join(f"{key}:{_shown(item)}" for key, item in value.items() if item is not None)
    if isinstance(value, (list, tuple, set, frozenset)):
        return ",".join(_shown(item) for item in value)
    if isinstance(value, Path) or (isinstance(value, str) and "/" in value):
        return Path(value).name or str(value)
    return str(getattr(value, "value", value))  # enums by their value


def describe(flow: str, shown: Mapping[str, Any]) -> str:
    """``flow key=value ...`` for the values that are set (None is left out)."""
    return " ".join([flow, *(f"{key}={_shown(value)}" for key, value in shown.items() if value is not None)])


def run_name(flow: str, shown: Shown | Sequence[str] = ()) -> Callable[[], str]:
    """A ``flow_run_name`` callable: ``flow`` and the parameters ``shown`` picks (names, or a function
    of the call's parameters returning ``{label: value}``)."""

    def name() -> str:
        context = FlowRunContext.get()
        parameters: Mapping[str, Any] = (context.parameters if context else None) or {}
        picked = shown(parameters) if callable(shown) else {key: parameters.get(key) for key in shown}
        return describe(flow, picked)

    return name


def model(value: Any, kind: type[T]) -> T:
    """A flow's params argument as its model, whether given as one, as a dict, or left out (defaults)."""
    if value is None:
        return kind()
    return value if isinstance(value, kind) else kind.model_validate(value)  # type: ignore[attr-defined]


def from_params(kind: type, **labels: str) -> Shown:
    """Show fields of the flow's ``params`` model: ``from_params(CocoCdParams, rho="rhos", seed="seed")``."""

    def shown(parameters: Mapping[str, Any]) -> dict[str, object]:
        params: Any = model(parameters.get("params"), kind)
        return {label: getattr(params, field) for label, field in labels.items()}

    return shown


class TaskNames(TypedDict):
    """The ``@task`` options that name a task and its runs."""

    name: str
    task_run_name: str | TaskRunNameCallbackWithParameters


def task_name(name: str) -> TaskNames:
    """``@task`` options naming every run of the task ``name`` itself, without Prefect's hash suffix."""
    return {"name": name, "task_run_name": name}


def shard_name(name: str, ids: Callable[[dict[str, Any]], Sequence[Any]]) -> TaskNames:
    """``@task`` options naming a shard's run by its first and last item: ``render-shard 139-872``.

    ``ids`` gives the ids of the shard's items from the task's parameters.
    """

    def run(parameters: dict[str, Any]) -> str:
        found = list(ids(parameters))
        return f"{name} {found[0]}-{found[-1]}" if found else name

    # Prefect passes the parameters to a run-name function with a `parameters` argument; its
    # protocol for one (with a classmethod) is met by no plain function, hence the cast.
    return {"name": name, "task_run_name": cast(TaskRunNameCallbackWithParameters, run)}


def artifact_key(kind: str, dataset: str) -> str:
    """A Prefect artifact key (lowercase letters, digits, dashes): ``build-coco-cd``, ``evaluation-spin``."""
    return re.sub(r"[^a-z0-9]+", "-", f"{kind}-{dataset}".lower()).strip("-")


def _rows(value: Any, prefix: str = "") -> list[dict[str, str]]:
    if isinstance(value, Mapping):
        return [row for key, item in value.items() for row in _rows(item, f"{prefix}{key}" if not prefix
                                                                    else f"{prefix} / {key}")]
    if isinstance(value, (list, tuple)) and all(not isinstance(item, (Mapping, list, tuple)) for item in value):
        return [{"what": prefix, "value": ", ".join(cell(item) for item in value)}]
    if isinstance(value, (list, tuple)):
        return [row for index, item in enumerate(value) for row in _rows(item, f"{prefix} / {index}")]
    return [{"what": prefix, "value": cell(value)}]


def publish_build(dataset: str, summary: BuildSummary) -> None:
    """The build's summary as a table artifact ``build-<dataset>``: where it went, whether it was up to
    date, its counts (one row per count, nested counts as ``splits / rho_0.95 / test``) and units."""
    rows = [{"what": "output", "value": _shown(str(summary.out))},
            {"what": "up to date", "value": cell(summary.up_to_date)}]
    rows += _rows(summary.counts.model_dump(mode="json"))
    rows += _rows({"units": summary.units.model_dump()}) if summary.units else []
    create_table_artifact(rows, key=artifact_key("build", dataset),
                          description=f"{dataset} build: counts of what was built")


def publish_evaluation(dataset: str, result: EvaluationResult) -> None:
    """The evaluation's report as a Markdown artifact ``evaluation-<dataset>``: its tables as
    ``report.md`` has them, and its plots drawn in the page."""
    report = Path(result.paths["report"])
    create_markdown_artifact(with_plots(report), key=artifact_key("evaluation", dataset),
                             description=f"{dataset} evaluation report ({report.parent.name})")


def publish_round(key: str, reports: Mapping[str, Path], worker_report: Path) -> None:
    """An ingested round's Markdown reports (the kind's, e.g. the audit or verification table, then the
    worker report) as one Markdown artifact ``round-<key>``."""
    pages = [path for path in (*reports.values(), worker_report) if Path(path).suffix == ".md"]
    create_markdown_artifact("\n\n".join(with_plots(Path(page)) for page in pages), key=artifact_key("round", key),
                             description=f"round {key}: what its answers say, and the worker report")


PLOT_BYTES_SHOWN = 2 << 20  # a larger image stays a link: the artifact is stored in the server's database
_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<name>[^)\s]+\.png)\)")


def with_plots(page: Path) -> str:
    """A Markdown page with the PNG files it links beside it put in as data URIs: the UI cannot open
    files on the machine that ran the flow, so a relative link would show a broken image."""
    import base64

    def inline(match: re.Match[str]) -> str:
        image = (page.parent / match["name"]).resolve()
        if (not image.is_relative_to(page.parent.resolve()) or not image.is_file()
                or image.stat().st_size > PLOT_BYTES_SHOWN):
            return match[0]
        data = base64.b64encode(image.read_bytes()).decode("ascii")
        return f"![{match['alt']}](data:image/png;base64,{data})"

    return _IMAGE.sub(inline, page.read_text(encoding="utf-8"))
