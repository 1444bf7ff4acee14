"""Valid vocabularies (seed 003, §2): candidates per category, relation questions, the vocabulary.

Pipeline: categories + mined nouns → a bounded, cheaply pre-filtered candidate list per category
(WordNet path similarity and string containment) → ``vocab.relations`` questions → answers turned
into ``{class: {exact, synonyms, hyponyms, meronyms, id}}`` with each noun at its strongest level.
Also reads and writes the open-ended benchmark's public vocabulary format. Pure functions: no
Prefect, no network; the WordNet reader and the answers are passed in.
"""

from __future__ import annotations

import heapq
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict

from pydantic import TypeAdapter, ValidationError

from segbench.core.errors import InputError, ProviderError
from segbench.core.io import read_json
from segbench.providers.base import Question
from segbench.schemas.vocab import LEVELS, RELATION_OF_LEVEL, STRENGTH, CategorySpec, RelationAnswer

log = logging.getLogger(__name__)

QUESTION_KIND = "vocab.relations"
PROMPT_VERSION = "1"  # bump when SYSTEM_PROMPT, the user prompt or RelationAnswer changes
SYSTEM_PROMPT = (
    "You build valid vocabularies for evaluating open-ended segmentation. For one dataset category and "
    "a list of candidate nouns mined from image captions, judge how each noun relates to the category "
    "when a person names an image region: exact (the category's own name, also its plural), synonym "
    "(another name for the same thing, e.g. puppy or pooch for dog), hyponym (a kind of the category, "
    "e.g. golden retriever for dog), meronym (a part of it, e.g. tail or paw for dog), or none. Give "
    "exactly one judgement per candidate, with the noun spelled as given."
)
_CATEGORIES = TypeAdapter(list[CategorySpec])
MERONYM_DEPTH = 8  # hypernym levels whose parts a category inherits (dog → ... → vertebrate: tail, paw)


# --- categories -----------------------------------------------------------------------------------

def load_categories(source: str | Path) -> tuple[str, list[CategorySpec], Path]:
    """Read a category set: a shipped name (``ade20k_150``, ``cityscapes_19``, ``coco_cd``) or a file.

    Returns:
        (dataset name = the file's stem, categories sorted by id, the file read).

    Raises:
        InputError: the file is missing or malformed, or ids / names repeat (names the category).
    """
    path = Path(source)
    if not path.suffix and not path.exists():
        shipped = resources.files("segbench.resources") / "categories" / f"{source}.json"
        if not shipped.is_file():
            raise InputError(f"unknown category set {source!r}", item=str(source),
                             hint=f"use one of {', '.join(shipped_category_sets())} or a path to a JSON file")
        path = Path(str(shipped))
    try:
        categories = _CATEGORIES.validate_python(read_json(path))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(f"bad category list: {first['msg']}", path=path,
                         item=".".join(str(p) for p in first["loc"]),
                         hint='expected [{"id": int, "name": str, "synonyms": [str], "isthing": bool (optional)}]') from exc
    _check_unique(path, categories)
    return path.stem, sorted(categories, key=lambda c: c.id), path


