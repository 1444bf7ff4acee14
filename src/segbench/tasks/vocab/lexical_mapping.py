"""Lexical mapping of free-form region descriptions onto a valid vocabulary (seed 003, "Lexical Mapping
Function"; ``ref/README.md`` "Lexical mapping").

A vocabulary relates each dataset class to nouns at four cumulative levels, exact ⊂ +synonyms ⊂
+hyponyms ⊂ +meronyms (:data:`segbench.schemas.vocab.LEVELS`). A description is parsed with spaCy, a
few *lookup terms* are extracted, and each term is looked up in the vocabulary.

Extraction (one spaCy dependency parse per description):

- **subject**: the first ``nsubj``/``nsubjpass`` noun; else the ``ROOT`` if it is a noun; else the
  root's ``attr``/``dobj`` noun ("there is a dog" → dog); else the first noun; else the root word.
  Its left ``compound`` children are kept ("traffic light"), adjectives are dropped ("tall green
  trees" → tree), and a plural head becomes its lemma ("buses" → bus). Modifiers keep their text so
  that "sports car" still matches a vocabulary entry "sports car".
- **head**: for a compound subject, its head noun alone ("sports car" → car).
- **hyponym candidates**: "X of Y" where X is a quantity/type word (:data:`QUANTITY_WORDS`: "a kind
  of dog", "two types of flowers", "a piece of cake") gives Y: the described thing is a kind of Y.
- **meronym candidates**: any other "X of Y" or "X on Y" with X a noun gives Y: "the wheel of a car"
  → car, "the sign on the building" → building. X not a noun gives nothing ("made of wood", "a bowl
  full of fruit", "a dog sitting on the grass"): only a noun can be a part of, or be on, Y.

Each term has a *gate*, the first level at which it may act: subject 0 (exact), head 2 (a compound
is a kind of its head), hyponym candidates 2, meronym candidates 3. A term found in class c's list for
level ℓ hits c at the *effective level* ``e = max(gate, ℓ)``; a class's effective level is its minimum
over all terms. Class c is hit at level L iff ``e(c) ≤ L`` — cumulative by construction.

Assignment at level L: the ground-truth class if given and hit (``e(gt) ≤ L``); otherwise the hit
class with the strongest relation, i.e. the smallest ``e``; ties go to the earlier term (subject,
head, hyponym candidates, meronym candidates, each in text order), then the smaller vocabulary
``id``. No hit: unmatched (``None``, scored as background).

Fixed on purpose, against the public evaluation script (``LAC/eval_open_vocab_seg_full_metric_open.py``):
(a) its hyponym candidate acted only from the meronym level (``j >= 3``); here from the hyponym
level. (b) its meronym candidates never acted (``j >= 4`` with four levels); here from the meronym
level. (c) vocabulary entries with a leading space (``" route"``) never matched; every entry is
stripped, lower-cased and has its inner whitespace collapsed. Also different: the "X of Y" hyponym
rule is keyed on the quantity word instead of on a description that starts with "a", and compound
modifiers are not meronym candidates (a "water bottle" is not a part of water).

Vocabulary file format (the open-ended benchmark's): ``{class: {"exact": [...], "synonyms": [...],
"hyponyms": [...], "meronyms": [...], "semantically_related": [...], "id": int}}``.
``semantically_related`` is ignored; the class name and its comma-separated parts ("road, route")
count as exact terms.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from segbench.core.errors import InputError
from segbench.core.io import read_json
from segbench.core.reports import plain
from segbench.schemas.vocab import LEVELS

log = logging.getLogger(__name__)

DEFAULT_SPACY_MODEL = "en_core_web_sm"
# The first level each kind of lookup term may act at (index into LEVELS).
GATES = {"subject": 0, "head": 2, "hyponym_candidate": 2, "meronym_candidate": 3}
QUANTITY_WORDS = frozenset(
    "kind type sort variety species breed form style piece pair group set bunch pile stack slice bit "
    "collection cluster couple number lot flock herd crowd bundle heap row line".split()
)
_NOUNS = ("NOUN", "PROPN")
_ADJ_TAGS = ("JJ", "JJR", "JJS")
_PLURAL_TAGS = ("NNS", "NNPS")
_SPACE_RE = re.compile(r"\s+")


def normalise_term(term: str) -> str:
    """Lower-case, strip, collapse inner whitespace (fixes the ``" route"`` entries)."""
    return _SPACE_RE.sub(" ", term).strip().lower()


@dataclass(frozen=True)
class Vocabulary:
    """A valid vocabulary, normalised for lookup.

    ``classes`` and ``ids`` are ordered by id; ``terms`` maps a normalised term to
    ``{class: first level index where the term is listed for that class}``; ``things``: the classes
    whose entry says whether it is a thing (``isthing``), and what it says.
    """

    classes: tuple[str, ...]
    ids: tuple[int, ...]
    terms: Mapping[str, Mapping[str, int]]
    things: Mapping[str, bool] = field(default_factory=dict)

    def id_of(self, cls: str) -> int:
        return self.ids[self.classes.index(cls)]

    def hits(self, term: str) -> Mapping[str, int]:
        return self.terms.get(normalise_term(term), {})


def parse_vocabulary(data: Any, *, source: str | Path = "<vocabulary>") -> Vocabulary:
    """Build a :class:`Vocabulary` from the parsed vocabulary JSON.

    Raises:
        InputError: not an object of classes, a class without an integer ``id``, a duplicate id, or a
            level that is not a list of strings (names the file and the class).
    """
    if not isinstance(data, dict) or not data:
        raise InputError("a vocabulary must be a non-empty object {class: {...}}", path=source)
    entries = []
    for cls, entry in data.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int) or isinstance(entry["id"], bool):
            raise InputError("class entry needs an integer 'id'", path=source, item=f"class {cls!r}")
        for level in LEVELS:
            values = entry.get(level, [])
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise InputError(f"'{level}' must be a list of strings", path=source, item=f"class {cls!r}")
        if not isinstance(entry.get("isthing", False), bool):
            raise InputError("'isthing' must be true or false", path=source, item=f"class {cls!r}")
        entries.append((entry["id"], cls, entry))
    entries.sort(key=lambda e: e[0])
    ids = [e[0] for e in entries]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"id {dup} is used by more than one class", path=source)
    terms: dict[str, dict[str, int]] = {}
    for _, cls, entry in entries:
        names = [cls, *cls.split(",")]  # ADE20K keys list several names: "road, route"
        for index, level in enumerate(LEVELS):
            for term in (names if index == 0 else []) + entry.get(level, []):
                key = normalise_term(term)
                if key and cls not in terms.setdefault(key, {}):
                    terms[key][cls] = index  # levels are visited in order: keep the first
    return Vocabulary(tuple(e[1] for e in entries), tuple(ids), terms,
                      {cls: entry["isthing"] for _, cls, entry in entries if "isthing" in entry})


def with_coverage(vocab: Vocabulary, coverage: float, seed: int = 0) -> Vocabulary:
    """The vocabulary as if its nouns had been mined from less data: the coverage ablation of the
    open-ended benchmark (20/40/60/80/100% of the noun list).

    Every term that is some class's exact term (the class names) stays. Of the other terms, the first
    ``coverage × n`` (half rounded up) in an order drawn from ``seed`` stay, with every relation they had; the
    rest are gone. The order is the same at every coverage, so each coverage's terms hold the smaller
    coverages' terms.

    Raises:
        ValueError: ``coverage`` outside (0, 1].
    """
    if not 0 < coverage <= 1:
        raise ValueError(f"coverage {coverage} is not in (0, 1]")
    mined = sorted((term for term, classes in vocab.terms.items() if 0 not in classes.values()),
                   key=lambda term: hashlib.sha256(f"{seed}:{term}".encode()).digest())
    kept = set(mined[:math.floor(coverage * len(mined) + 0.5)])
    return dataclasses.replace(vocab, terms={term: classes for term, classes in vocab.terms.items()
                                             if term in kept or 0 in classes.values()})


def read_vocabulary(path: str | Path) -> Vocabulary:
    """Read and parse a vocabulary JSON file.

    Raises:
        InputError: missing file, malformed JSON, or an invalid vocabulary (names the file).
    """
    return parse_vocabulary(read_json(path), source=path)


def load_nlp(model: str = DEFAULT_SPACY_MODEL) -> Any:
    """spaCy pipeline ``model`` without NER (a setting, so users of the official model keep it).

    Raises:
        InputError: the model is not installed, with the install line.
    """
    from segbench.tasks.vocab.nouns import load_pipeline

    return load_pipeline(model)


class NounsJson(TypedDict):
    subject: str | None
    head: str | None
    hyponym_candidates: list[str]
    meronym_candidates: list[str]


@dataclass(frozen=True)
class Extraction:
    """The lookup terms of one description (all normalised)."""

    subject: str | None
    head: str | None  # the subject's head noun when the subject is a compound, else None
    hyponym_candidates: tuple[str, ...] = ()
    meronym_candidates: tuple[str, ...] = ()

    def lookups(self) -> list[tuple[str, str]]:
        """``(kind, term)`` pairs in tie-break order: subject, head, hyponym, meronym candidates."""
        out = [("subject", self.subject), ("head", self.head)]
        out += [("hyponym_candidate", t) for t in self.hyponym_candidates]
        out += [("meronym_candidate", t) for t in self.meronym_candidates]
        return [(kind, term) for kind, term in out if term]

    def as_dict(self) -> NounsJson:
        return {
            "subject": self.subject,
            "head": self.head,
            "hyponym_candidates": list(self.hyponym_candidates),
            "meronym_candidates": list(self.meronym_candidates),
        }


def _word(token: Any) -> str:
    # Plural → singular through spaCy's lemma; singular words keep their text (lemmas of singular
    # nouns are sometimes odd, e.g. proper nouns).
    return (token.lemma_ if token.tag_ in _PLURAL_TAGS else token.text).lower()


def _compounds(token: Any) -> list[Any]:
    """Left compound modifiers of ``token`` (recursively), adjectives dropped, in text order."""
    found = []
    for child in token.lefts:
        if child.dep_ == "compound":
            found += _compounds(child)
            if child.tag_ not in _ADJ_TAGS:
                found.append(child)
    return sorted(found, key=lambda t: t.i)


def _phrase(token: Any) -> tuple[str, str | None]:
    """(noun phrase with compounds, head alone or None when there are no compounds)."""
    mods = _compounds(token)
    head = _word(token)
    if not mods:
        return normalise_term(head), None
    return normalise_term(" ".join([m.text.lower() for m in mods] + [head])), normalise_term(head)


def _subject_token(doc: Any) -> Any | None:
    for token in doc:
        if token.dep_ in ("nsubj", "nsubjpass") and token.pos_ in _NOUNS:
            return token
    roots = [t for t in doc if t.dep_ == "ROOT"]
    if not roots:
        return None
    root = roots[0]  # several sentences: the first one describes the region
    if root.pos_ in _NOUNS:
        return root
    for child in root.children:
        if child.dep_ in ("attr", "dobj", "oprd") and child.pos_ in _NOUNS:
            return child
    nouns = [t for t in doc if t.pos_ in _NOUNS]
    return nouns[0] if nouns else root


def extract_terms(doc: Any) -> Extraction:
    """The lookup terms of one parsed description (see the module docstring for the rules).

    Args:
        doc: a spaCy ``Doc`` with a dependency parse and POS tags.
    """
    token = _subject_token(doc)
    subject, head = _phrase(token) if token is not None else (None, None)
    hyponyms: list[str] = []
    meronyms: list[str] = []
    for prep in doc:
        if prep.dep_ != "prep" or prep.lower_ not in ("of", "on") or prep.head.pos_ not in _NOUNS:
            continue
        for obj in prep.children:
            if obj.dep_ != "pobj" or obj.pos_ not in _NOUNS:
                continue
            phrase, obj_head = _phrase(obj)
            quantity = prep.lower_ == "of" and prep.head.lemma_.lower() in QUANTITY_WORDS
            target = hyponyms if quantity else meronyms
            target += [t for t in (phrase, obj_head) if t and t not in target]
    return Extraction(subject, head, tuple(hyponyms), tuple(meronyms))


class Hit(TypedDict):
    level: int  # the effective level's index
    rank: int  # the index of the term that gave it
    term: str
    via: str


class ShownHit(TypedDict):
    level: str  # the effective level's name
    term: str
    via: str


class Mapped(TypedDict):
    """What a description maps to: its nouns, the classes they hit, and its class at each level."""

    nouns: NounsJson
    hits: dict[str, ShownHit]
    mapping: dict[str, str | None]


def class_hits(vocab: Vocabulary, extraction: Extraction) -> dict[str, Hit]:
    """Every class some term hits: ``{class: {"level": index, "rank": term index, "term", "via"}}``.

    ``level`` is the effective level ``max(gate, listed level)``, minimised over the terms; ``rank``
    is the index of the term that gave it (the earliest on equal levels).
    """
    hits: dict[str, Hit] = {}
    for rank, (kind, term) in enumerate(extraction.lookups()):
        for cls, listed in vocab.hits(term).items():
            level = max(GATES[kind], listed)
            if cls not in hits or (level, rank) < (hits[cls]["level"], hits[cls]["rank"]):
                hits[cls] = {"level": level, "rank": rank, "term": term, "via": kind}
    return hits


def assign(vocab: Vocabulary, hits: Mapping[str, Hit], level: int, gt_class: str | None) -> str | None:
    """The class a description maps to at level index ``level`` (0..3), or ``None`` (unmatched).

    The ground-truth class wins if it is hit at ``level`` or below; otherwise the hit class with the
    smallest effective level, then the earliest term, then the smallest vocabulary id.
    """
    if gt_class is not None and gt_class in hits and hits[gt_class]["level"] <= level:
        return gt_class
    eligible = [(h["level"], h["rank"], vocab.id_of(c), c) for c, h in hits.items() if h["level"] <= level]
    return min(eligible)[3] if eligible else None


def map_extraction(vocab: Vocabulary, extraction: Extraction, gt_class: str | None = None) -> Mapped:
    """``{"nouns": ..., "hits": {class: {level, term, via}}, "mapping": {level name: class | None}}``."""
    hits = class_hits(vocab, extraction)
    return {
        "nouns": extraction.as_dict(),
        "hits": {
            c: {"level": LEVELS[h["level"]], "term": h["term"], "via": h["via"]}
            for c, h in sorted(hits.items(), key=lambda kv: vocab.id_of(kv[0]))
        },
        "mapping": {name: assign(vocab, hits, i, gt_class) for i, name in enumerate(LEVELS)},
    }


def map_descriptions(
    vocab: Vocabulary, items: Sequence[Mapping[str, Any]], nlp: Any, *, source: str | Path = "<descriptions>",
    target_blind: bool = False,
) -> list[dict[str, Any]]:
    """Map each item's ``description`` (optional ``gt_class``) onto the vocabulary.

    Args:
        vocab: the vocabulary. items: objects with ``description`` (str) and optionally ``gt_class``
            (a class name of ``vocab``). nlp: a spaCy pipeline (:func:`load_nlp`).
        source: the file the items came from, named in errors.
        target_blind: map as if no ``gt_class`` were given (the strongest relation wins even when the
            ground truth is hit too); the items keep their ``gt_class``.

    Returns:
        New dicts (the inputs are not modified): each item plus ``nouns``, ``hits`` and ``mapping``.

    Raises:
        InputError: an item is not an object, has no string ``description``, or names an unknown
            ``gt_class`` (names the file and the item index).
    """
    if not isinstance(items, list):
        raise InputError("descriptions must be a JSON list of objects", path=source)
    for index, item in enumerate(items):
        _check_item(vocab, item, index, source)
    docs = nlp.pipe([item["description"] for item in items])
    out = []
    for item, doc in zip(items, docs, strict=True):
        target = None if target_blind else item.get("gt_class")
        out.append({**item, **map_extraction(vocab, extract_terms(doc), target)})
    unmatched = [sum(r["mapping"][name] is None for r in out) for name in LEVELS]
    log.info("mapped %d descriptions; unmatched per level: %s", len(out),
             plain(dict(zip(LEVELS, unmatched, strict=True))))
    return out


def _check_item(vocab: Vocabulary, item: Any, index: int, source: str | Path) -> None:
    where = f"item {index}"
    if not isinstance(item, Mapping):
        raise InputError("item must be an object with a 'description'", path=source, item=where)
    if not isinstance(item.get("description"), str):
        raise InputError("item has no 'description' string", path=source, item=where)
    gt = item.get("gt_class")
    if gt is not None and gt not in vocab.classes:
        raise InputError(
            f"gt_class {gt!r} is not a class of the vocabulary", path=source, item=where,
            hint=f"use one of: {', '.join(vocab.classes[:10])}{', ...' if len(vocab.classes) > 10 else ''}",
        )


def class_names(vocab: Vocabulary) -> list[str]:
    """Display names for forced-choice baselines: each class's first name ("road, route" → road)."""
    return [normalise_term(c.split(",")[0]) for c in vocab.classes]
