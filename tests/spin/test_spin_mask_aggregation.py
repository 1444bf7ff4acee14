"""``spin import --mask-aggregation``: crowd-kit's segmentation aggregate beside the stated medoid rule,
run as a user runs it, on three workers of whom one draws off target."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.cli import run

from segbench.annotation_ui.rounds import RoundStore
from segbench.core.io import read_json
from segbench.core.masks import bitmap_to_rle, rle_to_bitmap
from segbench.demo.crowd import write_results_csv
from segbench.flows.spin.rounds import spin_rounds
from segbench.schemas.rounds import RoundItem
from segbench.schemas.spin import Taxonomy
from segbench.tasks.spin.taxonomy import taxonomy_yaml

H, W = 20, 20


def _taxonomy() -> Taxonomy:
    prov = {"proposed_by": "wordnet:wordnet-3.0", "edit": "kept", "by": None, "renamed_from": None}
    return Taxonomy.model_validate({
        "version": 1, "provider": {"name": "wordnet", "model": "wordnet-3.0", "question_version": "1"},
        "edits": {"file": "e.yaml", "sha256": "0" * 64},
        "parts": [{"object": "Reptile", "part": "Torso", "partimagenet_id": 21, "subparts": [
            {"name": "Back", "category": "Reptile-Torso-Back", "objects": None, "provenance": prov},
            {"name": "Shell", "category": "Reptile-Torso-Shell", "objects": None, "provenance": prov}]}]})


def _square(label, x0, y0, x1, y1):
    return {"label": label, "points": [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]}


def _row(worker, item, has, polygons):
    return {"WorkerId": worker, "AssignmentId": f"A-{worker}-{item}", "Input.item_id": item,
            "Answer.part_visible": "yes", **{f"Answer.has_{k.lower()}": v for k, v in has.items()},
            "Answer.polygons": json.dumps(polygons)}


def _project(tmp_path):
    """A SPIN round of two items on a whole-image part, and the workers' answers.

    Item i1, Shell: W1 draws x 0–10, W2 the same square moved 2 px right (x 2–12), W3 a square off
    target (x 14–18, y 14–18, still inside the part, so not flagged). Item i2, Back: W1 and W2 draw two
    squares that do not touch.
    """
    data = tmp_path / "data"
    (data / "spin").mkdir(parents=True)
    (data / "spin" / "taxonomy.yaml").write_text(taxonomy_yaml(_taxonomy()))
    part = bitmap_to_rle(np.ones((H, W), dtype=np.uint8))
    fields = {"image_id": 1, "object": "Reptile", "object_class": "box turtle", "part": "Torso", "part_rle": part}
    items = [RoundItem(item_id=f"i{n}", image=f"spin/tasks/i{n}.png", width=W, height=H,
                       data={**fields, "part_ann_id": n}) for n in (1, 2)]
    (round_,) = spin_rounds(items, _taxonomy(), key_prefix="s", dataset_version="v", backend="files", now="t")
    RoundStore(data / "rounds").create(round_)
    rows = [_row("W1", "i1", {"Shell": "yes", "Back": "no"}, [_square("Shell", 0, 0, 10, 10)]),
            _row("W2", "i1", {"Shell": "yes", "Back": "no"}, [_square("Shell", 2, 0, 12, 10)]),
            _row("W3", "i1", {"Shell": "yes", "Back": "no"}, [_square("Shell", 14, 14, 18, 18)]),
            _row("W1", "i2", {"Shell": "no", "Back": "yes"}, [_square("Back", 0, 0, 5, 5)]),
            _row("W2", "i2", {"Shell": "no", "Back": "yes"}, [_square("Back", 10, 10, 15, 15)])]
    results = tmp_path / "results.json"
    results.write_text(json.dumps(rows))
    return round_.key, results, data / "spin" / "crowd"


def _import(tmp_path, key, results, *options, code=0):
    return run(tmp_path, "spin", "import", "--round", key, "--results", str(results), *options, code=code)


def _shell(crowd):
    (shell,) = [r for r in read_json(crowd / "resolved.json") if r["subpart"] == "Shell"]
    return shell, rle_to_bitmap(shell["segmentation"])


def test_em_aggregates_the_agreeing_workers_where_the_medoid_rule_picks_one_of_them(tmp_path):
    key, results, crowd = _project(tmp_path)

    _import(tmp_path, key, results)
    shell, mask = _shell(crowd)
    # The medoid rule: W1 and W2 tie on mean IoU (W3 overlaps neither), so W1's own square is chosen.
    assert (shell["area"], shell["polygons"], shell["rule"]) == (100, 1, "majority-yes-of-visible/medoid-mask/v2")
    assert mask[:10, :10].all() and not mask[:, 10:].any()
    report = read_json(crowd / f"{key}.report.json")
    assert "mask_aggregation" not in report and "empty_aggregate" not in report

    out = _import(tmp_path, key, results, "--mask-aggregation", "em").output
    shell, mask = _shell(crowd)
    # EM trusts W1 and W2, who agree, and not W3: the union of their squares, without W3's.
    assert (shell["area"], shell["polygons"]) == (120, 1)
    assert mask[:10, :12].all() and not mask[14:18, 14:18].any()
    assert shell["rule"] == "majority-yes-of-visible/crowdkit-segmentation-em/v1" and shell["agreement"] == 1.0
    assert shell["workers"] == ["worker:W1", "worker:W2", "worker:W3"]
    # i2's two "yes" squares share no pixel: EM's aggregate is empty, so Back of i2 is not resolved.
    assert [r["subpart"] for r in read_json(crowd / "resolved.json")] == ["Shell"]
    report = read_json(crowd / f"{key}.report.json")
    assert report["mask_aggregation"] == "em" and report["rule"] == shell["rule"]
    assert report["empty_aggregate"] == [{"image_id": 1, "part_ann_id": 2, "subpart": "Back",
                                          "yes": ["worker:W1", "worker:W2"]}]
    assert "empty aggregate masks (not resolved)" in out

    _import(tmp_path, key, results, "--mask-aggregation", "majority")
    shell, mask = _shell(crowd)
    assert shell["area"] == 80 and mask[:10, 2:10].all()  # pixels drawn by at least two of the three


def test_a_rerun_with_the_same_method_changes_no_byte(tmp_path):
    key, results, crowd = _project(tmp_path)
    _import(tmp_path, key, results, "--mask-aggregation", "em")
    first = {p.name: p.read_bytes() for p in sorted(crowd.iterdir())}
    _import(tmp_path, key, results, "--mask-aggregation", "em")
    assert {p.name: p.read_bytes() for p in sorted(crowd.iterdir())} == first


def test_an_unknown_method_is_refused_before_any_work(tmp_path):
    key, results, crowd = _project(tmp_path)
    refused = _import(tmp_path, key, results, "--mask-aggregation", "median", code=2)
    assert "median" in refused.output and not crowd.exists()
    help_text = run(tmp_path, "spin", "import", "--help").output
    assert all(choice in help_text for choice in ("medoid", "em", "majority", "rasa"))


def test_stated_the_medoid_rules_former_name_still_works_and_says_its_new_name(tmp_path):
    key, results, crowd = _project(tmp_path)
    _import(tmp_path, key, results)
    by_default = {p.name: p.read_bytes() for p in sorted(crowd.iterdir())}
    old = _import(tmp_path, key, results, "--mask-aggregation", "stated")
    assert "--mask-aggregation stated is now called medoid" in old.output
    assert {p.name: p.read_bytes() for p in sorted(crowd.iterdir())} == by_default
    _import(tmp_path, key, results, "--mask-aggregation", "medoid")
    assert {p.name: p.read_bytes() for p in sorted(crowd.iterdir())} == by_default


@pytest.mark.integration
@pytest.mark.usefixtures("prefect_harness")
def test_an_ingest_re_imports_with_the_method_of_the_last_import(tmp_path):
    key, results, crowd = _project(tmp_path)
    run(tmp_path, "rounds", "launch", key)
    write_results_csv(json.loads(results.read_text()), tmp_path / "data" / "rounds" / key / "results" / "batch.csv")
    run(tmp_path, "rounds", "ingest", key)
    assert _shell(crowd)[0]["area"] == 100  # the hook's first import: the stated rule

    run(tmp_path, "spin", "import", "--round", key, "--mask-aggregation", "em")
    run(tmp_path, "rounds", "ingest", key)
    shell, _ = _shell(crowd)
    assert (shell["area"], shell["rule"]) == (120, "majority-yes-of-visible/crowdkit-segmentation-em/v1")
