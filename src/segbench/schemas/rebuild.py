"""The rebuild plan: which datasets to build, what to evaluate and publish, and when (``rebuild.toml``).

One optional table per dataset takes the inputs and parameters of its ``segbench build ...`` command;
``[[evaluate]]`` entries score predictions on the built datasets, ``[publish]`` versions the data
root with DVC, and ``[[schedule]]`` entries are the cron schedules ``segbench serve`` registers.
Relative paths are taken from the plan file's folder, so a plan means the same wherever it is run
from (a served run does not share the caller's working directory).

Only the models and their validation live here; :mod:`segbench.flows.rebuild` runs a plan.
"""

from __future__ import annotations

import re
import tomllib
import zoneinfo
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from segbench.core.errors import InputError, OnError
from segbench.schemas.cafe import CafeEvalParams
from segbench.schemas.coco_cd import CocoCdParams
from segbench.schemas.spin import SpinBuildParams
from segbench.schemas.vocab import VocabParams
from segbench.tasks.waterbirds.dataset import WaterbirdsParams

DATASET_STEPS = ("coco_cd", "waterbirds", "vocab", "spin", "cafe")
# The order a rebuild runs in: every dataset, then the evaluations of what was built, then one
# publish that versions the datasets and the reports together.
STEPS = (*DATASET_STEPS, "evaluate", "publish")
PLAN_EXAMPLE = "see the plan example under 'Scheduled rebuilds' in the README"


def _resolve(path: Path, info: ValidationInfo) -> Path:
    base = (info.context or {}).get("base", Path("."))
    path = path.expanduser()
    return path if path.is_absolute() else (Path(base) / path).resolve()


PlanPath = Annotated[Path, AfterValidator(_resolve)]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CocoCdStep(_Table):
    """``[coco_cd]``: the arguments of ``segbench build coco-cd``."""

    coco_root: PlanPath
    stuff_root: PlanPath
    out: PlanPath | None = Field(None, description="default: <data root>/coco_cd")
    params: CocoCdParams = Field(default_factory=CocoCdParams)


class WaterbirdsStep(_Table):
    """``[waterbirds]``: the arguments of ``segbench build waterbirds``."""

    cub_root: PlanPath
    places_root: PlanPath
    out: PlanPath | None = Field(None, description="default: <data root>/waterbirds_seg")
    params: WaterbirdsParams = Field(default_factory=WaterbirdsParams)


class VocabPlanParams(VocabParams):
    """VocabParams whose spaCy model defaults to the ``spacy_model`` setting rather than a fixed name."""

    spacy_model: str | None = None  # type: ignore[assignment]


class VocabStep(_Table):
    """``[vocab]``: the arguments of ``segbench build vocab`` (the provider comes from the settings)."""

    captions: list[PlanPath] = Field(min_length=1)
    categories: str = Field("ade20k_150", description="a shipped category set, or a JSON file")
    out: PlanPath | None = Field(None, description="default: <data root>/vocab/<categories>")
    replay_only: bool = False
    params: VocabPlanParams = Field(default_factory=VocabPlanParams)

    @field_validator("categories")
    @classmethod
    def _resolve_file(cls, value: str, info: ValidationInfo) -> str:
        return str(_resolve(Path(value), info)) if value.endswith(".json") else value


class SpinStep(_Table):
    """``[spin]``: the arguments of ``segbench build spin`` (taxonomy and crowd answers from the data root)."""

    partimagenet_root: PlanPath
    taxonomy: PlanPath | None = Field(None, description="default: <data root>/spin/taxonomy.yaml")
    resolved: PlanPath | None = Field(None, description="default: <data root>/spin/crowd/resolved.json")
    out: PlanPath | None = Field(None, description="default: <data root>/spin/dataset")
    params: SpinBuildParams = Field(default_factory=SpinBuildParams)


class CafeStep(_Table):
    """``[cafe]``: ``segbench build cafe --round KEY``: export the verified pairs of an ingested round."""

    round: str = Field(min_length=1)
    out: PlanPath | None = Field(None, description="default: <data root>/cafe")


class _Evaluation(_Table):
    name: str | None = Field(None, description="the row name in the rebuild table")
    predictions: PlanPath
    out: PlanPath | None = Field(None, description="default: <data root>/eval/<dataset>/rebuild-<predictions>")


class FlipEvaluation(_Evaluation):
    """COCO-CD or Waterbirds-seg: the flip metrics on one ρ split."""

    dataset: Literal["coco_cd", "waterbirds"]
    rho: float = 0.95
    split: Literal["train", "val", "test"] = "test"


class CafeEvaluation(_Evaluation):
    """CAFE: cgF1 and the false-positive rates per subset."""

    dataset: Literal["cafe"]
    params: CafeEvalParams = Field(default_factory=CafeEvalParams)


