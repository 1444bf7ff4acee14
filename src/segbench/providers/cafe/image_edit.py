"""The image-editing protocol, the mask-validity rule every edit obeys, and the edit cache.

An :class:`ImageEditor` carries out one :class:`~segbench.schemas.edits.EditPlan` on one image and
target mask M. Two backends answer it: the offline Pillow compositor (``pillow_editor.py``) and
OpenAI image edits (``openai_image.py``); both import this module, and it imports neither (settings
become an editor in ``editors.py``). Whatever a backend returns, :func:`keep_mask_valid` pastes the
original pixels back on the side of M the edit type must not touch (seed 000, CAFE: SM and OC change
the target, CC changes its surroundings), so M still outlines the target exactly in the edited
image I.

:class:`CachedImageEditor` stores every edited image under a content key, so a rebuild replays
edits instead of paying for them again. Backend specifics (sizes, prompts, textures) do not belong
here.
"""

from __future__ import annotations

import io
import logging
from typing import Any, Protocol, TypedDict

import numpy as np
from PIL import Image

from segbench.core.errors import InputError, ProviderError
from segbench.core.io import atomic_write_bytes, fingerprint, open_image, sha256_bytes, write_json
from segbench.providers.cache import CacheFront
from segbench.schemas.edits import EditPlan, EditType

log = logging.getLogger(__name__)

CACHE_FORMAT = 1  # bumped when the layout of a cache entry changes
COMPOSITE_VERSION = 1  # bumped when keep_mask_valid changes the pixels it produces


class ImageEditor(Protocol):
    """Carries out an edit plan on one image.

    ``edit`` takes an RGB image, a bool H×W mask (True on the target) and the plan; it returns an
    RGB image of the same size that differs from the input only on the side of the mask the edit
    type allows. It raises :class:`ProviderError` (naming ``plan.target_key``) when it cannot.
    """

    name: str  # "pillow" or "openai"; part of every cache key
    model: str  # e.g. "compositor-1" or "gpt-image-1"

    def edit(self, image: Image.Image, mask: np.ndarray, plan: EditPlan, *, seed: int) -> Image.Image: ...


def editable_region(mask: np.ndarray, edit_type: EditType) -> np.ndarray:
    """Where an edit of ``edit_type`` may change pixels: inside M for SM and OC, outside M for CC."""
    mask = np.asarray(mask, dtype=bool)
    return ~mask if edit_type is EditType.CC else mask


def check_edit_inputs(image: Image.Image, mask: np.ndarray, plan: EditPlan) -> np.ndarray:
    """The mask as a bool array, after checking it fits the image and leaves something to edit.

    Raises:
        ProviderError: the mask is not H×W of the image, or the editable side of M is empty.
    """
    mask = np.asarray(mask)
    width, height = image.size
    if mask.shape != (height, width):
        raise ProviderError(
            f"mask shape {mask.shape} does not match the image ({height}, {width})",
            item=plan.target_key,
            hint="pass the target mask decoded at the image's size (H×W, True on the target)",
        )
    mask = mask.astype(bool, copy=False)
    if not editable_region(mask, plan.edit_type).any():
        side = "outside" if plan.edit_type is EditType.CC else "inside"
        raise ProviderError(
            f"nothing to edit: no pixel {side} the target mask for a {plan.edit_type.abbr} edit",
            item=plan.target_key,
            hint="drop targets whose mask is empty (or covers the whole image for CC) before editing",
        )
    return mask


def keep_mask_valid(
    original: Image.Image, edited: Image.Image, mask: np.ndarray, edit_type: EditType, *, feather: int = 0
) -> Image.Image:
    """``edited`` with the original pixels pasted back wherever ``edit_type`` must not change them.

    Args:
        original, edited: RGB images of the same size.
        mask: bool H×W target mask M.
        edit_type: decides which side of M may change (:func:`editable_region`).
        feather: width in pixels of a soft seam, laid *inside* the editable side (so the other side
            stays byte-identical): the ring of editable pixels within ``feather`` px of the boundary
            blends original and edited linearly.

    Returns:
        An RGB image equal to ``original`` outside the editable region.
    """
    region = editable_region(mask, edit_type)
    before = np.asarray(original.convert("RGB"), dtype=np.float32)
    after = np.asarray(edited.convert("RGB"), dtype=np.float32)
    weight = region.astype(np.float32)
    inner = region
    for step in range(1, feather + 1):
        inner = _erode(inner)
        # Pixels that survive `step` erosions are at least `step` px from the kept side.
        weight = np.where(region & ~inner & (weight == 1.0), step / (feather + 1), weight)
    out = before + (after - before) * weight[..., None]
    out = np.where(region[..., None], np.clip(np.rint(out), 0, 255), before)
    return Image.fromarray(out.astype(np.uint8), "RGB")


