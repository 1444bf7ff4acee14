"""The dataset registry: one :class:`DatasetSpec` per dataset, and the only list of them.

The command line, rebuild-plan validation, ``serve``, the demo and the round flows read this
registry; no other module outside a dataset's own subpackages names a dataset. Adding a dataset
means its own subpackages (``schemas/<name>.py``, ``tasks/<name>/``, ``flows/<name>``,
``cli/<name>.py``, ``demo/<name>/``) plus one entry in :data:`DATASETS` (see
``docs/adding-a-dataset.md``).

Every hook is a :class:`Ref`: an import path ``"module:attribute"`` typed as what it names and
imported on first use, so importing the registry, and with it the command line, imports no flow
and no Prefect; ``tests/test_architecture.py`` loads every one and checks its kind.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from segbench.core.errors import InputError

if TYPE_CHECKING:
    from segbench.annotation_ui.kinds import RoundKind
    from segbench.core.leaderboard import Board
    from segbench.core.release.plan import ReleasePlan
    from segbench.flows.demo import DemoStep
    from segbench.providers.base import OfflineAnswer
    from segbench.schemas import rebuild as plans
    from segbench.schemas.results import EvaluationResult, Result

T = TypeVar("T")


@dataclass(frozen=True)
class Ref(Generic[T]):
    """``"module:attribute"``, typed as what it names and imported when first used."""

    path: str

    def load(self) -> T:
        return cast(T, load(self.path))


@dataclass(frozen=True)
class DatasetSpec:
    """What the rest of segbench needs to know about one dataset.

    Attributes:
        name: the key in rebuild plans, manifests and the ``--only`` option (``coco_cd``).
        title: the name people read (``COCO-CD``).
        default_out: where the build lands under the data root unless told otherwise.
        evaluate: the function that evaluates predictions on it in this process, if any (what
            ``evaluate <dataset>`` calls; ``evaluate_flow`` wraps it, for ``--track`` and plans).
        evaluate_flow: the Prefect flow that evaluates predictions on it, if any.
        cli: the command module; its ``register(build_app, evaluate_app, app)`` adds its commands.
        plan_section: the model of its ``[<name>]`` table in a rebuild plan, if a plan can build it.
        plan_step: ``(run, section) -> summary``: the rebuild step that builds it from that table.
        plan_evaluation: the model of its ``[[evaluate]]`` entries (``dataset = "<name>"``), if any.
        plan_evaluate: ``(run, entry, dataset_dir, out) -> result``: the rebuild step that runs one.
        round_kinds: the annotation round kinds it defines (:class:`segbench.annotation_ui.kinds.RoundKind`).
        offline_answers: the questions the offline language provider answers for it
            (:class:`segbench.providers.base.OfflineAnswer`).
        demo_step: its part of ``segbench demo`` (:class:`segbench.flows.demo.DemoStep`).
        demo_printer: ``(results, provider, *, evaluation_only) -> None``: prints what its demo step
            returned once built, and only the evaluation (``evaluation_only``) once evaluated.
        release_plan: ``(source, data_dir, image_policy) -> ReleasePlan``: what ``segbench release``
            writes of it (:mod:`segbench.core.release.plan`).
        view_files: ``(dataset_dir, rho) -> list[ViewFile]``: its COCO-format files as ``segbench
            view`` shows them in FiftyOne, if it has images.
        leaderboards: a :class:`segbench.core.leaderboard.Board` per evaluation it writes (what
            ``segbench leaderboard`` shows of its reports).
    """

    name: str
    title: str
    default_out: str
    cli: str
    evaluate: Ref[Callable[..., EvaluationResult[Any]]] | None = None
    evaluate_flow: Ref[Callable[..., EvaluationResult[Any]]] | None = None
    plan_section: Ref[type[plans.PlanTable]] | None = None
    plan_step: Ref[Callable[..., Result]] | None = None
    plan_evaluation: Ref[type[plans.PlanEvaluation]] | None = None
    plan_evaluate: Ref[Callable[..., EvaluationResult[Any]]] | None = None
    round_kinds: tuple[Ref[RoundKind], ...] = field(default_factory=tuple)
    offline_answers: tuple[Ref[OfflineAnswer], ...] = field(default_factory=tuple)
    demo_step: Ref[DemoStep] | None = None
    demo_printer: Ref[Callable[..., None]] | None = None
    release_plan: Ref[Callable[..., ReleasePlan]] | None = None
    view_files: Ref[Callable[..., list[Any]]] | None = None
    leaderboards: tuple[Ref[Board], ...] = field(default_factory=tuple)

    def need(self, ref: Ref[T] | None, what: str) -> T:
        """What ``ref`` names (``spec.need(spec.plan_step, "plan step")``); InputError when this dataset has none."""
        return cast(T, load(self.hook(ref, what)))

    def hook(self, ref: Ref[Any] | None, what: str) -> str:
        """The import path of ``ref``, for what runs it by name (a flow run in this process or as a flow)."""
        if ref is None:
            raise InputError(f"{self.title} has no {what}", item=self.name)
        return ref.path


def load(path: str) -> Any:
    """Import ``"package.module:attribute"`` and return the attribute."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


