"""The rebuild plan: which datasets to build, what to evaluate and publish, and when (``rebuild.toml``).

One optional table per dataset takes the inputs and parameters of its ``segbench build ...`` command;
``[[evaluate]]`` entries score predictions on the built datasets, ``[publish]`` versions the data
root with DVC, and ``[[schedule]]`` entries are the cron schedules ``segbench serve`` registers.
Relative paths are taken from the plan file's folder, so a plan means the same wherever it is run
from (a served run does not share the caller's working directory).

Only the models and their validation live here; :mod:`segbench.flows.rebuild` runs a plan.
"""

from __future__ import annotations

import functools
import re
import tomllib
import typing
import zoneinfo
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from segbench.core.errors import InputError
from segbench.core.io import read_text
from segbench.schemas.results import Units

# The order a rebuild runs in: every dataset (in registry order), then the evaluations of what was
# built, then one publish that versions the datasets and the reports together.
FINAL_STEPS = ("evaluate", "publish")
PLAN_EXAMPLE = "see the plan example in docs/how-to/rebuild.md"


def resolve_plan_path(path: Path, info: ValidationInfo) -> Path:
    """A path of the plan, relative to the plan file's folder unless absolute."""
    base = (info.context or {}).get("base", Path("."))
    path = path.expanduser()
    return path if path.is_absolute() else (Path(base) / path).resolve()


PlanPath = Annotated[Path, AfterValidator(resolve_plan_path)]


class PlanTable(BaseModel):
    """A table of the plan: unknown keys are errors (a misspelt key must not be ignored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class PlanEvaluation(PlanTable):
    """What every ``[[evaluate]]`` entry has; each dataset adds ``dataset = "<name>"`` and its options."""

    dataset: str = Field(description="the dataset the predictions are for")
    name: str | None = Field(None, description="the row name in the rebuild table")
    predictions: PlanPath
    out: PlanPath | None = Field(None, description="default: <reports dir>/<dataset>/rebuild-<predictions>")


class PublishStep(PlanTable):
    """``[publish]``: ``segbench publish`` after the builds and evaluations."""

    remote: str | None = Field(None, description="a configured DVC remote (default: the default remote)")
    remote_url: str | None = Field(None, description="default: the dvc_remote setting")
    commit: bool = False
    message: str | None = None

    @field_validator("remote_url")
    @classmethod
    def _resolve_local_remote(cls, value: str | None, info: ValidationInfo) -> str | None:
        # A remote without a scheme is a folder: relative to the plan, like every other path in it.
        return value if value is None or "://" in value else str(resolve_plan_path(Path(value), info))


_CRON_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12),
                ("day of week", 0, 7))
_CRON_NAMES = {3: "jan feb mar apr may jun jul aug sep oct nov dec".split(), 4: "sun mon tue wed thu fri sat".split()}
_CRON_ITEM = re.compile(r"^(\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/([0-9]+))?$")


def check_cron(text: str) -> str:
    """A standard 5-field cron expression (numbers, ranges, steps, lists, month/day names), or ValueError."""
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(f"{text!r} has {len(fields)} fields; cron takes 5: minute hour day-of-month month day-of-week")
    for index, (field, (name, low, high)) in enumerate(zip(fields, _CRON_FIELDS, strict=True)):
        for item in field.lower().split(","):
            match = _CRON_ITEM.match(item)
            if not match or match.group(2) == "0":
                raise ValueError(f"{name} field {field!r} is not a cron field (e.g. *, 5, 1-5, */15, 1,3)")
            if match.group(1) == "*":
                continue
            for value in match.group(1).split("-"):
                names = _CRON_NAMES.get(index, [])
                number = names.index(value) + (1 if index == 3 else 0) if value in names else \
                    int(value) if value.isdigit() else None
                if number is None:
                    kind = "a number or a name (jan, mon)" if names else "a number"
                    raise ValueError(f"{name} field {field!r}: {value!r} is not {kind}")
                if not low <= number <= high:
                    raise ValueError(f"{name} field {field!r}: {value!r} is outside {low}-{high}")
    _check_fires(text, fields)
    return text


def _check_fires(text: str, fields: list[str]) -> None:
    """Each field may be valid and the whole never fire (``0 3 31 2 *``: 31 February): cronsim,
    which Prefect's scheduler comes with, finds the next time or says there is none."""
    from datetime import datetime

    from cronsim import CronSim, CronSimError

    try:
        next(CronSim(text, datetime(2000, 1, 1)))
    except (CronSimError, StopIteration):
        raise ValueError(f"{text!r} never fires: no month {fields[3]!r} has a day {fields[2]!r}") from None


