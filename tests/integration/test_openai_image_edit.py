"""OpenAI image edits through the official client against the local test server: the request the
API expects, the answer mapped back and made mask-valid, retries, caching, and that the API key
never leaks into errors, logs or cache files."""

from __future__ import annotations

import base64
import io
import logging

import numpy as np
import pytest
from PIL import Image

from segbench.core.errors import ProviderError
from segbench.providers.cafe.editors import make_image_editor
from segbench.providers.cafe.image_edit import CachedImageEditor
from segbench.providers.cafe.openai_image import OpenAIImageEditor
from segbench.schemas.edits import EditPlan, EditType
from segbench.settings import Settings

pytestmark = pytest.mark.integration

SECRET = "sk-test-SECRET-image-0123456789"
TINTED = ((100 + 255) // 2, (120 + 0) // 2, (140 + 255) // 2)  # the test server's edit of (100, 120, 140)


def plan(edit_type: EditType) -> EditPlan:
    fields = {EditType.SM: {"pattern": "watermelon"}, EditType.CC: {"scene": "snowy mountain slope"},
              EditType.OC: {"material": "gold"}}[edit_type]  # fmt: skip
    return EditPlan(target_key="coco:139:2001", edit_type=edit_type, object_name="vase", q_pos="vase",
                    q_neg="watermelon", instruction=f"Repaint for {edit_type.abbr}", **fields)  # fmt: skip


@pytest.fixture
def target() -> tuple[Image.Image, np.ndarray]:
    """A flat 300×200 image with a rectangular target."""
    mask = np.zeros((200, 300), dtype=bool)
    mask[50:150, 100:220] = True
    return Image.new("RGB", (300, 200), (100, 120, 140)), mask


def editor_for(server, model: str = "gpt-image-1", **kwargs) -> OpenAIImageEditor:
    options = {"api_key": SECRET, "backoff_base": 0.01, "timeout": 10, **kwargs}
    return OpenAIImageEditor(model, base_url=server.base_url, **options)


def test_sm_edit_changes_the_target_only(openai_server, target):
    image, mask = target
    out = np.asarray(editor_for(openai_server).edit(image, mask, plan(EditType.SM), seed=0))
    # The server also nudges every pixel it was not asked to edit; the composite restores them.
    np.testing.assert_array_equal(out[~mask], np.asarray(image)[~mask])
    assert tuple(out[100, 160]) == TINTED  # well inside the target, past the 1 px seam
    [request] = openai_server.image_edits
    assert request.fields == {"model": "gpt-image-1", "prompt": "Repaint for SM", "n": "1", "size": "1536x1024"}
    assert "response_format" not in request.fields  # gpt-image models always answer base64
    sent = Image.open(io.BytesIO(request.mask))
    assert sent.mode == "RGBA" and sent.size == (1536, 1024)
    # 300×200 scales by 5.12 to 1536×1024: the target's centre is transparent, a corner opaque.
    assert sent.getpixel((819, 512))[3] == 0 and sent.getpixel((10, 10))[3] == 255
    assert openai_server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"


def test_cc_edit_changes_the_surroundings_only(openai_server, target):
    image, mask = target
    out = np.asarray(editor_for(openai_server).edit(image, mask, plan(EditType.CC), seed=0))
    np.testing.assert_array_equal(out[mask], np.asarray(image)[mask])
    assert tuple(out[10, 10]) == TINTED
    sent = Image.open(io.BytesIO(openai_server.image_edits[0].mask))
    assert sent.getpixel((819, 512))[3] == 255 and sent.getpixel((10, 10))[3] == 0


def test_dall_e_2_asks_for_base64_at_a_square_size(openai_server, target):
    image, mask = target
    editor_for(openai_server, "dall-e-2").edit(image, mask, plan(EditType.OC), seed=0)
    fields = openai_server.image_edits[0].fields
    assert (fields["size"], fields["response_format"]) == ("512x512", "b64_json")


def test_server_errors_are_retried(openai_server, target):
    image, mask = target
    editor = editor_for(openai_server)
    openai_server.fail_next(1, 500)
    editor.edit(image, mask, plan(EditType.SM), seed=0)
    assert openai_server.image_edit_count == 2
    assert (editor.usage.calls, editor.usage.retries) == (1, 1)


def test_retries_run_out_and_nothing_is_cached(openai_server, target, tmp_path):
    image, mask = target
    cached = CachedImageEditor(editor_for(openai_server, max_retries=1), tmp_path)
    openai_server.fail_next(2, 503)
    with pytest.raises(ProviderError, match="gave up after 2 attempts") as info:
        cached.edit(image, mask, plan(EditType.SM), seed=0)
    assert info.value.item == "coco:139:2001"
    assert not any(tmp_path.rglob("*"))


def test_client_errors_are_not_retried(openai_server, target):
    image, mask = target
    openai_server.fail_next(1, 401)
    with pytest.raises(ProviderError, match="HTTP 401") as info:
        editor_for(openai_server).edit(image, mask, plan(EditType.SM), seed=0)
    assert openai_server.image_edit_count == 1 and "API key" in (info.value.hint or "")


def test_an_answer_that_is_not_an_image_fails(openai_server, target):
    image, mask = target
    openai_server.invalid_next(1, "certainly not a PNG")
    with pytest.raises(ProviderError, match="could not be decoded"):
        editor_for(openai_server).edit(image, mask, plan(EditType.OC), seed=0)


def test_the_server_refuses_what_the_api_refuses(openai_server, target):
    """The route checks the conventions, so the tests above prove the client meets them."""
    import openai

    client = openai.OpenAI(api_key="x", base_url=openai_server.base_url, max_retries=0)
    rgb = io.BytesIO()
    Image.new("RGB", (1024, 1024)).save(rgb, format="PNG")
    with pytest.raises(openai.BadRequestError, match="alpha channel"):
        client.images.edit(model="gpt-image-1", image=("i.png", rgb.getvalue(), "image/png"),
                           mask=("m.png", rgb.getvalue(), "image/png"), prompt="p")  # fmt: skip
    small = io.BytesIO()
    Image.new("RGBA", (300, 200)).save(small, format="PNG")
    with pytest.raises(openai.BadRequestError, match="not supported"):
        client.images.edit(model="gpt-image-1", image=("i.png", small.getvalue(), "image/png"),
                           mask=("m.png", small.getvalue(), "image/png"), prompt="p")  # fmt: skip


def test_make_image_editor_openai_caches_edits(openai_server, target, tmp_path, monkeypatch):
    image, mask = target
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    settings = Settings(data_root=tmp_path, provider="openai", openai_base_url=openai_server.base_url)
    editor = make_image_editor(settings)
    assert (editor.name, editor.model) == ("openai", "gpt-image-1")
    first = editor.edit(image, mask, plan(EditType.CC), seed=0)
    again = make_image_editor(settings, replay_only=True).edit(image, mask, plan(EditType.CC), seed=0)
    assert openai_server.image_edit_count == 1
    assert np.array_equal(np.asarray(first), np.asarray(again))
    assert len(list((tmp_path / "cache" / "image_edits").glob("*/*.png"))) == 1


def test_the_key_never_leaks(openai_server, target, tmp_path, caplog):
    image, mask = target
    for name in ("openai", "httpx", "segbench"):
        caplog.set_level(logging.DEBUG, logger=name)
    cached = CachedImageEditor(editor_for(openai_server, max_retries=1), tmp_path)
    errors = []
    openai_server.fail_next(1, 500)
    cached.edit(image, mask, plan(EditType.SM), seed=0)
    openai_server.image_handler = lambda fields, image, mask: (_ for _ in ()).throw(RuntimeError(f"bad {SECRET}"))
    with pytest.raises(ProviderError) as info:
        cached.edit(image, mask, plan(EditType.SM), seed=1)  # the server echoes the key in a 500
    errors.append(info.value)
    assert "Request options" in caplog.text and "retry 1/1" in caplog.text
    assert SECRET not in caplog.text
    assert all(SECRET not in str(e) for e in errors) and "***" in str(errors[0])
    assert SECRET not in repr(cached)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 2 and all(SECRET.encode() not in p.read_bytes() for p in files)
    encoded = base64.b64encode(SECRET.encode())
    assert all(encoded not in p.read_bytes() for p in files)
