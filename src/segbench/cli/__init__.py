"""The ``segbench`` command line: build, evaluate, publish, demo.

Settings are resolved here (flags > environment > config file > defaults) and exported with
:func:`segbench.settings.configure_runtime` *before* any flow module (and so Prefect) is imported.
Errors segbench raises on purpose end the command with their message and exit code 2, never a
traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError

from segbench import console
from segbench.cli import cafe as cli_cafe
from segbench.cli import cafe_eval as cli_cafe_eval
from segbench.cli import rebuild as cli_rebuild
from segbench.cli import spin as cli_spin
from segbench.cli import spin_dataset as cli_spin_dataset
from segbench.cli import spin_eval as cli_spin_eval
from segbench.cli import vocab as cli_vocab
from segbench.cli import vocab_eval as cli_vocab_eval
from segbench.cli.common import (
    FORCE_BUILD,
    FORCE_EVALUATION,
    build_status,
    display_path,
    print_up_to_date,
    relative_to_repo,
    run_flow,
    settings_of,
)
from segbench.cli.rounds import app as rounds_app
from segbench.cli.rounds import print_ingest
from segbench.core.errors import OnError, SegbenchError
from segbench.settings import Settings, configure_runtime, load_settings

app = typer.Typer(
    help="Build segmentation evaluation datasets end to end and evaluate models on them.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)
build_app = typer.Typer(help="Build a dataset into the data root.", no_args_is_help=True)
evaluate_app = typer.Typer(help="Evaluate predictions on a published dataset version.", no_args_is_help=True)
app.add_typer(build_app, name="build")
app.add_typer(evaluate_app, name="evaluate")
app.add_typer(rounds_app, name="rounds")
app.add_typer(cli_vocab.app, name="vocab")
for _module in (cli_cafe, cli_cafe_eval, cli_rebuild, cli_spin, cli_spin_dataset, cli_spin_eval, cli_vocab_eval):
    _module.register(build_app, evaluate_app, app)


@app.callback()
def _root(
    ctx: typer.Context,
    config: Path = typer.Option(None, "--config", help="TOML config file (default: ./segbench.toml if present)."),
    data_root: Path = typer.Option(None, "--data-root", help="Where datasets are written (default: data)."),
    work_dir: Path = typer.Option(None, "--work-dir", help="Prefect state, demo inputs, temporary files "
                                                          "(default: .segbench)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show Prefect's run logs."),
    wait: float = typer.Option(0.0, "--wait", help="Seconds to wait when another command is writing to the same "
                                                   "data root (default: stop at once)."),
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True,
                                 callback=lambda value: _print_version() if value else None),
    runner: str = typer.Option(None, "--runner", help="Where sharded work runs: threads (in this process) or dask "
                                                      "(default: dask when --dask-address or --workers is given)."),
    dask_address: str = typer.Option(None, "--dask-address", help="Scheduler of a running Dask cluster, e.g. "
                                                                  "tcp://10.0.0.5:8786 (workers need the same paths)."),
    workers: int = typer.Option(None, "--workers", min=1, help="Start a local Dask cluster of N worker processes "
                                                               "for this command."),
) -> None:
    from segbench.flows.runner import RunnerSpec

    try:
        runner_spec = RunnerSpec.from_options(runner, dask_address, workers)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--runner/--dask-address/--workers") from None
    settings = load_settings(config, data_root=data_root, work_dir=work_dir)
    if config is not None:  # flows read their secrets from the settings themselves
        os.environ["SEGBENCH_CONFIG"] = str(config.resolve())
    configure_runtime(settings, verbose=verbose)
    ctx.obj = {"settings": settings, "wait": wait, "runner": runner_spec}


def _print_version() -> None:
    from segbench import __version__

    console.out.print(f"segbench {__version__}")
    raise typer.Exit()


def _coco_cd_params(**values: Any):
    from segbench.schemas.coco_cd import CocoCdParams

    return CocoCdParams(**{k: v for k, v in values.items() if v is not None})


@build_app.command("coco-cd")
def build_coco_cd_command(
    ctx: typer.Context,
    coco_root: Path = typer.Option(..., "--coco-root", help="COCO 2017 root: annotations/instances_{train,val}"
                                                           "2017.json and the train2017/, val2017/ image folders."),
    stuff_root: Path = typer.Option(..., "--stuff-root", help="Folder with stuff_{train,val}2017.json (COCO-Stuff)."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: <data root>/coco_cd)."),
    rho: list[float] = typer.Option(None, "--rho", help="Train correlation ρ; repeat for several (default: 0.5, 0.95)."),
    val_per_group: int = typer.Option(None, "--val-per-group", help="Val images per group (default: 50)."),
    test_per_group: int = typer.Option(None, "--test-per-group", help="Test images per group (default: 125)."),
    seed: int = typer.Option(None, "--seed", help="Seed of every random draw (default: 13)."),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="Bad items: fail, or skip them and list "
                                                                     "them in skipped.json."),
    images: bool = typer.Option(True, "--images/--no-images", help="Write the resized images (masks always)."),
    publish: bool = typer.Option(False, "--publish", help="Publish a DVC version of the data root afterwards."),
    shard_size: int = typer.Option(200, "--shard-size", min=1, help="Images per render unit, the grain of resume "
                                                                    "and of Dask tasks (does not change the output)."),
    force: bool = FORCE_BUILD,
) -> None:
    """Build COCO-CD: cat/dog images, indoor/outdoor context from COCO-Stuff, ρ-controlled splits.

    An output already built from the same inputs and parameters is left as is. A build that was
    interrupted (even killed) resumes where it stopped when run again.
    """
    settings = settings_of(ctx)
    params = _coco_cd_params(rhos=tuple(rho) if rho else None, val_per_group=val_per_group,
                             test_per_group=test_per_group, seed=seed, on_error=on_error, write_images=images)
    from segbench.tasks.coco_cd.selection.selection import source_files

    source_files(coco_root, stuff_root)  # fail on a wrong path before starting Prefect
    from segbench.flows.coco_cd.build.build import build_coco_cd

    repo = Path(".").resolve()
    if publish:
        from segbench.core.versioning import configure_remote, ensure_repo

        ensure_repo(repo)  # refuse before building, not after
        if settings.dvc_remote:
            configure_remote(repo, settings.dvc_remote, local=True)
    summary = run_flow(ctx, build_coco_cd, coco_root, stuff_root, out or settings.data_root / "coco_cd", params,
                       publish_repo=repo if publish else None,
                       publish_data_dir=relative_to_repo(settings.data_root, repo), shard_size=shard_size, force=force)
    _print_build_summary(summary)
    if publish:
        _print_publish_summary(summary["publish"])


def _print_build_summary(summary: dict[str, Any]) -> None:
    counts = summary["counts"]
    console.out.print(console.key_values("COCO-CD", {
        "source images": counts["source_images"],
        "with cat or dog": counts["with_target_class"],
        "  both classes (excluded)": counts["both_classes"],
        "  foreground too small / too large": f"{counts['fg_too_small']} / {counts['fg_too_large']}",
        "retained": counts["kept"],
        "  indoor / outdoor / unknown": "{indoor} / {outdoor} / {unknown}".format(**counts["context"]),
        "usable for splits": counts["usable"],
        "skipped (see skipped.json)": sum(summary["skipped"].values()),
    }))
    rows = [[rho, split, *values, sum(values)] for rho, splits in counts["splits"].items()
            for split, values in splits.items()]
    console.out.print(console.table("Group counts", ["ρ", "split", "cat·in", "cat·out", "dog·in", "dog·out", "total"], rows))
    out = display_path(Path(summary["out"]))
    console.out.print(f"Dataset: [bold]{out}[/]  (tables in {out}/tables)")
    console.out.print(build_status(summary))


@build_app.command("waterbirds")
def build_waterbirds_command(
    ctx: typer.Context,
    cub_root: Path = typer.Option(..., "--cub-root", help="CUB-200-2011 root: images.txt, classes.txt, "
                                                         "image_class_labels.txt, train_test_split.txt, images/, "
                                                         "segmentations/."),
    places_root: Path = typer.Option(..., "--places-root", help="Places365 root with one folder per place "
                                                               "(bamboo_forest, forest/broadleaf, ocean, lake/natural)."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: <data root>/waterbirds_seg)."),
    rho: list[float] = typer.Option(None, "--rho", help="Train correlation ρ; repeat for several (default: 0.5, 0.95)."),
    val_per_group: int = typer.Option(None, "--val-per-group", help="Val images per group (default: 5; "
                                                                    "the released build has 74)."),
    test_per_group: int = typer.Option(None, "--test-per-group", help="Test images per group (default: 10; "
                                                                      "the released build has 642)."),
    seed: int = typer.Option(None, "--seed", help="Seed of every random draw (default: 13)."),
    species_match: str = typer.Option("tokens", "--species-match", help="Waterbird keywords match whole name "
                                                                        "tokens, or substrings as the released build."),
    force: bool = FORCE_BUILD,
) -> None:
    """Build Waterbirds-seg: CUB birds composited on land/water places, ρ-controlled splits.

    Does nothing when the output was built from the same inputs and options; a killed build resumes."""
    from segbench.tasks.waterbirds.dataset.dataset import WaterbirdsParams, read_cub

    settings = settings_of(ctx)
    params = WaterbirdsParams(**{k: v for k, v in {
        "rhos": tuple(rho) if rho else None, "val_per_group": val_per_group, "test_per_group": test_per_group,
        "seed": seed, "species_match": species_match}.items() if v is not None})
    read_cub(cub_root)  # fail on a wrong path before starting Prefect
    from segbench.flows.waterbirds import build_waterbirds

    summary = run_flow(ctx, build_waterbirds, cub_root, places_root, out or settings.data_root / "waterbirds_seg", params,
                       force=force)
    print_waterbirds_summary(summary)


def print_waterbirds_summary(summary: dict[str, Any]) -> None:

    counts = summary["counts"]
    console.out.print(console.key_values("Waterbirds-seg", {
        "birds": counts["birds"], **{f"  {k}": v for k, v in counts["per_class"].items()},
        **{f"  {k}": v for k, v in counts["per_group"].items()}, "rendered": counts["rendered"],
        "substring-rule mislabels": ", ".join(m["species"] for m in summary["mislabels"]) or "none",
    }))
    rows = [[r, split, *values, sum(values)] for r, splits in counts["splits"].items() for split, values in splits.items()]
    console.out.print(console.table("Group counts", ["ρ", "split", "land·land", "land·water", "water·land",
                                                     "water·water", "total"], rows))
    console.out.print(f"Dataset: [bold]{display_path(Path(summary['out']))}[/]")
    console.out.print(build_status(summary))


@build_app.command("vocab")
def build_vocab_command(
    ctx: typer.Context,
    captions: list[Path] = typer.Option(..., "--captions", help="Caption file (COCO captions JSON, .txt, .jsonl, "
                                                               ".tsv, .parquet); repeat for several."),
    categories: str = typer.Option("ade20k_150", "--categories", help="Category set: ade20k_150, cityscapes_19, "
                                                                      "coco_cd, or a JSON file [{id, name, synonyms}]."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: <data root>/vocab/<categories>)."),
    min_count: int = typer.Option(None, "--min-count", help="Drop nouns seen fewer times (default: 2)."),
    top_k: int = typer.Option(None, "--top-k", help="Candidates per category put to the judge (default: 50)."),
    replay_only: bool = typer.Option(False, "--replay-only", help="Answer only from the cache; a miss is an error."),
    force: bool = FORCE_BUILD,
) -> None:
    """Build a valid vocabulary: mine nouns from captions, judge their relation to each category.

    Does nothing when the output was built from the same inputs and options; a killed build resumes
    without mining the finished shards again."""
    from segbench.providers import make_provider
    from segbench.schemas.vocab import VocabParams
    from segbench.tasks.vocab.vocabulary.vocabulary import load_categories

    settings = settings_of(ctx)
    dataset, _, _ = load_categories(categories)  # a bad name or file fails before Prefect starts
    params = VocabParams(spacy_model=settings.spacy_model,
                         **{k: v for k, v in {"min_count": min_count, "top_k": top_k}.items() if v is not None})
    provider = make_provider(settings, replay_only=replay_only or settings.replay_only)
    from segbench.flows.vocab.build.build import build_vocab

    summary = run_flow(ctx, build_vocab, captions, categories, out or settings.data_root / "vocab" / dataset, provider, params,
                   nltk_data=settings.work_dir / "nltk_data", force=force)
    print_vocab_summary(summary, provider)


def print_vocab_summary(summary: dict[str, Any], provider: Any) -> None:

    counts = summary["counts"]
    usage = summary["usage"]
    console.out.print(console.key_values(f"Vocabulary {summary['dataset']}", {
        "captions (distinct)": f"{counts['captions']} ({counts['distinct_captions']})",
        "nouns kept": counts["nouns"], "categories": counts["categories"], "candidates judged": counts["candidates"],
        **{f"  {level}": n for level, n in counts["levels"].items()},
        "provider": f"{provider.name} ({provider.model})",
        "calls / cache hits": f"{usage['calls']} / {usage['cache_hits']}",
        "tokens in / out": f"{usage['prompt_tokens']} / {usage['completion_tokens']}",
    }))
    console.out.print(f"Vocabulary: [bold]{display_path(Path(summary['out']))}[/]")
    console.out.print(build_status(summary))


def _evaluate(ctx: typer.Context, flow_name: str, dataset: str, predictions: Path, rev: str | None, repo: Path,
              rho: float, split: str, out: Path | None, force: bool) -> None:
    """Run one of the flip-metric evaluations (COCO-CD or Waterbirds-seg) and print its summary."""
    from segbench.flows import flip as evaluate

    settings = settings_of(ctx)
    dataset_dir = relative_to_repo(settings.data_root / dataset, repo)
    out = out or settings.data_root / "eval" / dataset / f"{rev or 'worktree'}-rho{rho:g}-{split}-{predictions.name}"
    result = run_flow(ctx, getattr(evaluate, flow_name), repo=repo, rev=rev, predictions=predictions, out=out, rho=rho,
                      split=split, dataset_dir=dataset_dir, force=force)
    print_up_to_date(result, out)
    _print_eval_summary(result)


_REV = typer.Option(None, "--rev", help="Git revision of the published dataset (default: working tree).")
_REPO = typer.Option(Path("."), "--repo", help="The git + DVC project holding data.dvc.")
_RHO = typer.Option(0.95, "--rho", help="Which ρ directory to read.")
_SPLIT = typer.Option("test", "--split", help="train, val or test.")
_OUT = typer.Option(None, "--out", help="Report folder (default: <data root>/eval/<dataset>/<run>).")


@evaluate_app.command("coco-cd")
def evaluate_coco_cd_command(
    ctx: typer.Context,
    predictions: Path = typer.Option(..., "--predictions", help="Folder of <image id:012d>.png label maps or "
                                                                ".npz files with 'probs' (3 × 512 × 512)."),
    rev: str = _REV, repo: Path = _REPO, rho: float = _RHO, split: str = _SPLIT, out: Path = _OUT,
    force: bool = FORCE_EVALUATION,
) -> None:
    """Evaluate predictions on COCO-CD: IoU, Fg-IoU, FG-Corr/Flip/Miss, group gaps, flip-risk deciles.

    Does nothing when the report is up to date with the split, its masks and the predictions."""
    _evaluate(ctx, "evaluate_coco_cd", "coco_cd", predictions, rev, repo, rho, split, out, force)


@evaluate_app.command("waterbirds")
def evaluate_waterbirds_command(
    ctx: typer.Context,
    predictions: Path = typer.Option(..., "--predictions", help="Folder of <image id:012d>.png label maps "
                                                                "(0/1 landbird/2 waterbird) or .npz files with 'probs'."),
    rev: str = _REV, repo: Path = _REPO, rho: float = _RHO, split: str = _SPLIT, out: Path = _OUT,
    force: bool = FORCE_EVALUATION,
) -> None:
    """Evaluate predictions on Waterbirds-seg: the COCO-CD flip metrics with landbird/waterbird, land/water.

    Does nothing when the report is up to date with the split, its masks and the predictions."""
    _evaluate(ctx, "evaluate_waterbirds", "waterbirds_seg", predictions, rev, repo, rho, split, out, force)


def _print_eval_summary(result: dict[str, Any]) -> None:
    m = result["summary"]
    fg = m["fg_decomposition"]
    first, second = (name for name in m["class_iou"] if name != "background")
    console.out.print(console.key_values("Evaluation", {
        "images": m["num_images"],
        f"IoU {first} / {second}": f"{_fmt(m['class_iou'][first])} / {_fmt(m['class_iou'][second])}",
        f"mIoU ({first}, {second})": m["miou"],
        "Fg-IoU": m["fg_iou"],
        "FG-Corr / FG-Flip / FG-Miss": " / ".join(_fmt(fg[k]) for k in ("corr", "flip", "miss")),
        "Flip per-image mean": m["flip"]["per_image_mean"],
        f"gap {first} / {second} (aligned − counterf.)":
            f"{_fmt(m['gaps'][first]['gap'])} / {_fmt(m['gaps'][second]['gap'])}",
        "top-decile share of flips": (m["flip_risk"] or {}).get("top_decile_share"),
    }))
    console.out.print(f"Report: [bold]{display_path(Path(result['paths']['report']))}[/]")


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def _publish(settings: Settings, *, commit: bool = False, message: str | None = None, tag: str | None = None,
             remote: str | None = None, remote_url: str | None = None, init_git: bool = False) -> Any:
    from segbench.flows.publish import publish_data
    from segbench.core.versioning import ensure_repo

    repo = Path(".").resolve()
    ensure_repo(repo, init_git=init_git)
    record = publish_data(repo=str(repo), data_dir=relative_to_repo(settings.data_root, repo), remote=remote,
                          remote_url=remote_url or settings.dvc_remote, commit=commit, message=message, tag=tag)
    _print_publish_summary(record)
    return record


def _print_publish_summary(record: Any) -> None:
    console.out.print(console.key_values("Published", {
        "data version (md5)": record.md5,
        "files": f"{record.nfiles} ({record.size / 1e6:.1f} MB)",
        "changed since last publish": record.changed,
        "pushed to": record.remote or "no remote configured (dvc remote add -d NAME URL)",
        "commit": record.commit if record.committed else f"{record.commit or '–'} (no new commit; "
                  "commit with --commit or git add data.dvc)",
        "tag": record.tag,
        "datasets": ", ".join(d.dataset for d in record.datasets) or "none",
    }))


@app.command()
def publish(
    ctx: typer.Context,
    remote: str = typer.Option(None, "--remote", help="Name of a configured DVC remote (default: the default remote)."),
    remote_url: str = typer.Option(None, "--remote-url", help="URL or path of a remote to use as the default "
                                                              "(saved in .dvc/config.local)."),
    commit: bool = typer.Option(False, "--commit", help="Commit data.dvc to git."),
    message: str = typer.Option(None, "--message", "-m", help="Commit message."),
    tag: str = typer.Option(None, "--tag", help="Tag the commit (needs --commit)."),
    init_git: bool = typer.Option(False, "--init-git", help="Run git init first if the folder is not a repository."),
) -> None:
    """Version the data root with DVC (dvc add, push) and optionally commit and tag it."""
    from segbench.locking import command_lock

    with command_lock(ctx):
        _publish(settings_of(ctx), commit=commit, message=message, tag=tag, remote=remote, remote_url=remote_url,
                 init_git=init_git)


@app.command()
def demo(
    ctx: typer.Context,
    seed: int = typer.Option(0, "--seed", help="Seed of the generated demo world."),
) -> None:
    """Run everything on a generated demo world: build every dataset, publish, evaluate."""
    from segbench.flows.demo import run_demo
    from segbench.providers import make_provider

    settings = settings_of(ctx)
    provider = make_provider(settings, replay_only=settings.replay_only)
    result = run_flow(ctx, run_demo, repo=Path("."), data_root=settings.data_root, work_dir=settings.work_dir,
                  provider=provider, seed=seed, dvc_remote=settings.dvc_remote, spacy_model=settings.spacy_model)
    _print_build_summary(result["coco_cd"])
    print_waterbirds_summary(result["waterbirds"])
    print_vocab_summary(result["vocab"], provider)
    print_ingest(result["audit"])
    _print_publish_summary(result["publish"])
    _print_eval_summary(result["evaluation"])
    cli_cafe.print_export(result["cafe"]["export"])
    cli_cafe_eval.print_cafe_evaluation(result["cafe_evaluation"])
    cli_spin.print_taxonomy(result["spin"]["taxonomy"], provider, diff=False)
    console.out.print(console.key_values("SPIN crowd rounds", {"rounds": len(result["spin"]["rounds"]),
                                                               **result["spin"]["crowd"]}))
    cli_spin_dataset.print_build(result["spin"]["spin"])
    cli_spin_eval.print_summary(result["spin"]["evaluation"])
    console.out.print("\n[bold green]Demo finished.[/] Where everything is:")
    width = max(map(len, result["paths"]))
    for label, path in result["paths"].items():
        console.out.print(f"  {label:<{width}}  {display_path(Path(path))}")


def main() -> None:
    """Console entry point: segbench errors end with their message and exit code 2."""
    try:
        app()  # click handles its own usage errors and exits
    except SegbenchError as exc:
        console.error(str(exc))
        sys.exit(2)
    except ValidationError as exc:
        first = exc.errors()[0]
        console.error(f"invalid parameter {'.'.join(map(str, first['loc']))}: {first['msg']}")
        sys.exit(2)
    except KeyboardInterrupt:
        console.error("interrupted")
        sys.exit(130)
