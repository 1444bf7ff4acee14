"""Image editing without a network: the mask rule, the Pillow compositor, the edit cache, and the
OpenAI size and mask conventions (pure functions)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image, ImageFilter

from segbench.core.errors import ProviderError
from segbench.providers.cafe.editors import make_image_editor
from segbench.providers.cafe.image_edit import CachedImageEditor, editable_region, keep_mask_valid, png_bytes
from segbench.providers.cafe.openai_image import Letterbox, api_mask, choose_size
from segbench.providers.cafe.pillow_editor import PillowCompositor, luminance
from segbench.providers.cafe.pillow_textures import pattern_for, scene_for
from segbench.schemas.edits import EditPlan, EditType
from segbench.settings import Settings

WIDTH, HEIGHT = 160, 120
WORDS = {EditType.SM: {"pattern": "watermelon"}, EditType.CC: {"scene": "snowy mountain slope"},
         EditType.OC: {"material": "amethyst crystal"}}  # fmt: skip


def plan(edit_type: EditType, **fields: str) -> EditPlan:
    return EditPlan(
        target_key="demo:7:42",
        edit_type=edit_type,
        object_name="vase",
        q_pos="vase",
        q_neg="watermelon",
        instruction="repaint the target",
        **(fields or WORDS[edit_type]),
    )


@pytest.fixture(scope="module")
def scene() -> tuple[Image.Image, np.ndarray]:
    """A shaded ellipse (the target) on a two-tone background, and its mask."""
    yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH]
    mask = ((xx - 80) / 50) ** 2 + ((yy - 62) / 45) ** 2 < 1
    light = np.clip(1.1 - np.hypot(xx - 62, yy - 40) / 70, 0.15, 1.0)  # lit from the top left
    pixels = np.where(yy[..., None] < 50, [150, 190, 230], [110, 150, 80]).astype(np.float64)
    pixels[mask] = (np.array([200, 180, 160]) * light[..., None])[mask]
    return Image.fromarray(pixels.astype(np.uint8), "RGB"), mask


def low_frequency_luma(image: Image.Image, radius: float) -> np.ndarray:
    """Luminance at scales above ``radius`` px: the shading, with a pattern's detail averaged out."""
    blurred = image.filter(ImageFilter.GaussianBlur(radius))
    return luminance(np.asarray(blurred))


# -- the mask rule ----------------------------------------------------------------------------------


def test_keep_mask_valid_feathers_only_inside_the_edited_side():
    mask = np.zeros((5, 5), dtype=bool)
    mask[1:4, 1:4] = True
    original = Image.new("RGB", (5, 5), (0, 0, 0))
    edited = Image.new("RGB", (5, 5), (200, 200, 200))
    out = np.asarray(keep_mask_valid(original, edited, mask, EditType.SM, feather=1))[..., 0]
    expected = np.zeros((5, 5), dtype=np.uint8)
    expected[1:4, 1:4] = 100  # the 3×3 target's boundary ring: half edited
    expected[2, 2] = 200  # its only pixel two steps from the outside: fully edited
    np.testing.assert_array_equal(out, expected)
    cc = np.asarray(keep_mask_valid(original, edited, mask, EditType.CC))[..., 0]
    np.testing.assert_array_equal(cc, np.where(mask, 0, 200))


@pytest.mark.parametrize("edit_type", list(EditType))
def test_compositor_changes_only_the_allowed_side(scene, edit_type):
    image, mask = scene
    out = PillowCompositor().edit(image, mask, plan(edit_type), seed=3)
    before, after = np.asarray(image), np.asarray(out)
    assert out.size == image.size and out.mode == "RGB"
    allowed = editable_region(mask, edit_type)
    np.testing.assert_array_equal(after[~allowed], before[~allowed])  # the other side: byte-identical
    changed = np.any(after != before, axis=-1)
    assert changed[allowed].mean() > 0.9  # and the edit really happened


@pytest.mark.parametrize("edit_type", list(EditType))
def test_compositor_is_deterministic(scene, edit_type):
    image, mask = scene
    first = png_bytes(PillowCompositor().edit(image, mask, plan(edit_type), seed=3))
    again = png_bytes(PillowCompositor().edit(image.copy(), mask.copy(), plan(edit_type), seed=3))
    other_seed = png_bytes(PillowCompositor().edit(image, mask, plan(edit_type), seed=4))
    assert first == again
    assert first != other_seed


@pytest.mark.parametrize("edit_type", [EditType.SM, EditType.OC])
def test_shading_is_kept_inside_the_target(scene, edit_type):
    image, mask = scene
    out = PillowCompositor().edit(image, mask, plan(edit_type), seed=3)
    radius = 6.0
    core = np.asarray(Image.fromarray(mask).filter(ImageFilter.MinFilter(4 * int(radius) + 1)))
    assert core.sum() > 500
    before = low_frequency_luma(image, radius)[core]
    after = low_frequency_luma(out, radius)[core]
    assert np.corrcoef(before, after)[0, 1] > 0.8


