"""The CAFE verification round and the export of verified pairs (seed 000).

``create_cafe_verification`` makes a round (kind ``cafe_verification``) with one item per
candidate of ``<data root>/cafe_candidates``; the generic round flows launch and ingest it
(``segbench rounds launch|ingest``), and after each ingest :func:`write_verification_report`
writes ``<data root>/cafe_verification/<key>.{json,md}``. ``build_cafe`` exports the samples the
majority verified into ``<data root>/cafe/`` in the SA-Co format (staged: all or nothing). Its build
key covers the round (key, answers) and the candidates (their manifest lists every
candidate file's hash, and the export checks the files against it), so an export of the same round
and candidates does nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from prefect import flow, get_run_logger

from segbench.annotation_ui.gold import QualityOptions, with_quality
from segbench.core import clock
from segbench.core.build import Build, Built, Stage, run_build
from segbench.core.errors import InputError, RoundStateError, SkipReport
from segbench.core.io import atomic_write_text, fingerprint, read_json, write_json
from segbench.core.manifest import read_manifest, verify_outputs
from segbench.core.resume import hash_inputs
from segbench.flows.cafe.gold import alike, known_bad_items
from segbench.flows.prefect_ui import publish_build, run_name
from segbench.schemas.cafe import CafeStep, Candidate
from segbench.schemas.rounds import ItemAnswer, Round, RoundConfig, RoundStatus
from segbench.tasks.cafe import export as cafe_export
from segbench.tasks.cafe import pairs as cafe_pairs
from segbench.tasks.cafe import verification

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun

BUILDER_VERSION = "2"  # 2: the manifest records the build key
VERIFIED_RULE = "majority yes on " + ", ".join(verification.CONTROLS)
CANDIDATES_DIR = "cafe_candidates"


def candidates_version(candidates: Path) -> str:
    """A content version of a candidate build: the fingerprint of its outputs' hashes."""
    return fingerprint(read_manifest(candidates).outputs)


def read_candidates(candidates: Path) -> list[Candidate]:
    """The candidates of a build, in id order.

    Raises:
        InputError: no candidate build there, or a malformed line (named by its number).
    """
    path = Path(candidates) / "candidates.jsonl"
    if not path.is_file():
        raise InputError("no CAFE candidates found", path=path, hint="build them first: segbench build cafe-candidates")
    out = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        try:
            out.append(Candidate.model_validate_json(line))
        except ValueError as exc:
            raise InputError(f"line {number} is not a candidate ({type(exc).__name__})", path=path,
                             hint="rebuild the candidates") from exc
    return sorted(out, key=lambda c: c.id)


@flow(name="cafe-verification-create", flow_run_name=run_name("cafe-verification-create", ("key",)))
def create_cafe_verification(data_root: Path, key: str, backend: Literal["labelstudio", "files"] = "labelstudio",
                             overlap: int = 3, overwrite: bool = False,
                             candidates_dir: str = CANDIDATES_DIR, quality: QualityOptions = QualityOptions(),
                             gold_sources: dict[str, Path] | None = None) -> Round:
    """Create a verification round over every candidate (``data/rounds/<key>.json``).

    ``quality.gold`` known-bad pairs (see :func:`segbench.flows.cafe.gold.known_bad_items`; with
    ``gold_sources``, source name → images folder, half are unedited images) are mixed in, their
    review images written under ``data/rounds/<key>/review/`` beside copies of the others'; a gold
    file adds more.

    Raises:
        InputError: the candidates are not built, bad gold options. RoundStateError: the key exists
            (unless ``overwrite``).
    """
    from segbench.annotation_ui.rounds import RoundStore, new_round

    candidates_path = Path(data_root) / candidates_dir
    candidates = read_candidates(candidates_path)
    round_ = new_round(
        key=key, kind=verification.KIND, dataset=candidates_dir, dataset_version=candidates_version(candidates_path),
        config=RoundConfig(label_config=verification.LABEL_CONFIG, overlap=overlap),
        items=verification.round_items(candidates, candidates_dir), backend=backend,
        now=clock.timestamp())
    store = RoundStore(Path(data_root) / "rounds")
    gold = known_bad_items(Path(data_root), key, candidates_path, candidates, quality, gold_sources or {})
    round_ = with_quality(round_, gold, quality, store)
    if gold:
        round_ = round_.model_copy(update={"items": alike(Path(data_root), key, round_.items)})
    store.create(round_, overwrite=overwrite)
    return round_


