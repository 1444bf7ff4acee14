"""Resumable dataset builds: a second run with the same inputs and params is a no-op that touches no
file, a changed input or param rebuilds, ``force`` rebuilds byte-identically (``SOURCE_DATE_EPOCH``
fixes the manifest's timestamp), and a vocabulary build killed with SIGKILL after some mining units
finished resumes with the same bytes as an uninterrupted build, reusing those units."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from segbench.core.io import read_json
from segbench.demo.vocab.captions import generate_demo_captions
from segbench.demo.waterbirds.birds import generate_demo_birds
from segbench.providers.base import Question, Usage
from segbench.schemas.vocab import RelationAnswer, RelationJudgement, VocabParams
from segbench.tasks.waterbirds.dataset import WaterbirdsParams

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]
EPOCH = "1700000000"


@pytest.fixture(scope="module", autouse=True)
def fixed_build_time():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", EPOCH)
        yield


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``root`` with its mtime and bytes."""
    return {p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file()}


def contents(root: Path) -> dict[str, bytes]:
    return {name: data for name, (_, data) in snapshot(root).items()}


def assert_no_op(summary: dict, out: Path, before: dict[str, tuple[int, bytes]]) -> None:
    assert summary.up_to_date is True
    assert snapshot(out) == before  # not one file rewritten
    assert not list(out.parent.glob(f".{out.name}.*"))  # no stage left behind


def assert_forced_rebuild_is_identical(summary: dict, out: Path, before: dict[str, tuple[int, bytes]]) -> None:
    assert summary.up_to_date is False
    after = snapshot(out)
    assert {k: v[1] for k, v in after.items()} == {k: v[1] for k, v in before.items()}
    assert all(after[k][0] != before[k][0] for k in ("manifest.json",))  # really written again


# --- Waterbirds-seg -------------------------------------------------------------------------------

WB_PARAMS = WaterbirdsParams(val_per_group=2, test_per_group=3)


def build_waterbirds(cub: Path, places: Path, out: Path, params: WaterbirdsParams = WB_PARAMS, **kw) -> dict:
    from segbench.flows.waterbirds.build import build_waterbirds as flow

    return flow(cub, places, out, params, **kw)


@pytest.fixture(scope="module")
def waterbirds(tmp_path_factory):
    root = tmp_path_factory.mktemp("waterbirds")
    cub, places = generate_demo_birds(root / "src", seed=0)
    out = root / "data" / "waterbirds_seg"
    first = build_waterbirds(cub, places, out)
    return cub, places, out, first


def test_waterbirds_second_run_is_a_no_op(waterbirds):
    cub, places, out, first = waterbirds
    assert first.up_to_date is False and first.units.computed > 0 and first.units.reused == 0
    manifest = read_json(out / "manifest.json")
    assert manifest["build_key"] and {"images", "segmentations", "places:ocean"} <= set(manifest["inputs"])
    assert ".stage-nonce" not in manifest["outputs"]
    before = snapshot(out)
    again = build_waterbirds(cub, places, out)
    assert_no_op(again, out, before)
    assert again.counts == first.counts and again.mislabels == first.mislabels


def test_waterbirds_force_rebuilds_byte_identically(waterbirds):
    cub, places, out, _ = waterbirds
    before = snapshot(out)
    forced = build_waterbirds(cub, places, out, force=True)
    assert forced.units.model_dump() == {"computed": forced.units.computed, "reused": 0}
    assert_forced_rebuild_is_identical(forced, out, before)


def test_waterbirds_a_changed_param_or_input_rebuilds(waterbirds, tmp_path):
    cub, places, out, _ = waterbirds
    copy = tmp_path / "waterbirds_seg"
    shutil.copytree(out, copy)
    key = read_json(copy / "manifest.json")["build_key"]
    reseeded = build_waterbirds(cub, places, copy, WB_PARAMS.model_copy(update={"seed": 14}))
    assert reseeded.up_to_date is False and read_json(copy / "manifest.json")["build_key"] != key

    source = tmp_path / "cub"
    shutil.copytree(cub, source)
    bird = sorted((source / "segmentations").rglob("*.png"))[0]
    bird.write_bytes(bird.read_bytes() + b"\0")  # one changed segmentation file is a changed input
    changed = build_waterbirds(source, places, out.parent / "other", WB_PARAMS)
    assert changed.up_to_date is False
    assert read_json(out.parent / "other" / "manifest.json")["build_key"] != key


# --- valid vocabulary: resume after SIGKILL --------------------------------------------------------

