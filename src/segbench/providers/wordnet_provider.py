"""The offline language provider: answers questions from WordNet 3.0 noun relations.

It reads a question's structured ``inputs`` (never its prompt text) and answers with the same
pydantic schema a language model would, so a flow runs unchanged with no network and no key.

It answers ``vocab.relations`` itself (seed 003, valid vocabularies): how each candidate noun relates
to a category name — exact, synonym, hyponym, meronym or none — checked in that order, first match
wins. That judgement is WordNet's own noun relations under this provider's parameters
(``inherit_parts``, ``MERONYM_DEPTH``), so it stays here. Every other kind is a dataset's rule: the
dataset defines an :class:`~segbench.providers.base.OfflineAnswer` in its own subpackage, lists it
in ``segbench.registry``, and :func:`segbench.providers.make_provider` passes the registry's answers
in (SPIN's ``spin.subparts``, CAFE's ``cafe.edit_plan``). This module names no dataset module.

All noun senses of the category count (WordNet does not know which sense a dataset means), so
polysemous names relate to more nouns than a person would pick; a language model disambiguates
better. The WordNet data itself is prepared by ``wordnet_data.py``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from pydantic import BaseModel, ValidationError

from segbench.core.errors import ProviderError
from segbench.providers.base import OfflineAnswer, Question, Usage
from segbench.providers.wordnet_data import DEBIAN_WORDNET_DIR, WORDNET_LOCK, load_wordnet

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

MERONYM_DEPTH = 3  # part-of-part levels followed (car → door → lock: a lock is part of a car)
# Parts are inherited from hypernyms (a dog has the tail of a vertebrate, a car the wheels of a
# wheeled vehicle), but not from ancestors this close to the root: "whole" has "part" and
# "organism" has "cell", which would make those parts of everything.
MIN_INHERIT_DEPTH = 6
RELATIONS_KIND = "vocab.relations"  # the kind this provider answers without a registered answer


def normalise(name: str) -> str:
    """``name`` as a WordNet lemma key: lower case, runs of spaces/underscores as one ``_``."""
    return re.sub(r"[\s_]+", "_", name.strip().lower())


def alternatives(category: str) -> list[str]:
    """The names a category goes by: ADE20K-style ``"tree, plant"`` gives ``["tree", "plant"]``."""
    names = [normalise(part) for part in category.split(",")]
    return [name for name in dict.fromkeys(names) if name]


class _Judgement(TypedDict):
    noun: str
    relation: str


class _RelationsAnswer(TypedDict):
    """A ``vocab.relations`` answer (the vocabulary's schema, which this layer does not import)."""

    category: str
    judgements: list[_Judgement]


class WordNetProvider:
    """Answers structured questions from WordNet; see the module docstring for the kinds.

    Args:
        nltk_data: where to prepare the NLTK data (normally ``settings.work_dir / "nltk_data"``);
            defaults to ``.segbench/nltk_data`` under the working directory.
        answers: the datasets' offline answers by question kind (``segbench.registry.offline_answers()``);
            without them only ``vocab.relations`` is answered.
        source: where Debian installed WordNet (``/usr/share/wordnet``).
        inherit_parts: count parts of the category's hypernyms as its parts (see
            ``MIN_INHERIT_DEPTH``); ``False`` uses only the category's own part meronyms.

    WordNet is loaded on the first answer (1-4 s), not in the constructor.
    """

    name = "wordnet"
    model = "wordnet-3.0"
    concurrency = 1  # NLTK's lazy WordNet reader is not meant to be shared across threads

    def __init__(
        self,
        nltk_data: str | Path | None = None,
        *,
        answers: Mapping[str, OfflineAnswer] | None = None,
        source: str | Path = DEBIAN_WORDNET_DIR,
        inherit_parts: bool = True,
    ) -> None:
        self.nltk_data = Path(nltk_data) if nltk_data is not None else Path(".segbench") / "nltk_data"
        self.source = Path(source)
        self.inherit_parts = inherit_parts
        # Part of every cache key: a changed rule must not replay answers cached under the old one.
        self.params: dict[str, str | int | float | bool] = {"inherit_parts": inherit_parts,
                                                             "meronym_depth": MERONYM_DEPTH}
        self._wn: Any = None
        self._usage = Usage()
        self.answers: dict[str, OfflineAnswer] = {}
        for registered in (answers or {}).values():
            if registered.kind == RELATIONS_KIND:  # it would never be asked: the built-in answer wins
                raise ValueError(f"{RELATIONS_KIND} is answered by the WordNet provider itself")
            self.answers[registered.kind] = registered

    def __repr__(self) -> str:
        return f"WordNetProvider(nltk_data={str(self.nltk_data)!r})"

    def params_for(self, kind: str) -> dict[str, str | int | float | bool]:
        """The rule parameters behind answers of ``kind``; part of their cache keys, so a changed rule
        never replays answers cached under the old one, and a new kind leaves other kinds' keys alone."""
        registered = self.answers.get(kind)
        if registered is None:
            return dict(self.params)
        own = self.params if registered.with_provider_params else {}
        return {**own, **registered.params}

    @property
    def kinds(self) -> tuple[str, ...]:
        """The question kinds this provider answers."""
        return tuple(sorted({RELATIONS_KIND, *self.answers}))

    @property
    def usage(self) -> Usage:
        return self._usage.model_copy()

    @property
    def wordnet(self) -> Any:
        """The NLTK WordNet reader, prepared and loaded on first use."""
        with WORDNET_LOCK:
            if self._wn is None:
                self._wn = load_wordnet(self.nltk_data, source=self.source)
        return self._wn

    def answer(self, question: Question, schema: type[T]) -> T:
        """Answer ``question`` from WordNet, validated against ``schema``.

        Raises:
            ProviderError: the kind is not one this provider answers, its inputs are malformed, the
                answer does not fit ``schema``, or the WordNet data is missing.
        """
        handler = self._handler(question.kind)
        if handler is None:
            raise ProviderError(
                f"the offline WordNet provider cannot answer {question.kind!r}; it answers {', '.join(self.kinds)}",
                item=question.kind,
                hint="use provider = 'openai' for this question kind",
            )
        try:
            with WORDNET_LOCK:
                raw = handler(question.inputs)
            # Checked against the schema asked for, which need not be the class the rule answers with.
            result = schema.model_validate(raw.model_dump() if isinstance(raw, BaseModel) else raw)
        except ValidationError as exc:
            raise ProviderError(
                f"WordNet answer does not fit {schema.__name__}: {exc.errors(include_url=False)[0]['msg']}",
                item=question.kind,
            ) from exc
        self._usage = self._usage.add(Usage(calls=1))
        return result

    def _handler(self, kind: str) -> Callable[[dict[str, Any]], BaseModel | _RelationsAnswer] | None:
        """What turns a question's inputs into its raw answer, or ``None`` for a kind not answered."""
        if kind == RELATIONS_KIND:
            return self._relations
        registered = self.answers.get(kind)
        if registered is None:
            return None
        return lambda inputs: registered.answer(self.wordnet, inputs)

    def answer_many(self, questions: Sequence[Question], schema: type[T]) -> list[T]:
        """Answers in the order of ``questions`` (one at a time: lookups take microseconds)."""
        return [self.answer(q, schema) for q in questions]

    # -- vocab.relations -----------------------------------------------------------------------

    def _relations(self, inputs: dict[str, Any]) -> _RelationsAnswer:
        category = inputs.get("category")
        candidates = inputs.get("candidates")
        if not isinstance(category, str) or not isinstance(candidates, list):
            raise ProviderError(
                f"{RELATIONS_KIND} needs inputs {{'category': str, 'candidates': [str, ...]}}",
                item=RELATIONS_KIND,
            )
        names = alternatives(category)
        own = self._noun_synsets(names)
        if not own:
            log.warning("category %r is not a WordNet noun; only exact matches are found", category)
        parts = self._parts(own)
        judgements: list[_Judgement] = [{"noun": noun, "relation": self.relation(noun, names, own, parts)} for noun in candidates]
        return {"category": category, "judgements": judgements}

    def relation(self, noun: str, names: list[str], own: set[Any], parts: set[Any]) -> str:
        """How ``noun`` relates to a category with lemma ``names``, noun synsets ``own``, ``parts``."""
        key = normalise(noun)
        # No morphological reduction here: "glasses" must not be the exact name of "glass".
        # (Inflected forms still reach their synsets below, through WordNet's own lookup.)
        if key in names:
            return "exact"
        synsets = set(self._noun_synsets([key]))
        if synsets & own:
            return "synonym"
        for synset in synsets:
            if own & set(synset.closure(_hypernyms)):
                return "hyponym"
        if synsets & parts:
            return "meronym"
        return "none"

    def _noun_synsets(self, names: Sequence[str]) -> set[Any]:
        out: set[Any] = set()
        for name in names:
            out.update(self.wordnet.synsets(name, pos="n"))
        return out

    def _parts(self, own: set[Any]) -> set[Any]:
        """Part meronyms of ``own`` (and of their not-too-generic hypernyms), a few levels deep."""
        wholes = set(own)
        if self.inherit_parts:
            for synset in own:
                wholes.update(h for h in synset.closure(_hypernyms) if h.min_depth() >= MIN_INHERIT_DEPTH)
        parts: set[Any] = set()
        frontier = wholes
        for _ in range(MERONYM_DEPTH):
            frontier = {part for whole in frontier for part in whole.part_meronyms()} - parts
            parts |= frontier
        return parts


def _hypernyms(synset: Any) -> list[Any]:
    """Hypernym edges including instance-of ("Lassie" is an instance of a collie, so a dog)."""
    return synset.hypernyms() + synset.instance_hypernyms()
