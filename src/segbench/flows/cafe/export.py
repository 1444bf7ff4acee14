"""The CAFE export (seed 000): the samples a verification round's majority verified, in the SA-Co format.

``build_cafe`` exports them into ``<data root>/cafe/`` (staged: all or nothing). Its build key
covers the round (key, answers) and the candidates (their manifest lists every candidate file's
hash, and the export checks the files against it), so an export of the same round and candidates
does nothing.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import flow, get_run_logger

from segbench.core.build import Build, Built, Stage, run_build
from segbench.core.errors import InputError, RoundStateError, SkipReport
from segbench.core.io import read_json, write_json
from segbench.core.resume import hash_inputs
from segbench.flows.cafe.verification import candidates_version, check_version, read_candidates, work_candidates
from segbench.flows.prefect_ui import publish_build, run_name
from segbench.schemas.cafe import CafeStep, Candidate, ExportSummary
from segbench.schemas.rounds import AnswersFile, Round, RoundStatus
from segbench.tasks.cafe import export as cafe_export
from segbench.tasks.cafe import pairs as cafe_pairs
from segbench.tasks.cafe import verification, versions

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun

VERIFIED_RULE = "majority yes on " + ", ".join(verification.CONTROLS)


@flow(name="build-cafe", flow_run_name=run_name("build-cafe", ("round_key",)))
def build_cafe(data_root: Path, round_key: str, out: Path | None = None, force: bool = False,
               partial: bool = False) -> ExportSummary:
    """Export the verified samples of an ingested verification round into ``out`` (default ``<data root>/cafe``).

    Writes ``CAFE.json`` and ``CAFE_{SM,CC,OC}.json`` (SA-Co format), ``images/`` (the edited images of
    the exported samples), ``tables/prompt_pairs.{md,json}``, ``skipped.json`` (candidates not
    verified, with the reasons) and ``manifest.json``. Each written file is checked with
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
    from segbench.annotation_ui.followups import final_key, report_round
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
    build = Build(out=out, dataset="cafe", logic_version=versions.EXPORT, params=params, input_hashes=hashes)
    # Where the files are, whether exported now or found up to date.
    files = {"files": {stem: out / f"{stem}.json" for stem in cafe_export.SUBSETS}}
    summary = run_build(build, lambda stage, verdicts: _write_export(stage, candidates_path, verdicts[0], verdicts[1],
                                                                       verdicts[2], round_, files),
                        ExportSummary, force=force,
                        # a follow-up stands for its chain: the root round's items are those asked about
                        prepare=lambda: _verdicts(report_round(store, round_), candidates_path, answers_path,
                                                  partial=partial),
                        finished=lambda _manifest: files, logger=get_run_logger())
    if not summary.up_to_date:
        get_run_logger().info("exported %d of %d candidates", summary.counts.samples,
                              summary.counts.samples + summary.counts.not_verified)
    publish_build("cafe", summary)
    return summary


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


def _verdicts(round_: Round, candidates_path: Path, answers_path: Path, *, partial: bool
              ) -> tuple[list[Candidate], SkipReport, Counter[str]]:
    """The candidates the majority verified, the others with the reasons (as skipped items), and
    how many were verified, rejected, tied and unanswered (and held out of the round for its gold).

    Raises:
        InputError: the candidates changed since the round was created.
        RoundStateError: (without ``partial``) some items have no answer.
    """
    check_version(round_, candidates_path)
    every = read_candidates(candidates_path)
    candidates = work_candidates(round_, every)
    answers = AnswersFile.model_validate(read_json(answers_path)).items
    reasons = {a.item_id: verification.verdict(a)[1] for a in answers}
    reasons_of = {c.id: reasons.get(str(c.id), ["unanswered"]) for c in candidates}
    outcomes = Counter(verification.outcome(r) for r in reasons_of.values())
    outcomes["held_out"] = len(every) - len(candidates)
    if outcomes["unanswered"] and not partial:
        raise RoundStateError(
            f"{outcomes['unanswered']} of {len(candidates)} items of round {round_.key} have no answer to every "
            "question yet", item=round_.key,
            hint=f"ingest the round again once they are answered (segbench rounds ingest {round_.key}), or "
                 "pass --partial to export the samples verified so far")
    verified = [c for c in candidates if not reasons_of[c.id]]
    rejected = SkipReport([{"error": "NotVerified", "item": c.key, "path": None, "id": c.id,
                            "message": "; ".join(reasons_of[c.id])} for c in candidates if reasons_of[c.id]])
    return verified, rejected, outcomes


def _write_export(stage: Stage, candidates_path: Path, verified: list[Candidate], rejected: SkipReport,
                  outcomes: Counter[str], round_: Round, extras: dict[str, Any]) -> Built:
    """Write the export of the ``verified`` candidates into ``stage`` and check it against the SA-Co format.

    Raises:
        InputError: an exported file fails the SA-Co check (the stage is kept).
    """
    from segbench.flows.cafe.candidates import sample_rows

    for candidate in verified:
        target = stage.path / "images" / cafe_export.export_file_name(candidate)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(candidates_path / candidate.image, target)
    documents = cafe_export.subset_documents(verified, version=round_.dataset_version[:12])
    for stem, document in documents.items():
        write_json(stage.path / f"{stem}.json", document)
    stats = cafe_pairs.pair_statistics(sample_rows(verified))
    cafe_pairs.write_pair_tables(stage.path / "tables", stats, title="CAFE: prompt pairs")
    write_json(stage.path / "skipped.json", rejected.to_json(), indent=1)
    problems = [e for stem in cafe_export.SUBSETS for e in cafe_export.validate_saco(stage.path / f"{stem}.json")]
    if problems:
        raise InputError(f"the export fails the SA-Co check: {problems[0]}",
                         hint="report this: the candidates produced an invalid export")
    counts = {"samples": len(verified), "images": 2 * len(verified), "by_edit_type": stats["by_edit_type"],
              "not_verified": len(rejected), "rejected": outcomes["rejected"], "tied": outcomes["tied"],
              "unanswered": outcomes["unanswered"], "held_out": outcomes["held_out"],
              "prompt_pairs": stats["prompt_pairs"],
              "unique_positive": stats["unique_positive"], "unique_negative": stats["unique_negative"]}
    return Built(counts=counts, skipped=len(rejected), extras=extras)


# --- the rebuild plan's [cafe] step --------------------------------------------------------------------


def plan_step(run: RebuildRun, step: CafeStep) -> ExportSummary:
    """Build the CAFE export of a verified round from the ``[cafe]`` table of a rebuild plan."""
    return run.call(build_cafe, run.data_root, step.round, out=run.dataset_dir("cafe"))
