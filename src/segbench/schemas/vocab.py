"""Valid vocabularies (seed 003): relations between dataset categories and mined nouns."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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
