"""The files backend: a round as task and results files for an external crowd (AMT style).

Launch writes ``tasks.csv`` and ``tasks.json`` under ``<data root>/rounds/<key>/``; the crowd's
results files (CSV or JSON rows with ``WorkerId``, ``AssignmentId``, ``Input.item_id`` and
``Answer.<control>`` columns, see :mod:`segbench.annotation_ui.crowd_files`) go in its ``results/``
folder, and progress and answers are read from there. No server, no project.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from segbench.annotation_ui.backends import BackendContext
from segbench.annotation_ui.batches import launched_ids
from segbench.annotation_ui.convert import answers_from_files
from segbench.annotation_ui.crowd_files import read_results, write_file_tasks
from segbench.annotation_ui.hit_layout import HIT_NAME, write_hit
from segbench.annotation_ui.kinds import answer_checks
from segbench.core.errors import ImportPolicy, InputError, RoundStateError
from segbench.schemas.rounds import Answer, BackendProgress, Round


def files_dir(data_root: Path, key: str) -> Path:
    """Where the files backend writes a round's tasks and reads its results (``results/*.csv|json``)."""
    return Path(data_root) / "rounds" / key


@dataclass(frozen=True)
class FilesBackend:
    """Rounds as files exchanged with an external crowd (see the module docstring)."""

    name: ClassVar[str] = "files"
    fetches_all: ClassVar[bool] = False

    context: BackendContext

    @classmethod
    def check_project_id(cls, round_: Round, project_id: int | None) -> None:
        if project_id is not None:
            raise RoundStateError(f"round {round_.key!r} uses the files backend; it has no project (got {project_id})",
                                  item=f"round {round_.key}")

    def folder(self, round_: Round) -> Path:
        return files_dir(self.context.data_root, round_.key)

    def check_ready(self, round_: Round, *, launching: bool = False) -> None:
        """Nothing to configure: the round's folder is under the data root."""

    def launch(self, round_: Round) -> tuple[None, dict[str, int]]:
        """Write the task files and the HIT layout (again on a relaunch: the same round gives the same files)."""
        write_file_tasks(round_, self.folder(round_))
        write_hit(round_, self.folder(round_))
        return None, {"tasks_written": len(round_.items)}  # the launched items (see batches.plan_launch)

    def progress(self, round_: Round) -> BackendProgress:
        rows = [row for _, file_rows in self._results(round_) for row in file_rows]
        by_worker = Counter(f"worker:{row.get('WorkerId')}" for row in rows)
        tasks_done = {row.get("Input.item_id") for row in rows}
        done = {item.item_id for task_id, item in round_.items_by_task_id().items() if task_id in tasks_done}
        # A round launched in batches has tasks for those batches only.
        tasks = len(round_.items) if round_.launched_batches is None else len(launched_ids(round_))
        return {"tasks": tasks, "done": sum(1 for item in round_.items if item.item_id in done),
                "annotations": len(rows), "by_annotator": dict(sorted(by_worker.items())),
                "done_items": sorted(item.item_id for item in round_.items if item.item_id in done)}

    def fetch_answers(self, round_: Round, policy: ImportPolicy) -> list[Answer]:
        checks = answer_checks(round_)
        answers = [answer for path, rows in self._results(round_)
                   for answer in answers_from_files(rows, round_, policy, source=path, **checks)]
        return sorted(answers, key=lambda a: (a.item_id, a.annotator, a.source_id))

    def worker_names(self, round_: Round) -> dict[str, str]:
        return {}  # a crowd's WorkerId is the name it knows its workers by

    def launch_hint(self, round_: Round) -> str:
        where = self.folder(round_)
        return (f"Tasks: {where}/tasks.csv, their page {where}/{HIT_NAME} — put the crowd's results files in "
                f"{where}/results/")

    def _results(self, round_: Round) -> list[tuple[Path, list[dict[str, Any]]]]:
        """Every results file (in name order) with its rows; a row repeated as it was (a file
        downloaded twice) counts once, in the first file that has it.

        Raises:
            InputError: two rows of one assignment that differ, naming both files.
        """
        rows: dict[str, tuple[Path, dict[str, Any]]] = {}
        out = []
        for path in self._results_files(round_):
            kept = []
            for row in read_results(path):
                assignment = str(row.get("AssignmentId"))
                seen = rows.get(assignment)
                if seen is None:
                    rows[assignment] = (path, row)
                    kept.append(row)
                elif seen[1] != row:
                    where = f"{seen[0].name} and {path.name}" if seen[0] != path else f"{path.name}, twice"
                    raise InputError(f"assignment {assignment} has two different answers ({where})", path=path,
                                     item=f"AssignmentId {assignment}",
                                     hint="keep the results file that is right and move the other out of results/")
            out.append((path, kept))
        return out

    def _results_files(self, round_: Round) -> list[Path]:
        results = self.folder(round_) / "results"
        return sorted(p for p in results.glob("*") if p.suffix in (".csv", ".json")) if results.is_dir() else []
