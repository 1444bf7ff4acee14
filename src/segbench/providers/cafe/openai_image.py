"""OpenAI image edits with the target mask: the only module that talks to an image-edit API.

The Images API (``POST /v1/images/edits``) takes an image and a mask, both PNG of the same size,
where the mask's *transparent* pixels (alpha = 0) mark what to repaint, and accepts a few sizes
only: gpt-image models 1024x1024, 1536x1024 and 1024x1536; dall-e-2 square 256, 512 or 1024 under
4 MB. So an edit here is: letterbox the image into the closest supported size (no distortion, grey
bars), mark the editable side of M (inside for SM/OC, outside for CC) transparent, send
``plan.instruction`` as the prompt, crop the answer back out of the letterbox, resize it to the
original size, and paste the original pixels back on the other side of M
(:func:`~segbench.providers.cafe.image_edit.keep_mask_valid`), since the model may repaint everything.

Transient failures (429, 5xx, timeouts, dropped connections) are retried with backoff, as in
``openai_provider.py``, whose helpers this module reuses. The key goes to the client and nowhere else.
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageFilter

from segbench.core.errors import InputError, ProviderError
from segbench.core.io import open_image
from segbench.providers.cafe.image_edit import check_edit_inputs, editable_region, keep_mask_valid, png_bytes
from segbench.providers.openai_provider import OpenAIBackend, display_url
from segbench.schemas.edits import EditPlan

log = logging.getLogger(__name__)

GPT_IMAGE_SIZES = ((1024, 1024), (1536, 1024), (1024, 1536))
DALL_E_2_SIZES = ((256, 256), (512, 512), (1024, 1024))
DALL_E_2_MAX_BYTES = 4 * 1024 * 1024
LETTERBOX_FILL = (128, 128, 128)
MASK_GROW = 2  # canvas px: the model may blend a little past the mask; the composite trims it back
FEATHER = 1


def supported_sizes(model: str) -> tuple[tuple[int, int], ...]:
    """The ``(width, height)`` sizes ``model`` edits at; unknown models are assumed gpt-image-like."""
    return DALL_E_2_SIZES if model.startswith("dall-e-2") else GPT_IMAGE_SIZES


def choose_size(width: int, height: int, model: str) -> tuple[int, int]:
    """The supported size closest to ``width``×``height``.

    gpt-image: the size whose aspect ratio is closest (in log ratio; ties go to the square). dall-e-2
    (squares only): the smallest square at least as large as the longer side, else the largest.
    """
    sizes = supported_sizes(model)
    if all(w == h for w, h in sizes):
        return next(((w, h) for w, h in sizes if w >= max(width, height)), sizes[-1])
    ratio = math.log(width / height)
    return min(sizes, key=lambda s: (round(abs(math.log(s[0] / s[1]) - ratio), 9), s[0] != s[1]))


@dataclass(frozen=True)
class Letterbox:
    """Where an image of ``source`` size sits inside a ``canvas`` once scaled to fit unchanged in shape.

    ``box`` is ``(left, top, right, bottom)`` in canvas pixels: the scaled image, centred.
    """

    source: tuple[int, int]
    canvas: tuple[int, int]
    box: tuple[int, int, int, int]

    @classmethod
    def fit(cls, source: tuple[int, int], canvas: tuple[int, int]) -> Letterbox:
        scale = min(canvas[0] / source[0], canvas[1] / source[1])
        width = min(canvas[0], max(1, round(source[0] * scale)))
        height = min(canvas[1], max(1, round(source[1] * scale)))
        left, top = (canvas[0] - width) // 2, (canvas[1] - height) // 2
        return cls(source, canvas, (left, top, left + width, top + height))

    @property
    def inner_size(self) -> tuple[int, int]:
        return self.box[2] - self.box[0], self.box[3] - self.box[1]

    def to_canvas(self, image: Image.Image, *, fill: Any, resample: Image.Resampling) -> Image.Image:
        """``image`` (of ``source`` size) scaled into ``box`` on a canvas filled with ``fill``."""
        canvas = Image.new(image.mode, self.canvas, fill)
        canvas.paste(image.resize(self.inner_size, resample), self.box[:2])
        return canvas

    def from_canvas(self, canvas: Image.Image, *, resample: Image.Resampling) -> Image.Image:
        """The inverse of :meth:`to_canvas`: ``box`` cropped out and scaled back to ``source`` size."""
        inner = canvas.crop(self.box)
        return inner if inner.size == self.source else inner.resize(self.source, resample)


def api_mask(editable: np.ndarray, letterbox: Letterbox, grow: int = MASK_GROW) -> Image.Image:
    """The API's mask: an RGBA canvas, transparent (alpha 0) where the model may edit, opaque elsewhere.

    ``editable`` is the bool H×W region at the source size. The letterbox bars stay opaque.
    """
    region = Image.fromarray(editable.astype(np.uint8) * 255, "L")
    alpha_region = letterbox.to_canvas(region, fill=0, resample=Image.Resampling.NEAREST)
    if grow:
        alpha_region = alpha_region.filter(ImageFilter.MaxFilter(2 * grow + 1))
        bars = Image.new("L", letterbox.canvas, 0)
        bars.paste(255, letterbox.box)
        alpha_region = Image.fromarray(np.minimum(np.asarray(alpha_region), np.asarray(bars)), "L")
    alpha = Image.fromarray(255 - np.asarray(alpha_region), "L")
    mask = Image.new("RGBA", letterbox.canvas, (0, 0, 0, 255))
    mask.putalpha(alpha)
    return mask


class OpenAIImageEditor(OpenAIBackend):
    """An :class:`~segbench.providers.cafe.image_edit.ImageEditor` backed by ``client.images.edit``.

    Args:
        model: ``gpt-image-1`` (and other gpt-image models) or ``dall-e-2``.
        base_url: an OpenAI-compatible server (``http://host:port/v1``); ``None`` for api.openai.com.
        api_key: the key; ``None`` for local servers that need none.
        max_retries: retries of a transient failure before giving up.
        timeout: seconds per request (image edits take tens of seconds).
        backoff_base, backoff_max: first backoff in seconds, doubled per retry up to the maximum.

    The constructor makes no network call. ``seed`` is not sent (the API has none): it only keys
    the cache, so different seeds are separate samples.
    """

    HINT_NOT_FOUND = "check the image model name (openai_image_model) and the base URL (it usually ends in /v1)"
    HINT_BAD_REQUEST = "check that the model supports image edits with a mask (gpt-image-1 or dall-e-2)"

    version = "1"  # bumped when the size mapping, mask convention or compositing changes

    def __init__(
        self,
        model: str = "gpt-image-1",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 4,
        timeout: float = 300,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
    ) -> None:
        self._connect(model, base_url, api_key, max_retries=max_retries, timeout=timeout,
                      backoff_base=backoff_base, backoff_max=backoff_max)

    def edit(self, image: Image.Image, mask: np.ndarray, plan: EditPlan, *, seed: int) -> Image.Image:
        """The edited RGB image, same size as ``image``, changed only on the allowed side of M.

        Raises:
            ProviderError: the API failed after retries or refused the request, or its answer was
                not a decodable image (names the target, the model and the base URL).
        """
        image = image.convert("RGB")
        mask = check_edit_inputs(image, mask, plan)
        letterbox, image_png, mask_png = self._request_files(image, editable_region(mask, plan.edit_type))
        extra = {"response_format": "b64_json"} if self.model.startswith("dall-e-2") else {}
        response = self._call(
            plan,
            model=self.model,
            image=("image.png", image_png, "image/png"),
            mask=("mask.png", mask_png, "image/png"),
            prompt=plan.instruction,
            size=f"{letterbox.canvas[0]}x{letterbox.canvas[1]}",
            n=1,
            **extra,
        )
        answer = self._decode(plan, response).resize(letterbox.canvas, Image.Resampling.LANCZOS)
        edited = letterbox.from_canvas(answer, resample=Image.Resampling.LANCZOS)
        return keep_mask_valid(image, edited, mask, plan.edit_type, feather=FEATHER)

    # -- internals ---------------------------------------------------------------------------------

    def _request_files(self, image: Image.Image, editable: np.ndarray) -> tuple[Letterbox, bytes, bytes]:
        """The letterbox and the PNG bytes of image and mask; dall-e-2 steps down until under 4 MB."""
        sizes = list(supported_sizes(self.model))
        size = choose_size(*image.size, self.model)
        while True:
            letterbox = Letterbox.fit(image.size, size)
            image_png = png_bytes(letterbox.to_canvas(image, fill=LETTERBOX_FILL, resample=Image.Resampling.LANCZOS))
            mask_png = png_bytes(api_mask(editable, letterbox))
            index = sizes.index(size)
            too_big = self.model.startswith("dall-e-2") and len(image_png) >= DALL_E_2_MAX_BYTES
            if not too_big or index == 0:
                return letterbox, image_png, mask_png
            size = sizes[index - 1]

    def _call(self, plan: EditPlan, **request: Any) -> Any:
        """One ``images.edit`` call, retrying transient failures with backoff."""
        response = self._retrying(plan, plan.target_key, lambda: self._conn.client.images.edit(**request),
                                  looks_right=lambda answer: hasattr(answer, "data"))
        usage = getattr(response, "usage", None)
        self._count(
            calls=1,
            prompt_tokens=getattr(usage, "input_tokens", 0) or 0,
            completion_tokens=getattr(usage, "output_tokens", 0) or 0,
        )
        return response

    def _decode(self, plan: EditPlan, response: Any) -> Image.Image:
        data = getattr(response, "data", None) or []
        encoded = getattr(data[0], "b64_json", None) if data else None
        if not encoded:
            raise self._error(plan, "the answer held no base64 image", hint="use a gpt-image model or dall-e-2")
        try:
            return open_image(base64.b64decode(encoded, validate=True), path="the answer", mode="RGB")
        except (binascii.Error, InputError) as exc:
            raise self._error(plan, "the answer's image could not be decoded") from exc

    def _error(self, plan: EditPlan, detail: str, *, hint: str | None = None) -> ProviderError:
        return ProviderError(
            f"{plan.edit_type.abbr} edit with model {self.model} at {display_url(self.base_url)}: "
            f"{self._scrub(detail)}",
            item=plan.target_key,
            hint=hint,
        )
