"""Round backends: where a round's tasks go and where its answers come from, behind one protocol.

A round record names its backend (``Round.backend``); :func:`backend_for` gives the object that
launches it, reports its progress and fetches its answers: :class:`~.labelstudio.LabelStudioBackend`
(a Label Studio project) or :class:`~.files.FilesBackend` (task and results files for an external
crowd, AMT style). The round flows and the command line use only :class:`RoundBackend`, so a new
backend is one module here plus one entry in :data:`BACKENDS`.

Backend classes are imported when first asked for: the Label Studio client takes seconds to
import, which the files backend, round records and ``--help`` should not pay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from segbench import registry
from segbench.core.errors import ImportPolicy, InputError
from segbench.schemas.rounds import Answer, BackendProgress, LabelStudioConnection, Round

BACKENDS: dict[str, str] = {
    "labelstudio": "segbench.annotation_ui.backends.labelstudio:LabelStudioBackend",
    "files": "segbench.annotation_ui.backends.files:FilesBackend",
}


def run_now(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Run a backend step as a plain call (flows pass a runner that makes it a Prefect task)."""
    return fn(*args)


@dataclass(frozen=True)
class BackendContext:
    """What a backend needs besides the round.

    Attributes:
        data_root: the data root (round images are relative to it; the files backend works under
            ``<data root>/rounds/<key>/``).
        label_studio: the Label Studio server, its token and files root (None: none configured).
        step: runs a named step of a backend, ``step(name, fn, *args)``.
    """

    data_root: Path
    label_studio: LabelStudioConnection | None = None
    step: Callable[..., Any] = run_now


class RoundBackend(Protocol):
    """What the round flows and the command line ask of a backend."""

    name: ClassVar[str]
    # Whether a fetch returns the backend's whole current state, so that an answer saved earlier and
    # missing now was deleted there (Label Studio), or only what its files hold now (a crowd's files).
    fetches_all: ClassVar[bool]

    def __init__(self, context: BackendContext) -> None: ...

    @classmethod
    def check_project_id(cls, round_: Round, project_id: int | None) -> None:
        """Raise RoundStateError unless ``project_id`` is what a launch on this backend records."""

    def check_ready(self, round_: Round, *, launching: bool = False) -> None:
        """Raise for what the backend needs and lacks to run ``round_`` (a token, a server that
        answers): the command line asks before Prefect starts."""

    def launch(self, round_: Round) -> tuple[int | None, dict[str, int]]:
        """Put the round's tasks where people answer them (idempotent); its project id and counts."""

    def progress(self, round_: Round) -> BackendProgress:
        """``tasks``, ``done``, ``annotations`` and ``by_annotator``, read from the backend."""

    def fetch_answers(self, round_: Round, policy: ImportPolicy) -> list[Answer]:
        """Every answer the backend holds for the round, checked against its label config."""

    def worker_names(self, round_: Round) -> dict[str, str]:
        """Annotator id (as in answers) → a name people know them by, where the backend has one."""
        ...

    def launch_hint(self, round_: Round) -> str:
        """What people are told after a launch: where the tasks are."""


def backend_type(name: str) -> type[RoundBackend]:
    """The backend class of a round record's ``backend`` value.

    Raises:
        InputError: no such backend (the message lists the known ones).
    """
    if name not in BACKENDS:
        raise InputError(f"unknown round backend {name!r} (known backends: {', '.join(BACKENDS)})", item=name)
    return registry.load(BACKENDS[name])


def backend_for(round_or_name: Round | str, data_root: Path, **context: Any) -> RoundBackend:
    """The backend of a round (or a backend by name), set up with ``data_root`` and the other
    :class:`BackendContext` fields given as keywords."""
    name = round_or_name if isinstance(round_or_name, str) else round_or_name.backend
    return backend_type(name)(BackendContext(Path(data_root), **context))
