"""A SPIN subpart round through the files backend, followed up on its tied subparts: the follow-up's
ingest re-imports the first round with the merged answers, so the resolved subparts gain the ones
the tie-break decided; re-ingesting either round changes no byte."""

from __future__ import annotations

import json

import pytest
import yaml
from support.cli import run

from segbench.core.io import atomic_write_text, read_json
from segbench.demo.crowd import write_results_csv
from segbench.demo.spin.world import demo_taxonomy, generate_demo_spin, read_truth
from segbench.schemas.spin import SpinBuildParams, read_resolved

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

PAIR = ("Quadruped", "Head")  # subparts in the demo taxonomy: Ears, Eyes, Nose


def _rows(round_key: str, items, truth, worker: str, nose: str) -> list[dict[str, str]]:
    rows = []
    for item in items:
        part = item.data["part_ann_id"]
        names = ["Eyes", *(["Nose"] if nose == "yes" else [])]
        polygons = [{"label": name, "points": [[x, y] for x, y in zip(flat[0::2], flat[1::2], strict=True)]}
                    for name in names for flat in truth[(part, name)]]
        rows.append({"WorkerId": worker, "AssignmentId": f"{round_key}-{worker}-{item.item_id}",
                     "Input.item_id": item.item_id, "Answer.part_visible": "yes", "Answer.has_eyes": "yes",
                     "Answer.has_ears": "no", "Answer.has_nose": nose, "Answer.polygons": json.dumps(polygons)})
    return rows


def test_a_spin_follow_up_resolves_the_tied_subparts(tmp_path):
    from segbench.flows.spin.build import spin_round_items
    from segbench.flows.spin.crowd import create_spin_rounds

    demo = generate_demo_spin(tmp_path / "pin", seed=0, split_sizes={"train": 2, "val": 1, "test": 1})
    data = tmp_path / "data"
    atomic_write_text(data / "spin" / "taxonomy.yaml",
                      yaml.safe_dump(demo_taxonomy().model_dump(mode="json"), sort_keys=False))
    truth = {(row["part_ann_id"], row["subpart"]): row["polygons"] for row in read_truth(demo.truth_path)}
    items = spin_round_items(demo.root, data, SpinBuildParams())[PAIR]
    (round_,) = create_spin_rounds(data, items, key_prefix="spin", dataset_version="test", backend="files",
                                   overlap=2)
    key, follow = round_.key, f"{round_.key}-f"
    assert {item.batch for item in round_.items} == {"Quadruped"}

    run(tmp_path, "rounds", "launch", key, "--batch", "Quadruped")
    results = data / "rounds" / key / "results"
    write_results_csv([*_rows(key, round_.items, truth, "W1", "yes"), *_rows(key, round_.items, truth, "W2", "no")],
                      results / "batch.csv")
    first = json.loads(run(tmp_path, "--json", "rounds", "ingest", key).stdout)
    resolved_path = data / "spin" / "crowd" / "resolved.json"
    assert {r.subpart for r in read_resolved(resolved_path)} == {"Eyes"}  # the nose is tied: not resolved

    created = json.loads(run(tmp_path, "--json", "rounds", "follow-up", key, follow, "--where", "tie").stdout)
    assert sorted(created["matched"]) == sorted(item.item_id for item in round_.items)
    run(tmp_path, "rounds", "launch", follow)
    followed = [i for i in round_.items if i.item_id in created["matched"]]
    write_results_csv(_rows(follow, followed, truth, "W3", "yes"), data / "rounds" / follow / "results" / "more.csv")
    second = json.loads(run(tmp_path, "--json", "rounds", "ingest", follow).stdout)
    assert set(second["reports"]) == {"raw", "report", "resolved"}
    assert second["reports"]["raw"].endswith(f"{key}.raw.jsonl")  # the chain's first round, re-imported

    resolved = read_resolved(resolved_path)
    assert {r.subpart for r in resolved} == {"Eyes", "Nose"}
    # Every vote of the chain counts: W1 and W2 in the first round, W3 in the follow-up.
    assert all(r.workers == ["worker:W1", "worker:W2", "worker:W3"] for r in resolved if r.subpart == "Nose")
    decided = {i["item_id"]: i["decided_by"] for i in read_json(data / "rounds" / f"{follow}.answers.json")["items"]}
    assert set(decided.values()) == {follow}

    outputs = sorted((data / "spin" / "crowd").glob("*")) + sorted((data / "rounds").glob("*.answers.json"))
    before = {p.name: p.read_bytes() for p in outputs}
    for again in (key, follow):
        run(tmp_path, "rounds", "ingest", again)
        assert {p.name: p.read_bytes() for p in outputs} == before
    assert first["counts"]["answers"] == 2 * len(round_.items)