class NoneProvider:
    """A judge that relates nothing (the build still asks every question); fast and deterministic."""

    name = "none"
    model = "none-1"
    usage = Usage()

    def answer_many(self, questions: Sequence[Question], schema: type[RelationAnswer]) -> list[RelationAnswer]:
        return [schema(category=q.inputs["category"],
                       judgements=[RelationJudgement(noun=n, relation="none") for n in q.inputs["candidates"]])
                for q in questions]


VOCAB_PARAMS = {"workers": 1, "shard_size": 20, "min_count": 1}

BUILD_SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from integration.test_resume_datasets import NoneProvider, VOCAB_PARAMS
    from segbench.flows.vocab.build import build_vocab
    from segbench.schemas.vocab import VocabParams
    summary = build_vocab({captions!r}, "coco_cd", Path({out!r}), NoneProvider(), VocabParams(**VOCAB_PARAMS),
                          nltk_data=Path({nltk!r}))
    print("UNITS", summary.units.computed, summary.units.reused)
""")


@pytest.fixture(scope="module")
def captions(tmp_path_factory):
    return [str(p) for p in generate_demo_captions(tmp_path_factory.mktemp("captions"), seed=0)]


def _vocab_process(captions: list[str], out: Path, nltk: Path, storage: Path) -> subprocess.Popen:
    from prefect.settings import PREFECT_API_URL

    script = BUILD_SCRIPT.format(tests=str(Path(__file__).parents[1]), captions=captions, out=str(out),
                                 nltk=str(nltk))
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PREFECT_LOCAL_STORAGE_PATH": str(storage),
           "SOURCE_DATE_EPOCH": EPOCH}
    return subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(process: subprocess.Popen) -> tuple[int, int]:
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    line = next(line for line in stdout.splitlines() if line.startswith("UNITS"))
    computed, reused = map(int, line.split()[1:])
    return computed, reused


def _persisted_results(storage: Path) -> list[Path]:
    """The result files written whole: one seen mid-write (not yet JSON) does not count, so the kill
    cannot land between a unit's file appearing and its last byte."""
    whole = []
    for path in storage.glob("*") if storage.is_dir() else ():
        try:
            json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        whole.append(path)
    return whole


def test_vocab_killed_while_mining_resumes_byte_identically(captions, tmp_path):
    nltk, storage = tmp_path / "nltk", tmp_path / "results"
    reference = tmp_path / "uninterrupted" / "coco_cd"
    all_units, _ = _finish(_vocab_process(captions, reference, nltk, tmp_path / "reference-results"))
    assert all_units == 55  # 1087 distinct demo captions in shards of 20

    out = tmp_path / "killed" / "coco_cd"
    process = _vocab_process(captions, out, nltk, storage)
    deadline = time.monotonic() + 240
    while len(_persisted_results(storage)) < 3:  # three mining units persisted
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no mining unit finished"
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (out / "manifest.json").exists()
    assert len(list(out.parent.glob(".coco_cd.*.partial"))) == 1  # the stage survived the kill

    computed, reused = _finish(_vocab_process(captions, out, nltk, storage))
    assert reused >= 3 and computed + reused == all_units
    assert contents(out) == contents(reference)
    assert not list(out.parent.glob(".coco_cd.*"))


def test_vocab_second_run_is_a_no_op_and_force_rebuilds_identically(captions, tmp_path):
    from segbench.flows.vocab.build import build_vocab

    out, nltk = tmp_path / "coco_cd", tmp_path / "nltk"
    params = VocabParams(**VOCAB_PARAMS)
    first = build_vocab(captions, "coco_cd", out, NoneProvider(), params, nltk_data=nltk)
    assert first.up_to_date is False and first.units.reused == 0
    before = snapshot(out)
    again = build_vocab(captions, "coco_cd", out, NoneProvider(), params, nltk_data=nltk)
    assert_no_op(again, out, before)
    assert again.counts.nouns == first.counts.nouns and again.usage.calls == 0
    forced = build_vocab(captions, "coco_cd", out, NoneProvider(), params, nltk_data=nltk, force=True)
    assert_forced_rebuild_is_identical(forced, out, before)
    assert forced.units.reused == 0  # a forced build gets a fresh stage: nothing replayed

    fewer = params.model_copy(update={"min_count": 2})
    rebuilt = build_vocab(captions, "coco_cd", out, NoneProvider(), fewer, nltk_data=nltk)
    assert rebuilt.up_to_date is False and rebuilt.counts.nouns < first.counts.nouns

    own = [str(shutil.copy(path, tmp_path / f"{n}.json")) for n, path in enumerate(captions)]
    assert build_vocab(own, "coco_cd", out, NoneProvider(), fewer, nltk_data=nltk).up_to_date is False
    assert build_vocab(own, "coco_cd", out, NoneProvider(), fewer, nltk_data=nltk).up_to_date is True
    Path(own[1]).write_text(Path(own[1]).read_text() + "\n")  # the same captions, other bytes
    assert build_vocab(own, "coco_cd", out, NoneProvider(), fewer, nltk_data=nltk).up_to_date is False


