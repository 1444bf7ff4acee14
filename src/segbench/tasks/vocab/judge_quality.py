"""Sense checks on a language model's relation judgements, and how the judge compares with WordNet
and with a published vocabulary.

A weak model names ``dog`` an exact name of ``cat`` or judges every candidate the same way; such
answers must not enter a vocabulary unseen. The checks are deliberately narrow, so a good model's
knowledge beyond WordNet (a synonym WordNet lacks) is kept:

- ``exact`` or ``synonym`` for a noun that is another category's own name or listed synonym is
  skipped (a name cannot belong to two categories of one set);
- ``exact`` for a noun WordNet does not tie to the category's name (neither its name nor one of its
  synsets' lemmas) is skipped: exact is the category's own name, where WordNet is the authority;
- one relation for every candidate of a build (at least :data:`SAME_ANSWER_MIN` of them) marks the
  judge suspect; nothing is skipped for it, the report says so.

A skipped judgement becomes ``none``; each is listed with its reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from segbench.schemas.vocab import LEVELS, RELATION_OF_LEVEL, CategorySpec
from segbench.tasks.vocab.vocabulary import exact_names

JUDGE_QUALITY_FILE = "judge_quality.json"  # written beside the vocabulary when a language model judged
SAME_ANSWER_MIN = 10  # candidates judged before "one relation for all" means something
RELATIONS = ("exact", "synonym", "hyponym", "meronym", "none")


class SenseSkip(BaseModel):
    """A judgement the sense checks turned into ``none``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    category: str
    noun: str
    relation: str = Field(description="what the model answered")
    reason: str


class Agreement(BaseModel):
    """How often the judge gave the reference's relation, over the candidates both judged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compared: int
    agreed: int
    rate: float | None = Field(description="agreed / compared; None when nothing was compared")
    confusion: dict[str, dict[str, int]] = Field(description="the judge's relation -> the reference's -> count")


class JudgeQuality(BaseModel):
    """``judge_quality.json`` of a vocabulary built with a language model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judged: int
    relations: dict[str, int] = Field(description="the judge's answers, before the sense checks")
    skipped: list[SenseSkip]
    suspect: list[str] = Field(description="why the judge's answers as a whole look wrong; empty when they do not")
    wordnet: Agreement
    published: Agreement | None = Field(None, description="against a published vocabulary, when one was given")


def sense_check(categories: Sequence[CategorySpec], relations: Mapping[int, Mapping[str, str]],
                wordnet: Mapping[int, Mapping[str, str]]) -> tuple[dict[int, dict[str, str]], list[SenseSkip]]:
    """The judgements that pass the checks (the others as ``none``), and the skipped ones with reasons.

    ``relations`` and ``wordnet`` map category id -> noun -> relation (the model's, WordNet's).
    """
    owner: dict[str, str] = {}
    for category in categories:
        for name in [*exact_names(category), *(s.strip().lower() for s in category.synonyms)]:
            owner.setdefault(name, category.name)
    kept: dict[int, dict[str, str]] = {}
    skipped: list[SenseSkip] = []
    for category in categories:
        own = set(exact_names(category))
        kept[category.id] = {}
        for noun, relation in sorted(relations.get(category.id, {}).items()):
            reason = None
            other = owner.get(noun)
            if relation in ("exact", "synonym") and noun not in own and other not in (None, category.name):
                reason = f"{noun!r} is the name of another category ({other})"
            elif relation == "exact" and noun not in own and wordnet.get(category.id, {}).get(noun) not in ("exact", "synonym"):
                reason = (f"WordNet does not make {noun!r} a name of {category.name!r} (it says "
                          f"{wordnet.get(category.id, {}).get(noun, 'none')})")
            if reason is None:
                kept[category.id][noun] = relation
            else:
                kept[category.id][noun] = "none"
                skipped.append(SenseSkip(category=category.name, noun=noun, relation=relation, reason=reason))
    return kept, skipped


def agreement(relations: Mapping[int, Mapping[str, str]], reference: Mapping[int, Mapping[str, str]]) -> Agreement:
    """How often ``relations`` match ``reference`` over the (category, noun) pairs both have."""
    confusion: dict[str, Counter[str]] = {}
    compared = agreed = 0
    for category_id, judged in relations.items():
        theirs = reference.get(category_id, {})
        for noun, relation in judged.items():
            if noun not in theirs:
                continue
            compared += 1
            agreed += relation == theirs[noun]
            confusion.setdefault(relation, Counter())[theirs[noun]] += 1
    return Agreement(compared=compared, agreed=agreed, rate=round(agreed / compared, 4) if compared else None,
                     confusion={r: dict(sorted(c.items())) for r, c in sorted(confusion.items())})


def suspicions(relations: Mapping[int, Mapping[str, str]]) -> list[str]:
    """What makes a judge's answers as a whole look wrong: one relation for every candidate."""
    counts = Counter(r for judged in relations.values() for r in judged.values())
    judged = sum(counts.values())
    if judged >= SAME_ANSWER_MIN and len(counts) == 1:
        return [f"every one of the {judged} candidates was judged {next(iter(counts))!r}"]
    return []


def published_relations(categories: Sequence[CategorySpec], vocabulary: Mapping[str, Mapping[str, Any]],
                        candidates: Mapping[int, Sequence[str]]) -> dict[int, dict[str, str]]:
    """A published vocabulary (``{class: {exact, synonyms, hyponyms, meronyms: [...]}}``, read by
    ``from_public``) as relations of this build's candidates: a candidate it lists has that level's
    relation, one it does not list is ``none``, for the categories it has."""
    out: dict[int, dict[str, str]] = {}
    for category in categories:
        entry = vocabulary.get(category.name)
        if entry is None:
            continue
        level_of = {noun.strip().lower(): RELATION_OF_LEVEL[level] for level in reversed(LEVELS)
                    for noun in entry.get(level, [])}  # reversed: a noun at two levels keeps the stronger
        out[category.id] = {noun: level_of.get(noun, "none") for noun in candidates.get(category.id, [])}
    return out


def judge_quality(relations: Mapping[int, Mapping[str, str]], skipped: Sequence[SenseSkip],
                  wordnet: Mapping[int, Mapping[str, str]],
                  published: Mapping[int, Mapping[str, str]] | None = None) -> JudgeQuality:
    """The report of a model judge: its answers, what was skipped, suspicions and agreements."""
    counts = Counter(r for judged in relations.values() for r in judged.values())
    return JudgeQuality(judged=sum(counts.values()), relations={r: counts[r] for r in RELATIONS if counts[r]},
                        skipped=list(skipped), suspect=suspicions(relations), wordnet=agreement(relations, wordnet),
                        published=None if published is None else agreement(relations, published))