def _check_timezone(name: str) -> str:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r} (use an IANA name such as UTC or Europe/Berlin)") from exc
    return name


class Schedule(PlanTable):
    """``[[schedule]]``: one deployment ``segbench serve`` registers."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", description="the deployment's name")
    cron: Annotated[str, AfterValidator(check_cron)]
    timezone: Annotated[str, AfterValidator(_check_timezone)] = "UTC"
    steps: list[str] | None = Field(None, min_length=1, description="run only these steps (default: all)")


class RebuildPlan(PlanTable):
    """A whole plan file. Every table is optional, but a plan runs at least one step.

    This base has the tables every plan has; :func:`plan_model` adds one optional table per dataset
    and the dataset-specific ``[[evaluate]]`` entries.
    """

    DATASET_STEPS: ClassVar[tuple[str, ...]] = ()
    EVALUATED_DATASETS: ClassVar[tuple[str, ...]] = ()  # the ``dataset`` values [[evaluate]] accepts

    repo: PlanPath = Field(Path("."), description="the git + DVC project (publish, evaluations)")
    # :func:`plan_model` narrows these three to the registered datasets and steps.
    evaluate: list[PlanEvaluation] = Field(default_factory=list)
    publish: PublishStep | None = None
    schedule: list[Schedule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> RebuildPlan:
        if not self.steps():
            raise ValueError("the plan has no step: add a dataset table, [[evaluate]] or [publish]")
        names = [s.name for s in self.schedule]
        if len(set(names)) != len(names):
            raise ValueError(f"two schedules share a name: {sorted(n for n in set(names) if names.count(n) > 1)}")
        for schedule in self.schedule:
            missing = sorted(set(schedule.steps or ()) - set(self.steps()))
            if missing:
                raise ValueError(f"schedule {schedule.name!r} names steps the plan does not configure: {missing}")
        return self

    def steps(self) -> list[str]:
        """The configured steps, in the order a rebuild runs them."""
        configured = {name for name in self.DATASET_STEPS if getattr(self, name) is not None}
        configured |= {"evaluate"} if self.evaluate else set()
        configured |= {"publish"} if self.publish is not None else set()
        return [name for name in (*self.DATASET_STEPS, *FINAL_STEPS) if name in configured]

    def select(self, only: list[str] | None, *, path: Path | None = None) -> list[str]:
        """The steps to run: all configured ones, or those of ``only`` (InputError for one not configured)."""
        if not only:
            return self.steps()
        unknown = [name for name in only if name not in self.steps()]
        if unknown:
            raise InputError(f"--only {unknown[0]}: the plan does not configure this step", path=path,
                             hint=f"choose among {', '.join(self.steps())}")
        return [name for name in self.steps() if name in only]

    def evaluation_names(self) -> list[str]:
        """A unique row name per ``[[evaluate]]`` entry: its ``name``, else ``<dataset>``, numbered on repeats."""
        names: list[str] = []
        for entry in self.evaluate:
            base = entry.name or entry.dataset
            names.append(base if base not in names else f"{base}-{len(names) + 1}")
        return names


@functools.cache
def plan_model(sections: tuple[tuple[str, type[PlanTable]], ...],
               evaluations: tuple[type[PlanEvaluation], ...]) -> type[RebuildPlan]:
    """The plan model for these datasets: a ``[<name>]`` table per section, ``[[evaluate]]`` entries
    told apart by their ``dataset`` key, then ``[publish]`` and ``[[schedule]]``.

    Args:
        sections: (dataset name, its table's model), in the order a rebuild builds them.
        evaluations: the ``[[evaluate]]`` entry models; each has a ``dataset: Literal[<name>, ...]``
            field naming the datasets it evaluates.
    """
    steps = tuple(name for name, _ in sections)
    # Types made at run time: Any to the type checker, which cannot follow them.
    entry: Any = Annotated[Union[evaluations], Field(discriminator="dataset")] if evaluations else PlanEvaluation
    step_name: Any = Literal[(*steps, *FINAL_STEPS)]
    schedule: Any = create_model("Schedule", __base__=Schedule, steps=(
        list[step_name] | None, Field(None, min_length=1, description="run only these steps (default: all)")))
    fields: dict[str, Any] = {name: (section | None, None) for name, section in sections}
    model = create_model(
        "RebuildPlan", __base__=RebuildPlan,
        **fields,
        evaluate=(list[entry], Field(default_factory=list)),
        publish=(PublishStep | None, None),
        schedule=(list[schedule], Field(default_factory=list)),
    )
    model.DATASET_STEPS = steps
    model.EVALUATED_DATASETS = tuple(tag for member in evaluations
                                     for tag in typing.get_args(member.model_fields["dataset"].annotation))
    return model


def load_plan(path: str | Path, model: type[RebuildPlan]) -> RebuildPlan:
    """Read and validate a plan file against ``model`` (see :func:`plan_model`).

    Raises:
        InputError: the file is missing or not TOML, or a key is missing, unknown or invalid; the
            message names the file and the key (``evaluate[1].rho``) and says how to fix it.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError("expected a plan file, found a directory", path=path,
                         hint="pass the plan's TOML file itself to --plan, e.g. --plan rebuild.toml")
    if not path.exists():
        raise InputError("plan file not found", path=path, hint="check --plan")
    try:
        data = tomllib.loads(read_text(path, encoding="utf-8-sig", hint="check --plan"))
    except RecursionError:
        raise InputError("TOML nested too deeply to read", path=path, hint="a plan nests two levels at most") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=path, hint="fix the syntax at that line") from exc
    try:
        return model.model_validate(data, context={"base": path.resolve().parent})
    except ValidationError as exc:
        raise _plan_error(exc, path, model.EVALUATED_DATASETS) from exc


