"""Language and image-editing backends behind small protocols: OpenAI (or any OpenAI-compatible
server) and the offline WordNet / Pillow backends, with a content-addressed response cache.

:func:`make_provider` is the one place settings become a language provider; flows call it and pass
the provider to tasks (``editors.py`` does the same for image editors). The OpenAI backends are
imported only when asked for, so an offline run never imports ``openai``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from segbench import registry
from segbench.core.errors import ProviderError
from segbench.providers.base import LanguageProvider, Question, Usage
from segbench.providers.cache import CachedProvider
from segbench.providers.wordnet_provider import WordNetProvider

if TYPE_CHECKING:
    from segbench.settings import Settings

__all__ = ["LanguageProvider", "Question", "Usage", "make_provider"]


def make_provider(settings: Settings, *, replay_only: bool = False) -> LanguageProvider:
    """The language provider ``settings`` ask for, wrapped in the answer cache.

    ``provider = "offline"`` gives the WordNet provider (data prepared under
    ``settings.work_dir / "nltk_data"``) with every dataset's offline answers from the registry;
    ``"openai"`` gives the OpenAI provider with ``settings.openai_model``, ``openai_base_url`` and
    the key from ``openai_api_key`` or the ``OPENAI_API_KEY`` variable. Either way answers are cached
    in ``settings.cache_dir / "llm"``. No network call is made here.

    Raises:
        ProviderError: ``openai`` without a key and without a base URL (says what to set).
    """
    inner: LanguageProvider
    if settings.provider == "offline":
        inner = WordNetProvider(settings.work_dir / "nltk_data", answers=registry.offline_answers())
    elif settings.provider == "openai":
        inner = _openai_provider(settings, replay_only=replay_only)
    else:
        raise unknown_provider(settings)
    return CachedProvider(inner, settings.cache_dir / "llm", replay_only=replay_only)


def unknown_provider(settings: Settings) -> ProviderError:
    """The error for a ``provider`` setting that names no backend.

    ``Settings`` validates the value; this guards callers that build settings by hand.
    """
    return ProviderError(f"unknown provider {settings.provider!r}; choose 'offline' or 'openai'", item="provider")


def openai_api_key(settings: Settings, *, replay_only: bool, purpose: str = "",
                   base_url: str | None = None) -> str | None:
    """The OpenAI key from the settings or ``OPENAI_API_KEY``, or ``None`` when none is needed
    (``base_url``: the server asked, when not ``openai_base_url``).

    Raises:
        ProviderError: no key, no base URL, and not a replay (a replay needs no model, so no key;
            a local OpenAI-compatible server may need none).
    """
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    key = key or os.environ.get("OPENAI_API_KEY") or None
    if key is None and (base_url or settings.openai_base_url) is None and not replay_only:
        raise ProviderError(
            f"provider 'openai' needs an API key or an OpenAI-compatible base URL{purpose}",
            item="provider",
            hint="set OPENAI_API_KEY (or SEGBENCH_OPENAI_API_KEY / openai_api_key in segbench.toml), "
            "or SEGBENCH_OPENAI_BASE_URL for a local server, or use provider = 'offline'",
        )
    return key


def _openai_provider(settings: Settings, *, replay_only: bool) -> LanguageProvider:
    # Imported here, not above, so an offline run never imports ``openai``.
    from segbench.providers.openai_provider import OpenAIProvider

    key = openai_api_key(settings, replay_only=replay_only)
    return OpenAIProvider(
        settings.openai_model,
        base_url=settings.openai_base_url,
        api_key=key,
        concurrency=settings.openai_concurrency,
        max_retries=settings.openai_max_retries,
        timeout=settings.openai_timeout,
        price_per_1k=settings.openai_price_per_1k,
        token_margin=settings.openai_token_margin,
    )