# --- CAFE: candidates and the export of a verified round -------------------------------------------

@pytest.fixture(scope="module")
def cafe(tmp_path_factory):
    from segbench.flows.cafe.demo import run_cafe_demo
    from segbench.providers import make_provider
    from segbench.settings import load_settings

    root = tmp_path_factory.mktemp("cafe")
    settings = load_settings(data_root=root / "data", work_dir=root / "work")
    provider = make_provider(settings)
    result = run_cafe_demo(settings.data_root, settings.work_dir, provider, seed=0)
    return settings, provider, result


def build_candidates(settings, provider, out: Path | None = None, seed: int = 0, **kw) -> dict:
    from segbench.demo.cafe.sources import generate_demo_cafe
    from segbench.flows.cafe.candidates import build_cafe_candidates
    from segbench.flows.cafe.demo import DEMO_PARAMS
    from segbench.providers.cafe.editors import make_image_editor
    from segbench.schemas.cafe import CafeParams

    sources = generate_demo_cafe(settings.work_dir / "demo-cafe", seed=0)
    return build_cafe_candidates(sources, out or settings.data_root / "cafe_candidates", provider,
                                 CafeParams(seed=seed, **DEMO_PARAMS), editor=make_image_editor(settings),
                                 nltk_data=settings.work_dir / "nltk_data", **kw)


def test_cafe_candidates_and_export_are_no_ops_the_second_time(cafe):
    from segbench.flows.cafe.demo import VERIFICATION_KEY
    from segbench.flows.cafe.export import build_cafe

    settings, provider, result = cafe
    assert result.candidates.up_to_date is False and result.candidates.units.computed > 0
    candidates, export = settings.data_root / "cafe_candidates", settings.data_root / "cafe"
    before = snapshot(candidates), snapshot(export)
    again = build_candidates(settings, provider)
    assert_no_op(again, candidates, before[0])
    assert again.counts == result.candidates.counts and again.usage.calls == 0
    exported = build_cafe(settings.data_root, VERIFICATION_KEY)
    assert_no_op(exported, export, before[1])
    assert exported.counts == result.export.counts and exported.files == result.export.files


def test_cafe_force_rebuilds_byte_identically(cafe):
    from segbench.flows.cafe.demo import VERIFICATION_KEY
    from segbench.flows.cafe.export import build_cafe

    settings, provider, _ = cafe
    candidates, export = settings.data_root / "cafe_candidates", settings.data_root / "cafe"
    before = snapshot(candidates), snapshot(export)
    forced = build_candidates(settings, provider, force=True)
    assert_forced_rebuild_is_identical(forced, candidates, before[0])
    assert forced.usage.cache_hits > 0 and forced.usage.calls == 0  # plans replayed from the cache
    # The candidates' bytes did not change, so the verification round still applies to them.
    assert_forced_rebuild_is_identical(build_cafe(settings.data_root, VERIFICATION_KEY, force=True), export,
                                       before[1])


def test_cafe_a_changed_param_or_answer_rebuilds(cafe, tmp_path):
    from segbench.annotation_ui.rounds import RoundStore
    from segbench.flows.cafe.demo import VERIFICATION_KEY
    from segbench.flows.cafe.export import build_cafe

    settings, provider, _ = cafe
    assert build_candidates(settings, provider, out=tmp_path / "reseeded", seed=1).up_to_date is False
    copy = tmp_path / "cafe"
    shutil.copytree(settings.data_root / "cafe", copy)
    assert build_cafe(settings.data_root, VERIFICATION_KEY, out=copy).up_to_date is True
    answers = RoundStore(settings.data_root / "rounds").answers_path(VERIFICATION_KEY)
    original = answers.read_bytes()
    try:
        answers.write_bytes(original + b"\n")  # the same answers, other bytes: still an input change
        assert build_cafe(settings.data_root, VERIFICATION_KEY, out=copy).up_to_date is False
    finally:
        answers.write_bytes(original)


# --- SPIN: the taxonomy and the dataset next to it --------------------------------------------------

