"""The OpenAI language provider: the only module that talks to an OpenAI-compatible chat API.

It sends each :class:`~segbench.providers.base.Question` as a chat completion with a strict JSON
schema (the pydantic answer schema), validates the reply with pydantic, re-asks once when the reply
does not validate (showing the model its error), and retries rate limits, server errors, timeouts and
dropped connections with exponential backoff and jitter (honouring ``Retry-After`` up to
:data:`MAX_RETRY_AFTER`; a server asking for longer fails the question at once). Each request ends
within its timeout however slowly the server sends (:mod:`segbench.core.http_limits`), and
:data:`STALLED_AFTER` timeouts in a row end the command (a hung or dripping server is not retried
for many minutes), an answer
that is not a chat completion (an HTML page, an event stream, cut-off JSON) is a typed error, and
Ctrl-C ends a command at once, also while requests are in flight or a retry waits. Works against
api.openai.com and any OpenAI-compatible server (``base_url``).

The API key is handed to the official client and nowhere else: it never appears in errors, logs,
``repr`` or the cache (which lives in ``cache.py``, as does everything about replaying answers).
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import openai
from openai.lib._pydantic import to_strict_json_schema
from openai.types.shared_params import ResponseFormatJSONSchema
from pydantic import BaseModel, SecretStr, ValidationError

from segbench import progress
from segbench.core.errors import AnswerRejected, ProviderError
from segbench.core.http_limits import MAX_REDIRECTS, deadline, keep_deadlines, map_requests
from segbench.providers import answer_limits
from segbench.providers.base import Question, Usage

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUS = frozenset({408, 409, 429})  # plus every 5xx: the statuses OpenAI documents as transient
NOTICEABLE_WAIT = 3.0  # seconds; a longer wait before a retry is shown as a progress step
STALLED_AFTER = 2  # requests in a row (any caller) without a complete answer in time: the server is stalled
STALLED_HINT = "check the server; for a slow local model raise openai_timeout and lower openai_concurrency"
MAX_RETRY_AFTER = 120.0  # seconds; a longer Retry-After means "not today", so fail at once instead of hanging
CUT_OFF = "the reply was cut off at the token limit"
CUT_OFF_HINT = ("the model ran past the tokens its answer needs (small models loop under a JSON grammar): try a "
                "larger model, or raise openai_token_margin")
REASK = (
    "Your previous answer could not be used: {problem}\n"
    "Answer the same request again with JSON that matches the schema exactly."
)


@functools.lru_cache(maxsize=64)
def response_format(schema: type[BaseModel], max_items: int | None = None) -> ResponseFormatJSONSchema:
    """The ``response_format`` for ``schema``: the same strict JSON schema ``chat.completions.parse`` sends,
    with its lists bounded by ``max_items``.

    Sent as a plain dict (rather than through ``parse``) so that a reply that does not validate
    reaches us as text, which the re-ask shows back to the model.
    """
    strict = answer_limits.with_max_items(to_strict_json_schema(schema), max_items)
    return {"type": "json_schema", "json_schema": {"name": schema.__name__, "strict": True, "schema": strict}}


def display_url(base_url: str | None) -> str:
    """``base_url`` without credentials (``user:pass@`` is dropped), for messages and logs."""
    parts = urlsplit(base_url or DEFAULT_BASE_URL)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _retry_after(exc: Exception) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``retry-after``), if it said."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    headers = response.headers
    try:
        if "retry-after-ms" in headers:
            return float(headers["retry-after-ms"]) / 1000
        if "retry-after" in headers:
            value = headers["retry-after"]
            try:
                return float(value)
            except ValueError:  # the HTTP-date form
                when = email.utils.parsedate_to_datetime(value).timestamp()
                return max(0.0, when - time.time())
    except (TypeError, ValueError):
        return None
    return None


class _WrongShape(Exception):
    """An answer of another kind than the API's (an HTML page, an event stream)."""