# The order a rebuild builds them in, the demo runs them in and the help lists them in. No dataset
# reads another's output, so a new one can go anywhere; put it after any it would read.
DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec(
        name="coco_cd", title="COCO-CD",
        default_out="coco_cd",
        cli="segbench.cli.coco_cd",
        evaluate=Ref("segbench.tasks.flip.evaluation:evaluate_coco_cd"),
        evaluate_flow=Ref("segbench.flows.flip:evaluate_coco_cd"),
        plan_section=Ref("segbench.schemas.coco_cd:CocoCdStep"),
        plan_step=Ref("segbench.flows.coco_cd.build:plan_step"),
        plan_evaluation=Ref("segbench.schemas.flip:FlipEvaluation"),
        plan_evaluate=Ref("segbench.flows.flip:plan_evaluate"),
        demo_step=Ref("segbench.flows.coco_cd.demo:DEMO"),
        demo_printer=Ref("segbench.cli.coco_cd:print_demo"),
        round_kinds=(Ref("segbench.flows.coco_cd.rounds:CONTEXT_AUDIT"),),
        release_plan=Ref("segbench.tasks.coco_cd.release:plan"),
        view_files=Ref("segbench.tasks.flip.view:view_files"),
        leaderboards=(Ref("segbench.tasks.flip.leaderboard:COCO_CD"),),
    ),
    DatasetSpec(
        name="waterbirds", title="Waterbirds-seg",
        default_out="waterbirds_seg",
        cli="segbench.cli.waterbirds",
        evaluate=Ref("segbench.tasks.flip.evaluation:evaluate_waterbirds"),
        evaluate_flow=Ref("segbench.flows.flip:evaluate_waterbirds"),
        plan_section=Ref("segbench.schemas.waterbirds:WaterbirdsStep"),
        plan_step=Ref("segbench.flows.waterbirds.build:plan_step"),
        plan_evaluation=Ref("segbench.schemas.flip:FlipEvaluation"),
        plan_evaluate=Ref("segbench.flows.flip:plan_evaluate"),
        demo_step=Ref("segbench.flows.waterbirds.demo:DEMO"),
        demo_printer=Ref("segbench.cli.waterbirds:print_demo"),
        release_plan=Ref("segbench.tasks.waterbirds.release:plan"),
        view_files=Ref("segbench.tasks.flip.view:view_files"),
        leaderboards=(Ref("segbench.tasks.flip.leaderboard:WATERBIRDS"),),
    ),
    DatasetSpec(
        name="vocab", title="Valid vocabulary",
        default_out="vocab",
        cli="segbench.cli.vocab",
        evaluate=Ref("segbench.tasks.vocab.evaluation:evaluate_vocab"),
        evaluate_flow=Ref("segbench.flows.vocab.evaluate:evaluate_vocab"),
        plan_section=Ref("segbench.schemas.vocab:VocabStep"),
        plan_step=Ref("segbench.flows.vocab.build:plan_step"),
        demo_step=Ref("segbench.flows.vocab.demo:DEMO"),
        demo_printer=Ref("segbench.cli.vocab:print_demo"),
        round_kinds=(Ref("segbench.flows.vocab.rounds:ADJUDICATION"),),
        release_plan=Ref("segbench.tasks.vocab.release:plan"),
        leaderboards=(Ref("segbench.tasks.vocab.leaderboard:VOCAB"),),
    ),
    DatasetSpec(
        name="spin", title="SPIN",
        default_out="spin/dataset",
        cli="segbench.cli.spin",
        evaluate=Ref("segbench.tasks.spin.evaluation:evaluate_spin"),
        evaluate_flow=Ref("segbench.flows.spin.evaluate:evaluate_spin"),
        plan_section=Ref("segbench.schemas.spin:SpinStep"),
        plan_step=Ref("segbench.flows.spin.build:plan_step"),
        plan_evaluation=Ref("segbench.schemas.spin:SpinEvaluation"),
        plan_evaluate=Ref("segbench.flows.spin.evaluate:plan_evaluate"),
        demo_step=Ref("segbench.flows.spin.demo:DEMO"),
        demo_printer=Ref("segbench.cli.spin:print_demo"),
        offline_answers=(Ref("segbench.tasks.spin.wordnet:SUBPARTS_ANSWER"), Ref("segbench.tasks.spin.wordnet:VISIBILITY_ANSWER")),
        round_kinds=(Ref("segbench.flows.spin.rounds:SUBPARTS"), Ref("segbench.flows.spin.review:REVIEW")),
        release_plan=Ref("segbench.tasks.spin.release:plan"),
        view_files=Ref("segbench.tasks.spin.view:view_files"),
        leaderboards=(Ref("segbench.tasks.spin.leaderboard:SPIN"),),
    ),
    DatasetSpec(
        name="cafe", title="CAFE",
        default_out="cafe",
        cli="segbench.cli.cafe",
        evaluate=Ref("segbench.tasks.cafe.evaluation:evaluate_cafe"),
        evaluate_flow=Ref("segbench.flows.cafe.evaluate:evaluate_cafe"),
        plan_section=Ref("segbench.schemas.cafe:CafeStep"),
        plan_step=Ref("segbench.flows.cafe.export:plan_step"),
        plan_evaluation=Ref("segbench.schemas.cafe:CafeEvaluation"),
        plan_evaluate=Ref("segbench.flows.cafe.evaluate:plan_evaluate"),
        demo_step=Ref("segbench.flows.cafe.demo:DEMO"),
        demo_printer=Ref("segbench.cli.cafe:print_demo"),
        offline_answers=(Ref("segbench.tasks.cafe.plans:EDIT_PLAN_ANSWER"),),
        round_kinds=(Ref("segbench.flows.cafe.rounds:VERIFICATION"),),
        release_plan=Ref("segbench.tasks.cafe.release:plan"),
        view_files=Ref("segbench.tasks.cafe.view:view_files"),
        leaderboards=(Ref("segbench.tasks.cafe.leaderboard:CAFE"), Ref("segbench.tasks.cafe.leaderboard:CGF1"),),
    ),
)