def test_unknown_words_render_deterministically():
    assert pattern_for("zebra").ground == (235, 235, 228)
    assert pattern_for("xylophone") == pattern_for("Xylophone")
    assert pattern_for("xylophone") != pattern_for("harmonica")
    assert scene_for("on a snowy ski slope").ground_near == (250, 252, 255)
    assert scene_for("quantum foam") == scene_for("quantum foam")


@pytest.mark.parametrize(
    ("edit_type", "fields", "problem"),
    [(EditType.SM, {"scene": "beach"}, "needs 'pattern'"), (EditType.OC, {"material": "  "}, "needs 'material'")],
)
def test_a_plan_without_its_field_is_refused(scene, edit_type, fields, problem):
    image, mask = scene
    with pytest.raises(ProviderError, match=problem) as info:
        PillowCompositor().edit(image, mask, plan(edit_type, **fields), seed=0)
    assert info.value.item == "demo:7:42"


def test_a_mask_of_the_wrong_shape_is_refused(scene):
    image, mask = scene
    with pytest.raises(ProviderError, match="does not match the image") as info:
        PillowCompositor().edit(image, mask[:-1], plan(EditType.SM), seed=0)
    assert info.value.item == "demo:7:42"


@pytest.mark.parametrize(("edit_type", "fill"), [(EditType.SM, False), (EditType.CC, True)])
def test_nothing_to_edit_is_refused(scene, edit_type, fill):
    image, _ = scene
    with pytest.raises(ProviderError, match="nothing to edit"):
        PillowCompositor().edit(image, np.full((HEIGHT, WIDTH), fill), plan(edit_type), seed=0)


# -- the cache --------------------------------------------------------------------------------------


def test_cache_hit_miss_and_layout(scene, tmp_path):
    image, mask = scene
    inner = PillowCompositor()
    cached = CachedImageEditor(inner, tmp_path)
    first = cached.edit(image, mask, plan(EditType.SM), seed=1)
    [stored] = list(tmp_path.glob("*/*.png"))
    assert stored.parent.name == stored.stem[:2] and len(stored.stem) == 64
    assert stored.with_suffix(".json").is_file()
    again = cached.edit(image, mask, plan(EditType.SM), seed=1)
    assert inner.usage.calls == 1 and cached.usage.cache_hits == 1
    assert png_bytes(again) == png_bytes(first) == png_bytes(PillowCompositor().edit(image, mask, plan(EditType.SM),
                                                                                      seed=1))  # fmt: skip
    cached.edit(image, mask, plan(EditType.SM), seed=2)  # another seed, another pattern, another entry
    cached.edit(image, mask, plan(EditType.SM, pattern="zebra"), seed=1)
    assert inner.usage.calls == 3 and len(list(tmp_path.glob("*/*.png"))) == 3


def test_replay_only(scene, tmp_path):
    image, mask = scene
    CachedImageEditor(PillowCompositor(), tmp_path).edit(image, mask, plan(EditType.OC), seed=0)
    inner = PillowCompositor()
    replay = CachedImageEditor(inner, tmp_path, replay_only=True)
    replay.edit(image, mask, plan(EditType.OC), seed=0)
    with pytest.raises(ProviderError, match="replay-only") as info:
        replay.edit(image, mask, plan(EditType.OC), seed=5)
    assert info.value.item == "demo:7:42" and inner.usage.calls == 0


def test_failures_are_not_cached_and_damaged_entries_are_redone(scene, tmp_path):
    image, mask = scene
    cached = CachedImageEditor(PillowCompositor(), tmp_path)
    with pytest.raises(ProviderError):
        cached.edit(image, mask, plan(EditType.CC, material="gold"), seed=0)
    assert not any(tmp_path.rglob("*"))
    good = png_bytes(cached.edit(image, mask, plan(EditType.CC), seed=0))
    [stored] = list(tmp_path.glob("*/*.png"))
    stored.write_bytes(b"not a png")
    assert png_bytes(cached.edit(image, mask, plan(EditType.CC), seed=0)) == good
    assert stored.read_bytes() == good


def test_make_image_editor_offline(tmp_path, scene):
    image, mask = scene
    editor = make_image_editor(Settings(data_root=tmp_path, provider="offline"))
    assert isinstance(editor, CachedImageEditor) and (editor.name, editor.model) == ("pillow", "compositor-1")
    editor.edit(image, mask, plan(EditType.SM), seed=0)
    assert len(list((tmp_path / "cache" / "image_edits").glob("*/*.png"))) == 1