def _is_transient(exc: Exception) -> bool:
    if isinstance(exc, (openai.APIConnectionError, ValueError, _WrongShape)):  # timeouts; bodies cut off or garbled
        return True
    return isinstance(exc, openai.APIStatusError) and (exc.status_code in RETRY_STATUS or exc.status_code >= 500)


def _validation_problem(exc: ValidationError, limit: int = 800) -> str:
    """A short, model-readable summary of what failed validation."""
    lines = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        lines.append(f"{where}: {err['msg']}")
    text = "; ".join(lines)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Connection:
    """The client and the key, kept where generic serialisers cannot reach them.

    A provider is passed to Prefect flows as a parameter, and Prefect stores parameters through
    FastAPI's ``jsonable_encoder``, which walks ``vars()`` of plain objects. An object with
    ``__slots__`` has no ``vars()``, so encoding fails and Prefect stores only the type name instead
    of the key.
    """

    __slots__ = ("client", "secret")

    def __init__(self, secret: str | None, base_url: str | None, timeout: float) -> None:
        self.secret = secret
        # Retries are ours (counted, logged, Retry-After honoured), so the client's own are off.
        # A placeholder key keeps the client from silently reading OPENAI_API_KEY for a keyless server.
        http = keep_deadlines(openai.DefaultHttpxClient(timeout=timeout, max_redirects=MAX_REDIRECTS))
        self.client = openai.OpenAI(api_key=secret or "unused", base_url=base_url, max_retries=0, timeout=timeout,
                                    http_client=http)

    def __repr__(self) -> str:
        return "<connection>"


