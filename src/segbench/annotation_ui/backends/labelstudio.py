"""The Label Studio backend: a round is one project on the team's Label Studio server, or, for a
round whose annotators must not see each other's answers, one project on each annotator's own server.

Launch creates the project (or reuses the round's), copies the round's images under the server's
files root (the only folder it may serve) and imports one task per item carrying the item id;
progress and answers come from the project's JSON export. All HTTP goes through
:class:`~segbench.annotation_ui.client.LabelStudioClient`. The server, its token and files root
come in the context's :class:`~segbench.schemas.rounds.LabelStudioConnection`, which the command
line resolves from its settings (the token is a secret there, masked wherever Prefect records it).

The community edition puts every account of a server in one organisation, where anyone can open
anyone's answers; only separate servers keep annotators apart. A round launched with annotators
(``Round.annotators``) has a project with every task on each of their servers
(``scripts/label-studio.sh start --annotator NAME``), found again by its title; answers from
there name their annotator ``labelstudio@<name>:<user id>``.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from segbench.annotation_ui.backends import BackendContext
from segbench.annotation_ui.convert import answer_order, answers_from_labelstudio, progress_of
from segbench.annotation_ui.kinds import answer_checks, label_config_instructions, render_label_config
from segbench.core.errors import ImportPolicy, InputError, RoundStateError, SegbenchError
from segbench.core.io import fingerprint
from segbench.schemas.rounds import Answer, BackendProgress, LabelStudioConnection, Round, RoundItem

if TYPE_CHECKING:
    from segbench.annotation_ui.client import LabelStudioClient

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Site:
    """A server a round is on: the shared one (``annotator`` None) or an annotator's own."""

    annotator: str | None
    connection: LabelStudioConnection

    @property
    def prefix(self) -> str:
        """How answers from this server name their annotators and answer ids."""
        return "labelstudio" if self.annotator is None else f"labelstudio@{self.annotator}"

    def __str__(self) -> str:
        return self.connection.url if self.annotator is None else f"{self.annotator}'s server at {self.connection.url}"