def _erode(region: np.ndarray) -> np.ndarray:
    """4-neighbour binary erosion; pixels on the image border count as inside."""
    padded = np.pad(region, 1, mode="edge")
    return region & padded[:-2, 1:-1] & padded[2:, 1:-1] & padded[1:-1, :-2] & padded[1:-1, 2:]


def png_bytes(image: Image.Image) -> bytes:
    """``image`` as PNG with fixed settings and no metadata, so the same pixels give the same bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()


class EditKeyMaterial(TypedDict):
    format: int
    editor: str
    model: str | None
    logic: dict[str, str | int]
    params: dict[str, Any]
    image: str
    mask: dict[str, Any]
    plan: dict[str, Any]
    seed: int


def edit_key_material(
    editor: ImageEditor, image: Image.Image, mask: np.ndarray, plan: EditPlan, seed: int
) -> EditKeyMaterial:
    """What the edit cache key is made of. Nothing secret: no API key, no base URL.

    The image enters as the digest of its PNG bytes, the mask as the digest of its packed bits and
    its shape, the plan as its canonical JSON.
    """
    bits = np.packbits(np.asarray(mask, dtype=bool), axis=None).tobytes()
    return {
        "format": CACHE_FORMAT,
        "editor": editor.name,
        "model": editor.model,
        "logic": {"backend": str(getattr(editor, "version", "1")), "composite": COMPOSITE_VERSION},
        "params": dict(getattr(editor, "params", {}) or {}),
        "image": sha256_bytes(png_bytes(image.convert("RGB"))),
        "mask": {"sha256": sha256_bytes(bits), "shape": list(np.shape(mask))},
        "plan": plan.model_dump(mode="json"),
        "seed": seed,
    }


class CachedImageEditor(CacheFront):
    """An :class:`ImageEditor` that replays stored edits and stores new ones.

    Args:
        inner: the editor asked on a miss.
        cache_dir: the cache root (normally ``settings.cache_dir / "image_edits"``).
        replay_only: edit from the cache alone; a miss raises :class:`ProviderError`.

    Each edit is stored at ``<cache_dir>/<key[:2]>/<key>.png`` (written atomically), with its key
    material beside it as ``<key>.json``. Only finished, mask-valid edits are stored; failures are
    never cached. A damaged entry counts as a miss.
    """

    SUFFIX = ".png"

    def edit(self, image: Image.Image, mask: np.ndarray, plan: EditPlan, *, seed: int) -> Image.Image:
        """The stored edit, or ``inner``'s edit (made mask-valid, then stored).

        Raises:
            ProviderError: bad mask, a miss in replay-only mode, or ``inner`` failed or answered an
                image of another size.
        """
        image = image.convert("RGB")
        mask = check_edit_inputs(image, mask, plan)
        material = edit_key_material(self.inner, image, mask, plan, seed)
        key = fingerprint(material)
        hit = self._load(key, image.size)
        if hit is not None:
            return hit
        if self.replay_only:
            raise ProviderError(
                f"replay-only: no cached {plan.edit_type.abbr} edit from {self.inner.name} model "
                f"{self.inner.model} (seed {seed}, key {key[:12]})",
                path=self.cache_dir,
                item=plan.target_key,
                hint="run once without replay-only (with the editor that made the cache), "
                "or restore the cache folder that belongs to this dataset version",
            )
        edited = self.inner.edit(image, mask, plan, seed=seed)
        if edited.size != image.size:
            raise ProviderError(
                f"{self.inner.name} returned a {edited.size} image for a {image.size} input",
                item=plan.target_key,
            )
        # The backends already composite; doing it again here keeps the promise for any editor.
        edited = keep_mask_valid(image, edited, mask, plan.edit_type)
        write_json(self.path_for(key).with_suffix(".json"), {"key": key, "material": material}, indent=1)
        atomic_write_bytes(self.path_for(key), png_bytes(edited))
        log.debug("cached %s edit of %s: %s", plan.edit_type.abbr, plan.target_key, key[:12])
        return edited

    def _load(self, key: str, size: tuple[int, int]) -> Image.Image | None:
        path = self.path_for(key)
        if not path.is_file():
            return None
        try:
            result = open_image(path, mode="RGB")
        except InputError as exc:
            # A damaged entry is a miss (it is rewritten after the next edit), not a crash.
            log.warning("ignoring unreadable cached edit %s: %s", path, exc.message)
            return None
        if result.size != size:
            log.warning("ignoring cached edit %s of size %s (expected %s)", path, result.size, size)
            return None
        self._count_hit()
        return result
