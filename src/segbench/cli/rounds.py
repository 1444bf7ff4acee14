"""``segbench rounds``: create, launch, watch, ingest and close human annotation rounds, on any backend.

``rounds create KIND KEY …`` has one subcommand per registered round kind (the command its
``RoundKind.create`` names: what it selects is the dataset's); everything after creation is the same
for every kind.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
import typer.main
from typer.core import TyperGroup

from segbench import console
from segbench.cli.common import display_path, existing, flow_command_lock, settings_of
from segbench.core.errors import OnError
from segbench.locking import command_lock

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from typer._click.core import Command  # the click typer vendors, which TyperGroup's commands hold

    from segbench.annotation_ui.gold import QualityArgs
    from segbench.schemas.rounds import LeftOut, RoundIngest


class _KindCommands(TyperGroup):
    """``rounds create``'s subcommands, one per registered round kind (the command its ``RoundKind.create``
    names), made when first asked for: the kinds import their label configs and mask code, which the
    command line's start-up should not pay for."""

    _made: MutableMapping[str, Command] | None = None

    @property
    def commands(self) -> MutableMapping[str, Command]:
        if self._made is None:
            from segbench import registry

            kinds = typer.Typer()
            for kind in registry.round_kinds().values():
                if kind.create is not None:
                    kinds.command(kind.name)(kind.create.load())
            self._made = typer.main.get_group(kinds).commands
        return self._made

    @commands.setter
    def commands(self, value: MutableMapping[str, Command]) -> None:
        """click sets the commands it was given (none): the kinds' are made on first use."""


app = typer.Typer(help="Human annotation rounds on Label Studio or as files for an external crowd.",
                  no_args_is_help=True)
create_app = typer.Typer(cls=_KindCommands, no_args_is_help=True,
                         help="Create a round record (data/rounds/KEY.json) of one kind with its selected items; "
                              "each dataset registers its kinds.")
app.add_typer(create_app, name="create")


class Backend(str, enum.Enum):
    labelstudio = "labelstudio"
    files = "files"


class Aggregation(str, enum.Enum):
    """The choices of ``rounds ingest --aggregation`` (segbench.core.aggregation.METHODS, not imported here:
    the command line stays light)."""

    screened = "screened"
    majority = "majority"
    dawid_skene = "dawid-skene"
    glad = "glad"


def round_key(key: str) -> str:
    """Refuse a key that is no file-safe name when the command line is read, before any work starts."""
    from segbench.annotation_ui.rounds import check_round_key

    return check_round_key(key)


# The options of every dataset's round-creating command.
ROUND_KEY = typer.Argument(..., help="Name of the round (letters, digits, - _ .).", callback=round_key)
BACKEND = typer.Option(Backend.labelstudio, "--backend", help="Label Studio, or files for a crowd.")
OVERWRITE = typer.Option(False, "--overwrite", help="Replace an existing round with this key.")
GOLD = typer.Option("0", "--gold", metavar="N|auto",
                    help="Mix in N gold items (known answers, scored per worker), chosen by --seed and balanced per "
                         "known answer; auto: enough for each of --expected-workers workers to see the worker report's "
                         "minimum of gold answers at this overlap.")
WORKERS = typer.Option(None, "--expected-workers", min=1, help="How many distinct workers you expect: sizes --gold auto and "
                                                      "warns when each would see too little gold to be judged.")
RULE = typer.Option(None, "--rule", metavar="NAME=VALUE", help="Set a worker report rule for this round "
                                                               "(repeatable), e.g. --rule min_kappa=0.3.")
GOLD_FILE = typer.Option(None, "--gold-file", callback=existing, help="More gold items from a JSON list of items with a 'gold' answer.")
GOLD_FROM = typer.Option(None, "--gold-from", metavar="ROUND",
                         help="More gold items: those of an ingested round of this kind that at least 3 people "
                              "answered all alike (images the rules cannot judge included).")
QUALIFICATION = typer.Option(False, "--qualification", help="A qualification round: only gold items; its "
                                                            "ingest writes the pass list that --requires reads.")
PASS_THRESHOLD = typer.Option(None, "--pass-threshold", help="Qualification: gold accuracy (0-1] to pass.")
REQUIRES = typer.Option(None, "--requires", help="Count only answers of workers who passed this qualification round.")


