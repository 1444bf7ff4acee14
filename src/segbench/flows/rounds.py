"""Annotation round flows: create, launch, progress, ingest, close — on Label Studio or as files.

A round is a saved record (``data/rounds/<key>.json``); each step loads it, does its one thing and
saves the new status, so no flow ever waits for people. Launch and ingest are idempotent: a second
launch imports nothing new, a second ingest converges to the same answers.

Secrets stay out of flow parameters (Prefect stores those): the Label Studio token is read from the
settings inside the flow.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench.annotation_ui.kinds import answer_checks, render_label_config, round_kind
from segbench.core.errors import ImportPolicy, InputError, OnError, SegbenchError
from segbench.schemas.rounds import Answer, Round
from segbench.settings import load_settings
from segbench.core.io import fingerprint, read_json, write_json

ANSWERS_FORMAT = 1


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


def _store(data_root: Path):
    from segbench.annotation_ui.rounds import RoundStore

    return RoundStore(Path(data_root) / "rounds")


def _client(url: str | None):
    """A Label Studio client for ``url`` (default: settings) with the token from the settings."""
    from segbench.annotation_ui.client import LabelStudioClient

    settings = load_settings()
    if settings.label_studio_token is None:
        raise InputError("no Label Studio API token configured",
                         hint="set SEGBENCH_LABEL_STUDIO_TOKEN (or label_studio_token in segbench.toml)")
    return LabelStudioClient(url or settings.label_studio_url, settings.label_studio_token.get_secret_value())


def files_dir(data_root: Path, key: str) -> Path:
    """Where the files backend writes a round's tasks and reads its results (``results/*.csv|json``)."""
    return Path(data_root) / "rounds" / key


# --- launch ----------------------------------------------------------------------------------------

@task(name="copy-round-images", cache_policy=NO_CACHE)
def copy_images(round_: Round, data_root: Path, files_root: Path) -> Path:
    """Copy the round's images under the server's files root (the only folder it may serve)."""
    target = files_root / round_.key
    for item in round_.items:
        source = Path(data_root) / item.image
        if not source.is_file():
            raise InputError("image of a round item not found", path=source, item=f"item {item.item_id}",
                             hint="build the dataset the round was created from")
        destination = target / f"{item.item_id}{source.suffix}"
        if not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
    return target


@task(name="import-round-tasks", cache_policy=NO_CACHE)
def import_missing_tasks(client: Any, project_id: int, round_: Round) -> int:
    """Import a task per item not yet in the project (so a relaunch imports nothing)."""
    present = set(client.task_item_ids(project_id).values())
    tasks = [{"data": {**item.data, "image": client.local_file_url(f"{round_.key}/{item.item_id}{Path(item.image).suffix}"),
                       "item_id": item.item_id, "round": round_.key}}
             for item in round_.items if item.item_id not in present]
    if tasks:
        client.import_tasks(project_id, tasks)
    return len(tasks)


def project_title(key: str, limit: int = 50) -> str:
    """The Label Studio project title of a round: the server refuses titles over 50 characters, so a
    long key is cut and told apart from its siblings by a short hash of the whole key."""
    title = f"segbench · {key}"
    return title if len(title) <= limit else f"{title[:limit - 9]}…{fingerprint(key)[:8]}"


def _launch_labelstudio(round_: Round, data_root: Path, url: str | None, files_root: Path) -> tuple[int, dict[str, int]]:
    client = _client(url)
    client.check()
    project_id = round_.project_id
    if project_id is None or not client.project_exists(project_id):
        project_id = client.create_project(
            project_title(round_.key), render_label_config(round_.config.label_config, **round_.config.params),
            description=f"{round_.kind} on {round_.dataset} ({round_.dataset_version[:12]})",
            maximum_annotations=round_.config.overlap)
    folder = copy_images(round_, data_root, files_root)
    client.allow_local_files(project_id, folder)
    imported = import_missing_tasks(client, project_id, round_)
    return project_id, {"tasks_imported": imported}


@flow(name="round-launch")
def launch_round(data_root: Path, key: str, label_studio_url: str | None = None,
                 label_studio_files: Path | None = None) -> Round:
    """Launch a created round (or relaunch it: nothing is created twice).

    Label Studio: create (or reuse) the round's project, copy its images under the server's files
    root, import one task per item carrying the item id. Files backend: write ``tasks.csv`` and
    ``tasks.json`` under ``data/rounds/<key>/`` for an external crowd.
    """
    from segbench.annotation_ui import rounds
    from segbench.annotation_ui.convert import write_file_tasks

    store = _store(data_root)
    round_ = store.load(key)
    rounds.check_step(round_, rounds.RoundStatus.LAUNCHED, "launch")  # before any server call
    round_kind(round_.kind)  # an unknown kind fails here, not after its tasks are out
    if round_.backend == "labelstudio":
        files_root = Path(label_studio_files or load_settings().label_studio_files)
        project_id, counts = _launch_labelstudio(round_, Path(data_root), label_studio_url, files_root)
    else:
        project_id, counts = None, {"tasks_written": len(round_.items)}
        write_file_tasks(round_, files_dir(data_root, key))
    launched = rounds.mark_launched(round_, project_id, _now())
    launched = launched.model_copy(update={"counts": {**launched.counts, **counts}})
    store.save(launched)
    get_run_logger().info("round %s launched (%s)", key, counts)
    return launched


