"""The language-provider protocol: typed questions in, validated structured answers out.

A :class:`Question` carries both a rendered prompt (for a language model) and its structured
inputs (for the offline WordNet backend, which answers from relations, not from text). Every
backend answers the same questions with the same pydantic schema, so a flow does not know which
one it talks to. What a question asks lives with the dataset that asks it (in the dataset's
``tasks`` subpackage); only the transport and the cache live in ``providers/``, which imports no
dataset code.

The same holds for offline answers: a dataset whose question the WordNet backend answers defines an
:class:`OfflineAnswer` beside the question and lists it in the dataset registry, and
:func:`segbench.providers.make_provider` hands the registry's answers to the backend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from segbench.schemas.results import Usage as Usage  # what every backend counts

T = TypeVar("T", bound=BaseModel)

# A provider's rule parameters (a model's temperature, the offline rules' versions): part of cache keys.
RuleParams = Mapping[str, str | int | float | bool]


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
    max_items: int | None = Field(None, ge=1, description="the most items each list of the answer holds (one "
                                  "judgement per candidate asked about): bounds a model's answer, not its key")


def describe_usage(usage: Usage | Mapping[str, Any]) -> str:
    """Usage as a log line: ``12 calls (3 from the cache, 1 retry, 0 re-asks), 1200 + 340 tokens, $0.0123``."""
    u = usage if isinstance(usage, Usage) else Usage(**{k: v for k, v in usage.items() if k in Usage.model_fields})
    return (f"{u.calls} calls ({u.cache_hits} from the cache, {u.retries} retries, {u.reasks} re-asks), "
            f"{u.prompt_tokens} prompt + {u.completion_tokens} completion tokens, ${u.cost_usd:.4f}")


class LanguageProvider(Protocol):
    """Answers questions with validated objects of the given schema."""

    @property
    def name(self) -> str:
        """``openai`` or ``wordnet``; part of every cache key."""
        ...

    @property
    def model(self) -> str:
        """The model id (``wordnet-3.0`` for the offline backend)."""
        ...

    def answer(self, question: Question, schema: type[T]) -> T:
        """One answer. Raises ProviderError when no valid answer can be had."""
        ...

    def answer_many(self, questions: Sequence[Question], schema: type[T]) -> list[T]:
        """Answers in the order of ``questions`` (backends may run them concurrently, bounded)."""
        ...

    @property
    def usage(self) -> Usage: ...


@dataclass(frozen=True)
class OfflineAnswer:
    """How the offline WordNet provider answers one question kind.

    Attributes:
        kind: the question kind it answers (``spin.subparts``).
        params: the rule parameters behind its answers (a rule version). They are part of the answers'
            cache keys, so a changed rule never replays answers cached under the old one.
        answer: ``(wordnet, inputs) -> answer``: the answer (a model of the answer schema) from an
            NLTK WordNet reader and the question's structured inputs. Raises ``ProviderError`` on
            inputs it cannot read.
        with_provider_params: key the answers with the provider's own parameters too
            (``inherit_parts``, ``meronym_depth``). Only for kinds whose cached answers were keyed so
            from the start: dropping them would turn every cached answer of the kind into a miss.
    """

    kind: str
    params: RuleParams
    answer: Callable[[Any, dict[str, Any]], BaseModel]
    with_provider_params: bool = False
