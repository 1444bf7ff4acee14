"""The one client that talks HTTP to a Label Studio server (label-studio-sdk 2.x underneath).

Everything segbench asks of Label Studio goes through :class:`LabelStudioClient`: projects, the
local-files storage that lets the server show round images, task import, the JSON export and the
progress derived from it, plus users and annotations for tests and simulated crowds. Converting
tasks and annotations to segbench records belongs in the converters, not here.

Failures come back as :class:`~segbench.core.errors.ServiceError` (server unreachable, token refused,
unexpected answer) or :class:`~segbench.core.errors.InputError` (the server rejected what we sent, such
as a label config). Messages name the server URL and never contain the token, even when the
server echoes it. Requests that create something are never retried (a retry after a lost response
would create it twice); reads are retried twice on connection errors and 5xx/429 answers. Every
request ends within its deadline (:mod:`segbench.core.http_limits`) however slowly the server
sends, follows at most a few redirects, and every answer is checked for the shape used.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, Self, TypeVar

import httpx
import orjson
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError
from label_studio_sdk.core.request_options import RequestOptions

from segbench.annotation_ui.convert import progress_of
from segbench.core.errors import InputError, ServiceError
from segbench.core.http_limits import MAX_REDIRECTS, deadline, keep_deadlines
from segbench.schemas.rounds import BackendProgress

log = logging.getLogger(__name__)
T = TypeVar("T")

LOCAL_FILES_PREFIX = "/data/local-files/?d="
_READ: RequestOptions = {"max_retries": 2}  # the SDK retries reads itself
_STATUS_HINT = "is the server running? scripts/label-studio.sh status"
_SHAPE_HINT = "check that the URL is a Label Studio server (scripts/label-studio.sh installs 1.23), not a proxy or a login page"


class LabelStudioClient:
    """A Label Studio server at ``url`` used with the API ``token``.

    Args:
        url: the server's base URL, e.g. ``http://127.0.0.1:8089``.
        token: an API token (the legacy 40-character token, or a personal access token).
        timeout: seconds a connection or a read may wait.
        deadline: seconds a whole request may take (default: 4 × ``timeout``).

    The constructor makes no network call; use :meth:`check` to fail early.
    """

    def __init__(self, url: str, token: str, *, timeout: float = 30, deadline: float | None = None) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self._deadline = deadline if deadline is not None else 4 * timeout
        self._http = keep_deadlines(httpx.Client(base_url=self.url, timeout=timeout, follow_redirects=True,
                                                 max_redirects=MAX_REDIRECTS))
        try:
            # max_retries=0: the SDK would otherwise retry POSTs on 5xx/409 and connection errors.
            self._sdk = LabelStudio(
                base_url=self.url, api_key=token, httpx_client=self._http, timeout=timeout, max_retries=0
            )
        except ApiError as exc:  # raised offline for a personal access token (JWT) that has expired
            self._http.close()
            raise ServiceError(
                f"the API token for Label Studio at {self.url} has expired or is not valid",
                hint="create a new access token in the server's account settings",
            ) from exc

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- errors -----------------------------------------------------------------------------

    @contextmanager
    def _calling(self, what: str, *, invalid: Callable[[str], InputError] | None = None) -> Iterator[None]:
        """Turn transport and API failures of ``what`` into segbench errors naming the server.

        ``invalid`` builds the error for an HTTP 400 (the server rejected our input) from the
        server's message; without it a 400 is a ServiceError like any other answer.
        """
        try:
            with deadline(self._deadline):
                yield
        except httpx.TimeoutException as exc:
            raise ServiceError(
                f"Label Studio at {self.url} did not answer {what} in time ({type(exc).__name__}; each request "
                f"may take {self._deadline:g} s)", hint=_STATUS_HINT) from None
        except httpx.TooManyRedirects:
            raise ServiceError(f"Label Studio at {self.url} redirected {what} more than {MAX_REDIRECTS} times",
                               hint="check the server URL (a proxy or a login page in between?)") from None
        except httpx.DecodingError:
            raise ServiceError(f"Label Studio at {self.url} sent an answer to {what} that does not decode as its "
                               "headers say (Content-Encoding)", hint="check what sits between you and the server "
                               "(a proxy?)") from None
        except httpx.HTTPError as exc:
            raise ServiceError(
                f"cannot reach Label Studio at {self.url} ({what}: {type(exc).__name__})", hint=_STATUS_HINT
            ) from None
        except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
            # The SDK parses every answer into its models: one of another shape fails there.
            raise ServiceError(f"Label Studio at {self.url} sent an answer to {what} that is not what its API "
                               f"returns ({type(exc).__name__})", hint=_SHAPE_HINT) from None
        except ApiError as exc:
            if exc.status_code in (401, 403):
                raise ServiceError(
                    f"Label Studio at {self.url} refused the API token (HTTP {exc.status_code}, {what})",
                    hint="check SEGBENCH_LABEL_STUDIO_TOKEN against the token of the server's account",
                ) from None  # unchained: its text can carry a secret
            if exc.status_code == 400 and invalid is not None:
                raise invalid(self._summary(exc.body)) from None  # unchained: its text can carry a secret
            raise ServiceError(
                f"Label Studio at {self.url} answered HTTP {exc.status_code} to {what}: {self._summary(exc.body)}",
                hint=_STATUS_HINT if (exc.status_code or 0) >= 500 else None,
            ) from None  # unchained: its text can carry a secret

    def _summary(self, body: Any) -> str:
        """The server's error message for one line, without the token (a server may echo the request)."""
        text = _summary(body)
        return text.replace(self._token, "***") if self._token else text

    def _shape(self, what: str, problem: str) -> ServiceError:
        return ServiceError(f"Label Studio at {self.url} answered {what} with {problem}", hint=_SHAPE_HINT)

    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self._calling(what):
            return fn(*args, **kwargs)

    # -- server -----------------------------------------------------------------------------

    def check(self) -> None:
        """Check that the server answers ``/health`` and accepts the token.

        Raises:
            ServiceError: the server is unreachable or unhealthy, or the token is refused.
        """
        with self._calling("GET /health"):
            response = self._http.get("/health")
        if response.status_code != 200:
            raise ServiceError(
                f"Label Studio at {self.url} is not healthy (GET /health: HTTP {response.status_code})",
                hint=_STATUS_HINT,
            )
        user = self._call("GET /api/current-user/whoami", self._sdk.users.whoami)
        log.debug("Label Studio at %s: authenticated as user %s", self.url, user.id)

    # -- projects ---------------------------------------------------------------------------

    def create_project(
        self, title: str, label_config: str, description: str = "", *, maximum_annotations: int = 1,
        instructions: str = "",
    ) -> int:
        """Create a project and return its id.

        Annotators see neither the annotation history nor predictions of others in the labeling
        stream (``show_annotation_history``, ``show_collab_predictions`` off).

        Args:
            title: at least 3 characters (the server's rule).
            label_config: the label config XML; the server validates it.
            description: shown in the project list.
            maximum_annotations: annotators per task (the round's overlap).
            instructions: HTML shown to annotators before the tasks ("" for none).

        Raises:
            InputError: the server rejected the label config (its message is included).
            ServiceError: any other failure.
        """

        def rejected(message: str) -> InputError:
            return InputError(
                f"Label Studio at {self.url} rejected project {title!r}: {message}",
                item=title,
                hint="fix the fields named above (titles need 3+ characters; render label configs with "
                "segbench.annotation_ui.label_configs)",
            )

        with self._calling("create project", invalid=rejected):
            project = self._sdk.projects.create(
                title=title,
                label_config=label_config,
                description=description,
                maximum_annotations=maximum_annotations,
                expert_instruction=instructions,
                show_instruction=bool(instructions),
                show_annotation_history=False,
                show_collab_predictions=False,
            )
        project_id = getattr(project, "id", None)
        if not isinstance(project_id, int):
            raise self._shape("create project", "no project id")
        log.info("created Label Studio project %s (%s) at %s", project_id, title, self.url)
        return project_id

    def project_by_title(self, title: str) -> int | None:
        """The id of the project titled exactly ``title`` (the lowest, should there be several), or None."""
        with self._calling(f"find project {title!r}"):
            projects: Iterable[Any] = self._sdk.projects.list(title=title, request_options=_READ)
            found = [project.id for project in projects
                     if getattr(project, "title", None) == title and isinstance(getattr(project, "id", None), int)]
        return min(found) if found else None

    def project_exists(self, project_id: int) -> bool:
        """Whether the project exists (and the token may see it)."""
        with self._calling(f"get project {project_id}"):
            try:
                self._sdk.projects.get(project_id, request_options=_READ)
            except ApiError as exc:
                if exc.status_code == 404:
                    return False
                raise
        return True

    def allow_local_files(self, project_id: int, folder: Path) -> None:
        """Let the project show files under ``folder`` through ``/data/local-files/?d=...`` URLs.

        Adds a local-files import storage for ``folder`` (an absolute path, a strict subfolder of
        the server's ``LOCAL_FILES_DOCUMENT_ROOT``) unless the project has one already. It is
        never synced: a sync would import every file in the folder as a task.

        Raises:
            InputError: the server refused the folder (not under its files root, or missing).
        """
        path = str(Path(folder).resolve())
        storages = self._call(
            f"list local storages of project {project_id}",
            self._sdk.import_storage.local.list,
            project=project_id,
            request_options=_READ,
        )
        if any(storage.path == path for storage in storages):
            return

        def refused(message: str) -> InputError:
            return InputError(
                f"Label Studio at {self.url} refused the local files folder: {message}",
                path=path,
                hint="the folder must exist inside the server's files root (LOCAL_FILES_DOCUMENT_ROOT)",
            )

        with self._calling(f"add local storage to project {project_id}", invalid=refused):
            self._sdk.import_storage.local.create(
                project=project_id, path=path, use_blob_urls=True, title=f"segbench files {Path(path).name}"
            )
        log.info("project %s may now show local files under %s", project_id, path)

    @staticmethod
    def local_file_url(relpath: str) -> str:
        """The task-data URL of a file at ``relpath`` under the server's files root.

        Raises:
            InputError: ``relpath`` is absolute or climbs out of the files root.
        """
        path = PurePosixPath(relpath)
        if not relpath or path.is_absolute() or ".." in path.parts or "\\" in relpath:
            raise InputError(f"local file path {relpath!r} must be relative to the files root, without '..'")
        return LOCAL_FILES_PREFIX + urllib.parse.quote(path.as_posix(), safe="/")

    # -- tasks, export, progress ------------------------------------------------------------

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> list[int]:
        """Import ``tasks`` (each ``{"data": {...}}`` or a bare data dict) and return their ids, in order."""
        if not tasks:
            return []
        response = self._call(
            f"import {len(tasks)} tasks into project {project_id}",
            self._sdk.projects.import_tasks,
            project_id,
            request=tasks,
            return_task_ids=True,
        )
        ids = getattr(response, "task_ids", None) or []
        if not all(isinstance(task_id, int) for task_id in ids):
            raise self._shape(f"import tasks into project {project_id}", "task ids that are not numbers")
        if len(ids) != len(tasks):
            raise ServiceError(
                f"Label Studio at {self.url} imported {len(ids)} of {len(tasks)} tasks into project {project_id}"
            )
        log.info("imported %d tasks into project %s", len(ids), project_id)
        return ids

    def export(self, project_id: int) -> list[dict[str, Any]]:
        """Every task of the project with its annotations, as Label Studio's JSON export: checked to be
        a list of task objects whose ``data`` is an object and whose ``annotations`` are objects."""
        what = f"export project {project_id}"
        with self._calling(what):
            chunks = self._sdk.projects.exports.download_sync(
                project_id, export_type="JSON", download_all_tasks=True, request_options=_READ
            )
            raw = b"".join(chunks)
        try:
            tasks = orjson.loads(raw)  # bounded nesting: a body nested deeper fails here
        except orjson.JSONDecodeError as exc:
            raise self._shape(what, f"a body that is not JSON ({exc})") from None
        if not isinstance(tasks, list):
            raise self._shape(what, "a body that is not a list of tasks")
        for index, task in enumerate(tasks):
            problem = _task_problem(task)
            if problem:
                raise self._shape(what, f"task #{index} {problem}")
        return tasks

    def task_item_ids(self, project_id: int) -> dict[int, str]:
        """Task id → ``data["item_id"]`` for every task of the project (tasks without one are left out)."""
        # The export lists 2,000 tasks in 0.3 s; paging through the tasks API takes ~5 s.
        return {
            int(task["id"]): str(task["data"]["item_id"])
            for task in self.export(project_id)
            if "item_id" in task.get("data", {})
        }

    def progress(self, project_id: int, prefix: str = "labelstudio") -> BackendProgress:
        """How far the project is: ``tasks``, ``done`` (tasks with ≥1 answer that was not
        cancelled), ``annotations`` (answers not cancelled), ``by_annotator``
        (``<prefix>:<user id>`` → answers) and ``done_items`` (item ids of the done tasks)."""
        return progress_of(self.export(project_id), prefix)

    # -- annotators -------------------------------------------------------------------------

    def invite_url(self) -> str:
        """The sign-up link of the server's organization: whoever opens it creates an annotator account
        (sign-up is otherwise closed). Absolute, on this server's URL.

        Raises:
            ServiceError: the server is unreachable or answers without a link.
        """
        invite = self._call("GET /api/invite", self._sdk.organizations.invites.get_invite_link, request_options=_READ)
        link = getattr(invite, "invite_url", None)
        if not isinstance(link, str) or not link.startswith("/"):
            raise ServiceError(f"Label Studio at {self.url} answered GET /api/invite without an invite link",
                               hint=_STATUS_HINT)
        return self.url + link

    def user_emails(self) -> dict[int, str]:
        """User id → e-mail of every user of the server (for reports: answers keep the user id)."""
        users = self._call("list users", self._sdk.users.list, request_options=_READ)
        return {int(u.id): str(u.email) for u in users if getattr(u, "id", None) is not None and getattr(u, "email", None)}

    # -- users and annotations (tests, simulated crowds) -----------------------------------

    def create_user(self, email: str, first_name: str = "", last_name: str = "") -> int:
        """Create a user and return its id. Such users cannot log in; they only own annotations."""
        user = self._call(
            f"create user {email}",
            self._sdk.users.create,
            email=email,
            username=email,
            first_name=first_name,
            last_name=last_name,
        )
        return int(user.id)

    def annotate(self, task_id: int, result: list[dict[str, Any]], completed_by: int) -> int:
        """Post an annotation of ``task_id`` by user ``completed_by`` and return its id.

        Polygon points are percentages of ``original_width``/``original_height``, which each
        result item must carry (the server does not fill them in for API callers).
        """
        annotation = self._call(
            f"annotate task {task_id}",
            self._sdk.annotations.create,
            task_id,
            result=result,
            completed_by=completed_by,
        )
        return int(annotation.id)


def _task_problem(task: Any) -> str | None:
    """Why an exported task cannot be read (``None`` when it can)."""
    if not isinstance(task, dict):
        return "is not an object"
    if not isinstance(task.get("id"), int):
        return "has no numeric id"
    if not isinstance(task.get("data", {}), dict):
        return "has data that is not an object"
    annotations = task.get("annotations", [])
    if not isinstance(annotations, list) or not all(isinstance(a, dict) for a in annotations):
        return "has annotations that are not a list of objects"
    if not all(isinstance(a.get("result", []), list) for a in annotations):
        return "has an annotation whose result is not a list"
    return None


def _summary(body: Any, limit: int = 500) -> str:
    """The server's error message, short enough for one line."""
    if isinstance(body, dict):
        errors = body.get("validation_errors") or body.get("detail") or body
        text = json.dumps(errors, ensure_ascii=False) if not isinstance(errors, str) else errors
    else:
        text = str(body)
    return text if len(text) <= limit else text[:limit] + "..."
