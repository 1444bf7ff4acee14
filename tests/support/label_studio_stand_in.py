"""An in-memory stand-in for LabelStudioClient: the calls the Label Studio round backend makes,
so the backend and the round flows run without a server (the real server is tested under the
``labelstudio`` marker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from segbench.annotation_ui.client import LabelStudioClient


class StandInClient:
    """Projects, tasks and annotations held in dictionaries; ids count from 1."""

    def __init__(self) -> None:
        self.projects: dict[int, dict[str, Any]] = {}
        self.folders: list[Path] = []
        self._ids = 0

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def __enter__(self) -> StandInClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def check(self) -> None:
        pass

    def project_by_title(self, title: str) -> int | None:
        return min((pid for pid, project in self.projects.items() if project["title"] == title), default=None)

    def project_exists(self, project_id: int) -> bool:
        return project_id in self.projects

    def create_project(self, title: str, label_config: str, description: str = "", *,
                       maximum_annotations: int = 1, instructions: str = "") -> int:
        project_id = self._next_id()
        self.projects[project_id] = {"title": title, "config": label_config, "tasks": [], "instructions": instructions,
                                     "maximum_annotations": maximum_annotations}
        return project_id

    def allow_local_files(self, project_id: int, folder: Path) -> None:
        self.folders.append(folder)

    local_file_url = staticmethod(LabelStudioClient.local_file_url)

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> list[int]:
        imported = [{"id": self._next_id(), "data": task["data"], "annotations": []} for task in tasks]
        self.projects[project_id]["tasks"] += imported
        return [task["id"] for task in imported]

    def export(self, project_id: int) -> list[dict[str, Any]]:
        return self.projects[project_id]["tasks"]

    def task_item_ids(self, project_id: int) -> dict[int, str]:
        return {task["id"]: task["data"]["item_id"] for task in self.export(project_id)}

    def user_emails(self) -> dict[int, str]:
        return {}

    def annotate(self, task_id: int, result: list[dict[str, Any]], completed_by: int) -> int:
        task = next(t for p in self.projects.values() for t in p["tasks"] if t["id"] == task_id)
        annotation_id = self._next_id()
        task["annotations"].append({"id": annotation_id, "completed_by": completed_by, "result": result})
        return annotation_id