def _plan_error(exc: ValidationError, path: Path, datasets: tuple[str, ...]) -> InputError:
    first = exc.errors()[0]
    loc = list(first["loc"])
    if loc[:1] == ["evaluate"] and len(loc) > 2 and loc[2] in datasets:
        del loc[2]  # the union's tag, not a key the user wrote
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    name, table = key.rsplit(".", 1)[-1], (f"[{key.rsplit('.', 1)[0]}]" if "." in key else "the top level")
    choices = ", ".join(datasets[:-1]) + f" or {datasets[-1]}" if len(datasets) > 1 else "".join(datasets)
    hints = {
        "missing": f"add {name} = ... to {table}",
        "extra_forbidden": f"remove {name} from {table} (a misspelt key?); {PLAN_EXAMPLE}",
        "union_tag_invalid": f"set dataset to {choices}",
        "union_tag_not_found": f"set dataset to {choices}",
    }
    return InputError(first["msg"].removeprefix("Value error, "), path=path, item=key or None,
                      hint=hints.get(first["type"], f"fix {key or 'the plan'}; {PLAN_EXAMPLE}"))


class StepReport(BaseModel):
    """What one step of a rebuild did."""

    step: str = Field(description="a dataset, evaluate:<name>, or publish")
    status: Literal["built", "evaluated", "published", "up to date"]
    up_to_date: bool
    units: Units | None = Field(None, description="units of a resumable build")
    seconds: float
    out: str | None = Field(None, description="the output folder, or the published version's md5")


class RebuildResult(BaseModel):
    """What ``segbench rebuild`` returns: the plan, and what each step did in the order they ran."""

    model_config = ConfigDict(extra="forbid")

    plan: Path
    steps: list[StepReport]