class OpenAIBackend:
    """What the chat and image backends share: retry delays, usage counting, error texts.

    Subclasses set ``_lock``, ``_usage``, ``_random``, ``_conn``, ``backoff_base`` and
    ``backoff_max``, and word the hints for a missing model and a refused request.
    """

    HINT_NOT_FOUND = "check the model name and the base URL (it usually ends in /v1)"
    HINT_BAD_REQUEST: str | None = None
    name = "openai"

    def _connect(self, model: str, base_url: str | None, api_key: str | SecretStr | None, *, max_retries: int,
                 timeout: float, backoff_base: float, backoff_max: float) -> None:
        """Set what every backend holds; makes no network call."""
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        self._conn = _Connection(key or None, base_url, timeout)
        self._lock = threading.Lock()
        self._usage = Usage()
        self._random = random.Random()
        self._timeouts_in_a_row = 0  # across every caller: a hung or dripping server fails the command soon
        self._slots: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()  # requests in flight at once

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={display_url(self.base_url)!r})"

    @property
    def usage(self) -> Usage:
        with self._lock:
            return self._usage.model_copy()

    def close(self) -> None:
        """Close the HTTP connections."""
        self._conn.client.close()

    def _delay(self, attempt: int, exc: Exception) -> float | None:
        """Seconds to wait before retry ``attempt + 1``: the server's Retry-After, else backoff;
        ``None`` when the server asks for longer than :data:`MAX_RETRY_AFTER`."""
        asked = _retry_after(exc)
        if asked is not None:
            if asked > MAX_RETRY_AFTER:
                return None
            # A little jitter on top, so workers told the same instant do not return together.
            return asked + self._random.uniform(0, 0.1 * asked + 0.01)
        backoff = min(self.backoff_max, self.backoff_base * 2**attempt)
        return backoff / 2 + self._random.uniform(0, backoff / 2)  # "equal jitter"

    def _error(self, subject: Any, detail: str, *, hint: str | None = None) -> ProviderError:
        """The error naming ``subject`` (a question, an edit plan) that each backend words its own way."""
        raise NotImplementedError

    def _retrying(self, subject: Any, label: str, call: Callable[[], Any], looks_right: Callable[[Any], bool]) -> Any:
        """``call()`` (one request), retrying transient failures with backoff; what it returned.

        ``subject`` is what the errors name (the question, the edit plan), ``label`` what the retry
        lines name; ``looks_right`` checks the answer's shape (a body of another kind is retried
        like a dropped connection, then fails naming what came instead).
        """
        for attempt in range(self.max_retries + 1):
            try:
                # A request's deadline starts when it may be sent: waiting for a slot is no timeout of the server's.
                with self._slots:
                    self._refuse_if_stalled(subject)
                    with deadline(self.timeout):
                        answer = call()
                if not looks_right(answer):
                    raise _WrongShape(f"the answer was not what the API returns ({type(answer).__name__} "
                                      "body: an HTML page or an event stream?)")
            except (openai.OpenAIError, ValueError, _WrongShape) as exc:
                stalled = self._timed_out(isinstance(exc, openai.APITimeoutError))
                if stalled:
                    raise self._error(subject, f"{self._describe(exc)}, {stalled} requests in a row: the server "
                                      "hangs or sends too slowly",
                                      hint=STALLED_HINT) from None
                if not _is_transient(exc):
                    raise self._error(subject, self._describe(exc), hint=self._hint(exc)) from None  # unchained: its text can carry a secret
                if attempt == self.max_retries:
                    raise self._error(subject, f"gave up after {attempt + 1} attempts: {self._describe(exc)}",
                                      hint="retry later, or lower the concurrency") from None
                delay = self._delay(attempt, exc)
                if delay is None:
                    raise self._error(subject, f"{self._describe(exc)}; the server asks to wait "
                                      f"{_retry_after(exc):.0f} s before retrying, more than the {MAX_RETRY_AFTER:g} s "
                                      "segbench waits", hint="retry later (the server is rate-limiting)") from None
                self._count(retries=1)
                log.warning("%s at %s (%s): %s; retry %d/%d in %.2f s", self.model, display_url(self.base_url),
                            label, self._describe(exc), attempt + 1, self.max_retries, delay)
                if delay < NOTICEABLE_WAIT:
                    time.sleep(delay)  # on a daemon thread (map_requests): Ctrl-C does not wait for it
                    continue
                # A wait a user notices is shown (the log above reaches the terminal only with --verbose).
                with progress.step(f"{self.model} at {display_url(self.base_url)}: {self._describe(exc)}; "
                                   f"waiting {delay:.0f} s before retry {attempt + 1}/{self.max_retries}"):
                    time.sleep(delay)
                continue
            self._timed_out(False)
            return answer
        raise AssertionError("unreachable")  # the loop returns or raises

    def _refuse_if_stalled(self, subject: Any) -> None:
        with self._lock:
            stalled = self._timeouts_in_a_row
        if stalled >= STALLED_AFTER:  # found by another question: asking again would only wait as long
            raise self._error(subject, f"not asked: {stalled} requests in a row got no complete answer within "
                              f"{self.timeout:g} s (the server hangs or sends too slowly)",
                              hint=STALLED_HINT)

    def _timed_out(self, timed_out: bool) -> int:
        """Count a request that timed out (or reset the count on any other outcome); the count once it
        reaches :data:`STALLED_AFTER` (retrying a server that gives no complete answer only holds the command)."""
        with self._lock:
            self._timeouts_in_a_row = self._timeouts_in_a_row + 1 if timed_out else 0
            return self._timeouts_in_a_row if self._timeouts_in_a_row >= STALLED_AFTER else 0

    def _count(self, **amounts: float) -> None:
        with self._lock:
            self._usage = self._usage.add(Usage(**amounts))

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, openai.APITimeoutError):
            return f"request timed out (no complete answer within {self.timeout:g} s)"
        if isinstance(exc, _WrongShape):
            return str(exc)
        if isinstance(exc, ValueError):
            return f"the answer was not valid JSON ({type(exc).__name__})"
        if isinstance(exc, openai.APIConnectionError):
            return "connection failed"
        if isinstance(exc, openai.APIStatusError):
            return f"HTTP {exc.status_code}: {self._scrub(str(exc.message))[:300]}"
        return f"{type(exc).__name__}: {self._scrub(str(exc))[:300]}"

    def _hint(self, exc: Exception) -> str | None:
        status = getattr(exc, "status_code", None)
        if status in (401, 403):
            return "check the API key (settings openai_api_key or the OPENAI_API_KEY variable)"
        if status == 404:
            return self.HINT_NOT_FOUND
        if status == 400:
            return self.HINT_BAD_REQUEST
        return None

    def _scrub(self, text: str) -> str:
        """``text`` with the API key masked: servers sometimes echo what they were sent."""
        return text.replace(self._conn.secret, "***") if self._conn.secret else text


