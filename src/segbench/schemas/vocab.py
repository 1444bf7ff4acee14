"""Valid vocabularies (seed 003): relations between dataset categories and mined nouns."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from segbench.schemas.rebuild import PlanPath, PlanTable, resolve_plan_path
from segbench.schemas.results import BuildSummary, Counts, DemoPart, Usage

Relation = Literal["exact", "synonym", "hyponym", "meronym", "none"]
LEVELS = ("exact", "synonyms", "hyponyms", "meronyms")  # cumulative levels of the lexical mapping
RELATION_OF_LEVEL = {"exact": "exact", "synonyms": "synonym", "hyponyms": "hyponym", "meronyms": "meronym"}


class RelationJudgement(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    noun: str
    relation: Relation


class RelationAnswer(BaseModel):
    """The answer to a ``vocab.relations`` question: one judgement per candidate noun.

    Question inputs: ``{"category": str, "candidates": [str, ...]}``. Relations read "the noun is
    <relation> of the category": exact (the category's own name), synonym, hyponym (a kind of
    the category), meronym (a part of it), none.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    category: str
    judgements: list[RelationJudgement] = Field(description="one per candidate, in any order")


# --- the valid-vocabulary build ------------------------------------------------------------------

STRENGTH = {"exact": 0, "synonym": 1, "hyponym": 2, "meronym": 3}  # lower is stronger (seed 003, §2)


class CategorySpec(BaseModel):
    """One dataset category as shipped in ``resources/categories/*.json``.

    ``name`` may hold several comma-separated names (ADE20K's ``"road, route"``); each of them is an
    exact match of the category. ``synonyms`` are known alternative names; they are always put to
    the judge as candidates, mined or not.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    name: str = Field(min_length=1)
    synonyms: list[str] = Field(default_factory=list)
    isthing: bool | None = Field(None, description="a countable object (thing), or amorphous stuff (sky, road); "
                                                   "the evaluation reports both kinds apart")


class VocabParams(BaseModel):
    """Parameters of ``segbench build vocab``; recorded in the manifest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    spacy_model: str = Field("en_core_web_sm", description="spaCy pipeline package (a setting)")
    caption_field: str = Field("caption", description="JSONL field / TSV or parquet column of the captions")
    shard_size: int = Field(2000, ge=1, description="unique captions per mining shard (one task each)")
    workers: int = Field(2, ge=0, description="mining worker processes; 0 or 1 mines in-process")
    batch_size: int = Field(256, ge=1, description="spaCy nlp.pipe batch size")
    min_count: int = Field(2, ge=1, description="drop nouns seen fewer times than this")
    top_k: int | None = Field(50, ge=1, description="mined candidates per category put to the judge, the best by "
                                                   "the WordNet pre-filter; None: every mined noun")
    question_batch: int = Field(25, ge=1, description="candidates per question")
    questions_per_task: int = Field(8, ge=1, description="questions per judging task")


# --- the [vocab] table of a rebuild plan ---------------------------------------------------------------------------

class VocabPlanParams(VocabParams):
    """VocabParams whose spaCy model defaults to the ``spacy_model`` setting rather than a fixed name."""

    spacy_model: str | None = None  # type: ignore[assignment]


class VocabStep(PlanTable):
    """``[vocab]``: the arguments of ``segbench build vocab`` (the provider comes from the settings)."""

    captions: list[PlanPath] = Field(min_length=1)
    categories: str = Field("ade20k_150", description="a shipped category set, or a JSON file")
    out: PlanPath | None = Field(None, description="default: <data root>/vocab/<categories>")
    replay_only: bool = False
    params: VocabPlanParams = Field(default_factory=VocabPlanParams)

    @field_validator("categories")
    @classmethod
    def _resolve_file(cls, value: str, info: ValidationInfo) -> str:
        return str(resolve_plan_path(Path(value), info)) if value.endswith(".json") else value


# --- what a build returns ---------------------------------------------------------------------------


class VocabCounts(Counts):
    """What a vocabulary build read, asked and kept (seed 003 Table 1)."""

    captions: int
    distinct_captions: int
    nouns: int
    categories: int
    candidates: int
    questions: int
    levels: dict[str, int] = Field(description="nouns at each level: exact, synonyms, hyponyms, meronyms")
    answer_problems: dict[str, int] = Field(description="answers kept as 'none' or ignored, by problem")


class VocabBuildSummary(BuildSummary):
    """``build vocab``: the counts, the category set's name and what the provider spent in this run."""

    counts: VocabCounts
    dataset: str = Field(description="the category set, e.g. ade20k_150")
    usage: Usage = Field(description="what the language provider spent: calls, cache hits, retries, tokens, cost")


class VocabDemo(DemoPart):
    """The vocabulary in the demo: its build."""

    build: VocabBuildSummary