def quality_kwargs(gold: str | int, gold_file: Path | None, qualification: bool, pass_threshold: float | None,
                   requires: str | None, *, overlap: int = 1, workers: int | None = None,
                   rules: list[str] | None = None, gold_from: str | None = None) -> QualityArgs:
    """The gold, qualification and rule options of a create command, as keyword arguments of its
    create flow (``--gold auto`` resolved from ``overlap`` and ``workers``; checked before any work)."""
    from segbench.annotation_ui.gold import check_rules, gold_count, parse_rules

    parsed = check_rules(parse_rules(rules or []))
    return {"gold": gold_count(gold, overlap=overlap, workers=workers, rules=parsed), "gold_file": gold_file,
            "gold_from": round_key(gold_from) if gold_from else None,
            "purpose": "qualification" if qualification else "work", "pass_threshold": pass_threshold,
            "requires": round_key(requires) if requires else None, "rules": parsed}


def warn_thin_gold(round_: Any, workers: int | None) -> None:
    """Warn when the round's gold is too thin for the worker report to judge workers on it."""
    from segbench.annotation_ui.gold import thin_gold_warning

    message = thin_gold_warning(round_, workers)
    if message:
        console.err.print(f"[yellow]warning:[/] {message}")


def register(build_app: typer.Typer, evaluate_app: typer.Typer, root: typer.Typer) -> None:
    """Add launch … list (``rounds create <kind>`` finds the registered kinds itself)."""
    for command in (launch, status, ingest, close, list_, invite):
        app.command(command.__name__.rstrip("_"))(command)
    app.command("follow-up")(follow_up)


def _data_root(ctx: typer.Context) -> Path:
    return settings_of(ctx).data_root


def print_round(round_: Any, title: str) -> None:
    """A round record: its key, kind, status, backend, project, items and counts (the --json summary)."""
    console.set_summary(round_)
    console.out.print(console.key_values(title, {
        "key": round_.key, "kind": round_.kind, "status": round_.status.value, "backend": round_.backend,
        **({"annotators' own servers": ", ".join(round_.annotators)} if round_.annotators
           else {"project id": round_.project_id}),
        "items": len(round_.items), "overlap": round_.config.overlap,
        **({"gold items": sum(1 for i in round_.items if i.gold)} if any(i.gold for i in round_.items) else {}),
        **({"purpose": f"qualification (pass at gold accuracy ≥ {round_.pass_threshold})"}
           if round_.purpose == "qualification" else {}),
        **({"requires": f"pass list of {round_.requires}"} if round_.requires else {}),
        "dataset": f"{round_.dataset} ({round_.dataset_version[:12]})", "aggregation": round_.aggregation,
        **({"follows up": round_.follow_up_of} if round_.follow_up_of else {}),
        **({"batches out": ", ".join(round_.launched_batches)} if round_.launched_batches is not None else {}),
        **{k.replace("_", " "): v for k, v in round_.counts.items()},
    }))


def launch(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The round."),
    batch: str | None = typer.Option(None, "--batch", help="Launch only this batch's items (SPIN: a "
                                     "super-category; CAFE: SM, CC or OC); later launches add other batches."),
    annotators: list[str] | None = typer.Option(
        None, "--annotator", metavar="NAME", show_default=False,
        help="Keep annotators apart: put every task on this annotator's own Label Studio server (started with "
             "scripts/label-studio.sh start --annotator NAME), where nobody else's answers exist. Repeat it once "
             "per answer the round asks for each task (its overlap)."),
) -> None:
    """Create the Label Studio project and import the tasks (or write the crowd's task files).

    Safe to repeat. With --batch, only that batch's tasks go out (a phased rollout); launching
    another batch later adds its tasks, also after an ingest; without --batch every item goes out.
    With --annotator, each named annotator gets every task on a server of their own: on one
    community-edition server every annotator can open every other's answers."""
    from segbench.annotation_ui.preflight import check_launch

    settings = settings_of(ctx)
    # A bad batch, a token not configured or a server that does not answer fails before Prefect starts.
    check = check_launch(settings.data_root, key, settings.label_studio(), batch, annotators or None)

    from segbench.flows.rounds import launch_round

    with flow_command_lock(ctx):
        round_ = launch_round(settings.data_root, key, settings.label_studio(), batch, annotators or None)
    print_round(round_, "Round launched")
    console.out.print(check.backend.launch_hint(round_))


