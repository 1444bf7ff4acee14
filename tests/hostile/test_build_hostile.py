"""Hostile inputs and faults for the build commands (and `evaluate coco-cd`'s images), through the command line.

Each case: a segbench error naming the file or item and the fix, no traceback, and the previous
output byte-identical (hashed before and after). Builds run in-process against the session's
Prefect API; a few cases run the console entry point as a user does, for its exit code 2.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.hostile_builds import (
    COCO_CD_OPTIONS,
    WORLD_SIZES,
    bomb_png,
    child_env,
    coco_instances_file,
    console_run,
    copy_tree,
    edit_json,
    invoke,
    refused,
    resize_png,
    tree_hash,
    usage_refused,
    used_coco_image,
)

from segbench.core.errors import AnnotationError, BusyError, InputError, OutputError
from segbench.core.manifest import verify_outputs
from segbench.demo.cafe.sources import generate_demo_cafe
from segbench.demo.waterbirds.birds import generate_demo_birds
from segbench.demo.world import generate_demo_world

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


# --- sources and one good build of each dataset, made once ------------------------------------------


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hostile-sources")
    generate_demo_world(root / "world", seed=1, group_sizes=WORLD_SIZES)
    cub, places = generate_demo_birds(root / "birds", seed=0, birds_per_species=12, images_per_place=4)
    generate_demo_cafe(root / "cafe", seed=0, sizes={"coco": 4})
    return {"world": root / "world", "cub": cub, "places": places, "cafe": root / "cafe" / "coco"}


def _coco_cd_args(world: Path, *extra: str) -> list[str]:
    return ["build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(world), *COCO_CD_OPTIONS, *extra]


def _waterbirds_args(cub: Path, places: Path, *extra: str) -> list[str]:
    return ["build", "waterbirds", "--cub-root", str(cub), "--places-root", str(places), "--val-per-group", "1",
            "--test-per-group", "1", *extra]


def _cafe_args(source: Path, *extra: str) -> list[str]:
    return ["build", "cafe-candidates", "--source", f"coco={source / 'annotations.json'}:{source / 'images'}",
            *extra]


@pytest.fixture(scope="module")
def built(sources, tmp_path_factory) -> dict[str, Path]:
    """A finished output of each build, to copy into a case's project as its previous output."""
    project = tmp_path_factory.mktemp("hostile-built")
    for args in (_coco_cd_args(sources["world"]), _waterbirds_args(sources["cub"], sources["places"]),
                 _cafe_args(sources["cafe"])):
        result = invoke(project, *args)
        assert result.exit_code == 0, result.output + repr(result.exception)
    data = project / "data"
    return {"coco_cd": data / "coco_cd", "waterbirds": data / "waterbirds_seg", "cafe": data / "cafe_candidates"}


@pytest.fixture
def case(sources, built, tmp_path):
    """A project with copies of the sources and of every previous output (``data/<dataset>``)."""
    project = tmp_path / "project"
    copies = {name: copy_tree(path, tmp_path / "sources" / name) for name, path in sources.items()
              if name != "places"}
    copies["places"] = sources["places"]  # never edited
    for out in built.values():
        copy_tree(out, project / "data" / out.name)
    outs = {name: project / "data" / out.name for name, out in built.items()}
    return project, copies, outs


def _args(dataset: str, src: dict[str, Path], *extra: str) -> list[str]:
    if dataset == "coco_cd":
        return _coco_cd_args(src["world"], *extra)
    if dataset == "waterbirds":
        return _waterbirds_args(src["cub"], src["places"], *extra)
    return _cafe_args(src["cafe"], *extra)


def _a_source_image(dataset: str, src: dict[str, Path], outs: dict[str, Path]) -> Path:
    """An image the build of ``dataset`` reads."""
    if dataset == "coco_cd":
        return src["world"] / used_coco_image(outs["coco_cd"])["file_name"]
    if dataset == "waterbirds":
        first = (src["cub"] / "images.txt").read_text().split("\n", 1)[0].split(maxsplit=1)[1]
        return src["cub"] / "images" / first
    return sorted((src["cafe"] / "images").glob("*.jpg"))[0]


