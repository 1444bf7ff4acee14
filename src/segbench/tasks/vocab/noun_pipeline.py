"""A spaCy pipeline run for noun mining: the annotations mining reads, with less work per caption.

Mining reads POS and dependency labels of every token (``doc.noun_chunks``) but the lemma of chunk
heads only. Two components of the English pipelines cost a quarter of the parse time while doing
little that varies between captions:

- the **attribute ruler** (tag map and exceptions) runs a ``Matcher`` over every doc, although
  almost all of its patterns look at one token's text, tag and dependency label only. Its effect on
  a token is therefore a function of that token's own attributes, and :class:`MemoAttributeRuler`
  replays the effect the real ruler had on a token with the same attributes. Docs holding a word
  that starts one of the multi-token patterns ("gon na", "let 's") go through the real ruler, so the
  result is the ruler's own on every doc.
- the **rule lemmatizer** runs in Python for every token; :meth:`MiningPipeline.head_lemma` asks
  the same lemmatizer for the heads alone.

Annotations are the same as the full pipeline's where mining reads them (a test compares them); the
pipeline falls back to plain ``nlp.pipe`` when its components are not the expected ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
from spacy.attrs import DEP, LEMMA, LOWER, MORPH, ORTH, POS, TAG
from spacy.strings import get_string_id

REPLACED = ("attribute_ruler", "lemmatizer")  # what this pipeline does itself, in this order, at the end
# Pattern keys whose value is a function of the token's own (text, tag, dep, pos, morph, lemma).
# NORM is not: tokenizer exceptions set it per token. Anything else (sentence starts, entities,
# extension attributes, quantifiers) disables the memo.
LEXICAL_KEYS = frozenset({
    "ORTH", "TEXT", "LOWER", "LENGTH", "IS_ALPHA", "IS_ASCII", "IS_DIGIT", "IS_LOWER", "IS_UPPER", "IS_TITLE",
    "IS_PUNCT", "IS_SPACE", "IS_STOP", "IS_BRACKET", "IS_QUOTE", "IS_LEFT_PUNCT", "IS_RIGHT_PUNCT",
    "IS_CURRENCY", "LIKE_NUM", "LIKE_URL", "LIKE_EMAIL", "SHAPE", "PREFIX", "SUFFIX",
})
TOKEN_KEYS = LEXICAL_KEYS | {"TAG", "DEP", "POS", "MORPH", "LEMMA"}
KEY_ATTRS = [ORTH, TAG, DEP, POS, MORPH, LEMMA, LOWER]  # what a token's effect is keyed by (+ LOWER)
SET_ATTRS = [POS, MORPH, LEMMA, TAG, DEP]  # what the ruler may change


COLUMN = {"LOWER": KEY_ATTRS.index(LOWER), "TAG": KEY_ATTRS.index(TAG), "DEP": KEY_ATTRS.index(DEP)}

Condition = tuple[tuple[int, frozenset[int]], ...]  # per constrained token: (column, values one must take)


def _literals(token_pattern: dict[str, Any]) -> list[tuple[int, frozenset[int]]]:
    """Each (column, values) one token of a pattern must have in a fixed set: its fixed word, tag, label."""
    found = []
    for key, value in token_pattern.items():
        name = key.upper()
        column = "LOWER" if name in ("ORTH", "TEXT", "LOWER") else name if name in ("TAG", "DEP") else None
        if column is None:
            continue
        values = [value] if isinstance(value, str) else value["IN"] if isinstance(value, dict) and set(value) == {"IN"} \
            else None
        if values is not None:
            words = (str(v).lower() if column == "LOWER" else str(v) for v in values)
            found.append((COLUMN[column], frozenset(get_string_id(w) for w in words)))
    return found


def memo_triggers(patterns: Iterable[dict[str, Any]]) -> list[Condition] | None:
    """When a doc may hold a multi-token match, or ``None`` when memoising is unsound.

    One condition per multi-token pattern: every fixed word, tag or label of its tokens must be
    found on some token of the doc. A doc meeting no condition is matched by
    single-token patterns only, each reading attributes in :data:`TOKEN_KEYS`.
    """
    conditions: list[Condition] = []
    for rule in patterns:
        for pattern in rule["patterns"]:
            if not isinstance(pattern, list):
                return None  # a Doc pattern (phrase) matches on text spans: not analysed, so not memoised
            if any(key.upper() not in TOKEN_KEYS for token in pattern for key in token if key.upper() != "OP"):
                return None
            if len(pattern) == 1 and "OP" not in pattern[0]:
                continue
            literals = tuple(lit for token in pattern for lit in _literals(token))
            if not literals:
                return None  # a multi-token pattern without a fixed value could match anywhere
            conditions.append(literals)
    return conditions


def may_match_many(conditions: list[Condition], keys: np.ndarray) -> bool:
    """Whether a doc with these :data:`KEY_ATTRS` rows meets some condition of :func:`memo_triggers`."""
    present = {column: set(keys[:, column].tolist()) for column in COLUMN.values()}
    return any(all(not present[column].isdisjoint(values) for column, values in condition) for condition in conditions)


class MemoAttributeRuler:
    """The attribute ruler's effect, replayed per token from a memo of what it does.

    A token is keyed by its text, tag, dependency label and prior POS, morph and lemma; the new keys
    of a batch of docs go through the real ruler together (:meth:`_learn`), then every doc gets its
    tokens' effects in one array write. A doc holding a trigger word runs the real ruler whole.
    ``ruled`` counts real ruler runs, ``replayed`` docs annotated from the memo.
    """

    def __init__(self, ruler: Any) -> None:
        self.ruler = ruler
        self.triggers = memo_triggers(ruler.patterns)
        self.memo: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.replayed = self.ruled = 0

    def __call__(self, doc: Any) -> Any:
        return self.annotate([doc])[0]

    def annotate(self, docs: list[Any]) -> list[Any]:
        """Annotate ``docs`` in place (and return them); new keys of the whole batch cost one ruler run."""
        if self.triggers is None:
            return [self.ruler(doc) for doc in docs]
        keyed = []
        for doc in docs:
            before = doc.to_array(KEY_ATTRS) if len(doc) else None
            if before is None or may_match_many(self.triggers, before):
                self.ruler(doc)  # empty, or a multi-token pattern may match: what it did is not per token
                self.ruled += 1
            else:
                keyed.append((doc, [tuple(row[:-1]) for row in before.tolist()]))
        self._learn({key for _, keys in keyed for key in keys if key not in self.memo}, docs[0].vocab)
        for doc, keys in keyed:
            doc.from_array(SET_ATTRS, np.asarray([self.memo[key] for key in keys], dtype=np.uint64))
            self.replayed += 1
        return docs

    def _learn(self, keys: set[tuple[int, ...]], vocab: Any) -> None:
        """Record what the ruler does to tokens with these keys: run it once on a doc of those tokens.

        Only single-token patterns may match in that doc (checked: tokens of different captions
        could meet a multi-token condition together, and then each token is run alone), and they
        read nothing but each token's own attributes: every token gets what it gets in its caption.
        """
        if not keys:
            return
        from spacy.tokens import Doc

        ordered = sorted(keys)
        made = Doc(vocab, words=[vocab.strings[key[0]] for key in ordered], spaces=[True] * len(ordered))
        keys_array: Any = np.asarray([key[1:] for key in ordered], dtype=np.uint64)  # spaCy's stubs say int64
        made.from_array(KEY_ATTRS[1:-1], keys_array)
        # (annotate learns only when there are triggers)
        if len(ordered) > 1 and self.triggers is not None and may_match_many(self.triggers, made.to_array(KEY_ATTRS)):
            for key in ordered:  # none of them meets a condition alone: its own caption did not
                self._learn({key}, vocab)
            return
        self.ruler(made)
        self.ruled += 1
        learned: Any = made.to_array(SET_ATTRS).tolist()  # rows of ints
        self.memo.update(zip(ordered, (tuple(row) for row in learned), strict=True))


class MiningPipeline:
    """Parses captions for mining; see the module docstring for what it skips and why.

    ``nlp`` is a loaded spaCy pipeline whose last components are ``attribute_ruler`` and
    ``lemmatizer`` (as in the English pipelines); otherwise it runs ``nlp.pipe`` unchanged.
    """

    def __init__(self, nlp: Any) -> None:
        self.nlp = nlp
        self.fast = tuple(nlp.pipe_names[-len(REPLACED):]) == REPLACED
        self.ruler = MemoAttributeRuler(nlp.get_pipe("attribute_ruler")) if self.fast else None
        self.lemmatizer = nlp.get_pipe("lemmatizer") if self.fast else None

    @property
    def meta(self) -> Mapping[str, object]:
        return self.nlp.meta

    def pipe(self, texts: Iterable[str], *, batch_size: int = 256) -> Iterator[Any]:
        if not self.fast:
            yield from self.nlp.pipe(texts, batch_size=batch_size)
            return
        ruler = self.ruler
        assert ruler is not None  # the fast path has one
        with self.nlp.select_pipes(disable=list(REPLACED)):
            batch: list[Any] = []
            for doc in self.nlp.pipe(texts, batch_size=batch_size):
                batch.append(doc)
                if len(batch) == batch_size:
                    yield from ruler.annotate(batch)
                    batch = []
            if batch:
                yield from ruler.annotate(batch)

    def head_lemma(self, token: Any) -> str:
        """The lemma the lemmatizer component would give ``token`` (it keeps one the ruler set)."""
        if self.lemmatizer is None or (token.lemma != 0 and not self.lemmatizer.overwrite):
            return token.lemma_
        return self.lemmatizer.lemmatize(token)[0]
