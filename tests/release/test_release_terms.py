"""Releases of the demo build made with a release.toml that states no image terms (each source's own
terms apply), and a Waterbirds-seg release whose maker withholds the images: what every file says of
licences, which image bytes it holds, and what the card, datasheet and Croissant state."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image
from support.cli import run

from segbench.core.release.licences import HUB_LICENCES

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

DATASETS = ("coco_cd", "waterbirds", "cafe", "spin", "vocab")
REQUIRED = ('annotations_license = "cc-by-4.0"\nintended_uses = "evaluation"\nsocial_impact = "none known"\n'
            'personal_information = "none"\nmaintainer = "Data Team <data@example.org>"\n')
WITHHELD_TERMS = ('[images]\nlicense = "LicenseRef-Waterbirds-sources"\nname = "CUB-200-2011 and Places365 terms"\n'
                  'redistributable = false\n')


@pytest.fixture(scope="session")
def releases(demo_project, tmp_path_factory, worker_id) -> dict[str, Path]:
    """Every dataset released with the sources' own terms, and ``waterbirds_withheld``: made once per test
    run (under pytest-xdist the first worker to ask makes them, the others wait and read them)."""
    from filelock import FileLock

    project, _ = demo_project
    root = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    out = root / "releases-under-source-terms"
    names = [*DATASETS, "waterbirds_withheld"]
    with FileLock(str(root / "releases.lock")):
        if not (out / "done").is_file():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            (out / "sources.toml").write_text(REQUIRED)
            (out / "withheld.toml").write_text(REQUIRED + WITHHELD_TERMS)
            with pytest.MonkeyPatch.context() as patch:
                patch.chdir(project)  # a release only reads the project
                for name in names:
                    info = "withheld.toml" if name == "waterbirds_withheld" else "sources.toml"
                    run(project, "release", name.removesuffix("_withheld"), "--out", str(out / name),
                        "--info", str(out / info))
            (out / "done").write_text("")
    return {name: out / name for name in names}


def _header(folder: Path) -> dict:
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])


def _rows(folder: Path) -> list[dict]:
    return [row for shard in sorted(folder.glob("data/*/*.parquet")) for row in pq.read_table(shard).to_pylist()]


def _row_id(row: dict) -> str:
    return str(next(row[key] for key in ("pair_id", "image_id") if key in row))


def _withheld_bytes(project: Path, dataset: str, folder: Path) -> list[bytes]:
    """The build's bytes of every image the release says it withholds."""
    withheld = set(json.loads((folder / "licenses.json").read_text())["withheld_images"])
    rows = {_row_id(row): row for row in _rows(folder) if "license_id" in row}
    if dataset == "cafe":
        images = json.loads((project / "data/cafe/CAFE.json").read_text())["images"]
        names = {str(im["id"]): im["file_name"] for im in images}
        return [(project / "data/cafe/images" / names[i]).read_bytes() for i in withheld]
    if dataset.startswith("waterbirds"):
        return [(project / f"data/waterbirds_seg/images/{int(i):012d}.png").read_bytes() for i in withheld]
    if dataset == "spin":
        return [(project / "data/spin/dataset/images" / rows[i]["file_name"]).read_bytes() for i in withheld]
    return []


def _cells(folder: Path) -> list[bytes]:
    """Every byte string in every parquet cell (images, masks)."""
    found = []
    for row in _rows(folder):
        for value in row.values():
            if isinstance(value, dict) and isinstance(value.get("bytes"), bytes):
                found.append(value["bytes"])
    return found


@pytest.mark.parametrize("dataset", [*DATASETS, "waterbirds_withheld"])
def test_no_withheld_image_is_in_any_file_or_parquet_cell(demo_project, releases, dataset):
    project, _ = demo_project
    folder = releases[dataset]
    withheld = _withheld_bytes(project, dataset, folder)
    if dataset in ("cafe", "spin", "waterbirds_withheld"):
        assert withheld, "the demo has images this release must withhold"
    cells = _cells(folder)
    files = [path.read_bytes() for path in folder.rglob("*") if path.is_file()]
    for image in withheld:
        assert image not in cells
        assert not any(image in data for data in files)
    assert not list(folder.glob("native/images")), "no evaluator reads images: none are copied"
    if dataset == "waterbirds_withheld":
        assert all(row["image"] is None for row in _rows(folder))


