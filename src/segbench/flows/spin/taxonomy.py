"""The SPIN taxonomy build flow: ask for subparts → apply the edit file → ``data/spin/taxonomy.yaml``.

``data/spin/`` also holds the SPIN dataset, so this flow writes only its own files there, each one
atomically: ``taxonomy.yaml``, ``taxonomy.diff.md`` (what the last change of the taxonomy changed),
``taxonomy.png`` (subparts per part category, as the paper's Fig. 2) and ``taxonomy.manifest.json``
(inputs, params, counts, output hashes, build key). It never replaces the folder.

The build key covers the edit file, the shipped PartImageNet catalog, the provider and the question
and builder versions. A rebuild with the key of the manifest writes nothing; a rebuild that yields
the taxonomy already there (``force``, or a crash before the manifest was written) keeps its diff,
so the diff always describes a real change and a forced rebuild gives the same bytes.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench.core.build import Build, Built
from segbench.core.errors import AnswerRejected
from segbench.core.io import atomic_write_bytes, atomic_write_text, sha256_bytes, sha256_file
from segbench.core.manifest import read_manifest, write_manifest
from segbench.core.reports import plain
from segbench.flows.prefect_ui import publish_build, run_name, task_name
from segbench.providers.base import Question
from segbench.providers.cache import answers_or_rejections
from segbench.schemas.spin import SubpartProposal, SubpartVisibility, Taxonomy, TaxonomyEdits, load_taxonomy
from segbench.schemas.spin_results import TaxonomySummary
from segbench.tasks.spin import taxonomy as spin_taxonomy
from segbench.tasks.spin import taxonomy_edits as se
from segbench.tasks.spin import versions
from segbench.tasks.spin.taxonomy_diff import diff_json, diff_markdown, taxonomy_diff
from segbench.tasks.spin.taxonomy_plot import subparts_per_part_png

TAXONOMY_FILE = "taxonomy.yaml"
DIFF_FILE = "taxonomy.diff.md"
FIGURE_FILE = "taxonomy.png"
MANIFEST_FILE = "taxonomy.manifest.json"
_FILES = {"taxonomy": TAXONOMY_FILE, "diff": DIFF_FILE, "figure": FIGURE_FILE, "manifest": MANIFEST_FILE}


@task(**task_name("ask-subparts"), cache_policy=NO_CACHE)  # the provider retries what is transient
def ask_subparts(provider: Any, questions: list[Question]) -> list[SubpartProposal | AnswerRejected]:
    """One batch (the provider's cache replays answers on a rebuild); a question the model never
    answered usably is its rejection, in its place."""
    return answers_or_rejections(provider, questions, SubpartProposal)


@task(**task_name("ask-visibility"), cache_policy=NO_CACHE)  # the provider retries what is transient
def ask_visibility(provider: Any, questions: list[Question]) -> list[SubpartVisibility | AnswerRejected]:
    """Is each proposal a visible part? One question per proposal (cached like every answer)."""
    return answers_or_rejections(provider, questions, SubpartVisibility)


@task(**task_name("write-taxonomy"), cache_policy=NO_CACHE)
def write_taxonomy(build: Build, taxonomy: Taxonomy, diff_text: str, built: Built) -> dict[str, Path]:
    """Write the four files into ``build.out``; the taxonomy last-but-one and the manifest last, each atomically.

    The diff is kept when the taxonomy is the one already there: it describes the last change. The
    manifest lists only these three files: the folder also holds the SPIN dataset.
    """
    out_dir = build.out
    text, taxonomy_path, diff_path = spin_taxonomy.taxonomy_yaml(taxonomy), out_dir / TAXONOMY_FILE, out_dir / DIFF_FILE
    unchanged = taxonomy_path.is_file() and taxonomy_path.read_text("utf-8") == text
    if not (unchanged and diff_path.is_file()):
        atomic_write_text(diff_path, diff_text)
    figure_path = atomic_write_bytes(out_dir / FIGURE_FILE, subparts_per_part_png(taxonomy))
    atomic_write_text(taxonomy_path, text)
    outputs = {name: sha256_file(out_dir / name) for name in (TAXONOMY_FILE, DIFF_FILE, FIGURE_FILE)}
    manifest_path = write_manifest(out_dir, build.manifest(out_dir, built, outputs=outputs), MANIFEST_FILE)
    return {"taxonomy": taxonomy_path, "diff": diff_path, "figure": figure_path, "manifest": manifest_path}


def _catalog_sha256() -> str:
    return sha256_bytes(resources.files("segbench.resources").joinpath("spin", "partimagenet.json").read_bytes())


@flow(name="build-spin-taxonomy", flow_run_name=run_name("build-spin-taxonomy", ("edits",)))
def build_spin_taxonomy(out_dir: Path, provider: Any, edits: Path | None = None, force: bool = False,
                        prompt: str = spin_taxonomy.DEFAULT_PROMPT) -> TaxonomySummary:
    """Build ``out_dir/taxonomy.yaml`` and report what changed against the taxonomy already there.

    Args:
        out_dir: normally ``data/spin``; only ``taxonomy.*`` files are written there.
        provider: a language provider answering ``spin.subparts`` (``make_provider``: WordNet offline,
            a language model with ``provider = "openai"``). Typed ``Any``: Prefect cannot build a
            parameter schema from a ``Protocol``.
        edits: the edit file (default: the shipped ``taxonomy_edits.yaml``).
        force: rebuild even when the taxonomy was built with the same build key.
        prompt: how the subparts are asked for (:data:`segbench.tasks.spin.taxonomy.PROMPTS`): ``paper``,
            §8.1's question word for word, or ``segbench``, segbench's own.

    Returns:
        A summary: ``out`` (the folder), ``up_to_date``, counts, ``units`` (none: the build is not cut
        into units), the files' ``paths``, the diff against the taxonomy that was there (as JSON and
        Markdown) and the rules that changed nothing.

    Raises:
        InputError: a bad edit file, or a previous taxonomy that cannot be read.
        ProviderError: the provider cannot answer (in replay-only mode: an answer is not cached).
    """
    logger = get_run_logger()
    out_dir = Path(out_dir)
    catalog = spin_taxonomy.load_catalog()
    edits_path = Path(edits) if edits is not None else se.default_edits_path()
    rules, edits_sha = se.load_edits(edits_path, catalog)  # bad edits fail before any question is asked
    edits_label = edits_path.name if edits is None else str(edits_path)
    params = {"provider": provider.name, "model": provider.model, "question_kind": spin_taxonomy.QUESTION_KIND,
              "question_version": spin_taxonomy.PROMPTS[prompt].version,
              "visibility_question_version": spin_taxonomy.VISIBILITY_VERSION, "edits": edits_label}
    hashes = {f"edits:{edits_label}": edits_sha, "catalog:partimagenet.json": _catalog_sha256()}
    build = Build(out=out_dir, dataset="spin-taxonomy", logic_version=versions.TAXONOMY, params=params,
                  input_hashes=hashes, manifest_name=MANIFEST_FILE)
    paths = {k: out_dir / f for k, f in _FILES.items()}
    if build.is_up_to_date(force):
        logger.info("%s is up to date", out_dir / TAXONOMY_FILE)
        counts = read_manifest(out_dir, MANIFEST_FILE).counts
        current = load_taxonomy(out_dir / TAXONOMY_FILE)
        unchanged = taxonomy_diff(current, current)
        summary = build.up_to_date_summary(counts, {"paths": paths, "diff": diff_json(unchanged),
                                                    "diff_markdown": diff_markdown(unchanged),
                                                    "unused_rules": counts["unused_rule_names"]},
                                            TaxonomySummary)
        publish_build("spin-taxonomy", summary)
        return summary

    taxonomy, counts, scores, not_visible = _ask(catalog, rules, provider, edits_label, edits_sha, prompt)
    previous_path = out_dir / TAXONOMY_FILE
    diff = taxonomy_diff(load_taxonomy(previous_path) if previous_path.is_file() else None, taxonomy)
    diff.proposer, diff.not_visible = scores, not_visible
    if counts["unused_rule_names"]:
        logger.warning("edit rules that changed nothing: %s", ", ".join(counts["unused_rule_names"]))
    built = Built(counts=counts, extras={"paths": paths, "diff": diff_json(diff), "diff_markdown": diff_markdown(diff),
                                         "unused_rules": counts["unused_rule_names"]})
    summary = build.summary(built, TaxonomySummary)  # checked before anything is written
    # Not run_build: the folder holds the SPIN dataset too, so the files are written in place, not swapped in.
    write_taxonomy(build, taxonomy, summary.diff_markdown, built)
    logger.info("SPIN taxonomy: %s", plain({k: v for k, v in counts.items() if k != "unused_rule_names"}))
    publish_build("spin-taxonomy", summary)
    return summary


def _ask(catalog: spin_taxonomy.Catalog, rules: TaxonomyEdits, provider: Any, edits_label: str, edits_sha: str,
         prompt: str) -> tuple[Taxonomy, dict[str, Any], list[se.ProposerScore] | None, dict[str, list[str]]]:
    """Ask the provider for subparts and whether each is visible, apply the edit rules to the visible
    ones, and count what came of it (with the proposer's recall and precision against the edit file's
    reference, when it has one). Also returns the proposals dropped as not visible, per part."""
    asked = spin_taxonomy.PROMPTS[prompt]
    questions = spin_taxonomy.subpart_questions(catalog, prompt)
    answers = ask_subparts(provider, questions)
    # A part the model never answered usably gets no proposals; a proposal whose visibility it never
    # answered usably did not pass the check. Both are counted, and logged with the model's error.
    rejected = [a for a in answers if isinstance(a, AnswerRejected)]
    proposals = spin_taxonomy.proposals_from_answers(catalog, [
        SubpartProposal(object=q.inputs["object"], part=q.inputs["part"], subparts=[])
        if isinstance(a, AnswerRejected) else a for q, a in zip(questions, answers, strict=True)])
    checks = ask_visibility(provider, spin_taxonomy.visibility_questions(catalog, proposals))
    rejected += [a for a in checks if isinstance(a, AnswerRejected)]
    visibility = [SubpartVisibility(subpart="", visible=False) if isinstance(a, AnswerRejected) else a for a in checks]
    visible, not_visible = spin_taxonomy.split_visible(catalog, proposals, visibility)
    outcome = se.apply_edits(catalog, visible, f"{provider.name}:{provider.model}", rules, not_visible)
    taxonomy = spin_taxonomy.build_taxonomy(outcome.parts, provider=provider.name, model=provider.model,
                                            edits_file=edits_label, edits_sha256=edits_sha,
                                            question_version=asked.version)
    counts = {"parts": len(taxonomy.parts), "questions": len(questions),
              "proposed": sum(len(v) for v in proposals.values()),
              "not_visible": sum(len(v) for v in not_visible.values()),
              "subparts": sum(len(p.subparts) for p in taxonomy.parts),
              "removed": sum(len(p.removed) for p in taxonomy.parts),
              "object_specific": sum(1 for p in taxonomy.parts for s in p.subparts if s.objects is not None),
              "unused_rules": len(outcome.unused_rules), "unused_rule_names": outcome.unused_rules}
    if provider.name != "wordnet":  # a language model: what it could not answer, and whether it looks wrong
        suspect = spin_taxonomy.proposal_suspicions(proposals, [a.visible for a in checks
                                                                 if not isinstance(a, AnswerRejected)], asked.example)
        counts |= {"rejected_answers": len(rejected), "suspect": suspect}
        logger = get_run_logger()
        for error in rejected:
            logger.warning("no usable answer, skipped: %s", error.message)
        for reason in suspect:
            logger.warning("the model's proposals look wrong: %s", reason)
    if outcome.scores is not None:
        total = se.total_score(outcome.scores)
        before = se.total_score(se.proposer_scores(catalog, proposals, rules.reference or {}))
        # Whole numbers: the manifest writes floats rounded, and an up-to-date run reads its counts back.
        counts |= {"reference_subparts": total.reference, "proposer_matched_reference": total.matched_reference,
                   "proposer_matched_proposals": total.matched_proposals,
                   "proposer_matched_reference_before_visibility": before.matched_reference}
    return taxonomy, counts, outcome.scores, not_visible