# --- 1. decompression bombs -------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["coco_cd", "waterbirds", "cafe"])
def test_a_decompression_bomb_image_is_refused_naming_it(case, dataset):
    project, src, outs = case
    if dataset == "cafe":  # every image, so whichever the seeded draw edits first is a bomb
        targets = sorted((src["cafe"] / "images").glob("*.jpg"))
    else:
        targets = [_a_source_image(dataset, src, outs)]
    for path in targets:
        bomb_png(path)
    before = tree_hash(outs[dataset])
    error = refused(project, *_args(dataset, src), names=(targets[0].name, "decompression bomb"),
                    error=InputError)
    assert "pixel limit" in error.message
    assert tree_hash(outs[dataset]) == before


def test_a_decompression_bomb_prediction_is_refused_by_evaluate_coco_cd(case, tmp_path):
    project, _, outs = case
    image_id = used_coco_image(outs["coco_cd"])["id"]
    test = json.loads((outs["coco_cd"] / "splits" / "rho_0.95" / "test.json").read_text())
    predictions = tmp_path / "predictions"
    predictions.mkdir()
    for image in test["images"]:  # the ground truth as predictions: only the bomb is wrong
        shutil.copy(outs["coco_cd"] / image["mask_file"], predictions / f"{image['id']:012d}.png")
    bomb = bomb_png(predictions / f"{image_id:012d}.png")
    before = tree_hash(outs["coco_cd"])
    refused(project, "evaluate", "coco-cd", "--predictions", str(predictions), "--repo", str(project),
            "--out", str(tmp_path / "report"), names=(bomb.name, "decompression bomb"), error=InputError)
    assert tree_hash(outs["coco_cd"]) == before and not (tmp_path / "report" / "metrics.json").exists()


def test_the_console_entry_point_exits_2_without_a_traceback_on_a_bomb(case):
    project, src, outs = case
    bomb = bomb_png(_a_source_image("waterbirds", src, outs))
    before = tree_hash(outs["waterbirds"])
    done = console_run(project, *_args("waterbirds", src))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout and bomb.name in done.stderr and "fix:" in done.stderr
    assert tree_hash(outs["waterbirds"]) == before


# --- 2. file names that leave the source root ---------------------------------------------------------


ESCAPES = {"parent": "../../outside/secret.jpg", "absolute": "/tmp/segbench-outside/secret.jpg"}


@pytest.mark.parametrize("dataset", ["coco_cd", "cafe"])
@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_a_file_name_outside_the_source_root_is_refused(case, tmp_path, dataset, escape):
    project, src, outs = case
    name = ESCAPES[escape]
    secret = (src["world"] / "train2017" / name) if escape == "parent" else Path(name)
    secret.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(sorted((src["cafe"] / "images").glob("*.jpg"))[0], secret)  # a real image: only the rule stops it
    if dataset == "coco_cd":
        image = used_coco_image(outs["coco_cd"])
        path = coco_instances_file(src["world"], image["id"])
        edit_json(path, lambda d: next(i for i in d["images"] if i["id"] == image["id"]).update(file_name=name))
        item = f"image {image['id']}"
    else:
        path = src["cafe"] / "annotations.json"
        edit_json(path, lambda d: [i.update(file_name=name) for i in d["images"]])
        item = "image "
    before = tree_hash(outs[dataset])
    refused(project, *_args(dataset, src), names=(name, item, "stay inside"), error=AnnotationError)
    assert tree_hash(outs[dataset]) == before


def test_with_on_error_skip_an_escaping_file_name_is_left_out_and_listed(case):
    project, src, outs = case
    image = used_coco_image(outs["coco_cd"])
    edit_json(coco_instances_file(src["world"], image["id"]),
              lambda d: next(i for i in d["images"] if i["id"] == image["id"]).update(file_name=ESCAPES["parent"]))
    result = invoke(project, *_args("coco_cd", src, "--on-error", "skip", "--out", str(project / "skipping")))
    assert result.exit_code == 0, result.output + repr(result.exception)
    skipped = json.loads((project / "skipping" / "skipped.json").read_text())["items"]
    assert [s["item"] for s in skipped] == [f"image {image['id']} (file_name {ESCAPES['parent']!r})"]
    exported = "".join(p.read_text() for p in (project / "skipping" / "splits").rglob("*.json"))
    assert "secret.jpg" not in exported