@pytest.fixture(scope="module")
def spin(tmp_path_factory):
    import yaml

    from segbench.core.errors import ImportPolicy
    from segbench.core.io import atomic_write_text, write_json
    from segbench.demo.spin.world import demo_taxonomy, generate_demo_spin, read_truth, truth_resolved
    from segbench.flows.spin.build import build_spin
    from segbench.flows.spin.taxonomy import build_spin_taxonomy
    from segbench.providers.cache import CachedProvider
    from segbench.providers.wordnet_provider import WordNetProvider
    from segbench.registry import offline_answers
    from segbench.schemas.spin import SpinBuildParams
    from segbench.tasks.spin.partimagenet import read_partimagenet

    root = tmp_path_factory.mktemp("spin")
    provider = CachedProvider(WordNetProvider(root / "nltk_data", answers=offline_answers()), root / "cache")
    taxonomy = build_spin_taxonomy(root / "taxonomy" / "spin", provider)

    demo = generate_demo_spin(root / "source", seed=0)
    source = read_partimagenet(demo.root, policy=ImportPolicy())
    resolved = truth_resolved(read_truth(demo.truth_path), {i: (im.height, im.width) for i, im in source.images.items()})
    data = root / "data"
    atomic_write_text(data / "spin" / "taxonomy.yaml",
                      yaml.safe_dump(demo_taxonomy().model_dump(mode="json"), sort_keys=False))
    write_json(data / "spin" / "crowd" / "resolved.json", resolved)
    params = SpinBuildParams(cap_per_supercategory=8, seed=0)
    dataset = build_spin(demo.root, data, params)
    return provider, taxonomy, demo.root, data, params, dataset


def test_spin_taxonomy_second_run_is_a_no_op_and_force_rebuilds_identically(spin):
    from segbench.flows.spin.taxonomy import build_spin_taxonomy

    provider, first, *_ = spin
    out = Path(first.paths["taxonomy"]).parent
    assert first.up_to_date is False and "First build" in first.diff_markdown
    before = snapshot(out)
    again = build_spin_taxonomy(out, provider)
    assert_no_op(again, out, before)
    assert again.counts == first.counts and again.unused_rules == first.unused_rules
    assert "No changes" in again.diff_markdown
    forced = build_spin_taxonomy(out, provider, force=True)
    assert forced.up_to_date is False and "No changes" in forced.diff_markdown
    after = snapshot(out)
    assert {k: v[1] for k, v in after.items()} == {k: v[1] for k, v in before.items()}  # the diff is the first one
    assert after["taxonomy.manifest.json"][0] != before["taxonomy.manifest.json"][0]


def test_spin_taxonomy_a_changed_edit_file_rebuilds(spin, tmp_path):
    from segbench.flows.spin.taxonomy import build_spin_taxonomy
    from segbench.tasks.spin.taxonomy_edits import default_edits_path

    provider, first, *_ = spin
    out = tmp_path / "spin"
    shutil.copytree(Path(first.paths["taxonomy"]).parent, out)
    edits = tmp_path / "edits.yaml"
    edits.write_bytes(default_edits_path().read_bytes())
    changed = build_spin_taxonomy(out, provider, edits=edits)  # another edit file (same rules): a rebuild
    assert changed.up_to_date is False
    assert build_spin_taxonomy(out, provider, edits=edits).up_to_date is True


def test_spin_dataset_second_run_is_a_no_op_and_force_rebuilds_identically(spin):
    from segbench.flows.spin.build import build_spin

    *_, source, data, params, first = spin
    out = data / "spin" / "dataset"
    assert first.up_to_date is False
    before, taxonomy = snapshot(out), (data / "spin" / "taxonomy.yaml").read_bytes()
    again = build_spin(source, data, params)
    assert_no_op(again, out, before)
    assert again.counts == first.counts and again.skipped == first.skipped
    assert_forced_rebuild_is_identical(build_spin(source, data, params, force=True), out, before)
    assert (data / "spin" / "taxonomy.yaml").read_bytes() == taxonomy  # spin/ keeps what it holds besides


def test_spin_dataset_a_changed_input_or_param_rebuilds(spin, tmp_path):
    from segbench.flows.spin.build import build_spin

    *_, source, data, params, _ = spin
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    assert build_spin(source, copy, params).up_to_date is True
    assert build_spin(source, copy, params.model_copy(update={"seed": 1})).up_to_date is False
    resolved = copy / "spin" / "crowd" / "resolved.json"
    resolved.write_bytes(resolved.read_bytes() + b"\n")
    assert build_spin(source, copy, params.model_copy(update={"seed": 1})).up_to_date is False
