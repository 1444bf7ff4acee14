"""The content-addressed answer cache: a rebuild replays language answers instead of asking again.

:class:`CachedProvider` wraps any :class:`~segbench.providers.base.LanguageProvider` and answers the
same protocol. The key is the sha256 of the canonical JSON of everything that determines an answer:
provider name, model, question kind and version, system and user prompts, structured inputs, the
answer's JSON schema and the provider's parameters. Each answer is stored at
``<cache_dir>/<key[:2]>/<key>.json`` together with that key material (never a key, token or URL),
written atomically. Only validated answers are stored; failures are never cached.

Replay-only mode answers from the cache alone and fails on a miss, which is how a published dataset
is rebuilt without a model.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from segbench.core.errors import AnswerRejected, ProviderError
from segbench.core.http_limits import map_requests
from segbench.core.io import canonical_json, fingerprint, write_json
from segbench.providers.base import LanguageProvider, Question, Usage

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

CACHE_FORMAT = 1  # bumped when the layout of a cache file changes


class KeyMaterial(TypedDict):
    provider: str
    model: str | None
    kind: str
    version: str
    system: str
    user: str
    inputs: dict[str, Any]
    schema: dict[str, Any]
    params: dict[str, str | int | float | bool]


def key_material(provider: LanguageProvider, question: Question, schema: type[BaseModel]) -> KeyMaterial:
    """What the cache key is made of. Nothing secret: no API key, no base URL."""
    return {
        "provider": provider.name,
        "model": provider.model,
        "kind": question.kind,
        "version": question.version,
        "system": question.system,
        "user": question.user,
        "inputs": question.inputs,
        "schema": schema.model_json_schema(),
        "params": _params(provider, question.kind),
    }


def _params(provider: LanguageProvider, kind: str) -> dict[str, str | int | float | bool]:
    """The provider's rule parameters for ``kind`` (``params_for`` when it has rules per kind)."""
    if hasattr(provider, "params_for"):
        return dict(provider.params_for(kind))
    return dict(getattr(provider, "params", {}) or {})


def cache_key(provider: LanguageProvider, question: Question, schema: type[BaseModel]) -> str:
    """The sha256 cache key of ``question`` asked of ``provider`` with answer ``schema``."""
    return fingerprint(key_material(provider, question, schema))


def questions_failed(failures: Sequence[ProviderError], asked: int) -> ProviderError:
    """One error for the questions that failed (the others are cached), naming the first."""
    first = failures[0]
    return ProviderError(f"{len(failures)} of {asked} questions failed (answers to the others are cached); "
                         f"first: {first.message}", item=first.item, hint=first.hint)


def answers_or_rejections(provider: LanguageProvider, questions: Sequence[Question], schema: type[T]
                          ) -> list[T | AnswerRejected]:
    """Answers in the order of ``questions``; a question the model answered but never usably (cut
    off at its token cap, off the schema: :class:`AnswerRejected`) is that error in its place, for
    the build to skip with its reason. Any other failure (a server down, a stall) raises.
    """
    outcomes: list[T | ProviderError]
    if isinstance(provider, CachedProvider):
        outcomes = provider.answer_each(questions, schema)
    else:  # a provider without the cache (a test's): all at once, then one by one to learn which failed
        try:
            return list(provider.answer_many(questions, schema))
        except ProviderError:
            outcomes = []
        for question in questions:
            try:
                outcomes.append(provider.answer(question, schema))
            except ProviderError as exc:
                outcomes.append(exc)
    failures = [o for o in outcomes if isinstance(o, ProviderError) and not isinstance(o, AnswerRejected)]
    if failures:
        raise questions_failed(failures, len(outcomes)) from failures[0]
    return outcomes  # type: ignore[return-value]  # every failure left is a rejection


