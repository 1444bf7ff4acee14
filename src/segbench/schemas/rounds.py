"""Human annotation rounds: the round record, one annotator's answer, and the aggregated answer.

A round is a saved record under a key (``data/rounds/<key>.json``): what was asked (kind, label
config, params, overlap), about which items (their ids and images), where (backend and project id)
and how far it got (status, timestamps, counts). Launch and ingest are separate steps linked by
that record; ingest writes ``data/rounds/<key>.answers.json``.
"""

from __future__ import annotations

import enum
import hashlib
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    SerializerFunctionWrapHandler,
    StringConstraints,
    field_validator,
    model_serializer,
)

from segbench.core.aggregation_methods import METHODS
from segbench.schemas.results import WithoutNone


class LabelStudioConnection(BaseModel):
    """The Label Studio server rounds run on, resolved once by the command line from its settings.

    Flows take it as a parameter: Prefect stores parameters as JSON, where the token is masked.

    Attributes:
        url: the server, e.g. ``http://127.0.0.1:8089``.
        token: its API token (None: not configured; a launch or ingest then says how to set it).
        files: the folder the server serves local files from; rounds copy their images into it.
        timeout: seconds a connection or a read may wait; a whole request ends within four times this.
        annotators: annotator name → that annotator's own server (``scripts/label-studio.sh start
            --annotator NAME``), for rounds whose annotators must not see each other's answers.
    """

    model_config = ConfigDict(frozen=True)

    url: str
    token: SecretStr | None = None
    files: Path | None = None
    timeout: float = 30.0
    annotators: dict[str, LabelStudioConnection] = Field(default_factory=dict)


class RoundStatus(str, enum.Enum):
    """created → launched → ingested → closed; any but closed → cancelled. Ingest may repeat."""

    CREATED = "created"
    LAUNCHED = "launched"
    INGESTED = "ingested"
    CLOSED = "closed"
    CANCELLED = "cancelled"