def test_the_editor_is_chosen_apart_from_the_language_provider(tmp_path, monkeypatch):
    """A local chat server plans (provider = openai) while the compositor edits (editor = pillow): no key and no
    images endpoint are needed. Edits can go to an images endpoint of their own (openai_image_base_url)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    local_chat = Settings(data_root=tmp_path, provider="openai", openai_base_url="http://127.0.0.1:9/v1",
                          editor="pillow")
    assert make_image_editor(local_chat).name == "pillow"
    follows = make_image_editor(local_chat.model_copy(update={"editor": "provider"}))
    assert follows.name == "openai" and follows.inner.base_url == "http://127.0.0.1:9/v1"
    own = make_image_editor(Settings(data_root=tmp_path, provider="offline", editor="openai",
                                     openai_image_base_url="http://127.0.0.1:10/v1"))
    assert own.name == "openai" and own.inner.base_url == "http://127.0.0.1:10/v1"
    with pytest.raises(ProviderError, match="to edit images"):  # openai edits with no key and no server named
        make_image_editor(Settings(data_root=tmp_path, provider="offline", editor="openai"))


def test_offline_factories_import_no_openai(tmp_path):
    # A fresh interpreter: this one has imported the OpenAI backends for the tests below.
    code = (
        "import sys\n"
        "from segbench.providers import make_provider\n"
        "from segbench.providers.cafe.editors import make_image_editor\n"
        "from segbench.settings import Settings\n"
        f"settings = Settings(data_root={str(tmp_path)!r}, provider='offline')\n"
        "make_provider(settings), make_image_editor(settings)\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- OpenAI conventions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "model", "expected"),
    [
        ((640, 480), "gpt-image-1", (1536, 1024)),
        ((480, 640), "gpt-image-1", (1024, 1536)),
        ((1000, 900), "gpt-image-1", (1024, 1024)),
        ((4000, 1000), "gpt-image-1", (1536, 1024)),
        ((300, 200), "dall-e-2", (512, 512)),
        ((200, 100), "dall-e-2", (256, 256)),
        ((2000, 1000), "dall-e-2", (1024, 1024)),
    ],
)
def test_choose_size(size, model, expected):
    assert choose_size(*size, model) == expected


def test_letterbox_geometry():
    assert Letterbox.fit((640, 480), (1536, 1024)).box == (85, 0, 1450, 1024)  # scale 1024/480
    assert Letterbox.fit((480, 640), (1024, 1536)).box == (0, 85, 1024, 1450)
    assert Letterbox.fit((300, 300), (1024, 1024)).box == (0, 0, 1024, 1024)


def test_letterbox_round_trip():
    rng = np.random.default_rng(0)
    noise = Image.fromarray(rng.integers(0, 256, (341, 512, 3), dtype=np.uint8), "RGB")
    box = Letterbox.fit(noise.size, (1536, 1024))  # scale exactly 3: nearest-neighbour undoes it exactly
    canvas = box.to_canvas(noise, fill=(128, 128, 128), resample=Image.Resampling.NEAREST)
    assert canvas.size == (1536, 1024) and box.box == (0, 0, 1536, 1023)
    assert canvas.getpixel((5, 1023)) == (128, 128, 128)  # the one-row bar
    back = box.from_canvas(canvas, resample=Image.Resampling.NEAREST)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(noise))
    # A non-integer scale: the crop is exactly the scaled image, so a smooth image comes back closely.
    yy, xx = np.mgrid[0:150, 0:200]
    smooth = Image.fromarray(np.stack([xx, yy, (xx + yy) // 2], -1).astype(np.uint8), "RGB")
    box = Letterbox.fit(smooth.size, (1024, 1536))
    back = box.from_canvas(box.to_canvas(smooth, fill=(0, 0, 0), resample=Image.Resampling.LANCZOS),
                           resample=Image.Resampling.LANCZOS)  # fmt: skip
    assert back.size == smooth.size
    assert np.abs(np.asarray(back, np.int16) - np.asarray(smooth, np.int16)).max() <= 2


@pytest.mark.parametrize("edit_type", [EditType.SM, EditType.CC])
def test_api_mask_marks_the_editable_side_transparent(edit_type):
    target = np.zeros((100, 200), dtype=bool)
    target[20:60, 50:150] = True
    box = Letterbox.fit((200, 100), (1536, 1024))  # scaled ×5.12 into the middle 1024 rows
    mask = api_mask(editable_region(target, edit_type), box, grow=0)
    assert mask.mode == "RGBA" and mask.size == (1536, 1024)
    alpha = np.asarray(mask.getchannel("A"))
    top, bottom = box.box[1], box.box[3]
    assert (alpha[:top] == 255).all() and (alpha[bottom:] == 255).all()  # bars are never edited
    inside, outside = alpha[top + 200, 768], alpha[top + 10, 10]
    assert (inside, outside) == ((0, 255) if edit_type is EditType.SM else (255, 0))
    grown = np.asarray(api_mask(editable_region(target, edit_type), box).getchannel("A"))
    assert (grown == 0).sum() > (alpha == 0).sum() and (grown[:top] == 255).all()
