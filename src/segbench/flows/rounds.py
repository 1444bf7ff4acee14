"""Annotation round flows: create, launch, progress, ingest, close — on any round backend.

A round is a saved record (``data/rounds/<key>.json``); each step loads it, does its one thing and
saves the new status, so no flow ever waits for people. Launch and ingest are idempotent: a second
launch imports nothing new, a second ingest converges to the same answers.

Where tasks go and answers come from is the round's backend (:mod:`segbench.annotation_ui.backends`);
what a round asks and which reports its ingest writes is its kind
(:mod:`segbench.annotation_ui.kinds`, registered by each dataset). Nothing here names either.
Secrets stay out of flow parameters (Prefect stores those): backends read them from the settings.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from prefect import Task, flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench.annotation_ui import batches, followups, gold, rounds
from segbench.annotation_ui.backends import RoundBackend, backend_for
from segbench.annotation_ui.backends.files import files_dir
from segbench.annotation_ui.convert import merge_answers
from segbench.annotation_ui.preflight import check_ingest, check_launch
from segbench.annotation_ui.views import list_rounds, round_progress
from segbench.annotation_ui.worker_report import write_worker_report
from segbench.core import clock
from segbench.core.aggregation import SCREENED
from segbench.core.agreement import agreement_summary
from segbench.core.errors import ImportPolicy, OnError, RoundStateError
from segbench.core.io import write_json
from segbench.core.reports import plain
from segbench.core.screening import aggregate_round
from segbench.flows.prefect_ui import publish_round, run_name, task_name
from segbench.schemas.rounds import Answer, IngestCounts, LabelStudioConnection, Round, RoundIngest

__all__ = ["close_round", "files_dir", "ingest_round", "launch_round", "list_rounds", "round_progress"]

ANSWERS_FORMAT = 1
T = TypeVar("T")


def _now() -> str:
    return clock.timestamp()


def _store(data_root: Path) -> rounds.RoundStore:
    return rounds.RoundStore(Path(data_root) / "rounds")


def _as_task(name: str, fn: Callable[..., T], *args: Any) -> T:
    """Run a backend's step as a Prefect task, so each step shows as its own task run."""
    return Task(fn, name=name, cache_policy=NO_CACHE)(*args)


def _backend(round_: Round, data_root: Path, label_studio: LabelStudioConnection | None) -> RoundBackend:
    return backend_for(round_, data_root, label_studio=label_studio, step=_as_task)


# --- launch ----------------------------------------------------------------------------------------

@flow(name="round-launch", flow_run_name=run_name("round-launch", ("key",)))
def launch_round(data_root: Path, key: str, label_studio: LabelStudioConnection | None = None,
                 batch: str | None = None, annotators: list[str] | None = None) -> Round:
    """Launch a created round (or relaunch it: nothing is created twice), or only its ``batch``.

    Label Studio: create (or reuse) the round's project, copy its images under the server's files
    root, import one task per item carrying the item id. Files backend: write ``tasks.csv`` and
    ``tasks.json`` under ``data/rounds/<key>/`` for an external crowd. With ``batch``, only the
    items of the batches launched so far go out (see :mod:`segbench.annotation_ui.batches`). With
    ``annotators``, a Label Studio round goes on each one's own server instead, where nobody sees
    another's answers (see :func:`segbench.annotation_ui.preflight.keep_apart`).
    """
    check = check_launch(data_root, key, label_studio, batch, annotators)  # what `rounds launch` checks before Prefect starts
    store, round_, launching, out = check.store, check.round, check.launching, check.batches_out
    project_id, counts = _backend(round_, data_root, label_studio).launch(launching)
    launched = batches.mark_batches_launched(round_, project_id, out, _now())
    launched = launched.model_copy(update={"counts": {**launched.counts, **counts}})
    store.save(launched)
    get_run_logger().info("round %s launched (%s)", key, plain(counts))
    return launched


# --- progress ----------------------------------------------------------------------------------------

# round_progress (imported above) reads the backend and changes nothing: no flow.


# --- ingest ----------------------------------------------------------------------------------------

@task(**task_name("fetch-answers"), cache_policy=NO_CACHE)
def fetch_answers(round_: Round, data_root: Path, label_studio: LabelStudioConnection | None,
                  policy: ImportPolicy) -> list[Answer]:
    return _backend(round_, data_root, label_studio).fetch_answers(round_, policy)