def status(ctx: typer.Context, key: str = typer.Argument(..., help="The round.")) -> None:
    """Tasks done / total and answers per annotator, read from the backend."""
    from segbench.annotation_ui.views import round_progress  # not the flows: no Prefect for a read

    settings = settings_of(ctx)
    progress = round_progress(settings.data_root, key, settings.label_studio())
    console.set_summary(progress)
    console.out.print(console.key_values(f"Round {key}", {
        "status": progress.status, "tasks done": f"{progress.done} / {progress.tasks}",
        "answers": progress.annotations, "aggregation": progress.aggregation,
        **({"follows up": progress.follow_up_of} if progress.follow_up_of else {}),
    }))
    rows = [[annotator, *([progress.names.get(annotator, "")] if progress.names else []), answers]
            for annotator, answers in sorted(progress.by_annotator.items())]
    if rows:
        headers = ["annotator", *(["name"] if progress.names else []), "answers"]
        console.out.print(console.table("Answers per annotator", headers, rows))
    if progress.batches:
        console.out.print(console.table("Batches", ["batch", "items", "launched", "answered"],
                                        [[b.batch, b.items, b.launched, b.answered] for b in progress.batches]))
    print_left_out(progress.left_out)


def print_left_out(left_out: list[LeftOut]) -> None:
    """The workers the screened ingest left out of SPIN's masks, with why (nothing when none were)."""
    if left_out:
        console.out.print(console.table("Flagged: left out of the masks (their answers still weighed in the labels)",
                                        ["worker", "reasons"], [[e.worker, "; ".join(e.reasons)] for e in left_out]))


def ingest(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The round."),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="Bad answers: fail, or skip and report them."),
    aggregation: Aggregation | None = typer.Option(
        None, "--aggregation", show_default=False,
        help="How choices are aggregated: screened (Dawid-Skene anchored on the gold answers, fitted again "
             "without the workers the worker report flags), or a plain method for comparison: majority vote, "
             "Dawid-Skene, GLAD (every counted worker, no gold). Default: the round's method (screened for "
             "new rounds)."),
) -> None:
    """Bring the answers back, aggregate them, compute agreement (safe to repeat)."""
    from segbench.annotation_ui.preflight import check_ingest

    settings = settings_of(ctx)
    # A missing round, a round not launched, a damaged answers file, a gate not yet passable or a bad
    # results file of a crowd fails here, in a second, before Prefect starts.
    check_ingest(settings.data_root, key, settings.label_studio(), on_error)

    from segbench.flows.rounds import ingest_round

    with flow_command_lock(ctx):
        result = ingest_round(settings.data_root, key, settings.label_studio(), on_error,
                              aggregation.value if aggregation else None)
    console.set_summary(result)
    print_ingest(result)


def print_ingest(result: RoundIngest) -> None:
    """What an ingest brought back: answers, agreement per question, the reports it wrote."""
    counts = result.counts
    console.out.print(console.key_values(f"Round {result.round.key} ingested", {
        "answers": counts.answers, "items answered": f"{counts.items_answered} / {counts.items}",
        "annotators": counts.annotators, "skipped": counts.skipped,
        "aggregation": result.round.aggregation, "answers file": display_path(result.answers),
    }))
    if not counts.answers:
        console.err.print(f"[yellow]No answers yet[/] for round {result.round.key}: ingest again once "
                          "annotators have answered.")
    for control, summary in result.agreement.items():
        console.out.print(console.key_values(f"Agreement on '{control}'", {
            "observed agreement (pairs)": summary.pairwise_agreement,
            _kappa_label(summary.method): summary.kappa if summary.kappa is not None else f"n/a ({summary.reason})",
            "Krippendorff's α": summary.alpha if summary.alpha is not None else "n/a",
        }))
    for name, path in result.reports.items():
        console.out.print(f"{name.replace('_', ' ')}: [bold]{display_path(Path(path))}[/]")
    workers = result.workers
    report = display_path(Path(workers.paths["workers_markdown"]))
    console.out.print(f"worker report: [bold]{report}[/] ({workers.suspicious} suspicious"
                      + (f", {counts.workers_left_out} left out of the masks" if counts.workers_left_out else "")
                      + (f", {counts.accounts_in_blocs} accounts answering as one counted as blocs"
                         if counts.accounts_in_blocs else "") + ")")
    if counts.labels_by:
        console.out.print(f"labels by: [bold]{counts.labels_by}[/] (chosen by the round's held-out gold; the worker "
                          "report says why)")
    if workers.passed is not None:
        console.out.print(f"pass list: [bold]{display_path(Path(workers.paths['pass_list']))}[/] ({workers.passed} passed)"
                          + (f"; MTurk qualification upload: {display_path(Path(workers.paths['qualification_csv']))}"
                             if "qualification_csv" in workers.paths else ""))


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

    data_root = _data_root(ctx)
    rounds = list_rounds(data_root)
    console.set_summary([{"key": r.key, "kind": r.kind, "status": r.status.value, "backend": r.backend,
                          "items": len(r.items), "updated_at": r.updated_at} for r in rounds])
    rows = [[r.key, r.kind, r.status.value, r.backend, len(r.items), r.updated_at] for r in rounds]
    console.out.print(console.table("Rounds", ["key", "kind", "status", "backend", "items", "updated"], rows)
                      if rows else f"No rounds in {display_path(data_root / 'rounds')} yet: segbench rounds create "
                      "KIND KEY creates one (KIND: see segbench rounds create --help; another data root: --data-root)")