def _check_version(round_: Round, candidates_path: Path) -> None:
    """The candidates are those the round was made on, and their files are those their manifest lists."""
    drift = verify_outputs(candidates_path)
    if any(drift.values()):
        changed = ", ".join(f"{kind}: {', '.join(paths[:3])}" for kind, paths in drift.items() if paths)
        raise InputError(f"the candidates changed since round {round_.key} was created ({changed})",
                         path=candidates_path, hint="rebuild the candidates with the same inputs and seed, "
                         "or create a new round")
    if candidates_version(candidates_path) != round_.dataset_version:
        raise InputError(f"the candidates changed since round {round_.key} was created", path=candidates_path,
                         hint="restore the candidates the round was made on, or create a new round")


def write_verification_report(round_: Round, answers: list[ItemAnswer], data_root: Path) -> dict[str, Path]:
    """Verified counts per edit type and the reasons for rejection; JSON and Markdown."""
    candidates_path = Path(data_root) / round_.dataset
    _check_version(round_, candidates_path)
    table = verification.verification_table(read_candidates(candidates_path), answers)
    out = Path(data_root) / "cafe_verification"
    json_path = write_json(out / f"{round_.key}.json", {"round": round_.key, "dataset_version": round_.dataset_version,
                                                       **table}, indent=1)
    md_path = atomic_write_text(out / f"{round_.key}.md", verification.verification_markdown(
        table, round_key=round_.key, dataset_version=round_.dataset_version))
    return {"verification_json": json_path, "verification_markdown": md_path}


@flow(name="build-cafe", flow_run_name=run_name("build-cafe", ("round_key",)))
def build_cafe(data_root: Path, round_key: str, out: Path | None = None, force: bool = False) -> dict[str, Any]:
    """Export the verified samples of an ingested verification round into ``out`` (default ``<data root>/cafe``).

    Writes ``CAFE.json`` and ``CAFE_{SM,CC,OC}.json`` (SA-Co format), ``images/`` (the edited images of
    the exported samples), ``tables/prompt_pairs.{md,json}``, ``skipped.json`` (candidates not
    verified, with the reasons) and ``manifest.json``. Each written file is checked with
    :func:`segbench.tasks.cafe.export.validate_saco` before the directory is swapped in. When ``out``
    was exported from the same round answers and candidates nothing is done (``force``
    exports anyway).

    Returns:
        A summary: output path, ``up_to_date``, counts, ``units`` (none: the export is not cut into
        units) and the exported ``files`` by subset.

    Raises:
        InputError: the round is not a CAFE verification round, the candidates changed since it was
            created, or an exported file fails the schema check.
        RoundStateError: the round has not been ingested yet.
    """
    from segbench.annotation_ui.followups import final_key
    from segbench.annotation_ui.rounds import RoundStore

    data_root = Path(data_root)
    store = RoundStore(data_root / "rounds")
    round_ = _ingested_round(store.load(round_key))
    # The merged answers of the round's follow-ups, when one is ingested (see annotation_ui.followups).
    answers_path = store.answers_path(final_key(store, round_key))
    candidates_path = data_root / round_.dataset
    out = Path(out or data_root / "cafe")
    # The round's record is left out: it holds creation and ingest times; its key and the candidates'
    # version are params, and the answers file holds everything the export reads from the round. The
    # candidates count by the hashes their manifest lists (not its bytes, which hold a build time).
    hashes = hash_inputs({"answers": answers_path}, hint=f"segbench rounds ingest {round_key}")
    hashes["candidates_outputs"] = candidates_version(candidates_path)
    params = {"round": round_.key, "candidates": round_.dataset, "candidates_version": round_.dataset_version,
              "verified_rule": VERIFIED_RULE}
    if answers_path != store.answers_path(round_key):
        params["answers_of"] = answers_path.name[: -len(".answers.json")]
    build = Build(out=out, dataset="cafe", logic_version=BUILDER_VERSION, params=params, input_hashes=hashes)
    files = {stem: str(out / f"{stem}.json") for stem in cafe_export.SUBSETS}
    summary = run_build(build, lambda stage, verdicts: _write_export(stage, candidates_path, *verdicts, round_),
                        force=force, prepare=lambda: _verdicts(round_, candidates_path, answers_path),
                        logger=get_run_logger())
    if not summary["up_to_date"]:
        get_run_logger().info("exported %d of %d candidates", summary["counts"]["samples"],
                              summary["counts"]["samples"] + summary["counts"]["not_verified"])
    publish_build("cafe", summary)
    return summary | {"files": files}  # where they are, whether exported now or found up to date