class RoundItem(BaseModel):
    """One thing people are asked about.

    ``image`` is relative to the data root (e.g. ``<dataset>/images/000000000139.png``); paths that
    are absolute or climb out of the data root are refused.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    item_id: str = Field(min_length=1)
    image: str
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    data: dict[str, Any] = Field(default_factory=dict, description="extra task fields shown to people")
    batch: str | None = Field(None, min_length=1, description="the launch phase the item belongs to (SPIN: "
                              "super-category; CAFE: subset SM/CC/OC); None: launched with every batch")
    gold: dict[str, Any] | None = Field(
        None, description="the known answer of a gold item (choice control → label; 'polygons' → reference "
                          "polygons); never shown to people, kept out of the aggregated answers")

    @field_validator("image")
    @classmethod
    def _inside_data_root(cls, image: str) -> str:
        path = PurePosixPath(image)
        if not image or path.is_absolute() or ".." in path.parts or "\\" in image:
            raise ValueError(f"image path {image!r} must be relative to the data root, without '..'")
        return path.as_posix()


class RoundConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label_config: str = Field(description="the label config's template name in segbench.annotation_ui")
    params: dict[str, Any] = Field(default_factory=dict, description="template parameters")
    overlap: int = Field(1, ge=1, description="annotators per task")


# The name of an annotator's own Label Studio server (scripts/label-studio.sh start --annotator NAME).
Annotator = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")]


class Round(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # At most 100 characters: the file names beside a round record (its answers, worker report) stay
    # well within the 255 bytes a file system takes.
    key: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
    kind: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$",
                      description="what the round is for: a round kind a dataset registers (lowercase, digits, _)")
    dataset: str
    dataset_version: str = Field(description="the dataset's manifest sha256 (or data version) the items come from")
    config: RoundConfig
    items: list[RoundItem]
    backend: Literal["labelstudio", "files"] = "labelstudio"
    project_id: int | None = Field(None, description="Label Studio project id once launched")
    status: RoundStatus = RoundStatus.CREATED
    created_at: str
    updated_at: str
    launched_at: str | None = None
    ingested_at: str | None = None
    closed_at: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    follow_up_of: str | None = Field(None, description="key of the round this one follows up (its answers merge in)")
    launched_batches: list[str] | None = Field(
        None, description="batches whose tasks are out after batch launches; None: every item (or none yet)")
    aggregation: str = Field("screened", description="how ingest aggregates choices: screened (gold-anchored "
                                                     "Dawid-Skene without the flagged workers), majority, dawid-skene "
                                                     "or glad (segbench.core.aggregation_methods.METHODS)")

    @field_validator("aggregation")
    @classmethod
    def _known_aggregation(cls, method: str) -> str:
        if method not in METHODS:
            raise ValueError(f"unknown aggregation {method!r}; choose one of {', '.join(METHODS)}")
        return method

    @field_validator("annotators")
    @classmethod
    def _distinct_annotators(cls, names: list[str] | None) -> list[str] | None:
        if names is not None and (not names or len(set(names)) != len(names)):
            raise ValueError("annotators must name at least one server, each once")
        return names

    def task_id(self, item_id: str) -> str:
        """The id an item's task shows people (``item_id`` in the task files and the Label Studio task
        data): the item id itself, or on a round with a ``task_salt`` an opaque one, ``t`` and 12 hex
        digits of a salted hash, the same form for gold and work items."""
        if self.task_salt is None:
            return item_id
        return "t" + hashlib.sha256(f"{self.task_salt}:{item_id}".encode()).hexdigest()[:12]

    def items_by_task_id(self) -> dict[str, RoundItem]:
        """Task id (:meth:`task_id`) → item: how answers coming back are matched to items."""
        return {self.task_id(item.item_id): item for item in self.items}

    purpose: Literal["work", "qualification"] = Field(
        "work", description="qualification: every item is gold, and ingest writes the pass list")
    pass_threshold: float | None = Field(None, ge=0, le=1, description="qualification: gold accuracy to pass")
    requires: str | None = Field(None, description="key of the qualification round whose pass list gates this round")
    # The fields below are left out of the record when unset, so records written before them keep their bytes.
    quality_rules: dict[str, float] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="worker report rules this round sets (segbench.core.worker_quality.QualityRules names)")
    gold_selection: str | None = Field(None, exclude_if=lambda v: v is None,
                                       description="how the gold items were chosen, in words")
    annotators: list[Annotator] | None = Field(
        None, exclude_if=lambda v: v is None,
        description="Label Studio rounds kept apart: the annotators whose own servers hold the round, one project "
                    "each with every task (None: one project on the shared server)")
    task_salt: str | None = Field(
        None, exclude_if=lambda v: v is None,
        description="set on rounds with gold: tasks then show an opaque id per item (public_task_id), never the "
                    "item id, so neither id form nor numbering tells gold from work")


class Polygon(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    points: list[tuple[float, float]] = Field(description="(x, y) in pixels of the item's image")


class Answer(BaseModel):
    """Everything one annotator said about one item, as the backend returned it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item_id: str
    annotator: str = Field(description="backend-qualified id, e.g. labelstudio:3 or worker:A1B2C3")
    source_id: str = Field(description="the backend's id of this answer (annotation id, results row)")
    updated_at: str | None = None
    choices: dict[str, list[str]] = Field(default_factory=dict, description="control name → chosen labels")
    polygons: dict[str, list[Polygon]] = Field(default_factory=dict, description="control name → polygons")
    # Left out of the dump when unknown, so answers files written before it existed keep their bytes.
    seconds: float | None = Field(None, exclude_if=lambda v: v is None,
                                  description="time spent on the task (Label Studio lead_time, the crowd's "
                                              "WorkTimeInSeconds)")


class ItemAnswer(BaseModel):
    """The aggregated answer of one item: a majority per choice control, polygons per annotator."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    annotators: list[str]
    majority: dict[str, str | None] = Field(description="control → majority label (None on a tie)")
    agreement: dict[str, float] = Field(description="control → share of annotators with the majority")
    polygons: dict[str, dict[str, list[Polygon]]] = Field(
        default_factory=dict, description="control → annotator → polygons (kept per annotator)"
    )
    decided_by: str | None = Field(None, description="key of the round whose answers last decided the item "
                                                     "(a follow-up's, or the round's own)")
    model_settled: dict[str, float] = Field(
        default_factory=dict, description="control → the aggregation model's posterior for the label it chose "
                                          "where the people's votes tied (their majority is no majority)")

    def people_label(self, control: str) -> str | None:
        """The label the people's votes chose on ``control``: None on their tie, even one a model settled."""
        return None if control in self.model_settled else self.majority.get(control)


def slugify(label: str) -> str:
    """The control-name form of a label: lowercase ASCII letters, digits and underscores.

    Label configs name a subpart's controls ``has_<slug>``, and answers are read back by that name.
    """
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_") or "x"


