"""The offline image editor: a deterministic Pillow/numpy compositor standing in for a generative one.

It carries out the three CAFE edits of seed 000 on the target mask M:

- SM (superficial mimicry): another object's surface pattern (``plan.pattern``) painted inside M,
  multiplied with the target's own shading so its form still reads;
- CC (context conflict): everything outside M replaced by a generated scene (``plan.scene``);
- OC (ontological conflict): the inside of M re-rendered in a material (``plan.material``), lit by
  the target's shading.

The same image, mask, plan and seed give byte-identical output. The textures themselves live in
``pillow_textures.py``; the mask rule and the cache in ``image_edit.py``.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from segbench.core.errors import ProviderError
from segbench.providers.base import Usage
from segbench.providers.cafe.image_edit import check_edit_inputs, keep_mask_valid
from segbench.providers.cafe.pillow_textures import (
    material_for,
    pattern_for,
    render_material,
    render_pattern,
    render_scene,
    scene_for,
    word_rng,
)
from segbench.schemas.edits import EditPlan, EditType

SHADE_FLOOR = 0.3  # SM: the darkest a shaded pattern gets, so patterns stay visible in shadow
FEATHER = 1  # px of soft seam inside the edited side


def luminance(pixels: np.ndarray) -> np.ndarray:
    """Rec. 601 luma of an H×W×3 uint8 array, in [0, 1]."""
    rgb = pixels.astype(np.float32) / 255.0
    return 0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2]


def relative_shade(pixels: np.ndarray, region: np.ndarray) -> np.ndarray:
    """The target's shading in [0, 1]: luma divided by its 95th percentile inside ``region``.

    Dividing by the target's own bright end keeps a dark object's form without keeping its
    darkness: a black vase painted as a watermelon should look like a watermelon, not a shadow.
    """
    luma = luminance(pixels)
    bright = float(np.percentile(luma[region], 95)) if region.any() else 1.0
    return np.clip(luma / max(bright, 1e-3), 0.0, 1.0)


def _box(region: np.ndarray) -> tuple[int, int, int, int]:
    """``(top, bottom, left, right)`` of the region's bounding box, end-exclusive."""
    rows, cols = np.flatnonzero(region.any(axis=1)), np.flatnonzero(region.any(axis=0))
    return int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1


class PillowCompositor:
    """The offline :class:`~segbench.providers.cafe.image_edit.ImageEditor` (no network, no model)."""

    name = "pillow"
    model = "compositor-1"
    version = "1"  # bumped whenever a texture or the compositing changes the pixels it produces

    def __init__(self) -> None:
        self._calls = 0

    def __repr__(self) -> str:
        return f"PillowCompositor(model={self.model!r})"

    @property
    def usage(self) -> Usage:
        return Usage(calls=self._calls)

    def edit(self, image: Image.Image, mask: np.ndarray, plan: EditPlan, *, seed: int) -> Image.Image:
        """The edited RGB image; pixels change only on the side of M the edit type allows.

        Raises:
            ProviderError: the plan lacks the field of its edit type, or the mask does not fit.
        """
        image = image.convert("RGB")
        mask = check_edit_inputs(image, mask, plan)
        word = self._word(plan)
        pixels = np.asarray(image)
        if plan.edit_type is EditType.CC:
            height, width = mask.shape
            edited = render_scene(scene_for(word), height, width, word_rng(word, seed, "scene"))
        else:
            edited = Image.fromarray(self._render_inside(pixels, mask, plan.edit_type, word, seed), "RGB")
        self._calls += 1
        return keep_mask_valid(image, edited, mask, plan.edit_type, feather=FEATHER)

    @staticmethod
    def _word(plan: EditPlan) -> str:
        field = {EditType.SM: "pattern", EditType.CC: "scene", EditType.OC: "material"}[plan.edit_type]
        word = getattr(plan, field)
        if not word or not word.strip():
            raise ProviderError(
                f"a {plan.edit_type.abbr} plan needs '{field}', which is empty",
                item=plan.target_key,
                hint=f"set {field} in the edit plan (the offline editor renders from it, not from the instruction)",
            )
        return word.strip()

    @staticmethod
    def _render_inside(pixels: np.ndarray, mask: np.ndarray, edit_type: EditType, word: str, seed: int) -> np.ndarray:
        """``pixels`` with the target's bounding box re-rendered (the mask rule trims it to M later)."""
        top, bottom, left, right = _box(mask)
        crop, inside = pixels[top:bottom, left:right], mask[top:bottom, left:right]
        shade = relative_shade(crop, inside)
        if edit_type is EditType.SM:
            height, width = inside.shape
            colour = render_pattern(pattern_for(word), height, width, word_rng(word, seed, "pattern"))
            rendered = colour * (SHADE_FLOOR + (1 - SHADE_FLOOR) * shade)[..., None]
        else:
            rendered = render_material(material_for(word), shade, word_rng(word, seed, "material"))
        out = pixels.copy()
        out[top:bottom, left:right] = np.clip(np.rint(rendered), 0, 255).astype(np.uint8)
        return out