def shipped_category_sets() -> list[str]:
    """The names of the category sets segbench ships (``resources/categories/*.json``)."""
    folder = resources.files("segbench.resources") / "categories"
    return sorted(p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json"))


def thing_classes(classes: Sequence[str], ids: Sequence[int]) -> tuple[str, dict[str, bool]] | None:
    """``(category set, {class: is a thing})`` when the vocabulary's classes are those of a shipped
    category set that says which are things (the same ids and names), else ``None``."""
    given = dict(zip(ids, classes, strict=True))
    for name in shipped_category_sets():
        _, categories, _ = load_categories(name)
        if {c.id: c.name for c in categories} == given and all(c.isthing is not None for c in categories):
            return name, {c.name: bool(c.isthing) for c in categories}
    return None


def _check_unique(path: Path, categories: Sequence[CategorySpec]) -> None:
    seen_ids: set[int] = set()
    seen_names: set[str] = set()
    for category in categories:
        key = category.name.strip().lower()
        if category.id in seen_ids or key in seen_names:
            raise InputError("category id or name repeats; each must be unique", path=path,
                             item=f"{category.id}: {category.name}")
        seen_ids.add(category.id)
        seen_names.add(key)


def exact_names(category: CategorySpec) -> list[str]:
    """The category's own names (``"road, route"`` → road, route), lowercased and stripped."""
    return sorted({part.strip().lower() for part in category.name.split(",") if part.strip()})


# --- candidates -----------------------------------------------------------------------------------

class WordNetIndex:
    """Noun hypernym ancestors with distances, to score path similarity in bulk.

    ``path_similarity(a, b) = 1 / (1 + d)``, d the shortest hypernym-path distance between any noun
    synsets of a and b. Taking, per word, the minimum distance to every ancestor over all its
    synsets gives that maximum over synset pairs in one pass over the smaller map, instead of a
    call per synset pair (millions at COCO scale).
    """

    def __init__(self, wordnet: Any) -> None:
        self.wordnet = wordnet
        self._cache: dict[str, dict[str, int]] = {}
        self._links: dict[str, Any] = {}

    def ancestors(self, phrase: str) -> dict[str, int]:
        """Ancestor synset name -> distance, over the noun synsets of ``phrase``.

        A compound WordNet does not know ("orange cat") falls back to its last word: its head.
        """
        if phrase not in self._cache:
            synsets = self.wordnet.synsets(phrase.replace(" ", "_"), pos="n")
            if not synsets and " " in phrase:
                synsets = self.wordnet.synsets(phrase.rsplit(" ", 1)[1], pos="n")
            dist: dict[str, int] = {}
            for synset in synsets:
                frontier, depth, seen = [synset], 0, {synset}
                while frontier:  # breadth first, so the first distance met is the shortest
                    for node in frontier:
                        name = node.name()
                        if depth < dist.get(name, depth + 1):
                            dist[name] = depth
                    nxt = []
                    for node in frontier:
                        for parent in node.hypernyms() + node.instance_hypernyms():
                            if parent not in seen:
                                seen.add(parent)
                                nxt.append(parent)
                    frontier, depth = nxt, depth + 1
            self._cache[phrase] = dist
        return self._cache[phrase]

    def _synsets(self, phrase: str) -> list:
        return self.wordnet.synsets(phrase.replace(" ", "_"), pos="n")

    def parts(self, name: str) -> set[str]:
        """Part and substance meronyms of ``name`` and of its ancestors (a dog's tail is a vertebrate's)."""
        key = f"parts:{name}"
        if key not in self._links:
            found: set[str] = set()
            frontier, seen = self._synsets(name), set()
            for _ in range(MERONYM_DEPTH):
                nxt = []
                for synset in frontier:
                    for part in synset.part_meronyms() + synset.substance_meronyms():
                        found.update(lemma.name().replace("_", " ").lower() for lemma in part.lemmas())
                    nxt += [h for h in synset.hypernyms() if h not in seen]
                    seen.update(nxt)
                frontier = nxt
            self._links[key] = found
        return self._links[key]

    def glosses(self, phrase: str) -> str:
        """The definitions of ``phrase``'s noun synsets, lowercased, padded with spaces for word search."""
        key = f"gloss:{phrase}"
        if key not in self._links:
            text = " ".join(s.definition() for s in self._synsets(phrase)).lower()
            self._links[key] = " " + re.sub(r"[^a-z0-9 -]+", " ", text) + " "
        return self._links[key]

    def linked(self, noun: str, name: str) -> bool:
        """True when WordNet ties ``noun`` to ``name`` beyond hypernyms: one's gloss names the other
        ("kitten: young domestic cat"), or ``noun`` (or its head) is an inherited part of ``name``.

        Path similarity alone misses these: kitten and tail sit far from cat in the hypernym tree.
        """
        head = noun.rsplit(" ", 1)[-1]
        parts = self.parts(name)
        return (noun in parts or head in parts or f" {name} " in self.glosses(noun)
                or (head != noun and f" {name} " in self.glosses(head)))

    def similarity(self, a: str, b: str) -> float:
        """Path similarity in [0, 1]; 0 when either has no noun synset or they share no ancestor."""
        da, db = self.ancestors(a), self.ancestors(b)
        if len(db) < len(da):
            da, db = db, da
        best = min((d + db[s] for s, d in da.items() if s in db), default=None)
        return 0.0 if best is None else 1.0 / (1 + best)


def _contains(noun: str, names: Iterable[str]) -> bool:
    """Word-level containment either way ("fire hydrant" / "hydrant"), not substrings ("cat" in "catch")."""
    words = f" {noun} "
    return any(f" {n} " in words or f" {noun} " in f" {n} " for n in names)


def select_candidates(categories: Sequence[CategorySpec], nouns: Mapping[str, int], index: WordNetIndex,
                      *, top_k: int | None = 50) -> dict[int, list[CandidateRow]]:
    """The candidates each category's judge sees: at most ``top_k`` mined nouns (every one with ``None``)
    plus its synonyms.

    Mined nouns rank by (string containment either way, a WordNet link — gloss or inherited part,
    see :meth:`WordNetIndex.linked` —, path similarity, count, noun); the category's own names are
    left out (they are exact by definition) and its listed synonyms are always added
    (``source = "category"``). The ranking is a cheap filter only: the judge decides.

    Returns:
        category id -> rows ``{noun, count, score, contains, linked, source}``, best first.
    """
    out: dict[int, list[CandidateRow]] = {}
    for category in categories:
        names = exact_names(category)
        rows = []
        for noun, count in nouns.items():
            if noun in names:
                continue
            rows.append(_row(index, noun, count, names, "mined"))
        best = sorted(rows, key=_rank) if top_k is None else heapq.nsmallest(top_k, rows, key=_rank)
        chosen = {r["noun"] for r in best}
        for synonym in sorted({s.strip().lower() for s in category.synonyms} - chosen - set(names)):
            if synonym:
                best.append(_row(index, synonym, nouns.get(synonym, 0), names, "category"))
        out[category.id] = best
    return out


def _rank(row: CandidateRow) -> tuple[bool, bool, float, int, str]:
    """The pre-filter's order: containment, a WordNet link, path similarity, count, then the noun."""
    return not row["contains"], not row["linked"], -row["score"], -row["count"], row["noun"]


class CandidateRow(TypedDict):
    """A candidate noun of a category, as ``candidates.json`` lists it."""

    noun: str
    count: int
    score: float
    contains: bool
    linked: bool
    source: str


def _row(index: WordNetIndex, noun: str, count: int, names: Sequence[str], source: str) -> CandidateRow:
    return {"noun": noun, "count": count, "score": round(max(index.similarity(noun, n) for n in names), 6),
            "contains": _contains(noun, names), "linked": any(index.linked(noun, n) for n in names),
            "source": source}


# --- questions and answers ------------------------------------------------------------------------

def relation_questions(category: CategorySpec, candidates: Sequence[str], *, batch: int = 25) -> list[Question]:
    """``vocab.relations`` questions for one category, ``batch`` candidates each, in order."""
    questions = []
    for start in range(0, len(candidates), batch):
        chunk = list(candidates[start : start + batch])
        user = (f"Category: {category.name}\nCandidate nouns ({len(chunk)}):\n" +
                "\n".join(f"- {noun}" for noun in chunk) +
                '\nAnswer with {"category": ..., "judgements": [{"noun": ..., "relation": ...}, ...]}.')
        questions.append(Question(kind=QUESTION_KIND, version=PROMPT_VERSION,
                                  inputs={"category": category.name, "candidates": chunk},
                                  system=SYSTEM_PROMPT, user=user, max_items=len(chunk)))
    return questions


def answered_relations(question: Question, answer: RelationAnswer) -> tuple[dict[str, str], dict[str, int]]:
    """Relations of the question's candidates from one answer, and what was wrong with the answer.

    Unknown nouns are ignored, candidates without a judgement count as ``none``, a noun judged
    twice keeps its strongest relation; all three are counted so nothing is dropped silently.

    Raises:
        ProviderError: the answer is about another category.
    """
    category = question.inputs["category"]
    if answer.category.strip().lower() != category.strip().lower():
        raise ProviderError(f"answer is about {answer.category!r}, the question about {category!r}",
                            item=category, hint="the provider must echo the question's category")
    asked = set(question.inputs["candidates"])
    relations: dict[str, str] = {}
    problems = {"unknown_nouns": 0, "unjudged": 0, "repeated": 0}
    for judgement in answer.judgements:
        noun = judgement.noun.strip().lower()
        if noun not in asked:
            problems["unknown_nouns"] += 1
            continue
        if noun in relations:
            problems["repeated"] += 1
            relations[noun] = _stronger(relations[noun], judgement.relation)
        else:
            relations[noun] = judgement.relation
    for noun in asked - relations.keys():
        problems["unjudged"] += 1
        relations[noun] = "none"
    return relations, problems


def _stronger(a: str, b: str) -> str:
    return min(a, b, key=lambda r: STRENGTH.get(r, len(STRENGTH)))


def assemble_vocabulary(categories: Sequence[CategorySpec], relations: Mapping[int, Mapping[str, str]]
                        ) -> dict[str, dict[str, Any]]:
    """``{class: {exact, synonyms, hyponyms, meronyms, id, isthing?}}`` from per-category relations.

    The category's own names are always exact; every other noun sits at its strongest relation
    only (exact > synonym > hyponym > meronym, seed 003 §2); lists are stripped and sorted.
    """
    vocab = {}
    for category in categories:
        strongest = {name: "exact" for name in exact_names(category)}
        for noun, relation in relations.get(category.id, {}).items():
            noun = noun.strip().lower()
            if noun and relation in STRENGTH:
                strongest[noun] = _stronger(strongest.get(noun, relation), relation)
        entry: dict[str, Any] = {level: sorted(n for n, r in strongest.items() if r == RELATION_OF_LEVEL[level])
                                 for level in LEVELS}
        vocab[category.name] = {**entry, "id": category.id,
                                **({"isthing": category.isthing} if category.isthing is not None else {})}
    return vocab


# --- the public format ----------------------------------------------------------------------------

def from_public(data: Mapping[str, Any], *, path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """Our vocabulary from the open-ended benchmark's JSON.

    Tolerates its quirks: strings with leading spaces, a noun listed at several levels (kept at the
    strongest), the unused ``semantically_related`` list (dropped). Case is kept: nouns are compared
    as written.

    Raises:
        InputError: a class entry is not an object with list levels and an integer ``id``.
    """
    out = {}
    for name, entry in data.items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), int):
            raise InputError("vocabulary entry needs an integer 'id'", path=path, item=str(name))
        strongest: dict[str, int] = {}
        for rank, level in enumerate(LEVELS):
            values = entry.get(level, [])
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise InputError(f"'{level}' must be a list of strings", path=path, item=str(name))
            for noun in (re.sub(r"\s+", " ", v).strip() for v in values):
                if noun and noun not in strongest:
                    strongest[noun] = rank
        out[name.strip()] = {**{level: sorted(n for n, r in strongest.items() if r == rank)
                                for rank, level in enumerate(LEVELS)}, "id": entry["id"]}
    return out


def to_public(vocab: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The open-ended benchmark's JSON from ours (an empty ``semantically_related``, which it ignores)."""
    return {name: {**{level: list(entry[level]) for level in LEVELS}, "semantically_related": [],
                   "id": entry["id"]} for name, entry in vocab.items()}


def read_public(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read a public-format vocabulary file into our format (see :func:`from_public`)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError("a vocabulary file is a JSON object of classes", path=path)
    return from_public(data, path=path)