class WorkerSummary(BaseModel):
    """What the worker report of an ingest wrote: its files, the suspicious workers, and a qualification's passes."""

    model_config = ConfigDict(extra="forbid")

    paths: dict[str, Path] = Field(description="workers_json, workers_markdown, workers_plot; pass_list, "
                                               "qualification_csv for a qualification round")
    suspicious: int
    passed: int | None = Field(None, description="workers on the pass list (a qualification round only)")

    @model_serializer(mode="wrap")
    def _without_passed_outside_qualification(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if self.passed is None:
            data.pop("passed", None)
        return data


class Agreement(BaseModel):
    """How far people agree on one question (a choice control) of a round."""

    model_config = ConfigDict(extra="forbid")

    control: str
    method: Literal["cohen", "fleiss"] | None = Field(description="Cohen's κ for two fixed raters, else Fleiss' κ")
    kappa: float | None
    reason: str | None = Field(description="why κ is undefined, when it is")
    alpha: float | None = Field(description="Krippendorff's α (nominal)")
    items: int = Field(description="items with at least one rating")
    annotators: int
    raters: list[str] | None = Field(description="Cohen's κ: the two raters, in id order")
    pairwise_agreement: float | None = Field(description="per item, the share of its pairs of ratings that agree")
    mean_agreement: float | None = Field(description="per item, the modal label's share of its ratings")
    items_by_ratings: dict[str, int] = Field(description="number of ratings → items")


class IngestCounts(WithoutNone):
    """What an ingest counted (merged into the round record's ``counts``)."""

    answers: int
    items: int = Field(description="work items (gold items apart)")
    items_answered: int
    annotators: int
    skipped: int = Field(description="answers left out as bad input (--on-error skip)")
    gold_items: int | None = None
    gold_answers: int | None = None
    answers_not_counted: int | None = Field(None, description="a gated round: answers of workers not qualified")
    workers_left_out: int | None = Field(None, description="screened aggregation of a round with polygons: workers "
                                                           "the report flags, left out of SPIN's masks")
    answers_left_out: int | None = None
    accounts_in_blocs: int | None = Field(None, description="screened aggregation: accounts that answered as one "
                                                            "and counted as one voter per bloc")
    labels_by: str | None = Field(None, description="screened aggregation: the model the labels come from, chosen "
                                                    "by the round's held-out gold")


class BatchProgress(BaseModel):
    model_config = ConfigDict(extra="forbid")

    batch: str
    items: int
    launched: int
    answered: int


class LeftOut(BaseModel):
    """A worker the screened aggregation left out, with the worker report's reasons."""

    model_config = ConfigDict(extra="allow")  # as saved in the answers file

    worker: str
    reasons: list[str] = Field(default_factory=list)


class BackendProgress(TypedDict):
    """How far a round is, as its backend tells: tasks, tasks with an answer (``done``), answers
    (``annotations``), answers per ``<backend>:<annotator>`` and the item ids of the done tasks."""

    tasks: int
    done: int
    annotations: int
    by_annotator: dict[str, int]
    done_items: list[str]


class RoundProgress(BaseModel):
    """What ``rounds status`` reads from the backend (no state changes)."""

    model_config = ConfigDict(extra="forbid")

    round: str
    status: str
    follow_up_of: str | None
    aggregation: str
    tasks: int
    done: int = Field(description="tasks with all their answers")
    annotations: int
    by_annotator: dict[str, int]
    names: dict[str, str] = Field(default_factory=dict,
                                  description="annotator → the name the backend knows them by (Label Studio: e-mail)")
    batches: list[BatchProgress]
    left_out: list[LeftOut]


class RoundIngest(BaseModel):
    """What ``rounds ingest`` brought back: the round as recorded, counts, agreement per question, files."""

    model_config = ConfigDict(extra="forbid")

    round: Round
    counts: IngestCounts
    agreement: dict[str, Agreement] = Field(description="per control: agreement, κ and its method, α")
    answers: Path = Field(description="the answers file, <key>.answers.json")
    reports: dict[str, Path] = Field(description="the reports the round's kind wrote, by name")
    workers: WorkerSummary


class AnswersFile(BaseModel):
    """What builds and releases read of ``<key>.answers.json``: the aggregated items and the
    agreement per question (the raw answers and gold answers stay in the file)."""

    items: list[ItemAnswer] = Field(default_factory=list)
    agreement: dict[str, Agreement] = Field(default_factory=dict)