@flow(name="round-ingest", flow_run_name=run_name("round-ingest", ("key",)))
def ingest_round(data_root: Path, key: str, label_studio: LabelStudioConnection | None = None,
                 on_error: OnError = OnError.FAIL, aggregation: str | None = None) -> RoundIngest:
    """Bring a launched round's answers back, aggregate them and write ``<key>.answers.json``.

    ``aggregation`` (screened, majority, dawid-skene, glad) defaults to the round's recorded method
    and is recorded in the round and the answers file. ``screened`` (see :mod:`segbench.core.screening`)
    also records the workers the worker report flags, left out of SPIN's masks, with their reasons,
    under ``left_out``, and the accounts it counted as one voter under ``blocs``.

    Idempotent: answers are keyed by the backend's answer id, so ingesting twice, or again after
    more answers arrived, converges to one answer set without duplicates. The kind's reports (its
    ``RoundKind`` ingest hook) are written afterwards.
    """
    # What `rounds ingest` checks before Prefect starts (the crowd's files are read by fetch_answers below).
    check = check_ingest(data_root, key, label_studio, on_error, read_crowd_files=False)
    store, round_, kind, previous, qualified = check.store, check.round, check.kind, check.previous, check.qualified
    policy = ImportPolicy(on_error=on_error)
    fetched = fetch_answers(round_, Path(data_root), label_studio, policy)
    complete = _backend(round_, Path(data_root), label_studio).fetches_all
    own, gold_answers = gold.split_answers(round_, merge_answers(previous, fetched, drop_missing=complete))
    chain = followups.merge_chain(store, round_, own)  # a follow-up's chain too
    answers = chain.answers
    counted = gold.counted(answers, qualified)
    controls = sorted({control for a in answers for control in a.choices})
    method = aggregation or round_.aggregation
    result = aggregate_round(method, [*counted, *gold.counted(gold_answers, qualified)], [*answers, *gold_answers],
                             controls, gold.gold_index(round_), qualified=qualified, rules=gold.round_rules(round_))
    masks = any(a.polygons for a in answers)  # the flagged are left out of masks; a round without them has none
    capped = result.capped and masks
    if capped:
        get_run_logger().warning("round %s: the worker report flags more than half of the workers; none of them "
                                 "is left out of the masks (check the rules: the --rule options of segbench rounds "
                                 "create)", key)
    left_out = result.left_out if masks else {}
    items = chain.decide(result.items)
    agreement = {control: agreement_summary(counted, control) for control in controls}
    counts = IngestCounts(
        answers=len(answers), items=len(gold.without_gold(round_).items), items_answered=chain.items_answered(),
        annotators=len({a.annotator for a in answers}), skipped=len(policy.report),
        **gold.gold_counts(round_, gold_answers, answers, counted),
        **({"accounts_in_blocs": sum(len(b.members) for b in result.blocs),
            "labels_by": result.choice.method if result.choice else None} if method == SCREENED else {}),
        **({"workers_left_out": len(left_out), "answers_left_out": sum(a.annotator in left_out for a in counted)}
           if method == SCREENED and masks else {}))
    screened = {"left_out_capped": capped, "blocs": [b.row() for b in result.blocs],
                **({"model_choice": result.choice.row()} if result.choice else {})}
    write_json(store.answers_path(key), {
        "format": ANSWERS_FORMAT, "round": key, "dataset": round_.dataset, "dataset_version": round_.dataset_version,
        "aggregation": method, "answers": [a.model_dump(mode="json") for a in answers],
        "items": [i.model_dump(mode="json") for i in items],
        "agreement": {control: a.model_dump(mode="json") for control, a in agreement.items()}, "skipped": policy.report.to_json(), **gold.answers_fields(gold_answers, qualified),
        **({"left_out": [{"worker": w, "reasons": r} for w, r in sorted(left_out.items())], **screened}
           if method == SCREENED else {})},
        indent=1)
    numbers = counts.model_dump(exclude={"labels_by"})  # a round's counts are numbers; the model is in the report
    ingested = rounds.mark_ingested(round_, {**round_.counts, **numbers}, _now()).model_copy(
        update={"aggregation": method})
    store.save(ingested)
    reports = kind.write_reports(gold.without_gold(followups.report_round(store, ingested)), items, Path(data_root))
    report = {**result.report, **(screened if method == SCREENED else {})}
    names = _as_task("read-worker-names", _backend(round_, Path(data_root), label_studio).worker_names, round_)
    workers = write_worker_report(store, ingested, report, left_out, qualified, files_dir(data_root, key), names)
    publish_round(key, reports, Path(workers.paths["workers_markdown"]))
    get_run_logger().info("round %s ingested: %s", key, plain(counts.model_dump()))
    return RoundIngest(round=ingested, counts=counts, agreement=agreement, answers=store.answers_path(key),
                       reports=reports, workers=workers)


# --- close / cancel / list -----------------------------------------------------------------------

def close_round(data_root: Path, key: str, *, cancel: bool = False, force: bool = False) -> Round:
    """Close an ingested round (its answers are final), or cancel a round that is not closed.

    Raises:
        RoundStateError: items have no answer yet (unless ``force``: they stay unanswered for good).
    """
    store = _store(data_root)
    round_ = store.load(key)
    work_items = len(gold.without_gold(round_).items)  # gold items are not in the aggregated answers
    unanswered = work_items - round_.counts.get("items_answered", 0)
    if not cancel and not force and round_.status is rounds.RoundStatus.INGESTED and unanswered > 0:
        raise RoundStateError(f"{unanswered} of {work_items} items have no answer yet", path=store.path(key),
                              item=key, hint=f"wait for the answers and run `segbench rounds ingest {key}` again, "
                                             "or close with --force to keep them unanswered")
    changed = rounds.mark_cancelled(round_, _now()) if cancel else rounds.mark_closed(round_, _now())
    store.save(changed)
    return changed

