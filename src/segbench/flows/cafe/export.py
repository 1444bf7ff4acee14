"""The CAFE export (seed 000): the samples a verification round's majority verified, in the SA-Co format.

``build_cafe`` exports them into ``<data root>/cafe/`` (staged: all or nothing). Its build key
covers the rounds (keys, answers) and their candidates (their manifests list every candidate
file's hash, and the export checks the files against them), so an export of the same rounds and
candidates does nothing.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import flow, get_run_logger

from segbench.core.build import Build, Built, Stage, run_build
from segbench.core.errors import InputError, SkipRecord, SkipReport
from segbench.core.io import atomic_write_text, write_json
from segbench.core.manifest import read_manifest
from segbench.flows.cafe.history import Chain, cell_of, chain_of
from segbench.flows.cafe.verification import candidates_version
from segbench.flows.prefect_ui import publish_build, run_name
from segbench.schemas.cafe import CafeStep, Candidate, ExportSummary
from segbench.tasks.cafe import export as cafe_export
from segbench.tasks.cafe import pairs as cafe_pairs
from segbench.tasks.cafe import quotas, verification, versions
from segbench.tasks.cafe.quotas import Cell

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun

VERIFIED_RULE = "majority yes on " + ", ".join(verification.CONTROLS)


@flow(name="build-cafe", flow_run_name=run_name("build-cafe", ("round_key",)))
def build_cafe(data_root: Path, round_key: str, out: Path | None = None, force: bool = False,
               partial: bool = False) -> ExportSummary:
    """Export the verified samples of an ingested verification round into ``out`` (default ``<data root>/cafe``).

    A round made on top-up candidates stands for its chain (:mod:`segbench.flows.cafe.history`): the
    samples verified in every round of it are exported together. When the candidates had quotas,
    at most the target of each source × edit type is kept (earlier rounds first, then by id).

    Writes ``CAFE.json`` and ``CAFE_{SM,CC,OC}.json`` (SA-Co format), ``images/`` (the edited images of
    the exported samples), ``tables/prompt_pairs.{md,json}``, ``tables/targets.{md,json}`` (target
    against achieved per source × edit type), ``skipped.json`` (candidates not exported, with the
    reasons) and ``manifest.json``. Each written file is checked with
    :func:`segbench.tasks.cafe.export.validate_saco` before the directory is swapped in. When ``out``
    was exported from the same round answers and candidates nothing is done (``force``
    exports anyway). A round with unanswered items is exported only with ``partial``.

    Returns:
        A summary: output path, ``up_to_date``, counts, ``units`` (none: the export is not cut into
        units) and the exported ``files`` by subset.

    Raises:
        InputError: the round is not a CAFE verification round, the candidates changed since it was
            created, or an exported file fails the schema check.
        RoundStateError: the round has not been ingested yet, or (without ``partial``) some of its
            items have no answer.
    """
    data_root = Path(data_root)
    chain = chain_of(data_root, round_key)
    last = chain.rounds[-1]
    out = Path(out or data_root / "cafe")
    targets = _targets(last.candidates_path)
    build = Build(out=out, dataset="cafe", logic_version=versions.EXPORT, params=_params(chain, targets),
                  input_hashes=_hashes(chain))
    # Where the files are, whether exported now or found up to date.
    files = {"files": {stem: out / f"{stem}.json" for stem in cafe_export.SUBSETS}}
    summary = run_build(build, lambda stage, _: _write_export(stage, chain, targets, files), ExportSummary,
                        force=force, prepare=lambda: _check(chain, partial),
                        finished=lambda _manifest: files, logger=get_run_logger())
    if not summary.up_to_date:
        get_run_logger().info("exported %d samples", summary.counts.samples)
    publish_build("cafe", summary)
    return summary


def _check(chain: Chain, partial: bool) -> None:
    """Before exporting: every candidate file is what its build wrote, and (without ``partial``) every
    item has its answers."""
    chain.check_files()
    if not partial:
        chain.require_answered(otherwise="pass --partial to export the samples verified so far")


def _targets(candidates_path: Path) -> dict[Cell, int]:
    """The verified samples wanted per source × edit type, from the last batch's quotas (none: no cap)."""
    params = read_manifest(candidates_path).params
    return quotas.cell_targets(params.get("quotas") or {}, params.get("edit_mix") or {})


def _params(chain: Chain, targets: dict[Cell, int]) -> dict[str, Any]:
    """The export's params; a one-round export without quotas keeps the params it always had."""
    last = chain.rounds[-1]
    params: dict[str, Any] = {"round": last.round.key, "candidates": last.round.dataset,
                              "candidates_version": last.round.dataset_version, "verified_rule": VERIFIED_RULE}
    if last.answers_path.name != f"{last.round.key}.answers.json":
        params["answers_of"] = last.answers_path.name[: -len(".answers.json")]
    if len(chain.rounds) > 1:  # what a release reads to find every batch's candidates and answers
        params["rounds"] = {r.round.key: {"candidates": r.round.dataset, "answers": r.answers_path.name}
                            for r in chain.rounds}
    if targets:
        params["targets"] = {f"{source}:{edit.abbr}": n for (source, edit), n in targets.items()}
    return params