def test_a_bbox_reaching_outside_its_image_is_refused_not_copied(case):
    project, src, outs = case
    image = used_coco_image(outs["coco_cd"])
    path = coco_instances_file(src["world"], image["id"])
    cat_ids = {c["id"] for c in json.loads(path.read_text())["categories"] if c["name"] in ("cat", "dog")}
    box = [5000, -300, 9000, 9000]
    edited: list[int] = []

    def widen(data: dict) -> None:
        ann = next(a for a in data["annotations"] if a["image_id"] == image["id"] and a["category_id"] in cat_ids)
        ann["bbox"] = box
        edited.append(ann["id"])

    edit_json(path, widen)
    before = tree_hash(outs["coco_cd"])
    refused(project, *_args("coco_cd", src), names=(f"annotation {edited[0]}", "reaches outside", str(box)),
            error=AnnotationError)
    assert tree_hash(outs["coco_cd"]) == before


def test_an_area_json_cannot_hold_is_skipped_and_listed_naming_the_area(case):
    project, src, outs = case
    image = used_coco_image(outs["coco_cd"])
    path = coco_instances_file(src["world"], image["id"])
    edited: list[int] = []

    def mark(data: dict) -> None:
        ann = next(a for a in data["annotations"] if a["image_id"] == image["id"])
        ann["area"] = 123456.789
        edited.append(ann["id"])

    edit_json(path, mark)
    path.write_text(path.read_text().replace("123456.789", "1e999"))  # no JSON writer emits it
    result = invoke(project, *_args("coco_cd", src, "--on-error", "skip", "--out", str(project / "skipping")))
    assert result.exit_code == 0, result.output + repr(result.exception)
    skipped = json.loads((project / "skipping" / "skipped.json").read_text())["items"]
    assert [(s["item"], "area" in s["message"]) for s in skipped] == [(f"annotation {edited[0]}", True)]


# --- 3. ρ values that name the same split folder ------------------------------------------------------


@pytest.mark.parametrize("dataset", ["coco_cd", "waterbirds"])
@pytest.mark.parametrize(("rhos", "named"), [(("0.5", "0.50000001"), ("0.5", "0.50000001", "rho_0.5")),
                                              (("0.95", "0.95"), ("0.95", "given twice"))])
def test_two_rhos_for_one_split_folder_are_refused_naming_both(case, dataset, rhos, named):
    project, src, outs = case
    before = tree_hash(outs[dataset])
    refused(project, *_args(dataset, src, *(arg for rho in rhos for arg in ("--rho", rho))), names=named,
            error=InputError)
    assert tree_hash(outs[dataset]) == before


def test_a_rho_outside_the_range_is_refused_with_the_console_exit_code(case):
    project, src, outs = case
    before = tree_hash(outs["waterbirds"])
    done = console_run(project, *_args("waterbirds", src, "--rho", "nan"))
    assert done.returncode == 2 and "Traceback" not in done.stderr and "--rho nan" in done.stderr, done.stderr
    assert tree_hash(outs["waterbirds"]) == before


# --- 4. negative seeds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["coco_cd", "waterbirds", "cafe", "rounds-create"])
def test_a_negative_seed_is_refused_by_the_option(case, command):
    project, src, outs = case
    args = (["rounds", "create", "coco_cd_context_audit", "audit-x"] if command == "rounds-create" else _args(command, src))
    before = {name: tree_hash(out) for name, out in outs.items()}
    output = usage_refused(project, *args, "--seed", "-1", option="--seed")
    assert "seed -1 draws exactly what seed 1 draws" in " ".join(output.replace("│", " ").split())
    assert {name: tree_hash(out) for name, out in outs.items()} == before
    assert not (project / "data" / "rounds").exists()


# --- 5. a bird mask of the wrong size ------------------------------------------------------------------


def test_a_bird_segmentation_of_another_size_is_refused_naming_both_files(case):
    project, src, outs = case
    image = _a_source_image("waterbirds", src, outs)
    mask = src["cub"] / "segmentations" / image.relative_to(src["cub"] / "images").with_suffix(".png")
    resize_png(mask, (17, 13))
    before = tree_hash(outs["waterbirds"])
    error = refused(project, *_args("waterbirds", src), names=(str(image), str(mask), "17x13"), error=InputError)
    assert "restore the CUB segmentation" in error.hint
    assert tree_hash(outs["waterbirds"]) == before