# --- progress ----------------------------------------------------------------------------------------

def round_progress(data_root: Path, key: str, label_studio_url: str | None = None) -> dict[str, Any]:
    """Tasks done / total and answers per annotator, read from the backend (no state changes)."""
    from segbench.annotation_ui.convert import read_results

    round_ = _store(data_root).load(key)
    if round_.backend == "labelstudio":
        if round_.project_id is None:
            raise SegbenchError(f"round {key} is not launched yet", hint=f"segbench rounds launch {key}")
        return {"round": key, "status": round_.status.value, **_client(label_studio_url).progress(round_.project_id)}
    rows = [row for path in _result_files(data_root, key) for row in read_results(path)]
    by_worker: dict[str, int] = {}
    for row in rows:
        by_worker[f"worker:{row.get('WorkerId')}"] = by_worker.get(f"worker:{row.get('WorkerId')}", 0) + 1
    done = {row.get("Input.item_id") for row in rows}
    return {"round": key, "status": round_.status.value, "tasks": len(round_.items),
            "done": sum(1 for item in round_.items if item.item_id in done), "annotations": len(rows),
            "by_annotator": dict(sorted(by_worker.items()))}


def _result_files(data_root: Path, key: str) -> list[Path]:
    results = files_dir(data_root, key) / "results"
    return sorted(p for p in results.glob("*") if p.suffix in (".csv", ".json")) if results.is_dir() else []


# --- ingest ----------------------------------------------------------------------------------------

@task(name="fetch-answers", cache_policy=NO_CACHE)
def fetch_answers(round_: Round, data_root: Path, url: str | None, policy: ImportPolicy) -> list[Answer]:
    from segbench.annotation_ui.convert import answers_from_files, answers_from_labelstudio, read_results

    checks = answer_checks(round_)
    if round_.backend == "labelstudio":
        if round_.project_id is None:
            raise SegbenchError(f"round {round_.key} is not launched yet", hint=f"segbench rounds launch {round_.key}")
        client = _client(url)
        client.check()
        return answers_from_labelstudio(client.export(round_.project_id), round_, policy, **checks)
    rows = [row for path in _result_files(data_root, round_.key) for row in read_results(path)]
    return answers_from_files(rows, round_, policy, **checks)


def _previous_answers(path: Path) -> list[Answer]:
    if not path.is_file():
        return []
    return [Answer.model_validate(a) for a in read_json(path)["answers"]]


@flow(name="round-ingest")
def ingest_round(data_root: Path, key: str, label_studio_url: str | None = None,
                 on_error: OnError = OnError.FAIL) -> dict[str, Any]:
    """Bring a launched round's answers back, aggregate them and write ``<key>.answers.json``.

    Idempotent: answers are keyed by the backend's answer id, so ingesting twice, or again after
    more answers arrived, converges to one answer set without duplicates. The kind's reports (e.g.
    the COCO-CD context audit) are written afterwards.
    """
    from segbench.annotation_ui import rounds
    from segbench.annotation_ui.convert import merge_answers
    from segbench.core.agreement import aggregate, agreement_summary

    store = _store(data_root)
    round_ = store.load(key)
    rounds.check_step(round_, rounds.RoundStatus.INGESTED, "ingest")  # before any network call
    kind = round_kind(round_.kind)
    policy = ImportPolicy(on_error=on_error)
    fetched = fetch_answers(round_, Path(data_root), label_studio_url, policy)
    answers = merge_answers(_previous_answers(store.answers_path(key)), fetched)
    controls = sorted({control for a in answers for control in a.choices})
    items = aggregate(answers, controls)
    agreement = {control: agreement_summary(answers, control) for control in controls}
    counts = {"answers": len(answers), "items_answered": len(items), "annotators": len({a.annotator for a in answers}),
              "skipped": len(policy.report)}
    write_json(store.answers_path(key), {
        "format": ANSWERS_FORMAT, "round": key, "dataset": round_.dataset, "dataset_version": round_.dataset_version,
        "answers": [a.model_dump(mode="json") for a in answers],
        "items": [i.model_dump(mode="json") for i in items],
        "agreement": agreement, "skipped": policy.report.to_json()}, indent=1)
    ingested = rounds.mark_ingested(round_, {**round_.counts, **counts}, _now())
    store.save(ingested)
    reports = {name: str(path) for name, path in kind.write_reports(ingested, items, Path(data_root)).items()}
    get_run_logger().info("round %s ingested: %s", key, counts)
    return {"round": ingested, "counts": counts, "agreement": agreement, "answers": str(store.answers_path(key)),
            "reports": reports}


# --- close / cancel / list -----------------------------------------------------------------------

def close_round(data_root: Path, key: str, *, cancel: bool = False) -> Round:
    """Close an ingested round (its answers are final), or cancel a round that is not closed."""
    from segbench.annotation_ui import rounds

    store = _store(data_root)
    round_ = store.load(key)
    changed = rounds.mark_cancelled(round_, _now()) if cancel else rounds.mark_closed(round_, _now())
    store.save(changed)
    return changed


def list_rounds(data_root: Path) -> list[Round]:
    return _store(data_root).list()
