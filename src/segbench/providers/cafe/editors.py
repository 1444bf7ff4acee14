"""Where settings become an image editor: :func:`make_image_editor`.

A module of its own because it names both backends, and both backends import ``image_edit.py``
(the protocol, the mask rule, the cache); keeping the factory out of that module keeps the imports
one-way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from segbench.providers import openai_api_key, unknown_provider
from segbench.providers.cafe.image_edit import CachedImageEditor, ImageEditor
from segbench.providers.cafe.pillow_editor import PillowCompositor

if TYPE_CHECKING:
    from segbench.settings import Settings


def make_image_editor(settings: Settings, *, replay_only: bool | None = None) -> CachedImageEditor:
    """The image editor ``settings`` ask for, wrapped in the edit cache.

    ``editor = "pillow"`` gives the Pillow compositor; ``"openai"`` gives OpenAI image edits with the
    model ``openai_image_model`` (default ``gpt-image-1``), ``openai_image_base_url`` (else
    ``openai_base_url``) and the key from ``openai_api_key`` or ``OPENAI_API_KEY``; ``"provider"`` (the
    default) follows ``provider``: the compositor offline, OpenAI edits with ``openai``. A chat-only
    local server plans with ``provider = "openai"`` and edits with ``editor = "pillow"``. Edits are cached in ``settings.cache_dir /
    "image_edits"``. ``replay_only`` defaults to ``settings.replay_only``. No network call is made.

    Optional settings read when present: ``openai_image_model``, ``openai_max_retries`` (4),
    ``openai_image_timeout`` (300 s: image edits take far longer than chat answers).

    Raises:
        ProviderError: ``openai`` without a key and without a base URL (says what to set).
    """
    replay = settings.replay_only if replay_only is None else replay_only
    inner: ImageEditor
    editor = settings.editor
    if editor == "provider":
        if settings.provider not in ("offline", "openai"):
            raise unknown_provider(settings)
        editor = "pillow" if settings.provider == "offline" else "openai"
    if editor == "pillow":
        inner = PillowCompositor()
    else:
        # Imported here, not above, so an offline run never imports ``openai``.
        from segbench.providers.cafe.openai_image import OpenAIImageEditor

        key = openai_api_key(settings, replay_only=replay, purpose=" to edit images",
                             base_url=settings.openai_image_base_url)
        inner = OpenAIImageEditor(
            settings.openai_image_model,
            base_url=settings.openai_image_base_url or settings.openai_base_url,
            api_key=key,
            max_retries=settings.openai_max_retries,
            timeout=settings.openai_image_timeout,
        )
    return CachedImageEditor(inner, settings.cache_dir / "image_edits", replay_only=replay)