# --- 6. the up-to-date check trusts neither damaged outputs nor changed source images -----------------


def _status(project: Path, args: list[str]) -> str:
    result = invoke(project, *args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def test_a_truncated_output_mask_is_rebuilt_not_trusted(case):
    project, src, outs = case
    out = outs["coco_cd"]
    assert "Up to date" in _status(project, _coco_cd_args(src["world"]))
    mask = sorted((out / "masks").glob("*.png"))[0]
    mask.write_bytes(mask.read_bytes()[:20])
    assert "Up to date" not in _status(project, _coco_cd_args(src["world"]))
    assert verify_outputs(out) == {"changed": [], "missing": [], "extra": []}


@pytest.mark.parametrize("dataset", ["coco_cd", "waterbirds", "cafe"])
def test_a_replaced_source_image_makes_the_output_stale(case, dataset):
    project, src, outs = case
    assert "Up to date" in _status(project, _args(dataset, src))
    image = _a_source_image(dataset, src, outs)
    data = bytearray(image.read_bytes())
    data[-3] ^= 0xFF  # a changed byte near the end of the JPEG data: same size, same header
    image.write_bytes(bytes(data))
    stat = image.stat()
    os.utime(image, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert "Up to date" not in _status(project, _args(dataset, src))
    assert "Up to date" in _status(project, _args(dataset, src))


# --- 7. two builds into one output folder --------------------------------------------------------------

HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from segbench.locking import output_lock
    with output_lock(Path(sys.argv[1]), command="segbench --data-root elsewhere build coco-cd"):
        print("held", flush=True)
        time.sleep(120)
""")


@pytest.mark.parametrize("dataset", ["coco_cd", "waterbirds"])
def test_a_build_into_an_output_another_build_is_writing_stops_naming_it(case, tmp_path, dataset):
    project, src, outs = case
    out = outs[dataset]
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True,
                              env=child_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        before = tree_hash(out)
        # Another data root: its own lock is free, only the output's lock can stop this build.
        refused(project, *_args(dataset, src, "--out", str(out), "--force"), data_root=tmp_path / "other-data",
                names=(str(out), f"pid {holder.pid}", "segbench --data-root elsewhere build coco-cd", "--wait"),
                error=BusyError)
        assert tree_hash(out) == before
    finally:
        holder.kill()
        holder.wait()
    assert "Built" in _status(project, _args(dataset, src, "--out", str(out), "--force"))
    assert not list(out.parent.glob(f".{out.name}.build.lock")), "the lock file goes with the lock"


# --- 8. a full disk while staging ----------------------------------------------------------------------


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG])
def test_a_full_disk_while_staging_keeps_the_stage_and_says_how_to_resume(case, monkeypatch, code):
    """The writes of the stage's masks fail as on a full disk; the stage is kept and a rerun resumes."""
    project, src, outs = case
    out = outs["coco_cd"]
    real_fdopen = os.fdopen

    def full_disk(fd, *args, **kwargs):
        target = os.readlink(f"/proc/self/fd/{fd}") if isinstance(fd, int) else ""
        if ".partial/masks/" in target:
            os.close(fd)
            raise OSError(code, os.strerror(code), target)
        return real_fdopen(fd, *args, **kwargs)

    before = tree_hash(out)
    monkeypatch.setattr(os, "fdopen", full_disk)
    error = refused(project, *_args("coco_cd", src, "--force", "--shard-size", "4"),
                    names=(".partial/masks/", os.strerror(code), "resumes"), error=OutputError)
    monkeypatch.setattr(os, "fdopen", real_fdopen)
    assert tree_hash(out) == before
    stage, = out.parent.glob(".coco_cd.*.partial")
    assert str(stage) in error.hint and not list(stage.rglob("*.tmp")), "no half-written file in the stage"
    assert "Built" in _status(project, _args("coco_cd", src, "--force", "--shard-size", "4"))
    assert verify_outputs(out) == {"changed": [], "missing": [], "extra": []}
    assert not list(out.parent.glob(".coco_cd.*.partial"))


def test_two_builds_from_different_data_roots_into_one_out_never_crash(case, tmp_path):
    """The race itself, as users start it: both through the console entry point, at the same time."""
    project, src, _ = case
    out = tmp_path / "shared-out"
    env = {**child_env(), "COLUMNS": "200"}
    for key in ("PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH"):
        env.pop(key, None)
    procs = [subprocess.Popen([sys.executable, "-m", "segbench", "--data-root", str(tmp_path / f"data-{n}"),
                               "--work-dir", str(tmp_path / f"work-{n}"), *_args("coco_cd", src, "--out", str(out))],
                              cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in (1, 2)]
    results = [(p.returncode, out_, err) for p in procs for out_, err in [p.communicate(timeout=300)]]
    for code, stdout, stderr in results:
        assert code in (0, 2) and "Traceback" not in stdout + stderr, (code, stdout, stderr)
        if code == 2:
            assert "another segbench build is writing this output folder" in stderr and str(out) in stderr
    assert 0 in [code for code, _, _ in results]
    assert verify_outputs(out) == {"changed": [], "missing": [], "extra": []}
    assert not list(out.parent.glob(".shared-out.*")), "no stage or lock file is left beside the output"


@pytest.mark.parametrize("dataset", ["coco_cd", "waterbirds"])
def test_a_truncated_source_image_stops_the_build_naming_it(case, dataset):
    """Its header is fine (the cheap checks pass); decoding it fails while rendering, inside the stage."""
    project, src, outs = case
    image = _a_source_image(dataset, src, outs)
    image.write_bytes(image.read_bytes()[:400])
    before = tree_hash(outs[dataset])
    refused(project, *_args(dataset, src), names=(str(image), "cannot be read"), error=InputError)
    assert tree_hash(outs[dataset]) == before


def test_with_wait_a_build_queues_behind_the_build_writing_its_output(case, tmp_path):
    project, src, outs = case
    out = outs["waterbirds"]
    short = HOLDER.replace("time.sleep(120)", "time.sleep(4)")
    holder = subprocess.Popen([sys.executable, "-c", short, str(out)], stdout=subprocess.PIPE, text=True,
                              env=child_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        result = invoke(project, "--wait", "120", *_args("waterbirds", src, "--out", str(out), "--force"),
                        data_root=tmp_path / "other-data")
        assert result.exit_code == 0, result.output + repr(result.exception)
        assert holder.wait(timeout=60) == 0, "the holder finished before the waiting build took the lock"
        assert "waiting for pid" in result.output and "Built" in result.output
    finally:
        holder.kill()
        holder.wait()
    assert verify_outputs(out) == {"changed": [], "missing": [], "extra": []}


# --- 11. destinations that cannot take the output --------------------------------------------------

WITHOUT_ROOTS_RIGHTS = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                        "--inh-caps=-dac_override,-dac_read_search"]


def _can_drop_root_rights() -> bool:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return False
    return subprocess.run([*WITHOUT_ROOTS_RIGHTS, "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(os.geteuid() == 0 and not _can_drop_root_rights(), reason="root ignores file modes, and "
                    "setpriv cannot drop its rights here")
def test_a_previous_output_that_cannot_be_removed_stops_the_build_before_it_changes_anything(case):
    """A folder of the previous output is chmod 000: the build is refused before the swap, naming the
    folder, with the previous output as it was and no half-swapped copy beside it."""
    project, src, outs = case
    out = outs["coco_cd"]
    locked = out / "masks"
    before = tree_hash(out)
    locked.chmod(0)
    try:
        prefix = WITHOUT_ROOTS_RIGHTS if os.geteuid() == 0 else []
        env = {**child_env(), "COLUMNS": "200"}
        done = subprocess.run([*prefix, sys.executable, "-m", "segbench", "--data-root", str(project / "data"),
                               "--work-dir", str(project / "work"), *_args("coco_cd", src, "--force")],
                              cwd=project, env=env, capture_output=True, text=True, timeout=300)
    finally:
        locked.chmod(0o755)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    message = " ".join(done.stderr.split())
    assert str(locked) in message and "cannot remove" in message and "chmod -R u+rwX" in message
    assert tree_hash(out) == before
    assert not list(out.parent.glob(".coco_cd.previous")), "no copy of the old output beside it"
    stage, = out.parent.glob(".coco_cd.*.partial")
    assert (stage / ".stage-nonce").is_file(), "the finished stage resumes once the folder is fixed"