@pytest.mark.parametrize("dataset", [*DATASETS, "waterbirds_withheld"])
def test_card_croissant_licences_and_rows_state_one_computed_licence(releases, dataset):
    folder = releases[dataset]
    terms = json.loads((folder / "licenses.json").read_text())
    header = _header(folder)
    card = {key: header[key] for key in ("license", "license_name", "license_link") if key in header}
    assert card == terms["release"]
    shipped = [c for c in terms["components"] if c["in_release"]]
    ids = {c["id"] for c in shipped}
    if card["license"] != "other":  # one licence only when every part in the release has it
        assert ids == {card["license"]}
    else:
        assert card["license_link"] == "LICENSES.md"
    croissant = json.loads((folder / "croissant.json").read_text())
    licence_list = croissant["license"] if isinstance(croissant["license"], list) else [croissant["license"]]
    assert set(licence_list) == {HUB_LICENCES.get(c["id"]) or c["url"] or c["id"] for c in shipped}
    markdown = (folder / "LICENSES.md").read_text()
    for component in terms["components"]:
        line = next(line for line in markdown.splitlines() if line.startswith(f"| {component['applies_to']} |"))
        assert f"`{component['id']}`" in line
        assert line.rstrip(" |").endswith("yes") == component["in_release"]
        if not component["redistributable"] and component["kind"] == "images":
            assert not component["in_release"]
    image_ids = {c["id"] for c in terms["components"] if c["kind"] == "images"}
    for row in _rows(folder):
        if "license_id" in row:
            assert terms["images"][_row_id(row)] == row["license_id"]
            assert set(row["license_id"].split(" AND ")) <= image_ids


def test_mixed_and_composite_licences(releases):
    coco = json.loads((releases["coco_cd"] / "licenses.json").read_text())
    assert coco["release"]["license"] == "other"
    assert {"cc-by-nc-sa-2.0", "cc-by-nc-2.0", "cc-by-2.0"} <= {c["id"] for c in coco["components"]}
    assert {c["id"] for c in coco["components"] if c["kind"] == "annotations"} == {"cc-by-4.0"}
    birds = json.loads((releases["waterbirds"] / "licenses.json").read_text())
    assert set(birds["images"].values()) == {"LicenseRef-CUB-200-2011 AND LicenseRef-Places365"}
    withheld = json.loads((releases["waterbirds_withheld"] / "licenses.json").read_text())
    assert set(withheld["images"].values()) == {"LicenseRef-Waterbirds-sources"}
    assert "CUB-200-2011 and Places365 terms" in (releases["waterbirds_withheld"] / "LICENSES.md").read_text()
    cafe = json.loads((releases["cafe"] / "licenses.json").read_text())
    masks = {c["applies_to"]: c["id"] for c in cafe["components"] if c["kind"] == "annotations"}
    assert "target masks copied from LVIS" in masks and "target masks copied from SA-Co" in masks
    assert not any("COCO-Stuff" in c["name"] for c in cafe["components"])


@pytest.mark.parametrize("dataset", DATASETS)
def test_croissant_has_the_rai_vocabulary_the_data_version_and_every_files_sha256(releases, dataset):
    folder = releases[dataset]
    croissant = json.loads((folder / "croissant.json").read_text())
    assert "http://mlcommons.org/croissant/RAI/1.0" in croissant["conformsTo"]
    version = json.loads((folder / "splits.json").read_text())["version"]
    assert croissant["version"] == f"1.0.0+{version}"
    assert "url" not in croissant, "an unpushed release names no address"
    assert any(field in croissant["citeAs"] for field in ("author = {", "howpublished = {", "url = {"))
    assert croissant["rai:dataCollectionTimeFrame"]
    objects = {d["contentUrl"]: d["sha256"] for d in croissant["distribution"] if d["@type"] == "cr:FileObject"}
    for path in folder.rglob("*"):
        if path.is_file() and path.name != "croissant.json":
            relpath = path.relative_to(folder).as_posix()
            assert objects.get(relpath) == hashlib.sha256(path.read_bytes()).hexdigest(), relpath