def invite(
    ctx: typer.Context,
    annotator: str | None = typer.Option(None, "--annotator", metavar="NAME",
                                         help="The sign-up link of this annotator's own server instead."),
) -> None:
    """Print the sign-up link that adds an annotator to the Label Studio server.

    Sign-up is closed without it: send the link to each annotator, who opens it, signs up with an
    e-mail and a password, and then sees every project and every answer on the server (the
    community edition shares them all). With --annotator, the link of that annotator's own server,
    for them alone. Worker reports show annotators by that e-mail."""
    from segbench.annotation_ui.backends import BackendContext
    from segbench.annotation_ui.backends.labelstudio import LabelStudioBackend
    from segbench.core.errors import InputError

    settings = settings_of(ctx)
    connection = settings.label_studio()
    server = connection
    if annotator is not None:
        if annotator not in connection.annotators:
            started = ", ".join(connection.annotators) or "none"
            raise InputError(f"no Label Studio server of annotator {annotator} was ever started here (those that "
                             f"were: {started})",
                             item=f"--annotator {annotator}",
                             hint=f"scripts/label-studio.sh start --annotator {annotator}")
        server = connection.annotators[annotator]
    backend = LabelStudioBackend(BackendContext(settings.data_root, label_studio=connection))
    with backend.client(server) as client:
        link = client.invite_url()
    console.set_summary({"invite_url": link, **({"annotator": annotator} if annotator else {})})
    if annotator is None:
        console.out.print(f"Annotator sign-up link: [bold]{link}[/]")
        console.out.print("Send it to each annotator: they sign up with an e-mail and a password, then annotate at "
                          f"{client.url}/projects")
    else:
        console.out.print(f"Sign-up link of {annotator}'s own server: [bold]{link}[/]")
        console.out.print(f"Send it to {annotator} alone: they sign up with an e-mail and a password, then annotate "
                          f"at {client.url}/projects")


def follow_up(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The ingested round to follow up."),
    new_key: str = typer.Argument(..., help="Name of the follow-up round.", callback=round_key),
    where: list[str] = typer.Option(..., "--where", metavar="CONDITION", help="Which items to ask again: agreement<X, "
                                    "agreement:CONTROL<X, votes<N, suspicious or tie (repeat: any of them)."),
) -> None:
    """Create a follow-up round for the items of KEY that need more answers.

    Same kind, questions and backend as KEY (a round kept apart: the same annotators' servers); launch
    and ingest it as any round. Its ingest merges
    the answers of KEY's chain, and records per item the round that decided it. When no item
    matches, nothing is created and the command still succeeds (exit code 0)."""
    from segbench.annotation_ui.followups import create_follow_up, parse_condition
    from segbench.annotation_ui.rounds import RoundStore
    from segbench.core import clock

    conditions = [parse_condition(text) for text in where]
    store = RoundStore(_data_root(ctx) / "rounds")
    with command_lock(ctx):
        round_, matched = create_follow_up(store, key, new_key, conditions, clock.timestamp())
    if round_ is None:
        console.set_summary({"round": None, "follows_up": key, "matched": {}})
        console.out.print(f"No item of round {key} matches {' or '.join(c.text for c in conditions)}: "
                          "no follow-up round created.")
        return
    print_round(round_, f"Follow-up of {key} created")
    console.set_summary({"round": round_, "follows_up": key, "matched": matched})
    reasons: dict[str, int] = {}
    for hits in matched.values():
        for hit in hits:
            reasons[hit] = reasons.get(hit, 0) + 1
    console.out.print(console.table("Items per condition", ["condition", "items"], sorted(reasons.items())))
    console.out.print(f"Next: segbench rounds launch {new_key}")