def _hashes(chain: Chain) -> dict[str, str]:
    """The answers files and candidate versions of every round of the chain.

    The round's record is left out: it holds creation and ingest times; its key and the candidates'
    version are params, and the answers file holds everything the export reads from the round. The
    candidates count by the hashes their manifest lists (not its bytes, which hold a build time).
    """
    hashes: dict[str, str] = {}
    for n, r in enumerate(reversed(chain.rounds)):
        suffix = f":{r.round.key}" if n else ""
        hashes[f"answers{suffix}"] = r.answers_digest()
        hashes[f"candidates_outputs{suffix}"] = candidates_version(r.candidates_path)
    return hashes


def _write_export(stage: Stage, chain: Chain, targets: dict[Cell, int], extras: dict[str, Any]) -> Built:
    """Write the export of the chain's verified candidates into ``stage`` and check it against the SA-Co format.

    Raises:
        InputError: an exported file fails the SA-Co check (the stage is kept).
    """
    from segbench.flows.cafe.candidates import sample_rows

    kept, surplus = _within_targets(chain, targets)
    for candidate, folder in kept:
        target = stage.path / "images" / cafe_export.export_file_name(candidate)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / candidate.image, target)
    exported = [candidate for candidate, _ in kept]
    documents = cafe_export.subset_documents(exported, version=chain.rounds[-1].round.dataset_version[:12])
    for stem, document in documents.items():
        write_json(stage.path / f"{stem}.json", document)
    stats = cafe_pairs.pair_statistics(sample_rows(exported))
    cafe_pairs.write_pair_tables(stage.path / "tables", stats, title="CAFE: prompt pairs")
    rows = quotas.target_rows(targets, chain.asked(), chain.verified(), Counter(cell_of(c) for c in exported))
    write_json(stage.path / "tables" / "targets.json", [r.model_dump(mode="json") for r in rows], indent=1)
    atomic_write_text(stage.path / "tables" / "targets.md", quotas.targets_markdown(rows, rounds=chain.keys))
    not_verified: list[SkipRecord] = [
        {"error": "NotVerified", "item": c.key, "path": None, "id": c.id, "round": r.round.key,
         "message": "; ".join(r.reasons[c.id])} for r in chain.rounds for c in r.asked if r.reasons[c.id]]
    skipped = SkipReport(not_verified + surplus)
    write_json(stage.path / "skipped.json", skipped.to_json(), indent=1)
    problems = [e for stem in cafe_export.SUBSETS for e in cafe_export.validate_saco(stage.path / f"{stem}.json")]
    if problems:
        raise InputError(f"the export fails the SA-Co check: {problems[0]}",
                         hint="report this: the candidates produced an invalid export")
    outcomes = sum((r.outcomes() for r in chain.rounds), Counter[str]())
    counts = {"samples": len(exported), "images": 2 * len(exported), "by_edit_type": stats["by_edit_type"],
              "not_verified": len(skipped) - len(surplus), "rejected": outcomes["rejected"], "tied": outcomes["tied"],
              "unanswered": outcomes["unanswered"], "held_out": outcomes["held_out"],
              "beyond_target": len(surplus), "prompt_pairs": stats["prompt_pairs"],
              "unique_positive": stats["unique_positive"], "unique_negative": stats["unique_negative"],
              "targets": [r.model_dump(mode="json") for r in rows if r.target is not None]}
    return Built(counts=counts, skipped=len(skipped), extras=extras)


def _within_targets(chain: Chain, targets: dict[Cell, int]) -> tuple[list[tuple[Candidate, Path]], list[SkipRecord]]:
    """The verified candidates to export (with their candidates folder) and the records of those
    beyond their cell's target: earlier rounds first, then by id."""
    kept: list[tuple[Candidate, Path]] = []
    surplus: list[SkipRecord] = []
    taken: Counter[Cell] = Counter()
    for r in chain.rounds:
        for c in sorted(r.verified, key=lambda c: c.id):
            cell = cell_of(c)
            if targets and taken[cell] >= targets.get(cell, 0):
                surplus.append({"error": "BeyondTarget", "item": c.key, "path": None, "id": c.id, "round": r.round.key,
                                "message": f"verified, but {cell[0]} {cell[1].abbr} already has its target of "
                                           f"{targets.get(cell, 0)}"})
                continue
            taken[cell] += 1
            kept.append((c, r.candidates_path))
    return kept, surplus


# --- the rebuild plan's [cafe] step --------------------------------------------------------------------


def plan_step(run: RebuildRun, step: CafeStep) -> ExportSummary:
    """Build the CAFE export of a verified round from the ``[cafe]`` table of a rebuild plan."""
    return run.call(build_cafe, run.data_root, step.round, out=run.dataset_dir("cafe"))
