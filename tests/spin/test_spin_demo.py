"""The SPIN demo flow end to end, offline: WordNet taxonomy, files-backend rounds answered by the
simulated crowd, the dataset, and the parent-mask baseline's evaluation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from segbench.core.errors import ImportPolicy
from segbench.core.masks import rle_iou
from segbench.demo.spin.world import read_truth, truth_resolved
from segbench.schemas.spin import load_taxonomy, read_resolved
from segbench.tasks.spin.partimagenet import read_partimagenet

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from segbench.flows.spin.demo import run_spin_demo
    from segbench.providers.cache import CachedProvider
    from segbench.providers.wordnet_provider import WordNetProvider
    from segbench.registry import offline_answers

    tmp = tmp_path_factory.mktemp("spin-demo")
    provider = CachedProvider(WordNetProvider(tmp / "work" / "nltk_data", answers=offline_answers()), tmp / "cache")
    return run_spin_demo(tmp / "data", tmp / "work", tmp / "reports", provider, seed=0), tmp


def test_outputs_exist(demo):
    result, tmp = demo
    for name, path in result.paths.items():
        assert path.exists(), name
    dataset = result.paths["SPIN"]
    for split in ("train", "val", "test"):
        for level in ("wholes", "parts", "subparts"):
            assert (dataset / f"spin_{split}_{level}.json").is_file()
    assert (result.paths["SPIN statistics"] / "subpart_boxplots.png").stat().st_size > 0
    # Files-backend rounds per (super-category, part) that has subparts, each ingested; a part with more
    # than 8 subparts (the paper's Quadruped-Head has 10, Car-Body 23) spans several rounds (pages).
    assert "demo-spin-car-tire" in result.rounds
    assert {"demo-spin-quadruped-head-p1", "demo-spin-quadruped-head-p2"} <= set(result.rounds)
    assert [k for k in result.rounds if k.startswith("demo-spin-car-body")] == [
        "demo-spin-car-body-p1", "demo-spin-car-body-p2", "demo-spin-car-body-p3"]
    for key in result.rounds:
        assert json.loads((tmp / "data" / "rounds" / f"{key}.json").read_text())["status"] == "ingested"
    crowd = result.crowd
    assert crowd["answers"] == 3 * crowd["items"] and crowd["resolved"] > 0
    assert sum(n for name, n in crowd.items() if name.startswith("flag ")) > 0  # the bad polygons were caught
    assert result.spin.counts.composition.overall.subparts.annotations == crowd["resolved"]


def test_resolved_subparts_are_close_to_the_demo_truth(demo):
    result, tmp = demo
    source_root = result.paths["SPIN demo source (inputs)"]
    source = read_partimagenet(source_root, policy=ImportPolicy())
    taxonomy = load_taxonomy(result.paths["SPIN taxonomy"])
    sizes = {i: (im.height, im.width) for i, im in source.images.items()}
    truth = truth_resolved(read_truth(source_root / "demo_truth.json"), sizes)
    # The crowd is asked only what the WordNet taxonomy lists: compare on what both name.
    asked = [r for r in truth if r["subpart"] in {s.name for s in taxonomy.subparts_for(r["object"], r["part"],
                                                                                         r["object_class"])}]
    assert len(asked) >= 0.4 * len(truth)
    expected = {(r["part_ann_id"], r["subpart"]): r for r in asked}
    found = {(r.part_ann_id, r.subpart): r for r in read_resolved(result.paths["SPIN crowd answers"])}
    assert len(found.keys() & expected.keys()) >= 0.9 * len(expected)
    assert len(found.keys() - expected.keys()) <= 0.05 * len(expected)
    ious = [float(rle_iou([found[k].segmentation.model_dump()], [expected[k]["segmentation"]])[0, 0])
            for k in found.keys() & expected.keys()]
    assert np.median(ious) >= 0.7


def test_the_baseline_is_consistent_but_not_accurate(demo):
    result, _ = demo
    metrics = json.loads((result.paths["SPIN evaluation report"].parent / "metrics.json").read_text())["metrics"]
    assert metrics["num_images"] == result.evaluation.summary.num_images == 8  # the test split
    general = metrics["prompts"]["general"]
    spcs, secs = general["spcs"], general["secs"]
    assert {"s2p", "p2o", "mean"} <= set(spcs) and "score" in secs
    # Each prediction is its parent's prediction: perfectly contained, so SpCS is 1 ...
    assert spcs["s2p"]["score"] == pytest.approx(1.0) and spcs["p2o"]["score"] == pytest.approx(1.0)
    levels = general["levels"]
    # ... while a subpart predicted as its whole part scores a low IoU, and objects are exact.
    assert levels["wholes"]["miou"] == pytest.approx(1.0)
    assert levels["subparts"]["miou"] < levels["parts"]["miou"] < 1.0
    assert 0.0 <= secs["score"] < 1.0  # sibling parts all predicting the object break the label maps


def test_a_second_run_gives_the_same_files(demo):
    from segbench.core.io import sha256_tree
    from segbench.flows.spin.demo import run_spin_demo
    from segbench.providers.cache import CachedProvider
    from segbench.providers.wordnet_provider import WordNetProvider
    from segbench.registry import offline_answers

    result, tmp = demo
    data = tmp / "data"
    spin = data / "spin"
    watched = [spin / "taxonomy.yaml", spin / "crowd" / "resolved.json", *sorted((spin / "crowd").glob("*.raw.jsonl")),
               *sorted((data / "rounds").glob("*.answers.json")), result.paths["SPIN evaluation report"].parent /
               "metrics.json"]
    before = {path: path.read_bytes() for path in watched}
    dataset = sha256_tree(spin / "dataset", exclude=["manifest.json"])
    # Same roots, a replay-only cache: the taxonomy answers come back from the cache, rounds are replaced.
    provider = CachedProvider(WordNetProvider(tmp / "work" / "nltk_data", answers=offline_answers()), tmp / "cache",
                              replay_only=True)
    again = run_spin_demo(data, tmp / "work", tmp / "reports", provider, seed=0)
    assert again.rounds == result.rounds and again.crowd == result.crowd
    assert {path: path.read_bytes() for path in watched} == before
    assert sha256_tree(spin / "dataset", exclude=["manifest.json"]) == dataset