def _ingested_round(round_: Round) -> Round:
    """``round_``, checked to be an ingested CAFE verification round.

    Raises:
        InputError: another kind of round. RoundStateError: its answers are not ingested yet.
    """
    if round_.kind != verification.KIND:
        raise InputError(f"round {round_.key} is a {round_.kind} round, not {verification.KIND}",
                         hint="pass the key of a CAFE verification round")
    if round_.status not in (RoundStatus.INGESTED, RoundStatus.CLOSED):
        raise RoundStateError(f"status is {round_.status.value}; the export needs the round's answers",
                              item=f"round {round_.key}", hint=f"segbench rounds ingest {round_.key}")
    return round_


def _verdicts(round_: Round, candidates_path: Path, answers_path: Path) -> tuple[list[Candidate], SkipReport]:
    """The candidates the majority verified, and the others with the reasons (as skipped items).

    Raises:
        InputError: the candidates changed since the round was created.
    """
    _check_version(round_, candidates_path)
    candidates = read_candidates(candidates_path)
    answers = [ItemAnswer.model_validate(i) for i in read_json(answers_path)["items"]]
    reasons = {a.item_id: verification.verdict(a)[1] for a in answers}
    verified = [c for c in candidates if reasons.get(str(c.id)) == []]
    rejected = SkipReport([{"error": "NotVerified", "item": c.key, "path": None, "id": c.id,
                            "message": "; ".join(reasons.get(str(c.id), ["unanswered"]))}
                           for c in candidates if reasons.get(str(c.id)) != []])
    return verified, rejected


def _write_export(stage: Stage, candidates_path: Path, verified: list[Candidate], rejected: SkipReport,
                  round_: Round) -> Built:
    """Write the export of the ``verified`` candidates into ``stage`` and check it against the SA-Co format.

    Raises:
        InputError: an exported file fails the SA-Co check (the stage is kept).
    """
    from segbench.flows.cafe.build import sample_rows

    for candidate in verified:
        target = stage.path / "images" / cafe_export.export_file_name(candidate)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(candidates_path / candidate.image, target)
    documents = cafe_export.subset_documents(verified, version=round_.dataset_version[:12])
    for stem, document in documents.items():
        write_json(stage.path / f"{stem}.json", document)
    stats = cafe_pairs.pair_statistics(sample_rows(verified))
    write_json(stage.path / "tables" / "prompt_pairs.json", stats, indent=1)
    atomic_write_text(stage.path / "tables" / "prompt_pairs.md",
                      cafe_pairs.pair_markdown(stats, title="CAFE: prompt pairs"))
    write_json(stage.path / "skipped.json", rejected.to_json(), indent=1)
    problems = [e for stem in cafe_export.SUBSETS for e in cafe_export.validate_saco(stage.path / f"{stem}.json")]
    if problems:
        raise InputError(f"the export fails the SA-Co check: {problems[0]}",
                         hint="report this: the candidates produced an invalid export")
    counts = {"samples": len(verified), "images": 2 * len(verified), "by_edit_type": stats["by_edit_type"],
              "not_verified": len(rejected), "prompt_pairs": stats["prompt_pairs"],
              "unique_positive": stats["unique_positive"], "unique_negative": stats["unique_negative"]}
    return Built(counts=counts, skipped=len(rejected))


# --- the rebuild plan's [cafe] step --------------------------------------------------------------------


def plan_step(run: RebuildRun, step: CafeStep) -> dict[str, Any]:
    """Build the CAFE export of a verified round from the ``[cafe]`` table of a rebuild plan."""
    return run.call(build_cafe, run.data_root, step.round, out=run.dataset_dir("cafe"))
