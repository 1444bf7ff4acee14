"""``segbench rounds``: launch, watch, ingest and close human annotation rounds, on any backend.

Rounds are created by their dataset's commands (``rounds create`` for the COCO-CD context audit,
``build cafe-verification``, ``spin rounds``); everything after creation is the same for every kind.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

import typer

from segbench import console
from segbench.core.errors import OnError
from segbench.locking import command_lock

app = typer.Typer(help="Human annotation rounds on Label Studio or as files for an external crowd.",
                  no_args_is_help=True)


class Backend(str, enum.Enum):
    labelstudio = "labelstudio"
    files = "files"


def _round_key(key: str) -> str:
    """Refuse a key that is no file-safe name when the command line is read, before any work starts."""
    from segbench.annotation_ui.rounds import check_round_key

    return check_round_key(key)


# The options of every dataset's round-creating command.
ROUND_KEY = typer.Argument(..., help="Name of the round (letters, digits, - _ .).", callback=_round_key)
BACKEND = typer.Option(Backend.labelstudio, "--backend", help="Label Studio, or files for a crowd.")
OVERWRITE = typer.Option(False, "--overwrite", help="Replace an existing round with this key.")
GOLD = typer.Option(0, "--gold", help="Mix in N gold items (known answers, scored per worker), chosen by --seed.")
GOLD_FILE = typer.Option(None, "--gold-file", help="More gold items from a JSON list of items with a 'gold' answer.")
QUALIFICATION = typer.Option(False, "--qualification", help="A qualification round: only gold items; its "
                                                            "ingest writes the pass list that --requires reads.")
PASS_THRESHOLD = typer.Option(None, "--pass-threshold", help="Qualification: gold accuracy (0-1] to pass.")
REQUIRES = typer.Option(None, "--requires", help="Count only answers of workers who passed this qualification round.")


def quality_kwargs(gold: int, gold_file: Path | None, qualification: bool, pass_threshold: float | None,
                   requires: str | None) -> dict[str, Any]:
    """The gold and qualification options of a create command, as keyword arguments of its create flow."""
    from segbench.annotation_ui.gold import check_gold_count

    return {"gold": check_gold_count(gold), "gold_file": gold_file,
            "purpose": "qualification" if qualification else "work", "pass_threshold": pass_threshold,
            "requires": _round_key(requires) if requires else None}


def register(build_app: typer.Typer, evaluate_app: typer.Typer, root: typer.Typer) -> None:
    """Add launch … list to the ``rounds`` group, after the create commands the datasets added."""
    for command in (launch, status, ingest, close, list_):
        app.command(command.__name__.rstrip("_"))(command)


def _data_root(ctx: typer.Context) -> Path:
    return ctx.obj["settings"].data_root


def print_round(round_: Any, title: str) -> None:
    """A round record: its key, kind, status, backend, project, items and counts (the --json summary)."""
    console.set_summary(round_)
    console.out.print(console.key_values(title, {
        "key": round_.key, "kind": round_.kind, "status": round_.status.value, "backend": round_.backend,
        "project id": round_.project_id, "items": len(round_.items), "overlap": round_.config.overlap,
        **({"gold items": sum(1 for i in round_.items if i.gold)} if any(i.gold for i in round_.items) else {}),
        **({"purpose": f"qualification (pass at gold accuracy ≥ {round_.pass_threshold})"}
           if round_.purpose == "qualification" else {}),
        **({"requires": f"pass list of {round_.requires}"} if round_.requires else {}),
        "dataset": f"{round_.dataset} ({round_.dataset_version[:12]})",
        **{k.replace("_", " "): v for k, v in round_.counts.items()},
    }))


def launch(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The round."),
) -> None:
    """Create the Label Studio project and import the tasks (or write the crowd's task files)."""
    from segbench.annotation_ui.backends import backend_for
    from segbench.flows.rounds import launch_round

    settings = ctx.obj["settings"]
    with command_lock(ctx):
        round_ = launch_round(settings.data_root, key, settings.label_studio_url, settings.label_studio_files)
    print_round(round_, "Round launched")
    backend = backend_for(round_, settings.data_root, label_studio_url=settings.label_studio_url)
    console.out.print(backend.launch_hint(round_))


def status(ctx: typer.Context, key: str = typer.Argument(..., help="The round.")) -> None:
    """Tasks done / total and answers per annotator, read from the backend."""
    from segbench.annotation_ui.views import round_progress  # not the flows: no Prefect for a read

    settings = ctx.obj["settings"]
    progress = round_progress(settings.data_root, key, settings.label_studio_url)
    console.set_summary(progress)
    console.out.print(console.key_values(f"Round {key}", {
        "status": progress["status"], "tasks done": f"{progress['done']} / {progress['tasks']}",
        "answers": progress["annotations"],
    }))
    rows = sorted(progress["by_annotator"].items())
    if rows:
        console.out.print(console.table("Answers per annotator", ["annotator", "answers"], rows))


def ingest(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The round."),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="Bad answers: fail, or skip and report them."),
) -> None:
    """Bring the answers back, aggregate them, compute agreement (safe to repeat)."""
    from segbench.annotation_ui.gold import pass_list
    from segbench.annotation_ui.rounds import RoundStore

    settings = ctx.obj["settings"]
    store = RoundStore(settings.data_root / "rounds")
    # A missing round, a damaged answers file or a gate not yet passable fails here, before Prefect starts.
    pass_list(store, store.load(key))
    store.load_answers(key)

    from segbench.flows.rounds import ingest_round

    with command_lock(ctx):
        result = ingest_round(settings.data_root, key, settings.label_studio_url, on_error)
    print_ingest(result)


def print_ingest(result: dict[str, Any]) -> None:
    """What an ingest brought back: answers, agreement per question, the reports it wrote."""
    console.set_summary(result)
    counts = result["counts"]
    console.out.print(console.key_values(f"Round {result['round'].key} ingested", {
        "answers": counts["answers"], "items answered": f"{counts['items_answered']} / {counts['items']}",
        "annotators": counts["annotators"], "skipped": counts["skipped"], "answers file": result["answers"],
    }))
    if not counts["answers"]:
        console.err.print(f"[yellow]No answers yet[/] for round {result['round'].key}: ingest again once "
                          "annotators have answered.")
    for control, summary in result["agreement"].items():
        console.out.print(console.key_values(f"Agreement on '{control}'", {
            "mean agreement rate": summary.get("mean_agreement"),
            _kappa_label(summary["method"]): summary["kappa"] if summary["kappa"] is not None
            else f"n/a ({summary['reason']})",
        }))
    for name, path in result["reports"].items():
        console.out.print(f"{name.replace('_', ' ')}: [bold]{path}[/]")
    workers = result.get("workers")
    if workers:
        console.out.print(f"worker report: [bold]{workers['paths']['workers_markdown']}[/] "
                          f"({workers['suspicious']} suspicious)")
    if workers and "passed" in workers:
        console.out.print(f"pass list: [bold]{workers['paths']['pass_list']}[/] ({workers['passed']} passed)"
                          + (f"; MTurk qualification upload: {workers['paths']['qualification_csv']}"
                             if "qualification_csv" in workers["paths"] else ""))


def _kappa_label(method: str | None) -> str:
    """``Fleiss' κ`` / ``Cohen's κ``: the statistic's name, not a repr of the method's."""
    names = {"fleiss": "Fleiss' κ", "cohen": "Cohen's κ"}
    return names.get(method or "", f"κ ({method})" if method else "κ")


def close(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The round."),
    cancel: bool = typer.Option(False, "--cancel", help="Cancel instead of closing."),
    force: bool = typer.Option(False, "--force", help="Close even though some items have no answer."),
) -> None:
    """Close an ingested round (its answers are final), or cancel it.

    Refuses while items have no answer, unless --force."""
    from segbench.flows.rounds import close_round

    with command_lock(ctx):
        round_ = close_round(_data_root(ctx), key, cancel=cancel, force=force)
    print_round(round_, "Round cancelled" if cancel else "Round closed")


def list_(ctx: typer.Context) -> None:
    """Every round with its status."""
    from segbench.annotation_ui.views import list_rounds  # not the flows: no Prefect for a read

    rounds = list_rounds(_data_root(ctx))
    console.set_summary([{"key": r.key, "kind": r.kind, "status": r.status.value, "backend": r.backend,
                          "items": len(r.items), "updated_at": r.updated_at} for r in rounds])
    rows = [[r.key, r.kind, r.status.value, r.backend, len(r.items), r.updated_at] for r in rounds]
    console.out.print(console.table("Rounds", ["key", "kind", "status", "backend", "items", "updated"], rows)
                      if rows else "No rounds yet: segbench rounds create KEY")