class SpinEvaluation(_Evaluation):
    """SPIN: predictions is a folder of ``spin_<split>_{wholes,parts,subparts}.json`` results."""

    dataset: Literal["spin"]
    split: Literal["train", "val", "test"] = "test"
    answers: PlanPath | None = None
    on_error: OnError = OnError.FAIL


Evaluation = Annotated[FlipEvaluation | CafeEvaluation | SpinEvaluation, Field(discriminator="dataset")]


class PublishStep(_Table):
    """``[publish]``: ``segbench publish`` after the builds and evaluations."""

    remote: str | None = Field(None, description="a configured DVC remote (default: the default remote)")
    remote_url: str | None = Field(None, description="default: the dvc_remote setting")
    commit: bool = False
    message: str | None = None

    @field_validator("remote_url")
    @classmethod
    def _resolve_local_remote(cls, value: str | None, info: ValidationInfo) -> str | None:
        # A remote without a scheme is a folder: relative to the plan, like every other path in it.
        return value if value is None or "://" in value else str(_resolve(Path(value), info))


_CRON_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12),
                ("day of week", 0, 7))
_CRON_NAMES = {3: "jan feb mar apr may jun jul aug sep oct nov dec".split(), 4: "sun mon tue wed thu fri sat".split()}
_CRON_ITEM = re.compile(r"^(\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/([0-9]+))?$")


def check_cron(text: str) -> str:
    """A standard 5-field cron expression (numbers, ranges, steps, lists, month/day names), or ValueError."""
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(f"{text!r} has {len(fields)} fields; cron takes 5: minute hour day-of-month month day-of-week")
    for index, (field, (name, low, high)) in enumerate(zip(fields, _CRON_FIELDS)):
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
    return text


def _check_timezone(name: str) -> str:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name such as UTC or Europe/Berlin)") from None
    return name


class Schedule(_Table):
    """``[[schedule]]``: one deployment ``segbench serve`` registers."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", description="the deployment's name")
    cron: Annotated[str, AfterValidator(check_cron)]
    timezone: Annotated[str, AfterValidator(_check_timezone)] = "UTC"
    steps: list[Literal[STEPS]] | None = Field(None, min_length=1,  # type: ignore[valid-type]
                                                  description="run only these steps (default: all)")


class RebuildPlan(_Table):
    """A whole plan file. Every table is optional, but a plan runs at least one step."""

    repo: PlanPath = Field(Path("."), description="the git + DVC project (publish, evaluations)")
    coco_cd: CocoCdStep | None = None
    waterbirds: WaterbirdsStep | None = None
    vocab: VocabStep | None = None
    spin: SpinStep | None = None
    cafe: CafeStep | None = None
    evaluate: list[Evaluation] = Field(default_factory=list)
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
        configured = {name for name in DATASET_STEPS if getattr(self, name) is not None}
        configured |= {"evaluate"} if self.evaluate else set()
        configured |= {"publish"} if self.publish is not None else set()
        return [name for name in STEPS if name in configured]

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


def load_plan(path: str | Path) -> RebuildPlan:
    """Read and validate a plan file.

    Raises:
        InputError: the file is missing or not TOML, or a key is missing, unknown or invalid; the
            message names the file and the key (``evaluate[1].rho``) and says how to fix it.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("plan file not found", path=path, hint="check --plan") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=path, hint="fix the syntax at that line") from None
    try:
        return RebuildPlan.model_validate(data, context={"base": path.resolve().parent})
    except ValidationError as exc:
        raise _plan_error(exc, path) from None


def _plan_error(exc: ValidationError, path: Path) -> InputError:
    first = exc.errors()[0]
    loc = list(first["loc"])
    if loc[:1] == ["evaluate"] and len(loc) > 2 and loc[2] in ("coco_cd", "waterbirds", "cafe", "spin"):
        del loc[2]  # the union's tag, not a key the user wrote
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    name, table = key.rsplit(".", 1)[-1], (f"[{key.rsplit('.', 1)[0]}]" if "." in key else "the top level")
    hints = {
        "missing": f"add {name} = ... to {table}",
        "extra_forbidden": f"remove {name} from {table} (a misspelt key?); {PLAN_EXAMPLE}",
        "union_tag_invalid": "set dataset to coco_cd, waterbirds, cafe or spin",
        "union_tag_not_found": "set dataset to coco_cd, waterbirds, cafe or spin",
    }
    return InputError(first["msg"].removeprefix("Value error, "), path=path, item=key or None,
                      hint=hints.get(first["type"], f"fix {key or 'the plan'}; {PLAN_EXAMPLE}"))


class StepReport(BaseModel):
    """What one step of a rebuild did."""

    step: str = Field(description="coco_cd, ..., evaluate:<name>, publish")
    status: Literal["built", "evaluated", "published", "up to date"]
    up_to_date: bool
    units: dict[str, int] | None = Field(None, description="{computed, reused} units of a resumable build")
    seconds: float
    out: str | None = None
