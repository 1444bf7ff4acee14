"""What a round step needs before it starts, checked in one place: by the command before Prefect
starts (an answer in a second, not ten) and by the flow itself (a served or scripted run checks the
same). Each check reads only local files and asks the backend whether it is ready; none changes anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from segbench.annotation_ui import gold
from segbench.annotation_ui.backends import RoundBackend, backend_for
from segbench.annotation_ui.batches import plan_launch
from segbench.annotation_ui.kinds import RoundKind, round_kind
from segbench.annotation_ui.rounds import RoundStatus, RoundStore, check_step
from segbench.core.errors import ImportPolicy, InputError, OnError, RoundStateError
from segbench.schemas.rounds import Annotator, Answer, LabelStudioConnection, Round


@dataclass(frozen=True)
class LaunchCheck:
    """A launch that can go: the round, what goes out now, the batches out after it, and its backend."""

    store: RoundStore
    round: Round
    launching: Round
    batches_out: list[str] | None
    backend: RoundBackend


@dataclass(frozen=True)
class IngestCheck:
    """An ingest that can go: the round, its kind, the answers saved so far and the gate's pass list."""

    store: RoundStore
    round: Round
    kind: RoundKind
    previous: list[Answer]
    qualified: set[str] | None


def check_launch(data_root: Path, key: str, label_studio: LabelStudioConnection | None,
                 batch: str | None, annotators: list[str] | None = None) -> LaunchCheck:
    """Raise for a round that cannot be launched: unknown, closed, a bad ``batch``, ``annotators`` that
    do not fit the round (see :func:`keep_apart`), an unknown kind, or a backend that is not ready (a
    token or files folder not configured, a server that does not answer)."""
    store = RoundStore(Path(data_root) / "rounds")
    round_ = keep_apart(store.load(key), annotators)
    launching, out = plan_launch(round_, batch)
    round_kind(round_.kind)
    backend = backend_for(round_, data_root, label_studio=label_studio)
    backend.check_ready(round_, launching=True)
    return LaunchCheck(store, round_, launching, out, backend)


def keep_apart(round_: Round, annotators: list[str] | None) -> Round:
    """The round put on its ``annotators``' own Label Studio servers, each answering every task, so
    that nobody can open another's answers (None: as it was launched, or on the shared server).

    Raises:
        InputError: the round is not a Label Studio round, or the annotators are not as many as the
            answers it asks per task (its overlap), or one is named twice.
        RoundStateError: the round was launched before on other servers.
    """
    if annotators is None:
        return round_
    where = f"round {round_.key}"
    if round_.backend != "labelstudio":
        raise InputError(f"round {round_.key!r} is a {round_.backend} round; --annotator puts Label Studio rounds "
                         "on annotators' own servers", item=where, hint="launch it without --annotator")
    try:
        names = sorted(TypeAdapter(list[Annotator]).validate_python(annotators))
    except ValidationError as exc:
        raise InputError(f"annotator names are lowercase letters, digits, - and _: {', '.join(annotators)}",
                         item=where, hint="the NAME of scripts/label-studio.sh start --annotator NAME") from exc
    if len(set(names)) != len(names):
        raise InputError(f"an annotator is named twice: {', '.join(annotators)}", item=where)
    if round_.launched_at is not None and names != (round_.annotators or []):
        shared = "the shared server" if round_.annotators is None else f"the servers of {', '.join(round_.annotators)}"
        raise RoundStateError(f"round {round_.key!r} was launched on {shared}; a relaunch keeps them", item=where,
                              hint="relaunch without --annotator, or create a new round under another key")
    overlap = round_.config.overlap
    if len(names) != overlap:
        raise InputError(f"{len(names)} annotator(s) named, but the round asks {overlap} answer(s) per task and each "
                         "annotator on their own server answers every task", item=where,
                         hint=f"name {overlap} annotator(s) with --annotator, or create the round with "
                              f"--overlap {len(names)}")
    return round_.model_copy(update={"annotators": names})


def check_ingest(data_root: Path, key: str, label_studio: LabelStudioConnection | None,
                 on_error: OnError, *, read_crowd_files: bool = True) -> IngestCheck:
    """Raise for a round that cannot be ingested: unknown or not launched, an unknown kind, a damaged
    answers file, a gate whose qualification round is not ingested, a backend that is not ready, or
    (files backend, ``read_crowd_files``) a crowd's results file with bad rows under ``on_error`` fail.
    The flow reads the crowd's files in its own fetch step, so it does not ask for them here."""
    store = RoundStore(Path(data_root) / "rounds")
    round_ = store.load(key)
    check_step(round_, RoundStatus.INGESTED, "ingest")
    kind = round_kind(round_.kind)
    previous = store.load_answers(key) + gold.saved_gold_answers(store, key)
    qualified = gold.pass_list(store, round_)
    backend = backend_for(round_, data_root, label_studio=label_studio)
    backend.check_ready(round_)
    if read_crowd_files and round_.backend == "files":  # local files: reading them is the check
        backend.fetch_answers(round_, ImportPolicy(on_error=on_error))
    return IngestCheck(store, round_, kind, previous, qualified)