@pytest.mark.parametrize("dataset", DATASETS)
def test_mlcroissant_and_datasets_read_the_metadata_as_written(releases, dataset):
    """The Croissant and the column types are written without mlcroissant or datasets: both libraries
    read them without an issue and would write exactly the same."""
    import datasets
    import mlcroissant as mlc

    folder = releases[dataset]
    loaded = mlc.Dataset(jsonld=folder / "croissant.json")
    assert not loaded.metadata.ctx.issues.errors and not loaded.metadata.ctx.issues.warnings
    assert loaded.metadata.to_json() == json.loads((folder / "croissant.json").read_text())
    card = {entry["config_name"]: entry["features"] for entry in _header(folder)["dataset_info"]}
    for shard in sorted(folder.glob("data/*/*.parquet")):
        schema = pq.read_schema(shard)
        features = datasets.Features.from_dict(json.loads(schema.metadata[b"huggingface"])["info"]["features"])
        # parquet names a list's items "element", arrow "item": the types are compared by a cast
        assert schema.metadata == features.arrow_schema.metadata and schema.names == list(features), shard
        assert pq.read_table(shard).cast(features.arrow_schema).schema == features.arrow_schema, shard
        assert features._to_yaml_list() in card.values(), f"{shard}: the card's features differ"


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_card_describes_every_field_and_the_datasheet_answers_from_records(releases, dataset):
    folder = releases[dataset]
    card = (folder / "README.md").read_text(encoding="utf-8")
    fields = card.split("## Data fields")[1].split("\n## ")[0]
    features = [f["name"] for f in _header(folder)["dataset_info"][0]["features"]]
    for name in features:
        row = next(line for line in fields.splitlines() if line.startswith(f"| `{name}` |"))
        assert len(row.split(" | ")[-1].strip(" |")) > 10, f"{name} has no description"
    datasheet = (folder / "DATASHEET.md").read_text(encoding="utf-8")
    answered = int(re.search(r"(\d+) of 51 are answered", datasheet).group(1))
    assert answered >= 40
    assert datasheet.count("*Not recorded.*") == 51 - answered
    assert _header(folder)["language"] == ["en"]
    splits = [c["data_files"] for c in _header(folder)["configs"]]
    assert not any(f["split"] == "val" for files in splits for f in files), "the Hub's name is validation"


def test_the_flip_cards_default_to_the_headline_config_and_masks_show_in_colour(releases):
    for dataset in ("coco_cd", "waterbirds"):
        header = _header(releases[dataset])
        assert [c["config_name"] for c in header["configs"] if c.get("default")] == ["rho_0.95"]
        row = pq.read_table(next(releases[dataset].glob("data/balanced/test-*.parquet"))).slice(0, 1).to_pylist()[0]
        mask = Image.open(io.BytesIO(row["mask"]["bytes"]))
        assert mask.mode == "P" and mask.getpalette()[3:6] != [1, 1, 1]


def test_cafe_reports_rejections_and_low_agreement(releases):
    card = (releases["cafe"] / "README.md").read_text(encoding="utf-8")
    assert "not verified, " in card  # a count per reason
    assert "Low agreement (κ < 0.2) on demo-cafe-verification/mask_fits" in card


def test_coco_cd_card_states_the_audit_outcome(releases):
    card = (releases["coco_cd"] / "README.md").read_text(encoding="utf-8")
    assert re.search(r"Context audit `demo-context-audit`: people's majority label agreed with the automatic "
                     r"context on \d+ of \d+ judged", card)
    # The demo's two annotators split on some images; the screened aggregation's model labels them, and the
    # card says so rather than counting them as the people's agreement.
    settled = re.search(r"(\d+) had no majority of the people \((\d+) given a label by the aggregation model\)", card)
    assert settled and int(settled[2]) >= 1
    assert "(people tied; settled by the aggregation model)" in card