class CacheFront:
    """What the content caches share: the wrapped backend, the cache folder, replay mode, the hit count.

    Subclasses name the file a key is stored in with ``SUFFIX`` and call ``_count_hit`` on a hit.
    """

    SUFFIX = ".json"

    def __init__(self, inner: Any, cache_dir: str | Path, *, replay_only: bool = False) -> None:
        self.inner = inner
        self.cache_dir = Path(cache_dir)
        self.replay_only = replay_only
        self._hits = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        # Dask ships the provider to its workers by pickling it; a lock cannot travel, so each copy
        # gets its own. Hits counted on a worker stay in that worker's copy (usage is per process).
        return {key: value for key, value in self.__dict__.items() if key != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        mode = ", replay_only=True" if self.replay_only else ""
        return f"{type(self).__name__}({self.inner!r}, {str(self.cache_dir)!r}{mode})"

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def usage(self) -> Usage:
        """The wrapped backend's usage (when it keeps one) plus this cache's hits."""
        with self._lock:
            hits = self._hits
        inner = getattr(self.inner, "usage", None)
        return (inner if isinstance(inner, Usage) else Usage()).add(Usage(cache_hits=hits))

    def path_for(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}{self.SUFFIX}"

    def _count_hit(self) -> None:
        with self._lock:
            self._hits += 1


class CachedProvider(CacheFront):
    """A :class:`LanguageProvider` that replays cached answers and stores new ones.

    Args:
        inner: the provider asked on a miss.
        cache_dir: the cache root (normally ``settings.cache_dir / "llm"``).
        replay_only: answer from the cache alone; a miss raises :class:`ProviderError`.

    ``answer_many`` asks ``inner`` for the misses only, with up to ``inner.concurrency`` (default 1)
    questions in flight, and stores each answer as soon as it arrives, so a batch that fails half
    way keeps the answers it paid for.
    """

    def answer(self, question: Question, schema: type[T]) -> T:
        """The cached answer, or ``inner``'s answer (then stored).

        Raises:
            ProviderError: a miss in replay-only mode, or ``inner`` failed.
        """
        key = cache_key(self.inner, question, schema)
        hit = self._load(key, schema)
        if hit is not None:
            return hit
        self._check_may_ask(question, key)
        return self._store(key, question, schema, self.inner.answer(question, schema))

    def answer_many(self, questions: Sequence[Question], schema: type[T]) -> list[T]:
        """Answers in the order of ``questions``; identical questions are asked once.

        Raises:
            ProviderError: a miss in replay-only mode (before anything is asked), or some questions
                failed (the others are cached; the first failure in input order is named).
        """
        outcomes = self.answer_each(questions, schema)
        failures = [outcome for outcome in outcomes if isinstance(outcome, ProviderError)]
        if failures:
            raise questions_failed(failures, len(outcomes)) from failures[0]
        return outcomes  # type: ignore[return-value]  # no failures: every outcome is an answer

    def answer_each(self, questions: Sequence[Question], schema: type[T]) -> list[T | ProviderError]:
        """Like :meth:`answer_many`, but a question that failed is its error, in its place.

        Raises:
            ProviderError: a miss in replay-only mode (before anything is asked).
        """
        keys = [cache_key(self.inner, q, schema) for q in questions]
        answers: dict[str, T | ProviderError] = {}
        todo: dict[str, Question] = {}
        for key, question in zip(keys, questions, strict=True):
            if key in answers or key in todo:
                continue
            hit = self._load(key, schema)
            if hit is not None:
                answers[key] = hit
            else:
                self._check_may_ask(question, key)
                todo[key] = question
        if todo:
            answers.update(self._ask_all(todo, schema))
        return [answers[key] for key in keys]

    # -- internals ---------------------------------------------------------------------------------

    def _ask_all(self, todo: dict[str, Question], schema: type[T]) -> dict[str, T | ProviderError]:
        def ask(item: tuple[str, Question]) -> tuple[str, T | ProviderError]:
            key, question = item
            try:
                result = self.inner.answer(question, schema)
            except ProviderError as exc:
                return key, exc
            return key, self._store(key, question, schema, result)

        workers = max(1, min(int(getattr(self.inner, "concurrency", 1)), len(todo)))
        if workers == 1:
            outcomes = [ask(item) for item in todo.items()]
        else:  # daemon threads: Ctrl-C does not wait for the requests in flight
            outcomes = map_requests(ask, list(todo.items()), workers)
        return dict(outcomes)

    def _check_may_ask(self, question: Question, key: str) -> None:
        if self.replay_only:
            raise ProviderError(
                f"replay-only: no cached answer from {self.inner.name} model {self.inner.model} "
                f"(version {question.version}, key {key[:12]})",
                path=self.cache_dir,
                item=question.kind,
                hint="run once without replay-only (with the provider that made the cache), "
                "or restore the cache folder that belongs to this dataset version",
            )

    def _load(self, key: str, schema: type[T]) -> T | None:
        path = self.path_for(key)
        try:
            record = orjson.loads(path.read_bytes())
            result = schema.model_validate(record["answer"])
        except FileNotFoundError:
            return None
        except (orjson.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
            # A damaged entry is a miss (it is rewritten when the answer comes back), not a crash.
            log.warning("ignoring unreadable cache entry %s: %s", path, type(exc).__name__)
            return None
        self._count_hit()
        return result

    def _store(self, key: str, question: Question, schema: type[T], result: T) -> T:
        """Store ``result``; return it as a later replay will read it back.

        Canonical JSON rounds floats, so the first run must use the stored form too, or a rebuild
        from the cache would not be byte-identical to the run that filled it.
        """
        record = {
            "format": CACHE_FORMAT,
            "key": key,
            "material": key_material(self.inner, question, schema),
            "answer": result.model_dump(mode="json"),
        }
        # Two threads storing the same key write the same bytes; the rename makes either one whole.
        write_json(self.path_for(key), record, indent=1)
        log.debug("cached %s answer %s", question.kind, key[:12])
        return schema.model_validate(orjson.loads(canonical_json(record["answer"])))
