"""A round in ``segbench view``: one sample per item, with what each annotator answered, what the
round decided, and the saved views people want after a round.

Fields per choice control ``C``: ``C`` (the decision, a classification), ``C_answers`` (``worker:
label`` per answer), ``C_tie`` (the people's votes tied, whether or not a model then chose) and,
where the round's kind knows the labels a rule gave before people answered, ``C_automatic`` and
``C_disagrees``. Per item: ``gold``, ``answered_by_flagged`` (a worker the worker report flags or
the screened ingest left out of the masks answered it), ``tie`` and ``disagrees`` (on any control).
"""

from __future__ import annotations

from pathlib import Path

from segbench.annotation_ui.gold import saved_left_out
from segbench.annotation_ui.kinds import round_kind
from segbench.annotation_ui.rounds import RoundStore
from segbench.annotation_ui.worker_report import report_paths
from segbench.core.io import read_json
from segbench.schemas.rounds import ItemAnswer
from segbench.schemas.views import SavedView, ViewDocument, ViewSample

VIEWS = (
    SavedView(name="disagree-with-automatic", field="disagrees",
              description="items where the people's decision differs from the automatic label"),
    SavedView(name="ties", field="tie", description="items whose votes tied (a model may have chosen a label)"),
    SavedView(name="answered-by-flagged-workers", field="answered_by_flagged",
              description="items a worker the report flags, or the ingest left out of the masks, answered"),
    SavedView(name="gold", field="gold", description="the gold items (known answers) mixed into the work"),
)


def round_view(data_root: Path, key: str) -> ViewDocument:
    """The round ``key`` (ingested or not) as samples: its items' images and answers.

    Raises:
        InputError: no such round, or its record or answers file is damaged.
    """
    store = RoundStore(Path(data_root) / "rounds")
    round_ = store.load(key)
    answers, decisions = store.load_ingested(key)
    decided = {item.item_id: item for item in decisions}
    kind = round_kind(round_.kind)
    automatic = kind.automatic_labels.load()(round_, Path(data_root)) if kind.automatic_labels else {}
    flagged = {entry["worker"] for entry in saved_left_out(store, key)} | _suspicious(store, key)
    controls = sorted({control for answer in answers for control in answer.choices} | {
        control for labels in automatic.values() for control in labels})
    samples = []
    for item in round_.items:
        given = [answer for answer in answers if answer.item_id == item.item_id]
        decision = decided.get(item.item_id)
        fields: dict[str, object] = {"item_id": item.item_id, "batch": item.batch, "gold": item.gold is not None,
                                     "answers": len(given),
                                     "answered_by_flagged": any(a.annotator in flagged for a in given)}
        labels: dict[str, str | None] = {}
        for control in controls:
            labels[control] = decision.majority.get(control) if decision else None
            fields[f"{control}_answers"] = [f"{a.annotator}:{label}" for a in given for label in a.choices.get(control, [])]
            fields[f"{control}_tie"] = _tied(decision, control)
            if item.item_id in automatic and control in automatic[item.item_id]:
                labels[f"{control}_automatic"] = automatic[item.item_id][control]
                people = decision.people_label(control) if decision else None
                fields[f"{control}_disagrees"] = people is not None and people != automatic[item.item_id][control]
        fields["tie"] = any(fields[f"{control}_tie"] for control in controls)
        fields["disagrees"] = any(fields.get(f"{control}_disagrees", False) for control in controls)
        samples.append(ViewSample(filepath=(Path(data_root) / item.image).resolve(), tags=[round_.purpose],
                                  fields=fields, labels=labels))
    views = [view for view in VIEWS if view.name != "disagree-with-automatic" or automatic]
    return ViewDocument(name=f"segbench-round-{key}", samples=samples, views=views)


def _tied(decision: ItemAnswer | None, control: str) -> bool:
    """The people's votes on ``control`` tied: no majority, or one a model chose."""
    return decision is not None and control in decision.majority and decision.people_label(control) is None


def _suspicious(store: RoundStore, key: str) -> set[str]:
    """The workers the round's worker report flags (none before the first ingest)."""
    path = report_paths(store, key)["json"]
    return {entry["worker"] for entry in read_json(path).get("suspicious", [])} if path.is_file() else set()
