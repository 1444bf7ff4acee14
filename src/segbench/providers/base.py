"""The language-provider protocol: typed questions in, validated structured answers out.

A :class:`Question` carries both a rendered prompt (for a language model) and its structured
inputs (for the offline WordNet backend, which answers from relations, not from text). Every
backend answers the same questions with the same pydantic schema, so a flow does not know which
one it talks to. What a question asks lives with the dataset that asks it (e.g.
``segbench.tasks.vocab.vocabulary``); only the transport and the cache live in ``providers/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T", bound=BaseModel)


class Question(BaseModel):
    """One structured question.

    ``kind`` names the question type (e.g. ``vocab.relations``); ``version`` is bumped whenever the
    prompt or the expected answer changes, so cached answers of an older version are not replayed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = Field(pattern=r"^[a-z0-9_.]+$")
    version: str
    inputs: dict[str, Any] = Field(description="structured inputs; what an offline backend reads")
    system: str = Field(description="instructions for a language model")
    user: str = Field(description="the rendered request for a language model")


class Usage(BaseModel):
    """What a provider spent in one run: calls made, cache hits, tokens, estimated cost."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    reasks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


class LanguageProvider(Protocol):
    """Answers questions with validated objects of the given schema."""

    name: str  # "openai" or "wordnet"; part of every cache key
    model: str  # the model id ("wordnet-3.0" for the offline backend)

    def answer(self, question: Question, schema: type[T]) -> T:
        """One answer. Raises ProviderError when no valid answer can be had."""
        ...

    def answer_many(self, questions: Sequence[Question], schema: type[T]) -> list[T]:
        """Answers in the order of ``questions`` (backends may run them concurrently, bounded)."""
        ...

    @property
    def usage(self) -> Usage: ...