@dataclass(frozen=True)
class LabelStudioBackend:
    """Rounds as Label Studio projects (see the module docstring)."""

    name: ClassVar[str] = "labelstudio"
    fetches_all: ClassVar[bool] = True

    context: BackendContext

    @classmethod
    def check_project_id(cls, round_: Round, project_id: int | None) -> None:
        if project_id is None and round_.annotators is None:
            raise RoundStateError(f"round {round_.key!r} is a Label Studio round; launching it needs a project id",
                                  item=f"round {round_.key}")

    def connection(self) -> LabelStudioConnection:
        if self.context.label_studio is None:
            raise InputError("no Label Studio server configured for this round",
                             hint="start one with scripts/label-studio.sh start, or set SEGBENCH_LABEL_STUDIO_URL "
                                  "and SEGBENCH_LABEL_STUDIO_TOKEN (or label_studio_url / _token in segbench.toml)")
        return self.context.label_studio

    def sites(self, round_: Round) -> list[Site]:
        """The servers the round is on: the shared one, or each of its annotators' own.

        Raises:
            InputError: an annotator's server was never started here (no recorded connection).
        """
        if round_.annotators is None:
            return [Site(None, self.connection())]
        servers = self.connection().annotators
        missing = [name for name in round_.annotators if name not in servers]
        if missing:
            raise InputError(f"no Label Studio server of annotator {', '.join(missing)} was ever started here",
                             item=f"round {round_.key}",
                             hint=" && ".join(f"scripts/label-studio.sh start --annotator {name}" for name in missing))
        return [Site(name, servers[name]) for name in round_.annotators]

    def check_ready(self, round_: Round, *, launching: bool = False) -> None:
        """Raise for a token (and, to launch, a files folder) not configured, or a server of the round
        that does not answer its health check."""
        for site in self.sites(round_):
            if launching:
                _files_root(site.connection)
            with self.client(site.connection) as client:
                client.check()

    def client(self, connection: LabelStudioConnection | None = None) -> LabelStudioClient:
        """A client for a server (default: the shared one), signed in with its token."""
        connection = connection or self.connection()
        if connection.token is None:
            raise InputError("no Label Studio API token configured",
                             hint="set SEGBENCH_LABEL_STUDIO_TOKEN (or label_studio_token in segbench.toml)")
        from segbench.annotation_ui.client import LabelStudioClient  # the SDK takes 0.7 s to import

        return LabelStudioClient(connection.url, connection.token.get_secret_value(), timeout=connection.timeout,
                                 deadline=4 * connection.timeout)

    def launch(self, round_: Round) -> tuple[int | None, dict[str, int]]:
        """Create (or reuse) the project on each of the round's servers, let it show the round's
        images, import the missing tasks; the shared server's project id (None on annotators' servers).

        The project is found by its title (one per round key) when the round has no id yet: a launch
        killed after creating the project, before the id was recorded, is resumed, not duplicated."""
        imported, project_id = 0, None
        for site in self.sites(round_):
            files_root = _files_root(site.connection)
            with self.client(site.connection) as client:
                client.check()
                project_id = round_.project_id if site.annotator is None else None
                if project_id is None or not client.project_exists(project_id):
                    project_id = _unrecorded_project(client, round_)
                if project_id is None:
                    project_id = client.create_project(
                        project_title(round_.key), render_label_config(round_.config.label_config,
                                                                       **round_.config.params),
                        description=f"{round_.kind} on {round_.dataset} ({round_.dataset_version[:12]})",
                        # On an annotator's own server, one person answers each task.
                        maximum_annotations=round_.config.overlap if site.annotator is None else 1,
                        instructions=label_config_instructions(round_.config.label_config))
                step = self.context.step
                folder = step("copy-round-images", copy_images, round_, self.context.data_root, files_root)
                client.allow_local_files(project_id, folder)
                imported += step("import-round-tasks", import_missing_tasks, client, project_id, round_)
        return (project_id if round_.annotators is None else None), {"tasks_imported": imported}

    def progress(self, round_: Round) -> BackendProgress:
        _check_launched(round_)
        total: BackendProgress = {"tasks": 0, "done": 0, "annotations": 0, "by_annotator": {}, "done_items": []}
        by_task = round_.items_by_task_id()  # the tasks carry task ids: report item ids
        done_items: set[str] = set()
        for site in self.sites(round_):
            with self.client(site.connection) as client:
                progress = progress_of(_export(client, site, round_), site.prefix)
            for field in ("tasks", "done", "annotations"):
                total[field] += progress[field]
            total["by_annotator"].update(progress["by_annotator"])
            done_items.update(by_task[t].item_id for t in progress["done_items"] if t in by_task)
        total["by_annotator"] = dict(sorted(total["by_annotator"].items()))
        total["done_items"] = sorted(done_items)
        return total

    def fetch_answers(self, round_: Round, policy: ImportPolicy) -> list[Answer]:
        _check_launched(round_)
        checks = answer_checks(round_)
        answers: list[Answer] = []
        for site in self.sites(round_):
            with self.client(site.connection) as client:
                client.check()
                export = _export(client, site, round_)
            answers += answers_from_labelstudio(export, round_, policy, prefix=site.prefix, **checks)
        return sorted(answers, key=answer_order)

    def worker_names(self, round_: Round) -> dict[str, str]:
        """``labelstudio:<user id>`` (``labelstudio@<annotator>:<user id>`` on annotators' own servers)
        → the user's e-mail; none from a server that will not list its users (the names only label
        the worker report: they never fail an ingest)."""
        names: dict[str, str] = {}
        try:
            sites = self.sites(round_)
        except SegbenchError as exc:
            logger.warning("round %s: the worker report shows user ids: %s", round_.key, exc.message)
            return names
        for site in sites:
            try:
                with self.client(site.connection) as client:
                    emails = client.user_emails()
            except SegbenchError as exc:
                logger.warning("round %s: the worker report shows user ids of %s: %s", round_.key, site, exc.message)
                continue
            names.update({f"{site.prefix}:{user}": email for user, email in sorted(emails.items())})
        return names

    def launch_hint(self, round_: Round) -> str:
        if round_.annotators is None:
            return f"Annotate at {self.connection().url.rstrip('/')}/projects/{round_.project_id}"
        return "Each annotator annotates on their own server: " + "; ".join(
            f"{site.annotator} at {site.connection.url.rstrip('/')}/projects" for site in self.sites(round_))


