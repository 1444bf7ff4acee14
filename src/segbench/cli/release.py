"""``segbench release``: a built dataset as a folder others load without segbench, optionally pushed to the Hub."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from pydantic import SecretStr

from segbench import console, registry
from segbench.cli.common import TRACK, display_path, relative_to_repo, run_flow, run_here, settings_of
from segbench.core.errors import InputError
from segbench.core.paths import check_output_folder

if TYPE_CHECKING:
    from segbench.schemas.release import ReleaseResult

DEFAULT_INFO = Path("release.toml")


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add ``release`` to the root command group."""
    app.command("release")(release_command)


def _dataset(name: str) -> str:
    name = name.replace("-", "_")
    if name not in registry.names():
        raise typer.BadParameter(f"unknown dataset {name!r}; choose among {', '.join(registry.names())}")
    spec = registry.dataset(name)
    if spec.release_plan is None:
        raise typer.BadParameter(f"{spec.title} cannot be released")
    return name


def release_command(
    ctx: typer.Context,
    dataset: str = typer.Argument(..., callback=_dataset, help="coco_cd, waterbirds, cafe, spin or vocab."),
    out: Path = typer.Option(..., "--out", help="The release folder (replaced whole when the release succeeds).",
                             callback=check_output_folder),
    rev: str = typer.Option(None, "--rev", help="A published data version (git tag or commit) instead of the "
                                                "working tree."),
    path: str = typer.Option(None, "--path", help="The build's folder relative to the project (default: its "
                                                  "folder in the data root, e.g. data/vocab/coco_cd)."),
    info_file: Path = typer.Option(None, "--info", help="release.toml with the fields a build cannot know (default: "
                                                        "./release.toml if present)."),
    annotations_license: str = typer.Option(None, "--annotations-license", help="SPDX id of the annotations' "
                                                                                "licence, e.g. cc-by-4.0."),
    intended_uses: str = typer.Option(None, "--intended-uses", help="What the data is for."),
    social_impact: str = typer.Option(None, "--social-impact", help="Its possible impact, good and bad."),
    personal_information: str = typer.Option(None, "--personal-information",
                                             help="Whether it holds personal or sensitive information."),
    maintainer: str = typer.Option(None, "--maintainer", help="Who maintains it (name and contact)."),
    embed_restricted: bool = typer.Option(False, "--embed-restricted",
                                          help="Embed images whose licence forbids redistribution."),
    push: str = typer.Option(None, "--push", help="Upload the folder to the Hub dataset repository ORG/NAME."),
    tag: str = typer.Option(None, "--tag", help="The tag of the pushed commit (default: --rev, else build-<build key>)."),
    track: bool = TRACK,
) -> None:
    """Write a release of a built dataset that loads without segbench.

    Parquet with the images and masks embedded, a dataset card, Croissant with Responsible-AI fields, a
    datasheet, licences, a gallery and the native files."""
    from segbench.schemas.release import load_release_info

    settings = settings_of(ctx)
    data_root = settings.data_root.resolve()
    if out.resolve() == data_root or data_root in out.resolve().parents or out.resolve() in data_root.parents:
        raise InputError("a release folder cannot be the data root, inside it or around it", path=out,
                         hint=f"give a folder outside {display_path(data_root)}, e.g. releases/{dataset}")
    if out.is_dir() and any(out.iterdir()):
        from segbench.core.release.croissant import files_not_released

        stray = files_not_released(out)
        if stray is None:
            raise InputError("the folder holds files but no release; a release replaces its folder whole", path=out,
                             hint="give a new or empty folder, or one a previous release wrote")
        if stray:
            more = f" and {len(stray) - 1} more" if len(stray) > 1 else ""
            raise InputError(f"the folder holds {stray[0]}{more}, which its release did not write; a release "
                             "replaces its folder whole", path=out,
                             hint="move those files elsewhere, or give a new or empty folder")
    if info_file is None and DEFAULT_INFO.is_file():
        info_file = DEFAULT_INFO
    info = load_release_info(info_file, annotations_license=annotations_license, intended_uses=intended_uses,
                             social_impact=social_impact, personal_information=personal_information,
                             maintainer=maintainer, embed_restricted=embed_restricted or None)
    info.require_complete(str(info_file or "release"))
    token = settings.hub_token or (SecretStr(os.environ["HF_TOKEN"]) if os.environ.get("HF_TOKEN") else None)
    repo = Path(".").resolve()
    data_dir = path or relative_to_repo(settings.data_root / registry.dataset(dataset).default_out, repo)
    options = {"dataset": dataset, "out": out.resolve(), "info": info, "repo": repo, "rev": rev, "data_dir": data_dir,
               "push": push, "tag": tag, "hub_endpoint": settings.hub_endpoint or os.environ.get("HF_ENDPOINT")}
    if track or settings.track_evaluations:
        from segbench.flows.release import release_dataset  # Prefect, and its server, only past the checks

        result = run_flow(ctx, release_dataset, reads_only=True, hub_token=token, **options)
    else:
        result = run_here(ctx, _release_here, hub_token=token, **options)
    print_release(result)


def _release_here(hub_token: SecretStr | None, **options: Any) -> ReleaseResult:
    """The release flow's work in this process, without Prefect (the same files)."""
    from segbench.core.release.make import make_release
    from segbench.core.steps import InProcess

    result = make_release(InProcess(), **options)
    if options["push"] and result.tag:
        from segbench.providers.hub import push_folder

        result.pushed_to = push_folder(result.out, options["push"], tag=result.tag, endpoint=options["hub_endpoint"],
                                       token=hub_token)
    return result


def print_release(result: ReleaseResult) -> None:
    console.out.print(console.key_values(f"Released {result.dataset}", {
        "folder": display_path(result.out),
        "data version": result.version,
        "configs": ", ".join(f"{config} ({', '.join(f'{s} {n}' for s, n in splits.items())})"
                             for config, splits in result.configs.items()),
        "images embedded": result.embedded_images,
        "images withheld (licence)": result.withheld_images,
        "files": len(result.files),
        "pushed to": f"{result.pushed_to} (tag {result.tag})" if result.pushed_to else "–",
    }))