def test_spin_states_containment_and_reattaches_its_images(demo_project, releases, tmp_path):
    project, _ = demo_project
    folder = tmp_path / "spin"
    shutil.copytree(releases["spin"], folder)
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "clipped to their parent part" not in card.replace("not clipped to their parent part", "")
    assert re.search(r"\d+ of \d+ subparts lie wholly inside their parent part", card)
    assert "reattach_images.py" in card
    images = project / "data/spin/dataset/images"
    tampered = tmp_path / "images"
    shutil.copytree(images, tampered)
    victim = next(tampered.rglob("*.JPEG"))
    victim.write_bytes(victim.read_bytes() + b"x")
    before = {p: p.read_bytes() for p in folder.glob("data/*/*.parquet")}
    refused = subprocess.run([sys.executable, str(folder / "reattach_images.py"), str(tampered)], capture_output=True,
                             text=True, timeout=300)
    assert refused.returncode == 1 and victim.name in refused.stderr and "nothing was written" in refused.stderr
    assert {p: p.read_bytes() for p in folder.glob("data/*/*.parquet")} == before
    done = subprocess.run([sys.executable, str(folder / "reattach_images.py"), str(images)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [row for row in _rows(folder) if "image" in row]
    assert rows and all(row["image"] for row in rows)
    for row in rows:
        assert row["image"]["bytes"] == (images / row["file_name"]).read_bytes()
    croissant = json.loads((folder / "croissant.json").read_text())
    shards = {d["contentUrl"]: d["sha256"] for d in croissant["distribution"]
              if d.get("contentUrl", "").endswith(".parquet")}
    for path in folder.glob("data/*/*.parquet"):
        assert shards[path.relative_to(folder).as_posix()] == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("dataset", ("coco_cd", "cafe", "spin"))
def test_every_persons_answers_ship_under_pseudonyms_only(demo_project, releases, dataset):
    project, _ = demo_project
    folder = releases[dataset]
    rows = [row for shard in folder.glob("data/answers/*.parquet") for row in pq.read_table(shard).to_pylist()]
    stored = [json.loads(p.read_text()) for p in (project / "data/rounds").glob("*.answers.json")]
    platform_ids = {a["annotator"] for data in stored for a in data["answers"]}
    assert rows and {row["worker"] for row in rows} <= {f"worker-{n:04d}" for n in range(1, len(platform_ids) + 1)}
    cells = json.dumps(_rows(folder), default=str) + "".join(
        p.read_text(errors="ignore") for p in folder.rglob("*") if p.is_file() and p.suffix != ".parquet")
    for platform_id in platform_ids:
        bare = platform_id.split(":")[-1]
        assert platform_id not in cells and (len(bare) < 8 or bare not in cells)  # "W2" occurs in any JPEG
    round_keys = {row["round"] for row in rows}
    for key in round_keys:
        answers = json.loads((project / f"data/rounds/{key}.answers.json").read_text())["answers"]
        assert sum(row["round"] == key for row in rows) == len(answers)


def test_the_reattach_script_refuses_a_missing_folder_and_a_folder_without_a_release(releases, tmp_path):
    script = releases["spin"] / "reattach_images.py"
    missing = subprocess.run([sys.executable, str(script), str(tmp_path / "nowhere")], capture_output=True, text=True,
                             timeout=120)
    assert missing.returncode == 2 and "is not a folder" in missing.stderr and "Traceback" not in missing.stderr
    empty = subprocess.run([sys.executable, str(script), str(tmp_path), "--release", str(tmp_path)],
                           capture_output=True, text=True, timeout=120)
    assert empty.returncode == 2 and "holds no data/*/*.parquet" in empty.stderr and "Traceback" not in empty.stderr