def dataset(name: str) -> DatasetSpec:
    """The spec of one dataset by name.

    Raises:
        InputError: no dataset of that name (the message lists the names there are).
    """
    for spec in DATASETS:
        if spec.name == name:
            return spec
    raise InputError(f"unknown dataset {name!r}", item=name, hint=f"choose among {', '.join(names())}")


def names() -> tuple[str, ...]:
    """Every dataset's name, in registry order."""
    return tuple(spec.name for spec in DATASETS)


def round_kinds() -> dict[str, RoundKind]:
    """Every dataset's annotation round kinds by kind name (imports the modules that define them)."""
    kinds = {}
    for spec in DATASETS:
        for ref in spec.round_kinds:
            kind = ref.load()
            kinds[kind.name] = kind
    return kinds


def leaderboards() -> dict[str, Board]:
    """Every evaluation's leaderboard by the evaluation its reports' manifests name (``eval/cafe``)."""
    return {board.evaluation: board for spec in DATASETS for ref in spec.leaderboards for board in [ref.load()]}


def offline_answers() -> dict[str, OfflineAnswer]:
    """Every question kind the offline language provider answers for some dataset, by kind name."""
    answers = {}
    for spec in DATASETS:
        for ref in spec.offline_answers:
            answer = ref.load()
            answers[answer.kind] = answer
    return answers


FINAL_PLAN_STEPS = ("evaluate", "publish")


def plan_model() -> type[plans.RebuildPlan]:
    """The rebuild-plan model: a table per dataset that a plan can build, their ``[[evaluate]]`` entries."""
    from segbench.schemas import rebuild as plans  # pydantic models: not for every command

    sections = tuple((spec.name, spec.plan_section.load()) for spec in DATASETS if spec.plan_section)
    # dict.fromkeys: one entry model may serve several datasets (its ``dataset`` Literal lists them).
    evaluations = tuple(dict.fromkeys(spec.plan_evaluation.load() for spec in DATASETS if spec.plan_evaluation))
    return plans.plan_model(sections, evaluations)


def load_plan(path: str | Path) -> plans.RebuildPlan:
    """Read and validate a rebuild plan (see :func:`segbench.schemas.rebuild.load_plan`)."""
    from segbench.schemas import rebuild as plans

    return plans.load_plan(path, plan_model())


def plan_steps() -> tuple[str, ...]:
    """Every step a plan can have, in the order a rebuild runs them (the plan's own steps last:
    ``schemas.rebuild.FINAL_STEPS``, which a test holds this to; named here so that the command
    line's help needs no plan model)."""
    return (*(spec.name for spec in DATASETS if spec.plan_section), *FINAL_PLAN_STEPS)
