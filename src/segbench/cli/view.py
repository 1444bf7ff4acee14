"""``segbench view TARGET``: a build or a round in FiftyOne (images, masks, fields, saved views)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from segbench import console, registry
from segbench.cli.common import display_path, settings_of
from segbench.core.errors import InputError

if TYPE_CHECKING:  # the models load with the command, not with every command's start-up
    from segbench.schemas.views import ViewDocument, ViewLoaded


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add ``view`` to the root command group."""
    app.command("view")(view_command)


def view_command(
    ctx: typer.Context,
    target: str = typer.Argument(..., help="A dataset built in the data root (coco_cd, waterbirds, cafe, spin) or a "
                                           "round key (segbench rounds list)."),
    rho: str = typer.Option(None, "--rho", help="COCO-CD / Waterbirds-seg: the ρ whose splits to show (default: the "
                                                "most correlated built)."),
    port: int = typer.Option(5151, "--port", min=1, max=65535, help="The App's port on 127.0.0.1."),
    no_app: bool = typer.Option(False, "--no-app", help="Load the FiftyOne dataset and print what it holds, without "
                                                        "serving the App."),
) -> None:
    """Open a build or a round in the FiftyOne App on 127.0.0.1, until Ctrl-C.

    Images, masks as segmentations, splits as tags, groups, answers per annotator, the decision, and
    saved views (ties, disagreements with the automatic label, items answered by flagged workers).

    Needs FiftyOne in its own environment: scripts/fiftyone.sh install.
    """
    from segbench import fiftyone_app

    settings = settings_of(ctx)
    fiftyone_app.python(settings.fiftyone_dir)  # not installed: said before anything is read
    document = _document(target, settings.data_root, settings.fiftyone_dir, rho)

    def ready(loaded: ViewLoaded) -> None:
        print_loaded(loaded)
        if loaded.app is not None:
            console.out.print(f"FiftyOne App: [bold]{loaded.app}[/] (Ctrl-C stops it)")

    console.set_summary(fiftyone_app.show(document, settings.fiftyone_dir, port=None if no_app else port, ready=ready))


def _document(target: str, data_root: Path, fiftyone_dir: Path, rho: str | None) -> ViewDocument:
    from segbench.core.views import coco_view

    names = [spec.name for spec in registry.DATASETS if spec.view_files]
    if target in names:
        spec = registry.dataset(target)
        dataset = data_root / spec.default_out
        if not (dataset / "manifest.json").is_file():
            raise InputError(f"{spec.title} is not built here", path=dataset,
                             hint=f"build it first (segbench build {target.replace('_', '-')} --help)")
        files = spec.need(spec.view_files, "view")(dataset, rho)
        folders = {file.path.parent.name for file in files if file.path.parent.name.startswith("rho_")}
        name = _safe("-".join(["segbench", target, *sorted(folders)]))
        return coco_view(name, files, fiftyone_dir / "views" / name / "masks")
    if (data_root / "rounds" / f"{target}.json").is_file():
        from segbench.annotation_ui.round_view import round_view

        return round_view(data_root, target)
    raise InputError(f"{target!r} is neither a dataset with images nor a round in {display_path(data_root)}",
                     item=target, hint=f"datasets: {', '.join(names)}; rounds: segbench rounds list")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name)


def print_loaded(loaded: ViewLoaded) -> None:
    console.out.print(console.key_values(f"FiftyOne dataset {loaded.name}", {
        "samples": loaded.samples, **{f"view {name}": size for name, size in loaded.views.items()}}))