class OpenAIProvider(OpenAIBackend):
    """Answers questions with an OpenAI-compatible chat model under a strict JSON schema.

    Args:
        model: the model id sent with every request.
        base_url: an OpenAI-compatible server (``http://host:port/v1``); ``None`` for api.openai.com.
        api_key: the key; ``None`` for local servers that need none.
        concurrency: most requests in flight at once (shared by every caller of this provider).
        max_retries: retries of a transient failure before giving up (so ``max_retries + 1`` attempts).
        timeout: seconds per request.
        price_per_1k: ``(input, output)`` USD per 1,000 tokens, to estimate ``usage.cost_usd``.
        temperature: sent when given; ``None`` leaves the model's default (some models accept no other).
        token_margin: each request's token cap is the tokens its answer schema needs times this
            (:mod:`~segbench.providers.answer_limits`); 0 sends no cap (a reasoning model's hidden
            tokens count against it).
        backoff_base: first backoff in seconds; doubled per retry, capped at ``backoff_max``.

    The constructor makes no network call.
    """

    HINT_BAD_REQUEST = "check that the model supports strict JSON-schema output (structured outputs)"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | SecretStr | None,
        concurrency: int = 4,
        max_retries: int = 4,
        timeout: float = 60,
        price_per_1k: tuple[float, float] | None = None,
        temperature: float | None = None,
        token_margin: float = 1.5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.token_margin = token_margin
        self._connect(model, base_url, api_key, max_retries=max_retries, timeout=timeout,
                      backoff_base=backoff_base, backoff_max=backoff_max)
        self.concurrency = concurrency
        self.price_per_1k = price_per_1k
        self.params: dict[str, str | int | float | bool] = {} if temperature is None else {"temperature": temperature}
        self._slots = threading.BoundedSemaphore(concurrency)

    def answer(self, question: Question, schema: type[T]) -> T:
        """One validated answer; re-asks once when the reply does not validate.

        Raises:
            ProviderError: the API failed after retries, refused the request, or the reply did not
                validate twice (names the model, the base URL and the question kind).
        """
        fmt = response_format(schema, question.max_items)
        messages: list[dict[str, str]] = [
            {"role": "system", "content": question.system},
            {"role": "user", "content": question.user},
        ]
        text, problem = self._reply(question, messages, fmt)
        if problem is None:
            parsed, problem = self._parse(text, schema)
            if parsed is not None:
                return parsed
        if problem == CUT_OFF and self.token_margin > 0:
            # The cap is what the answer needs, with room to spare: a model that ran past it loops, and
            # asking again (a longer prompt, the same cap) only repeats the loop.
            raise self._rejected(question, f"no valid {schema.__name__}: {CUT_OFF}", CUT_OFF)
        log.info("re-asking %s for %s: %s", self.model, question.kind, problem)
        self._count(reasks=1)
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": REASK.format(problem=problem)},
        ]
        text, second = self._reply(question, messages, fmt)
        if second is None:
            parsed, second = self._parse(text, schema)
            if parsed is not None:
                return parsed
        raise self._rejected(question, f"no valid {schema.__name__} after one re-ask: {second}", second)

    def answer_many(self, questions: Sequence[Question], schema: type[T]) -> list[T]:
        """Answers in the order of ``questions``, at most ``concurrency`` requests at a time.

        Every question is attempted even when some fail.

        Raises:
            ProviderError: one or more questions failed; the first failure (in input order) is named.
        """
        if not questions:
            return []

        def ask(question: Question) -> T | ProviderError:
            try:
                return self.answer(question, schema)
            except ProviderError as exc:
                return exc

        outcomes = map_requests(ask, questions, self.concurrency)
        results = [outcome for outcome in outcomes if not isinstance(outcome, ProviderError)]
        failures = [outcome for outcome in outcomes if isinstance(outcome, ProviderError)]
        if failures:
            first = failures[0]
            raise ProviderError(
                f"{len(failures)} of {len(questions)} questions failed; first: {first.message}",
                item=first.item,
                hint=first.hint,
            ) from first
        return results

    # -- internals ---------------------------------------------------------------------------------

    def _parse(self, text: str, schema: type[T]) -> tuple[T | None, str | None]:
        try:
            return schema.model_validate_json(text), None
        except ValidationError as exc:
            return None, _validation_problem(exc)

    def _reply(self, question: Question, messages: list[dict[str, str]], fmt: ResponseFormatJSONSchema) -> tuple[str, str | None]:
        """The reply text and, when it cannot be validated at all, why (refusal, empty, truncated)."""
        completion = self._complete(question, messages, fmt)
        if not completion.choices:
            return "", "the reply had no choices"
        choice = completion.choices[0]
        message = choice.message
        if getattr(message, "refusal", None):
            return "", f"the model refused: {self._scrub(message.refusal)}"
        text = message.content or ""
        if not text:
            return "", "the reply was empty"
        if choice.finish_reason == "length":
            return text, CUT_OFF
        return text, None

    def _complete(self, question: Question, messages: list[dict[str, str]], fmt: ResponseFormatJSONSchema) -> Any:
        """One chat completion, retrying transient failures with backoff."""

        cap = answer_limits.token_cap(fmt["json_schema"].get("schema", {}), question.max_items, self.token_margin)
        # OpenAI's own API wants max_completion_tokens (its reasoning models refuse max_tokens); the servers
        # that copy its API (llama.cpp, Ollama, vLLM) all read max_tokens.
        limit = {} if cap is None else {"max_tokens" if self.base_url else "max_completion_tokens": cap}

        def call() -> Any:
            # Any: the SDK's overloads want its TypedDict messages; these are the same plain dicts.
            completions: Any = self._conn.client.chat.completions
            return completions.create(model=self.model, messages=messages, response_format=fmt, **limit,
                                      **self.params)

        completion = self._retrying(question, question.kind, call,
                                    looks_right=lambda answer: isinstance(getattr(answer, "choices", None), list))
        self._record(completion)
        return completion

    def _record(self, completion: Any) -> None:
        usage = getattr(completion, "usage", None)
        prompt = getattr(usage, "prompt_tokens", 0) or 0
        output = getattr(usage, "completion_tokens", 0) or 0
        cost = 0.0
        if self.price_per_1k is not None:
            cost = prompt / 1000 * self.price_per_1k[0] + output / 1000 * self.price_per_1k[1]
        self._count(calls=1, prompt_tokens=prompt, completion_tokens=output, cost_usd=cost)

    def _rejected(self, question: Question, detail: str, problem: str | None) -> AnswerRejected:
        """The error of a question the model answered but never usably (``problem``: the last one's)."""
        hint = CUT_OFF_HINT if problem == CUT_OFF else "check that the model supports strict JSON-schema output " \
            "(structured outputs)"
        rejected = self._error(question, detail, hint=hint, kind=AnswerRejected)
        assert isinstance(rejected, AnswerRejected)
        return rejected

    def _error(self, question: Question, detail: str, *, hint: str | None = None,
               kind: type[ProviderError] = ProviderError) -> ProviderError:
        return kind(
            f"model {self.model} at {display_url(self.base_url)}: {self._scrub(detail)}",
            item=question.kind,
            hint=hint,
        )
