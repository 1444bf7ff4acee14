"""SPIN's commands in the order a user runs them: taxonomy, rounds, launch, import answers, build."""

from __future__ import annotations

import pytest
from support.cli import run

from segbench.core.io import read_json, write_json
from segbench.demo.spin.crowd import simulate_crowd_rows
from segbench.demo.spin.world import generate_demo_spin, read_truth
from segbench.schemas.rounds import Round
from segbench.schemas.spin import load_taxonomy

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def test_spin_from_taxonomy_to_dataset_through_the_command_line(tmp_path):
    world = generate_demo_spin(tmp_path / "source", seed=0)
    data = tmp_path / "data"

    taxonomy = run(tmp_path, "build", "spin-taxonomy").output
    # WordNet against §8.2; precision counts the proposals that passed the visibility check.
    assert "SPIN taxonomy" in taxonomy and "24.14% / 15.91% of 203" in taxonomy
    assert "- Car-Body: Brake System, Cooling System, Electrical System, First Gear" in taxonomy
    assert "taxonomy.png" in read_json(data / "spin" / "taxonomy.manifest.json")["outputs"]  # Fig. 2 as a figure
    created = run(tmp_path, "rounds", "create", "spin_subparts", "s", "--partimagenet", str(world.root), "--backend", "files")
    assert "SPIN rounds" in created.output
    batch = run(tmp_path, "rounds", "create", "spin_subparts", "b", "--partimagenet", str(world.root), "--backend", "files",
                "--supercategory", "Car")
    car = sorted(p.stem for p in (data / "rounds").glob("b-*.json"))
    assert car == ["b-car-body-p1", "b-car-body-p2", "b-car-body-p3", "b-car-side_mirror", "b-car-tire"], batch.output
    assert "unknown super-category 'Cars'" in str(run(tmp_path, "rounds", "create", "spin_subparts", "c",
                                                      "--partimagenet", str(world.root), "--supercategory", "Cars",
                                                      code=1).exception)
    key = "s-car-body-p1"  # doors and windows: masks large enough to be told copies
    assert "Round launched" in run(tmp_path, "rounds", "launch", key).output

    round_ = Round.model_validate(read_json(data / "rounds" / f"{key}.json"))
    rows = simulate_crowd_rows(round_.items, read_truth(world.truth_path), load_taxonomy(data / "spin" / "taxonomy.yaml"))
    first = rows[0]["WorkerId"]  # two more accounts paste the first worker's answers
    copies = [{**row, "WorkerId": f"{first}-copy{k}", "AssignmentId": f"{row['AssignmentId']}-copy{k}"}
              for k in (1, 2) for row in rows if row["WorkerId"] == first]
    results = write_json(tmp_path / "results.json", rows + copies)
    imported = run(tmp_path, "spin", "import", "--round", key, "--results", str(results))
    assert f"SPIN round {key}" in imported.output and "subparts resolved" in imported.output
    report = read_json(data / "spin" / "crowd" / f"{key}.report.json")
    copied = [f"worker:{first}", f"worker:{first}-copy1", f"worker:{first}-copy2"]
    assert report["copies"] and all(c["annotators"] == copied for c in report["copies"])
    assert "copied masks (counted once)" in imported.output
    assert (data / "spin" / "crowd" / "resolved.json").is_file()

    built = run(tmp_path, "build", "spin", "--partimagenet", str(world.root))
    assert "SPIN →" in built.output and (data / "spin" / "dataset" / "manifest.json").is_file()
    assert "Up to date" in run(tmp_path, "build", "spin", "--partimagenet", str(world.root)).output


def test_rounds_ask_a_restricted_subpart_only_of_its_classes(tmp_path):
    world = generate_demo_spin(tmp_path / "source", seed=0)
    for split in ("train", "val", "test"):  # every other car becomes an ambulance (its wnid names the class)
        path = world.root / "annotations" / f"{split}.json"
        coco = read_json(path)
        cars = [image for image in coco["images"] if image["file_name"].startswith("n02930766_")]
        for image in cars[::2]:
            renamed = image["file_name"].replace("n02930766_", "n02701002_")
            (world.root / "images" / split / image["file_name"]).rename(world.root / "images" / split / renamed)
            image["file_name"] = renamed
        write_json(path, coco)
    run(tmp_path, "build", "spin-taxonomy")
    created = run(tmp_path, "rounds", "create", "spin_subparts", "r", "--partimagenet", str(world.root), "--backend",
                  "files", "--supercategory", "Car", "--reward-per-subpart", "0.05", "--overlap", "2")
    asked: dict[str, set[str]] = {}
    cost = 0.0
    for path in (tmp_path / "data" / "rounds").glob("r-car-*.json"):
        for item in Round.model_validate(read_json(path)).items:
            if "body-p" in path.name:
                asked.setdefault(item.data["object_class"], set()).update(item.data["subparts"])
            round_ = Round.model_validate(read_json(path))
            assert item.data["reward"] == round(0.05 * len(round_.config.params["subparts"]), 2)  # 5¢ per possible
            cost += 2 * item.data["reward"]
    assert f"Estimated cost: {cost:.2f} USD for 2 answers per task at 0.05 USD per possible subpart" in created.output
    assert {"Siren", "Door"} <= asked["ambulance"]  # taxonomy_edits.yaml: a siren on ambulances and police vans
    assert "Door" in asked["cab"] and asked["cab"].isdisjoint({"Siren", "Plow", "Hopper", "Roll Cage"})