def _unrecorded_project(client: LabelStudioClient, round_: Round) -> int | None:
    """The project a killed launch of this round created, found by title, if every task in it is
    one of this round's (a project of an earlier round under the same key is not taken over)."""
    project_id = client.project_by_title(project_title(round_.key))
    if project_id is None:
        return None
    return project_id if _all_ours(round_, client.export(project_id)) else None


def _all_ours(round_: Round, export: list[dict[str, Any]]) -> bool:
    """Whether every task of a project's export is one of the round's."""
    ours = {round_.task_id(item.item_id) for item in round_.items}
    return {str(task["data"]["item_id"]) for task in export if "item_id" in task.get("data", {})} <= ours


def _export(client: LabelStudioClient, site: Site, round_: Round) -> list[dict[str, Any]]:
    """The round's tasks and answers on a server (one export): its recorded project's, or on an
    annotator's server that of the project its title names, if every task there is the round's."""
    if site.annotator is None and round_.project_id is not None:
        return client.export(round_.project_id)
    project_id = client.project_by_title(project_title(round_.key))
    export = client.export(project_id) if project_id is not None else []
    if project_id is None or not _all_ours(round_, export):
        raise SegbenchError(f"{site} has no project of round {round_.key}",
                            hint=f"segbench rounds launch {round_.key} creates it")
    return export


def _files_root(connection: LabelStudioConnection) -> Path:
    if connection.files is None:
        raise InputError("no files folder configured for the Label Studio server",
                         hint="set SEGBENCH_LABEL_STUDIO_FILES to the folder the server serves local files from")
    return connection.files


def _check_launched(round_: Round) -> None:
    if (round_.project_id if round_.annotators is None else round_.launched_at) is None:
        raise SegbenchError(f"round {round_.key} is not launched yet", hint=f"segbench rounds launch {round_.key}")


def project_title(key: str, limit: int = 50) -> str:
    """The Label Studio project title of a round: the server refuses titles over 50 characters, so a
    long key is cut and told apart from its siblings by a short hash of the whole key."""
    title = f"segbench · {key}"
    return title if len(title) <= limit else f"{title[:limit - 9]}…{fingerprint(key)[:8]}"


def copy_images(round_: Round, data_root: Path, files_root: Path) -> Path:
    """Copy the round's images under the server's files root (the only folder it may serve)."""
    target = files_root / round_.key
    for item in round_.items:
        source = Path(data_root) / item.image
        if not source.is_file():
            raise InputError("image of a round item not found", path=source, item=f"item {item.item_id}",
                             hint="build the dataset the round was created from")
        destination = files_root / _served_name(round_, item)
        if not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
    return target


def import_missing_tasks(client: LabelStudioClient, project_id: int, round_: Round) -> int:
    """Import a task per item not yet in the project (so a relaunch imports nothing)."""
    present = set(client.task_item_ids(project_id).values())
    tasks = [{"data": {**item.data, "image": client.local_file_url(_served_name(round_, item)),
                       "item_id": round_.task_id(item.item_id), "round": round_.key}}
             for item in round_.items if round_.task_id(item.item_id) not in present]
    if tasks:
        client.import_tasks(project_id, tasks)
    return len(tasks)


def _served_name(round_: Round, item: RoundItem) -> str:
    """Where an item's image is copied, relative to the server's files root."""
    return f"{round_.key}/{round_.task_id(item.item_id)}{Path(item.image).suffix}"
