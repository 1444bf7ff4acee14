"""CAFE end to end: the offline demo (candidates → files round with simulated workers → SA-Co
export) and its byte-identical rebuild; plans and edits through the local OpenAI-compatible server
(replayed from the caches on a rebuild); a verification round on the real Label Studio server; and
the flow-level bad inputs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pycocotools.coco import COCO

from segbench.core.errors import InputError, RoundStateError
from segbench.core.io import read_json
from segbench.demo.cafe.sources import generate_demo_cafe
from segbench.providers import make_provider
from segbench.providers.cafe.editors import make_image_editor
from segbench.schemas.cafe import CafeParams
from segbench.settings import load_settings
from segbench.tasks.cafe.export import NEGATIVE_ID_OFFSET, validate_saco

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SMALL = {"coco": 4, "saco": 3}
KEY = "sk-test-0123456789abcdefghijklmnop"


def _demo(tmp_path: Path, name: str) -> dict:
    from segbench.flows.cafe.demo import run_cafe_demo

    settings = load_settings(data_root=tmp_path / name / "data", work_dir=tmp_path / name / "wd")
    return run_cafe_demo(settings.data_root, settings.work_dir, make_provider(settings), seed=0)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _without_timestamp(manifest: bytes) -> bytes:
    return re.sub(rb'"created_at": "[^"]*"', b"", manifest)


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("cafe-demo")
    return root, _demo(root, "a")


def test_demo_exports_only_verified_pairs_in_the_saco_format(demo):
    root, result = demo
    data = root / "a" / "data"
    candidates = result.candidates.counts.candidates
    verification = read_json(data / "cafe_verification" / "demo-cafe-verification.json")
    verified = verification["overall"]["verified"]
    assert candidates == 24 and 0 < verified < candidates  # the simulated crowd rejects some
    export = result.export.counts
    assert export.samples == verified and export.not_verified == candidates - verified
    for stem in ("CAFE", "CAFE_SM", "CAFE_CC", "CAFE_OC"):
        path = data / "cafe" / f"{stem}.json"
        assert validate_saco(path) == []
        coco = COCO(str(path))  # loads unmodified
        positives = [i for i in coco.dataset["images"] if "fp_source_id" not in i]
        for image in positives:
            assert len(coco.getAnnIds(imgIds=[image["id"]])) == 1
            assert coco.getAnnIds(imgIds=[image["id"] + NEGATIVE_ID_OFFSET]) == []
            assert (data / "cafe" / "images" / image["file_name"]).is_file()
    whole = read_json(data / "cafe" / "CAFE.json")
    assert len(whole["images"]) == 2 * verified
    assert sum(len(read_json(data / "cafe" / f"CAFE_{t}.json")["annotations"]) for t in ("SM", "CC", "OC")) == verified
    assert len(list((data / "cafe" / "images").iterdir())) == verified
    skipped = read_json(data / "cafe" / "skipped.json")
    assert skipped["count"] == candidates - verified and all(s["error"] == "NotVerified" for s in skipped["items"])
    table = read_json(data / "cafe" / "tables" / "prompt_pairs.json")
    assert table["samples"] == verified and set(table["by_source"]) <= {"coco", "lvis", "saco"}
    assert {i["source"] for i in whole["images"] if "source" in i} <= {"coco", "lvis", "saco"}


def test_the_same_inputs_rebuild_byte_identical_files(demo, tmp_path):
    root, _ = demo
    _demo(tmp_path, "b")
    for folder in ("cafe_candidates", "cafe"):
        first, second = _files(root / "a" / "data" / folder), _files(tmp_path / "b" / "data" / folder)
        assert sorted(first) == sorted(second)
        for name in first:
            if name == "manifest.json":
                assert _without_timestamp(first[name]) == _without_timestamp(second[name])
            else:
                assert first[name] == second[name], f"{folder}/{name} differs"


def _plan(body: dict) -> dict:
    """A stand-in language model: SM paints a zebra, CC moves to the moon, OC makes it bronze. For animals
    on the moon it answers q- = "organism", a more general term for q+, which the pair check must reject."""
    text = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    edit = re.search(r"Edit type: (\w+)", text).group(1)
    obj = re.search(r"Target object: (.+)", text).group(1).strip()
    return {"SM": {"detail": "zebra", "q_pos": obj, "q_neg": "zebra", "instruction": f"paint the {obj} as a zebra"},
            "CC": {"detail": "the moon", "q_pos": obj, "q_neg": "organism" if obj in ("cat", "dog") else "astronaut",
                   "instruction": "move it to the moon"},
            "OC": {"detail": "bronze", "q_pos": "bronze statue", "q_neg": obj, "instruction": "cast it in bronze"},
            }[edit]


def test_openai_plans_and_edits_then_a_rebuild_replays_them(tmp_path, openai_server, monkeypatch):
    from segbench.flows.cafe.candidates import build_cafe_candidates

    openai_server.handler = _plan
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sources = generate_demo_cafe(tmp_path / "src", seed=1, sizes=SMALL)
    settings = load_settings(data_root=tmp_path / "data", work_dir=tmp_path / "wd", provider="openai",
                             openai_base_url=openai_server.base_url, openai_model="test-model")

    def build(out: Path) -> dict:
        return build_cafe_candidates(sources, out, make_provider(settings), CafeParams(seed=1),
                                     editor=make_image_editor(settings), nltk_data=tmp_path / "nltk")

    first = build(tmp_path / "a")
    n = first.counts.candidates
    assert n > 0 and openai_server.image_edit_count == n
    assert openai_server.count - openai_server.image_edit_count == first.usage.calls
    rows = (tmp_path / "a" / "candidates.jsonl").read_text().splitlines()
    assert len(rows) == n and all('"q_neg":"zebra"' in r for r in rows if r.count('"edit_type":"Superficial'))
    asked = [r.body["messages"][-1]["content"] for r in openai_server.requests if "messages" in r.body]
    animals_moved = [text for text in asked if re.search(r"Edit type: CC .*\nTarget object: (cat|dog)\n", text)]
    skipped = read_json(tmp_path / "a" / "skipped.json")["items"]
    assert len(animals_moved) > 0 and len(skipped) == len(animals_moved)
    assert all(s["rule"] == "hypernym" and s["q_neg"] == "organism" for s in skipped)
    assert first.usage.calls == n + len(skipped)
    manifest = read_json(tmp_path / "a" / "manifest.json")
    assert manifest["params"]["provider"] == "openai" and manifest["params"]["editor"] == "openai"
    assert KEY not in (tmp_path / "a" / "manifest.json").read_text()

    requests = openai_server.count
    second = build(tmp_path / "b")
    assert openai_server.count == requests and second.usage.calls == 0
    assert (tmp_path / "a" / "candidates.jsonl").read_bytes() == (tmp_path / "b" / "candidates.jsonl").read_bytes()
    assert _files(tmp_path / "a" / "images") == _files(tmp_path / "b" / "images")


def test_a_local_chat_server_plans_and_the_compositor_edits_through_the_command_line(tmp_path, openai_server,
                                                                                     monkeypatch):
    """provider = openai on a chat-only local server, editor = pillow: the plans come from the model, no
    request goes to /v1/images/edits, and the manifest records which editor made the edits."""
    from support.cli import run

    openai_server.handler = _plan
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name, value in {"PROVIDER": "openai", "OPENAI_BASE_URL": openai_server.base_url,
                        "OPENAI_MODEL": "test-model", "EDITOR": "pillow"}.items():
        monkeypatch.setenv(f"SEGBENCH_{name}", value)
    sources = generate_demo_cafe(tmp_path / "src", seed=1, sizes=SMALL)
    options = [arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")]
    run(tmp_path, "build", "cafe-candidates", *options)
    manifest = read_json(tmp_path / "data" / "cafe_candidates" / "manifest.json")
    assert manifest["params"]["provider"] == "openai" and manifest["params"]["editor"] == "pillow"
    assert openai_server.count > 0 and openai_server.image_edit_count == 0
    assert manifest["counts"]["candidates"] > 0


def test_bad_inputs_are_named_errors(tmp_path):
    from segbench.annotation_ui.rounds import RoundStore
    from segbench.flows.cafe.candidates import build_cafe_candidates
    from segbench.flows.cafe.export import build_cafe
    from segbench.flows.cafe.verification import create_cafe_verification, write_verification_report

    settings = load_settings(data_root=tmp_path / "data", work_dir=tmp_path / "wd")
    provider, editor = make_provider(settings), make_image_editor(settings)
    sources = generate_demo_cafe(tmp_path / "src", seed=2, sizes={"coco": 3})
    out = settings.data_root / "cafe_candidates"
    with pytest.raises(InputError, match="distinct names"):
        build_cafe_candidates(sources * 2, out, provider, editor=editor)
    with pytest.raises(InputError, match="quota for unknown source"):
        build_cafe_candidates(sources, out, provider, CafeParams(quotas={"lvis": 1}), editor=editor)
    missing = sources[0].model_copy(update={"annotations": tmp_path / "nope.json"})
    with pytest.raises(InputError, match="nope.json"):
        build_cafe_candidates([missing], out, provider, editor=editor)
    assert not out.exists()  # nothing half-written
    with pytest.raises(InputError, match="no CAFE candidates"):
        create_cafe_verification(settings.data_root, "v1", backend="files")

    build_cafe_candidates(sources, out, provider, editor=editor, nltk_data=settings.work_dir / "nltk_data")
    create_cafe_verification(settings.data_root, "v1", backend="files")
    with pytest.raises(RoundStateError, match="answers are not ingested yet"):
        build_cafe(settings.data_root, "v1")
    (out / "review" / "extra.jpg").write_bytes(b"x")
    with pytest.raises(InputError, match="changed since round v1"):
        write_verification_report(RoundStore(settings.data_root / "rounds").load("v1"), [], settings.data_root)


@pytest.mark.labelstudio
def test_verification_round_on_label_studio(tmp_path, label_studio, monkeypatch):
    from segbench.flows.cafe.candidates import build_cafe_candidates
    from segbench.flows.cafe.export import build_cafe
    from segbench.flows.cafe.verification import create_cafe_verification
    from segbench.flows.rounds import ingest_round, launch_round

    client = label_studio.client
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", label_studio.token)
    settings = load_settings(data_root=tmp_path / "data", work_dir=tmp_path / "wd")
    sources = generate_demo_cafe(tmp_path / "src", seed=3, sizes={"coco": 4})
    build_cafe_candidates(sources, settings.data_root / "cafe_candidates", make_provider(settings),
                          editor=make_image_editor(settings), nltk_data=settings.work_dir / "nltk_data")
    key = f"cafe-{tmp_path.parent.name}"  # unique per test run on a long-lived server
    round_ = create_cafe_verification(settings.data_root, key, backend="labelstudio", overlap=2)
    launched = launch_round(settings.data_root, key, label_studio.connection)
    tasks = client.task_item_ids(launched.project_id)
    assert sorted(tasks.values()) == sorted(i.item_id for i in round_.items)

    def result(no: str | None) -> list[dict]:
        return [{"from_name": c, "to_name": "image", "type": "choices",
                 "value": {"choices": ["no" if c == no else "yes"]}}
                for c in ("positive_valid", "negative_invalid", "edit_clean", "mask_fits")]

    alice, bob = (client.create_user(f"{n}-{key}@example.com") for n in ("alice", "bob"))
    rejected = sorted(tasks)[0]
    for task_id in sorted(tasks):
        client.annotate(task_id, result("mask_fits" if task_id == rejected else None), completed_by=alice)
        client.annotate(task_id, result("mask_fits" if task_id == rejected else None), completed_by=bob)
    ingested = ingest_round(settings.data_root, key, label_studio.connection)
    assert ingested.counts.answers == 2 * len(tasks)
    report = read_json(Path(ingested.reports["verification_json"]))
    assert report["overall"]["verified"] == len(tasks) - 1 and report["overall"]["mask_fits"] == 1

    export = build_cafe(settings.data_root, key)
    assert export.counts.samples == len(tasks) - 1
    ids = {i["id"] for i in read_json(settings.data_root / "cafe" / "CAFE.json")["images"]}
    assert int(tasks[rejected]) not in ids and validate_saco(settings.data_root / "cafe" / "CAFE.json") == []
